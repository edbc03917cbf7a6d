#!/bin/sh
# Usage: check_calib.sh NVLEMU TOPO FLOAT_DIR TOKENS WORK_DIR MPIEXEC...
# nvlemu quantize --calib against check_calib.py's independent calibration:
#  1. NVFP4 with an FP8 KV cache, calibrated on one process: every
#     input_scale amax / 2688, k/v scales max(amax / 448, 1);
#  2. FP8 per tensor calibrated on the ranks of MPIEXEC (row-parallel
#     inputs max-reduced) from a copy whose k_norm and v_proj are scaled up
#     (keys and values above 448: k/v scales above 1, ModelOpt's clamp not
#     hiding them): amax / 448 and amax / 448;
#  3. FP8 blocks (dynamic activations): no input_scale written; int8
#     (compressed-tensors) with an FP8 KV cache: no input_scale, k/v
#     scales amax / 448 under compressed-tensors' names, kv_cache_scheme;
#  4. a NaN weight makes a NaN activation: refused on every rank with one
#     message naming the layer and the point, nothing written.
# Exits 77 (skipped) without python3.
set -u
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
nvlemu=$1 topo=$2 f=$3 tok=$4 w=$5/calib
shift 5
rm -rf "$w"
mkdir -p "$w" || exit 1
mpi="$*"
here=$(dirname "$0")
chk() { python3 "$here/check_calib.py" "$@" || exit 1; }
q() { "$@" >"$w/log" 2>&1 || { cat "$w/log"; exit 1; }; }
q "$nvlemu" quantize --topo "$topo" --format nvfp4 --calib "$tok" \
    --kv-dtype fp8 "$f" "$w/nv"
chk "$f" "$tok" "$w/nv" nvfp4 fp8
chk --copy "$f" "$w/big" '{"self_attn.k_norm.weight": 300, "self_attn.v_proj.weight": 300}'
q $mpi "$nvlemu" quantize --topo "$topo" --format fp8 --calib "$tok" \
    --kv-dtype fp8 "$w/big" "$w/fp8"
out=$(python3 "$here/check_calib.py" "$w/big" "$tok" "$w/fp8" fp8 fp8) ||
    { echo "$out"; exit 1; }
echo "$out"
case "$out" in *", 0 layer(s) with a k/v scale above 1"*)
    echo "the scaled copy did not raise a k/v scale above 1"; exit 1;; esac
q "$nvlemu" quantize --topo "$topo" --format fp8-block --calib "$tok" \
    "$f" "$w/blk"
chk "$f" "$tok" "$w/blk" fp8-block
q "$nvlemu" quantize --topo "$topo" --format int8 --calib "$tok" \
    --kv-dtype fp8 "$f" "$w/i8"
chk "$f" "$tok" "$w/i8" int8 fp8
chk --copy "$f" "$w/nan" '{"mlp.up_proj.weight": "nan"}'
$mpi "$nvlemu" quantize --topo "$topo" --format nvfp4 --calib "$tok" \
    "$w/nan" "$w/nanq" >"$w/log" 2>&1 &&
    { echo "a NaN activation was accepted"; exit 1; }
n=$(grep -c "calibration: layer 0's down_proj input holds a NaN or an infinity" "$w/log")
[ "$n" = 1 ] || { cat "$w/log"; echo "expected the message once, got $n"; exit 1; }
[ -e "$w/nanq/model.safetensors" ] && { echo "written after a NaN"; exit 1; }
echo "calibration: ok"
