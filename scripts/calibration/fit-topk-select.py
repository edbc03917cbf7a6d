#!/usr/bin/env python3
"""Reads torch's gatherTopK constants of src/engine/moe_torch.c off the
H200 measurement tests/data/calibration/h200-topk-passes/topk-passes.json
(scripts/device/measure-topk-passes.py): torch.topk(8, sorted=False) of
rows of 128 float scores built so that the radix select walks a known
number of 2-bit passes.

- TORCH_SELECT_PASS_WARP_INSTR: in the issue-bound regime (1,024 and
  4,096 rows: 7.8 and 31 CTAs an SM) the time of the 3,072 rows between
  them, per CTA an SM, in SM cycles, for rows that walk all 16 passes
  (a tied k-th score) and for rows singled out about 6.5 passes earlier
  (m = 5: 22 random low bits; their k-th is alone after about 9.5
  passes): two rows, two unknowns (cycles a pass of a 4-warp CTA, the
  passes' worth of findPattern and the gathers). At 4 warp instructions
  a cycle, cycles a pass of 4 warps = warp instructions a warp a pass.
- the latency regime (one row): the time per 2 bits more of shared
  prefix (m = 5 -> 11), against 2 x TORCH_BLOCK_STAGE_CYCLES at the
  topology's clock, and the tied row at 1 to 64 rows.

Nothing of tests/data/calibration/h100-moe/route.csv is used (its rows
are the routing family's, fit at batch 1 and 64, the rest held out).

Usage: scripts/calibration/fit-topk-select.py
Python standard library only."""
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = "tests/data/calibration/h200-topk-passes/topk-passes.json"
SRC = "src/engine/moe_torch.c"
CLOCK_HZ = 1.98e9  # topology/hgx-h200.topo: clock
FULL, EARLY = 16.0, 9.5  # passes: a tied row, m = 5 (22 random bits: about 6 + 3.5)


def main():
    d = json.load(open(os.path.join(ROOT, DATA)))
    src = open(os.path.join(ROOT, SRC)).read()
    built = {n: float(re.search(r"#define %s ([0-9.]+)" % n, src).group(1))
             for n in ("TORCH_SELECT_PASS_WARP_INSTR", "TORCH_BLOCK_STAGE_CYCLES",
                       "TORCH_SELECT_PASS_STEPS")}
    sel = {(b, m, t): us for b, m, t, us in d["select"]}
    rows_per_sm = (4096 - 1024) / float(d["sms"])
    cyc = {}
    for name, key in (("full", (5, 1)), ("early", (5, 0))):
        dt_us = sel[(4096,) + key] - sel[(1024,) + key]
        cyc[name] = dt_us * 1e-6 * CLOCK_HZ / rows_per_sm
    per_pass = (cyc["full"] - cyc["early"]) / (FULL - EARLY)
    tail = cyc["full"] / per_pass - FULL
    print("issue-bound (1,024 -> 4,096 rows): %.0f cycles a CTA an SM walking all passes, "
          "%.0f singled out early" % (cyc["full"], cyc["early"]))
    print("  -> TORCH_SELECT_PASS_WARP_INSTR %.0f (built %.0f), findPattern and gathers "
          "%.1f passes" % (per_pass, built["TORCH_SELECT_PASS_WARP_INSTR"], tail))
    slope = (sel[(1, 11, 0)] - sel[(1, 5, 0)]) / 6.0
    print("one row: %.2f us a pass (m 5 -> 11); built %.0f x %.0f cycles = %.2f us" % (
        slope, built["TORCH_SELECT_PASS_STEPS"], built["TORCH_BLOCK_STAGE_CYCLES"],
        built["TORCH_SELECT_PASS_STEPS"] * built["TORCH_BLOCK_STAGE_CYCLES"] / CLOCK_HZ * 1e6))
    print("tied rows (all 16 passes) at 1 / 8 / 64 / 256 rows: %s us" % " / ".join(
        "%.2f" % sel[(b, 5, 1)] for b in (1, 8, 64, 256)))
    # moe_torch.c's cy_select for rows of known passes, plus the simple
    # kernel's fixed 1.8 us (kernel_floor + mem_latency), against each row
    stage, steps = built["TORCH_BLOCK_STAGE_CYCLES"], built["TORCH_SELECT_PASS_STEPS"]
    tail = float(re.search(r"#define TORCH_SELECT_TAIL_STEPS ([0-9.]+)", src).group(1))
    for label, key, passes in (("tied", (5, 1), FULL), ("m = 5", (5, 0), EARLY)):
        out = []
        for b in (1, 8, 64, 256, 1024, 4096):
            cyc = stage * (passes * steps + tail) + max(0.0, b / d["sms"] - 1.0) * 4 * (
                passes + tail / steps) * built["TORCH_SELECT_PASS_WARP_INSTR"] / 4.0
            model = 1.8 + cyc / CLOCK_HZ * 1e6
            out.append("%d: %.1f/%.1f" % (b, model, sel[(b,) + key]))
        print("model/measured us, %s rows: %s" % (label, ", ".join(out)))


if __name__ == "__main__":
    main()
