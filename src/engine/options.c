/* The engine's option families (overlap, a2a, attention placement) and
 * the rule between its options that no single option checks. */
#include <stdio.h>
#include <string.h>

#include "engine_impl.h"

static const struct {
    nvl_member_t id;
} overlaps[NVL_OVERLAP_COUNT] = {
    [NVL_OVERLAP_NONE] = {{"none", "a row-parallel GEMM, then its "
                                   "allreduce"}},
    [NVL_OVERLAP_ASYNC_TP] = {{"async-tp", "the GEMM in chunks, each "
                                           "chunk's allreduce on a "
                                           "communication stream (async "
                                           "TP, FLUX)"}},
};
const nvl_family_t nvl_overlap_family =
    NVL_FAMILY("overlap", "tensor-parallel communication beside the "
                          "row-parallel GEMMs (--overlap)", overlaps);

/* Values: opts.a2a_onesided. */
static const struct {
    nvl_member_t id;
} a2as[2] = {
    {{"nccl", "NCCL send/recv groups"}},
    {{"onesided", "one-sided NVLink writes into the peers' buffers "
                  "(DeepEP: low-latency mode in decode, high-throughput in "
                  "prefill)"}},
};
const nvl_family_t nvl_engine_a2a_family =
    NVL_FAMILY("a2a", "expert parallelism's dispatch and combine (--a2a)",
               a2as);

/* Values: opts.place.attn_dp. */
static const struct {
    nvl_member_t id;
} attn_parallels[2] = {
    {{"tp", "attention tensor-parallel over all ranks"}},
    {{"dp", "attention data-parallel: each rank its own sequences"}},
};
const nvl_family_t nvl_attn_parallel_family =
    NVL_FAMILY("attn-parallel", "a mixture of experts' attention "
                                "placement (--attn-parallel)",
               attn_parallels);

const char *nvl_overlap_name(nvl_overlap_t overlap)
{
    return nvl_family_name(&nvl_overlap_family, (int)overlap);
}

nvl_status_t nvl_engine_opts_check(const nvl_engine_opts_t *o)
{
    if (o->fuse_allreduce_norm && o->allreduce == NVL_AR_NCCL) {
        /* TensorRT-LLM's NCCL strategies run ncclAllReduce and then a
         * residualRmsNorm kernel of their own (allreducePlugin.cpp) */
        char kernels[256] = "";
        const nvl_family_t *f = &nvl_ar_impl_family;
        size_t used = 0, n = 0;
        for (size_t i = 0; i < f->n_rows; i++)
            n += i != NVL_AR_NCCL;
        for (size_t i = 0, k = 0; i < f->n_rows; i++) {
            if (i == NVL_AR_NCCL)
                continue;
            k++;
            used += (size_t)snprintf(kernels + used, sizeof kernels - used,
                                     "%s%s", k == 1 ? "" : k == n ? " or "
                                                                  : ", ",
                                     nvl_family_name(f, (int)i));
        }
        nvl_report("--fuse-allreduce-norm needs --allreduce %s: with nccl "
                   "the residual add and RMSNorm stay a kernel of their "
                   "own, as in TensorRT-LLM", kernels);
        return NVL_ERR_INVALID;
    }
    if (o->pp > 1 && o->place.attn_dp) {
        nvl_report("--pp %u with --attn-parallel dp: the pipeline's "
                   "microbatches split the whole batch, data-parallel "
                   "attention splits it again over a stage's ranks; this "
                   "emulator runs one or the other (use --attn-parallel tp "
                   "with --pp)", o->pp);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}
