/* vLLM's Marlin MoE GEMM: which expert GEMMs run it, its moe blocks, its
 * rate and the widths its weights are padded to (include/nvlemu/cost.h;
 * docs/cost-model.md, "MX-FP4 experts under vLLM on Hopper"); cost.c's
 * grouped GEMM prices it with these. */
#include "nvlemu/cost.h"

#include "cost_impl.h"

/* vLLM's Marlin MoE GEMM (csrc/moe/marlin_moe_wna16; fused_marlin_moe in
 * vllm/model_executor/layers/fused_moe/fused_marlin_moe.py), vLLM's path
 * for 4-bit experts on Hopper in v0.10.2 and v0.11.0 unless FlashInfer's
 * SM90 MX-FP4 kernel is asked for (VLLM_USE_FLASHINFER_MOE_MXFP4_BF16,
 * off by default) or OpenAI's triton_kernels is installed (a dependency
 * only from vLLM PR 27370, after v0.11.0): get_mxfp4_backend in
 * vllm/model_executor/layers/quantization/mxfp4.py.  fused_marlin_moe
 * sorts the (token, expert) pairs into blocks of one expert's rows, the
 * first of 8, 16, 32, 48 rows with pairs / experts / rows < 0.9, else 64
 * (moe_align_block_size pads each expert's rows to whole blocks), and a
 * CTA multiplies a block's rows by a 256-column weight panel (thread_m_
 * blocks 4 and the large-batch config 64 x 256 in ops.cu), dequantising
 * the weights in registers onto mma.sync m16n8k16, Ampere's instruction
 * (the kernels are built for SM80): on Hopper it reaches about 2/3 of the
 * tensor cores' peak, which wgmma alone reaches (the FlashAttention-3 post,
 * pytorch.org/blog/flashattention-3, note 1, after Luo et al., arXiv
 * 2402.13499v1).  NVL_MARLIN_MMA_EFFICIENCY: Marlin's main loop on that
 * rate against cuBLASLt's on wgmma (the topology's matmul_efficiency),
 * fit to one figure, the 8,192-token steps of gpt-oss-20b's 2000/100 run
 * on GPUStack's H100 page (its median inter-token latency, 220.69 ms);
 * both gpt-oss 128/4 rows of tests/data/calibration/published-serving.csv
 * are held out (docs/cost-model.md, "MX-FP4 experts under vLLM on
 * Hopper"). */
#define NVL_MMA_SYNC_SM90_SHARE (2.0 / 3.0)
#define NVL_MARLIN_MMA_EFFICIENCY 0.54
#define NVL_MARLIN_BLOCK_FILL 0.9
static const uint32_t marlin_block_rows[] = {8, 16, 32, 48, 64};

uint32_t nvl_cost_marlin_block(size_t groups, const uint64_t *m)
{
    size_t n = sizeof marlin_block_rows / sizeof *marlin_block_rows;
    double pairs = nvl_cost_grouped_rows(groups, m);
    for (size_t b = 0; b + 1 < n; b++)
        if (pairs / (double)groups / marlin_block_rows[b] <
            NVL_MARLIN_BLOCK_FILL)
            return marlin_block_rows[b];
    return marlin_block_rows[n - 1];
}

double nvl_cost_marlin_rel(void)
{
    return NVL_MMA_SYNC_SM90_SHARE * NVL_MARLIN_MMA_EFFICIENCY;
}

/* The widths Marlin's MoE weights are padded to at load (vLLM's
 * Mxfp4MoEMethod.create_weights, Marlin branch: its kernel needs n % 256
 * and k % 128 of both GEMMs, so the hidden size goes up to a multiple of
 * 256 and the intermediate size to one of 128: gpt-oss's 2,880 to 3,072
 * and 2,944). */
#define NVL_MARLIN_HIDDEN_ALIGN 256
#define NVL_MARLIN_INTER_ALIGN 128

void nvl_cost_moe_dims(const nvl_cost_cfg_t *cfg, uint64_t *hidden,
                       uint64_t *inter)
{
    if (!nvl_cost_moe_marlin(cfg))
        return;
    *hidden = (*hidden + NVL_MARLIN_HIDDEN_ALIGN - 1) /
              NVL_MARLIN_HIDDEN_ALIGN * NVL_MARLIN_HIDDEN_ALIGN;
    *inter = (*inter + NVL_MARLIN_INTER_ALIGN - 1) / NVL_MARLIN_INTER_ALIGN *
             NVL_MARLIN_INTER_ALIGN;
}

bool nvl_cost_moe_marlin(const nvl_cost_cfg_t *cfg)
{
    nvl_wdtype_t dt = cfg->weight_dtype;
    bool four_bit = dt == NVL_WDT_FP4 || dt == NVL_WDT_NVFP4 ||
                    dt == NVL_WDT_INT4;
    /* Hopper: no FP4 tensor cores (Blackwell's run their own kernels) */
    return cfg->moe_marlin && four_bit && !nvl_cost_fp4_cores(&cfg->topo->gpu);
}
