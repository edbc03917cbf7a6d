#!/bin/sh
# Usage: check_generate.sh MODEL_DIR -- COMMAND...   (COMMAND runs nvlemu
# generate with --logits-out $NVL_GEN_OUT)
# Checks the JSON it writes against MODEL_DIR/reference.json (transformers):
# the same greedy tokens, last logits within 1e-4 relative.  Exits 77
# (skipped) without python3.
set -u
model=$1
shift
[ "${1-}" = "--" ] && shift
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
NVL_GEN_OUT=$out
export NVL_GEN_OUT
# the command line names the output file as @OUT@
cmd=""
for a in "$@"; do
    [ "$a" = "@OUT@" ] && a=$out
    cmd="$cmd '$a'"
done
eval "$cmd" || { echo "check_generate.sh: the job failed" >&2; exit 1; }
python3 - "$out" "$model/reference.json" <<'PY'
import json, sys
got = json.load(open(sys.argv[1]))
ref = json.load(open(sys.argv[2]))
assert got["new_tokens"] == ref["greedy_new_tokens"], (got["new_tokens"], ref["greedy_new_tokens"])
diff = max(abs(a - b) for g, r in zip(got["last_logits"], ref["last_logits"]) for a, b in zip(g, r))
top = max(abs(b) for r in ref["last_logits"] for b in r)
print("tokens equal; last logits max|diff|/max|ref| = %.2e" % (diff / top))
assert diff / top <= 1e-4
PY
