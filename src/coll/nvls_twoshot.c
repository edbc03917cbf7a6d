/* nvls-twoshot: GPU b reads its 1/n of the buffer through multimem
 * ld_reduce and writes the sum to every GPU with one multimem.st
 * (multicast), chunk after chunk in the same threads (PyTorch 2.11
 * torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu
 * multimem_all_reduce_kernel; NCCL's NVLS allreduce within one domain;
 * TensorRT-LLM cpp/tensorrt_llm/kernels/communicationKernels/
 * mnnvlTwoShotAllreduceKernels.cu twoshot path, on multicast memory).
 *
 *   barrier (acquire only) -> for each 16 bytes of block b: ld_reduce,
 *   multimem.st -> barrier (release: waits for the multicast stores)
 *
 * torch's launch: up to 8 blocks of 1024 threads over the S/n block.
 * Bytes per GPU: in S/n (its sums) + S (every block's sum, multicast to
 * all), out S (its copy of the n blocks, fetched by the switch) + S/n
 * (its sums, multicast), pipelined at min(port, nvls_bw); 2 S/n through
 * the SMs.  Needs NVLink SHARP switches.
 * Reduction order: modeled as member order in float, as nvls-oneshot. */
#include "coll_impl.h"

static double nvls_twoshot_predict(const nvl_comm_t *c, double bytes)
{
    double n = c->size;
    nvl_ar_cost_t k = {.open_fence = false,
                       .stores_peers = true,
                       .max_blocks = 8,
                       .threads = 1024,
                       .slice_bytes = bytes / n,
                       .serial_loads = 1,
                       .sm_bytes = 2,
                       .port_bytes = bytes + bytes / n,
                       .switch_reduce = true};
    return nvl_ar_model_s(c, &k);
}

const nvl_ar_row_t nvl_ar_nvls_twoshot = {
    .needs_nvls = true,
    .order = NVL_AR_ORDER_MEMBER,
    .predict_s = nvls_twoshot_predict,
};
