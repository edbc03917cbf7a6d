#!/bin/sh
# Usage: check_groups.sh GROUPS_DIR WORK_DIR -- MPIEXEC... NVLEMU generate
#        ARGS...
# GROUPS_DIR holds mix_groups.py's checkpoints.  The command runs (--model
# and --act-quant appended) on
#   mixed, none  and twin, none:      the same tokens, last logits bit for
#                                     bit (each module read in its own
#                                     group's format and layout)
#   mixed, auto  and fp8-attn, auto:  the same (the attention's inputs FP8
#                                     per token, the int4 MLP's unquantized:
#                                     each class its own group's rule)
# and mixed's logits with activations must differ from its weight-only ones.
# Exits 77 (skipped) without python3.
set -u
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
g=$1 w=$2
shift 2
[ "${1-}" = "--" ] && shift
mkdir -p "$w" || exit 1
one() {
    m=$1 a=$2
    shift 2
    "$@" --model "$g/$m" --act-quant "$a" --logits-out "$w/$m-$a.json" \
        >"$w/$m-$a.log" 2>&1 || { cat "$w/$m-$a.log"; exit 1; }
}
one mixed none "$@"
one twin none "$@"
one mixed auto "$@"
one fp8-attn auto "$@"
python3 - "$w" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
r = {n: json.load(open("%s/%s.json" % (w, n)))
     for n in ("mixed-none", "twin-none", "mixed-auto", "fp8-attn-auto")}
for a, b in (("mixed-none", "twin-none"), ("mixed-auto", "fp8-attn-auto")):
    assert r[a]["new_tokens"] == r[b]["new_tokens"], (a, b)
    assert r[a]["last_logits"] == r[b]["last_logits"], a + " != " + b
assert r["mixed-auto"]["last_logits"] != r["mixed-none"]["last_logits"], \
    "the attention's inputs were not quantized"
print("mixed groups: weight-only = float twin, auto = FP8 attention alone, "
      "bit for bit")
PY
