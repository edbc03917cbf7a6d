#!/usr/bin/env python3
"""Measures, on one NVIDIA GPU, the two per-kernel overheads the topology's
[gpu] section names: launch_overhead (host time to launch one kernel
eagerly, back to back) and kernel_overhead (GPU time of one tiny kernel when
launches cost nothing: replayed from a CUDA graph).  Prints JSON.

Run on the device machine: python3 scripts/device/measure-launch.py
"""
import json
import time

import torch


def main():
    dev = torch.device("cuda")
    x = torch.zeros(256, device=dev)
    n = 20000
    for _ in range(1000):  # warm up
        x.add_(1.0)
    torch.cuda.synchronize()

    # eager: the host launches n tiny kernels back to back; the GPU keeps up,
    # so the wall time per kernel is the host's launch cost
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1.0)
    t_host = time.perf_counter() - t0
    torch.cuda.synchronize()
    t_eager = time.perf_counter() - t0

    # graph: the same kernels captured once and replayed: GPU time per kernel
    per_graph = 1000
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(per_graph):
            x.add_(1.0)
    g.replay()
    torch.cuda.synchronize()
    reps = n // per_graph
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    t_graph_ms = start.elapsed_time(end)

    out = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "kernels": n,
        "eager_host_us_per_kernel": t_host / n * 1e6,
        "eager_wall_us_per_kernel": t_eager / n * 1e6,
        "graph_gpu_us_per_kernel": t_graph_ms * 1e3 / (reps * per_graph),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
