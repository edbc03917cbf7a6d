#!/bin/bash
# The measurements of tests/data/calibration/hgx-h100-x4 on a lent machine of
# several GPUs on NVSwitch (kind nvidia-h100-x4), in the repository root there:
#
#   scripts/device/measure-hgx.sh coll  "$OUT"   # collectives at 2, 3, 4 GPUs (~7 min)
#   scripts/device/measure-hgx.sh steps "$OUT"   # TP 1, 2, 4 steps (~9.5 min)
#   scripts/device/measure-hgx.sh check "$OUT"   # the steps script on a tiny grid
#   scripts/device/measure-hgx.sh repeat "$OUT"  # TP 2 alone, then TP 4: the spread (~5 min)
#   scripts/device/measure-hgx.sh serve "$OUT"   # serving-like steps only, TP 2 then TP 4 (~4 min)
#   QUICK=1 scripts/device/measure-hgx.sh serve "$OUT"   # the same on a tiny grid (a check)
#
# NVLink multicast stays off in every process (the machine's rule).  Each
# phase leaves one tarball and its log in OUT (the device tool returns at
# most 8 files).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
what=${1:?coll, steps, repeat or check}
out=${2:?output folder}
work=/tmp/hgx-$what
rm -rf "$work" && mkdir -p "$work"
steps=scripts/device/measure-steps.py
case $what in
  check)
    CUDA_VISIBLE_DEVICES=0,1 timeout 170 torchrun --nproc_per_node=2 --master_port=29611 \
      $steps --tp 2 --quick --models qwen2.5-7b,qwen3-32b --serve nccl,oneshot,twoshot \
      --trace-tp decode:2:256 --out "$work/tp2" 2>&1 | tee "$out/check.log"
    ;;
  coll)
    { nvidia-smi topo -m; nvidia-smi -q | grep -iE 'driver|cuda version|product name|bus id'
      python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'
    } > "$work/machine.txt" 2>&1
    python3 scripts/device/measure-coll-h100.py --driver --gpus 2,3,4 --max-log2 32 \
      --dtypes bf16 --forced-at 4 --pass-timeout 150 --deadline "${DEADLINE:-420}" \
      --out "$work" 2>&1 | tee "$out/coll.log"
    ;;
  steps)
    budget=${BUDGET:-245}
    # TP 1 on GPU 0 and TP 2 on GPUs 1 and 2 at the same time (disjoint GPUs;
    # the pair's traffic crosses NVSwitch, GPU 0 sends none), then TP 4 alone.
    CUDA_VISIBLE_DEVICES=0 timeout $((budget + 25)) python3 $steps --serve none \
      --budget-s "$budget" --out "$work/tp1" > "$work/tp1.log" 2>&1 &
    CUDA_VISIBLE_DEVICES=1,2 timeout $((budget + 25)) torchrun --nproc_per_node=2 \
      --master_port=29612 $steps --tp 2 --serve nccl,oneshot,twoshot --budget-s "$budget" \
      --out "$work/tp2" > "$work/tp2.log" 2>&1
    wait
    timeout $((budget + 25)) torchrun --nproc_per_node=4 --master_port=29614 $steps --tp 4 \
      --serve nccl,oneshot,twoshot --trace-tp decode:16:4096 --budget-s "$budget" \
      --out "$work/tp4" 2>&1 | tee "$work/tp4.log"
    tail -5 "$work/tp1.log" "$work/tp2.log"
    ;;
  repeat)
    budget=${BUDGET:-150}
    CUDA_VISIBLE_DEVICES=0,1 timeout $((budget + 25)) torchrun --nproc_per_node=2 \
      --master_port=29622 $steps --tp 2 --serve nccl,oneshot,twoshot --budget-s "$budget" \
      --out "$work/tp2" 2>&1 | tee "$work/tp2.log"
    timeout $((budget + 25)) torchrun --nproc_per_node=4 --master_port=29624 $steps --tp 4 \
      --serve nccl,oneshot,twoshot --budget-s "$budget" --out "$work/tp4" 2>&1 | tee "$work/tp4.log"
    ;;
  serve)
    # The serving-like decode alone (no torch reference grid): TP 2 on GPUs
    # 0 and 1, then TP 4; batch 16 at ctx 4096 and 256 at ctx 1024 profiled
    # for every all-reduce (tests/data/calibration/h200-x2-serve).
    budget=${BUDGET:-110}
    quick=${QUICK:+--quick}
    for tp in ${TPS:-2 4}; do
      CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((tp - 1))) timeout $((budget + 40)) \
        torchrun --nproc_per_node=$tp --master_port=2963$tp $steps --tp $tp --serve-only \
        --serve nccl,oneshot,twoshot --trace-tp decode:16:4096,decode:256:1024 $quick --budget-s "$budget" \
        --out "$work/tp$tp" > "$work/tp$tp.log" 2>&1
      tail -4 "$work/tp$tp.log"
    done
    ;;
  *) echo "unknown phase $what" >&2; exit 2 ;;
esac
tar czf "$out/$what.tgz" -C "$work" .
ls -la "$out"
