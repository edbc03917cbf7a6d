#!/usr/bin/env python3
"""Extracts TensorRT-LLM's measured MoE layer times at Qwen3's expert shapes
from NVIDIA AI Configurator's perf tables (moe_perf.parquet, one file a GPU
and TensorRT-LLM release) into tests/data/calibration/trtllm-moe-op/
moe-op.csv (its README says where the tables come from).

The tables are Apache Parquet; this reads the subset of the format they use
(the Thrift compact footer, PLAIN and RLE_DICTIONARY pages, v1 and v2 data
pages, ZSTD through the `zstd` command), so it needs no pyarrow.

Usage: scripts/calibration/extract-trtllm-moe-op.py GPU=PARQUET... > moe-op.csv
  (GPU: the topology file's name, e.g. hgx-h200=.../h200_sxm/moe/trtllm/
  1.2.0rc5/moe_perf.parquet)
Python standard library and the zstd command only.
"""
import struct
import subprocess
import sys

# Qwen3-235B-A22B (hidden 4,096, expert intermediate 1,536) and
# Qwen3-30B-A3B (2,048, 768): 128 experts, top-8
SHAPES = {(4096, 1536): 'qwen3-235b-a22b', (2048, 768): 'qwen3-30b-a3b'}
EXPERTS, TOP_K = 128, 8
EP = (1, 8)
DTYPES = {'fp8': 'fp8', 'nvfp4': 'fp4'}
# the CUTLASS backend, TensorRT-LLM's default MoE backend (the tables'
# other sources: TRTLLM-Gen's min-latency kernels, DeepGEMM, non-gated)
SOURCES = ('moe_torch_flow', 'moe_torch_flow_cutlass')


class Compact:
    """Thrift compact protocol: structs as {field id: value}."""

    def __init__(self, buf, pos=0):
        self.b, self.p = buf, pos

    def byte(self):
        v = self.b[self.p]
        self.p += 1
        return v

    def varint(self):
        r = sh = 0
        while True:
            c = self.byte()
            r |= (c & 0x7f) << sh
            sh += 7
            if not c & 0x80:
                return r

    def zigzag(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def value(self, t):
        if t in (1, 2):
            return t == 1
        if t == 3:
            v = self.byte()
            return v - 256 if v > 127 else v
        if t in (4, 5, 6):
            return self.zigzag()
        if t == 7:
            v = struct.unpack_from('<d', self.b, self.p)[0]
            self.p += 8
            return v
        if t == 8:
            n = self.varint()
            v = bytes(self.b[self.p:self.p + n])
            self.p += n
            return v
        if t in (9, 10):
            h = self.byte()
            n, et = h >> 4, h & 15
            if n == 15:
                n = self.varint()
            return [self.byte() == 1 if et in (1, 2) else self.value(et)
                    for _ in range(n)]
        if t == 12:
            return self.struct()
        raise ValueError('thrift type %d' % t)

    def struct(self):
        d, last = {}, 0
        while True:
            h = self.byte()
            if h == 0:
                return d
            delta = h >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            d[fid] = self.value(h & 15)


def inflate(codec, data):
    if codec == 0:
        return data
    if codec == 6:
        return subprocess.run(['zstd', '-d', '-c'], input=data,
                              capture_output=True, check=True).stdout
    raise ValueError('compression codec %d' % codec)


def hybrid(buf, width, n):
    """RLE / bit-packed hybrid of n values of `width` bits."""
    out, p, nbytes = [], 0, (width + 7) // 8
    while len(out) < n and p < len(buf):
        t = Compact(buf, p)
        h = t.varint()
        p = t.p
        if h & 1:
            groups = h >> 1
            bits = int.from_bytes(buf[p:p + groups * width], 'little')
            p += groups * width
            mask = (1 << width) - 1
            out.extend((bits >> (i * width)) & mask
                       for i in range(groups * 8))
        else:
            out.extend([int.from_bytes(buf[p:p + nbytes], 'little')] *
                       (h >> 1))
            p += nbytes
    return out[:n]


def plain(ptype, buf, n):
    fmt = {1: 'i', 2: 'q', 4: 'f', 5: 'd'}
    if ptype in fmt:
        return list(struct.unpack_from('<%d%s' % (n, fmt[ptype]), buf))
    if ptype == 6:
        out, p = [], 0
        for _ in range(n):
            ln = struct.unpack_from('<i', buf, p)[0]
            out.append(bytes(buf[p + 4:p + 4 + ln]).decode())
            p += 4 + ln
        return out
    raise ValueError('parquet type %d' % ptype)


def read_parquet(path):
    b = open(path, 'rb').read()
    if b[:4] != b'PAR1' or b[-4:] != b'PAR1':
        sys.exit('%s: not a parquet file (a Git LFS pointer?)' % path)
    flen = struct.unpack_from('<i', b, len(b) - 8)[0]
    meta = Compact(b, len(b) - 8 - flen).struct()
    leaves = meta[2][1:]
    names = [e[4].decode() for e in leaves]
    optional = [e.get(3, 0) == 1 for e in leaves]
    cols = {n: [] for n in names}
    for group in meta[4]:
        for ci, chunk in enumerate(group[1]):
            md = chunk[3]
            ptype, codec, nvals = md[1], md[4], md[5]
            p = md[11] if md.get(11) else md[9]
            got, dic = 0, None
            while got < nvals:
                t = Compact(b, p)
                ph = t.struct()
                p = t.p
                size = ph[3]
                body = b[p:p + size]
                p += size
                if ph[1] == 2:  # dictionary page
                    dic = plain(ptype, inflate(codec, body), ph[7][1])
                    continue
                if ph[1] == 0:  # data page v1
                    n, enc = ph[5][1], ph[5][2]
                    raw = inflate(codec, body)
                    if optional[ci]:
                        ln = struct.unpack_from('<i', raw, 0)[0]
                        defs = hybrid(raw[4:4 + ln], 1, n)
                        raw = raw[4 + ln:]
                    else:
                        defs = [1] * n
                elif ph[1] == 3:  # data page v2: levels uncompressed
                    h = ph[8]
                    n, enc, dlen, rlen = h[1], h[4], h[5], h[6]
                    levels = body[:rlen + dlen]
                    rest = body[rlen + dlen:]
                    raw = inflate(codec, rest) if h.get(7, True) else rest
                    defs = (hybrid(levels[rlen:], 1, n)
                            if optional[ci] and dlen else [1] * n)
                else:
                    raise ValueError('page type %d' % ph[1])
                present = sum(defs)
                if enc in (2, 8):
                    vals = [dic[i] for i in hybrid(raw[1:], raw[0], present)]
                else:
                    vals = plain(ptype, raw, present)
                it = iter(vals)
                cols[names[ci]].extend(next(it) if d else None for d in defs)
                got += n
    return [dict(zip(names, row)) for row in zip(*cols.values())]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print('gpu,topology,trtllm_release,backend,model,hidden,inter,experts,'
          'top_k,ep,dtype,distribution,tokens,rows_per_expert,op_us')
    for arg in sys.argv[1:]:
        gpu, path = arg.split('=', 1)
        rows = read_parquet(path)
        keep = []
        for r in rows:
            shape = (r['hidden_size'], r['inter_size'])
            if (shape in SHAPES and r['num_experts'] == EXPERTS and
                    r['topk'] == TOP_K and r['moe_tp_size'] == 1 and
                    r['moe_ep_size'] in EP and r['moe_dtype'] in DTYPES and
                    r['kernel_source'] in SOURCES and
                    r['distribution'] in ('balanced', 'power_law_1.2')):
                keep.append(r)
        keep.sort(key=lambda r: (r['hidden_size'], r['moe_ep_size'],
                                 r['moe_dtype'], r['distribution'],
                                 r['num_tokens']))
        for r in keep:
            rows_per_expert = r['num_tokens'] * TOP_K / EXPERTS
            print('%s,topology/%s.topo,%s,%s,%s,%d,%d,%d,%d,%d,%s,%s,%d,'
                  '%g,%.2f' % (
                      r['device'], gpu, r['version'], r['kernel_source'],
                      SHAPES[(r['hidden_size'], r['inter_size'])],
                      r['hidden_size'], r['inter_size'], EXPERTS, TOP_K,
                      r['moe_ep_size'], DTYPES[r['moe_dtype']],
                      r['distribution'], r['num_tokens'], rows_per_expert,
                      r['latency'] * 1000.0))


if __name__ == '__main__':
    main()
