"""AI Configurator's collective tables (tests/data/calibration/aiconfigurator:
NVIDIA's nccl-tests latencies on H100/H200/B200 SXM and GB200 at 2-8 GPUs,
and TensorRT-LLM's own all-reduce under its AUTO strategy) against the
*_perf benches: reading the folder, the predictions, the held-out families
and the document's section."""
import csv
import os

from .common import ROOT, die, geomean, parallel, pct, run, table
from .families import regions, summary_row
from .nccl import compared

AIC = "tests/data/calibration/aiconfigurator"
KINDS = ("nccl", "trtllm-allreduce")
COLLS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
MB = 1 << 20

# How each table was timed, as the benches' options (the collector's
# commands: the folder's README.md).  nccl: collector/network/collect_nccl.py
# runs `<coll>_perf -b S -e S -t N -d half -w 40 -a 1 -n 100|60 -c 0`, one
# process whose N threads drive a GPU each, calls back to back, no graph;
# the latency is the out-of-place time.  trtllm-allreduce:
# collector/network/collect_all_reduce.py captures 5 AllReduce calls
# (strategy AUTO, no fusion, bf16) in one torch CUDA graph and divides a
# replay's time by 5.
NCCL_ARGS = ["-d", "half", "-a", "1", "-c", "0"]
TRTLLM_ARGS = ["-d", "bfloat16", "--impl", "auto", "-G", "5"]
# The rows [nccl] stream_gap of these systems' topologies was fit on
# (topology/hgx-h100-8.topo, topology/hgx-h200.topo; docs/collectives.md,
# "Each harness its own cost"): 2 GPUs, below 1 MB, the collectives that
# take nccl-tests' one-GPU-per-thread loop (alltoall's p2p path does not).
FIT_SYSTEMS = ("H100 SXM", "H200 SXM")


def is_fit(r):
    """Whether the row R (read_aic) is one a constant was fit on."""
    return r["kind"] == "nccl" and r["system"] in FIT_SYSTEMS and r["gpus"] == 2 \
        and r["size"] < MB and r["collective"] != "alltoall"


def read_aic(folder=AIC):
    """The rows of the files FOLDER/sources.csv lists: [dicts with file,
    kind, system, topology, version, collective, gpus, size (bytes),
    meas_us].  Dies naming file and line at the first malformed row."""
    def rows_of(path, fields):
        full = os.path.join(ROOT, path)
        if not os.path.exists(full):
            die("%s: no such file" % path)
        with open(full) as f:
            for n, row in enumerate(csv.DictReader(f), start=2):
                if None in row or any(row.get(k) in (None, "") for k in fields):
                    die("%s:%d: malformed row (expected the columns %s)"
                        % (path, n, ",".join(fields)))
                yield n, row
    out = []
    sources = os.path.join(folder, "sources.csv")
    for line, src in rows_of(sources, ["file", "kind", "system", "topology", "version",
                                       "source"]):
        if src["kind"] not in KINDS:
            die("%s:%d: unknown kind '%s' (expected %s)"
                % (sources, line, src["kind"], " or ".join(KINDS)))
        if not os.path.exists(os.path.join(ROOT, src["topology"])):
            die("%s:%d: no topology %s" % (sources, line, src["topology"]))
        nccl = src["kind"] == "nccl"
        path = os.path.join(folder, src["file"])
        fields = ["version", "num_gpus", "message_size", "latency"] + \
            (["op_name", "nccl_dtype"] if nccl else ["allreduce_dtype", "implementation"])
        for n, r in rows_of(path, fields):
            coll = r["op_name"] if nccl else "all_reduce"
            dtype = r["nccl_dtype"] if nccl else r["allreduce_dtype"]
            try:
                gpus, elems, ms = int(r["num_gpus"]), int(r["message_size"]), \
                    float(r["latency"])
            except ValueError:
                die("%s:%d: expected whole numbers of GPUs and elements and a latency in ms"
                    % (path, n))
            if coll not in COLLS or dtype not in ("half", "bfloat16") or gpus < 2 \
                    or elems <= 0 or ms <= 0 or r["version"] != src["version"]:
                die("%s:%d: collective '%s' (one of %s), dtype '%s' (half or bfloat16), "
                    "%d GPUs, %d elements, %g ms, version '%s' (sources.csv: '%s'): "
                    "expected 2 or more GPUs and positive sizes and latencies"
                    % (path, n, coll, ", ".join(COLLS), dtype, gpus, elems, ms,
                       r["version"], src["version"]))
            # 2-byte elements: message_size counts elements in both tables
            out.append(dict(file=src["file"], kind=src["kind"], system=src["system"],
                            topology=src["topology"], version=src["version"],
                            collective=coll, gpus=gpus, size=2 * elems, meas_us=1e3 * ms))
    if not out:
        die("no rows in " + sources)
    return out


def predict(build, rows):
    """ROWS (read_aic) with pred_us (the bench's out-of-place time), choice
    (the model's algorithm and protocol, or kernel) and error: one bench
    run per file, collective and rank count over all its sizes."""
    groups = {}
    for r in rows:
        groups.setdefault((r["kind"], r["topology"], r["collective"], r["gpus"]),
                          []).append(r)

    def one(key):
        kind, topo, coll, gpus = key
        sizes = sorted(r["size"] for r in groups[key])
        cmd = [os.path.join(ROOT, "scripts", "nvlrun"), str(gpus),
               os.path.join(build, "bench", coll + "_perf"), "--topo",
               os.path.join(ROOT, topo), "-b", str(sizes[0]), "-e", str(sizes[-1]),
               "-f", "2", "--mode", "timing"] + \
            (NCCL_ARGS + ["-t", str(gpus)] if kind == "nccl" else TRTLLM_ARGS)
        return cmd, run(cmd)
    out = []
    for key, (cmd, stdout) in zip(groups, parallel(one, list(groups))):
        out += compared(groups[key], cmd, stdout, 5, "meas_us", "pred_us")
    return out


def families(rows):
    """[(name, kind, rows, held_out)]: one held-out family per table kind,
    system and collective, in the order of the rows, without the rows
    is_fit takes; then one fit family per system of those."""
    fams, fit = {}, {}
    for r in rows:
        if is_fit(r):
            fit.setdefault(r["system"], []).append(r)
        else:
            fams.setdefault((r["kind"], r["system"], r["collective"]), []).append(r)
    out = []
    for (kind, system, coll), rs in fams.items():
        gpus = "/".join(str(g) for g in sorted({r["gpus"] for r in rs}))
        if kind == "nccl":
            name = "AI Configurator NCCL (held out): %s %s, %s GPUs" % (system, coll, gpus)
        else:
            name = "AI Configurator TensorRT-LLM all_reduce AUTO (held out): %s, %s GPUs" \
                % (system, gpus)
        out.append((name, kind, rs, True))
    for system, rs in fit.items():
        out.append(("AI Configurator NCCL (fit: [nccl] stream_gap): %s all_gather, "
                    "all_reduce, reduce_scatter, 2 GPUs, < 1 MB" % system, "nccl", rs, False))
    return out


def _geo_worst(rows):
    errs = [r["error"] for r in rows]
    return (pct(geomean(errs)), pct(max(errs))) if errs else ("-", "-")


def aic_tables(build, rows, folder=AIC):
    """(summary rows, document lines) of ROWS (read_aic of FOLDER)."""
    rows = predict(build, rows)
    summary, fam_rows = [], []
    for name, kind, rs, held_out in families(rows):
        where = regions([dict(r, ranks=r["gpus"], cls=r["collective"] if kind == "nccl"
                              else "allreduce-auto") for r in rs], cls_key="cls")
        summary.append(summary_row(name, [r["error"] for r in rs], folder,
                                   held_out=held_out, where=where))
        small = [r for r in rs if r["size"] < MB]
        large = [r for r in rs if r["size"] >= MB]
        fam_rows.append([name, len(rs)] + list(_geo_worst(rs)) + list(_geo_worst(small))
                        + list(_geo_worst(large)) + [rs[0]["file"]])
    doc = ["## AI Configurator's collective tables (held out)\n",
           "NVIDIA's AI Configurator performance databases (" + folder + "/README.md: "
           "source at its commit, the collectors' conditions). NCCL rows: nccl-tests, "
           "one process whose threads drive a GPU each (`-t N`), calls back to back, "
           "half, the out-of-place time; predicted by `<coll>_perf -t N " +
           " ".join(NCCL_ARGS) + " --mode timing` on the table's topology. "
           "TensorRT-LLM rows: its AllReduce with strategy AUTO, bf16, 5 calls per "
           "torch CUDA graph, time per call; predicted by `all_reduce_perf " +
           " ".join(TRTLLM_ARGS) + " --mode timing`. Time against time. One "
           "constant was fit on rows of the NCCL tables: `[nccl] stream_gap` of "
           "the H100 and H200 topologies, on their 2-GPU rows below 1 MB but "
           "alltoall's (role `fit` below, and the fit families); every other row "
           "is held out.\n",
           table(["family", "comparisons", "geomean error", "worst error",
                  "geomean < 1 MB", "worst < 1 MB", "geomean >= 1 MB", "worst >= 1 MB",
                  "file"], fam_rows),
           "### Rows\n",
           table(["system", "table", "collective", "GPUs", "size (B)", "measured (us)",
                  "predicted (us)", "error", "model's choice", "role"],
                 [[r["system"], r["kind"], r["collective"], r["gpus"], r["size"],
                   "%.2f" % r["meas_us"], "%.2f" % r["pred_us"], pct(r["error"]),
                   r["choice"], "fit" if is_fit(r) else "held out"] for r in rows])]
    return summary, doc
