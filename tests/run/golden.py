#!/usr/bin/env python3
"""Golden timing-mode runs: rerun `nvlemu run` cases and compare their JSON.

  golden.py check NAME  --nvlemu BIN --root DIR   rerun one case; exit 1 on any change
  golden.py update      --nvlemu BIN --root DIR   rewrite every tests/data/run/NAME.json
  golden.py placements NAME [--mode data] ...      run one case under every launch
                                                   layout of PLACEMENTS; exit 1
                                                   unless their JSON are equal

The cases live in tests/data/run/cases.txt (one source for both).  Every
number and string of the report must be equal, except the keys in VOLATILE:
they measure the host, not the model.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

# The host's wall time and memory: differ from run to run by nature.
# The validation families covering the run (docs/validation.md, "Provenance"):
# read from the generated tests/data/validation/families.json, not the model,
# so regenerating that file changes no golden; unit.validation and
# mpi.run.validation check them.
VOLATILE = {("emulation",), ("validation",)}


def read_cases(root):
    cases = {}
    path = os.path.join(root, "tests", "data", "run", "cases.txt")
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = shlex.split(line)
            if "--" not in words or len(words) < 3:
                sys.exit(f"{path}:{lineno}: expected NAME RANKS [VAR=VALUE ...] -- ARGS")
            cut = words.index("--")
            name, ranks, env = words[0], int(words[1]), words[2:cut]
            cases[name] = (ranks, dict(e.split("=", 1) for e in env), words[cut + 1:])
    return cases


# Three ways to lay the same job out: the wrapper's default (ranks bound to
# cores, shared-memory transport); unbound ranks whose every message goes
# through TCP sockets, as between hosts; and two MPMD application contexts
# (rank 0 apart from the others) mapped by slot.  Virtual time must not
# see any of it.
PLACEMENTS = {
    "default": lambda n, cmd: ["scripts/nvlrun", str(n)] + cmd,
    "tcp-unbound": lambda n, cmd: ["mpiexec", "--oversubscribe", "-n", str(n),
                                   "--bind-to", "none", "--mca", "btl", "self,tcp"] + cmd,
    "mpmd-by-slot": lambda n, cmd: ["mpiexec", "--oversubscribe", "--map-by", "slot",
                                    "-n", "1"] + cmd + [":", "-n", str(n - 1)] + cmd,
}


def run_case(root, nvlemu, case, placement="default", mode="timing"):
    ranks, env_add, args = case
    env = dict(os.environ)
    for var in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_MAX_NCHANNELS",
                "NCCL_MIN_NCHANNELS"):
        env.pop(var, None)
    env.update(env_add)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        cmd = PLACEMENTS[placement](ranks, [nvlemu, "run", "--mode", mode] + args +
                                    ["--json", out])
        if os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            sys.exit(f"golden: {' '.join(cmd)} exited {p.returncode}\n{p.stdout}{p.stderr}")
        with open(out) as f:
            return json.load(f)


def strip(d, path=()):
    if isinstance(d, dict):
        return {k: strip(v, path + (k,)) for k, v in d.items() if path + (k,) not in VOLATILE}
    if isinstance(d, list):
        return [strip(v, path) for v in d]
    return d


def diff(old, new, path="", out=None):
    """Every difference between two JSON values, as (path, old, new)."""
    out = [] if out is None else out
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            diff(old.get(k, "<absent>"), new.get(k, "<absent>"), f"{path}.{k}", out)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            diff(a, b, f"{path}[{i}]", out)
    elif type(old) is not type(new) or old != new:
        out.append((path or ".", old, new))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("action", choices=["check", "update", "list", "placements"])
    ap.add_argument("name", nargs="?")
    ap.add_argument("--mode", default="timing", choices=["timing", "data"])
    ap.add_argument("--nvlemu", default="build/nvlemu")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    nvlemu = os.path.abspath(os.path.join(root, a.nvlemu)) if not os.path.isabs(a.nvlemu) else a.nvlemu
    cases = read_cases(root)
    golden_dir = os.path.join(root, "tests", "data", "run")
    if a.action == "list":
        print("\n".join(cases))
        return 0
    if a.action == "update":
        for name, case in cases.items():
            got = strip(run_case(root, nvlemu, case))
            with open(os.path.join(golden_dir, name + ".json"), "w") as f:
                json.dump(got, f, indent=2, sort_keys=True)
                f.write("\n")
            print(f"golden: wrote tests/data/run/{name}.json")
        return 0
    if a.name not in cases:
        sys.exit(f"golden: no case '{a.name}' in tests/data/run/cases.txt")
    if a.action == "placements":
        return placements(root, nvlemu, a.name, cases[a.name], a.mode)
    path = os.path.join(golden_dir, a.name + ".json")
    with open(path) as f:
        want = json.load(f)
    got = strip(run_case(root, nvlemu, cases[a.name]))
    changes = diff(want, got)
    for p, old, new in changes:
        print(f"golden {a.name}: {p}: was {json.dumps(old)}, now {json.dumps(new)}")
    if changes:
        print(f"golden {a.name}: {len(changes)} value(s) changed; if the model change is "
              "intended, run scripts/update-golden-runs and review the diff")
        return 1
    print(f"golden {a.name}: all {count(want)} values equal")
    return 0


def placements(root, nvlemu, name, case, mode):
    """The case under every layout of PLACEMENTS: equal JSON but `emulation`."""
    runs = {p: strip(run_case(root, nvlemu, case, p, mode)) for p in PLACEMENTS}
    first = next(iter(PLACEMENTS))
    failed = False
    for p in PLACEMENTS:
        for path, old, new in diff(runs[first], runs[p]):
            failed = True
            print(f"placements {name} ({mode}): {path}: {first} {json.dumps(old)}, "
                  f"{p} {json.dumps(new)}")
    if failed:
        return 1
    print(f"placements {name} ({mode}): {', '.join(PLACEMENTS)} give the same "
          f"{count(runs[first])} values")
    return 0


def count(d):
    if isinstance(d, dict):
        return sum(count(v) for v in d.values())
    if isinstance(d, list):
        return sum(count(v) for v in d)
    return 1


if __name__ == "__main__":
    sys.exit(main())
