#!/usr/bin/env python3
"""Fits the one constant of a grouped GEMM's latency floor (src/cost/cost.c
NVL_GROUPED_PANEL_TRIPS: dependent memory round trips a weight panel takes
on its SM at the least) to torch._grouped_mm times measured on one H100
(tests/data/calibration/h100-moe/grouped.csv, bf16 column), on the
Qwen3-30B-A3B shapes only, and reports the Qwen3-235B-A22B shapes as held
out, before (no floor) and after.

The model is nvl_cost_grouped_matmul's (include/nvlemu/cost.h), with the
topology's constants (defaults: topology/h100-nvl2.topo):

    t = overhead + max(sum_x 2 ceil(t_x/64) 64 n k / (peak eff k/(k + k_pad)),
                       sum_x bytes_x / (hbm_bw hbm_eff e_w),
                       ceil(panels / sms) trips mem_latency)
    e_w = min(1, sum_x n ceil(t_x/64) / (sms cols_per_sm)) ** width_exp
    panels = sum over experts with tokens of ceil(n / 128)

`routed` rows record the active experts and the rows, not each expert's
count: their tokens are spread evenly over the active experts here (the
bytes and panels are exact; the width and padding terms approximate).

Usage: scripts/calibration/fit-moe-grouped.py [CSV] [--rows]
Python standard library only.
"""
import argparse
import csv
import math

H100 = dict(sms=132, hbm=3.35e12 * 0.80, peak=989e12, eff=0.70, k_pad=64,
            cols=30, wexp=0.75, overhead=3.3e-6, mem_latency=0.9e-6)
TILE_M, TILE_N = 64, 128


def predict(row, trips, g=H100):
    n, k, rows, act = (int(row[c]) for c in ("n", "k", "rows", "active_experts"))
    counts = [rows / act] * act
    flops = sum(2 * math.ceil(m / TILE_M) * TILE_M * n * k for m in counts)
    nbytes = sum(n * k * 2 + m * k * 2 + m * n * 2 for m in counts)
    e_w = min(1.0, sum(n * math.ceil(m / 64) for m in counts) / (g["sms"] * g["cols"])) ** g["wexp"]
    t_c = flops / (g["peak"] * g["eff"] * k / (k + g["k_pad"]))
    t_m = nbytes / (g["hbm"] * e_w)
    panels = act * math.ceil(n / TILE_N)
    t_p = math.ceil(panels / g["sms"]) * trips * g["mem_latency"]
    return (g["overhead"] + max(t_c, t_m, t_p)) * 1e6


def errors(rows, trips):
    e = [max(predict(r, trips) / float(r["bf16_us"]), float(r["bf16_us"]) / predict(r, trips)) - 1
         for r in rows]
    return math.expm1(sum(math.log1p(x) for x in e) / len(e)), max(e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="?", default="tests/data/calibration/h100-moe/grouped.csv")
    ap.add_argument("--rows", action="store_true", help="print every row")
    a = ap.parse_args()
    rows = [r for r in csv.DictReader(open(a.csv)) if r["bf16_us"] != "nan"]
    fit = [r for r in rows if r["model"] == "qwen3-30b-a3b"]
    held = [r for r in rows if r["model"] != "qwen3-30b-a3b"]
    trips = min((errors(fit, q / 4)[0], q / 4) for q in range(0, 81))[1]
    print("fit on %d Qwen3-30B-A3B shapes: trips = %.2f" % (len(fit), trips))
    for name, part in (("fit", fit), ("held out", held)):
        b, a_ = errors(part, 0), errors(part, trips)
        print("%-9s %3d shapes  before %.1f %% geomean, %.0f %% worst;  after %.1f %%, %.0f %%"
              % (name, len(part), 100 * b[0], 100 * b[1], 100 * a_[0], 100 * a_[1]))
    if a.rows:
        for r in rows:
            print(r["model"], r["tp"], r["gemm"], r["kind"], r["tokens_or_batch"], r["bf16_us"],
                  "%.1f %.1f" % (predict(r, 0), predict(r, trips)))


if __name__ == "__main__":
    main()
