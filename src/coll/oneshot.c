/* oneshot: every GPU loads every peer's whole buffer over NVLink (peer
 * access to IPC-registered buffers) and reduces it locally; all GPUs
 * compute the same sums in the same order (TensorRT-LLM
 * cpp/tensorrt_llm/kernels/customAllReduceKernels.cu oneShotAllReduceKernel;
 * vLLM csrc/custom_all_reduce.cuh cross_device_reduce_1stage).
 *
 *   barrier (flags to every peer) -> load x_0..x_{n-1} and sum -> barrier
 *
 * Bytes per GPU: in (n-1) S (the peers' buffers), out (n-1) S (its own
 * buffer, read by each of the n-1 peers), one phase at the port rate.
 *   T = kernel + 2 syncs + 2 hops (the first load's round trip)
 *       + (n-1) S / port
 * Reduction order: x_0 + x_1 + ... + x_{n-1} on every GPU, accumulated in
 * float (vLLM packed_reduce: "we don't reorder the address so the
 * accumulation order is the same for all ranks"). */
#include "coll_impl.h"

static double oneshot_predict(const nvl_comm_t *c, double bytes)
{
    double peers = c->size - 1;
    nvl_ar_cost_t k = {.syncs = 2, .first_hops = 2, .phases = 1,
                       .in_bytes = {peers * bytes},
                       .out_bytes = {peers * bytes}};
    return nvl_ar_model_s(c, &k);
}

const nvl_ar_row_t nvl_ar_oneshot = {
    .needs_nvls = false,
    .order = NVL_AR_ORDER_MEMBER,
    .predict_s = oneshot_predict,
};
