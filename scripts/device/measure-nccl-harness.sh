#!/bin/bash
# nccl-tests' all_reduce, all_gather and reduce_scatter under four harnesses
# on one box (kind nvidia-h200-x4), N = 4 and 2 GPUs, 1 KB to 16 MB (-f 2),
# bf16, NCCL_ALGO=Ring, 5 warm-ups, 20 timed calls:
#   a: mpirun -np N, one process per GPU (-g 1), eager
#   b: one process driving N GPUs (-g N), eager
#   c: one process, -g N, -G 20 (20 calls captured in a CUDA graph)
#   d: mpirun -np N -g 1 -G 20
# then each harness once more with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING
# (-w 0 -n 1) for the protocol and channel count NCCL picks per size.
# nccl-tests is not in this repository: export NVIDIA/nccl-tests' tree into
# an ignored folder and carry it (NCCLTESTS names it, default .nccltests):
#
#   run(command="DEADLINE=420 scripts/device/measure-nccl-harness.sh $OUT",
#       carry=[".nccltests"], kind="nvidia-h200-x4", timeout_s=480)
#
# Harnesses a and d need an MPI (mpi.h, libmpi, mpirun) on the machine; where
# none is found they are skipped and run.log says so.  Leaves in OUT:
# nccl-harness-raw.tar.gz (one .log per run, build logs, machine.txt) and
# run.log; parse with scripts/device/parse-nccl-harness.py.  NVLink
# multicast stays off in every process (the machine's rule).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${1:?output folder}
ntree=$(readlink -f "${NCCLTESTS:-.nccltests}")
deadline=${DEADLINE:-420}
t0=$SECONDS
work=/tmp/ncclharness-out && rm -rf $work && mkdir -p $work
log() { echo "[$((SECONDS - t0))s] $*" | tee -a "$out/run.log"; }
finish() { tar czf "$out/nccl-harness-raw.tar.gz" -C $work .; exit "$1"; }

nccl_dir=$(python3 -c '
import glob, os, site
for r in site.getsitepackages() + [site.getusersitepackages()]:
    for h in glob.glob(os.path.join(r, "nvidia", "**", "include", "nccl.h"), recursive=True):
        d = os.path.dirname(os.path.dirname(h))
        if glob.glob(os.path.join(d, "lib", "libnccl.so*")):
            print(d); raise SystemExit(0)
raise SystemExit(1)') || { log "no pip NCCL found"; finish 1; }
home=/tmp/ncclhome && rm -rf $home && mkdir -p $home/lib
ln -s "$nccl_dir/include" $home/include
for f in "$nccl_dir"/lib/libnccl.so*; do ln -sf "$f" $home/lib/; done
[ -e $home/lib/libnccl.so ] || ln -s "$(ls "$nccl_dir"/lib/libnccl.so.* | head -1)" $home/lib/libnccl.so
export LD_LIBRARY_PATH=$home/lib:${LD_LIBRARY_PATH:-}
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc_bin")")")

# an MPI for harnesses a and d: mpi.h and libmpi.so wherever they are
mpihome=/tmp/mpihome && rm -rf $mpihome && mkdir -p $mpihome/lib
mpirun_bin=$(command -v mpirun || true)
mpih=$(find /usr /opt -name mpi.h -path '*include*' 2>/dev/null | grep -v -i -E 'mpich.*cxx|python' | head -1)
libmpi=$(find /usr /opt -name 'libmpi.so*' 2>/dev/null | head -1)
have_mpi=0
if [ -n "$mpirun_bin" ] && [ -n "$mpih" ] && [ -n "$libmpi" ]; then
  ln -s "$(dirname "$mpih")" $mpihome/include
  ln -s "$libmpi" $mpihome/lib/libmpi.so
  export LD_LIBRARY_PATH=$(dirname "$libmpi"):$LD_LIBRARY_PATH
  have_mpi=1
fi
{ nvidia-smi -L; nvidia-smi topo -m; nvidia-smi --query-gpu=driver_version,clocks.max.sm,clocks.sm --format=csv
  "$nvcc_bin" --version | tail -2
  echo "nccl_dir=$nccl_dir cuda_home=$cuda_home"; ls -l "$nccl_dir/lib"
  echo "mpirun=$mpirun_bin mpi.h=$mpih libmpi=$libmpi"; [ -n "$mpirun_bin" ] && "$mpirun_bin" --version
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.nccl.version())'
  grep -h 'NCCL_TESTS_VERSION' -r "$ntree/src" | head -2; nproc
} > $work/machine.txt 2>&1
log "nccl $nccl_dir, cuda $cuda_home, mpi=$have_mpi ($mpirun_bin $mpih $libmpi)"

bins="BIN_FILES_LIST=all_reduce all_gather reduce_scatter"
gen="-gencode=arch=compute_90,code=sm_90"
( cd "$ntree/src" && make -j 32 MPI=0 NCCL_HOME=$home CUDA_HOME="$cuda_home" \
    NVCC_GENCODE="$gen" BUILDDIR=/tmp/nt-build "$bins" ) > $work/build.log 2>&1 &
if [ $have_mpi = 1 ]; then
  cp -r "$ntree" /tmp/nt-src-mpi
  ( cd /tmp/nt-src-mpi/src && make -j 32 MPI=1 MPI_HOME=$mpihome NCCL_HOME=$home \
      CUDA_HOME="$cuda_home" NVCC_GENCODE="$gen" BUILDDIR=/tmp/nt-build-mpi "$bins" ) \
    > $work/build-mpi.log 2>&1 &
fi
wait
log "built: $(ls /tmp/nt-build/*_perf /tmp/nt-build-mpi/*_perf 2>/dev/null | tr '\n' ' ')"
tail -5 $work/build.log | tee -a "$out/run.log"
[ $have_mpi = 1 ] && tail -5 $work/build-mpi.log | tee -a "$out/run.log"
[ -x /tmp/nt-build/all_reduce_perf ] || finish 1
[ -x /tmp/nt-build-mpi/all_reduce_perf ] || have_mpi=0

# one run: NAME HARNESS GPUS OP DEBUG
one() {
  local name=$1 h=$2 n=$3 op=$4 dbg=$5 args=(-b 1K -e 16M -f 2 -c 0 -d bfloat16)
  local envs=(NCCL_ALGO=Ring NCCL_DEBUG=VERSION NCCL_DEBUG_SUBSYS=INIT) pre=() bin=/tmp/nt-build
  if [ $((SECONDS - t0)) -ge "$deadline" ]; then log "SKIP $name (deadline)"; return; fi
  case $h in
    a|d) [ $have_mpi = 1 ] || { log "SKIP $name (no MPI)"; return; }
         bin=/tmp/nt-build-mpi; args+=(-g 1)
         pre=("$mpirun_bin" -np "$n" --oversubscribe --bind-to none -x LD_LIBRARY_PATH
              -x NCCL_ALGO -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS -x NCCL_NVLS_ENABLE) ;;
    *) args+=(-g "$n") ;;
  esac
  case $h in c|d) args+=(-G 20) ;; esac
  if [ "$dbg" = 1 ]; then envs=(NCCL_ALGO=Ring NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING); args+=(-w 1 -n 1)
  else args+=(-w 5 -n 20); fi
  log "run $name"
  env "${envs[@]}" timeout 60 \
    ${pre[@]+"${pre[@]}"} $bin/${op}_perf "${args[@]}" > "$work/$name.log" 2>&1
  log "  rc=$? $(grep -c '^ *[0-9][0-9]* ' "$work/$name.log") rows"
}
for n in 4 2; do for h in b a c d; do for op in all_reduce all_gather reduce_scatter; do
  one "n$n-$h-$op" $h $n $op 0
done; done; done
for n in 4 2; do for h in b a c d; do for op in all_reduce all_gather reduce_scatter; do
  one "n$n-$h-$op-tuning" $h $n $op 1
done; done; done
log "done"
finish 0
