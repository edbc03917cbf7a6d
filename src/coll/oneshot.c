/* oneshot: every GPU loads every peer's whole buffer over NVLink (peer
 * access to IPC-registered buffers) and reduces it locally; all GPUs
 * compute the same sums in the same order (PyTorch 2.11
 * torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu
 * one_shot_all_reduce_kernel; TensorRT-LLM
 * cpp/tensorrt_llm/kernels/customAllReduceKernels.cu
 * oneShotAllReduceKernel; vLLM csrc/custom_all_reduce.cuh
 * cross_device_reduce_1stage).
 *
 *   barrier (release, acquire) -> each thread: load its 16 bytes of all n
 *   buffers, sum, store locally; next 16 bytes ... -> barrier (release)
 *
 * torch's launch: up to 24 blocks of 512 threads (one_shot_all_reduce_
 * max_num_blocks / max_num_threads: "register-intensive"), 16-byte
 * vectors; the n loads of an iteration go out together where the kernel
 * is compiled for n (2, 4, 8), one after another elsewhere
 * (nvl_ar_serial_loads).  Bytes per GPU: in (n-1) S (the peers'
 * buffers), out (n-1) S (its own, read by each peer); through each SM
 * (n-1) bytes per byte of S.
 *   T = kernel + (fence + 2 flag) + max(iterations x serial x load,
 *       load + (n-1) S / peer port, load + SM's bytes / sm_peer_bw)
 *       + (fence + 2 flag)
 * Reduction order: x_0 + x_1 + ... + x_{n-1} on every GPU, accumulated in
 * float (vLLM packed_reduce: "we don't reorder the address so the
 * accumulation order is the same for all ranks"). */
#include "coll_impl.h"

static double oneshot_predict(const nvl_comm_t *c, double bytes)
{
    int n = c->size;
    nvl_ar_cost_t k = {.open_fence = true,
                       .stores_peers = false,
                       .max_blocks = 24,
                       .threads = 512,
                       .slice_bytes = bytes,
                       .serial_loads = nvl_ar_serial_loads(n),
                       .sm_bytes = n - 1,
                       .port_bytes = (n - 1) * bytes,
                       .switch_reduce = false};
    return nvl_ar_model_s(c, &k);
}

const nvl_ar_row_t nvl_ar_oneshot = {
    .needs_nvls = false,
    .order = NVL_AR_ORDER_MEMBER,
    .predict_s = oneshot_predict,
};
