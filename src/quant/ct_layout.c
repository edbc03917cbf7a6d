/* How compressed-tensors stores a quantized weight "P.weight" (one row
 * per compression format and strategy), from its writer's source:
 *
 *   compressed_tensors/compressors/quantized_compressors/
 *     nvfp4_quantized.py   NVFP4PackedCompressor ("nvfp4-pack-quantized"):
 *                          compression_param_names weight_packed,
 *                          weight_scale, weight_global_scale;
 *                          pack_fp4_to_uint8 puts element 2i in the low
 *                          nibble (indices[:, 0] | indices[:, 1] << 4), the
 *                          sign in bit 3, as ModelOpt; decompress_weight:
 *                          dequantize(x_q, scale, global_scale)
 *     naive_quantized.py   FloatQuantizationCompressor ("float-quantized"):
 *                          "weight" cast to float8_e4m3fn; the same for
 *                          "naive-quantized" and "int-quantized" (int8)
 *     pack_quantized.py    PackedQuantizationCompressor ("pack-quantized",
 *                          int4: src/quant/int.c)
 *   compressed_tensors/quantization/lifecycle/
 *     initialize.py        _initialize_scale_zero_point: the scale's shape
 *                          (1,) per tensor, (rows, 1) per channel, one per
 *                          group (rows, cols / group_size), per block
 *                          (ceil(rows / 128), ceil(cols / 128)); its dtype
 *                          the weight's (bf16 for a bf16 model), E4M3 for
 *                          FP4's group scales; the global scales float32
 *     forward.py           _dequantize: scale / global_scale, times the code
 *
 * The global scale is generate_gparam's 448 x 6 / amax (the reciprocal of
 * ModelOpt's weight_scale_2 = amax / (6 x 448)), so it divides. */
#include <string.h>

#include "quant_impl.h"

#define FP8_DATA {.suffix = "weight", .dtype = "F8_E4M3", .code = NVL_QCODE_E4M3}
#define FP8_SCALE                                                             \
    {.suffix = "weight_scale", .dtype = "F32", .code = NVL_QCODE_F32,         \
     .dtype_alt = "BF16", .code_alt = NVL_QCODE_BF16, .dtype_alt2 = "F16",  \
     .code_alt2 = NVL_QCODE_F16}

typedef struct {
    const char *compression; /* quantization_config's "format" */
    const char *strategy;    /* the weights' strategy */
    nvl_quant_format_t format;
    nvl_quant_row_t row;
    bool own; /* the format's own row (int8, int4: compressed-tensors'
                 layouts are their rows, src/quant/formats.c) */
} ct_layout_t;

/* naive-quantized is the same compressor as int-quantized and
 * float-quantized (NaiveQuantizationCompressor: `weight` cast to the
 * scheme's torch dtype; naive_quantized.py registers the other two as
 * its aliases) */
#define FP8_ROW(name, doc, br, bc, partial)                                   \
    {.m = {name, doc}, .algo = "float-quantized", .block_rows = br,          \
     .block_cols = bc, .partial_blocks = partial, .data = FP8_DATA,          \
     .scale = FP8_SCALE}

static const ct_layout_t layouts[] = {
    {.compression = "nvfp4-pack-quantized", .strategy = "tensor_group",
     .format = NVL_QUANT_NVFP4,
     .row = {.m = {"nvfp4-pack-quantized", "compressed-tensors NVFP4: "
                   "weight_packed E2M1 pairs, an E4M3 weight_scale per 16, "
                   "FP32 weight_global_scale dividing"},
             .algo = "nvfp4-pack-quantized", .block_rows = 1,
             .block_cols = 16,
             .data = {.suffix = "weight_packed", .dtype = "U8",
                      .code = NVL_QCODE_E2M1},
             .scale = {.suffix = "weight_scale", .dtype = "F8_E4M3",
                       .code = NVL_QCODE_E4M3},
             .scale2 = {.suffix = "weight_global_scale", .dtype = "F32",
                        .code = NVL_QCODE_F32},
             .scale2_divides = true, .fused_amax = true}},
    /* fp4_quantized.py: MXFP4PackedCompressor ("mxfp4-pack-quantized") is
     * NVFP4PackedCompressor's alias (pack_fp4_to_uint8, element 2i low);
     * its weight_scale one E8M0 byte per 32 (calculate_qparams, is_mxfp4:
     * the biased exponent as uint8), no global scale */
    {.compression = "mxfp4-pack-quantized", .strategy = "group",
     .format = NVL_QUANT_MXFP4,
     .row = {.m = {"mxfp4-pack-quantized", "compressed-tensors MX-FP4: "
                   "weight_packed E2M1 pairs, an E8M0 weight_scale per 32"},
             .algo = "mxfp4-pack-quantized", .block_rows = 1,
             .block_cols = 32,
             .data = {.suffix = "weight_packed", .dtype = "U8",
                      .code = NVL_QCODE_E2M1},
             .scale = {.suffix = "weight_scale", .dtype = "U8",
                       .code = NVL_QCODE_E8M0}}},
#define FP8_LAYOUTS(c)                                                        \
    {.compression = c, .strategy = "tensor", .format = NVL_QUANT_FP8,         \
     .row = FP8_ROW("float-quantized/tensor", "compressed-tensors FP8: "     \
                    "E4M3 weight, one weight_scale [1]", 0, 0, false)},       \
    {.compression = c, .strategy = "channel", .format = NVL_QUANT_FP8,        \
     .row = FP8_ROW("float-quantized/channel", "compressed-tensors FP8: "    \
                    "E4M3 weight, a weight_scale per output row [rows, 1]",   \
                    1, 0, false)},                                            \
    {.compression = c, .strategy = "block", .format = NVL_QUANT_FP8_BLOCK,    \
     .row = FP8_ROW("float-quantized/block", "compressed-tensors FP8: E4M3 "  \
                    "weight, a weight_scale per 128 x 128 block", 128, 128,   \
                    true)}
    FP8_LAYOUTS("float-quantized"),
    FP8_LAYOUTS("naive-quantized"),
    {.compression = "int-quantized", .strategy = "channel",
     .format = NVL_QUANT_INT8, .own = true},
    {.compression = "naive-quantized", .strategy = "channel",
     .format = NVL_QUANT_INT8, .own = true},
    {.compression = "pack-quantized", .strategy = "group",
     .format = NVL_QUANT_INT4, .own = true},
};

const nvl_quant_row_t *nvl_quant_ct_layout(const char *compression,
                                           const char *strategy,
                                           nvl_quant_format_t f)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].format == f &&
            strcmp(layouts[i].compression, compression) == 0 &&
            strcmp(layouts[i].strategy, strategy) == 0)
            return layouts[i].own ? nvl_quant_row(f) : &layouts[i].row;
    return NULL;
}

const nvl_quant_row_t *nvl_quant_ct_row(const char *name)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (!layouts[i].own && strcmp(layouts[i].row.m.name, name) == 0)
            return &layouts[i].row;
    return NULL;
}
