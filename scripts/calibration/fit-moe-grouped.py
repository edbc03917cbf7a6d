#!/usr/bin/env python3
"""Fits the two constants of a grouped GEMM's latency floor (src/cost/cost.c
NVL_GROUPED_PANEL_TRIPS, the round trips a weight panel starts with, and
NVL_GROUPED_PANEL_BYTES_PER_TRIP, the bytes of it streamed a round trip)
to torch._grouped_mm times (bf16): the uniform rows of one H100's
(tests/data/calibration/h100-moe/grouped.csv) and the gate+up rows (K
4,096) of one H200's at a DEP8 rank's decode shapes
(tests/data/calibration/h200-fp8-k/grouped-decode.csv), each file's mean
log error weighted alike; the H100's routed rows and the H200's down rows
(K 1,536) are held out.  Both files are needed: on the H100 the kernel's
per-SM streaming rate and the HBM's rate nearly coincide, so its rows
alone cannot tell them apart; the H200's HBM is 1.43x faster and the
kernel's rate is not.  Reports before (no floor) and after.

The model is nvl_cost_grouped_matmul's (include/nvlemu/cost.h), with the
topology's constants (defaults: topology/h100-nvl2.topo):

    t = overhead + max(sum_x 2 ceil(t_x/64) 64 n k / (peak eff k/(k + k_pad)),
                       sum_x bytes_x / (hbm_bw hbm_eff e_w),
                       ceil(panels / sms) (trips + 256 k / per_trip) mem_latency)
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
H200 = dict(H100, hbm=4.8e12 * 0.80)   # topology/hgx-h200.topo: the H100's SMs, faster HBM
DEP8 = "tests/data/calibration/h200-fp8-k/grouped-decode.csv"
TILE_M, TILE_N = 64, 128


def predict(row, trips, per_trip=1e30):
    g = row["gpu"]
    n, k, rows, act = (int(row[c]) for c in ("n", "k", "rows", "active_experts"))
    counts = [rows / act] * act
    flops = sum(2 * math.ceil(m / TILE_M) * TILE_M * n * k for m in counts)
    nbytes = sum(n * k * 2 + m * k * 2 + m * n * 2 for m in counts)
    e_w = min(1.0, sum(n * math.ceil(m / 64) for m in counts) / (g["sms"] * g["cols"])) ** g["wexp"]
    t_c = flops / (g["peak"] * g["eff"] * k / (k + g["k_pad"]))
    t_m = nbytes / (g["hbm"] * e_w)
    panels = act * math.ceil(n / TILE_N)
    panel_bytes = min(n, TILE_N) * k * 2
    t_p = math.ceil(panels / g["sms"]) * (trips + panel_bytes / per_trip) * g["mem_latency"]
    return (g["overhead"] + max(t_c, t_m, t_p)) * 1e6


def errors(rows, trips, per_trip=1e30):
    p = [predict(r, trips, per_trip) for r in rows]
    e = [max(q / float(r["bf16_us"]), float(r["bf16_us"]) / q) - 1 for q, r in zip(p, rows)]
    return math.expm1(sum(math.log1p(x) for x in e) / len(e)), max(e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="?", default="tests/data/calibration/h100-moe/grouped.csv")
    ap.add_argument("--rows", action="store_true", help="print every row")
    a = ap.parse_args()
    rows = [dict(r, gpu=H100) for r in csv.DictReader(open(a.csv)) if r["bf16_us"] != "nan"]
    dep8 = [dict(r, gpu=H200, active_experts=r["experts"], bf16_us=r["bf16_grouped_us"],
                 model="dep8-h200", tp="8", gemm="gate_up" if r["k"] == "4096" else "down",
                 kind="rank", tokens_or_batch=r["rows_per_expert"])
            for r in csv.DictReader(open(DEP8))]
    fit1 = [r for r in rows if r["kind"] == "uniform"]
    fit2 = [r for r in dep8 if r["gemm"] == "gate_up"]
    held = [r for r in rows if r["kind"] != "uniform"] + [r for r in dep8 if r not in fit2]
    score = lambda q, b: (math.log1p(errors(fit1, q, b)[0]) + math.log1p(errors(fit2, q, b)[0]))
    _, trips, per_trip = min((score(q / 2, b * 1000.0), q / 2, b * 1000.0)
                             for q in range(0, 17) for b in range(12, 81, 2))
    print("fit on %d uniform H100 shapes and %d H200 gate+up shapes: trips = %.1f, bytes "
          "a trip = %.0f" % (len(fit1), len(fit2), trips, per_trip))
    for name, part in (("fit H100", fit1), ("fit H200", fit2), ("held out", held)):
        b, a_ = errors(part, 0), errors(part, trips, per_trip)
        print("%-9s %3d shapes  before %.1f %% geomean, %.0f %% worst;  after %.1f %%, %.0f %%"
              % (name, len(part), 100 * b[0], 100 * b[1], 100 * a_[0], 100 * a_[1]))
    if a.rows:
        for r in rows + dep8:
            print(r["model"], r["tp"], r["gemm"], r["kind"], r["tokens_or_batch"], r["bf16_us"],
                  "%.1f %.1f" % (predict(r, 0), predict(r, trips, per_trip)))


if __name__ == "__main__":
    main()
