/* twoshot: a reduce-scatter by peer loads, then an allgather by peer
 * stores (PyTorch 2.11 torch/csrc/distributed/c10d/symm_mem/
 * CUDASymmetricMemoryOps.cu two_shot_all_reduce_kernel_inplace;
 * TensorRT-LLM cpp/tensorrt_llm/kernels/customAllReduceKernels.cu
 * twoShotAllReduceKernel; vLLM csrc/custom_all_reduce.cuh
 * cross_device_reduce_2stage).
 *
 *   barrier (acquire only) -> GPU b, each thread: load its 16 bytes of
 *   block b from all n buffers, sum, store the sum into all n buffers;
 *   next 16 bytes ... -> barrier (release: waits for the stores)
 *
 * Two flag barriers, the kernel's first and last (torch's
 * sync_remote_blocks<false, true> before the loads, <true, true> after
 * the stores; vLLM's barrier_at_start and the barrier between its halves,
 * its next call's start barrier closing the gather).  torch's launch: up
 * to 24 blocks of 1024 threads, 16-byte vectors, over the S/n block;
 * loads together for 2, 4, 8 ranks, one after another elsewhere.
 * Bytes per GPU: (n-1)/n S loaded and (n-1)/n S stored each way, 2 (n-1)
 * bytes through each SM per byte of its block.
 *   T = kernel + 2 flag + max(iterations x serial x load,
 *       load + 2 (n-1)/n S / peer port, load + SM's bytes / sm_peer_bw)
 *       + max(fence, 2 flag) + 2 flag
 * Reduction order: block b (nvl_ar_blocks: vLLM's split) summed from
 * member b on, x_b + x_{b+1} + ... + x_{b-1}, accumulated in float (vLLM
 * reads its peers' pointers rotated by its rank, (rank + i) % ngpus). */
#include "coll_impl.h"

static double twoshot_predict(const nvl_comm_t *c, double bytes)
{
    int n = c->size;
    double share = bytes * (n - 1) / n;
    nvl_ar_cost_t k = {.open_fence = false,
                       .stores_peers = true,
                       .max_blocks = 24,
                       .threads = 1024,
                       .slice_bytes = bytes / n,
                       .serial_loads = nvl_ar_serial_loads(n),
                       .sm_bytes = 2.0 * (n - 1),
                       .port_bytes = 2 * share,
                       .switch_reduce = false};
    return nvl_ar_model_s(c, &k);
}

const nvl_ar_row_t nvl_ar_twoshot = {
    .needs_nvls = false,
    .order = NVL_AR_ORDER_OWNER,
    .predict_s = twoshot_predict,
};
