/* nvls-twoshot: GPU b reads its 1/n of the buffer through multimem
 * ld_reduce and writes the sum to every GPU with one multimem.st
 * (multicast), chunk after chunk in the same threads (NCCL's NVLS
 * allreduce within one domain; TensorRT-LLM cpp/tensorrt_llm/kernels/
 * communicationKernels/mnnvlTwoShotAllreduceKernels.cu twoshot path, on
 * multicast memory).
 *
 *   barrier -> for each chunk of block b: ld_reduce, multimem.st -> barrier
 *
 * Bytes per GPU: in S/n (its sums) + S (every block's sum, multicast to
 * all), out S (its copy of the n blocks, fetched by the switch) + S/n
 * (its sums, multicast), pipelined in one phase at min(port, nvls_bw).
 *   T = kernel + 2 syncs + 3 hops + (n+1)/n S / min(port, nvls_bw)
 * Needs NVLink SHARP switches.
 * Reduction order: modeled as member order in float, as nvls-oneshot. */
#include "coll_impl.h"

static double nvls_twoshot_predict(const nvl_comm_t *c, double bytes)
{
    double n = c->size;
    nvl_ar_cost_t k = {.syncs = 2, .first_hops = 3, .phases = 1,
                       .in_bytes = {bytes / n + bytes},
                       .out_bytes = {bytes + bytes / n},
                       .switch_reduce = {true}};
    return nvl_ar_model_s(c, &k);
}

const nvl_ar_row_t nvl_ar_nvls_twoshot = {
    .needs_nvls = true,
    .order = NVL_AR_ORDER_MEMBER,
    .predict_s = nvls_twoshot_predict,
};
