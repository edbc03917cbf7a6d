#!/usr/bin/env python3
"""Cuts the rows this folder keeps out of AI Configurator's CSV copies
(README.md): the GEMM shapes of Llama-3.3-70B / Qwen2.5-72B / Qwen3 shards
at TP 1-8 for M 1-16384, every dtype, and decode attention of the served
models' GQA shapes.  Usage: subset.py AIC_DIR (the folder of
<sys>__<op>__trtllm__<ver>__<table>.csv files); writes gemm.csv and
attention.csv beside this file."""
import csv
import os
import sys

GPUS = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200", "gb200": "gb200"}
VERSION = "1.3.0rc20"
# (n, k): qkv, o, gate+up and down projections of the shards
GEMM_NK = {(10240, 8192), (5120, 8192), (2560, 8192), (8192, 8192), (8192, 4096),
           (8192, 2048), (8192, 1024), (7168, 8192), (8192, 3584), (8192, 7168),
           (10240, 5120), (5120, 5120), (6144, 4096), (4096, 12288)}
GEMM_M = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
# (q heads, kv heads) at head_dim 128, no window: Llama-3.3-70B at TP 1-8,
# Qwen3-8B at TP 1-2
ATTN_HEADS = {(64, 8), (32, 4), (16, 2), (8, 1), (32, 8), (16, 4)}
ATTN_STEPS = {127, 511, 2047, 8191, 32767, 131071}


def rows(path):
    with open(path) as f:
        yield from csv.DictReader(f)


def main():
    src = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "gemm.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["gpu", "dtype", "kernel_source", "m", "n", "k", "latency_ms"])
        for sys_, gpu in GPUS.items():
            for r in rows(os.path.join(src, "%s__gemm__trtllm__%s__gemm_perf.csv" % (sys_, VERSION))):
                m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
                if (n, k) in GEMM_NK and m in GEMM_M:
                    w.writerow([gpu, r["gemm_dtype"], r["kernel_source"], m, n, k,
                                "%.6g" % float(r["latency"])])
    with open(os.path.join(here, "attention.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["gpu", "kv_dtype", "batch", "ctx", "heads", "kv_heads", "head_dim",
                    "latency_ms"])
        for sys_, gpu in GPUS.items():
            name = "%s__attention__trtllm__%s__generation_attention_perf.csv" % (sys_, VERSION)
            for r in rows(os.path.join(src, name)):
                hk = (int(r["num_heads"]), int(r["num_key_value_heads"]))
                if (hk in ATTN_HEADS and r["head_dim"] == "128" and r["window_size"] == "0"
                        and int(r["step"]) in ATTN_STEPS and r["isl"] == "1"):
                    w.writerow([gpu, r["kv_cache_dtype"], r["batch_size"], r["step"], hk[0],
                                hk[1], 128, "%.6g" % float(r["latency"])])


if __name__ == "__main__":
    main()
