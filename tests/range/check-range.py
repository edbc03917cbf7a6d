#!/usr/bin/env python3
"""No answer past the clock's range: a property test over huge inputs.

For every `nvlemu cost` operation (each copy path too) on a ladder of sizes
from 1 to 10^18, for serve workloads whose arrivals run from seconds to
years, and for a collective too large for the clock, each command must
either answer with a time inside the clock's range that grows with the
size, or fail (non-zero exit) with one report naming the range.  What the
clock cannot hold (include/nvlemu/vclock.h): one operation at most 2^60 ps,
the clock at most 2^62 ps.

  check-range.py --build DIR
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from runs import at_once, run_many  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPO = os.path.join(ROOT, "topology", "gb200-nvl72.topo")
MAX_DURATION_PS = 1 << 60
SIZES = [10 ** e for e in range(0, 19, 3)]
failures = []


def run(cmd):
    return run_many([cmd])[0]


def judge(label, rc, out, err, time_ps, value=None):
    """Returns the time if the command answered in range, None if it
    refused with one report naming the clock's range (or the input value
    itself, past what the option takes); records a failure otherwise."""
    reports = [l for l in err.splitlines() if l.startswith("nvlemu")]
    if rc == 0:
        t = time_ps(out)
        if not (0 <= t < MAX_DURATION_PS):
            failures.append("%s: exit 0 with a time of %r ps, outside "
                            "[0, 2^60)" % (label, t))
        return t
    named = len(reports) == 1 and ("range" in reports[0] or (
        value is not None and value in reports[0]))
    if not named:
        failures.append("%s: exit %d without one report naming the "
                        "clock's range: %r" % (label, rc, err[-400:]))
    return None


def ladder(label, make_cmd, time_ps):
    """Sizes in increasing order: times never fall, and once the range is
    passed every larger size is refused too."""
    last, refused = -1, False
    for n, (rc, out, err) in zip(SIZES, run_many([make_cmd(n) for n in SIZES])):
        t = judge("%s %d" % (label, n), rc, out, err, time_ps, str(n))
        if t is None:
            refused = True
            continue
        if refused:
            failures.append("%s %d: answered after a smaller size was "
                            "refused" % (label, n))
        if t < last:
            failures.append("%s %d: time %d ps below the smaller size's %d"
                            % (label, n, t, last))
        last = t
    return refused


def cost_ps(out):
    return json.loads(out)["time_ps"]


def check_cost(nvlemu):
    base = [nvlemu, "cost", "--topo", TOPO, "--json", "-"]
    ops = {
        "gemm": lambda n: base + ["gemm", str(n), "8192", "8192"],
        "attention": lambda n: base + ["attention", "--batch", "8",
                                       "--q-len", "1", "--ctx", str(n),
                                       "--heads", "64", "--kv-heads", "8",
                                       "--head-dim", "128"],
        "elementwise": lambda n: base + ["elementwise", str(n)],
    }
    for path in ("hbm", "nvlink", "c2c-h2d", "c2c-d2h", "host"):
        ops["copy " + path] = (lambda p: lambda n: base + ["copy", str(n),
                                                         "--path", p])(path)
    at_once([(ladder, "cost " + name, make, cost_ps) for name, make in ops.items()])
    # the case the issue found: accepted and wrong before
    big = str(99999999999)
    rc, out, err = run(base + ["gemm", big, big, big])
    if judge("cost gemm 1e11^3", rc, out, err, cost_ps) is not None:
        failures.append("cost gemm 1e11^3: answered; its time cannot fit")


def check_serve(nvlemu):
    base = [nvlemu, "serve", "--model", "qwen2.5-0.5b", "--topo", TOPO,
            "--isl", "16", "--osl", "2", "--json", "-"]

    def makespan_ps(out):
        return round(json.loads(out)["makespan_s"] * 1e12)

    # 4 requests at ever lower rates: arrivals from seconds to ~10^9 s
    refused = False
    rates = ("1", "1e-3", "1e-5", "1e-7", "1e-9")
    arrivals = ("1e3", "1e6", "1.2e6", "1e7", "1e300")
    with tempfile.TemporaryDirectory() as tmp:
        traces = []
        for k, arrival in enumerate(arrivals):
            traces.append(os.path.join(tmp, "t%d.jsonl" % k))
            with open(traces[-1], "w") as f:
                f.write('{"arrival_s": 0, "input_tokens": 8, '
                        '"output_tokens": 2}\n')
                f.write('{"arrival_s": %s, "input_tokens": 8, '
                        '"output_tokens": 2}\n' % arrival)
        results = run_many([base + ["--requests", "4", "--rate", rate] for rate in rates]
                           + [base[:-4] + ["--workload", trace, "--json", "-"]
                              for trace in traces])
    for rate, (rc, out, err) in zip(rates, results):
        t = judge("serve --rate " + rate, rc, out, err, makespan_ps)
        refused = refused or t is None
    if not refused:
        failures.append("serve: arrivals past the range were all accepted")
    for arrival, (rc, out, err) in zip(arrivals, results[len(rates):]):
        t = judge("serve arrival_s " + arrival, rc, out, err, makespan_ps)
        if t is not None and t < float(arrival) * 1e12 * 0.999:
            failures.append("serve arrival_s %s: makespan %d ps ends "
                            "before the last arrival" % (arrival, t))


def check_bench(build):
    perf = os.path.join(build, "bench", "all_reduce_perf")
    mpiexec = ["mpiexec", "--oversubscribe", "-n", "2"]
    if os.getuid() == 0:
        mpiexec.append("--allow-run-as-root")
    rc, out, err = run(mpiexec + [perf, "--topo", TOPO, "-b", "4096T", "-e", "4096T",
                        "--mode", "timing", "--set", "nvlink.link_bw=100MB/s",
                        "--set", "nvlink.nvls=no"])
    if judge("all_reduce_perf 4096T", rc, out, err, lambda o: -1) is not None:
        failures.append("all_reduce_perf 4096T at 100MB/s: answered; its "
                        "time cannot fit")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    nvlemu = os.path.join(a.build, "nvlemu")
    at_once([(check_cost, nvlemu), (check_serve, nvlemu), (check_bench, a.build)])
    failures.sort()
    for f in failures:
        print("FAIL " + f)
    print("check-range: %d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
