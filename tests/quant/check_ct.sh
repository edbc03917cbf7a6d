#!/bin/sh
# Usage: check_ct.sh MAKE_CT MODELOPT_DIR FORMAT WORK_DIR -- MPIEXEC... NVLEMU
#        generate ARGS...
# A compressed-tensors checkpoint gives its ModelOpt twin's numbers: MAKE_CT
# (make_ct.py) rewrites MODELOPT_DIR (FORMAT, as nvlemu quantize wrote it)
# in llm-compressor's layout under WORK_DIR; the command then runs on both
# (--model appended), and the two must give the same tokens and last
# logits within 1e-5 relative (they dequantize to the same weights but
# for NVFP4's global scale, stored as its float32 reciprocal).
# Exits 77 (skipped) without python3.
set -u
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
mk=$1 mo=$2 fmt=$3 w=$4
shift 4
[ "${1-}" = "--" ] && shift
mkdir -p "$w" || exit 1
python3 "$mk" "$mo" "$w/ct" "$fmt" || exit 1
for m in modelopt ct; do
    d=$w/ct; [ $m = modelopt ] && d=$mo
    "$@" --model "$d" --logits-out "$w/$m.json" >"$w/$m.log" 2>&1 ||
        { cat "$w/$m.log"; exit 1; }
done
python3 - "$w" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
a, b = (json.load(open("%s/%s.json" % (w, n))) for n in ("modelopt", "ct"))
assert a["new_tokens"] == b["new_tokens"], (a["new_tokens"], b["new_tokens"])
diff = max(abs(x - y) for r, s in zip(a["last_logits"], b["last_logits"])
           for x, y in zip(r, s))
top = max(abs(x) for r in a["last_logits"] for x in r)
assert diff <= 1e-5 * top, "compressed-tensors: %g of %g" % (diff, top)
print("compressed-tensors = ModelOpt: tokens equal, logits %.2g of %.3g"
      % (diff, top))
PY
