#!/usr/bin/env python3
"""Fits TORCH_BLOCK_STAGE_CYCLES and TORCH_RADIX_ITEM_CYCLES
(src/engine/moe_torch.c): the fixed SM cycles of a pass (a block-
synchronous stage, which also prices gatherTopK's and the bitonic sort's
stages) of PyTorch's one-CTA radixSortKVInPlace (cub's BlockRadixSort, 16 passes of 4-bit
digits over 64-bit ids) and the cycles of each item a thread in it, to
the argsort rows ("sort": ids.argsort(stable=True) of B x 8 expert ids) of
tests/data/calibration/h100-moe/route.csv at batch 1 and 64 (8 and 512
ids: 2 and 32 items a thread), both models' rows averaged.  The rows at
batch 8 and 256 (4 and 32 items) and the onesweep path (1,024 and 4,096)
are held out: scripts/validation-report's "MoE routing kernels" families.

The model is the trace of `nvlemu run --stack torch` of the build given
(one layer, the H100 topology): the argsort's other kernels (the indices'
arange, the two copies) and sort_block's own fixed cost and bytes are the
model's; what is left of the measured time is the sort's cycles at the
topology's clock: 16 x (pass + items x item) cycles.  Two rows, two
constants: the script solves them and prints them against the built ones.

Usage: scripts/calibration/fit-torch-radix-sort.py [BUILD_DIR]
Python standard library only."""
import collections
import csv
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from nvlvalidation import moe  # noqa: E402

ROUTE = "tests/data/calibration/h100-moe/route.csv"
TOPO = "topology/hgx-h100.topo"
FIT_BATCHES = {1: 2.0, 64: 32.0}  # batch -> items a thread (8 and 512 ids)
PASSES = 16.0
OTHERS = ("sort_arange", "sort_index_copy", "sort_ids_copy")


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    src = open(os.path.join(ROOT, "src/engine/moe_torch.c")).read()
    cur = {n: float(re.search(r"#define %s ([0-9.]+)" % n, src).group(1))
           for n in ("TORCH_BLOCK_STAGE_CYCLES", "TORCH_RADIX_ITEM_CYCLES")}
    topo = open(os.path.join(ROOT, TOPO)).read()
    clock_hz = float(re.search(r"^clock = ([0-9.]+)GHz", topo, re.M).group(1)) * 1e9
    meas = collections.defaultdict(list)
    with open(os.path.join(ROOT, ROUTE)) as f:
        for r in csv.DictReader(f):
            if r["kernel"] == "sort" and int(r["batch"]) in FIT_BATCHES:
                meas[(r["model"], int(r["batch"]))].append(float(r["us"]))
    if len(meas) != 2 * len(FIT_BATCHES):
        sys.exit("fit-torch-radix-sort: expected the fit rows of both models in " + ROUTE)
    left = collections.defaultdict(list)  # batch -> measured cycles of the sort
    for (model, batch), us in meas.items():
        k = moe._trace_kernels(build, TOPO, model, batch, 1, 16)
        items = FIT_BATCHES[batch]
        built_cycles = PASSES * (cur["TORCH_BLOCK_STAGE_CYCLES"] +
                                 items * cur["TORCH_RADIX_ITEM_CYCLES"])
        fixed_us = k["sort_block"] - built_cycles / clock_hz * 1e6
        rest_us = us[0] - sum(k[n] for n in OTHERS) - fixed_us
        left[batch].append(rest_us * 1e-6 * clock_hz / PASSES)
    (b1, c1), (b2, c2) = sorted((b, sum(v) / len(v)) for b, v in left.items())
    i1, i2 = FIT_BATCHES[b1], FIT_BATCHES[b2]
    item = (c2 - c1) / (i2 - i1)
    base = c1 - i1 * item
    print("fit rows (batch %d, %d): TORCH_BLOCK_STAGE_CYCLES %.0f (built %.0f), "
          "TORCH_RADIX_ITEM_CYCLES %.0f (built %.0f)"
          % (b1, b2, base, cur["TORCH_BLOCK_STAGE_CYCLES"], item, cur["TORCH_RADIX_ITEM_CYCLES"]))


if __name__ == "__main__":
    main()
