#!/bin/bash
# The serving-like prefill of tests/data/calibration/h200-prefill (the
# compiled layers of measure-steps.py --serve, prompts of 128-8192 tokens at
# batch 1-8) on a lent machine of two GPUs (kind nvidia-h200-x2 or
# nvidia-h100-x2), in the repository root there:
#
#   scripts/device/measure-prefill.sh check "$OUT"   # TP 2 on a tiny grid (~1 min)
#   scripts/device/measure-prefill.sh steps "$OUT"   # TP 1 on GPU 0, then TP 2 (~5 min)
#
# NVLink multicast stays off in every process (the machine's rule).  Each
# phase leaves one tarball and its log in OUT.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
what=${1:?check or steps}
out=${2:?output folder}
work=/tmp/prefill-$what
rm -rf "$work" && mkdir -p "$work"
steps="scripts/device/measure-steps.py --serve-only --serve-phases prefill"
case $what in
  check)
    timeout 150 torchrun --nproc_per_node=2 --master_port=29631 $steps --tp 2 --quick \
      --models qwen2.5-7b --serve nccl --trace-tp prefill:1:256 --out "$work/tp2" \
      2>&1 | tee "$out/check.log"
    grep -q "failures: \[\]" "$out/check.log" || exit 1
    ;;
  steps)
    budget=${BUDGET:-150}
    { nvidia-smi topo -m; nvidia-smi -q | grep -iE 'driver|cuda version|product name|bus id'
      python3 -c 'import torch, triton; print(torch.__version__, torch.version.cuda,
torch.cuda.nccl.version(), "triton", triton.__version__)'
    } > "$work/machine.txt" 2>&1
    CUDA_VISIBLE_DEVICES=0 timeout $((budget + 40)) python3 $steps --serve none \
      --models qwen2.5-7b,qwen3-32b --trace-tp prefill:1:2048,prefill:8:1024 \
      --budget-s "$budget" --out "$work/tp1" 2>&1 | tee "$work/tp1.log"
    timeout $((budget + 40)) torchrun --nproc_per_node=2 --master_port=29632 $steps --tp 2 \
      --serve nccl --models qwen2.5-7b,qwen3-32b --trace-tp prefill:1:2048 \
      --budget-s "$budget" --out "$work/tp2" 2>&1 | tee "$work/tp2.log"
    ;;
  *) echo "unknown phase $what" >&2; exit 2 ;;
esac
tar czf "$out/$what.tgz" -C "$work" .
ls -la "$out"
