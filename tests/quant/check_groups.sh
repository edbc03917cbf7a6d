#!/bin/sh
# Usage: check_groups.sh GROUPS_DIR WORK_DIR SETS -- MPIEXEC... NVLEMU
#        generate ARGS...
# GROUPS_DIR holds mix_groups.py's checkpoints; SETS names which of its
# two sets to check ("mixed", "layered" or both, separated by spaces).
# The command runs (--model and --act-quant appended) on
#   mixed, none  and twin, none:      the same tokens, last logits bit for
#                                     bit (each module read in its own
#                                     group's format and layout)
#   mixed, auto  and fp8-attn, auto:  the same (the attention's inputs FP8
#                                     per token, the int4 MLP's unquantized:
#                                     each class its own group's rule)
# and mixed's logits with activations must differ from its weight-only
# ones; "layered" the same with layered, layered-twin and layered-ref (the
# MLP int4 in layer 0 and FP8 in layer 1: each layer its group's format
# and rule).
# Exits 77 (skipped) without python3.
set -u
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
g=$1 w=$2 sets=$3
shift 3
[ "${1-}" = "--" ] && shift
mkdir -p "$w" || exit 1
one() {
    m=$1 a=$2
    shift 2
    "$@" --model "$g/$m" --act-quant "$a" --logits-out "$w/$m-$a.json" \
        >"$w/$m-$a.log" 2>&1 || { cat "$w/$m-$a.log"; exit 1; }
}
for set in $sets; do
    twin=twin ref=fp8-attn
    [ "$set" = layered ] && twin=layered-twin ref=layered-ref
    one "$set" none "$@"
    one $twin none "$@"
    one "$set" auto "$@"
    one $ref auto "$@"
    python3 - "$w" "$set" $twin $ref <<'PY' || exit 1
import json, sys
w, m, twin, ref = sys.argv[1:5]
r = {n: json.load(open("%s/%s.json" % (w, n)))
     for n in (m + "-none", twin + "-none", m + "-auto", ref + "-auto")}
for a, b in ((m + "-none", twin + "-none"), (m + "-auto", ref + "-auto")):
    assert r[a]["new_tokens"] == r[b]["new_tokens"], (a, b)
    assert r[a]["last_logits"] == r[b]["last_logits"], a + " != " + b
assert r[m + "-auto"]["last_logits"] != r[m + "-none"]["last_logits"], \
    "the FP8 groups' inputs were not quantized"
print("%s groups: weight-only = float twin, auto = %s, bit for bit"
      % (m, ref))
PY
done
