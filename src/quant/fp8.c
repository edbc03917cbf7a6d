/* NVIDIA ModelOpt's FP8 (per-tensor) weights: the scale is amax / 448
 * (the quantizer's maxbound; modelopt/torch/export/quant_utils.py,
 * get_weight_scaling_factor) and the weight (W / scale) cast to
 * float8_e4m3fn (to_quantized_weight, QUANTIZATION_FP8):
 *   weight F8_E4M3 [R, C], weight_scale F32 []. */
#include <math.h>

#include "quant_impl.h"

nvl_status_t nvl_qz_fp8(const nvl_quant_row_t *r, const char *name,
                        const float *w, uint64_t rows, uint64_t cols,
                        float amax_in, nvl_quant_tensor_t *out)
{
    /* FP8 per tensor: ModelOpt leaves it out of the fusion, so the caller
     * passes 0; a given amax is used as NVFP4's */
    float amax = amax_in > 0.0f ? amax_in : nvl_qt_amax(w, rows * cols);
    if (amax == 0.0f || isinf(amax) || isnan(amax)) {
        nvl_report("tensor '%s': max |w| is %g (ModelOpt's FP8 scale would "
                   "make NaN weights)",
                   name, (double)amax);
        return NVL_ERR_INVALID;
    }
    float scale = amax / 448.0f;
    uint64_t shape[2] = {rows, cols};
    unsigned char *q = nvl_qt_part(out, 0, &r->data, 2, shape, 1);
    unsigned char *s = nvl_qt_part(out, 1, &r->scale, 0, NULL, 4);
    if (q == NULL || s == NULL)
        return NVL_ERR_NOMEM;
    nvl_qt_put_f32(s, scale);
    for (uint64_t i = 0; i < rows * cols; i++)
        q[i] = nvl_e4m3_encode(w[i] / scale);
    return NVL_OK;
}

void nvl_qc_fp8(json_t *exclude, json_t *qconfig, json_t **hf_out)
{
    nvl_qc_modelopt("FP8", 0, exclude, qconfig, hf_out);
}
