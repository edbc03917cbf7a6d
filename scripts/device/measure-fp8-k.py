#!/usr/bin/env python3
"""FP8 and BF16 GEMM times across K on one GPU, and FP8/BF16 grouped GEMMs
at the decode shapes of Qwen3-235B-A22B's EP8 share
(tests/data/calibration/h200-fp8-k/README.md says what and how).
Usage: measure-fp8-k.py OUT_DIR"""
import csv
import json
import sys
import time

import torch

from measure_common import gpu_environment, graph_median_us

OUT = sys.argv[1]
C, BF, F8 = "cuda", torch.bfloat16, torch.float8_e4m3fn
DENSE = [(m, 4096, k) for m in (8192, 32768) for k in (256, 512, 768, 1024, 1536, 2048,
                                                      4096, 8192)]
DENSE += [(m, n, k) for m in (384, 3072) for n, k in ((9216, 4096), (4096, 8192))]
GROUPED = [(16, t, n, k) for t in (32, 64, 128, 192, 256, 384, 512)
           for n, k in ((3072, 4096), (4096, 1536))]
FAIL = []


def timed(fn):
    return graph_median_us(fn, FAIL)


def dense(w):
    w.writerow(["m", "n", "k", "bf16_us", "fp8_tensorwise_us", "fp8_rowwise_us"])
    one = torch.ones((), device=C)
    for m, n, k in DENSE:
        a, b = torch.randn(m, k, device=C, dtype=BF), torch.randn(n, k, device=C, dtype=BF)
        a8, b8 = a.to(F8), b.to(F8)
        sa, sb = torch.ones(m, 1, device=C), torch.ones(1, n, device=C)
        row = [timed(lambda: a @ b.t()),
               timed(lambda: torch._scaled_mm(a8, b8.t(), one, one, out_dtype=BF)),
               timed(lambda: torch._scaled_mm(a8, b8.t(), sa, sb, out_dtype=BF))]
        w.writerow([m, n, k] + row)
        print(m, n, k, *row, flush=True)


def grouped(w):
    w.writerow(["experts", "rows_per_expert", "rows", "n", "k", "bf16_grouped_us",
                "fp8_grouped_us"])
    for e, t, n, k in GROUPED:
        wt = torch.randn(e, n, k, device=C, dtype=BF)
        w8 = wt.to(F8)
        m = e * t
        a = torch.randn(m, k, device=C, dtype=BF)
        a8 = a.to(F8)
        offs = torch.full((e,), t, device=C, dtype=torch.int32).cumsum(0).int()
        sa, sb = torch.ones(m, device=C), torch.ones(e, n, device=C)
        row = [timed(lambda: torch._grouped_mm(a, wt.transpose(-2, -1), offs=offs)),
               timed(lambda: torch._scaled_grouped_mm(a8, w8.transpose(-2, -1), sa, sb,
                                                      offs=offs, out_dtype=BF))]
        w.writerow([e, t, m, n, k] + row)
        print(e, t, n, k, *row, flush=True)


def main():
    t0 = time.time()
    with open(OUT + "/dense-k.csv", "w") as f:
        dense(csv.writer(f))
    with open(OUT + "/grouped-decode.csv", "w") as f:
        grouped(csv.writer(f))
    env = gpu_environment()
    env.update(seconds=round(time.time() - t0, 1), failures=FAIL[:20])
    json.dump(env, open(OUT + "/env.json", "w"), indent=1)


if __name__ == "__main__":
    main()
