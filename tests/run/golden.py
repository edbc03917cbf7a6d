#!/usr/bin/env python3
"""Golden timing-mode runs: rerun `nvlemu run` cases and compare their JSON.

  golden.py check NAME  --nvlemu BIN --root DIR   rerun one case; exit 1 on any change
  golden.py update      --nvlemu BIN --root DIR   rewrite every tests/data/run/NAME.json

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
VOLATILE = {("emulation",)}


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


def run_case(root, nvlemu, case):
    ranks, env_add, args = case
    env = dict(os.environ)
    for var in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_MAX_NCHANNELS",
                "NCCL_MIN_NCHANNELS"):
        env.pop(var, None)
    env.update(env_add)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        cmd = [os.path.join(root, "scripts", "nvlrun"), str(ranks), nvlemu, "run",
               "--mode", "timing"] + args + ["--json", out]
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
    ap.add_argument("action", choices=["check", "update", "list"])
    ap.add_argument("name", nargs="?")
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


def count(d):
    if isinstance(d, dict):
        return sum(count(v) for v in d.values())
    if isinstance(d, list):
        return sum(count(v) for v in d)
    return 1


if __name__ == "__main__":
    sys.exit(main())
