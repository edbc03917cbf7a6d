"""The published nccl-tests bus bandwidths at 4-72 GPUs: reading
tests/data/calibration/published-nccl (or another such folder), the
*_perf benches' predictions, the families and the document's section."""
import csv
import os

from .common import (NCCL_COLLS, PUBLISHED_NCCL, ROOT, die, error, geomean, parallel, pct,
                     run, table)


# How each harness times a call, as the *_perf benches' options: nccl-tests
# back to back (the default), or torch.distributed timing one call between
# CUDA events on an idle device (stas00/ml-engineering all_reduce_bench.py
# before its queued-calls version): the host waits for every call, and
# torch's eager launch comes before NCCL's enqueue.
HARNESS_ARGS = {"nccl-tests": [], "torch-one-call": ["-z", "1", "--caller", "torch"]}

# The NCCL_ALGO names a source may have forced (sources.csv `nccl_algo`):
# NCCL's own, those the benches model.
NCCL_ALGOS = ["Tree", "Ring", "NVLS", "NVLSTree", "PAT"]

# What NCCL's tuning tables were before a version, where a source ran one
# older than the topology's [nccl] keys assume (their values are NCCL
# 2.21-2.28's): (system prefix, first version without it, --set what-ifs).
# Hopper's Ring LL ceiling, tuning.cc llMaxBws "Hopper-N1", is 87.7 GB/s in
# 2.18.5-2.20.5 and 141 from 2.21.5 (docs/collectives.md, "When NCCL runs
# NVLS allreduce"); with NCCL's NVLS latency in its rating, tuning.cc
# baseLat (2.18.5) or hwLat NVLINK (2.19-2.20.5) NVLS Simple 23 us, 25 from
# 2.21.5, it decides where NVLS takes over from Ring LL.
NCCL_VERSION_SETS = [("hgx-h", (2, 21), ["nccl.ll_max_bw=87.7GB/s",
                                         "nccl.nvls_tuning_lat=23us"]),
                     # NVLS allreduce before 2.20 fills the first channel's
                     # heads in whole chunks (docs/collectives.md, "NVLS in
                     # whole chunks before NCCL 2.20")
                     ("hgx-h", (2, 20), ["nccl.nvls_whole_chunks=yes"]),
                     # NVLS allreduce rated nChannels x bwIntra x 5/6 before
                     # 2.28 (tuning.cc, v2.27.7-1 line 324), nvlsEfficiency
                     # x (nCh-1)/nCh x N/(N-1) from 2.28: 5/6 is 2.27's
                     # rating where the graph has a head per rank
                     # (docs/collectives.md, "NVLS by rank count on 8 x B200")
                     ("", (2, 28), ["nccl.nvls_efficiency=0.833333"])]


def version_sets(system, nccl_version):
    """The --set what-ifs of NCCL_VERSION_SETS for SYSTEM under
    NCCL_VERSION (sources.csv's text; none when it states no version)."""
    head = nccl_version.split()[0].split(".")
    if len(head) < 2 or not all(x.isdigit() for x in head):
        return []
    version = tuple(int(x) for x in head)
    return [s for prefix, before, sets in NCCL_VERSION_SETS
            if system.startswith(prefix) and version < before for s in sets]


def read_published_nccl(folder):
    """The rows of the files FOLDER/sources.csv lists, grouped by (topology,
    collective, ranks, -g, NVLS, harness, the version's --set what-ifs): {key: [row dicts with system,
    topology, role, file, harness, collective, gpus, g, nvls, size, pub]}.
    sources.csv's optional column `harness` names how the source timed a
    call (HARNESS_ARGS; nccl-tests when absent or empty), its optional
    column `nccl_algo` the NCCL_ALGO the source ran with (NCCL's choice
    when empty).  Dies naming file and line at the first malformed row."""
    def rows_of(path, fields):
        if not os.path.exists(os.path.join(ROOT, path)):
            die("%s: no such file" % path)
        with open(os.path.join(ROOT, path)) as f:
            for n, row in enumerate(csv.DictReader(f), start=2):
                if None in row or any(row.get(k) in (None, "") for k in fields):
                    die("%s:%d: malformed row (expected the columns %s)"
                        % (path, n, ",".join(fields)))
                yield n, row
    src_fields = ["file", "system", "topology", "role", "nccl_version", "source"]
    data_fields = ["collective", "gpus", "gpus_per_process", "nvls", "size_bytes",
                   "busbw_gb_per_s"]
    groups = {}
    sources = os.path.join(folder, "sources.csv")
    for src_line, src in rows_of(sources, src_fields):
        harness = src.get("harness") or "nccl-tests"
        if harness not in HARNESS_ARGS:
            die("%s:%d: unknown harness '%s' (expected %s)"
                % (sources, src_line, harness, ", ".join(HARNESS_ARGS)))
        algo = src.get("nccl_algo") or ""
        if algo and algo.lower() not in [a.lower() for a in NCCL_ALGOS]:
            die("%s:%d: unknown nccl_algo '%s' (expected one of %s, or empty)"
                % (sources, src_line, algo, ", ".join(NCCL_ALGOS)))
        path = os.path.join(folder, src["file"])
        for n, r in rows_of(path, data_fields):
            try:
                key = (src["topology"], r["collective"], int(r["gpus"]),
                       int(r["gpus_per_process"]), r["nvls"], harness,
                       tuple(version_sets(src["system"], src["nccl_version"])), algo)
                size, pub = int(r["size_bytes"]), float(r["busbw_gb_per_s"])
            except ValueError:
                die("%s:%d: expected whole numbers of GPUs and bytes and a bandwidth"
                    % (path, n))
            if r["nvls"] not in ("on", "off") or src["role"] not in ("fit", "held-out"):
                die("%s:%d: nvls '%s' (on or off), role '%s' (fit or held-out)"
                    % (path, n, r["nvls"], src["role"]))
            if r["collective"] not in NCCL_COLLS or size <= 0 or pub <= 0 or key[2] < 2 \
                    or key[3] < 1 or key[2] % key[3]:
                die("%s:%d: collective '%s' (one of %s), %d GPUs by %d per process, "
                    "%d bytes, %g GB/s: expected 2 or more GPUs in whole processes and "
                    "positive sizes" % (path, n, r["collective"], ", ".join(NCCL_COLLS),
                                        key[2], key[3], size, pub))
            groups.setdefault(key, []).append(dict(
                system=src["system"], topology=src["topology"], role=src["role"],
                file=src["file"], harness=harness, collective=r["collective"],
                gpus=key[2], g=key[3],
                nvls=r["nvls"], size=size, pub=pub))
    if not groups:
        die("no rows in " + os.path.join(folder, "sources.csv"))
    return groups


def published_nccl(build, groups):
    """Every row of GROUPS (read_published_nccl) predicted by the *_perf
    bench of its collective on the file's topology: [row dicts with system,
    topology, role, collective, gpus, g, nvls, size, pub, pred, error]."""
    def one(group):
        (topo, coll, gpus, g, nvls, harness, sets, algo), rows = group
        sizes = sorted(r["size"] for r in rows)
        env = dict(os.environ)
        if algo or nvls == "off":
            env["NCCL_ALGO"] = algo or "Ring"
        cmd = [os.path.join(ROOT, "scripts", "nvlrun"), str(gpus),
               os.path.join(build, "bench", coll + "_perf"), "-g", str(g), "--topo",
               os.path.join(ROOT, topo), "-b", str(sizes[0]), "-e", str(sizes[-1]),
               "-f", "2", "--mode", "timing"] + HARNESS_ARGS[harness] + \
            [a for s in sets for a in ("--set", s)]
        return cmd, run(cmd, env)
    out = []
    for (_, rows), (cmd, stdout) in zip(groups.items(), parallel(one, groups.items())):
        out += compared(rows, cmd, stdout, 7, "pub", "pred")
    return out


def compared(rows, cmd, stdout, column, meas_key, pred_key):
    """ROWS (dicts with file, size and MEAS_KEY), each with PRED_KEY (the
    COLUMN-th field of the line for its size in STDOUT, a *_perf bench's
    table that CMD printed), choice (the model's algorithm and protocol)
    and error; dies naming the file, size and command where a size has no
    line."""
    pred, out = {}, []
    for line in stdout.splitlines():
        f = line.split()
        if len(f) > 8 and f[0].isdigit():
            pred[int(f[0])] = (float(f[column]), f[-2] + " " + f[-1])
    for r in rows:
        if r["size"] not in pred:
            die("%s: no prediction for %d bytes from '%s'" % (r["file"], r["size"],
                                                             " ".join(cmd)))
        value, choice = pred[r["size"]]
        out.append(dict(r, choice=choice, error=error(value, r[meas_key]),
                        **{pred_key: value}))
    return out


def nccl_families(rows):
    """One family per system, collective, NVLS setting and role: [dicts with
    family, hardware, collective, ranks, sizes, role, rows, geomean_error,
    worst_error], in the order of the rows."""
    fams = {}
    for r in rows:
        key = (r["system"], r["collective"], r["nvls"], r["role"])
        fams.setdefault(key, []).append(r)
    out = []
    for (system, coll, nvls, role), rs in fams.items():
        errs = [r["error"] for r in rs]
        gpus = sorted({r["gpus"] for r in rs})
        sizes = sorted({r["size"] for r in rs})
        out.append(dict(family="%s %s, NVLS %s" % (system, coll, nvls), hardware=system,
                        collective=coll, nvls=nvls, ranks=(gpus[0], gpus[-1]),
                        sizes=(sizes[0], sizes[-1]), role=role, rows=len(rs),
                        files=sorted({r["file"] for r in rs}),
                        geomean_error=geomean(errs), worst_error=max(errs)))
    return out


def nccl_doc(rows):
    """The section of docs/validation.md for the published nccl-tests rows."""
    fams = nccl_families(rows)
    def rng(a, b):
        return str(a) if a == b else "%s-%s" % (a, b)
    doc = ["## Published nccl-tests at 4-72 GPUs\n",
           "Other people's nccl-tests bus bandwidths (" + PUBLISHED_NCCL + "/README.md: "
           "sources, NCCL versions, NVLS on or off, -g) against the `*_perf` benches "
           "in timing mode on the topology `sources.csv` names, the same ranks and "
           "-g, `NCCL_ALGO=Ring` where the source ran with NVLS off (its "
           "`nccl_algo` column's algorithm where it names one), and `-z 1 "
           "--caller torch` where it timed one torch.distributed call at a time on "
           "an idle device (harness `torch-one-call`). Role `fit`: a "
           "shipped constant was fit to that file (no check); `held-out`: nothing "
           "was fit to it.\n",
           table(["family", "role", "GPUs", "sizes (B)", "comparisons", "geomean error",
                  "worst error", "files"],
                 [[f["family"], f["role"], rng(*f["ranks"]), rng(*f["sizes"]), f["rows"],
                   pct(f["geomean_error"]), pct(f["worst_error"]), ", ".join(f["files"])]
                  for f in fams]),
           "### Rows\n",
           table(["system", "collective", "GPUs", "-g", "NVLS", "harness", "size (B)",
                  "published busbw", "predicted busbw", "error", "model's choice", "file"],
                 [[r["system"], r["collective"], r["gpus"], r["g"], r["nvls"],
                   r["harness"], r["size"],
                   "%.2f" % r["pub"], "%.2f" % r["pred"], pct(r["error"]), r["choice"],
                   r["file"]] for r in rows])]
    return doc
