/* NVIDIA ModelOpt's NVFP4 quantizer, as
 * modelopt/torch/quantization/qtensor/nvfp4_tensor.py computes it
 * (NVFP4QTensor.get_weights_scaling_factor_2, get_weights_scaling_factor,
 * quantize, _cast_fp4), in float32 as torch promotes it:
 *   scale_2 = amax(|W|) / (6 * 448)                     weight_scale_2, F32 []
 * (amax: the largest over the parts of a fused GEMM, given by the caller)
 *   s_b = amax_b / (6 * scale_2), 0 -> 1, to E4M3       weight_scale, F8_E4M3
 * [R, C/16] q = E2M1(w / (float(s_b) * scale_2))                weight, U8 [R,
 * C/2] two codes a byte, element 2i in the low nibble ((q[1::2] << 4) |
 * q[0::2]). */
#include <math.h>

#include "quant_impl.h"

nvl_status_t nvl_qz_nvfp4(const nvl_quant_row_t *r, const char *name,
                          const float *w, uint64_t rows, uint64_t cols,
                          float amax_in, nvl_quant_tensor_t *out)
{
    if (nvl_qt_check_block("nvfp4", name, cols, 16, false) != NVL_OK)
        return NVL_ERR_INVALID;
    /* the fused GEMM's amax where given (ModelOpt's
     * preprocess_linear_fusion), else the weight's own */
    float amax = amax_in > 0.0f ? amax_in : nvl_qt_amax(w, rows * cols);
    if (amax == 0.0f || isinf(amax) || isnan(amax)) {
        nvl_report("tensor '%s': max |w| is %g (ModelOpt's NVFP4 scales "
                   "would be NaN)",
                   name, (double)amax);
        return NVL_ERR_INVALID;
    }
    float s2 = amax / (6.0f * 448.0f);
    uint64_t nb = cols / 16;
    uint64_t dshape[2] = {rows, cols / 2}, sshape[2] = {rows, nb};
    unsigned char *q = nvl_qt_part(out, 0, &r->data, 2, dshape, 1);
    unsigned char *s = nvl_qt_part(out, 1, &r->scale, 2, sshape, 1);
    unsigned char *g = nvl_qt_part(out, 2, &r->scale2, 0, NULL, 4);
    if (q == NULL || s == NULL || g == NULL)
        return NVL_ERR_NOMEM;
    nvl_qt_put_f32(g, s2);
    float six_s2 = 6.0f * s2;
    for (uint64_t i = 0; i < rows * nb; i++) {
        const float *b = w + i * 16;
        float ps = nvl_qt_amax(b, 16) / six_s2;
        if (ps == 0.0f)
            ps = 1.0f;
        s[i] = nvl_e4m3_encode(ps);
        float den = nvl_e4m3_decode(s[i]) * s2;
        for (int k = 0; k < 16; k++)
            q[i * 8 + k / 2] |=
                (unsigned char)(nvl_e2m1_encode(b[k] / den) << (4 * (k & 1)));
    }
    return NVL_OK;
}

void nvl_qc_nvfp4(json_t *exclude, json_t *qconfig, json_t **hf_out)
{
    nvl_qc_modelopt("NVFP4", 16, exclude, qconfig, hf_out);
}
