/* FP8 in 128 x 128 blocks as Qwen's (and DeepSeek's) FP8 releases store
 * it, quantized as transformers' FineGrainedFP8HfQuantizer does
 * (transformers/quantizers/quantizer_finegrained_fp8.py,
 * create_quantized_param), in float32:
 *   scale = (1 / amax_block) * 448; q = E4M3(clamp(w * scale, -448, 448))
 *   weight F8_E4M3 [R, C], weight_scale_inv F32 [R/128, C/128] = 1 / scale
 * Both dimensions must divide by 128 (transformers refuses others).  An
 * all-zero block, where transformers computes 0 x inf = NaN, gets codes 0
 * and weight_scale_inv 1. */
#include <math.h>

#include "quant_impl.h"

static void block(const float *w, uint64_t cols, uint64_t bi, uint64_t bj,
                  unsigned char *q, unsigned char *sinv)
{
    float amax = 0.0f;
    for (uint64_t i = bi * 128; i < bi * 128 + 128; i++)
        amax = fmaxf(amax, nvl_qt_amax(w + i * cols + bj * 128, 128));
    /* torch evaluates `fp8_max / max_abs` (a float over a tensor) as
     * max_abs.reciprocal() * fp8_max (Tensor.__rtruediv__): two roundings */
    float scale = amax > 0.0f ? (1.0f / amax) * 448.0f : 1.0f;
    nvl_qt_put_f32(sinv, 1.0f / scale);
    for (uint64_t i = bi * 128; i < bi * 128 + 128; i++)
        for (uint64_t j = bj * 128; j < bj * 128 + 128; j++) {
            float v = fminf(fmaxf(w[i * cols + j] * scale, -448.0f), 448.0f);
            q[i * cols + j] = amax > 0.0f ? nvl_e4m3_encode(v) : 0;
        }
}

nvl_status_t nvl_qz_fp8_block(const nvl_quant_row_t *r, const char *name,
                              const float *w, uint64_t rows, uint64_t cols,
                              float amax_in, nvl_quant_tensor_t *out)
{
    (void)amax_in; /* no per-tensor scale */
    if (nvl_qt_check_block("fp8-block", name, rows, 128, true) != NVL_OK ||
        nvl_qt_check_block("fp8-block", name, cols, 128, false) != NVL_OK)
        return NVL_ERR_INVALID;
    float amax = nvl_qt_amax(w, rows * cols);
    if (isinf(amax) || isnan(amax)) {
        nvl_report("tensor '%s': holds %g", name, (double)amax);
        return NVL_ERR_INVALID;
    }
    uint64_t shape[2] = {rows, cols}, sshape[2] = {rows / 128, cols / 128};
    unsigned char *q = nvl_qt_part(out, 0, &r->data, 2, shape, 1);
    unsigned char *s = nvl_qt_part(out, 1, &r->scale, 2, sshape, 4);
    if (q == NULL || s == NULL)
        return NVL_ERR_NOMEM;
    for (uint64_t bi = 0; bi < sshape[0]; bi++)
        for (uint64_t bj = 0; bj < sshape[1]; bj++)
            block(w, cols, bi, bj, q, s + 4 * (bi * sshape[1] + bj));
    return NVL_OK;
}

/* transformers' FineGrainedFP8Config keys as Qwen's FP8 config.json
 * carries them (quant_method "fp8", fmt "e4m3", activation_scheme
 * "dynamic", weight_block_size [128, 128]), plus its
 * modules_to_not_convert */
void nvl_qc_fp8_block(json_t *exclude, json_t *qconfig, json_t **hf_out)
{
    json_object_set_new(qconfig, "quant_method", json_string("fp8"));
    json_object_set_new(qconfig, "fmt", json_string("e4m3"));
    json_object_set_new(qconfig, "activation_scheme", json_string("dynamic"));
    json_object_set_new(qconfig, "weight_block_size",
                        json_pack("[i, i]", 128, 128));
    json_object_set(qconfig, "modules_to_not_convert", exclude);
    *hf_out = NULL;
}
