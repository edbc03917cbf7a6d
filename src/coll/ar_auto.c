/* auto: the allreduce TensorRT-LLM's AUTO strategy runs, by its rules as
 * published (docs/collectives.md, "auto", cites the versions):
 *
 * 1. A TP group spanning more than one node (here: one compute tray,
 *    [node] gpus_per_tray; TensorRT-LLM's Mapping.is_multi_node) on
 *    multi-node NVLink with multicast (MNNVLAllReduce.is_mnnvl,
 *    tensorrt_llm/_torch/distributed/ops.py; here: the group has NVLS)
 *    runs the MNNVL kernels: one-shot while tokens x hidden x ranks x
 *    element size <= 16 x 4 x 8192 bytes (cpp/tensorrt_llm/thop/
 *    allreduceOp.cpp kOneShotSizeThreshold: bytes x n <= 512 KiB), else
 *    two-shot.  Both move data through multicast memory: nvls-oneshot,
 *    nvls-twoshot.  Without multicast, NCCL.
 * 2. Within a node (cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp
 *    selectImplementation; customAllReduceUtils.h
 *    getMaxRequiredWorkspaceSize): NCCL above the workspace (16 MB at up
 *    to 2 ranks, 8 MB above), or for an odd rank count or more than
 *    MAX_RANKS_PER_NODE = 16 ranks (isCustomAllReduceSupported);
 *    otherwise one-shot at up to 2 ranks, at up to 4 below 1 MB, above 4
 *    below 500 KB; NCCL beyond.
 * Sizes are the model's element type (the time dtype), as TensorRT-LLM
 * counts the bf16 activations. */
#include "coll_impl.h"

/* The kernels auto may run, each a row of its own file. */
extern const nvl_ar_row_t nvl_ar_oneshot, nvl_ar_nvls_oneshot,
    nvl_ar_nvls_twoshot;

/* allreduceOp.cpp: kOneShotSizeThreshold = 16 * 4 * 8192 */
#define MNNVL_ONESHOT_MAX_BYTES ((size_t)16 * 4 * 8192)
/* customAllReduceKernels.h MAX_RANKS_PER_NODE */
#define CUSTOM_MAX_RANKS 16

static bool spans_trays(const nvl_comm_t *c)
{
    uint32_t first = nvl_topo_tray_of(c->topo, c->gpus[0]);
    for (int i = 1; i < c->size; i++)
        if (nvl_topo_tray_of(c->topo, c->gpus[i]) != first)
            return true;
    return false;
}

const nvl_ar_row_t *nvl_ar_auto_pick(const nvl_comm_t *c, size_t bytes)
{
    int n = c->size;
    if (n < 2 || c->domains > 1)
        return NULL; /* NCCL's: no NVLink between every pair */
    if (spans_trays(c)) {
        if (!c->nvls)
            return NULL;
        return bytes * (size_t)n <= MNNVL_ONESHOT_MAX_BYTES
                   ? &nvl_ar_nvls_oneshot
                   : &nvl_ar_nvls_twoshot;
    }
    size_t workspace = n <= 2 ? 16000000 : 8000000;
    if (bytes > workspace || n % 2 != 0 || n > CUSTOM_MAX_RANKS)
        return NULL;
    if (n <= 2)
        return &nvl_ar_oneshot;
    if (n <= 4)
        return bytes < 1000000 ? &nvl_ar_oneshot : NULL;
    return bytes < 500000 ? &nvl_ar_oneshot : NULL;
}
