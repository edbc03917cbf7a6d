#!/usr/bin/env python3
"""Fits TORCH_FP8_START_TRIPS (src/cost/grouped_torch.c): the start, in memory round
trips, of torch's FP8 grouped GEMM at decode shapes (aten ScaledGroupMM.cu's
64 x 128 x 128 Pingpong kernel in 2 x 2 clusters; the kernel's other terms
are BF16's fitted ones plus one round trip a tile for its scales), to the
Qwen3-30B-A3B uniform rows of tests/data/calibration/h100-moe/grouped.csv
at 1-128 rows an expert (48 rows: torch._scaled_grouped_mm's fp8_us).
Every other FP8 grouped row (that file's Qwen3-30B-A3B routed and
Qwen3-235B-A22B rows, h200-moe-prefill/, h200-fp8-k/) is held out:
scripts/validation-report's "torch._scaled_grouped_mm fp8" families.

The model is `nvlemu cost grouped ... --dtype fp8 --stack torch` of the
build given.  On the fit rows the kernel's floor binds, so the start moves
each row's time by the same mem_latency a trip; the script scans the
start for the least geomean error (max(model / measured, measured /
model) - 1), prints it against the built one; set the constant, rebuild,
run it again (the second run prints the same value).

Usage: scripts/calibration/fit-torch-fp8-grouped.py [BUILD_DIR]
Python standard library only."""
import csv
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSV = "tests/data/calibration/h100-moe/grouped.csv"
TOPO = "topology/hgx-h100.topo"
FIT_MODEL, FIT_MAX_ROWS = "qwen3-30b-a3b", 128


def geomean_error(pairs):
    errs = [max(p / m, m / p) - 1 for p, m in pairs]
    return math.expm1(sum(math.log1p(e) for e in errs) / len(errs))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    src = open(os.path.join(ROOT, "src/cost/grouped_torch.c")).read()
    cur = float(re.search(r"#define TORCH_FP8_START_TRIPS ([0-9.]+)", src).group(1))
    topo = open(os.path.join(ROOT, TOPO)).read()
    lat_us = float(re.search(r"^mem_latency = ([0-9.]+)us", topo, re.M).group(1))
    with open(os.path.join(ROOT, CSV)) as f:
        rows = [r for r in csv.DictReader(f) if r["model"] == FIT_MODEL and
                r["kind"] == "uniform" and int(r["tokens_or_batch"]) <= FIT_MAX_ROWS]
    if not rows:
        sys.exit("fit-torch-fp8-grouped: no fit rows in " + CSV)
    pairs = []
    for r in rows:
        out = subprocess.run([os.path.join(build, "nvlemu"), "cost", "--topo", TOPO, "--json",
                              "-", "grouped", r["rows"], r["n"], r["k"], "--groups",
                              r["active_experts"], "--dtype", "fp8", "--stack", "torch"],
                             cwd=ROOT, check=True, capture_output=True, text=True).stdout
        pairs.append((float(json.loads(out)["time_us"]), float(r["fp8_us"])))
    best = min((geomean_error([(p + (s - cur) * lat_us, m) for p, m in pairs]), s)
               for s in [x / 2 for x in range(0, 61)])
    print("%d fit rows: geomean error %.1f %% at TORCH_FP8_START_TRIPS %.1f; least %.1f %% at %.1f"
          % (len(pairs), 100 * geomean_error(pairs), cur, 100 * best[0], best[1]))


if __name__ == "__main__":
    main()
