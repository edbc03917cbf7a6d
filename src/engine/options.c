/* The engine's option families (software stacks, overlap, a2a, attention
 * placement) and the rule between its options that no single option
 * checks. */
#include <stdio.h>
#include <string.h>

#include "engine_impl.h"

/* Stacks: the attention kernel each runs unless --attn says otherwise
 * (flash: FlashAttention, its version by GPU, nvl_attn_flash), and the
 * libraries each calls per tensor-core type (bf16, fp8, fp4; a set: the
 * stack's autotuner runs the fastest member).  Its kernels per step are
 * plan.c's table.
 * torch: F.linear and torch._scaled_mm call cuBLAS(Lt).
 * fused: TensorRT-LLM's PyTorch backend, tensorrt_llm/_torch/modules/
 *   linear.py: UnquantizedLinearMethod.apply calls F.linear or
 *   trtllm.cublas_mm (BF16); FP8QDQLinearMethod.apply (per-tensor FP8, the
 *   ModelOpt checkpoints) trtllm.cublas_scaled_mm (cuda_scaled_mm only for
 *   m <= 8 with enable_cuda_core); NVFP4LinearMethod.apply trtllm.
 *   nvfp4_gemm, CUTLASS's FP4GemmRunner in the releases behind the
 *   published serving figures (tests/data/calibration/published-
 *   serving.csv).  cuBLASLt joined as an opt-in backend later (TensorRT-LLM
 *   PR 7943), then as a member of the autotuned nvfp4_allowed_backends
 *   (model_config.py: cutlass, cublaslt, cuda_core; PR 10503): a user
 *   modelling those releases picks --library cublaslt. */
#define LIB(l) NVL_GEMM_LIB_SET(l)
static const struct {
    nvl_member_t id;
    nvl_attn_impl_t attn;
    bool attn_flash;
    unsigned libs[NVL_WDT_COUNT];
} stacks[NVL_STACK_COUNT] = {
    [NVL_STACK_TORCH] = {.id = {"torch", "PyTorch with CUDA graphs, one "
                                         "kernel per F.* call"},
                         .attn = NVL_ATTN_SDPA, .attn_flash = false,
                         .libs = {[NVL_WDT_BF16] = LIB(NVL_GEMM_CUBLASLT),
                                  [NVL_WDT_FP8] = LIB(NVL_GEMM_CUBLASLT),
                                  [NVL_WDT_FP4] = LIB(NVL_GEMM_CUBLASLT)}},
    [NVL_STACK_FUSED] = {.id = {"fused", "a serving engine's fused kernels "
                                         "(TensorRT-LLM)"},
                         .attn = NVL_ATTN_FA3, .attn_flash = true,
                         .libs = {[NVL_WDT_BF16] = LIB(NVL_GEMM_CUBLASLT),
                                  [NVL_WDT_FP8] = LIB(NVL_GEMM_CUBLASLT),
                                  [NVL_WDT_FP4] = LIB(NVL_GEMM_CUTLASS)}},
    /* torch.compile'd layers call the same aten ops for their GEMMs
     * (cuBLAS(Lt)) and attention (SDPA: cuDNN on Hopper) as torch */
    [NVL_STACK_COMPILED] = {.id = {"compiled", "the torch layer compiled "
                                               "by torch.compile (Inductor's "
                                               "Triton kernels)"},
                            .attn = NVL_ATTN_SDPA, .attn_flash = false,
                            .libs = {[NVL_WDT_BF16] = LIB(NVL_GEMM_CUBLASLT),
                                     [NVL_WDT_FP8] = LIB(NVL_GEMM_CUBLASLT),
                                     [NVL_WDT_FP4] = LIB(NVL_GEMM_CUBLASLT)}},
};
const nvl_family_t nvl_stack_family =
    NVL_FAMILY("stack", "software stacks: the kernels a step runs "
                        "(--stack)", stacks);

/* --fusion, the older names of the first two stacks: a row per stack
 * (compiled came later and has none). */
static const struct {
    nvl_member_t id;
} fusions[] = {
    [NVL_STACK_TORCH] = {{"none", "older name of the torch stack"}},
    [NVL_STACK_FUSED] = {{"typical", "older name of the fused stack"}},
};
const nvl_family_t nvl_fusion_family =
    NVL_FAMILY("fusion", "older names of the stacks, a row per stack "
                         "(--fusion)", fusions);

const char *nvl_stack_name(nvl_stack_t stack)
{
    return nvl_family_name(&nvl_stack_family, (int)stack);
}

nvl_attn_impl_t nvl_stack_attn(const nvl_topo_t *topo, nvl_stack_t stack)
{
    if ((unsigned)stack >= NVL_STACK_COUNT)
        return NVL_ATTN_SDPA;
    return stacks[stack].attn_flash ? nvl_attn_flash(topo)
                                    : stacks[stack].attn;
}

void nvl_stack_cost(nvl_stack_t stack, nvl_cost_cfg_t *cost)
{
    if ((unsigned)stack >= NVL_STACK_COUNT)
        stack = NVL_STACK_TORCH;
    memcpy(cost->stack_libs, stacks[stack].libs, sizeof cost->stack_libs);
    cost->torch_grouped = stack != NVL_STACK_FUSED;
}

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

/* Values: opts.ep_comm, a row per nvl_ep_comm_t. */
static const struct {
    nvl_member_t id;
} ep_comms[NVL_EP_COMM_COUNT] = {
    [NVL_EP_COMM_AUTO] = {.id = {.name = "auto",
                                 .doc = "allgather with --attn-parallel dp, "
                                        "else alltoall"}},
    [NVL_EP_COMM_ALLTOALL] = {.id = {.name = "alltoall",
                                     .doc = "dispatch and combine all-to-alls "
                                            "(--a2a says how)"}},
    [NVL_EP_COMM_ALLGATHER] = {
        .id = {.name = "allgather",
               .doc = "TensorRT-LLM's CUTLASS MoE under attention DP "
                      "without MNNVL: rows allgathered, partial outputs "
                      "reduce-scattered (needs --attn-parallel dp)"}},
};
const nvl_family_t nvl_engine_ep_comm_family =
    NVL_FAMILY("ep-comm", "an expert-parallel layer's exchange under "
                          "attention DP (--ep-comm)",
               ep_comms);

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
    if (o->ep_comm == NVL_EP_COMM_ALLGATHER && !o->place.attn_dp) {
        nvl_report("--ep-comm allgather needs --attn-parallel dp: the "
                   "allgather gathers every rank's own sequences' rows");
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
