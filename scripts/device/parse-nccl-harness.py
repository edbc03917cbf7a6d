#!/usr/bin/env python3
"""Parse the raw outputs of scripts/device/measure-nccl-harness.sh.

    parse-nccl-harness.py OUT.csv RAW.tar.gz

The archive holds n<GPUS>-<harness>-<op>.log (timed: -w 5 -n 20) and
n<GPUS>-<harness>-<op>-tuning.log (NCCL_DEBUG_SUBSYS=TUNING, -w 1 -n 1).
Writes one row per GPU count, op, harness, size and placement (`oop`,
`ip`):
gpus,op,dtype,harness,procs,graph,size_bytes,time_us,algbw_gbps,busbw_gbps,place,iters,algo,proto,channels
harness a: mpirun, one process per GPU, eager; b: one process, -g N, eager;
c: one process, -g N, -G 20; d: mpirun, one process per GPU, -G 20.
algo/proto/channels: what rank 0's TUNING line says NCCL ran at that size
(channels = Hi - Lo + 1 of its channel range).
"""
import csv
import re
import sys
import tarfile

NAME = re.compile(r'n(\d+)-([abcd])-([a-z_]+?)(-tuning)?\.log$')
HEAD = re.compile(r'warmup iters: (\d+) iters: (\d+) .*graph: (\d+)')
TUNE = re.compile(r' \[0\] NCCL INFO (AllReduce|AllGather|ReduceScatter): (\d+) Bytes -> '
                  r'Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}')
DTYPE = {'bfloat16': 'bf16', 'half': 'f16', 'float': 'f32'}
FIELDS = ('gpus op dtype harness procs graph size_bytes time_us algbw_gbps busbw_gbps place '
          'iters algo proto channels').split()


def tuning_of(text, gpus, op):
    """size_bytes (nccl-tests' size) -> (algo, proto, channels), first seen."""
    out = {}
    for m in TUNE.finditer(text):
        nbytes = int(m.group(2)) * (1 if op == 'all_reduce' else gpus)
        out.setdefault(nbytes, (m.group(3), m.group(4),
                                int(m.group(6)) - int(m.group(5)) + 1))
    return out


def rows_of(text, gpus, op, harness, tune):
    h = HEAD.search(text)
    iters, graph = (h.group(2), h.group(3)) if h else ('', '')
    rows = []
    for line in text.splitlines():
        f = line.split()
        if len(f) != 13 or not f[0].isdigit():
            continue
        algo, proto, ch = tune.get(int(f[0]), ('', '', ''))
        for place, (t, a, b) in (('oop', f[5:8]), ('ip', f[9:12])):
            rows.append(dict(gpus=gpus, op=op, dtype=DTYPE.get(f[2], f[2]), harness=harness,
                             procs=gpus if harness in 'ad' else 1, graph=graph,
                             size_bytes=f[0], time_us=t, algbw_gbps=a, busbw_gbps=b,
                             place=place, iters=iters, algo=algo, proto=proto, channels=ch))
    return rows


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    logs = {}
    with tarfile.open(argv[2]) as tar:
        for member in tar.getmembers():
            m = NAME.search(member.name)
            if m and member.isfile():
                logs[m.groups()[:3] + (m.group(4) or "",)] = tar.extractfile(member).read().decode(errors='replace')
    rows = []
    for (gpus, harness, op, tuning), text in sorted(logs.items()):
        if tuning:
            continue
        tlog = logs.get((gpus, harness, op, '-tuning'), '')
        rows += rows_of(text, int(gpus), op, harness, tuning_of(tlog, int(gpus), op))
    with open(argv[1], 'w', newline='') as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        w.writerows(rows)
    print(f'{argv[1]}: {len(rows)} rows')


if __name__ == '__main__':
    main(sys.argv)
