#!/usr/bin/env python3
"""Parse the raw nccl-tests outputs of scripts/device/measure-nccl-tests.sh.

    parse-nccl-tests.py OUT.csv PASS=RAW.tar.gz [PASS=RAW.tar.gz ...]

Each archive holds one log per run, named g<GPUS>-<op>[-<Algo>-<Proto>]
[-graph<N>].log.  Writes one row per size, placement (out-of-place `oop`,
in-place `ip`) and pass, sizes 0 left out:
gpus,op,dtype,algo,proto,graph,size_bytes,time_us,algbw_gbps,busbw_gbps,place,iters,pass
(algo/proto `default`: NCCL's own choice; graph: CUDA graph launches, 0 eager;
iters: nccl-tests' -n, the calls timed per size and launch).
"""
import csv
import re
import sys
import tarfile

NAME = re.compile(r'g(\d+)-([a-z_]+?)(?:-(Tree|Ring)-(Simple|LL128|LL))?(?:-graph(\d+))?\.log$')
DTYPE = {'bfloat16': 'bf16', 'half': 'f16', 'float': 'f32'}   # colls.csv's names
HEAD = re.compile(r'warmup iters: (\d+) iters: (\d+) .*graph: (\d+)')


def rows_of(text, name, pas):
    m = NAME.search(name)
    if not m:
        return []
    gpus, op, algo, proto, graph = m.groups()
    h = HEAD.search(text)
    iters = h.group(2) if h else ''
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) != 13 or not f[0].isdigit() or f[0] == '0':
            continue   # size 0: per-rank count rounded to nothing, NCCL does no work
        for place, (t, a, b) in (('oop', f[5:8]), ('ip', f[9:12])):
            out.append(dict(gpus=gpus, op=op, dtype=DTYPE.get(f[2], f[2]), algo=algo or 'default',
                            proto=proto or 'default', graph=graph or '0',
                            size_bytes=f[0], time_us=t, algbw_gbps=a, busbw_gbps=b,
                            place=place, iters=iters, **{'pass': pas}))
    return out


def main():
    out, rows = sys.argv[1], []
    for arg in sys.argv[2:]:
        pas, path = arg.split('=', 1)
        with tarfile.open(path) as tf:
            for mem in sorted(tf.getmembers(), key=lambda x: x.name):
                if mem.isfile() and mem.name.endswith('.log'):
                    text = tf.extractfile(mem).read().decode(errors='replace')
                    rows += rows_of(text, mem.name, pas)
    cols = ('gpus,op,dtype,algo,proto,graph,size_bytes,time_us,algbw_gbps,busbw_gbps,'
            'place,iters,pass').split(',')
    key = lambda r: (r['pass'], int(r['gpus']), r['op'], r['algo'], r['proto'],
                     int(r['graph']), r['place'] != 'oop', int(r['size_bytes']))
    with open(out, 'w', newline='') as fh:
        w = csv.DictWriter(fh, fieldnames=cols, lineterminator='\n')
        w.writeheader()
        w.writerows(sorted(rows, key=key))
    print(f'{len(rows)} rows -> {out}')


if __name__ == '__main__':
    main()
