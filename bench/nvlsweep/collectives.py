"""The collectives grid: all_reduce_perf (or another *_perf bench) with
NCCL_ALGO and NCCL_PROTO forced to each value, busbw vs size, with the
measured curve of the topology where tests/data/calibration has one."""
import csv
import hashlib
import itertools
import json
import os
import subprocess
import sys
import time

from .launch import (REPO, command_line, dry_run_note, error_text, find_binary,
                     find_mpirun, launcher_env, mpi_prefix, rel_to_repo, resolve_topo,
                     sh_quote)
from . import families
from .options import ALGOS, PROTOS
from .outputs import num
from .plots import plot_busbw
from .runs import Progress, run_weight


def parse_perf(text):
    """nccl-tests rows: size count type redop root time algbw busbw #wrong ..."""
    pts = []
    for line in text.splitlines():
        f = line.split()
        if not f or line.lstrip().startswith("#") or len(f) < 8:
            continue
        try:
            pts.append((int(f[0]), float(f[5]), float(f[6]), float(f[7])))
        except ValueError:
            continue
    return pts


def bench_binary(a):
    bench = find_binary(None, os.path.join("bench", a.bench))
    if a.nvlemu:
        bench = os.path.join(os.path.dirname(os.path.abspath(a.nvlemu)), "bench", a.bench)
    return bench


def run_bench(a, cmd, env, env0, log):
    """(output, exit code) of one bench run, from its saved log unless
    missing or --rerun; (output, exit code, whether it ran now)."""
    if os.path.exists(log) and not a.rerun:
        text = open(log).read()
        return text, 0 if not text.startswith("FAILED") else 1, False
    p = subprocess.run(cmd, cwd=REPO, env=dict(env0, **env), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True,
                       timeout=a.timeout)
    rc, text = p.returncode, p.stdout
    with open(log, "w") as f:
        f.write(("FAILED\n" if rc else "") + text)
    return text, rc, True


def run_curves(a, topo, bench, ranks, rdir):
    """Runs (or reuses) every ranks x algorithm x protocol; (rows, curves,
    skipped), or None under --dry-run (the commands printed)."""
    mpirun = find_mpirun(a.mpirun)
    if a.hostfile:
        a.hostfile = rel_to_repo(a.hostfile)
    combos = [(n, al, pr) for n in ranks for al in a.algos for pr in a.protos]
    if not a.dry_run:
        if not os.access(bench, os.X_OK):
            raise SystemExit("sweep: %s not found: build first (scripts/build)" % bench)
        os.makedirs(rdir, exist_ok=True)
    prog = Progress(sum(run_weight(n) for n, _, _ in combos), len(combos))
    env0 = launcher_env()
    rows, curves, skipped = [], [], []
    extra = list(itertools.chain.from_iterable(("--set", s) for s in a.set))
    if not a.dry_run:
        prog.show("starting")
    else:
        dry_run_note()
    for n, al, pr in combos:
        cmd = mpi_prefix(mpirun, n, a.hostfile) + [
            bench, "--topo", topo, "-b", "8", "-e", a.max_bytes, "-f", "2",
            "--mode", "timing"] + extra
        env = {"NCCL_ALGO": al, "NCCL_PROTO": pr}
        if a.dry_run:
            print("NCCL_ALGO=%s NCCL_PROTO=%s %s" % (al, pr, sh_quote(cmd)))
            continue
        # the hash names the inputs, not where this checkout lives
        rid = "%s-n%d-%s-%s-%s" % (a.bench, n, al, pr, hashlib.sha1(json.dumps(
            [topo, [os.path.basename(bench)] + cmd[cmd.index(bench) + 1:]]).encode()
        ).hexdigest()[:8])
        t0 = time.time()
        if not (os.path.exists(os.path.join(rdir, rid + ".txt")) and not a.rerun):
            prog.show("running %d ranks %s/%s" % (n, al, pr))
        text, rc, fresh = run_bench(a, cmd, env, env0, os.path.join(rdir, rid + ".txt"))
        prog.step(run_weight(n), time.time() - t0, fresh)
        pts = parse_perf(text) if rc == 0 else []
        if not pts:
            skipped.append((n, al, pr, error_text(text)))
            prog.show("%d ranks %s/%s: not supported, skipped" % (n, al, pr))
            continue
        lab = "%s/%s" % (al, pr) + (" %d ranks" % n if len(ranks) > 1 else "")
        fn = "data/%s_n%d_%s_%s.dat" % (a.bench, n, al, pr)
        curves.append((fn, lab, pts))
        rows += [{"bench": a.bench, "topo": a.topo[0], "ranks": n, "nccl_algo": al,
                  "nccl_proto": pr, "set": ";".join(a.set), "size_bytes": size,
                  "time_us": t, "algbw_gbps": algbw, "busbw_gbps": busbw,
                  "source": "nvlemu"} for size, t, algbw, busbw in pts]
        prog.show("%d ranks %s/%s" % (n, al, pr))
    if a.dry_run:
        return None
    prog.show("", final=True)
    return rows, curves, skipped


def measured_curve(a, tname, rows):
    """The measured busbw of the topology (tests/data/calibration), added
    to rows; (its file, its points), none under --set."""
    measured = []
    calib = os.path.join(REPO, "tests", "data", "calibration", tname,
                         a.bench.replace("_perf", "") + ".txt")
    if os.path.exists(calib) and not a.set:
        measured = parse_perf(open(calib).read())
        for size, t, algbw, busbw in measured:
            rows.append({"bench": a.bench, "topo": a.topo[0], "ranks": 2 if tname == "h200-nvl2"
                         else "", "nccl_algo": "measured", "nccl_proto": "", "set": "",
                         "size_bytes": size, "time_us": t, "algbw_gbps": algbw,
                         "busbw_gbps": busbw, "source": rel_to_repo(calib)})
    return calib, measured


def write_results(out, rows, skipped):
    os.makedirs(out, exist_ok=True)
    cols = ["bench", "topo", "ranks", "nccl_algo", "nccl_proto", "set", "size_bytes",
            "time_us", "algbw_gbps", "busbw_gbps", "source"]
    with open(os.path.join(out, "collectives.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out, "collectives.json"), "w") as f:
        json.dump({"command": command_line(), "rows": rows,
                   "skipped": [{"ranks": n, "nccl_algo": al, "nccl_proto": pr, "why": why}
                               for n, al, pr, why in skipped]}, f, indent=1)


def peak_table(a, tname, ranks, curves, calib, measured, skipped):
    L = ["# %s busbw on %s" % (a.bench, tname), "", "Command (from the repository root):",
         "", "    " + command_line(), "",
         "Peak bus bandwidth (GB/s) of each algorithm/protocol, and at 1 MB and at the "
         "largest size (emulated time, out-of-place):", "",
         "| ranks | algorithm/protocol | busbw at 1 MB | busbw at largest | peak busbw |",
         "|---|---|---|---|---|"]
    for fn, lab, pts in curves:
        at = {s: b for s, _, _, b in pts}
        L.append("| %s | %s | %s | %s | %.1f |" % (
            lab.split()[-2] if len(ranks) > 1 else ranks[0], lab.split()[0],
            num(at.get(1 << 20), "%.1f"), num(pts[-1][3], "%.1f"), max(p[3] for p in pts)))
    if measured:
        at = {s: b for s, _, _, b in measured}
        L.append("| 2 | measured (%s) | %s | %s | %.1f |" % (
            rel_to_repo(calib), num(at.get(1 << 20), "%.1f"), num(measured[-1][3], "%.1f"),
            max(p[3] for p in measured)))
    L.append("")
    if skipped:
        L += ["Not run (the emulator, like NCCL, refuses these here): " + ", ".join(
            "%s/%s at %d ranks" % (al, pr, n) for n, al, pr, _ in skipped) + ".", ""]
    return L


def sweep_collectives(a):
    out = os.path.abspath(a.out)
    if len(a.topo) != 1:
        raise SystemExit("sweep --collectives: one --topo at a time")
    nvlemu = find_binary(a.nvlemu, "nvlemu")
    for option, order in (("algos", ALGOS), ("protos", PROTOS)):
        if getattr(a, option) is None:
            setattr(a, option, families.members(nvlemu, option, order))
        families.check(nvlemu, option, getattr(a, option))
    protos = families.members(nvlemu, "protos", PROTOS)
    topo = resolve_topo(a.topo[0])
    tname = os.path.basename(topo)[:-5] if topo.endswith(".topo") else topo
    ranks = a.ranks or [a.tp[0]]
    got = run_curves(a, topo, bench_binary(a), ranks, os.path.join(out, "runs"))
    if got is None:
        return 0
    rows, curves, skipped = got
    calib, measured = measured_curve(a, tname, rows)
    write_results(out, rows, skipped)
    L = peak_table(a, tname, ranks, curves, calib, measured, skipped)
    if a.plots and curves and plot_busbw(a, out, tname, ranks, curves, calib, measured,
                                         protos):
        L += ["![busbw vs size](plots/busbw.png)", ""]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(L))
    sys.stderr.write("sweep: %d curve(s), %d combination(s) skipped; wrote %s/collectives.csv, "
                     "collectives.json, summary.md\n" % (len(curves), len(skipped), a.out))
    return 0 if curves else 1
