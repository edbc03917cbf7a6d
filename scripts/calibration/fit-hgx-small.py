#!/usr/bin/env python3
"""Fits the HGX H100's two small-message constants on its 2-GPU rows only
and prints the error of the fit and of the held-out 3- and 4-GPU rows.

The rows are tests/data/calibration/hgx-h100-x4 (4 x H100 SXM on NVSwitch,
NCCL 2.28.9; README.md there), sizes below 1 MB:

  [nvlink] hop_lat          on colls.csv, 2 GPUs: torch.distributed, the
                            lower of the eager call and the CUDA-graph replay
                            (the device time: a replay pays no enqueue)
  [nccl] launch_overhead    on nccl-tests-g.csv, -g 2: one thread enqueues
                            for both GPUs, so the small-size floor is the
                            host's, 2 x launch_overhead per call

Every collective but sendrecv (measured eager only: torch's point-to-point
host path, 40-50 us, not NCCL's).  Grid search of the geomean of
max(pred/meas, meas/pred) over topology/hgx-h100.topo with the two keys
replaced; the predictions are build/bench/*_perf in timing mode, as
scripts/validation-report runs them.  Usage (after a build):

    scripts/calibration/fit-hgx-small.py [--build build] [--check]

--check also prints 3 and 4 GPUs (held out) at the fitted values.
"""
import argparse
import csv
import math
import os
import re
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
# the validation report's bench runner (scripts/nvlvalidation/hgx.py)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from nvlvalidation.hgx import bench_rows  # noqa: E402
HGX = os.path.join(ROOT, "tests/data/calibration/hgx-h100-x4")
TOPO = os.path.join(ROOT, "topology/hgx-h100.topo")
OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
       "alltoall"]
HOPS_US = [0.2, 0.3, 0.5, 0.7, 0.9, 1.1, 1.4, 2.5]
LAUNCH_US = [5.4, 5.6, 5.8, 6.0, 6.2, 8.5]


def measured():
    """({(gpus, op, size): us} of colls.csv, the same of nccl-tests-g.csv)."""
    torch, g = {}, {}
    with open(os.path.join(HGX, "colls.csv")) as f:
        for r in csv.DictReader(f):
            if r["algo"] != "default":
                continue
            op = r["op"].replace("_cudagraph", "")
            key = (int(r["gpus"]), op, int(r["size_bytes"]))
            t = float(r["time_us"])
            torch[key] = min(t, torch.get(key, t))
    with open(os.path.join(HGX, "nccl-tests-g.csv")) as f:
        for r in csv.DictReader(f):
            if r["graph"] == "0" and r["place"] == "oop" and r["algo"] == "default":
                key = (int(r["gpus"]), r["op"], int(r["size_bytes"]))
                if key not in g or r["pass"] == "2":
                    g[key] = float(r["time_us"])
    return torch, g


def topo_with(hop_us, launch_us, tmp):
    """A copy of TOPO with hop_lat and [nccl] launch_overhead replaced."""
    with open(TOPO) as f:
        text = f.read()
    text = re.sub(r"^hop_lat = .*$", "hop_lat = %gus" % hop_us, text, flags=re.M)
    nccl = text.index("\n[nccl]\n")
    head, tail = text[:nccl], text[nccl:]
    tail = re.sub(r"^launch_overhead = .*$", "launch_overhead = %gus" % launch_us,
                  tail, count=1, flags=re.M)
    path = os.path.join(tmp, "hgx-%g-%g.topo" % (hop_us, launch_us))
    with open(path, "w") as f:
        f.write(head + tail)
    return path


def geomean_error(build, topo, meas, n, g):
    logs = []
    for op in OPS:
        for size, p in bench_rows(build, topo, n, op, ["-g", str(g)], "512K").items():
            m = meas.get((n, op, size))
            if m:
                logs.append(abs(math.log(p / m)))
    return math.exp(sum(logs) / len(logs)) - 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    torch, g = measured()
    with tempfile.TemporaryDirectory() as tmp:
        # hop_lat sets the device time; the replays are free of the host
        hops = [(geomean_error(a.build, topo_with(h, 5.8, tmp), torch, 2, 1), h)
                for h in HOPS_US]
        for e, h in hops:
            print("hop_lat %.1f us: 2-GPU colls.csv < 1 MB geomean %.1f %%" % (h, 100 * e))
        hop = min(hops)[1]
        launches = [(geomean_error(a.build, topo_with(hop, l, tmp), g, 2, 2), l)
                    for l in LAUNCH_US]
        for e, l in launches:
            print("launch_overhead %.1f us: -g 2 < 1 MB geomean %.1f %%" % (l, 100 * e))
        launch = min(launches)[1]
        print("fit: hop_lat = %gus, [nccl] launch_overhead = %gus" % (hop, launch))
        if a.check:
            topo = topo_with(hop, launch, tmp)
            for n in (3, 4):
                print("held out, %d GPUs: colls.csv %.1f %%, -g %d %.1f %%"
                      % (n, 100 * geomean_error(a.build, topo, torch, n, 1), n,
                         100 * geomean_error(a.build, topo, g, n, n)))


if __name__ == "__main__":
    main()
