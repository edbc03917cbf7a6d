#!/bin/sh
# Usage: check_agreements.sh NVLRUN NVLEMU MPI_CALLS_SO TOPO: the MPI
# agreements one decode step of a pipeline costs in timing mode.  TP 2 x
# PP 2 on 4 ranks, 2 microbatches a step, run for 2 and for 3 tokens with
# bench/mpi_calls.c preloaded: the third token's step must add 3
# MPI_Allreduces per rank, each stage's settlement of each microbatch's
# pass (2) and the job's one agreement that ends the step
# (src/engine/generate.c, run_steps), not one per microbatch (4).  The
# counts do not move with the host's load.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
count() {
  out=$(env LD_PRELOAD="$3" NVL_MPI_CALLS_OUT="$tmp/calls" "$1" 4 "$2" run \
        --model qwen2.5-7b --layers 2 --topo "$4" --pp 2 --batch 2 \
        --prompt-len 16 --gen-len "$5" 2>&1) ||
    { printf '%s\n' "$out" >&2; exit 1; }
  sed -n 's/^mpi_calls:.* allreduce \([0-9.]*\) .*/\1/p' "$tmp/calls"
  rm -f "$tmp/calls"
}
two=$(count "$1" "$2" "$3" "$4" 2)
three=$(count "$1" "$2" "$3" "$4" 3)
echo "MPI_Allreduce per rank: 2 tokens $two, 3 tokens $three"
[ -n "$two" ] && [ -n "$three" ] || { echo "check_agreements.sh: no count" >&2; exit 1; }
step=$(awk -v a="$two" -v b="$three" 'BEGIN { print b - a }')
[ "$step" = 3 ] || { echo "check_agreements.sh: a decode step made $step allreduces per rank, expected 3" >&2; exit 1; }
