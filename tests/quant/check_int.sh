#!/bin/sh
# Usage: check_int.sh CHECK_INT FLOAT_DIR INT_DIR FORMAT WORK_DIR -- MPIEXEC...
#        NVLEMU generate ARGS...
# An int8 or int4 checkpoint that nvlemu quantize wrote: CHECK_INT
# (check_int.py) checks every stored code and scale against
# compressed-tensors' quantizer written independently in Python and
# writes its float twin (the dequantized weights as F32) under WORK_DIR;
# the command then runs on both (--model appended), weight-only, and the
# two must give the same tokens and bit-identical last logits.
# Exits 77 (skipped) without python3.
set -u
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
ck=$1 fl=$2 q=$3 fmt=$4 w=$5
shift 5
[ "${1-}" = "--" ] && shift
mkdir -p "$w" || exit 1
python3 "$ck" "$fl" "$q" "$fmt" "$w/twin" || exit 1
for m in int twin; do
    d=$w/twin; [ $m = int ] && d=$q
    "$@" --model "$d" --act-quant none --logits-out "$w/$m.json" \
        >"$w/$m.log" 2>&1 || { cat "$w/$m.log"; exit 1; }
done
python3 - "$w" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
a, b = (json.load(open("%s/%s.json" % (w, n))) for n in ("int", "twin"))
assert a["new_tokens"] == b["new_tokens"], (a["new_tokens"], b["new_tokens"])
assert a["last_logits"] == b["last_logits"], "last logits differ"
print("dequantized = float twin: tokens and last logits bit for bit")
PY
