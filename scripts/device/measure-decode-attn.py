#!/usr/bin/env python3
"""Decode attention as the serving-like steps run it: torch's
F.scaled_dot_product_attention(q, K, V, enable_gqa=True), default backend
choice (cuDNN on an H200), bf16, head_dim 128, q [B, Hq, 1, d] contiguous,
the cache [B, Hkv, C, d], at the per-rank head counts of Qwen2.5-7B (28/4),
Qwen3-32B and Qwen2.5-72B (64/8) at TP 1, 2, 4.  A CUDA graph of N calls,
each on its own cache (as a step's layers; N x cache >= 256 MB so that L2
holds none), timed by CUDA events (median of replays, per call), then one
replay profiled: each kernel's name, grid, block and mean duration.

    python3 scripts/device/measure-decode-attn.py OUTDIR

OUTDIR/decode-attn.csv: q_heads,kv_heads,batch,ctx,calls,us_per_call,
kernel,grid,block,kernel_us (a row per kernel of one call);
OUTDIR/env.json: GPU, clocks, versions."""
import csv
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_common import capture_graph  # noqa: E402

OUT = sys.argv[1]
D = 128
HEADS = [(7, 1), (14, 2), (28, 4), (16, 2), (32, 4), (64, 8)]
CASES = [(1, 4096), (4, 4096), (16, 4096), (64, 4096), (256, 1024), (256, 4096)]


def case(hq, hkv, b, ctx):
    kv = 2 * b * hkv * ctx * D * 2
    n = max(4, min(64, -(-256 * 2**20 // kv)))
    n = min(n, max(1, int(20e9 // kv)))
    K = torch.randn(n, b, hkv, ctx, D, device="cuda", dtype=torch.bfloat16)
    V = torch.randn_like(K)
    q = torch.randn(b, hq, 1, D, device="cuda", dtype=torch.bfloat16)

    def step():
        for i in range(n):
            F.scaled_dot_product_attention(q, K[i], V[i], enable_gqa=True)
    g = capture_graph(step, warm=1)
    ts = []
    for _ in range(15):
        a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        e.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(e) * 1e3 / n)
    us = sorted(ts)[len(ts) // 2]
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        g.replay()
        torch.cuda.synchronize()
    p.export_chrome_trace("/tmp/t.json")
    ks = {}
    for ev in json.load(open("/tmp/t.json"))["traceEvents"]:
        if ev.get("cat") == "kernel":
            k = ks.setdefault(ev["name"][:90], [0, 0.0, ev["args"].get("grid"),
                                                 ev["args"].get("block")])
            k[0] += 1
            k[1] += ev["dur"]
    del K, V, g
    torch.cuda.empty_cache()
    return n, us, [(name, str(k[2]), str(k[3]), k[1] / n) for name, k in ks.items()]


def main():
    os.makedirs(OUT, exist_ok=True)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.mem,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout
    json.dump({"torch": torch.__version__, "cuda": torch.version.cuda,
               "cudnn": torch.backends.cudnn.version(), "gpu": smi.strip(),
               "sms": torch.cuda.get_device_properties(0).multi_processor_count},
              open(os.path.join(OUT, "env.json"), "w"), indent=1)
    with open(os.path.join(OUT, "decode-attn.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["q_heads", "kv_heads", "batch", "ctx", "calls", "us_per_call",
                    "kernel", "grid", "block", "kernel_us"])
        for hq, hkv in HEADS:
            for b, ctx in CASES:
                n, us, ks = case(hq, hkv, b, ctx)
                for name, grid, block, kus in ks:
                    w.writerow([hq, hkv, b, ctx, n, "%.2f" % us, name, grid, block,
                                "%.2f" % kus])
                f.flush()
                print(hq, hkv, b, ctx, n, "%.2f" % us, len(ks), flush=True)


if __name__ == "__main__":
    main()
