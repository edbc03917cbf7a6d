/* The family of quantized formats: one row each (include/nvlemu/quant.h),
 * and what reads only the rows: scale grids, code bytes, dequantizing. */
#include "quant_impl.h"

#define CT_SCALE                                                              \
    {.suffix = "weight_scale", .dtype = "F32", .code = NVL_QCODE_F32,         \
     .dtype_alt = "BF16", .code_alt = NVL_QCODE_BF16, .dtype_alt2 = "F16",    \
     .code_alt2 = NVL_QCODE_F16}

static const nvl_quant_row_t rows[NVL_QUANT_COUNT] = {
    [NVL_QUANT_NVFP4] = {
        .m = {"nvfp4", "NVIDIA ModelOpt NVFP4: E2M1 pairs, an E4M3 scale per "
                       "16, an FP32 scale per tensor (NVFP4QTensor)"},
        .algo = "NVFP4", .block_rows = 1, .block_cols = 16,
        .data = {.suffix = "weight", .dtype = "U8", .code = NVL_QCODE_E2M1},
        .scale = {.suffix = "weight_scale", .dtype = "F8_E4M3", .code = NVL_QCODE_E4M3},
        .scale2 = {.suffix = "weight_scale_2", .dtype = "F32", .code = NVL_QCODE_F32},
        .fused_amax = true, .quantize = nvl_qz_nvfp4, .write_config = nvl_qc_nvfp4},
    [NVL_QUANT_MXFP4] = {
        .m = {"mxfp4", "OCP MX-FP4 (MX v1.0): E2M1 pairs, an E8M0 scale per "
                       "32; read in gpt-oss's _blocks/_scales tensors, "
                       "written as compressed-tensors' mxfp4-pack-quantized"},
        .algo = "mxfp4", .block_rows = 1, .block_cols = 32,
        .data = {.suffix = "weight_blocks", .dtype = "U8", .code = NVL_QCODE_E2M1},
        .scale = {.suffix = "weight_scales", .dtype = "U8", .code = NVL_QCODE_E8M0},
        .compressed_tensors = true,
        .quantize = nvl_qz_mxfp4, .write_config = nvl_qc_mxfp4},
    [NVL_QUANT_FP8] = {
        .m = {"fp8", "NVIDIA ModelOpt FP8: E4M3 with one FP32 scale per "
                     "tensor (amax / 448)"},
        .algo = "FP8", .block_rows = 0, .block_cols = 0,
        .data = {.suffix = "weight", .dtype = "F8_E4M3", .code = NVL_QCODE_E4M3},
        .scale = {.suffix = "weight_scale", .dtype = "F32", .code = NVL_QCODE_F32},
        .quantize = nvl_qz_fp8, .write_config = nvl_qc_fp8},
    [NVL_QUANT_FP8_BLOCK] = {
        .m = {"fp8-block", "FP8 E4M3 with an FP32 weight_scale_inv per 128 x "
                           "128 block (Qwen's and DeepSeek's FP8 releases)"},
        .algo = "fp8", .block_rows = 128, .block_cols = 128,
        .partial_blocks = true,
        .data = {.suffix = "weight", .dtype = "F8_E4M3", .code = NVL_QCODE_E4M3},
        .scale = {.suffix = "weight_scale_inv", .dtype = "F32", .code = NVL_QCODE_F32},
        .quantize = nvl_qz_fp8_block, .write_config = nvl_qc_fp8_block},
    /* compressed-tensors' own layouts (src/quant/int.c cites them): the
     * scales in the model's dtype */
    [NVL_QUANT_INT8] = {
        .m = {"int8", "compressed-tensors W8A8 int8 (int-quantized): int8 "
                      "weights, a scale per output channel (amax / 127.5)"},
        .algo = "int-quantized", .block_rows = 1, .block_cols = 0,
        .data = {.suffix = "weight", .dtype = "I8", .code = NVL_QCODE_I8},
        .scale = CT_SCALE, .compressed_tensors = true,
        .quantize = nvl_qz_int, .write_config = nvl_qc_int8},
    [NVL_QUANT_INT4] = {
        .m = {"int4", "compressed-tensors W4A16 int4 (pack-quantized): "
                      "eight int4 to an int32, a scale per 1 x 128 group"},
        .algo = "pack-quantized", .block_rows = 1, .block_cols = 128,
        .data = {.suffix = "weight_packed", .dtype = "I32", .code = NVL_QCODE_I4},
        .scale = CT_SCALE, .compressed_tensors = true,
        .quantize = nvl_qz_int, .write_config = nvl_qc_int4},
};

const nvl_family_t nvl_quant_format_family =
    NVL_FAMILY("quant-format",
               "quantized weight formats (nvlemu quantize "
               "--format; checkpoints read in data mode)",
               rows);

const nvl_quant_row_t *nvl_quant_row(nvl_quant_format_t f)
{
    return &rows[f];
}

static uint64_t blocks(uint64_t n, uint32_t block)
{
    return block == 0 ? 1 : (n + block - 1) / block;
}

void nvl_quant_row_grid(const nvl_quant_row_t *r, uint64_t n_rows,
                        uint64_t n_cols, uint64_t grid_out[2])
{
    grid_out[0] = blocks(n_rows, r->block_rows);
    grid_out[1] = blocks(n_cols, r->block_cols);
}

void nvl_quant_scale_grid(nvl_quant_format_t f, uint64_t n_rows,
                          uint64_t n_cols, uint64_t grid_out[2])
{
    nvl_quant_row_grid(&rows[f], n_rows, n_cols, grid_out);
}

static bool nibbles(nvl_qcode_t c)
{
    return c == NVL_QCODE_E2M1 || c == NVL_QCODE_I4;
}

uint64_t nvl_quant_data_bytes(nvl_quant_format_t f, uint64_t cols)
{
    return nibbles(rows[f].data.code) ? cols / 2 : cols;
}

uint32_t nvl_quant_codes_per_elem(const nvl_quant_row_t *r)
{
    return r->data.code == NVL_QCODE_E2M1 ? 2
           : r->data.code == NVL_QCODE_I4 ? 8
                                          : 1;
}

/* The value of code j of a row's data (from its first byte). */
static float code_value(nvl_qcode_t c, const unsigned char *data, uint64_t j)
{
    if (nibbles(c)) {
        uint8_t nib = (uint8_t)(data[j / 2] >> (4 * (j & 1)));
        return c == NVL_QCODE_E2M1 ? nvl_e2m1_decode(nib)
                                   : (float)((nib & 0x0F) - 8);
    }
    return c == NVL_QCODE_I8 ? (float)(int8_t)data[j] : nvl_e4m3_decode(data[j]);
}

void nvl_quant_dequant_row(const nvl_quant_row_t *r,
                           const unsigned char *data, uint64_t col0,
                           uint64_t cols, const float *scales, float scale2,
                           float *out)
{
    uint64_t bc = r->block_cols, first = bc ? col0 / bc : 0;
    for (uint64_t j = 0; j < cols; j++) {
        float v = code_value(r->data.code, data, j);
        /* one rounding: an E2M1 code times an E4M3 or E8M0 scale is exact
         * in float32 (at most 2 + 4 significant bits), and NVFP4's
         * x scale2 (or / global scale) rounds; an E4M3 or integer code
         * times an FP32 scale rounds, and x 1 is exact */
        float s = scales[bc ? (col0 + j) / bc - first : 0];
        out[j] = r->scale2_divides ? v * s / scale2 : v * s * scale2;
    }
}

nvl_status_t nvl_quant_tensor(nvl_quant_format_t f, const char *name,
                              const float *w, uint64_t n_rows, uint64_t n_cols,
                              float amax, nvl_quant_tensor_t *out)
{
    nvl_quant_tensor_t t = {0};
    nvl_status_t st = rows[f].quantize(&rows[f], name, w, n_rows, n_cols, amax, &t);
    if (st != NVL_OK)
        nvl_quant_tensor_free(&t);
    else
        *out = t;
    return st;
}

void nvl_quant_config_write(nvl_quant_format_t f, json_t *exclude,
                            json_t *qconfig, json_t **hf_out)
{
    *hf_out = NULL;
    rows[f].write_config(exclude, qconfig, hf_out);
}
