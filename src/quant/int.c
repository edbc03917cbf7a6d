/* compressed-tensors' integer weights as llm-compressor writes them
 * (symmetric), from the writer's source:
 *
 *   compressed_tensors/quantization/utils/helpers.py, calculate_qparams:
 *     symmetric: scale = max(|min|, |max|) / (bit_range / 2), bit_range =
 *     q_max - q_min (int8: 127 - (-128), so amax / 127.5; int4: amax /
 *     7.5), clamped below at float32's eps; zero point 0
 *   compressed_tensors/quantization/lifecycle/forward.py, _quantize:
 *     q = round(clamp(x / scale, q_min, q_max)) (torch.round: nearest even)
 *   compressors/quantized_compressors/naive_quantized.py
 *     (IntQuantizationCompressor, "int-quantized"): `weight` as int8
 *   compressors/quantized_compressors/pack_quantized.py
 *     (PackedQuantizationCompressor, "pack-quantized"): pack_to_int32 adds
 *     2^(bits - 1) and ORs element i of each run of 32 / bits into bits
 *     bits x i of an int32 (weight_packed [R, C / 8] int32), weight_scale
 *     [R, C / group_size], weight_shape [R, C] (int64: torch.tensor of
 *     the shape)
 *
 * The per-channel (int8) and per-group (int4, groups of 128 along the
 * input dimension) observers take the amax of each row or group (the
 * minmax observer).  All in float32, as torch for a float32 weight. */
#include <math.h>

#include "quant_impl.h"

/* calculate_qparams' symmetric scale for a run whose max |x| is amax,
 * and _quantize's code of x (qmax 127 or 7, q_min -qmax - 1) */
static float scale_of(float amax, float qmax)
{
    return fmaxf(amax / (qmax + 0.5f), 0x1p-23f);
}

static int code_of(float x, float scale, float qmax)
{
    return (int)rintf(fminf(fmaxf(x / scale, -qmax - 1.0f), qmax));
}

nvl_status_t nvl_qz_int(const nvl_quant_row_t *r, const char *name,
                        const float *w, uint64_t rows, uint64_t cols,
                        float amax_in, nvl_quant_tensor_t *out)
{
    (void)amax_in; /* no per-tensor scale */
    bool four = r->data.code == NVL_QCODE_I4;
    uint64_t g = four ? r->block_cols : cols;
    float qmax = four ? 7.0f : 127.0f;
    if (four && nvl_qt_check_block(r->m.name, name, cols, (uint32_t)g,
                                   false) != NVL_OK)
        return NVL_ERR_INVALID;
    float amax = nvl_qt_amax(w, rows * cols);
    if (isinf(amax) || isnan(amax) || cols == 0) {
        nvl_report("tensor '%s': holds %g", name, (double)amax);
        return NVL_ERR_INVALID;
    }
    uint64_t shape[2] = {rows, four ? cols / 8 : cols},
             sshape[2] = {rows, cols / g}, wshape[1] = {2};
    nvl_quant_part_t ws = {.suffix = "weight_shape", .dtype = "I64"};
    unsigned char *d = nvl_qt_part(out, 0, &r->data, 2, shape, four ? 4 : 1);
    unsigned char *s = nvl_qt_part(out, 1, &r->scale, 2, sshape, 4);
    unsigned char *wsb = four ? nvl_qt_part(out, 2, &ws, 1, wshape, 8) : s;
    if (d == NULL || s == NULL || wsb == NULL)
        return NVL_ERR_NOMEM;
    for (uint64_t i = 0; i < rows; i++)
        for (uint64_t c0 = 0; c0 < cols; c0 += g) {
            const float *x = w + i * cols + c0;
            float sc = scale_of(nvl_qt_amax(x, g), qmax);
            nvl_qt_put_f32(s + 4 * (i * sshape[1] + c0 / g), sc);
            for (uint64_t j = 0; j < g; j++) {
                int q = code_of(x[j], sc, qmax);
                uint64_t e = i * cols + c0 + j;
                if (four) /* pack_to_int32: q + 8, element 2i low */
                    d[e / 2] |= (unsigned char)((q + 8) << (4 * (e & 1)));
                else
                    d[e] = (unsigned char)(int8_t)q;
            }
        }
    for (int k = 0; four && k < 2; k++)
        for (int b = 0; b < 8; b++)
            wsb[8 * k + b] = (unsigned char)((k == 0 ? rows : cols) >> (8 * b));
    return NVL_OK;
}

void nvl_qc_int8(json_t *exclude, json_t *qconfig, json_t **hf_out)
{
    nvl_qc_ct("int-quantized",
              json_pack("{s:i, s:s, s:s, s:b, s:b}", "num_bits", 8, "type",
                        "int", "strategy", "channel", "symmetric", 1,
                        "dynamic", 0),
              json_pack("{s:i, s:s, s:s, s:b, s:b}", "num_bits", 8, "type",
                        "int", "strategy", "token", "symmetric", 1,
                        "dynamic", 1),
              exclude, qconfig);
    *hf_out = NULL;
}

void nvl_qc_int4(json_t *exclude, json_t *qconfig, json_t **hf_out)
{
    nvl_qc_ct("pack-quantized",
              json_pack("{s:i, s:s, s:s, s:i, s:b, s:b}", "num_bits", 4,
                        "type", "int", "strategy", "group", "group_size",
                        128, "symmetric", 1, "dynamic", 0),
              json_null(), exclude, qconfig);
    *hf_out = NULL;
}
