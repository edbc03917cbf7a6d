#!/bin/sh
# Usage: check_quality.sh FLOAT_REF_DIR EVAL.jsonl [FORMAT_REF_DIR] -- COMMAND...
# COMMAND runs nvlemu generate --compare-to ... --eval EVAL.jsonl
# --logits-out @OUT@; check_quality.py checks what it wrote.  Exits 77
# (skipped) without python3.
set -u
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
args=""
while [ "$1" != "--" ]; do args="$args '$1'"; shift; done
shift
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cmd=""
for a in "$@"; do
    [ "$a" = "@OUT@" ] && a=$dir/got.json
    cmd="$cmd '$a'"
done
eval "$cmd" || { echo "check_quality.sh: the job failed" >&2; exit 1; }
eval "python3 '$(dirname "$0")/check_quality.py' '$dir/got.json' $args"
