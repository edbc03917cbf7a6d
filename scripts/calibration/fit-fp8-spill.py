#!/usr/bin/env python3
"""Fits TORCH_FP8_SPILL_REL (src/cost/grouped_torch.c): the rate of torch's FP8
grouped GEMM tile whose accumulators spill (128 x 256 x 64, slow
accumulation; aten ScaledGroupMM.cu) relative to its other tiles', to the
slow-accumulation rows of tests/data/calibration/h200-moe-compiled/
fp8-tile.csv that ran that tile (the kernel's name says so).  The model is
`nvlemu cost grouped ... --dtype fp8 --stack torch` of the build given
(its time is compute-bound there: 1 / rate), so the constant that zeroes
the fit rows' mean log error is the built one times the geomean of model
over measured; run it, set the constant, rebuild, run it again (the second
run prints a ratio of 1.00).  Every other FP8 grouped row
(h100-moe/grouped.csv, h200-moe-prefill/, h200-fp8-k/grouped-decode.csv)
is held out: scripts/validation-report's "torch fp8" families.

Usage: scripts/calibration/fit-fp8-spill.py [BUILD_DIR]
Python standard library only."""
import csv
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSV = "tests/data/calibration/h200-moe-compiled/fp8-tile.csv"
TOPO = "topology/hgx-h200.topo"
# the spilling tile's mangled shape in the kernel's name: 128 x 256 x 64
SPILL_TILE = "ILi128EEENSC_ILi256EEENSC_ILi64EEE"


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    src = open(os.path.join(ROOT, "src/cost/grouped_torch.c")).read()
    cur = float(re.search(r"#define TORCH_FP8_SPILL_REL ([0-9.]+)", src).group(1))
    with open(os.path.join(ROOT, CSV)) as f:
        rows = [r for r in csv.DictReader(f) if r["dtype"] == "fp8" and r["fast_accum"] == "0"
                and SPILL_TILE in r["kernel"]]
    if not rows:
        sys.exit("fit-fp8-spill: no slow 128 x 256 rows in " + CSV)
    ratios = []
    for r in rows:
        m = int(r["experts"]) * int(r["rows_per_expert"])
        out = subprocess.run([os.path.join(build, "nvlemu"), "cost", "--topo", TOPO, "--json", "-",
                              "grouped", str(m), r["n"], r["k"], "--groups", r["experts"],
                              "--dtype", "fp8", "--stack", "torch"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
        pred, meas = float(json.loads(out)["time_us"]), float(r["us"])
        ratios.append(pred / meas)
        print("experts %s rows/expert %s n %s k %s: measured %.1f us, model %.1f us (%+.1f %%)"
              % (r["experts"], r["rows_per_expert"], r["n"], r["k"], meas, pred,
                 100 * (pred / meas - 1)))
    g = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    print("%d fit rows: model / measured geomean %.3f at TORCH_FP8_SPILL_REL %.3f -> %.3f"
          % (len(rows), g, cur, cur * g))


if __name__ == "__main__":
    main()
