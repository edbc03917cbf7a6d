#!/bin/sh
# Usage: check-perf-json.sh -- COMMAND...
#
# Runs a benchmark job twice with -J FILE (nccl-tests' JSON output) and
# judges the file against the printed table: nccl-tests 2.19.6's layout
# (nccl-tests src/util.cu, version 3: top-level, config, device, result keys),
# one result per table row with the same size, count, type, redop, root,
# times and bandwidths (as printed, to the table's rounding), the
# emulator's columns under "nvlemu"; and the second run, finding FILE,
# writes FILE.0 instead of overwriting it, as nccl-tests does.
set -u
[ "${1-}" = "--" ] && shift
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
"$@" -J "$dir/out.json" >"$dir/table.txt" 2>&1 || { cat "$dir/table.txt"; echo "check-perf-json.sh: the job failed" >&2; exit 1; }
"$@" -J "$dir/out.json" >"$dir/table2.txt" 2>&1 || { cat "$dir/table2.txt"; echo "check-perf-json.sh: the second job failed" >&2; exit 1; }
cat "$dir/table.txt"
exec python3 - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
def fail(msg):
    sys.exit("check-perf-json.sh: " + msg)
if not os.path.exists(os.path.join(d, "out.json.0")):
    fail("the second run did not write out.json.0 (it must not overwrite out.json)")
if "# Writing JSON output to %s/out.json\n" % d not in open(os.path.join(d, "table.txt")).read():
    fail("the table does not say where the JSON went")
j = json.load(open(os.path.join(d, "out.json")))
top = ["version", "start_time", "args", "env", "nccl_version", "config", "results",
       "out_of_bounds", "average_bus_bandwidth", "end_time", "nvlemu"]
missing = [k for k in top if k not in j]
if missing or j["version"] != 3:
    fail("top-level keys missing %s or version %r != 3" % (missing, j.get("version")))
cfg = ["nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "warmup_iters", "iterations",
       "aggregated_iterations", "validation", "graph", "blocking_collectives",
       "per_iter_timing", "per_iter_skip", "parallel_init", "devices"]
if [k for k in cfg if k not in j["config"]]:
    fail("config keys missing: %s" % [k for k in cfg if k not in j["config"]])
dev = ["rank", "group", "pid", "hostname", "device", "device_hex", "device_info"]
if not j["config"]["devices"] or any(set(dev) - set(x) for x in j["config"]["devices"]):
    fail("devices missing or incomplete")
rows = []
for line in open(os.path.join(d, "table.txt")):
    f = line.split()
    if len(f) == 16 and f[0].isdigit():
        rows.append(f)
res = j["results"]
if len(res) != len(rows) or not rows:
    fail("%d results in the JSON, %d rows in the table" % (len(res), len(rows)))
def close(a, printed):
    p = float(printed)
    return abs(a - p) <= 0.0051 * max(1.0, abs(p)) if "e" not in printed else abs(a - p) <= 0.051 * abs(p)
for r, f in zip(res, rows):
    for k in ("size", "count", "type", "redop", "root", "out_of_place", "in_place",
              "actual_iterations", "experiment_name", "nvlemu"):
        if k not in r:
            fail("result for %s B lacks %r" % (f[0], k))
    if (str(r["size"]), str(r["count"]), r["type"], r["redop"], r["root"].strip()) != \
            (f[0], f[1], f[2], f[3], f[4]):
        fail("result %r does not match the row %r" % (r, f))
    for ph, off in (("out_of_place", 5), ("in_place", 9)):
        p = r[ph]
        for k, i in (("time", 0), ("alg_bw", 1), ("bus_bw", 2)):
            if not close(p[k], f[off + i]):
                fail("%s B %s %s: JSON %r, table %s" % (f[0], ph, k, p[k], f[off + i]))
    e = r["nvlemu"]
    if (e["algorithm"], e["protocol"]) != (f[14], f[15]) or e["mode"] not in ("data", "timing"):
        fail("%s B: nvlemu columns %r vs the table's %s %s" % (f[0], e, f[14], f[15]))
print("check-perf-json.sh: %d results match the table; nccl-tests' keys present" % len(res))
PY
