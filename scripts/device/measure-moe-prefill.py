#!/usr/bin/env python3
"""MoE grouped GEMMs at prefill shapes against one dense GEMM of the same
rows, on one GPU (tests/data/calibration/h200-moe-prefill/README.md says
what and how). Usage: measure-moe-prefill.py OUT_DIR"""
import csv
import json
import sys
import time

import torch

from measure_common import gpu_environment, graph_median_us

OUT = sys.argv[1]
C, BF, F8 = "cuda", torch.bfloat16, torch.float8_e4m3fn
# (model, layout, experts on the GPU, gemm, n, k)
SHAPES = [("qwen3-30b-a3b", "TP1", 128, "gate_up", 1536, 2048),
          ("qwen3-30b-a3b", "TP1", 128, "down", 2048, 768),
          ("qwen3-235b-a22b", "EP8", 16, "gate_up", 3072, 4096),
          ("qwen3-235b-a22b", "EP8", 16, "down", 4096, 1536)]
ROWS = (256, 512, 1024, 2048, 4096)
FAIL = []


def timed(fn):
    return graph_median_us(fn, FAIL)


def main():
    t0 = time.time()
    w = csv.writer(open(OUT + "/grouped-prefill.csv", "w"))
    w.writerow(["model", "layout", "experts", "gemm", "rows_per_expert", "rows", "n", "k",
                "bf16_grouped_us", "fp8_grouped_us", "bf16_dense_us", "fp8_dense_us"])
    for model, lay, e, gemm, n, k in SHAPES:
        wt = torch.randn(e, n, k, device=C, dtype=BF)
        w8 = wt.to(F8)
        for t in ROWS:
            m = e * t
            a = torch.randn(m, k, device=C, dtype=BF)
            a8 = a.to(F8)
            offs = torch.full((e,), t, device=C, dtype=torch.int32).cumsum(0).int()
            sa, sb = torch.ones(m, device=C), torch.ones(e, n, device=C)
            sa1, sb1 = torch.ones(m, 1, device=C), torch.ones(1, n, device=C)
            row = [
                timed(lambda: torch._grouped_mm(a, wt.transpose(-2, -1), offs=offs)),
                timed(lambda: torch._scaled_grouped_mm(a8, w8.transpose(-2, -1), sa, sb,
                                                       offs=offs, out_dtype=BF)),
                timed(lambda: a @ wt[0].t()),
                timed(lambda: torch._scaled_mm(a8, w8[0].t(), sa1, sb1, out_dtype=BF)),
            ]
            w.writerow([model, lay, e, gemm, t, m, n, k] + row)
            print(model, lay, gemm, t, *row, flush=True)
            del a, a8
        del wt, w8
        torch.cuda.empty_cache()
    env = gpu_environment()
    env.update(seconds=round(time.time() - t0, 1), failures=FAIL[:20])
    json.dump(env, open(OUT + "/env.json", "w"), indent=1)


if __name__ == "__main__":
    main()
