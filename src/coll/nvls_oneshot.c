/* nvls-oneshot: every GPU reads the whole buffer through the switch's
 * multimem.ld_reduce (the NVSwitch fetches each element from every GPU
 * and returns the sum) and stores it locally (PTX ISA multimem.ld_reduce;
 * TensorRT-LLM's multicast kernels, cpp/tensorrt_llm/kernels/
 * communicationKernels/mnnvlTwoShotAllreduceKernels.cu oneshot path,
 * which pushes with multimem.st instead and moves the same bytes the
 * other way).
 *
 *   barrier -> ld_reduce(whole buffer) -> local store -> barrier
 *
 * Bytes per GPU: in S (the sums), out n S (the switch fetches this GPU's
 * copy once for each of the n readers); the reduction runs at the
 * switch's rate ([nvlink] nvls_bw) when that is lower than the port's.
 *   T = kernel + 2 syncs + 2 hops + max(S, n S) / min(port, nvls_bw)
 * Needs NVLink SHARP switches (as NCCL's NVLS).
 * Reduction order: the switch's; modeled as member order
 * x_0 + ... + x_{n-1} in float (multimem.ld_reduce .acc::f32), the same
 * bits on every GPU. */
#include "coll_impl.h"

static double nvls_oneshot_predict(const nvl_comm_t *c, double bytes)
{
    nvl_ar_cost_t k = {.syncs = 2, .first_hops = 2, .phases = 1,
                       .in_bytes = {bytes},
                       .out_bytes = {bytes * c->size},
                       .switch_reduce = {true}};
    return nvl_ar_model_s(c, &k);
}

const nvl_ar_row_t nvl_ar_nvls_oneshot = {
    .needs_nvls = true,
    .order = NVL_AR_ORDER_MEMBER,
    .predict_s = nvls_oneshot_predict,
};
