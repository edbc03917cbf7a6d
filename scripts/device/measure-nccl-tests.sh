#!/bin/bash
# nccl-tests' own curves on a lent machine of several GPUs (kind
# nvidia-h100-x4), one process driving 2, 3 or 4 GPUs (`-g`, MPI=0), against
# torch's bundled NCCL (pip nvidia-nccl-cu*).  nccl-tests itself is not in
# this repository: export NVIDIA/nccl-tests' tree into .nccltests (ignored
# through .git/info/exclude) and carry it:
#
#   run(command="DEADLINE=400 scripts/device/measure-nccl-tests.sh $OUT",
#       carry=[".nccltests"], kind="nvidia-h100-x4")
#
# RUNS=protos: instead of NCCL's own choices, each ring protocol on its own
# (NCCL_ALGO=Ring, NCCL_PROTO=LL|LL128|Simple) for all_reduce, all_gather and
# reduce_scatter at 4, 2 and 3 GPUs, 1 KB to MAXBYTES (default 256M); only
# those three binaries are built.
#
# Leaves in OUT: nccl-tests-raw.tar.gz (one .log per run, the build log,
# machine.txt) and run.log.  Parse with scripts/device/parse-nccl-tests.py.
# NVLink multicast stays off in every process (the machine's rule).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${1:?output folder}
ntree=${NCCLTESTS:-.nccltests}
deadline=${DEADLINE:-400}      # seconds after start: no new run begins later
runs=${RUNS:-default}
iters=${ITERS:-20} warm=${WARMUP:-5} maxb=${MAXBYTES:-4G}
[ "$runs" = protos ] && maxb=${MAXBYTES:-256M}
bins=()
[ "$runs" = protos ] && bins=("BIN_FILES_LIST=all_reduce all_gather reduce_scatter")
t0=$SECONDS
work=/tmp/nccltests-out && rm -rf $work && mkdir -p $work
log() { echo "[$((SECONDS - t0))s] $*" | tee -a "$out/run.log"; }

# torch's NCCL: headers and libnccl.so.2 from the pip package
nccl_dir=$(python3 - <<'EOF'
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
for r in roots:
    for h in glob.glob(os.path.join(r, 'nvidia', '**', 'include', 'nccl.h'), recursive=True):
        d = os.path.dirname(os.path.dirname(h))
        if glob.glob(os.path.join(d, 'lib', 'libnccl.so*')):
            print(d); sys.exit(0)
sys.exit(1)
EOF
) || { log "no pip NCCL found"; exit 1; }
home=/tmp/ncclhome && rm -rf $home && mkdir -p $home/lib
ln -s "$nccl_dir/include" $home/include
for f in "$nccl_dir"/lib/libnccl.so*; do ln -sf "$f" $home/lib/; done
[ -e $home/lib/libnccl.so ] || ln -s "$(ls "$nccl_dir"/lib/libnccl.so.* | head -1)" $home/lib/libnccl.so
export LD_LIBRARY_PATH=$home/lib:${LD_LIBRARY_PATH:-}
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc_bin")")")
{ nvidia-smi -L; nvidia-smi topo -m; "$nvcc_bin" --version | tail -2
  echo "nccl_dir=$nccl_dir cuda_home=$cuda_home"; ls -l "$nccl_dir/lib" "$nccl_dir/include"
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.nccl.version())'
  cat "$ntree/src/common.mk" >/dev/null && grep -h 'NCCL_TESTS_VERSION' -r "$ntree/src" | head -2
} > $work/machine.txt 2>&1
log "nccl $nccl_dir, cuda $cuda_home"

# build: sm_90 only, one process (MPI=0)
( cd "$ntree/src" && make -j 48 MPI=0 NCCL_HOME=$home CUDA_HOME="$cuda_home" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR=/tmp/nccltests-build \
    ${bins[@]+"${bins[@]}"} ) > $work/build.log 2>&1
rc=$?; log "build rc=$rc"; tail -20 $work/build.log | tee -a "$out/run.log"
if [ $rc -ne 0 ] && [ -e /usr/include/nccl.h ]; then   # fallback: the system's NCCL
  ( cd "$ntree/src" && make -j 48 MPI=0 NCCL_HOME=/usr CUDA_HOME="$cuda_home" \
      NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR=/tmp/nccltests-build ) \
    > $work/build2.log 2>&1
  log "build with /usr's NCCL rc=$?"; tail -5 $work/build2.log | tee -a "$out/run.log"
fi
bin=/tmp/nccltests-build
[ -x $bin/all_reduce_perf ] || { tar czf "$out/nccl-tests-raw.tar.gz" -C $work .; exit 1; }

# one run: NAME GPUS OP [env...] -- [extra args]
one() {
  local name=$1 g=$2 op=$3; shift 3
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  if [ $((SECONDS - t0)) -ge "$deadline" ]; then log "SKIP $name (deadline)"; return; fi
  log "run $name"
  env NCCL_DEBUG=VERSION ${envs[@]+"${envs[@]}"} timeout 75 $bin/${op}_perf -g "$g" -b "$minb" -e "$maxb" -f 2 \
    -n "$iters" -w "$warm" -c 0 -d bfloat16 "$@" > "$work/$name.log" 2>&1
  log "  rc=$? $(grep -c '^ *[0-9]' "$work/$name.log") rows"
}
minb=8
if [ "$runs" = protos ]; then
  minb=1K
  for g in 4 2 3; do for op in all_reduce all_gather reduce_scatter; do
    for p in LL LL128 Simple; do one "g$g-$op-Ring-$p" $g $op NCCL_ALGO=Ring NCCL_PROTO=$p; done
  done; done
  log "done"
  tar czf "$out/nccl-tests-raw.tar.gz" -C $work .
  exit 0
fi
ops="all_reduce all_gather reduce_scatter alltoall broadcast reduce sendrecv"
for op in $ops; do one "g4-$op" 4 $op; done
one g4-all_reduce-Tree-Simple 4 all_reduce NCCL_ALGO=Tree NCCL_PROTO=Simple
for g in 2 3; do for op in $ops; do one "g$g-$op" $g $op; done; done
for g in 4 2 3; do
  one "g$g-all_reduce-graph20" $g all_reduce -- -e 256M -G 20
done
log "done"
tar czf "$out/nccl-tests-raw.tar.gz" -C $work .
