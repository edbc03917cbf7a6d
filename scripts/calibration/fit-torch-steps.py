#!/usr/bin/env python3
"""Fits the two end-to-end constants of the compute model on measured torch
steps, leaving one model out, and prints the held-out errors.

The measured steps are tests/data/calibration/h200-torch/steps.csv (one
H200, PyTorch with CUDA graphs; scripts/device/measure-steps.py).  The
per-kernel constants (mem_latency, norm_step_time, strided_efficiency,
sdpa_efficiency) come from the profiled kernels (docs/measurements.md);
what this fits is what scales every weight stream and every large GEMM:

  [gpu] hbm_efficiency     on the decode steps (weight streams)
  [gpu] matmul_efficiency  on the prefills (compute-bound GEMMs)

For each model M: fit both on the other two models' cases (grid search,
least squares of log(predicted / measured)), then predict M's cases with
them.  Then the fit on all three.  Usage (after a build):

    scripts/calibration/fit-torch-steps.py [--nvlemu build/nvlemu]
"""
import argparse
import concurrent.futures
import csv
import json
import math
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
STEPS = os.path.join(ROOT, "tests/data/calibration/h200-torch/steps.csv")
TOPO = os.path.join(ROOT, "topology/hgx-h200.topo")
SHARED = {}  # predictions made by the worker threads
HBM = [round(0.76 + 0.02 * i, 2) for i in range(8)]
MATMUL = [round(0.66 + 0.02 * i, 2) for i in range(8)]


def predict(nvlemu, r, hbm, mm, cache):
    key = (r["model"], r["phase"], r["batch"], r["ctx"], hbm, mm)
    if key in cache:
        return cache[key]
    if key in SHARED:
        cache[key] = SHARED[key]
        return cache[key]
    cmd = [nvlemu, "run", "--topo", TOPO, "--model", r["model"], "--layers", r["layers"],
           "--stack", "torch", "--batch", r["batch"], "--json", "-",
           "--set", "gpu.hbm_efficiency=%s" % hbm, "--set", "gpu.matmul_efficiency=%s" % mm]
    if r["phase"] == "decode":
        cmd += ["--ctx", r["ctx"]]
    else:
        cmd += ["--prompt-len", r["ctx"], "--gen-len", "1"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    us = 1e3 * (d["tpot_ms"] if r["phase"] == "decode" else d["ttft_ms"])
    cache[key] = us
    SHARED[key] = us
    return us


def log_err(nvlemu, rows, hbm, mm, cache):
    todo = [r for r in rows if (r["model"], r["phase"], r["batch"], r["ctx"], hbm, mm)
            not in cache]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        list(ex.map(lambda r: predict(nvlemu, r, hbm, mm, {}), todo))
    return [math.log(predict(nvlemu, r, hbm, mm, cache) / float(r["measured_us"])) for r in rows]


def fit(nvlemu, rows, cache):
    """hbm on the decodes (at the middle matmul), matmul on the prefills."""
    dec = [r for r in rows if r["phase"] == "decode"]
    pre = [r for r in rows if r["phase"] == "prefill"]
    mid = MATMUL[len(MATMUL) // 2]
    hbm = min(HBM, key=lambda h: sum(e * e for e in log_err(nvlemu, dec, h, mid, cache)))
    mm = min(MATMUL, key=lambda m: sum(e * e for e in log_err(nvlemu, pre, hbm, m, cache)))
    return hbm, mm


def summary(errs):
    g = math.exp(sum(abs(e) for e in errs) / len(errs)) - 1
    w = max(errs, key=abs)
    return "%.1f %% geomean, worst %+.1f %%" % (100 * g, 100 * (math.exp(w) - 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvlemu", default=os.path.join(ROOT, "build", "nvlemu"))
    a = ap.parse_args()
    rows = list(csv.DictReader(open(STEPS)))
    models = sorted({r["model"] for r in rows})
    cache = {}
    print("| held out | hbm_efficiency | matmul_efficiency | held-out decode | held-out prefill |")
    print("|---|---|---|---|---|")
    for m in models:
        hbm, mm = fit(a.nvlemu, [r for r in rows if r["model"] != m], cache)
        test = [r for r in rows if r["model"] == m]
        dec = log_err(a.nvlemu, [r for r in test if r["phase"] == "decode"], hbm, mm, cache)
        pre = log_err(a.nvlemu, [r for r in test if r["phase"] == "prefill"], hbm, mm, cache)
        print("| %s | %.2f | %.2f | %s | %s |" % (m, hbm, mm, summary(dec), summary(pre)))
        sys.stdout.flush()
    hbm, mm = fit(a.nvlemu, rows, cache)
    dec = log_err(a.nvlemu, [r for r in rows if r["phase"] == "decode"], hbm, mm, cache)
    pre = log_err(a.nvlemu, [r for r in rows if r["phase"] == "prefill"], hbm, mm, cache)
    print("| none (all three) | %.2f | %.2f | %s | %s |" % (hbm, mm, summary(dec), summary(pre)))


if __name__ == "__main__":
    main()
