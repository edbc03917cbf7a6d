#!/bin/sh
# Usage: check_scales.sh NVLEMU TOPO QUANT_DIR WORK_DIR MPIEXEC...
# The checkpoint's scales in data mode (tests/quant/add_scales.py adds them
# to QUANT_DIR, an nvfp4 checkpoint):
#  1. a fused projection takes the largest of its parts' input scales
#     (vLLM's input_scale.max()): q/k/v at 1, 3, 2 and gate/up at 1.5, 0.7
#     give the logits of q/k/v all at 3 and gate/up both at 1.5, bit for
#     bit;
#  2. those scales change the numbers (a run without them, scale 1,
#     differs; a power of two would only shift the E4M3 exponents);
#  3. k_scale / v_scale under ModelOpt's names change an FP8 KV cache's
#     numbers, and are read (a run with them differs from one without);
#  4. a NaN input scale stops every rank with one message naming it;
#  5. the parts of an NVFP4 fused GEMM with their own weight_scale_2 are
#     each dequantized with their own: unfuse.py's checkpoint (each part's
#     scale_2 and block scales moved by a power of two, the same values)
#     gives QUANT_DIR's logits bit for bit with activations; with k_proj's
#     weight_scale_2 set to 0.001 (a ratio no power of two), weight-only,
#     the logits of its twin whose layer-0 attention is stored as those
#     weights' own dequantized values (mix_layers.py dequant), bit for
#     bit, and not QUANT_DIR's;
#  6. scales that differ by layer are each layer's under a pipeline: the
#     job at --pp 2 (layer 1 on the second stage) gives the tokens and,
#     within 1e-4 relative, the last logits of the job at TP 2.
# Exits 77 (skipped) without python3.
set -u
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
nvlemu=$1 topo=$2 q=$3 w=$4
shift 4
here=$(dirname "$0")
add() { python3 "$here/add_scales.py" "$q" "$w/$1" "$2" || exit 1; }
add mixed '{"self_attn.q_proj.input_scale": 1, "self_attn.k_proj.input_scale": 3, "self_attn.v_proj.input_scale": 2, "mlp.gate_proj.input_scale": 1.5, "mlp.up_proj.input_scale": 0.7}'
add maxed '{"self_attn.q_proj.input_scale": 3, "self_attn.k_proj.input_scale": 3, "self_attn.v_proj.input_scale": 3, "mlp.gate_proj.input_scale": 1.5, "mlp.up_proj.input_scale": 1.5}'
add kv '{"self_attn.k_proj.k_scale": 0.03, "self_attn.v_proj.v_scale": 0.07}'
add bad '{"self_attn.o_proj.input_scale": "nan"}'
add fused '{"self_attn.k_proj.weight_scale_2": 0.001}'
add layered '{"self_attn.q_proj.input_scale": [1, 4], "self_attn.o_proj.input_scale": [1, 2], "mlp.down_proj.input_scale": [1, 0.3]}'
mpi="$*"
# gen OUT MODEL [OPTION...]: generate with MODEL into $w/OUT.json and .log
gen() {
    o=$1 d=$2
    shift 2
    $mpi "$nvlemu" generate --model "$d" --topo "$topo" \
        --input-ids "58,50,107,157;4,73,250" --max-new-tokens 4 \
        --logits-out "$w/$o.json" "$@" >"$w/$o.log" 2>&1
}
# each SUFFIX OPTIONS MODEL...: gen MODEL+SUFFIX for each $w/MODEL (plain:
# QUANT_DIR) with OPTIONS (split on spaces)
each() {
    sfx=$1 opt=$2
    shift 2
    for m in "$@"; do
        d=$w/$m; [ $m = plain ] && d=$q
        gen $m$sfx "$d" $opt || { cat "$w/$m$sfx.log"; exit 1; }
    done
}
each "" "" mixed maxed plain
each -fp8 "--kv-dtype fp8" kv plain
python3 - "$w" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
g = lambda n: json.load(open("%s/%s.json" % (w, n)))
assert g("mixed") == g("maxed"), "the largest input scale of a fused GEMM"
assert g("mixed")["last_logits"] != g("plain")["last_logits"], "input scales unused"
assert g("kv-fp8")["last_logits"] != g("plain-fp8")["last_logits"], "k/v scales unused"
print("max rule, input scales and k/v scales: ok")
PY
gen bad "$w/bad" && { echo "a NaN input scale was accepted"; exit 1; }
n=$(grep -c "scale 'model.layers.0.self_attn.o_proj.input_scale' must be one finite positive F32 or BF16 value" "$w/bad.log")
[ "$n" = 1 ] || { cat "$w/bad.log"; echo "expected the message once, got $n"; exit 1; }
echo "NaN input scale: refused once"
(cd "$here" && python3 unfuse.py "$q" "$w/unfused" &&
 python3 mix_layers.py "$w/fused" "$w/fused" "$w/fused-dq" dequant \
     model.layers.0.self_attn.) || exit 1
each "" "" unfused
each -wo "--act-quant none" fused fused-dq plain
python3 - "$w" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
g = lambda n: json.load(open("%s/%s.json" % (w, n)))
assert g("unfused") == g("plain"), "parts' own weight_scale_2 (powers of two)"
assert g("fused-wo") == g("fused-dq-wo"), "k_proj's own weight_scale_2"
assert g("fused-wo")["last_logits"] != g("plain-wo")["last_logits"]
print("fused parts with their own weight_scale_2: each its own, ok")
PY
gen layered-tp "$w/layered" || { cat "$w/layered-tp.log"; exit 1; }
gen layered-pp "$w/layered" --pp 2 || { cat "$w/layered-pp.log"; exit 1; }
python3 - "$w" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
a, b = (json.load(open("%s/layered-%s.json" % (w, n))) for n in ("tp", "pp"))
assert a["new_tokens"] == b["new_tokens"], (a["new_tokens"], b["new_tokens"])
diff = max(abs(x - y) for r, s in zip(a["last_logits"], b["last_logits"])
           for x, y in zip(r, s))
top = max(abs(x) for r in a["last_logits"] for x in r)
assert diff <= 1e-4 * top, "per-layer scales at --pp 2: %g of %g" % (diff, top)
print("per-layer scales under a pipeline: ok (%.2g of %.3g)" % (diff, top))
PY
