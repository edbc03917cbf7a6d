/* vLLM's Triton fused_moe on Hopper: which expert GEMMs run it, the rows
 * of its tile (BLOCK_SIZE_M, each expert's rows padded to it), its rate
 * and its fixed work a tile (include/nvlemu/cost.h; docs/cost-model.md,
 * "vLLM's Triton fused_moe"); cost.c's grouped GEMM prices it with these. */
#include "nvlemu/cost.h"

#include <math.h>

#include "cost_impl.h"

/* vLLM v0.11.0 runs BF16 and block-FP8 experts on SM90 in its Triton
 * fused_moe kernel (vllm/model_executor/layers/fused_moe/fused_moe.py):
 * moe_align_block_size sorts the (token, expert) pairs by expert and pads
 * each expert's to whole BLOCK_SIZE_M blocks, and a program multiplies one
 * block (its rows gathered through the sorted ids: no gather kernel) by a
 * BLOCK_SIZE_N column panel over K in BLOCK_SIZE_K steps, block-FP8 with
 * each k step's activation and weight scales applied to the product.  Its
 * tile comes from try_get_optimal_moe_config: the shipped file for
 * (E, N = the shard's intermediate, device, dtype, block shape) at the key
 * nearest the step's tokens, else get_default_config.  Block FP8 on
 * Hopper takes Triton unless DeepGEMM is installed (GPUStack's vLLM 0.11.0
 * image installs vllm, FlashInfer and LMCache, not deep_gemm:
 * github.com/gpustack/runner, pack/cuda/Dockerfile). */

/* BLOCK_SIZE_M of vLLM's configs/E=128,N=192,device_name=NVIDIA_H100_80GB_
 * HBM3.json (Qwen3-235B-A22B at TP 8, Qwen3-30B-A3B at TP 4), by key: the
 * step's tokens; the nearest key applies. */
typedef struct {
    uint32_t tokens;
    uint32_t block_m;
} triton_key_t;

static const triton_key_t h100_e128_n192[] = {
    {.tokens = 1, .block_m = 16},     {.tokens = 2, .block_m = 16},
    {.tokens = 4, .block_m = 16},     {.tokens = 8, .block_m = 16},
    {.tokens = 16, .block_m = 16},    {.tokens = 24, .block_m = 16},
    {.tokens = 32, .block_m = 16},    {.tokens = 48, .block_m = 16},
    {.tokens = 64, .block_m = 16},    {.tokens = 96, .block_m = 16},
    {.tokens = 128, .block_m = 16},   {.tokens = 256, .block_m = 32},
    {.tokens = 512, .block_m = 64},   {.tokens = 1024, .block_m = 64},
    {.tokens = 1536, .block_m = 128}, {.tokens = 2048, .block_m = 128},
    {.tokens = 3072, .block_m = 128}, {.tokens = 4096, .block_m = 128}};
#define NVL_TRITON_TUNED_EXPERTS 128
#define NVL_TRITON_TUNED_INTER 192

/* get_default_config: block FP8 64 rows (BLOCK_SIZE_N and _K the 128 x 128
 * scale block, GROUP_SIZE_M 32, 4 warps, 3 stages); unquantized 16 rows
 * while the tokens are at most the experts, else 64. */
#define NVL_TRITON_DEFAULT_FP8_BLOCK_M 64
#define NVL_TRITON_DEFAULT_SMALL_M 16
#define NVL_TRITON_DEFAULT_M 64

/* The kernel's rate (a share of the dense cuBLAS BF16 GEMM's, which the
 * topology's matmul_efficiency gives) and a tile's fixed work in steps of
 * k, per weight type: solved from a Triton kernel of the same tile
 * mechanism on one H200, Qwen3-235B-A22B's expert shards at prefill's
 * tokens, its gate/up (K 4,096) and down (K 192 or 384) GEMMs two
 * equations in the two (tests/data/calibration/h200-triton-moe/,
 * scripts/calibration/fit-triton-moe.py): BF16 at vLLM's H100 tile 128 x
 * 128 x 64 0.556 of the peak after 182 of k a tile, block FP8 at the
 * default 64 x 128 x 128 0.356 of FP8's peak after 311, against cuBLAS
 * BF16's 0.831 at 8192 x 4096 x 4096 in the same run. */
#define NVL_TRITON_BF16_REL 0.670
#define NVL_TRITON_BF16_TILE_K_PAD 182.0
#define NVL_TRITON_FP8_BLOCK_REL 0.858
#define NVL_TRITON_FP8_BLOCK_TILE_K_PAD 311.0

bool nvl_cost_moe_triton(const nvl_cost_cfg_t *cfg)
{
    nvl_wdtype_t dt = cfg->weight_dtype;
    /* Hopper: Blackwell's FP4 GPUs run other MoE kernels under vLLM */
    return cfg->moe_triton && !cfg->weight_only &&
           (dt == NVL_WDT_BF16 || dt == NVL_WDT_FP8_BLOCK) &&
           !nvl_cost_fp4_cores(&cfg->topo->gpu);
}

uint32_t nvl_cost_triton_block(const nvl_cost_cfg_t *cfg, size_t groups,
                               const uint64_t *m)
{
    if (cfg->weight_dtype == NVL_WDT_FP8_BLOCK)
        return NVL_TRITON_DEFAULT_FP8_BLOCK_M;
    double pairs = nvl_cost_grouped_rows(groups, m);
    double tokens = cfg->moe_top_k > 0 ? pairs / cfg->moe_top_k : pairs;
    if (groups == NVL_TRITON_TUNED_EXPERTS &&
        cfg->moe_inter == NVL_TRITON_TUNED_INTER) {
        size_t n = sizeof h100_e128_n192 / sizeof *h100_e128_n192;
        const triton_key_t *best = &h100_e128_n192[0];
        for (size_t i = 1; i < n; i++)
            if (fabs(h100_e128_n192[i].tokens - tokens) <
                fabs(best->tokens - tokens))
                best = &h100_e128_n192[i];
        return best->block_m;
    }
    return tokens <= (double)groups ? NVL_TRITON_DEFAULT_SMALL_M
                                    : NVL_TRITON_DEFAULT_M;
}

double nvl_cost_triton_rel(const nvl_cost_cfg_t *cfg)
{
    return cfg->weight_dtype == NVL_WDT_FP8_BLOCK ? NVL_TRITON_FP8_BLOCK_REL
                                                  : NVL_TRITON_BF16_REL;
}

double nvl_cost_triton_tile_k_pad(const nvl_cost_cfg_t *cfg)
{
    return cfg->weight_dtype == NVL_WDT_FP8_BLOCK
               ? NVL_TRITON_FP8_BLOCK_TILE_K_PAD
               : NVL_TRITON_BF16_TILE_K_PAD;
}
