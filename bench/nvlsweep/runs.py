"""Runs and resume: the progress line, and the loop every grid goes
through.  Each run writes DIR/runs/<id>.json; a run whose JSON exists and
parses is not run again (unless --rerun), so an interrupted sweep resumes
where it stopped."""
import json
import os
import sys
import time

from . import points
from .launch import (dry_run_note, find_binary, find_mpirun, launch, launcher_env,
                     rel_to_repo, sh_quote, error_text)


def fmt_hms(s):
    s = int(round(s))
    if s >= 3600:
        return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60)
    return "%02d:%02d" % (s // 60, s % 60)


class Progress:
    """`[=====>    ] 3/6 runs, 00:42 elapsed, ~00:40 left (label)` on stderr.
    The estimate weighs each run by its rank count plus a fixed start-up."""

    def __init__(self, total_weight, total):
        self.total_w, self.total, self.done, self.done_w = total_weight, total, 0, 0.0
        self.fresh_w, self.fresh_s = 0.0, 0.0
        self.t0 = time.time()
        self.tty = sys.stderr.isatty()

    def show(self, label, final=False):
        elapsed = time.time() - self.t0
        left_w = self.total_w - self.done_w
        if left_w <= 0:
            left = "~00:00 left"
        elif self.fresh_w > 0:
            left = "~%s left" % fmt_hms(self.fresh_s / self.fresh_w * left_w)
        else:
            left = "~?? left"
        width = 24
        fill = int(width * self.done / self.total) if self.total else width
        bar = "=" * fill + (">" if fill < width else "") + " " * (width - fill - 1)
        line = "[%s] %d/%d runs, %s elapsed, %s%s" % (
            bar[:width], self.done, self.total, fmt_hms(elapsed),
            left if not final else "done", " (%s)" % label if label else "")
        if self.tty:
            sys.stderr.write("\r\033[K" + line + ("\n" if final else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def step(self, weight, seconds, fresh):
        self.done += 1
        self.done_w += weight
        if fresh:
            self.fresh_w += weight
            self.fresh_s += seconds


def run_weight(np):
    return np + 1.0


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def prepare(a):
    """(out folder, runs folder, nvlemu, mpirun) of a grid of nvlemu jobs;
    --hostfile made relative to the repository; outside a dry run, nvlemu
    must exist and the runs folder is created."""
    out = os.path.abspath(a.out)
    rdir = os.path.join(out, "runs")
    nvlemu = find_binary(a.nvlemu, "nvlemu")
    mpirun = find_mpirun(a.mpirun)
    if a.hostfile:
        a.hostfile = rel_to_repo(a.hostfile)
    if not a.dry_run:
        if not os.access(nvlemu, os.X_OK):
            raise SystemExit("sweep: %s not found: build first (scripts/build) "
                             "or give --nvlemu" % nvlemu)
        os.makedirs(rdir, exist_ok=True)
    return out, rdir, nvlemu, mpirun


def check_unique(ids):
    if len(set(ids)) != len(ids):
        raise SystemExit("sweep: the grid repeats a run (a list holds a value twice)")


class Job:
    """One run of the grid: its id, its JSON's path, the command and the
    variables it sets, a label for the progress line and its weight."""

    def __init__(self, rid, jpath, cmd, env, label, weight):
        self.rid, self.jpath, self.cmd, self.env = rid, jpath, cmd, env
        self.label, self.weight = label, weight


class Outcome:
    """What running (or reusing) a job gave: its JSON (None when it
    failed), status "ok" or "failed", the error, whether it ran now."""

    def __init__(self, res, status, err, fresh):
        self.res, self.status, self.err, self.fresh = res, status, err, fresh


def judged(job, judge, rc, outtext):
    """The Outcome of a job that ran: judge(res, rc, job) keeps or drops
    the JSON it wrote (None: the run failed, why taken from outtext)."""
    res = judge(load_json(job.jpath), rc, job)
    if res is not None:
        return Outcome(res, "ok", "", True)
    err = error_text(outtext) or "exit code %d" % rc
    if rc == 0:
        err = "no JSON written"
    return Outcome(None, "failed", err, True)


def run_one(a, job, rdir, env0, judge):
    """Runs a job whose results are missing, alone (judged)."""
    if os.path.exists(job.jpath):
        os.remove(job.jpath)
    outtext, rc = launch(a, job.cmd, dict(env0, **job.env), job.env, rdir, job.rid,
                         time.time())
    return judged(job, judge, rc, outtext)


def run_jobs(a, rdir, jobs, total_weight, total, judge, nvlemu=None):
    """Runs the jobs (an iterable of Job), reusing each whose JSON exists
    and parses; yields (job, Outcome) for each in the jobs' order, or
    prints the commands under --dry-run and yields nothing.  With nvlemu
    (`nvlemu run` and `nvlemu serve` grids), the pending jobs that share a
    launcher run as one points job per group (points.py), otherwise one
    job each.  The
    progress line goes to stderr, a step per run; the caller shows the
    final one."""
    prog = Progress(total_weight, total)
    env0 = launcher_env()
    if a.dry_run:
        dry_run_note()
    else:
        prog.show("starting")
    jobs, got = list(jobs), {}
    pending = [j for j in jobs if a.rerun or a.dry_run or load_json(j.jpath) is None]
    pending_ids = {j.rid for j in pending}

    def done(job, outcome, seconds):
        got[job.rid] = outcome
        prog.step(job.weight, seconds, outcome.fresh)
        prog.show(job.label + (" FAILED" if outcome.status != "ok" else ""))

    for job in jobs:
        if job.rid not in pending_ids:
            done(job, Outcome(load_json(job.jpath), "ok", "", False), 0.0)
    groups = points.group_jobs(pending, nvlemu) if nvlemu else [[j] for j in pending]
    ctx = (rdir, env0, lambda job, rc, text: judged(job, judge, rc, text), prog, nvlemu)
    for group in groups:
        if a.dry_run:
            points.print_group(group, nvlemu, rdir)
            continue
        for job in points.run_group(a, group, ctx, done):
            prog.show("running " + job.label)
            t0 = time.time()
            done(job, run_one(a, job, rdir, env0, judge), time.time() - t0)
    if a.dry_run:
        return
    for job in jobs:
        yield job, got[job.rid]
    prog.show("", final=True)
