/* The cost model's families (family.h): a kernel's settings, a row per
 * member indexed by its enum (weight dtypes with their bytes, tensor-core
 * type and quantized format; attention kernels, and the FlashAttention a
 * GPU runs; launches), their names and parsers, and the GEMM bytes a dtype
 * moves.  The lowest file of src/cost: cost.c and gemm_lib.c call it. */
#include "nvlemu/cost.h"

#include <math.h>
#include <string.h>

#include "nvlemu/quant.h"

/* Weight dtypes: bytes per stored element (the block scales' share comes
 * from the format's row: nvl_wdtype_stored_bytes), the tensor-core type
 * and peak they run at, the stored format (its row in src/quant gives
 * the weight scales' blocks, or the compressed-tensors layout `layout`
 * names) and the activations' scale
 * block (elements per scale, its bytes; 0: one per tensor; act_token: one
 * per row). */
static const struct {
    nvl_member_t id;
    size_t peak_offset; /* into nvl_gpu_spec_t */
    nvl_wdtype_t core;
    int format;         /* nvl_quant_format_t; -1: none */
    double elem_bytes;
    uint32_t act_block, act_scale_bytes;
    const char *layout; /* nvl_quant_ct_row's name; NULL: the format's */
    bool act_token;     /* dynamic input scales, one per token */
    bool weight_only;   /* no tensor cores of its own: BF16's (peak 0) */
} wdtypes[NVL_WDT_COUNT] = {
    [NVL_WDT_BF16] = {
        .id = {"bf16", "bfloat16, 2 bytes an element"},
        .peak_offset = offsetof(nvl_gpu_spec_t, bf16_flops_per_s),
        .core = NVL_WDT_BF16, .format = -1, .elem_bytes = 2.0},
    [NVL_WDT_FP8] = {
        .id = {"fp8", "FP8 E4M3, 1 byte an element, an FP32 scale per "
                      "tensor (ModelOpt FP8)"},
        .peak_offset = offsetof(nvl_gpu_spec_t, fp8_flops_per_s),
        .core = NVL_WDT_FP8, .format = NVL_QUANT_FP8, .elem_bytes = 1.0,
        .act_scale_bytes = 4},
    /* MXFP4: 32 four-bit elements share one 8-bit scale (OCP MX spec) */
    [NVL_WDT_FP4] = {
        .id = {"fp4", "MXFP4: 4-bit elements, an 8-bit scale per 32 (OCP MX "
                      "spec)"},
        .peak_offset = offsetof(nvl_gpu_spec_t, fp4_flops_per_s),
        .core = NVL_WDT_FP4, .format = NVL_QUANT_MXFP4, .elem_bytes = 0.5,
        .act_block = 32, .act_scale_bytes = 1},
    /* NVFP4: an E4M3 scale per 16 (ModelOpt; activations alike, vLLM
     * scaled_fp4_quant) */
    [NVL_WDT_NVFP4] = {
        .id = {"nvfp4", "NVFP4: 4-bit elements, an E4M3 scale per 16 and an "
                        "FP32 per tensor (ModelOpt)"},
        .peak_offset = offsetof(nvl_gpu_spec_t, fp4_flops_per_s),
        .core = NVL_WDT_FP4, .format = NVL_QUANT_NVFP4, .elem_bytes = 0.5,
        .act_block = 16, .act_scale_bytes = 1},
    /* FP8 blocks: weights per 128 x 128, activations per 1 x 128 (vLLM
     * per_token_group_quant_fp8), FP32 scales */
    [NVL_WDT_FP8_BLOCK] = {
        .id = {"fp8-block", "FP8 E4M3 with an FP32 scale per 128 x 128 block "
                            "(Qwen's and DeepSeek's FP8 releases)"},
        .peak_offset = offsetof(nvl_gpu_spec_t, fp8_flops_per_s),
        .core = NVL_WDT_FP8, .format = NVL_QUANT_FP8_BLOCK, .elem_bytes = 1.0,
        .act_block = 128, .act_scale_bytes = 4},
    /* compressed-tensors FP8 per channel: an FP32 (or BF16) weight_scale
     * per output row; vLLM's CompressedTensorsW8A8Fp8 runs it with
     * dynamic per-token input scales (FP32) */
    [NVL_WDT_FP8_CHANNEL] = {
        .id = {"fp8-channel", "FP8 E4M3 with an FP32 scale per output "
                              "channel, inputs per token (compressed-"
                              "tensors float-quantized, strategy channel)"},
        .peak_offset = offsetof(nvl_gpu_spec_t, fp8_flops_per_s),
        .core = NVL_WDT_FP8, .format = NVL_QUANT_FP8, .elem_bytes = 1.0,
        .act_scale_bytes = 4, .layout = "float-quantized/channel",
        .act_token = true},
    /* W8A8 int8 (CompressedTensorsW8A8Int8: int8 x int8 GEMM, scale_a per
     * token, scale_b per channel, cutlass_scaled_mm).  INT8 tensor-core
     * peak = FP8's on every GPU of topology/: H100 SXM 1,979 TOPS / 1,979
     * TFLOPS dense (NVIDIA H100 datasheet), B200 4.5 POPS / 4.5 PFLOPS
     * dense (HGX B200: 72 POPS INT8, 72 PFLOPS FP8 sparse per 8 GPUs),
     * GB200 NVL72 720 POPS INT8 / 720 PFLOPS FP8 (sparse, per rack): so
     * fp8_flops, and FP8's efficiency and libraries (core FP8) */
    [NVL_WDT_INT8] = {
        .id = {"int8", "W8A8 int8: int8 weights with a scale per output "
                       "channel, int8 inputs per token (compressed-tensors "
                       "int-quantized)"},
        .peak_offset = offsetof(nvl_gpu_spec_t, fp8_flops_per_s),
        .core = NVL_WDT_FP8, .format = NVL_QUANT_INT8, .elem_bytes = 1.0,
        .act_scale_bytes = 4, .act_token = true},
    /* W4A16 int4 (CompressedTensorsWNA16): 4-bit weights and a scale per
     * group of 128 read, dequantized to BF16 in the GEMM's mainloop
     * (Machete on Hopper, Marlin elsewhere), BF16 inputs: BF16's rate */
    [NVL_WDT_INT4] = {
        .id = {"int4", "W4A16 int4: 4-bit weights, a scale per 128, "
                       "weight-only at BF16's rate (compressed-tensors "
                       "pack-quantized)"},
        .peak_offset = offsetof(nvl_gpu_spec_t, bf16_flops_per_s),
        .core = NVL_WDT_BF16, .format = NVL_QUANT_INT4, .elem_bytes = 0.5,
        .weight_only = true},
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
NVL_NAME_PARSER(nvl_gemm_harness_parse, nvl_gemm_harness_t,
                &nvl_gemm_harness_family)

nvl_attn_impl_t nvl_attn_flash(const nvl_topo_t *topo)
{
    return topo != NULL && topo->gpu.fp4_flops_per_s > 0 ? NVL_ATTN_FA4
                                                          : NVL_ATTN_FA3;
}

static const nvl_quant_row_t *weight_row(nvl_wdtype_t dt);

/* A block scale's bytes: the checkpoint's where the row lets it choose
 * (compressed-tensors writes weight_scale in the model's dtype: BF16 two,
 * F32 four), else the row's own code (E4M3 and E8M0 one, FP32 four). */
static double scale_bytes(const nvl_quant_row_t *row,
                          uint32_t scale_elem_bytes)
{
    return scale_elem_bytes > 0 && row->scale.dtype_alt != NULL
               ? (double)scale_elem_bytes
               : (double)nvl_quant_code_bytes(row->scale.code);
}

double nvl_wdtype_stored_bytes(nvl_wdtype_t dt, uint32_t scale_elem_bytes)
{
    if (dt >= NVL_WDT_COUNT)
        dt = NVL_WDT_BF16;
    if (wdtypes[dt].format < 0)
        return wdtypes[dt].elem_bytes;
    const nvl_quant_row_t *row = weight_row(dt);
    /* a scale per block of rows x cols; one per row or per tensor is
     * left out (a row's is 1/K of an element) */
    double block = (double)row->block_rows * row->block_cols;
    return wdtypes[dt].elem_bytes +
           (block > 0 ? scale_bytes(row, scale_elem_bytes) / block : 0.0);
}

double nvl_wdtype_bytes(nvl_wdtype_t dt)
{
    return nvl_wdtype_stored_bytes(dt, 0);
}

bool nvl_wdtype_weight_only(nvl_wdtype_t dt)
{
    return dt < NVL_WDT_COUNT && wdtypes[dt].weight_only;
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
    if (wdtypes[dt].weight_only)
        return 0.0;
    memcpy(&peak, (const char *)gpu + wdtypes[dt].peak_offset, sizeof peak);
    return peak;
}

const char *nvl_wdtype_format(nvl_wdtype_t dt)
{
    if (dt >= NVL_WDT_COUNT || wdtypes[dt].format < 0)
        return NULL;
    return wdtypes[dt].layout != NULL
               ? wdtypes[dt].layout
               : nvl_family_name(&nvl_quant_format_family, wdtypes[dt].format);
}

nvl_wdtype_t nvl_wdtype_of_quant(nvl_quant_format_t f,
                                 const nvl_quant_row_t *stored)
{
    int own = NVL_WDT_BF16;
    for (int d = 0; d < NVL_WDT_COUNT; d++) {
        if (wdtypes[d].format != (int)f)
            continue;
        if (wdtypes[d].layout == NULL && own == NVL_WDT_BF16)
            own = d;
        if (wdtypes[d].layout != NULL && stored != NULL &&
            strcmp(wdtypes[d].layout, stored->m.name) == 0)
            return (nvl_wdtype_t)d;
    }
    return (nvl_wdtype_t)own;
}

/* The row whose blocks dt's weight scales follow. */
static const nvl_quant_row_t *weight_row(nvl_wdtype_t dt)
{
    const nvl_quant_row_t *r = wdtypes[dt].layout != NULL
                                   ? nvl_quant_ct_row(wdtypes[dt].layout)
                                   : NULL;
    return r != NULL ? r
                     : nvl_quant_row((nvl_quant_format_t)wdtypes[dt].format);
}

nvl_gemm_bytes_t nvl_cost_weight_bytes(nvl_wdtype_t dt, uint64_t n,
                                       uint64_t k, uint32_t scale_elem_bytes)
{
    if (dt >= NVL_WDT_COUNT)
        dt = NVL_WDT_BF16;
    nvl_gemm_bytes_t b = {(double)n * (double)k * wdtypes[dt].elem_bytes, 0};
    if (wdtypes[dt].format < 0 || n == 0 || k == 0)
        return b;
    const nvl_quant_row_t *row = weight_row(dt);
    uint64_t grid[2];
    nvl_quant_row_grid(row, n, k, grid);
    b.scale_bytes = (double)grid[0] * (double)grid[1] *
                        scale_bytes(row, scale_elem_bytes) +
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
        b.scale_bytes = wdtypes[dt].act_token
                            ? (double)m * wdtypes[dt].act_scale_bytes
                        : blk > 0 ? (double)m * (double)((k + blk - 1) / blk) *
                                        wdtypes[dt].act_scale_bytes
                                  : wdtypes[dt].act_scale_bytes;
    return b;
}

