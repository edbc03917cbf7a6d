"""The `nvlemu run` grid end to end: run (or reuse) every run, one flat
row per run with its inputs and every reported number, then the tables,
the summary and the plots."""
import json
import os
import sys

from .grid import (AXES, TABLE_LATER, build_grid, ranks_of, run_command,
                   run_id)
from .outputs import flatten, write_table
from .plots import plot_models
from .runs import Job, check_unique, prepare, run_jobs, run_weight
from .summary import write_summary


def unfit(res):
    """Whether nvlemu run's JSON is that of a run that does not fit."""
    return bool(res) and res.get("error") == "does not fit"


def label_of(row, varying):
    names = {"model": "", "topo": "", "batch": "batch ", "ctx": "ctx ",
             "prompt_len": "prompt ", "gen_len": "gen ", "dtype": "",
             "kv_dtype": "KV ", "launch": "", "attn": "", "what_if": "",
             "nccl_algo": "NCCL_ALGO=", "nccl_proto": "NCCL_PROTO=",
             "ep": "EP ", "attn_parallel": "attention ", "stack": "stack ",
             "kv_host": "KV host ", "weights_host": "weights host ",
             "rank_plays": "ranks play ", "overlap": "overlap ", "a2a": "a2a ",
             "allreduce": "allreduce ", "fuse_norm": "fused norm ", "pp": "PP "}
    parts = []
    for k in varying:
        if k == "tp":
            continue
        parts.append("%s%s" % (names.get(k, k + " "), row.get(k)))
    return ", ".join(parts) if parts else "all runs"


def unfit_error(res):
    """Why a run does not fit (nvlemu run refused it, exit 1, and wrote
    only its memory): each part's GB against the GPU's (and host's)."""
    m = res["memory_per_gpu"]
    err = ("weights %.1f GB + KV cache %.1f GB + activations %.1f GB "
           "+ reserve %.1f GB: %.1f GB of %.0f GB of HBM" % (
               m["weights_gb"], m["kv_cache_gb"], m["activations_gb"],
               m["reserve_gb"], m["hbm_need_gb"], m["hbm_gb"]))
    if m["kv_host_share"] or m["weights_host_share"]:
        err += ", and %.1f GB of %.0f GB of host memory" % (
            m["kv_host_gb"] + m["weights_host_gb"], m["host_gb"])
    return err


def keep_result(res, rc, job):
    """A run's JSON counts when it exited 0, or when it does not fit: only
    such a run writes JSON and fails."""
    return res if rc == 0 or unfit(res) else None


def jobs_of(a, runs, ids, rdir, nvlemu, mpirun):
    """The grid's jobs, made one at a time as the loop reaches them (a run
    saved under the legacy id of nvlemu 0.1 keeps that id)."""
    for r, rid in zip(runs, ids):
        jpath = os.path.join(rdir, rid + ".json")
        old = run_id(r, a.layers, a.mode, legacy=True, rope=a.rope_scaling)
        if not os.path.exists(jpath) and os.path.exists(os.path.join(rdir, old + ".json")):
            rid, jpath = old, os.path.join(rdir, old + ".json")  # saved before
        cmd, env = run_command(a, r, nvlemu, mpirun, jpath)
        label = " ".join("%s=%s" % (k, r[k]) for k in ("tp", "batch", "ctx", "dtype", "what_if")
                         if r.get(k) is not None)
        job = Job(rid, jpath, cmd, env, label, run_weight(ranks_of(r)))
        job.run = r
        yield job


def row_of(a, job, got, axes):
    """One run's row: its id, status and error, its axes, then nvlemu run's
    JSON flattened.  The host's wall time and whether this invocation
    reused the run stay out of the tables (runs/<id>.sweep.json, the
    summary line): regenerating a sweep from saved runs must rewrite them
    unchanged."""
    r = job.run
    row = {"run_id": job.rid, "status": got.status, "error": got.err}
    for k in axes:
        row[k] = r[k]
    row["set"] = r["set"]
    row["hostfile"] = a.hostfile or ""
    if got.res is not None:
        row.update(flatten(got.res))
        if unfit(got.res):
            row["status"] = "does not fit"
            row["error"] = unfit_error(got.res)
    return row


def sweep_models(a):
    runs = build_grid(a)
    out, rdir, nvlemu, mpirun = prepare(a)
    ids = [run_id(r, a.layers, a.mode, rope=a.rope_scaling) for r in runs]
    check_unique(ids)
    axes = [k for k in AXES if k not in TABLE_LATER
            or any(r[k] != TABLE_LATER[k] for r in runs)]
    rows, failed, reused = [], 0, 0
    jobs = jobs_of(a, runs, ids, rdir, nvlemu, mpirun)
    for job, got in run_jobs(a, rdir, jobs, sum(run_weight(ranks_of(r)) for r in runs),
                             len(runs), keep_result, nvlemu):
        failed += got.status != "ok"
        reused += not got.fresh
        rows.append(row_of(a, job, got, axes))
    if a.dry_run:
        return 0
    write_table(out, rows, ["run_id", "status", "error"] + axes + ["set"])
    varying = [k for k in AXES if len({json.dumps(r[k]) for r in runs}) > 1]
    for row in rows:
        row["series"] = label_of(row, varying)
    plots = []
    if a.plots:
        plots = plot_models(a, out, rows, varying)
    write_summary(a, out, rows, varying)
    n_unfit = sum(1 for r in rows if r["status"] == "does not fit")
    sys.stderr.write("sweep: %d run(s): %d new, %d reused, %d failed%s; wrote %s/results.csv, "
                     "results.json, summary.md%s\n" % (
                         len(rows), len(rows) - reused, reused, failed,
                         ", %d do not fit in HBM" % n_unfit if n_unfit else "", a.out,
                         ", %d plot(s)" % len(plots) if plots else ""))
    return 1 if failed else 0
