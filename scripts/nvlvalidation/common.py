"""What every part of scripts/validation-report shares: the repository's
root and data paths, running a tool, the error measures and the Markdown
table."""
import math
import os
import shlex
import shutil
import subprocess
import tempfile
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLL_SOURCE = "tests/data/calibration/h200-nvl2 (nccl-tests, 2 x H200 NV18)"
COMPUTE_SOURCE = "tests/data/calibration (H200 kernels)"
PUBLISHED_SOURCE = "tests/data/calibration/published.md"
E2E_TOPO = "topology/hgx-h200.topo"
C2C_COPIES = "tests/data/calibration/c2c-copies.csv"
H100 = "tests/data/calibration/h100-x2"
H100_OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall"]
SERVING = "tests/data/calibration/published-serving.csv"
GEMMS = "tests/data/calibration/published-gemm.csv"
# torch._scaled_mm's FP8 GEMMs on one H200, per-tensor and per-row scales
SCALED_MM = "tests/data/calibration/h200-fp8-scaled-mm/scaled-mm.csv"
SCALED_MM_DTYPE = {"tensor": "fp8", "row": "fp8-channel"}
SCALED_MM_TOPO = "topology/h200-nvl2.topo"
FAMILIES = os.path.join("tests", "data", "validation", "families.json")
PUBLISHED_NCCL = "tests/data/calibration/published-nccl"
NCCL_COLLS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"]
# joined, not written out: the file does not exist until it is measured
DEFAULT_STEPS = os.path.join("tests", "data", "calibration", "h200-torch", "steps.csv")
# a held-out GPU: the same torch reference measured on one H100, predicted on
# topology/h100-nvl2.topo (H100's memory and spec, every fitted constant H200's)
H100_STEPS = os.path.join("tests", "data", "calibration", "h100-torch", "steps.csv")
H100_TOPO = "topology/h100-nvl2.topo"
# ... and at TP 2 over the pair's NV18 (torchrun, NCCL all_reduce in the graph)
H100_TP2_STEPS = os.path.join("tests", "data", "calibration", "h100-torch-tp2", "steps.csv")


def die(msg):
    sys.exit("validation-report: " + msg)


# the tools' own provenance read an empty family list, so that the report
# never depends on the file it is about to write
EMPTY_FAMILIES = {"NVLEMU_VALIDATION": os.path.join(ROOT, "tests", "data", "validation",
                                                    "empty.json")}


# The report's runs are independent small jobs, most of their time spent
# starting MPI rather than computing: up to JOBS of them run at once
# (NVL_JOBS, default twice the cores), and a command the report asks for
# twice runs once.
JOBS = int(os.environ.get("NVL_JOBS") or 0) or 2 * (os.cpu_count() or 1)
_SLOTS = threading.BoundedSemaphore(JOBS)
_RUNS = {}
_RUNS_LOCK = threading.Lock()


def run(cmd, env=None):
    """CMD's standard output, run from ROOT with ENV (default: this
    process's environment and EMPTY_FAMILIES); dies naming the command when
    it fails.  Safe from several threads; identical commands share one run."""
    env = env if env is not None else dict(os.environ, **EMPTY_FAMILIES)
    key = (tuple(cmd), tuple(sorted(env.items())))
    with _RUNS_LOCK:
        fut, mine = _RUNS.get(key), False
        if fut is None:
            fut = _RUNS[key] = Future()
            mine = True
    if mine:
        try:
            with _SLOTS:
                p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
        except BaseException as e:  # a missing program: every waiter raises it
            fut.set_exception(e)
            raise
        fut.set_result(p.stdout if p.returncode == 0 else None)
        if p.returncode != 0:
            die("'%s' exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    out = fut.result()
    if out is None:
        die("'%s' failed (above)" % " ".join(cmd))
    return out


def run_all(cmds, env=None):
    """run() of each command of CMDS at once (up to JOBS together): their
    outputs in CMDS's order."""
    return parallel(lambda c: run(c, env), cmds)


def run_json_points(cmds, env=None):
    """What each `LAUNCHER N NVLEMU run|serve ... --json -` command of CMDS
    prints (its JSON), in CMDS's order.  The commands that share a launcher,
    rank count and subcommand run as the lines of `nvlemu run|serve
    --points` files, one MPI job for up to a JOBS-th of them, so that each
    job's start-up (most of a small run's cost) is paid once per file
    instead of once per row; each point writes its JSON to a file of its
    own.  Same numbers as the separate runs (tests/mpi/cases.txt:
    mpi.run.points_equal_runs, mpi.serve.points_equal_runs)."""
    groups = {}
    for i, cmd in enumerate(cmds):
        j = cmd.index("--json")
        if cmd[3] not in ("run", "serve") or cmd[j + 1] != "-":
            die("run_json_points: not an 'nvlemu run|serve ... --json -' "
                "command: %s" % " ".join(cmd))
        groups.setdefault(tuple(cmd[:4]), []).append(i)
    tmp = tempfile.mkdtemp(prefix="nvl-points-")
    outs = [None] * len(cmds)
    try:
        jobs = []
        for prefix, members in groups.items():
            n_files = min(len(members), JOBS)
            for f in range(n_files):
                part = members[f::n_files]
                path = os.path.join(tmp, "points-%d.txt" % len(jobs))
                with open(path, "w") as fp:
                    for i in part:
                        opts = list(cmds[i][4:])
                        opts[opts.index("--json") + 1] = os.path.join(tmp, "%d.json" % i)
                        fp.write(" ".join(shlex.quote(o) for o in opts) + "\n")
                jobs.append(list(prefix) + ["--points", path])
        parallel(lambda c: run(c, env), jobs)
        for i in range(len(cmds)):
            with open(os.path.join(tmp, "%d.json" % i)) as f:
                outs[i] = f.read()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return outs


def parallel(fn, items):
    """[fn(item) for item in items], the calls made from threads of their
    own (fn's runs share the JOBS slots); the first error is raised here."""
    items = list(items)
    if len(items) < 2:
        return [fn(i) for i in items]
    ex = ThreadPoolExecutor(max_workers=len(items))
    try:
        return list(ex.map(fn, items))
    finally:
        ex.shutdown(wait=False, cancel_futures=True)


def parallel_dict(jobs):
    """{name: fn()} for the {name: fn} of JOBS, the calls made at once."""
    names = list(jobs)
    return dict(zip(names, parallel(lambda n: jobs[n](), names)))


def check_row(path, line, row, choices, ints, number):
    """Dies naming PATH:LINE where ROW (a csv.DictReader row) holds, under
    a key of CHOICES ({key: allowed values}), a value not among them, under
    a key of INTS anything but a positive integer, or under NUMBER anything
    but a positive number."""
    for key, ok in choices.items():
        if row.get(key) not in ok:
            die("%s:%d: %s %r (expected one of %s)" % (path, line, key, row.get(key),
                                                      ", ".join(ok)))
    for key in tuple(ints) + (number,):
        try:
            v = float(row[key]) if key == number else int(row[key])
        except (TypeError, ValueError):
            v = 0
        if not v > 0:
            die("%s:%d: %s %r (expected a positive %s)" % (
                path, line, key, row.get(key), "number" if key == number else "integer"))


def error(pred, meas):
    return max(pred / meas, meas / pred) - 1.0


def geomean(errors):
    return math.expm1(sum(math.log1p(e) for e in errors) / len(errors))


def pct(x):
    return "%.1f%%" % (100 * x)


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def e2e_table(rows):
    """One phase's end-to-end rows: measured against predicted step times."""
    return table(["model", "layers", "batch", "ctx", "q_len", "measured (us)",
                  "predicted (us)", "error"],
                 [[r["model"], r["layers"], r["batch"], r["ctx"], r["q_len"],
                   r["measured_us"], "%.1f" % r["pred_us"], pct(r["error"])] for r in rows])


def topo_name(path):
    """A topology's name as nvlemu knows it: its file's base name."""
    return os.path.basename(path).rsplit(".topo", 1)[0]

