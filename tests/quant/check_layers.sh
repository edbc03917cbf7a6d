#!/bin/sh
# Usage: check_layers.sh NVLEMU TOPO NVFP4_DIR MIX_DQ_DIR [experts] --
#        MPIEXEC...
# An NVFP4 checkpoint that excludes model.layers.0.mlp* (mix_layers.py
# dequant: layer 0's MLP stored F32 with the NVFP4 weights' own values;
# "experts": model.layers.0.mlp.experts*, a mixture of experts' layer 0
# experts):
#  1. data mode, weight-only: the same tokens and last logits as
#     NVFP4_DIR's, bit for bit (the same weights, read as plain tensors);
#  2. data mode, activations auto: they differ (layer 0's MLP inputs stay
#     unquantized, as the engines run an excluded Linear; quantizing them
#     would give NVFP4_DIR's bits again);
#  3. timing mode, on one process: the weights exceed NVFP4_DIR's by layer
#     0's MLP (3 x hidden x intermediate elements; experts: x experts,
#     moe_intermediate) at bf16's 2 bytes less
#     NVFP4's 0.5625, and TTFT and TPOT are longer.
# Exits 77 (skipped) without python3.
set -u
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
nvlemu=$1 topo=$2 q=$3 mix=$4
shift 4
what=mlp
[ "${1-}" = "experts" ] && { what=experts; shift; }
[ "${1-}" = "--" ] && shift
w=$(mktemp -d) || exit 1
trap 'rm -rf "$w"' EXIT
for d in q mix; do
    eval dir=\$$d
    for a in none auto; do
        "$@" "$nvlemu" generate --model "$dir" --topo "$topo" \
            --input-ids "58,50,107,157,193,136,162,246,212,36,89;4,73,250,140,207,47,156,137,154,70,209" \
            --max-new-tokens 8 --act-quant $a --logits-out "$w/$d-$a.json" \
            >"$w/$d-$a.log" 2>&1 || { cat "$w/$d-$a.log"; exit 1; }
    done
    "$nvlemu" run --model "$dir" --topo "$topo" --mode timing --batch 2 \
        --prompt-len 5 --gen-len 4 --json "$w/$d-run.json" >"$w/$d-run.log" \
        2>&1 || { cat "$w/$d-run.log"; exit 1; }
done
python3 - "$w" "$mix" "$what" <<'PY' || exit 1
import json, sys
w, mix, what = sys.argv[1:4]
g = lambda n: json.load(open("%s/%s.json" % (w, n)))
assert g("q-none") == g("mix-none"), "weight-only: layer 0's F32 MLP"
assert g("q-auto")["last_logits"] != g("mix-auto")["last_logits"], \
    "layer 0's MLP inputs were quantized"
cfg = json.load(open(mix + "/config.json"))
elems = 3 * cfg["hidden_size"] * (
    cfg["intermediate_size"] if what == "mlp" else
    cfg["moe_intermediate_size"] *
    cfg.get("num_experts", cfg.get("num_local_experts")))
q, m = g("q-run"), g("mix-run")
got = (m["memory_per_gpu"]["weights_gb"] - q["memory_per_gpu"]["weights_gb"]) * 1e9
want = elems * (2 - 0.5625)
assert abs(got - want) < 1e-6 * want, "weights differ by %g bytes, want %g" % (got, want)
assert m["tpot_ms"] > q["tpot_ms"] and m["ttft_ms"] > q["ttft_ms"], (m, q)
print("layer 0's %s in bf16: weight-only bits equal, activations unquantized, "
      "%d more weight bytes, TPOT %.6f vs %.6f ms"
      % (what, got, m["tpot_ms"], q["tpot_ms"]))
PY
