#!/bin/sh
# Usage: check_nvlrun.sh NVLRUN: what scripts/nvlrun hands every local rank.
# Three ranks, the timer slack given by NVL_TIMERSLACK_NS: each rank must
# run with that slack, hwloc's plugins blacklisted and its I/O discovery
# off, and Open MPI's shared memory transport selected (scripts/nvlrun
# says why); the same through a hostfile that names only this machine
# (hostfiles/one-host-72.txt).  The settings ctest itself gives MPI tests
# are removed first, so they must come from NVLRUN.
set -u
want='slack 123456 plugins hwloc_pci.so,hwloc_opencl.so,hwloc_gl.so,hwloc_xml_libxml.so components -linuxio btl self,vader pml ob1'
hostfile=$(dirname "$1")/../hostfiles/one-host-72.txt
for hf in "" "$hostfile"; do
  out=$(env -u HWLOC_PLUGINS_BLACKLIST -u HWLOC_COMPONENTS -u OMPI_MCA_btl \
      -u OMPI_MCA_pml NVL_HOSTFILE="$hf" NVL_TIMERSLACK_NS=123456 "$1" 3 sh -c \
      'echo "slack $(cat /proc/self/timerslack_ns) plugins $HWLOC_PLUGINS_BLACKLIST components $HWLOC_COMPONENTS btl $OMPI_MCA_btl pml $OMPI_MCA_pml"') || exit 1
  echo "$out"
  n=$(printf '%s\n' "$out" | grep -cxF "$want")
  [ "$n" -eq 3 ] || { echo "check_nvlrun.sh: NVL_HOSTFILE='$hf': $n of 3 ranks print '$want'" >&2; exit 1; }
done
