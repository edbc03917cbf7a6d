#!/bin/sh
# Usage: check_generate.sh REF -- COMMAND...   (COMMAND runs nvlemu generate
# with --logits-out @OUT@)
# REF is a model directory: the JSON the job writes must hold the greedy
# tokens of REF/reference.json (transformers) and its last logits within
# 1e-4 relative (max |diff| / max |ref|).  REF "one-rank": the job runs
# again on one rank without its placement (--ep, --attn-parallel), and the
# two must give the same tokens and last logits within 1e-5 relative
# (expert parallelism changes only the order of float32 sums).  REF
# "one-rank-actq": the same within 1e-4 (quantized activations turn a
# last-bit difference of a sum that sits on a rounding boundary into one
# code step; the tokens must still be equal).  REF
# "no-tiers": the job runs again without its --kv-host/--weights-host, and
# the two must give the same tokens and bit-identical last logits (a memory
# tier moves time, never numbers).  REF "gpu-mode": the same without
# --rank-plays (a rank that plays a die moves time, never numbers).
# Exits 77 (skipped) without python3.
set -u
ref=$1
shift
[ "${1-}" = "--" ] && shift
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
many="" one="" prev="" skip=0
for a in "$@"; do
    b=$a
    [ "$a" = "@OUT@" ] && a=$dir/got.json b=$dir/one.json
    many="$many '$a'"
    if [ $skip -eq 1 ]; then
        skip=0
    elif [ "$ref" = "no-tiers" ]; then
        if [ "$b" = "--kv-host" ] || [ "$b" = "--weights-host" ]; then
            skip=1
        else
            one="$one '$b'"
        fi
    elif [ "$ref" = "gpu-mode" ]; then
        if [ "$b" = "--rank-plays" ]; then
            skip=1
        else
            one="$one '$b'"
        fi
    elif [ "$b" = "--ep" ] || [ "$b" = "--attn-parallel" ]; then
        skip=1
    elif [ "$prev" = "-n" ]; then
        one="$one '1'"
    else
        one="$one '$b'"
    fi
    prev=$b
done
eval "$many" || { echo "check_generate.sh: the job failed" >&2; exit 1; }
if [ "$ref" = "one-rank" ] || [ "$ref" = "one-rank-actq" ] || [ "$ref" = "no-tiers" ] || [ "$ref" = "gpu-mode" ]; then
    eval "$one" || { echo "check_generate.sh: the $ref job failed" >&2; exit 1; }
    want=$dir/one.json key=new_tokens tol=1e-5
    [ "$ref" = "one-rank-actq" ] && tol=1e-4
    [ "$ref" = "one-rank" ] || [ "$ref" = "one-rank-actq" ] || tol=0
else
    want=$ref/reference.json key=greedy_new_tokens tol=1e-4
fi
python3 - "$dir/got.json" "$want" "$key" "$tol" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
ref = json.load(open(sys.argv[2]))
key, tol = sys.argv[3], float(sys.argv[4])
assert got["new_tokens"] == ref[key], (got["new_tokens"], ref[key])
assert len(got["last_logits"]) == len(ref["last_logits"])
diff = max(abs(a - b) for g, r in zip(got["last_logits"], ref["last_logits"]) for a, b in zip(g, r))
top = max(abs(b) for r in ref["last_logits"] for b in r)
print("tokens equal; last logits max|diff|/max|ref| = %.2e (bound %g)" % (diff / top, tol))
assert diff / top <= tol
PY
