"""Independent commands run at once, for the property tests that start many
small jobs (tests/units/check-quantities.py, tests/range/check-range.py):
most of each job's time is MPI's start-up, not computing, so up to JOBS of
them (NVL_JOBS, default twice the cores) run together."""
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

JOBS = int(os.environ.get("NVL_JOBS") or 0) or 2 * (os.cpu_count() or 1)
POOL = ThreadPoolExecutor(max_workers=JOBS)


def run_now(cmd):
    """(exit code, stdout, stderr) of CMD; 300 s is a hang guard."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def run_many(cmds):
    """run_now() of each command of CMDS, up to JOBS at once: the results in
    CMDS's order."""
    return [f.result() for f in [POOL.submit(run_now, c) for c in cmds]]


def at_once(calls):
    """Calls each (function, args...) of CALLS in a thread of its own and
    waits for all; the first error is raised here, so that a check that
    breaks fails the test."""
    with ThreadPoolExecutor(max_workers=max(1, len(calls))) as ex:
        for f in [ex.submit(*c) for c in calls]:
            f.result()
