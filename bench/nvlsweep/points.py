"""Pending `nvlemu run` or `nvlemu serve` jobs that share a launcher (the
same scripts/nvlrun N or mpirun -n N, hostfile and environment variables)
run as ONE `nvlemu run --points FILE` (or `serve --points FILE`) job, so
that the MPI start-up of N ranks is
paid once per group instead of once per run.  The job prints a
`# point FILE:LINE` line before each point, on standard error with the
point's errors (Open MPI forwards a rank's standard output apart, so a
report's lines may arrive after the next point's header): that is where
the progress line moves on and where each run's runs/<id>.log starts.  The job stops
at the first failing point; the group's points after it run again as a
new points job.  Each run still gets runs/<id>.json (its own --json),
runs/<id>.sweep.json (the command that reruns it alone) and runs/<id>.log
(its part of the job's output).  A group of one run is launched as that
run's own command."""
import json
import os
import queue
import re
import subprocess
import threading
import time

from .launch import REPO, sh_quote

HEADER = re.compile(r"^# point (.*):(\d+): ")


def split_job(job, nvlemu):
    """(launcher and `nvlemu run`, the run's own options) of a job's command."""
    head = job.cmd.index(nvlemu) + 2
    return job.cmd[:head], job.cmd[head:]


def group_jobs(jobs, nvlemu):
    """The jobs in groups that share a launcher and environment, each in
    grid order, the groups in the order of their first job."""
    groups = {}
    for job in jobs:
        head, _ = split_job(job, nvlemu)
        groups.setdefault((tuple(head), tuple(sorted(job.env.items()))), []).append(job)
    return list(groups.values())


def points_command(group, nvlemu, rdir):
    """(points file path, its text, the job's command) of a group."""
    path = os.path.join(rdir, group[0].rid + ".points")
    text = "".join(sh_quote(split_job(j, nvlemu)[1]) + "\n" for j in group)
    return path, text, split_job(group[0], nvlemu)[0] + ["--points", path]


def print_group(group, nvlemu, rdir):
    """--dry-run: a group's command (one line), its points file's lines
    above it as comments."""
    env = " ".join("%s=%s" % kv for kv in group[0].env.items())
    if len(group) == 1:
        print(env + (" " if env else "") + sh_quote(group[0].cmd))
        return
    path, text, cmd = points_command(group, nvlemu, rdir)
    print("# %s, %d points:" % (path, len(group)))
    for line in text.splitlines():
        print("#   " + line)
    print(env + (" " if env else "") + sh_quote(cmd))


def stream(cmd, env, timeout, on_line):
    """Runs cmd from the repository root, calling on_line(line) for each
    line of its output as it comes; (output, exit code), -1 and a note at
    the end of the output when it ran past timeout seconds."""
    p = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True,
                         errors="replace")
    lines = queue.Queue()

    def pump():
        for line in p.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    out, deadline = [], time.time() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.time()))
        except queue.Empty:
            p.kill()
            p.wait()
            note = "\nsweep: stopped after %g s (--timeout)" % timeout
            on_line(note)
            return "".join(out) + note, -1
        if line is None:
            return "".join(out), p.wait()
        out.append(line)
        on_line(line)


class PointsJob:
    """One points job as its output comes: cut at its `# point FILE:LINE`
    lines, each point's part of the output and host wall time; a point
    ends when the next starts (it succeeded) or when the job ends (with
    the job's exit code); finish(k, rc, wall, text) then runs."""

    def __init__(self, path, group, prog, finish):
        self.path, self.group, self.prog, self.finish = path, group, prog, finish
        self.seen, self.text, self.t = [], "", time.time()

    def end_point(self, rc):
        now = time.time()
        self.finish(self.seen[-1] if self.seen else 0, rc, now - self.t, self.text)
        self.text, self.t = "", now

    def on_line(self, line):
        m = HEADER.match(line)
        if m and m.group(1) == self.path and 1 <= int(m.group(2)) <= len(self.group):
            if self.seen:
                self.end_point(0)
            self.seen.append(int(m.group(2)) - 1)
            self.prog.show("running " + self.group[self.seen[-1]].label)
        self.text += line


def write_point_files(rdir, job, cmd, line, rc, wall, text):
    """runs/<id>.sweep.json (the command that runs the point alone; the
    points job it ran in, its line of the points file, removed after the
    job) and runs/<id>.log (its part of the job's output)."""
    with open(os.path.join(rdir, job.rid + ".sweep.json"), "w") as f:
        json.dump({"command": job.cmd, "env": job.env, "cwd": REPO, "exit_code": rc,
                   "sweep_wall_s": round(wall, 3), "points_job": cmd,
                   "points_line": line}, f, indent=1)
    with open(os.path.join(rdir, job.rid + ".log"), "w") as f:
        f.write("$ " + " ".join("%s=%s" % kv for kv in job.env.items()) +
                (" " if job.env else "") + sh_quote(job.cmd) + "\n# ran as a point of: " +
                sh_quote(cmd) + "\n" + text)


def run_points_job(a, group, ctx, done):
    """Runs a group of two or more pending jobs as one points job,
    done(job, judged(job, rc, output), seconds) as each point that ran
    ends (ok or failed); the jobs that did not run (after a failing
    point).  ctx: (runs folder, environment, judged, Progress, nvlemu)."""
    rdir, env0, judged, prog, nvlemu = ctx
    path, text, cmd = points_command(group, nvlemu, rdir)
    with open(path, "w") as f:
        f.write(text)
    for job in group:
        if os.path.exists(job.jpath):
            os.remove(job.jpath)

    def finish(k, rc, wall, text):
        job = group[k]
        write_point_files(rdir, job, cmd, k + 1, rc, wall, text)
        why = "\n".join(l for l in text.splitlines() if "this point failed (above)" not in l)
        done(job, judged(job, rc, why), wall)

    pj = PointsJob(path, group, prog, finish)
    try:
        _, rc = stream(cmd, dict(env0, **group[0].env), a.timeout * len(group), pj.on_line)
    finally:
        os.remove(path)
    pj.end_point(rc)  # the last point seen, or the first when none was
    ran = set(pj.seen or [0])
    return [j for i, j in enumerate(group) if i not in ran]


def run_group(a, group, ctx, done):
    """Runs a group's pending jobs, a points job at a time while two or
    more are left; done(job, Outcome, seconds) as each ends.  Returns the
    job left (none, or one: the caller runs it alone)."""
    while len(group) > 1:
        group = run_points_job(a, group, ctx, done)
    return group
