#!/bin/sh
# Usage: check_dynamic.sh NVLEMU TOPO FP8_DIR WORK_DIR MPIEXEC...
# FP8 per tensor read as vLLM's Fp8Config with activation_scheme "dynamic"
# (FP8_DIR, written by nvlemu quantize --format fp8, rewritten by
# add_scales.py): activations quantized per token (vLLM Fp8LinearMethod's
# kFp8DynamicTokenSym), so
#  1. each prompt's logits are the same, bit for bit, run alone or in a
#     batch with another (a per-tensor dynamic scale would mix them);
#  2. they differ from the static per-tensor rule of ModelOpt's config;
#  3. an activation_scheme other than "dynamic" / "static" is refused on
#     every rank with one message naming config.json.
# Exits 77 (skipped) without python3.
set -u
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
nvlemu=$1 topo=$2 q=$3 w=$4/dynamic
shift 4
rm -rf "$w"
mkdir -p "$w" || exit 1
mpi="$*"
here=$(dirname "$0")
python3 "$here/add_scales.py" "$q" "$w/dyn" '{}' \
    '{"quant_method": "fp8", "activation_scheme": "dynamic"}' || exit 1
python3 "$here/add_scales.py" "$q" "$w/bad" '{}' \
    '{"quant_method": "fp8", "activation_scheme": "per-token"}' || exit 1
gen() {
    o=$1 d=$2 ids=$3
    $mpi "$nvlemu" generate --model "$d" --topo "$topo" --input-ids "$ids" \
        --max-new-tokens 2 --logits-out "$w/$o.json" >"$w/$o.log" 2>&1 ||
        { cat "$w/$o.log"; exit 1; }
}
gen both "$w/dyn" "58,50,107,157,193,136;4,73,250"
gen first "$w/dyn" "58,50,107,157,193,136"
gen second "$w/dyn" "4,73,250"
gen static "$q" "58,50,107,157,193,136;4,73,250"
python3 - "$w" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
g = lambda n: json.load(open("%s/%s.json" % (w, n)))["last_logits"]
both = g("both")
assert both[0] == g("first")[0], "prompt 0 alone differs from the batch"
assert both[1] == g("second")[0], "prompt 1 alone differs from the batch"
assert both != g("static"), "dynamic and static activations agree"
print("per-token dynamic FP8: each row its own scale, ok")
PY
$mpi "$nvlemu" generate --model "$w/bad" --topo "$topo" --input-ids 1,2 \
    --max-new-tokens 1 >"$w/bad.log" 2>&1 &&
    { echo "a bad activation_scheme was accepted"; exit 1; }
n=$(grep -c "config.json: quantization_config.activation_scheme must be" "$w/bad.log")
[ "$n" = 1 ] || { cat "$w/bad.log"; echo "expected the message once, got $n"; exit 1; }
echo "bad activation_scheme: refused once"
