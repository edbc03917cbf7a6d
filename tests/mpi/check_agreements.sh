#!/bin/sh
# Usage: check_agreements.sh NVLRUN NVLEMU MPI_CALLS_SO TOPO: the MPI
# exchanges one decode step of a pipeline costs in timing mode.  TP 2 x
# PP 2 on 4 ranks, 2 microbatches a step, run for 2 and for 3 tokens with
# bench/mpi_calls.c preloaded: the third token's step must add one
# MPI_Allreduce per rank, the job's one exchange that settles the step's
# stage collectives, link transfers and passes' ends
# (src/engine/pipe_agree.c), and no message between the stages (it added
# 3 allreduces, 2 sends or receives and 4 non-blocking ones when each
# stage settled each microbatch's pass and the links exchanged statuses
# and clocks).  The counts do not move with the host's load.
set -u
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# prints "allreduces point-to-point" (per rank)
count() {
  out=$(env LD_PRELOAD="$3" NVL_MPI_CALLS_OUT="$tmp/calls" "$1" 4 "$2" run \
        --model qwen2.5-7b --layers 2 --topo "$4" --pp 2 --batch 2 \
        --prompt-len 16 --gen-len "$5" 2>&1) ||
    { printf '%s\n' "$out" >&2; exit 1; }
  sed -n 's/^mpi_calls:.* allreduce \([0-9.]*\) bcast [0-9.]* send \([0-9.]*\) recv \([0-9.]*\) isend \([0-9.]*\) irecv \([0-9.]*\).*/\1 \2 \3 \4 \5/p' "$tmp/calls" |
    awk '{ print $1, $2 + $3 + $4 + $5 }'
  rm -f "$tmp/calls"
}
two=$(count "$1" "$2" "$3" "$4" 2)
three=$(count "$1" "$2" "$3" "$4" 3)
echo "MPI_Allreduce and point-to-point calls per rank: 2 tokens $two, 3 tokens $three"
[ -n "$two" ] && [ -n "$three" ] || { echo "check_agreements.sh: no count" >&2; exit 1; }
step=$(echo "$two $three" | awk '{ print $3 - $1 }')
p2p=$(echo "$two $three" | awk '{ print $4 - $2 }')
[ "$step" = 1 ] || { echo "check_agreements.sh: a decode step made $step allreduces per rank, expected 1" >&2; exit 1; }
[ "$p2p" = 0 ] || { echo "check_agreements.sh: a decode step made $p2p point-to-point calls per rank, expected 0" >&2; exit 1; }
