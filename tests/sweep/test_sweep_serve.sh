#!/bin/sh
# Usage: test_sweep_serve.sh NVLEMU: a tiny bench/sweep --serve (qwen2-tiny
# on hgx-h200 as a 2-GPU system: aggregated TP 1 x 2 replicas and a
# disaggregated 1:1 layout, at two Poisson rates) into a temporary folder;
# checks the tables, front.csv, summary.md and the plots exist, that each
# layout's loads ran as one `serve --points` job whose point gives the JSON
# of its command run alone, that the
# Pareto front is the non-dominated set of the runs meeting the SLO (and
# dominates every other feasible run), that a second sweep reuses every
# run, that another SLO reuses them too and changes which runs are
# feasible, the commands of a dry run (--loads and --pp included), and a bad
# --disagg refused.
# Exits 77 (skipped) without python3.
set -eu
command -v python3 >/dev/null 2>&1 || { echo "test_sweep_serve: python3 not found; skipped"; exit 77; }
nvlemu=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
sweep="$repo/bench/sweep"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_sweep_serve: FAIL: $*"; exit 1; }

args="--serve --model tests/data/hf/qwen2-tiny --topo hgx-h200 --system-gpus 2 --tp 1 \
      --disagg 1:1 --rate 100,2000 --requests x1 --isl 64 --osl 16 --nvlemu $nvlemu"
# 1. the sweep: 2 layouts x 2 loads, an SLO every run meets
(cd "$repo" && "$sweep" $args --slo-ttft 1000 --slo-tpot 100 --at-user-speed 10,1000000 \
    --out "$tmp/s") 2>"$tmp/err1" || { cat "$tmp/err1"; fail "first sweep failed"; }
grep -q '4/4 runs' "$tmp/err1" || fail "no progress line '4/4 runs' on stderr"
python3 "$here/check_serve.py" "$tmp/s" 4 all || fail "results of the first sweep"
grep -q '| 1e+06 | none feasible |' "$tmp/s/summary.md" || fail "an unreachable per-user speed not marked"
# 2. again: every run reused
(cd "$repo" && "$sweep" $args --slo-ttft 1000 --slo-tpot 100 --out "$tmp/s") 2>"$tmp/err2" \
    || { cat "$tmp/err2"; fail "second sweep failed"; }
grep -q '0 new, 4 reused' "$tmp/err2" || { cat "$tmp/err2"; fail "the second sweep ran again"; }
# 3. an SLO no run meets: the same runs, none feasible, an empty front
(cd "$repo" && "$sweep" $args --slo-tpot 0.000001 --out "$tmp/s") 2>"$tmp/err3" \
    || { cat "$tmp/err3"; fail "sweep under another SLO failed"; }
grep -q '0 new, 4 reused, 0 failed, 4 miss the SLO; 0 on the front' "$tmp/err3" \
    || { cat "$tmp/err3"; fail "another SLO: expected the runs reused, all infeasible"; }
python3 "$here/check_serve.py" "$tmp/s" 4 none || fail "results under an SLO no run meets"
# 3b. the runs of step 1 ran as one `serve --points` job per launcher, each run's
# JSON that of its command run alone (every number but the wall time)
grep -q '"points_line": 2' "$tmp"/s/runs/serve-tp1-*-r2000-*.sweep.json \
    || fail "the TP 1 layout's second load did not run as a point"
python3 - "$tmp" "$repo" <<'PY' || fail "a point's JSON differs from its run alone"
import glob, json, subprocess, sys
tmp, repo = sys.argv[1:3]
run = json.load(open(glob.glob(tmp + "/s/runs/serve-tp1x1-tp1x1-*-r2000-*.sweep.json")[0]))
cmd = run["command"]
mine = cmd[cmd.index("--json") + 1]
cmd[cmd.index("--json") + 1] = tmp + "/alone.json"
cmd[cmd.index("--csv") + 1] = tmp + "/alone.csv"
subprocess.run(cmd, cwd=repo, check=True, stdout=subprocess.DEVNULL)
a, b = json.load(open(mine)), json.load(open(tmp + "/alone.json"))
a.pop("wall_s"), b.pop("wall_s")
sys.exit(a != b)
PY
# 4. the dry run's commands: one points job per launcher, its points file's
# lines above it (replicas for the aggregated layout, the pools)
(cd "$repo" && "$sweep" $args --dry-run --out "$tmp/d") >"$tmp/dry" || fail "dry run"
[ ! -e "$tmp/d" ] || fail "dry run wrote $tmp/d"
grep -q '^#   .*--tp 1 --replicas 2 --rate 100 --requests 100 ' "$tmp/dry" \
    && grep -q '^scripts/nvlrun 1 .* serve --points .*/serve-tp1-[^ ]*\.points$' "$tmp/dry" \
    || { cat "$tmp/dry"; fail "aggregated command"; }
grep -q '^#   .*--prefill-gpus 1 --decode-gpus 1 --prefill-tp 1 --decode-tp 1 --rate 2000 ' "$tmp/dry" \
    && grep -q '^scripts/nvlrun 2 .* serve --points .*/serve-tp1x1-tp1x1-[^ ]*\.points$' "$tmp/dry" \
    || { cat "$tmp/dry"; fail "disaggregated command"; }
# 4b. --loads: a layout's own load points, the others keep the list
(cd "$repo" && "$sweep" $args --loads tp1=50 --dry-run --out "$tmp/d") >"$tmp/dry2" || fail "dry run --loads"
[ "$(grep -c -- '--tp 1 --replicas 2 --rate 50 ' "$tmp/dry2")" -eq 1 ] \
    && [ "$(grep -c -- '--rate' "$tmp/dry2")" -eq 3 ] || { cat "$tmp/dry2"; fail "--loads tp1=50"; }
# 4c. --pp: a pipeline's layout (TP 1 x PP 2 on 2 ranks) beside TP 1, whose
# run id stays the one without --pp
(cd "$repo" && "$sweep" $args --pp 1,2 --dry-run --out "$tmp/d") >"$tmp/dry3" || fail "dry run --pp"
grep -q '^#   .*--tp 1 --pp 2 --rate 100 .*serve-tp1pp2-' "$tmp/dry3" \
    || { cat "$tmp/dry3"; fail "--pp 2 command"; }
grep -- '--tp 1 --replicas 2 --rate 100 ' "$tmp/dry" | sed 's/.*--json //' >"$tmp/id1"
grep -- '--tp 1 --replicas 2 --rate 100 ' "$tmp/dry3" | sed 's/.*--json //' >"$tmp/id3"
cmp -s "$tmp/id1" "$tmp/id3" || fail "--pp 1,2 changed the TP 1 run's id"
# 5. a bad layout is refused before anything runs
(cd "$repo" && "$sweep" --serve --disagg 8x:8 --rate 1 --dry-run --out "$tmp/b") \
    >"$tmp/bad" 2>&1 && fail "--disagg 8x:8 accepted"
grep -q 'expected P:D' "$tmp/bad" || { cat "$tmp/bad"; fail "no message for a bad --disagg"; }
# 6. plots
if command -v gnuplot >/dev/null 2>&1; then
    for e in png svg; do
        [ -s "$tmp/s/plots/pareto.$e" ] || fail "no plots/pareto.$e"
    done
else
    echo "test_sweep_serve: gnuplot not found; plots not checked"
fi
echo "test_sweep_serve: ok"
