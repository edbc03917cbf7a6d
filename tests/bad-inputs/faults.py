#!/usr/bin/env python3
"""Faults: a job must end, everywhere, soon after one of its ranks dies or
its launcher is stopped.

  faults.py kill-rank --build DIR    SIGKILL one rank of a running 3-rank job
  faults.py term-mpirun --build DIR  SIGTERM mpiexec of a running 3-rank job

The job is a timing-mode `nvlemu run` that would take well over a minute.
Once every rank is running (and a second more), the fault is injected; the
test passes when mpiexec has exited and no process of the job is left
within 10 seconds of the fault, and prints the measured time."""
import argparse
import os
import signal
import subprocess
import sys
import time

LIMIT_S = 10.0


def session_pids(sid):
    """Processes of session sid (the job: mpiexec, its daemon, the ranks)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.getsid(int(d)) == sid:
                with open("/proc/%s/stat" % d) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    pids.append(int(d))
        except (ProcessLookupError, PermissionError, FileNotFoundError, OSError):
            pass
    return pids


def ranks_of(sid, nvlemu):
    out = []
    for pid in session_pids(sid):
        try:
            exe = os.readlink("/proc/%d/exe" % pid)
        except OSError:
            continue
        if os.path.realpath(exe) == os.path.realpath(nvlemu):
            out.append(pid)
    return sorted(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fault", choices=["kill-rank", "term-mpirun"])
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    nvlemu = os.path.join(os.path.abspath(a.build), "nvlemu")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cmd = ["mpiexec", "-n", "3", "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += [nvlemu, "run", "--topo", os.path.join(root, "topology", "gb200-nvl72.topo"),
            "--model", "qwen2.5-72b", "--mode", "timing", "--batch", "8",
            "--prompt-len", "64", "--gen-len", "32000"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    sid = p.pid
    try:
        t0 = time.time()
        while len(ranks_of(sid, nvlemu)) < 3:
            if p.poll() is not None or time.time() - t0 > 30:
                print(p.stdout.read().decode(errors="replace"))
                sys.exit("faults: the job did not start its 3 ranks")
            time.sleep(0.05)
        time.sleep(1.0)  # into the run
        if p.poll() is not None:
            sys.exit("faults: the job ended before the fault (make it longer)")
        victim = ranks_of(sid, nvlemu)[1] if a.fault == "kill-rank" else p.pid
        t_fault = time.time()
        os.kill(victim, signal.SIGKILL if a.fault == "kill-rank" else signal.SIGTERM)
        while time.time() - t_fault < LIMIT_S + 5:
            if p.poll() is not None and not session_pids(sid):
                break
            time.sleep(0.02)
        dt = time.time() - t_fault
        rc = p.poll()
        left = session_pids(sid)
        out = p.stdout.read().decode(errors="replace") if rc is not None else ""
        print(out.rstrip()[-2000:])
        print("faults %s: mpiexec exited %s, %d process(es) left, %.2f s after the fault"
              % (a.fault, rc, len(left), dt))
        if rc is None or left or dt > LIMIT_S:
            sys.exit("faults %s: the job did not end within %g s" % (a.fault, LIMIT_S))
        if rc == 0:
            sys.exit("faults %s: mpiexec exited 0 after a fault" % a.fault)
    finally:
        for pid in session_pids(sid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
