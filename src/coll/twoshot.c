/* twoshot: a reduce-scatter by peer loads, then an allgather by peer
 * stores (torch symmetric memory two_shot_all_reduce_kernel_inplace,
 * torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu;
 * TensorRT-LLM cpp/tensorrt_llm/kernels/customAllReduceKernels.cu
 * twoShotAllReduceKernel; vLLM csrc/custom_all_reduce.cuh
 * cross_device_reduce_2stage).
 *
 *   barrier -> GPU b loads block b of every peer, sums it, stores the
 *              sum into every peer -> barrier
 *
 * Two flag barriers, the kernel's first and last (torch's
 * sync_remote_blocks before the loads and after the stores; vLLM's
 * barrier_at_start and the barrier between its halves, its next call's
 * start barrier closing the gather). A third barrier between the halves
 * is not there: the stores of block b are ordered before the closing
 * barrier's release, the peers read them after its acquire.
 * Bytes per GPU, per phase: (n-1)/n S in and out (loads of its block
 * from n-1 peers while n-1 peers load theirs from it; then the same as
 * stores); the two halves overlap across blocks but move that much each.
 *   T = kernel + 2 syncs + 3 hops (a load's round trip, a store)
 *       + 2 (n-1)/n S / port
 * Reduction order: block b (nvl_ar_blocks: vLLM's split) summed from
 * member b on, x_b + x_{b+1} + ... + x_{b-1}, accumulated in float (vLLM
 * reads its peers' pointers rotated by its rank, (rank + i) % ngpus). */
#include "coll_impl.h"

static double twoshot_predict(const nvl_comm_t *c, double bytes)
{
    double share = bytes * (c->size - 1) / c->size;
    nvl_ar_cost_t k = {.syncs = 2, .first_hops = 3, .phases = 2,
                       .in_bytes = {share, share},
                       .out_bytes = {share, share}};
    return nvl_ar_model_s(c, &k);
}

const nvl_ar_row_t nvl_ar_twoshot = {
    .needs_nvls = false,
    .order = NVL_AR_ORDER_OWNER,
    .predict_s = twoshot_predict,
};
