"""check_regenerate.py NVLEMU: every sweep saved under docs/what-if/ is
regenerated from its saved runs (the command its summary.md records, into
a scratch copy) and must come out unchanged: results.csv, results.json,
front.csv, collectives.csv/.json, summary.md (but for the --out of the
command line it shows) and the plots' .gp, data and SVG files.  No run is
launched: every one is found again under its id, so this also holds the
run ids stable.  Exits 77 (skipped) without gnuplot, whose plots the
summaries link."""
import filecmp
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPARED = ("results.csv", "results.json", "front.csv", "collectives.csv",
            "collectives.json", "summary.md")


def saved_command(summary):
    for line in open(summary):
        if line.startswith("    bench/sweep "):
            return shlex.split(line.strip())[1:]
    return None


def differences(saved, new, out_arg):
    """The files of saved that new does not reproduce."""
    bad = []
    for name in COMPARED:
        a, b = os.path.join(saved, name), os.path.join(new, name)
        if not os.path.exists(a):
            continue
        ta = open(a).read()
        tb = open(b).read() if os.path.exists(b) else ""
        if name in ("summary.md", "collectives.json"):
            tb = tb.replace("--out " + shlex.quote(new), "--out " + out_arg)
        if ta != tb:
            bad.append(name)
    for root, _, files in os.walk(os.path.join(saved, "plots")):
        for f in files:
            a = os.path.join(root, f)
            b = os.path.join(new, os.path.relpath(a, saved))
            if not f.endswith(".png") and not (os.path.exists(b) and
                                               filecmp.cmp(a, b, shallow=False)):
                bad.append(os.path.relpath(a, saved))
    return bad


def main():
    if not shutil.which("gnuplot"):
        print("check_regenerate: gnuplot not found; skipped")
        return 77
    nvlemu = os.path.abspath(sys.argv[1])
    base = os.path.join(REPO, "docs", "what-if")
    failed, n = 0, 0
    tmp = tempfile.mkdtemp()
    try:
        for name in sorted(os.listdir(base)):
            saved = os.path.join(base, name)
            summary = os.path.join(saved, "summary.md")
            args = saved_command(summary) if os.path.exists(summary) else None
            if args is None:
                continue
            new = os.path.join(tmp, name)
            shutil.copytree(saved, new)
            i = args.index("--out")
            out_arg, args[i + 1] = args[i + 1], new
            # as `nvlemu sweep` runs it: the command line it records leaves
            # the leading --nvlemu out
            env = dict(os.environ, NVL_SWEEP_TYPED="bench/sweep")
            p = subprocess.run([os.path.join(REPO, "bench", "sweep"), "--nvlemu", nvlemu] +
                               args, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
            last = (p.stderr.strip().splitlines() or [""])[-1]
            launched = re.search(r" (\d+) new,", last)
            bad = differences(saved, new, out_arg)
            if p.returncode != 0 or (launched and launched.group(1) != "0") or bad:
                failed += 1
                print("check_regenerate: %s: exit %d, %s; differs: %s" % (
                    name, p.returncode, last, ", ".join(bad) or "nothing"))
            n += 1
    finally:
        shutil.rmtree(tmp)
    print("check_regenerate: %d of %d saved sweeps regenerated unchanged" % (n - failed, n))
    return 1 if failed or not n else 0


if __name__ == "__main__":
    sys.exit(main())
