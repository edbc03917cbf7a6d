/* MX-FP4 as gpt-oss's releases store their experts (openai/gpt-oss-20b,
 * -120b: quantization_config {"quant_method": "mxfp4",
 * "modules_to_not_convert": [...]}, the experts alone quantized), written
 * from a bf16 gpt-oss checkpoint.  The layout is the one nvlemu reads
 * (docs/quantization.md, *gpt-oss's MX-FP4 experts*; transformers'
 * integrations/mxfp4.py, convert_moe_packed_tensors): a fused experts
 * tensor P [E, in, out] becomes P_blocks U8 [E, out, in / 32, 16] and
 * P_scales U8 [E, out, in / 32], each output row's inputs in groups of 32,
 * element 2i in the low nibble.
 *
 * The rounding is that of the quantizer transformers runs to turn a bf16
 * gpt-oss into these tensors, "copied from GPT_OSS repo and vllm"
 * (integrations/mxfp4.py, quantize_to_mxfp4: triton_kernels'
 * numerics_details/mxfp.py, downcast_to_mxfp_torch of w.to(bfloat16),
 * the default DequantScaleRoundingMode.ROUND_UP):
 *
 *   input   each weight rounded to bf16 (nearest even), then float32
 *   scale   d = max |w| / 6 in float32, rounded up to a power of two by
 *           its bits ((bits + 0x7FFFFF) & 0x7F800000); the E8M0 code is
 *           that float's exponent field (2^ceil(log2 d)); all zeros: 0
 *   codes   w x (1 / 2^(code - 127)) (0 for code 0), rounded to nearest,
 *           ties to even, on the E2M1 grid, saturating at 6; the sign bit
 *           is the float's (-0 gives code 8)
 *
 * The OCP MX v1.0 specification's rule (floor(log2 max) - 2, the tests'
 * hand-made gptoss-tiny-mxfp4) and compressed-tensors' (mxfp4.c) choose
 * other exponents for some groups; every reader dequantizes any. */
#include <math.h>
#include <string.h>

#include "quant_impl.h"

/* x rounded to bfloat16, nearest even (x finite) */
static float to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* downcast_to_mxfp's E8M0 code of a group whose max |w| is amax */
static uint8_t round_up_code(float amax)
{
    float d = amax / 6.0f;
    uint32_t u;
    memcpy(&u, &d, sizeof u);
    return (uint8_t)(((u + 0x007FFFFFu) & 0x7F800000u) >> 23);
}

nvl_status_t nvl_quant_mxfp4_experts(const char *name, const float *w,
                                     uint64_t experts, uint64_t in,
                                     uint64_t out, nvl_quant_tensor_t *t)
{
    static const nvl_quant_part_t blocks = {.suffix = "_blocks", .dtype = "U8"},
                                  scales = {.suffix = "_scales", .dtype = "U8"};
    memset(t, 0, sizeof *t);
    if (nvl_qt_check_block("gpt-oss's mxfp4", name, in, 32, false) != NVL_OK)
        return NVL_ERR_INVALID;
    uint64_t g = in / 32;
    uint64_t bshape[4] = {experts, out, g, 16}, sshape[3] = {experts, out, g};
    unsigned char *q = nvl_qt_part(t, 0, &blocks, 4, bshape, 1);
    unsigned char *s = nvl_qt_part(t, 1, &scales, 3, sshape, 1);
    if (q == NULL || s == NULL) {
        nvl_quant_tensor_free(t);
        return NVL_ERR_NOMEM;
    }
    for (uint64_t e = 0; e < experts; e++)
        for (uint64_t r = 0; r < out; r++)
            for (uint64_t k = 0; k < g; k++) {
                /* the group: inputs 32k .. 32k + 31 of output r */
                const float *col = w + e * in * out + 32 * k * out + r;
                float x[32], amax = 0.0f;
                int n = 0;
                for (; n < 32 && isfinite(col[(uint64_t)n * out]); n++) {
                    x[n] = to_bf16(col[(uint64_t)n * out]);
                    amax = fmaxf(amax, fabsf(x[n]));
                }
                if (n < 32) /* the first value that is not finite */
                    amax = col[(uint64_t)n * out];
                if (!isfinite(amax)) {
                    nvl_report("tensor '%s': expert %llu, output %llu, inputs "
                               "%llu..%llu hold %g", name,
                               (unsigned long long)e, (unsigned long long)r,
                               (unsigned long long)(32 * k),
                               (unsigned long long)(32 * k + 31),
                               (double)amax);
                    nvl_quant_tensor_free(t);
                    return NVL_ERR_INVALID;
                }
                uint64_t at = (e * out + r) * g + k;
                uint8_t c = round_up_code(amax);
                s[at] = c;
                for (int i = 0; i < 32; i++) {
                    float v = c ? ldexpf(x[i], 127 - c) : 0.0f * x[i];
                    uint8_t code = (uint8_t)(nvl_e2m1_encode(fabsf(v)) |
                                             (signbit(v) ? 8 : 0));
                    q[at * 16 + (uint64_t)i / 2] |=
                        (unsigned char)(code << (4 * (i & 1)));
                }
            }
    return NVL_OK;
}

/* openai/gpt-oss-20b's config.json quantization_config (the experts in
 * MX-FP4; attention, router, embeddings and lm_head left in bf16) */
void nvl_quant_gptoss_config(json_t *qconfig)
{
    json_object_set_new(qconfig, "modules_to_not_convert",
                        json_pack("[s, s, s, s]", "model.layers.*.self_attn",
                                  "model.layers.*.mlp.router",
                                  "model.embed_tokens", "lm_head"));
    json_object_set_new(qconfig, "quant_method", json_string("mxfp4"));
}
