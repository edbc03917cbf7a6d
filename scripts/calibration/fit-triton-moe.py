#!/usr/bin/env python3
"""Solve vLLM's Triton fused_moe rate and per-tile fixed work from the
prefill rows of tests/data/calibration/h200-triton-moe/triton-moe.csv
(docs/cost-model.md, "vLLM's Triton fused_moe").

A tile of the kernel computes BLOCK_M padded rows x BLOCK_N columns over
K at a rate e0 of the tensor cores' peak, after a fixed work worth k_pad
steps of k, so a GEMM of padded rows P runs at e0 K / (K + k_pad) of the
peak on 2 P N K FLOPs.  Per weight type, the gate/up GEMM (K = hidden)
and the down GEMM (K = the shard's intermediate) at prefill's tokens are
two equations in e0 and k_pad; the rate is then taken against the dense
cuBLAS BF16 GEMM of the same run (its own tile fixed work, the H100 and
H200 topologies' matmul_k_pad 64), so that the topology's
matmul_efficiency carries it to another Hopper GPU.  The decode-sized
rows (512 tokens) are held out: bandwidth-bound, they test the weight
streaming, not these constants.  Usage: fit-triton-moe.py [CSV]."""
import csv
import os
import sys

PEAK = {"bf16": 989e12, "fp8b": 1979e12}  # H200 dense: [P] (published.md)
DENSE_K_PAD = 64  # topology/hgx-h200.topo matmul_k_pad


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "../../tests/data/calibration/h200-triton-moe/triton-moe.csv")
    rows = list(csv.DictReader(open(path)))
    ref = next(r for r in rows if r["case"] == "cublas")
    k = float(ref["k"])
    flops = 2 * float(ref["tokens"]) * float(ref["n"]) * k
    e_dense = flops / (float(ref["us"]) * 1e-6) / PEAK["bf16"]
    e_dense /= k / (k + DENSE_K_PAD)
    print(f"cuBLAS BF16 {ref['tokens']}x{ref['n']}x{ref['k']}: "
          f"{e_dense:.3f} of the peak before its k_pad {DENSE_K_PAD}")
    for dt in ("bf16", "fp8b"):
        pre = [r for r in rows if r["case"].startswith(dt) and
               int(r["tokens"]) >= 8192]
        eff = {}
        for r in pre:
            f = 2 * float(r["padded"]) * float(r["n"]) * float(r["k"])
            eff[r["case"]] = (float(r["k"]),
                              f / (float(r["us"]) * 1e-6) / PEAK[dt])
        (k1, e1), (k2, e2) = eff[dt + "-up"], eff[dt + "-dn"]
        # e1 (k1 + p) / k1 = e2 (k2 + p) / k2
        kp = (e2 - e1) / (e1 / k1 - e2 / k2)
        e0 = e1 * (k1 + kp) / k1
        rel = e0 * PEAK[dt] / (e_dense * PEAK["bf16"])
        print(f"{dt}: up {e1:.3f}, down {e2:.3f} of the peak (padded rows);"
              f" e0 {e0:.3f}, k_pad {kp:.0f}; rate {rel:.3f} x cuBLAS BF16")


if __name__ == "__main__":
    main()
