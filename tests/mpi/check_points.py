"""`nvlemu run|serve --points FILE` (cli.h, nvl_cli_command_run): each
line's run inside one MPI job gives the JSON the same command gives run on
its own (every number but the emulator's own wall time and memory), comment
and blank lines are skipped with their numbers kept, and a bad line or a
failing point stops the job non-zero naming FILE:LINE.  Run by check_run.py
(`points` for run, `serve-points` for serve)."""
import json
import os
import shlex
import subprocess
import sys
import tempfile

# run's points: two phases, another stack, quoting, a what-if; a point
# that runs (OK), one that fails (FAILS); the keys that are the emulator's
# own wall time and memory (VOLATILE)
RUN = dict(LINES=["--batch 2 --ctx 64",
                  "# a comment line",
                  "",
                  "--batch 3 --prompt-len 16 --gen-len 3 --stack torch",
                  "--batch 1 --ctx 128 --set 'nvlink.nvls=no'"],
           OK="--ctx 64", FAILS="--batch 0 --ctx 64", VOLATILE=("emulation",))

# serve's: the layout, the scheduler, the arrivals, prefix caching and a
# what-if change from point to point, so that a scheduler's, a workload's,
# a KV pool's or the metrics' state left by one point would show in the next
SERVE = dict(LINES=["--tp 3 --requests 6 --isl 16 --osl 4",
                    "# a comment line",
                    "",
                    "--tp 1 --requests 8 --concurrency 2 --isl 32 --osl 8 "
                    "--scheduler trtllm",
                    "--tp 3 --requests 7 --rate 200 --isl 24 --osl 6 "
                    "--prefix-groups 2 --prefix-len 8 --set 'nvlink.nvls=no'",
                    "--tp 3 --requests 6 --isl 16 --osl 4"],
             OK="--tp 3 --requests 2 --isl 8 --osl 2",
             FAILS="--tp 2 --requests 2", VOLATILE=("wall_s",))


def without(doc, keys):
    return {k: v for k, v in doc.items() if k not in keys}


def job(cmd, extra):
    p = subprocess.run(cmd + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    sys.stdout.write(p.stdout)
    return p.returncode, p.stdout


def expect_failure(cmd, d, name, lines, want):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    rc, out = job(cmd, ["--points", path])
    if rc == 0 or want % {"file": path} not in out:
        sys.exit("check_points.py: %s: expected a non-zero exit and '%s'; got %d"
                 % (name, want % {"file": path}, rc))


def check_points(cmd, run, case):
    """CASE: RUN or SERVE above; RUN(cmd, extra) the JSON of cmd + extra
    run on its own."""
    LINES, ok, volatile = case["LINES"], case["OK"], case["VOLATILE"]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "points.txt")
        runs = [n for n, l in enumerate(LINES) if l.strip() and not l.startswith("#")]
        outs = {n: os.path.join(d, "%d.json" % n) for n in runs}
        with open(path, "w") as f:
            for n, line in enumerate(LINES):
                f.write(line + (" --json " + shlex.quote(outs[n]) if n in outs else "") + "\n")
        rc, text = job(cmd, ["--points", path])
        if rc != 0:
            sys.exit("check_points.py: the points job exited %d" % rc)
        for n in runs:
            line = LINES[n]
            if "# point %s:%d: " % (path, n + 1) not in text:
                sys.exit("check_points.py: no header for %s:%d" % (path, n + 1))
            with open(outs[n]) as f:
                got = json.load(f)
            alone = run(cmd, shlex.split(line))
            if without(got, volatile) != without(alone, volatile):
                sys.exit("check_points.py: %s:%d (%s) differs from its own run"
                         % (path, n + 1, line))
        expect_failure(cmd, d, "quote.txt", [ok, ok + " '2"],
                       "--points %(file)s:2: cannot split the line into words")
        expect_failure(cmd, d, "fails.txt", [ok, case["FAILS"]],
                       "--points %(file)s:2: this point failed")
        expect_failure(cmd, d, "nested.txt", [ok + " --points x"],
                       "a point's line may not name --points")
        rc, out = job(cmd, ["--points", os.path.join(d, "no-such-file")])
        if rc == 0 or "--points %s: cannot open" % os.path.join(d, "no-such-file") not in out:
            sys.exit("check_points.py: an absent points file: expected a report")
    print("check_points.py: %d points equal their own runs; bad lines reported"
          % len(runs))
