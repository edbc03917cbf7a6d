/* The cost model's families (family.h): a kernel's settings, a row per
 * member indexed by its enum (weight dtypes with their bytes, tensor-core
 * type and quantized format; attention kernels, and the FlashAttention a
 * GPU runs; launches), their names and parsers, and the GEMM bytes a dtype
 * moves.  The lowest file of src/cost: cost.c and gemm_lib.c call it. */
#include "nvlemu/cost.h"

#include <math.h>
#include <string.h>

#include "nvlemu/quant.h"

/* Weight dtypes: bytes per element (block scales included, for memory
 * sizes), the tensor-core type and peak they run at, the stored format
 * (its row in src/quant gives the weight scales' blocks) and the
 * activations' scale block (elements per scale, its bytes; 0: one per
 * tensor). */
static const struct {
    nvl_member_t id;
    double bytes;
    size_t peak_offset; /* into nvl_gpu_spec_t */
    nvl_wdtype_t core;
    int format;         /* nvl_quant_format_t; -1: none */
    double elem_bytes;
    uint32_t act_block, act_scale_bytes;
} wdtypes[NVL_WDT_COUNT] = {
    [NVL_WDT_BF16] = {{"bf16", "bfloat16, 2 bytes an element"}, 2.0,
                      offsetof(nvl_gpu_spec_t, bf16_flops_per_s),
                      NVL_WDT_BF16, -1, 2.0, 0, 0},
    [NVL_WDT_FP8] = {{"fp8", "FP8 E4M3, 1 byte an element, an FP32 scale "
                             "per tensor (ModelOpt FP8)"}, 1.0,
                     offsetof(nvl_gpu_spec_t, fp8_flops_per_s), NVL_WDT_FP8,
                     NVL_QUANT_FP8, 1.0, 0, 4},
    /* MXFP4: 32 four-bit elements share one 8-bit scale (OCP MX spec) */
    [NVL_WDT_FP4] = {{"fp4", "MXFP4: 4-bit elements, an 8-bit scale per "
                             "32 (OCP MX spec)"},
                     0.5 + 1.0 / 32.0,
                     offsetof(nvl_gpu_spec_t, fp4_flops_per_s), NVL_WDT_FP4,
                     NVL_QUANT_MXFP4, 0.5, 32, 1},
    /* NVFP4: an E4M3 scale per 16 (ModelOpt; activations alike, vLLM
     * scaled_fp4_quant) */
    [NVL_WDT_NVFP4] = {{"nvfp4", "NVFP4: 4-bit elements, an E4M3 scale "
                                 "per 16 and an FP32 per tensor "
                                 "(ModelOpt)"},
                       0.5 + 1.0 / 16.0,
                       offsetof(nvl_gpu_spec_t, fp4_flops_per_s),
                       NVL_WDT_FP4, NVL_QUANT_NVFP4, 0.5, 16, 1},
    /* FP8 blocks: weights per 128 x 128, activations per 1 x 128 (vLLM
     * per_token_group_quant_fp8), FP32 scales */
    [NVL_WDT_FP8_BLOCK] = {{"fp8-block", "FP8 E4M3 with an FP32 scale per "
                                         "128 x 128 block (Qwen's and "
                                         "DeepSeek's FP8 releases)"},
                           1.0 + 4.0 / (128.0 * 128.0),
                           offsetof(nvl_gpu_spec_t, fp8_flops_per_s),
                           NVL_WDT_FP8, NVL_QUANT_FP8_BLOCK, 1.0, 128, 4},
};
const nvl_family_t nvl_wdtype_family =
    NVL_FAMILY("dtype", "weight (and matmul input) types (--dtype; "
                        "--kv-dtype: the kv-dtype family)", wdtypes);

/* The types a KV cache is stored in (nvl_attn_kv_elem_bytes), a row
 * each with its weight dtype. */
static const struct {
    nvl_member_t id;
    nvl_wdtype_t dt;
} kv_dtypes[] = {
    {.id = {"bf16", "bfloat16, 2 bytes an element"}, .dt = NVL_WDT_BF16},
    {.id = {"fp8", "FP8 E4M3, 1 byte an element"}, .dt = NVL_WDT_FP8},
};
const nvl_family_t nvl_kv_dtype_family =
    NVL_FAMILY("kv-dtype", "KV cache types (--kv-dtype)", kv_dtypes);

bool nvl_wdtype_is_kv(nvl_wdtype_t dt)
{
    for (size_t i = 0; i < sizeof kv_dtypes / sizeof kv_dtypes[0]; i++)
        if (kv_dtypes[i].dt == dt)
            return true;
    return false;
}

static const struct {
    nvl_member_t id;
} attns[NVL_ATTN_COUNT] = {
    [NVL_ATTN_FA3] = {{"fa3", "FlashAttention-3 (serving engines on "
                              "Hopper)"}},
    [NVL_ATTN_FA4] = {{"fa4", "FlashAttention-4 (serving engines on "
                              "Blackwell)"}},
    [NVL_ATTN_SDPA] = {{"sdpa", "PyTorch's scaled_dot_product_attention "
                                "(cuDNN; [gpu] sdpa_efficiency)"}},
};
const nvl_family_t nvl_attn_family =
    NVL_FAMILY("attn", "attention kernels (--attn; auto: the stack's)",
               attns);

static const struct {
    nvl_member_t id;
} launches[NVL_LAUNCH_COUNT] = {
    [NVL_LAUNCH_EAGER] = {{"eager", "the host launches every kernel and "
                                    "collective"}},
    [NVL_LAUNCH_GRAPH] = {{"graph", "a CUDA graph: one launch per forward "
                                    "pass"}},
    [NVL_LAUNCH_PERSISTENT] = {{"persistent", "persistent kernels: no "
                                              "launches, no kernel floor"}},
};
const nvl_family_t nvl_launch_family =
    NVL_FAMILY("launch", "how the host launches kernels (--launch)",
               launches);

const char *nvl_wdtype_name(nvl_wdtype_t dt)
{
    return nvl_family_name(&nvl_wdtype_family, (int)dt);
}
const char *nvl_attn_name(nvl_attn_impl_t a)
{
    return nvl_family_name(&nvl_attn_family, (int)a);
}
const char *nvl_launch_name(nvl_launch_t l)
{
    return nvl_family_name(&nvl_launch_family, (int)l);
}

/* Finds name in family; reports the accepted ones otherwise. */
/* One parser per family. */
#define NVL_NAME_PARSER(fn, type, family)                                 \
    nvl_status_t fn(const char *what, const char *name, type *out)        \
    {                                                                     \
        int v;                                                            \
        nvl_status_t st = nvl_family_parse_report(family, what, name, &v); \
        if (st == NVL_OK)                                                 \
            *out = (type)v;                                               \
        return st;                                                        \
    }

NVL_NAME_PARSER(nvl_wdtype_parse, nvl_wdtype_t, &nvl_wdtype_family)
NVL_NAME_PARSER(nvl_attn_parse, nvl_attn_impl_t, &nvl_attn_family)
NVL_NAME_PARSER(nvl_launch_parse, nvl_launch_t, &nvl_launch_family)
NVL_NAME_PARSER(nvl_gemm_lib_parse, nvl_gemm_lib_t, &nvl_gemm_lib_family)

nvl_attn_impl_t nvl_attn_flash(const nvl_topo_t *topo)
{
    return topo != NULL && topo->gpu.fp4_flops_per_s > 0 ? NVL_ATTN_FA4
                                                          : NVL_ATTN_FA3;
}

double nvl_wdtype_bytes(nvl_wdtype_t dt)
{
    return dt < NVL_WDT_COUNT ? wdtypes[dt].bytes : 2.0;
}

nvl_wdtype_t nvl_wdtype_core(nvl_wdtype_t dt)
{
    return dt < NVL_WDT_COUNT ? wdtypes[dt].core : NVL_WDT_BF16;
}

double nvl_wdtype_peak_flops_per_s(const nvl_gpu_spec_t *gpu,
                                   nvl_wdtype_t dt)
{
    double peak;
    if (dt >= NVL_WDT_COUNT)
        dt = NVL_WDT_BF16;
    memcpy(&peak, (const char *)gpu + wdtypes[dt].peak_offset, sizeof peak);
    return peak;
}

const char *nvl_wdtype_format(nvl_wdtype_t dt)
{
    return dt < NVL_WDT_COUNT && wdtypes[dt].format >= 0
               ? nvl_family_name(&nvl_quant_format_family,
                                 wdtypes[dt].format)
               : NULL;
}

nvl_gemm_bytes_t nvl_cost_weight_bytes(nvl_wdtype_t dt, uint64_t n,
                                       uint64_t k)
{
    if (dt >= NVL_WDT_COUNT)
        dt = NVL_WDT_BF16;
    nvl_gemm_bytes_t b = {(double)n * (double)k * wdtypes[dt].elem_bytes, 0};
    if (wdtypes[dt].format < 0 || n == 0 || k == 0)
        return b;
    nvl_quant_format_t f = (nvl_quant_format_t)wdtypes[dt].format;
    const nvl_quant_row_t *row = nvl_quant_row(f);
    uint64_t grid[2];
    nvl_quant_scale_grid(f, n, k, grid);
    /* E4M3 and E8M0 scales are a byte, FP32 ones four */
    double sb = row->scale.code == NVL_QCODE_F32 ? 4.0 : 1.0;
    b.scale_bytes = (double)grid[0] * (double)grid[1] * sb +
                    (row->scale2.suffix != NULL ? 4.0 : 0.0);
    return b;
}

nvl_gemm_bytes_t nvl_cost_input_bytes(nvl_wdtype_t dt, uint64_t m,
                                      uint64_t k)
{
    if (dt >= NVL_WDT_COUNT)
        dt = NVL_WDT_BF16;
    nvl_gemm_bytes_t b = {(double)m * (double)k * wdtypes[dt].elem_bytes, 0};
    uint32_t blk = wdtypes[dt].act_block;
    if (m > 0 && k > 0)
        b.scale_bytes = blk > 0 ? (double)m * (double)((k + blk - 1) / blk) *
                                      wdtypes[dt].act_scale_bytes
                                : wdtypes[dt].act_scale_bytes;
    return b;
}

