/* nvls-oneshot: every GPU reads the whole buffer through the switch's
 * multimem.ld_reduce (the NVSwitch fetches each element from every GPU
 * and returns the sum) and stores it locally (PTX ISA multimem.ld_reduce;
 * PyTorch 2.11 torch/csrc/distributed/c10d/symm_mem/
 * CUDASymmetricMemoryOps.cu multimem_one_shot_reduce_kernel with every
 * rank its own root; TensorRT-LLM's multicast kernels, cpp/tensorrt_llm/
 * kernels/communicationKernels/mnnvlTwoShotAllreduceKernels.cu oneshot
 * path, which pushes with multimem.st instead and moves the same bytes
 * the other way).
 *
 *   barrier (acquire only) -> ld_reduce(whole buffer) -> local store ->
 *   barrier (release)
 *
 * torch's launch: up to 8 blocks of 1024 threads, 16 bytes each; one
 * ld_reduce in flight per thread and iteration.  Bytes per GPU: in S (the
 * sums), out n S (the switch fetches this GPU's copy once for each of the
 * n readers), at min(port, [nvlink] nvls_bw); S through the SMs.
 * Needs NVLink SHARP switches (as NCCL's NVLS).
 * Reduction order: the switch's; modeled as member order
 * x_0 + ... + x_{n-1} in float (multimem.ld_reduce .acc::f32), the same
 * bits on every GPU. */
#include "coll_impl.h"

static double nvls_oneshot_predict(const nvl_comm_t *c, double bytes)
{
    nvl_ar_cost_t k = {.open_fence = false,
                       .stores_peers = false,
                       .max_blocks = 8,
                       .threads = 1024,
                       .slice_bytes = bytes,
                       .serial_loads = 1,
                       .sm_bytes = 1,
                       .port_bytes = bytes * c->size,
                       .switch_reduce = true};
    return nvl_ar_model_s(c, &k);
}

const nvl_ar_row_t nvl_ar_nvls_oneshot = {
    .needs_nvls = true,
    .order = NVL_AR_ORDER_MEMBER,
    .predict_s = nvls_oneshot_predict,
};
