#!/bin/sh
# Usage: check_nvlrun.sh NVLRUN: what scripts/nvlrun hands every local rank.
# Three ranks, the timer slack given by NVL_TIMERSLACK_NS: each rank must
# run with that slack and with every setting of src/runtime/one-host.env
# (hwloc's plugins blacklisted and its I/O discovery off, Open MPI's shared
# memory transport selected, ...; scripts/nvlrun says why), except one the
# caller set, which must win (OMPI_MCA_coll here); the same through a
# hostfile that names only this machine (hostfiles/one-host-72.txt).  The
# settings ctest itself gives MPI tests are removed first, so they must
# come from NVLRUN.
set -u
top=$(dirname "$1")/..
settings=$(grep -v '^#' "$top/src/runtime/one-host.env" | grep .) || exit 1
keys=$(printf '%s\n' "$settings" | cut -d= -f1)
[ "$(printf '%s\n' "$keys" | wc -l)" -ge 10 ] || { echo "check_nvlrun.sh: few settings read" >&2; exit 1; }
unset_args=""
for k in $keys; do unset_args="$unset_args -u $k"; done
want="slack 123456 $(printf '%s\n' "$settings" | sed 's/^OMPI_MCA_coll=.*/OMPI_MCA_coll=basic,self/' | tr '\n' ' ')"
for hf in "" "$top/hostfiles/one-host-72.txt"; do
  # shellcheck disable=SC2086 # unset_args and keys are lists of words
  out=$(env $unset_args OMPI_MCA_coll=basic,self NVL_HOSTFILE="$hf" \
      NVL_TIMERSLACK_NS=123456 "$1" 3 sh -c \
      'line="slack $(cat /proc/self/timerslack_ns)"
       for k in "$@"; do eval "v=\${$k-unset}"; line="$line $k=$v"; done
       echo "$line "' sh $keys) || exit 1
  echo "$out"
  n=$(printf '%s\n' "$out" | grep -cxF "$want")
  [ "$n" -eq 3 ] || { echo "check_nvlrun.sh: NVL_HOSTFILE='$hf': $n of 3 ranks print '$want'" >&2; exit 1; }
done
