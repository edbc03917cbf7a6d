#!/usr/bin/env python3
"""Fits the three constants of torch._grouped_mm's (bf16) floor at decode
shapes on SM90 (src/cost/grouped_torch.c TORCH_GROUPED_START_TRIPS,
TORCH_GROUPED_TILE_TRIPS, TORCH_GROUPED_BYTES_PER_TRIP) to one H200's
times (tests/data/calibration/h200-grouped-decode/grouped-decode.csv):
the fit rows are those with all 128 experts given 2, 8, 32 or 128 rows
(26 of 70, six shapes); the rest (1, 4, 16, 64 and 65 rows an expert,
8-100 experts) are held out, as are the DEP8 rows
(h200-fp8-k/grouped-decode.csv, 32-128 rows an expert: the same kernel).
A coarse grid of the three, then coordinate descent on a fine one.  Prints the geomean and
worst error of each set before (the panel floor
of scripts/calibration/fit-moe-grouped.py) and after.

The floor (aten GroupMM.cu's Pingpong 64 x 128 x 128 kernel in clusters
of 2 x 1: an expert's row tiles rounded up to whole clusters, each CTA
loading half of its panel's weights):

    ctas  = sum over experts with rows of 2 ceil(ceil(rows / 64) / 2) x ceil(n / 128)
    floor = (start + ceil(ctas / sms) (tile + 128 k 2 / 2 / bytes)) mem_latency

and the time overhead + max(compute, HBM, floor), the compute and HBM
terms fit-moe-grouped.py's.

Usage: scripts/calibration/fit-torch-grouped-decode.py [--rows]
Python standard library only.
"""
import argparse
import csv
import importlib.util
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
_spec = importlib.util.spec_from_file_location("fmg", os.path.join(HERE, "fit-moe-grouped.py"))
fmg = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fmg)
NEW = os.path.join(ROOT, "tests/data/calibration/h200-grouped-decode/grouped-decode.csv")
DEP8 = os.path.join(ROOT, fmg.DEP8)
FIT_ROWS = (2, 8, 32, 128)
OLD = (3.0, 20000.0)   # fit-moe-grouped.py's panel floor: trips, bytes a trip


def predict(r, c=None):
    """us: the other terms with the panel floor (c None) or this floor."""
    n, k, act, per = r["n"], r["k"], r["active"], r["per"]
    row = dict(gpu=fmg.H200, n=n, k=k, rows=act * per, active_experts=act)
    if c is None:
        return fmg.predict(row, *OLD)
    g = fmg.H200
    start, tile, per_trip = c
    ctas = act * 2 * math.ceil(math.ceil(per / 64) / 2) * math.ceil(n / 128)
    floor = (start + math.ceil(ctas / g["sms"]) * (tile + min(n, 128) * k / per_trip)) \
        * g["mem_latency"]
    return max(fmg.predict(row, 0), (g["overhead"] + floor) * 1e6)


def errors(rows, c=None):
    e = [max(p / r["us"], r["us"] / p) - 1 for r in rows for p in [predict(r, c)]]
    return 100 * math.expm1(sum(math.log1p(x) for x in e) / len(e)), 100 * max(e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", action="store_true", help="print every row")
    a = ap.parse_args()
    new = [dict(n=int(r["n"]), k=int(r["k"]), active=int(r["active"]),
                per=int(r["rows_per_expert"]), us=float(r["us"]), experts=int(r["experts"]))
           for r in csv.DictReader(open(NEW))]
    dep8 = [dict(n=int(r["n"]), k=int(r["k"]), active=int(r["experts"]),
                 per=int(r["rows_per_expert"]), us=float(r["bf16_grouped_us"]), experts=16)
            for r in csv.DictReader(open(DEP8)) if int(r["rows_per_expert"]) <= 128]
    fit = [r for r in new if r["active"] == 128 and r["per"] in FIT_ROWS]
    held = [r for r in new if r not in fit]
    # a coarse grid, then coordinate descent on the fine one (start 0-12
    # trips by 0.5, a tile's 0-3 by 0.25, 15,000-40,000 bytes a trip by 1,000)
    grids = ([x / 2 for x in range(0, 25)], [x / 4 for x in range(0, 13)],
             [x * 1000.0 for x in range(15, 41)])
    c = list(min(((s, t, b) for s in grids[0][::4] for t in grids[1][::2]
                  for b in grids[2][::5]), key=lambda v: errors(fit, v)[0]))
    for _ in range(3):
        for i, grid in enumerate(grids):
            c[i] = min(grid, key=lambda v: errors(fit, c[:i] + [v] + c[i + 1:])[0])
    c = tuple(c)
    print("fit on %d rows: start %.1f trips, %.2f trips a tile, %.0f bytes a trip"
          % (len(fit), *c))
    for name, part in (("fit", fit), ("held out", held), ("DEP8 <=128", dep8)):
        print("%-10s %3d rows  before %.1f %% geomean, %.0f %% worst;  after %.1f %%, %.0f %%"
              % (name, len(part), *errors(part), *errors(part, c)))
    if a.rows:
        for r in fit + held + dep8:
            print(r["experts"], r["active"], r["per"], r["n"], r["k"], r["us"],
                  "%.1f %.1f" % (predict(r), predict(r, c)))


if __name__ == "__main__":
    main()
