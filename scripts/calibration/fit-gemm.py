#!/usr/bin/env python3
"""Fits the matmul constants of nvlemu's compute cost model (docs/cost-model.md)
to measured GEMM times, and prints the error per row and overall.

    t = overhead + max(flops / (peak * e_c * m/(m + m_half) * k/(k + k_pad)),
                       bytes / (hbm_bw * e_m * min(1, n * ceil(m / 64) / (cols_per_sm * sms)) ** n_exp))

Usage: scripts/calibration/fit-gemm.py CSV [--peak-bf16 989e12 --peak-fp8 1979e12
       --hbm 4.8e12 --sms 132] [--fit]
CSV columns: model,tp,op,m,n,k,dtype,us (as tests/data/calibration/h200-nvl2/gemm_*.csv).
Without --fit it evaluates the constants given with --set name=value.
Python standard library only.
"""
import argparse
import csv
import itertools
import math

BYTES = {"bf16": 2.0, "fp8": 1.0}


def predict(p, row, peaks, hbm, sms):
    m, n, k = row["m"], row["n"], row["k"]
    eb = BYTES[row["dtype"]]
    flops = 2.0 * m * n * k
    # weights in dtype, activations in dtype, bf16 output
    nbytes = n * k * eb + m * k * eb + m * n * 2.0
    e_c = p["e_c"] * m / (m + p["m_half"]) * k / (k + p["k_pad"])
    e_m = p["e_m"] * min(1.0, n * math.ceil(m / 64.0) / (p["cols_per_sm"] * sms)) ** p["n_exp"]
    tc = flops / (peaks[row["dtype"]] * e_c)
    tm = nbytes / (hbm * e_m)
    return p["overhead_us"] * 1e-6 + max(tc, tm)


def err(pred, meas):
    return max(pred / meas, meas / pred) - 1.0


def score(p, rows, peaks, hbm, sms):
    logs = [math.log1p(err(predict(p, r, peaks, hbm, sms), r["s"])) for r in rows]
    return math.expm1(sum(logs) / len(logs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--peak-bf16", type=float, default=989e12)
    ap.add_argument("--peak-fp8", type=float, default=1979e12)
    ap.add_argument("--hbm", type=float, default=4.8e12)
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--rows", action="store_true", help="print every row")
    a = ap.parse_args()
    rows = []
    for r in csv.DictReader(open(a.csv)):
        if r["dtype"] not in BYTES:
            continue
        rows.append({"op": r["op"], "tp": r["tp"], "m": int(r["m"]), "n": int(r["n"]),
                     "k": int(r["k"]), "dtype": r["dtype"], "s": float(r["us"]) * 1e-6})
    peaks = {"bf16": a.peak_bf16, "fp8": a.peak_fp8}
    p = {"overhead_us": 3.3, "e_c": 0.8, "m_half": 0, "k_pad": 256, "e_m": 0.8,
         "cols_per_sm": 30, "n_exp": 0.75}
    for s in a.set:
        k, v = s.split("=")
        p[k] = float(v)
    if a.fit:
        grid = {"overhead_us": [2.5, 3.0, 3.3, 3.6], "e_c": [0.7, 0.75, 0.8, 0.85],
                "m_half": [0, 8, 16, 32], "k_pad": [0, 128, 256, 512],
                "e_m": [0.75, 0.8, 0.85, 0.9], "cols_per_sm": [25, 30, 35, 40],
                "n_exp": [0.5, 0.75, 1.0]}
        best = None
        keys = list(grid)
        for vals in itertools.product(*(grid[k] for k in keys)):
            q = dict(zip(keys, vals))
            s = score(q, rows, peaks, a.hbm, a.sms)
            if best is None or s < best[0]:
                best = (s, q)
        p = best[1]
    print("constants:", p)
    for dt in BYTES:
        sub = [r for r in rows if r["dtype"] == dt]
        if sub:
            errs = [err(predict(p, r, peaks, a.hbm, a.sms), r["s"]) for r in sub]
            print("%s: rows %d geomean error %.1f%% worst %.1f%%" % (
                dt, len(sub), 100 * score(p, sub, peaks, a.hbm, a.sms), 100 * max(errs)))
    if a.rows:
        for r in rows:
            t = predict(p, r, peaks, a.hbm, a.sms)
            print("%s tp%s %-7s m=%-5d n=%-6d k=%-6d %s meas %8.2f pred %8.2f us  %+5.0f%%" % (
                r.get("model", ""), r["tp"], r["op"], r["m"], r["n"], r["k"], r["dtype"],
                r["s"] * 1e6, t * 1e6, 100 * (t / r["s"] - 1)))


if __name__ == "__main__":
    main()
