/* Activation quantization as the serving engines run it before a
 * quantized GEMM, and the FP8 KV cache's conversion: each function
 * returns the values the GEMM (or the attention) then reads, the code
 * times its scale(s) rounded once to float32 (docs/quantization.md,
 * "Activations" cites each kernel). */
#include <math.h>

#include "quant_impl.h"

#define E2M1_MAX 6.0f
#define E4M3_MAX 448.0f

float nvl_e4m3_round_sat(float x)
{
    /* __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3): nearest even,
     * saturating at +-448 (torch's cast would give NaN from 480 on) */
    if (x > E4M3_MAX)
        x = E4M3_MAX;
    else if (x < -E4M3_MAX)
        x = -E4M3_MAX;
    return nvl_e4m3_decode(nvl_e4m3_encode(x));
}

/* NVFP4 blocks with the global scale gs (SFScaleVal); the GEMM reads
 * e2m1 x SFValue x post (post: ModelOpt's input_scale, alpha's part) */
static void nvfp4_blocks(const float *x, uint64_t n, float gs, float post,
                         float *out)
{
    for (uint64_t b0 = 0; b0 < n; b0 += NVL_NVFP4_ACT_BLOCK) {
        uint64_t nb = n - b0 < NVL_NVFP4_ACT_BLOCK ? n - b0
                                                   : NVL_NVFP4_ACT_BLOCK;
        float amax = 0.0f;
        for (uint64_t i = 0; i < nb; i++)
            amax = fmaxf(amax, fabsf(x[b0 + i]));
        /* cvt_warp_fp16_to_fp4: SFValue = SFScaleVal * (vecMax / 6),
         * stored as E4M3 (satfinite); the elements scaled by
         * 1 / (SFValue / SFScaleVal) and rounded onto E2M1 */
        float sf = nvl_e4m3_round_sat(gs * (amax * (1.0f / E2M1_MAX)));
        float inv = sf != 0.0f ? 1.0f / (sf * (1.0f / gs)) : 0.0f;
        for (uint64_t i = 0; i < nb; i++) {
            float e = nvl_e2m1_decode(nvl_e2m1_encode(x[b0 + i] * inv));
            /* the GEMM: e2m1 x block scale, times alpha's input_scale */
            out[b0 + i] = e * sf * post;
        }
    }
}

void nvl_act_quant_nvfp4(const float *x, uint64_t n, float input_scale,
                         float *out)
{
    /* vLLM process_weights_after_loading: input_scale_inv = 1 /
     * input_scale (the global scale, SFScaleVal) */
    nvfp4_blocks(x, n, 1.0f / input_scale, input_scale, out);
}

void nvl_act_quant_nvfp4_gs(const float *x, uint64_t n, float gs, float *out)
{
    /* vLLM compressed_tensors_w4a4_nvfp4.py, process_weights_after_loading:
     * input_global_scale = its .max() over the fused parts, passed to
     * scaled_fp4_quant as is; alpha = 1 / (input_global_scale x
     * weight_global_scale) */
    nvfp4_blocks(x, n, gs, 1.0f / gs, out);
}

void nvl_act_quant_fp8_tensor(const float *x, uint64_t n, float scale,
                              float *out)
{
    /* vLLM static_scaled_fp8_quant: x * (1 / scale), clamped to +-448,
     * cast; the GEMM multiplies by scale */
    float inv = 1.0f / scale;
    for (uint64_t i = 0; i < n; i++)
        out[i] = nvl_e4m3_round_sat(x[i] * inv) * scale;
}

void nvl_act_quant_fp8_group(const float *x, uint64_t n, uint64_t group,
                             float *out)
{
    /* vLLM _per_token_group_quant_fp8: s = max(amax, 1e-10) / 448,
     * q = clamp(x / s, -448, 448) cast to E4M3; the GEMM reads q x s */
    for (uint64_t g0 = 0; g0 < n; g0 += group) {
        uint64_t ng = n - g0 < group ? n - g0 : group;
        float amax = 1e-10f;
        for (uint64_t i = 0; i < ng; i++)
            amax = fmaxf(amax, fabsf(x[g0 + i]));
        float s = amax / E4M3_MAX;
        for (uint64_t i = 0; i < ng; i++)
            out[g0 + i] = nvl_e4m3_round_sat(x[g0 + i] / s) * s;
    }
}

void nvl_act_quant_fp8_token(const float *x, uint64_t n, float *out)
{
    /* vLLM dynamic_per_token_scaled_fp8_quant_kernel
     * (csrc/quantization/fp8/common.cu), QuantFP8 (vllm/model_executor/
     * layers/quantization/input_quant_fp8.py): the token's scale
     * max(amax / 448, 1 / (448 * 512)), each element x / scale saturated
     * to E4M3; the GEMM's scale_a is that scale */
    float amax = 0.0f;
    for (uint64_t i = 0; i < n; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    float s = fmaxf(amax / E4M3_MAX, 1.0f / (E4M3_MAX * 512.0f));
    for (uint64_t i = 0; i < n; i++)
        out[i] = nvl_e4m3_round_sat(x[i] / s) * s;
}

void nvl_kv_quant_fp8(const float *x, uint64_t n, float scale, float *out)
{
    /* vLLM reshape_and_cache(_flash), scaled_convert: x / scale to E4M3
     * (satfinite); the attention reads code x scale */
    for (uint64_t i = 0; i < n; i++)
        out[i] = nvl_e4m3_round_sat(x[i] / scale) * scale;
}

/* Values of --act-quant: 0 auto, 1 none. */
static const struct {
    nvl_member_t id;
} act_choices[2] = {
    {{"auto", "as the serving engines run the checkpoint's format: NVFP4 "
              "W4A4, FP8 W8A8 (static per-tensor input scale, dynamic per "
              "token, or dynamic 1 x 128 groups for FP8 blocks), MX-FP4 "
              "weight-only"}},
    {{"none", "weight-only: activations stay float32 (W4A16 / W8A16)"}},
};
void nvl_act_quant_int8_token(const float *x, uint64_t n, float *out)
{
    /* vLLM dynamic_scaled_int8_quant_kernel (csrc/quantization/
     * compressed_tensors/int8_quant_kernels.cu): scale = absmax / 127,
     * q = cvt.rni.sat.s8.f32(x * (127 / absmax)); the GEMM's epilogue
     * multiplies by scale.  absmax 0: x * inf is NaN for x = 0, which the
     * saturating convert makes 0 */
    float amax = 0.0f;
    for (uint64_t i = 0; i < n; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    float scale = amax / 127.0f, inv = 127.0f / amax;
    for (uint64_t i = 0; i < n; i++) {
        float q = amax > 0.0f ? rintf(fminf(fmaxf(x[i] * inv, -128.0f), 127.0f))
                              : 0.0f;
        out[i] = q * scale;
    }
}

const nvl_family_t nvl_act_quant_family =
    NVL_FAMILY("act-quant", "activation quantization before a quantized "
                            "GEMM (--act-quant)", act_choices);

nvl_act_quant_t nvl_act_quant_of(const nvl_quant_config_t *q)
{
    if (!q->quantized || q->weight_only)
        return NVL_ACT_NONE;
    switch (q->format) {
    case NVL_QUANT_NVFP4:
        return q->stored != NULL && q->stored->scale2_divides
                   ? NVL_ACT_NVFP4_GS
                   : NVL_ACT_NVFP4;
    case NVL_QUANT_FP8:
        return q->act_dynamic ? NVL_ACT_FP8_TOKEN : NVL_ACT_FP8_TENSOR;
    case NVL_QUANT_FP8_BLOCK:
        return NVL_ACT_FP8_GROUP;
    case NVL_QUANT_INT8:
        return NVL_ACT_INT8_TOKEN;
    case NVL_QUANT_MXFP4:
    case NVL_QUANT_INT4: /* W4A16 */
    case NVL_QUANT_COUNT:
        break;
    }
    return NVL_ACT_NONE;
}
