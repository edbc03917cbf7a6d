"""The `nvlemu serve` grid end to end: run (or reuse) every run, keep
each run's requests' times, judge each run against the SLO from them (so
another SLO reuses the same runs), the Pareto front of the feasible runs,
then the tables, front.csv, the summary and the plot."""
import csv
import gzip
import json
import os
import shutil
import sys

from .outputs import csv_value, flatten, fmt_load, write_table
from .plots import plot_serve
from .runs import Job, check_unique, prepare, run_jobs, run_weight
from .serve_grid import (SERVE_AXES, build_serve_grid, layout_label, serve_command,
                         serve_run_id)
from .serve_report import SERVE_PARTS, write_serve_summary


def slo_attainment(a, rdir, rid):
    """The share of a run's requests meeting both SLO bounds, from its
    per-request CSV (runs/<id>.requests.csv.gz); None without it."""
    path = os.path.join(rdir, rid + ".requests.csv.gz")
    try:
        with gzip.open(path, "rt", newline="") as f:
            reqs = list(csv.DictReader(f))
    except (OSError, EOFError, csv.Error):
        return None
    if not reqs:
        return None
    good = sum(1 for q in reqs
               if (not a.slo_ttft or float(q["ttft_ms"]) <= a.slo_ttft)
               and (not a.slo_tpot or float(q["tpot_ms"]) <= a.slo_tpot))
    return good / float(len(reqs))


def serve_flat(res):
    """nvlemu serve's JSON as one flat row: nested keys joined with '.',
    each pool under pool.<name>; step_ms.<part>: the mean step of one
    replica over every step of the run (all pools), in ms, and
    pool.<name>.ms_per_step.<part> the same for one pool."""
    res = dict(res)
    pools = res.pop("pools", []) or []
    row = flatten(res)
    for p in pools:
        row.update(flatten(p, "pool.%s." % p.get("name", "?")))
    # a pool's step_time_ms_by_part is one replica's time over its steps
    # (the mean over the pool's ranks) while its steps are summed over its
    # replicas: x replicas / steps is the mean step of one replica
    steps = sum(p.get("steps") or 0 for p in pools)
    for part in SERVE_PARTS:
        for p in pools:
            n = p.get("steps") or 0
            row["pool.%s.ms_per_step.%s" % (p.get("name", "?"), part)] = (
                replica_ms(p, part) / n if n else None)
        row["step_ms." + part] = (sum(replica_ms(p, part) for p in pools) / steps
                                  if steps else None)
    return row


def replica_ms(pool, part):
    """The time of all a pool's replicas in PART (ms): one replica's
    (step_time_ms_by_part, the mean over the pool's ranks) x replicas."""
    return ((pool.get("step_time_ms_by_part") or {}).get(part, 0) *
            (pool.get("replicas") or 1))


def pareto(points):
    """Indices of the points no other point dominates (x and y both at
    least as large, one larger); points: [(x, y)]."""
    front = []
    for i, (x, y) in enumerate(points):
        if not any((x2 >= x and y2 >= y) and (x2 > x or y2 > y)
                   for j, (x2, y2) in enumerate(points) if j != i):
            front.append(i)
    return sorted(front, key=lambda i: points[i][0])


def keep_requests(res, rc, job):
    """A run's JSON counts when it exited 0; its per-request CSV is kept
    compressed either way (a what-if folder keeps every request's times)."""
    rcsv = job.jpath[:-len(".json")] + ".requests.csv"
    if os.path.exists(rcsv):
        with open(rcsv, "rb") as fi, gzip.GzipFile(rcsv + ".gz", "wb", mtime=0) as fo:
            shutil.copyfileobj(fi, fo)
        os.remove(rcsv)
    return res if rc == 0 else None


def user_speeds(a):
    speeds = []
    for s in a.at_user_speed:
        try:
            speeds.append(float(s))
        except ValueError:
            raise SystemExit("sweep: --at-user-speed %r: expected numbers" % s)
    return speeds


def jobs_of(a, runs, ids, rdir, nvlemu, mpirun):
    for r, rid in zip(runs, ids):
        jpath = os.path.join(rdir, rid + ".json")
        cmd, system = serve_command(a, r, nvlemu, mpirun, jpath)
        label = "%s %s=%s" % (r["layout"], "concurrency" if a.concurrency else "rate",
                              fmt_load(r["load"]))
        job = Job(rid, jpath, cmd, {}, label, run_weight(r["ranks"]))
        job.run, job.system = r, system
        yield job


def row_of(a, rdir, job, got):
    """One run's row: its layout, axes and load, then nvlemu serve's JSON
    flattened and the share of its requests meeting the SLO."""
    r = job.run
    row = {"run_id": job.rid, "status": got.status, "error": got.err, "layout": r["layout"],
           "layout_label": layout_label(r), "kind": r["spec"]["kind"],
           "gpus_emulated": r["ranks"], "system_gpus": r["system_gpus"],
           "copies": r["copies"], "slo_met": None}
    for k in SERVE_AXES:
        if k not in row:
            row[k] = r[k]
    if "scheduler" in r:
        row["scheduler"] = r["scheduler"]
    row["load_kind"] = "concurrency" if a.concurrency else "rate"
    row["load_per"] = a.load_per
    row["system_load"] = job.system
    row["set"] = r["set"]
    row["hostfile"] = a.hostfile or ""
    if got.res is not None:
        row.update(serve_flat(got.res))
        att = slo_attainment(a, rdir, job.rid)
        if att is None:
            row["status"], row["error"] = "failed", "no per-request CSV"
        row["slo_met"] = att
    return row


def judge_front(a, rows):
    """Marks each row feasible (it meets the SLO) or not, and on the
    Pareto front of the feasible ones or not; returns the front."""
    for row in rows:
        row["feasible"] = row["status"] == "ok" and (
            row["slo_met"] + 1e-12 >= a.slo_attainment)
        row["front"] = False
    feas = [row for row in rows if row["feasible"]]
    pts = [(row["tok_per_s_per_user"], row["output_tok_per_s_per_gpu"]) for row in feas]
    front = [feas[i] for i in pareto(pts)]
    for row in front:
        row["front"] = True
    return front


def write_front(out, front):
    with open(os.path.join(out, "front.csv"), "w", newline="") as f:
        w = csv.writer(f)
        cols = ["layout", "layout_label", "ep", "max_batch", "dtype", "load",
                "tok_per_s_per_user", "output_tok_per_s_per_gpu", "ttft_ms.p90",
                "tpot_ms.p90", "slo_met", "run_id"]
        w.writerow(cols)
        for row in front:
            w.writerow([csv_value(row.get(c)) for c in cols])


def sweep_serve(a):
    runs, skipped = build_serve_grid(a)
    if not runs:
        raise SystemExit("sweep: no run left: " + "; ".join(skipped))
    speeds = user_speeds(a)
    out, rdir, nvlemu, mpirun = prepare(a)
    ids = [serve_run_id(a, r) for r in runs]
    check_unique(ids)
    rows, failed, reused = [], 0, 0
    jobs = jobs_of(a, runs, ids, rdir, nvlemu, mpirun)
    for job, got in run_jobs(a, rdir, jobs, sum(run_weight(r["ranks"]) for r in runs),
                             len(runs), keep_requests, nvlemu):
        reused += not got.fresh
        rows.append(row_of(a, rdir, job, got))
        failed += rows[-1]["status"] != "ok"
    if a.dry_run:
        return 0
    front = judge_front(a, rows)
    first = ["run_id", "status", "error", "layout", "layout_label", "kind", "gpus_emulated",
             "system_gpus", "copies"] + SERVE_AXES + ["load_kind", "load_per", "system_load",
                                                      "feasible", "front", "set", "hostfile"]
    write_table(out, rows, first)
    write_front(out, front)
    varying = [k for k in SERVE_AXES + ["scheduler"] if k != "load"
               and len({json.dumps(r.get(k, "vllm" if k == "scheduler" else None))
                        for r in runs}) > 1]
    for row in rows:
        row["series"] = serve_series(row, varying)
    plots = plot_serve(a, out, rows, front, speeds) if a.plots else []
    write_serve_summary(a, out, rows, front, speeds, varying, skipped, plots)
    nf = sum(1 for r in rows if r["status"] == "ok" and not r["feasible"])
    sys.stderr.write("sweep: %d run(s): %d new, %d reused, %d failed, %d miss the SLO; "
                     "%d on the front; wrote %s/results.csv, results.json, front.csv, "
                     "summary.md%s\n" % (len(rows), len(rows) - reused, reused, failed, nf,
                                         len(front), a.out,
                                         ", %d plot(s)" % len(plots) if plots else ""))
    return 1 if failed else 0


def serve_series(row, varying):
    """A run's layout and its other varying axes (not the load): one series."""
    parts = [row["layout_label"]]
    for k, fmt in (("ep", "EP %s"), ("max_batch", "max batch %s"), ("max_tokens",
                   "%s tokens/step"), ("dtype", "%s"), ("kv_dtype", "KV %s"),
                   ("stack", "stack %s"), ("allreduce", "allreduce %s"),
                   ("scheduler", "%s scheduler"), ("model", "%s"), ("topo", "%s")):
        if k in varying or (k == "ep" and row["ep"] != 1):
            parts.append(fmt % row.get(k, "vllm"))
    return ", ".join(parts)
