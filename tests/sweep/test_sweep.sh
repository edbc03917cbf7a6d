#!/bin/sh
# Usage: test_sweep.sh NVLEMU: a tiny bench/sweep (qwen2-tiny, TP 1,2 x
# batch 1,2 at context 16 on hgx-h200) into a temporary folder; checks the
# CSV, JSON and Markdown rows, that a second run resumes without running
# anything again, a what-if axis recorded in every row, a failing run
# recorded and reported (its points job stops there, the run after it
# still runs), the dry run's 2 points jobs for 2 rank counts, expert placements side by side (--ep,
# --attn-parallel), a run that does not fit in HBM marked and not ranked,
# regeneration from saved runs rewriting nothing, a --rank-plays axis (GPU
# runs keep their ids), and the plots when gnuplot is installed.
# Exits 77 (skipped) without python3.
set -eu
command -v python3 >/dev/null 2>&1 || { echo "test_sweep: python3 not found; skipped"; exit 77; }
nvlemu=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
sweep="$repo/bench/sweep"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_sweep: FAIL: $*"; exit 1; }

args="--model tests/data/hf/qwen2-tiny --tp 1,2 --batch 1,2 --ctx 16 --topo hgx-h200 --nvlemu $nvlemu"
# 1. the sweep itself
(cd "$repo" && "$sweep" $args --out "$tmp/s") 2>"$tmp/err1" || { cat "$tmp/err1"; fail "first sweep failed"; }
grep -q '4/4 runs' "$tmp/err1" || fail "no progress line '4/4 runs' on stderr"
python3 "$here/check_sweep.py" "$tmp/s" 4 || fail "results of the first sweep"
# 2. again: every run is reused, nothing launched
(cd "$repo" && "$sweep" $args --out "$tmp/s") 2>"$tmp/err2" || { cat "$tmp/err2"; fail "second sweep failed"; }
grep -q '0 new, 4 reused' "$tmp/err2" || { cat "$tmp/err2"; fail "the second sweep ran again"; }
[ "$(ls "$tmp/s/runs"/*.log | wc -l)" -eq 4 ] || fail "expected 4 run logs"
python3 "$here/check_sweep.py" "$tmp/s" 4 || fail "results after resuming"
# 3. an interrupted sweep: remove one result, only that one runs again
rm "$(ls "$tmp/s/runs"/tp2-b2-*.json | grep -v "\.sweep\.json$")"
(cd "$repo" && "$sweep" $args --out "$tmp/s") 2>"$tmp/err3" || fail "third sweep failed"
grep -q '1 new, 3 reused' "$tmp/err3" || { cat "$tmp/err3"; fail "resume did not rerun exactly the missing run"; }
# 4. what-if axis and --set in every row; a failing what-if is recorded
(cd "$repo" && "$sweep" --model tests/data/hf/qwen2-tiny --tp 2 --batch 1 --ctx 16 \
    --topo hgx-h200 --nvlemu "$nvlemu" --no-plots --set 'gpu[1].clock_scale=0.8' \
    --what-if bad=nvlink.no_such_key=1 --what-if slow=nvlink.link_bw=100MB/s \
    --out "$tmp/w") 2>"$tmp/err4" && fail "a sweep with a failing run exited 0"
python3 - "$tmp/w" <<'PY' || fail "what-if rows"
import csv, glob, json, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
assert [r["what_if"] for r in rows] == ["baseline", "bad", "slow"], rows
# the three share one points job: it stops at 'bad', 'slow' runs after it;
# each run's own command, exit code and part of the output
for r in rows:
    sj = json.load(open("%s/runs/%s.sweep.json" % (sys.argv[1], r["run_id"])))
    assert "--points" not in sj["command"] and r["run_id"] + ".json" in sj["command"][-1]
    assert (sj["exit_code"] == 0) == (r["what_if"] != "bad"), sj
    log = open("%s/runs/%s.log" % (sys.argv[1], r["run_id"])).read()
    assert ("no_such_key" in log) == (r["what_if"] == "bad"), (r["what_if"], log)
assert "points_job" in json.load(open("%s/runs/%s.sweep.json" % (sys.argv[1], rows[0]["run_id"])))
assert not glob.glob(sys.argv[1] + "/runs/*.points")
assert all("gpu[1].clock_scale=0.8" in r["set"] for r in rows)
ok = {r["what_if"]: r for r in rows}
assert ok["baseline"]["status"] == ok["slow"]["status"] == "ok"
assert ok["bad"]["status"] == "failed" and ok["bad"]["error"], ok["bad"]
assert "nvlink.link_bw=100MB/s" in ok["slow"]["inputs.set"]
assert float(ok["slow"]["tpot_ms"]) > float(ok["baseline"]["tpot_ms"])
md = open(sys.argv[1] + "/summary.md").read()
assert "FAILED" in md and "slow" in md
PY
# 5. --dry-run prints the commands and runs nothing: the runs of one rank
# count share a points job (2 jobs of 2 points), each point a comment line
(cd "$repo" && "$sweep" $args --dry-run --out "$tmp/d") >"$tmp/dry" || fail "dry run"
[ "$(grep -c '^#   --model ' "$tmp/dry")" -eq 4 ] || fail "dry run: expected 4 points"
[ "$(grep -c '^scripts/nvlrun [12] .*nvlemu run --points ' "$tmp/dry")" -eq 2 ] \
    || { cat "$tmp/dry"; fail "dry run: expected 2 points jobs"; }
[ ! -e "$tmp/d" ] || fail "dry run wrote $tmp/d"
# 6. --hostfile: the same numbers whatever the hosts (hostfiles/README.md)
(cd "$repo" && "$sweep" --model tests/data/hf/qwen2-tiny --tp 2 --batch 1,2 --ctx 16 \
    --topo hgx-h200 --nvlemu "$nvlemu" --no-plots --hostfile hostfiles/one-host-72.txt \
    --out "$tmp/h") 2>"$tmp/err6" || { cat "$tmp/err6"; fail "sweep --hostfile"; }
python3 - "$tmp/s" "$tmp/h" <<'PY' || fail "--hostfile changed the results"
import csv, sys
a = {(r["tp"], r["batch"]): r for r in csv.DictReader(open(sys.argv[1] + "/results.csv"))}
b = list(csv.DictReader(open(sys.argv[2] + "/results.csv")))
assert len(b) == 2 and all(r["hostfile"] == "hostfiles/one-host-72.txt" for r in b)
for r in b:
    for k in ("ttft_ms", "tpot_ms", "tokens_per_s_per_gpu", "new_tokens"):
        assert r[k] == a[(r["tp"], r["batch"])][k], (k, r[k], a[(r["tp"], r["batch"])][k])
PY
# 7. --collectives: busbw per algorithm/protocol, refused ones skipped,
# the measured h200-nvl2 points added
(cd "$repo" && "$sweep" --collectives --topo h200-nvl2 --ranks 2 --algos Ring,NVLS \
    --protos LL,Simple --max-bytes 1M --nvlemu "$nvlemu" --out "$tmp/c") 2>"$tmp/err7" \
    || { cat "$tmp/err7"; fail "sweep --collectives"; }
python3 - "$tmp/c" <<'PY' || fail "collectives results"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/collectives.csv")))
curves = {(r["nccl_algo"], r["nccl_proto"]) for r in rows}
assert ("Ring", "LL") in curves and ("Ring", "Simple") in curves, curves
assert not any(a == "NVLS" for a, _ in curves), curves
sizes = [int(r["size_bytes"]) for r in rows if r["nccl_algo"] == "Ring" and r["nccl_proto"] == "LL"]
assert sizes[0] == 8 and sizes[-1] == 1 << 20 and len(sizes) == 18, sizes
assert any(r["nccl_algo"] == "measured" for r in rows)
assert "NVLS/LL at 2 ranks" in open(sys.argv[1] + "/summary.md").read()
PY
# 8. expert placements: --ep 1,all x --attn-parallel tp,dp on a tiny
# mixture of experts, side by side in the summary
(cd "$repo" && "$sweep" --model tests/data/hf/qwen3-moe-tiny/config.json --tp 2 \
    --ep 1,all --attn-parallel tp,dp --batch 2 --ctx 16 --mode timing --no-plots \
    --nvlemu "$nvlemu" --out "$tmp/e") 2>"$tmp/err8" || { cat "$tmp/err8"; fail "sweep --ep"; }
python3 - "$tmp/e" <<'PY' || fail "expert placements"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
assert [(r["ep"], r["attn_parallel"]) for r in rows] == [
    ("1", "tp"), ("1", "dp"), ("all", "tp"), ("all", "dp")], rows
assert all(r["status"] == "ok" for r in rows)
assert [r["experts.ep"] for r in rows] == ["1", "1", "2", "2"], rows
assert float(rows[2]["experts.dispatch_bytes_per_layer"]) > 0
assert float(rows[0]["experts.dispatch_bytes_per_layer"]) == 0
md = open(sys.argv[1] + "/summary.md").read()
assert "Expert placements side by side" in md
assert "| GPUs | TP (experts TP) | EP 1, attention DP | EP all, attention TP | EP all, attention DP |" in md, md
PY
# 8b. communication axes: --overlap none,async-tp x --a2a nccl,onesided
# on the tiny mixture of experts under EP 2; the default values keep the
# run ids of step 8 (an axis added never renames saved runs)
(cd "$repo" && "$sweep" --model tests/data/hf/qwen3-moe-tiny/config.json --tp 2 \
    --ep all --batch 2 --ctx 16 --mode timing --no-plots --overlap none,async-tp \
    --a2a nccl,onesided --nvlemu "$nvlemu" --out "$tmp/e") 2>"$tmp/err8b" \
    || { cat "$tmp/err8b"; fail "sweep --overlap --a2a"; }
grep -q '3 new, 1 reused' "$tmp/err8b" || { cat "$tmp/err8b"; fail "the default run was not reused"; }
python3 - "$tmp/e" <<'PY' || fail "communication axes"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
assert [(r["overlap"], r["a2a"]) for r in rows] == [
    ("none", "nccl"), ("none", "onesided"), ("async-tp", "nccl"),
    ("async-tp", "onesided")], rows
assert all(r["status"] == "ok" for r in rows)
assert [r["inputs.overlap"] for r in rows] == ["none", "none", "async-tp", "async-tp"]
assert rows[2]["overlap.mode"] == "async-tp"
one, nccl = rows[1], rows[0]
assert one["experts.all_to_all.onesided.dispatch_ms_per_layer"] == \
    nccl["experts.all_to_all.onesided.dispatch_ms_per_layer"]
assert "-onesided-" in one["run_id"] and "-async-tp-" in rows[2]["run_id"]
md = open(sys.argv[1] + "/summary.md").read()
assert "Communication per decode step" in md, md
PY
# 9. a run that does not fit in HBM (Qwen2.5-72B on one H200) is marked so,
# never named best; regenerating from the saved runs rewrites nothing
(cd "$repo" && "$sweep" --model qwen2.5-72b --tp 1,2 --batch 8 --ctx 4096 \
    --topo h200-nvl2 --nvlemu "$nvlemu" --out "$tmp/f") 2>"$tmp/err9" \
    || { cat "$tmp/err9"; fail "sweep with a run that does not fit"; }
grep -q '1 do not fit in HBM' "$tmp/err9" || { cat "$tmp/err9"; fail "no 'do not fit' count"; }
cp -r "$tmp/f" "$tmp/f0"
(cd "$repo" && "$sweep" --model qwen2.5-72b --tp 1,2 --batch 8 --ctx 4096 \
    --topo h200-nvl2 --nvlemu "$nvlemu" --out "$tmp/f") 2>"$tmp/err9b" || fail "resumed sweep"
diff -r "$tmp/f0" "$tmp/f" >/dev/null || fail "regenerating from saved runs changed the files"
python3 - "$tmp/f" <<'PY' || fail "does not fit"
import csv, sys
rows = {r["tp"]: r for r in csv.DictReader(open(sys.argv[1] + "/results.csv"))}
assert rows["1"]["status"] == "does not fit" and "GB of HBM" in rows["1"]["error"], rows["1"]
assert rows["2"]["status"] == "ok"
assert "reused" not in rows["1"] and "sweep_wall_s" not in rows["1"]
md = open(sys.argv[1] + "/summary.md").read()
assert "Most tokens/s per GPU: " in md and "(TP 2," in md.split("Most tokens/s per GPU")[1].split("\n")[0], md
assert "Runs that do not fit" in md
PY
# 9b. --rank-plays gpu,die: die runs on half as many GPUs, the GPU runs
# keep the ids they had before the axis existed, and the summary sets GPU
# and die TP side by side at equal GPU counts
(cd "$repo" && "$sweep" --model tests/data/hf/qwen2-tiny --tp 2,4 --rank-plays gpu,die \
    --batch 2 --ctx 16 --topo gb200-nvl72 --no-plots --nvlemu "$nvlemu" \
    --out "$tmp/r") 2>"$tmp/err9c" || { cat "$tmp/err9c"; fail "sweep --rank-plays"; }
(cd "$repo" && "$sweep" --model tests/data/hf/qwen2-tiny --tp 2,4 --batch 2 --ctx 16 \
    --topo gb200-nvl72 --no-plots --nvlemu "$nvlemu" --dry-run --out "$tmp/r0") >"$tmp/dry9c" \
    || fail "dry run without --rank-plays"
python3 - "$tmp/r" "$tmp/dry9c" <<'PY' || fail "rank-plays axis"
import csv, os, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/results.csv")))
assert [(r["tp"], r["rank_plays"]) for r in rows] == [
    ("2", "gpu"), ("2", "die"), ("4", "gpu"), ("4", "die")], rows
assert all(r["status"] == "ok" for r in rows), rows
die = [r for r in rows if r["rank_plays"] == "die"]
assert all(r["inputs.rank_plays"] == "die" and "-die-" in r["run_id"] for r in die), die
assert [r["inputs.gpus"] for r in die] == ["1", "2"], die
assert all(r["inputs.rank_plays"] == "" for r in rows if r["rank_plays"] == "gpu")
dry = open(sys.argv[2]).read()
for r in rows:
    if r["rank_plays"] == "gpu":
        assert r["run_id"] + ".json" in dry, (r["run_id"], dry)
md = open(sys.argv[1] + "/summary.md").read()
assert "| GPUs | batch | GPU TP | die TP |" in md or "| GPUs | GPU TP | die TP |" in md, md
assert "| 2 |" in md.split("GPU-level vs die-level")[1], md
PY
# 10. plots
if command -v gnuplot >/dev/null 2>&1; then
    for p in s/plots/tokens_per_gpu s/plots/tpot s/plots/breakdown c/plots/busbw; do
        for e in png svg; do
            [ -s "$tmp/$p.$e" ] || fail "no $p.$e"
        done
    done
else
    echo "test_sweep: gnuplot not found; plots not checked"
fi
echo "test_sweep: ok"
