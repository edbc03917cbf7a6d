#!/usr/bin/env python3
"""One quantity grammar in every command: each option or argument that
takes a size or a time reads every spelling of docs/units.md alike.

Sizes: a bare number of bytes, nccl-tests' K, M, G, T (powers of 1024,
either case), KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB.
Times: ps, ns, us, ms, s, or a bare number in the option's unit.

The test first lists, from each program's --help, the options whose value
is a SIZE or a TIME, and fails if one of them is not exercised below (a new
quantity option must join this test).

  check-quantities.py --build DIR
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from runs import at_once, run_many  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPO = os.path.join(ROOT, "topology", "gb200-nvl72.topo")
SWEEP = os.path.join(ROOT, "bench", "sweep")
failures = []
covered = set()

# the same size, spelled every way the grammar allows
SIZE_EQUAL = [
    (["1024", "1K", "1k", "1KiB", "1024B"], 1024),
    (["1048576", "1M", "1m", "1MiB"], 1 << 20),
    (["1073741824", "1G", "1g", "1GiB"], 1 << 30),
    (["1000000000", "1GB", "1000MB", "1e9", "1e9B"], 10 ** 9),
    (["1536", "1.5K", "1.5KiB"], 1536),
]
SIZE_BAD = ["1Z", "1.5B", "-1K", "K", "1 KBs"]
TIME_EQUAL = [
    (["500", "500ms", "0.5s", "500000us", "5e8ns", "5e11ps"], 500.0),
    (["20", "20ms", "0.02s", "20000us"], 20.0),
]
TIME_BAD = ["5 minutes", "1h", "-3ms", "ms"]


def options_taking_quantities(result):
    """The options of a --help's RESULT whose value is a SIZE or a TIME."""
    rc, out, err = result
    found = set()
    for line in (out + err).splitlines():
        m = re.match(r"\s+(?:-\w/)?(--[\w-]+)\s+(SIZE|TIME|BYTES|MS)\b", line)
        if m:
            found.add(m.group(1))
    return found


def refused_once(label, rc, err):
    reports = [l for l in err.splitlines()
               if l.startswith("nvlemu") or l.startswith("coll_speed")
               or "sweep" in l or "error:" in l]
    if rc == 0 or len(reports) < 1:
        failures.append("%s: accepted, or refused without a report: %r"
                        % (label, err[-300:]))


def check_perf(build):
    perf = os.path.join(build, "bench", "all_reduce_perf")
    base = [perf, "--topo", TOPO, "--mode", "timing", "-n", "1", "-w", "0"]

    def sizes(result):
        rc, out, err = result
        if rc != 0:
            return None, err
        return [int(l.split()[0]) for l in out.splitlines()
                if l.strip() and l.strip()[0].isdigit()], err

    equal = [(s, want) for spellings, want in SIZE_EQUAL for s in spellings]
    bad = [(opt, s) for i, opt in enumerate(("-b", "-e", "-i", "--data-max"))
           for s in (SIZE_BAD[i], SIZE_BAD[-1])]
    # --data-max: sizes at or below it run in data mode (checked), above in
    # timing mode; 4K and 4096 draw the same line
    data_max = ("4K", "4096", "4KiB")
    results = iter(run_many(
        [base + ["-b", s, "-e", s] for s, _ in equal]
        + [base + ["-b", "1K", "-e", "4KiB", "-f", "1", "-i", "1k"]]
        + [base + [opt, s] for opt, s in bad]
        + [[perf, "--topo", TOPO, "-b", "4K", "-e", "8K", "-f", "2", "-n", "1", "-w", "0",
            "--data-max", s] for s in data_max]))
    for s, want in equal:
        got, err = sizes(next(results))
        if got != [want]:
            failures.append("all_reduce_perf -b/-e %s: sizes %r, want "
                            "[%d] (%s)" % (s, got, want, err[-200:]))
    got, err = sizes(next(results))
    if got != [1024, 2048, 3072, 4096]:
        failures.append("all_reduce_perf -i 1k: sizes %r" % (got,))
    for opt, s in bad:
        rc, out, err = next(results)
        refused_once("all_reduce_perf %s %s" % (opt, s), rc, err)
    for s in data_max:
        rc, out, err = next(results)
        rows = [l.split() for l in out.splitlines()
                if l.strip() and l.strip()[0].isdigit()]
        wrong = [r[8] if len(r) > 8 else "?" for r in rows]
        if rc != 0 or len(rows) != 2 or wrong[0] != "0" or wrong[1] != "N/A":
            failures.append("all_reduce_perf --data-max %s: rows %r" % (s, rows))
    covered.update({"--minbytes", "--maxbytes", "--stepbytes", "--data-max"})


def check_coll_speed(build):
    cs = os.path.join(build, "bench", "coll_speed")
    spellings = ("1K", "1024", "1KiB", "1k")
    results = run_many([[cs, "--topo", TOPO, "--iters", "1", "--reps", "1",
                         "--min-bytes", s, "--max-bytes", s] for s in spellings]
                       + [[cs, "--topo", TOPO, "--min-bytes", "1Z"]])
    for s, (rc, out, err) in zip(spellings, results):
        rows = [l.split()[0] for l in out.splitlines()
                if l.strip() and l.strip()[0].isdigit()]
        if rc != 0 or rows != ["1024"]:
            failures.append("coll_speed --min/--max-bytes %s: %r %s"
                            % (s, rows, err[-200:]))
    rc, out, err = results[-1]
    refused_once("coll_speed --min-bytes 1Z", rc, err)
    covered.update({"--min-bytes", "--max-bytes"})


def check_cost(nvlemu, op):
    extra = ["--path", "hbm"] if op == "copy" else []
    groups = [(spellings, want, run_many([[nvlemu, "cost", "--topo", TOPO, "--json", "-",
                                           op, s] + extra for s in spellings]))
              for spellings, want in SIZE_EQUAL]
    bad = run_many([[nvlemu, "cost", "--topo", TOPO, op, s] for s in SIZE_BAD])
    for spellings, want, results in groups:
        times = set()
        for s, (rc, out, err) in zip(spellings, results):
            if rc != 0:
                failures.append("cost %s %s: %s" % (op, s, err[-200:]))
                continue
            d = json.loads(out)
            if d["inputs"]["size_bytes"] != want:
                failures.append("cost %s %s: size %r, want %d"
                                % (op, s, d["inputs"]["size_bytes"], want))
            times.add(d["time_ps"])
        if len(times) > 1:
            failures.append("cost %s %r: times differ %r" % (op, spellings, times))
    for s, (rc, out, err) in zip(SIZE_BAD, bad):
        refused_once("cost %s %s" % (op, s), rc, err)


def serve_slo(nvlemu, opt, text):
    return [nvlemu, "serve", "--model", "qwen2.5-0.5b", "--topo", TOPO, "--requests", "1",
            "--isl", "8", "--osl", "2", opt, text, "--json", "-"]


def slo_ms(opt, result):
    rc, out, err = result
    if rc != 0:
        return None, err
    return json.loads(out)["slo"][opt[6:] + "_ms"], err


def check_serve_and_sweep(nvlemu):
    # bench/sweep's time grammar lives in its package (bench/nvlsweep)
    sys.path.insert(0, os.path.dirname(SWEEP))
    from nvlsweep import options as sweep
    # every spelling through --slo-ttft; --slo-tpot shares the row kind, so
    # two of them there
    good = [(opt, s, want) for opt in ("--slo-ttft", "--slo-tpot")
            for spellings, want in TIME_EQUAL
            for s in (spellings if opt == "--slo-ttft" else spellings[:3:2])]
    bad = [(opt, s) for opt in ("--slo-ttft", "--slo-tpot")
           for s in (TIME_BAD if opt == "--slo-ttft" else TIME_BAD[:1])]
    results = iter(run_many([serve_slo(nvlemu, opt, s) for opt, s, _ in good]
                            + [c for opt, s in bad
                               for c in (serve_slo(nvlemu, opt, s),
                                         [sys.executable, SWEEP, "--serve", opt, s,
                                          "--out", "/nonexistent/never-written"])]))
    for opt, s, want in good:
        got, err = slo_ms(opt, next(results))
        if got != want:
            failures.append("serve %s %s: %r ms, want %r (%s)"
                            % (opt, s, got, want, err[-200:]))
        if abs(sweep.time_ms(s) - want) > 1e-9 * want:
            failures.append("bench/sweep %s %s: %r ms, nvlemu serve "
                            "%r" % (opt, s, sweep.time_ms(s), want))
    for opt, s in bad:
        got, err = slo_ms(opt, next(results))
        if got is not None:
            failures.append("serve %s %s: accepted as %r" % (opt, s, got))
        rc, out, err = next(results)
        refused_once("bench/sweep %s %s" % (opt, s), rc, err)
    covered.update({"--slo-ttft", "--slo-tpot"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    nvlemu = os.path.join(a.build, "nvlemu")
    wanted = set()
    for found in run_many([[nvlemu, cmd, "--help"] for cmd in ("run", "serve", "generate",
                                                               "cost", "topo", "coll-table")]
                          + [[os.path.join(a.build, "bench", b), "--help"]
                             for b in ("all_reduce_perf", "coll_speed")]
                          + [[sys.executable, SWEEP, "--help"]]):
        wanted |= options_taking_quantities(found)
    at_once([(check_perf, a.build), (check_coll_speed, a.build), (check_cost, nvlemu, "copy"),
             (check_cost, nvlemu, "elementwise"), (check_serve_and_sweep, nvlemu)])
    failures.sort()
    for opt in sorted(wanted - covered):
        failures.append("%s takes a quantity but this test does not "
                        "exercise it" % opt)
    for f in failures:
        print("FAIL " + f)
    print("check-quantities: %d option(s) with quantities, %d failure(s)"
          % (len(wanted), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
