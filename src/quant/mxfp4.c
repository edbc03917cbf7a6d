/* MX-FP4 as compressed-tensors writes it (vllm-project/compressed-tensors
 * 0.18, the MXFP4A16 preset of quantization/quant_scheme.py: float 4 bits,
 * strategy "group", group_size 32, symmetric, scale_dtype uint8), from the
 * writer's source:
 *
 *   quantization/utils/mxfp_utils.py  generate_mx_scales: the group's
 *       max |w| rounded to a power of two by round_to_power_2 (add
 *       1 << (mantissa bits - 2) to the float's bits, keep sign and
 *       exponent: up when the significand is at least 1.75, else down),
 *       then the E8M0 code 127 + log2(it) - 2 (floor(log2(6)) = 2, the
 *       OCP MX v1.0 emax of E2M1), clamped to [0, 255] (helpers.py,
 *       calculate_qparams, round_to_quantized_type_dtype); an all-zero
 *       group gets code 0 (log2(0) = -inf clamps to 0), 2^-127
 *   lifecycle/forward_helpers.py  _quantize: w / 2^(code - 127), clamped
 *       to +-6 and rounded by utils/fp4_utils.py cast_to_fp4 (nearest,
 *       ties to the even code: nvl_e2m1_encode)
 *   compressors/nvfp4/base.py  pack_fp4_to_uint8: element 2i in the low
 *       nibble, the sign in bit 3 (weight_packed U8 [R, C/2]);
 *   compressors/mx_utils.py  compress_mx_scale: weight_scale U8 [R, C/32]
 *
 * The OCP MX v1.0 specification (section 6.3) takes floor(log2(max |v|))
 * - 2 instead; the two differ where the significand of the max is at
 * least 1.75 (the writer's choice keeps that max off the clamp at 6).
 * The row read back is compressed-tensors' (ct_layout.c); gpt-oss's own
 * _blocks / _scales layout (the experts of its releases) is written by
 * mxfp4_gptoss.c. */
#include <math.h>

#include "quant_impl.h"

/* generate_mx_scales' shared exponent X (the scale 2^X) of a group whose
 * max |w| is amax (finite, >= 0) */
static int shared_exponent(float amax)
{
    int ex = 0;
    float m = frexpf(amax, &ex); /* amax = m 2^ex, m in [0.5, 1) */
    if (!(amax > 0.0f))
        return -127;
    int p = ex - 1 + (m >= 0.875f); /* round_to_power_2: 1.75 / 2 */
    int x = p - 2;
    return x < -127 ? -127 : x > 128 ? 128 : x;
}

nvl_status_t nvl_qz_mxfp4(const nvl_quant_row_t *r, const char *name,
                          const float *w, uint64_t rows, uint64_t cols,
                          float amax_in, nvl_quant_tensor_t *out)
{
    (void)amax_in; /* no per-tensor scale */
    (void)r;       /* written in compressed-tensors' layout */
    const nvl_quant_row_t *ct =
        nvl_quant_ct_layout("mxfp4-pack-quantized", "group", NVL_QUANT_MXFP4);
    if (nvl_qt_check_block("mxfp4", name, cols, 32, false) != NVL_OK)
        return NVL_ERR_INVALID;
    uint64_t nb = cols / 32;
    uint64_t dshape[2] = {rows, cols / 2}, sshape[2] = {rows, nb};
    unsigned char *q = nvl_qt_part(out, 0, &ct->data, 2, dshape, 1);
    unsigned char *s = nvl_qt_part(out, 1, &ct->scale, 2, sshape, 1);
    if (q == NULL || s == NULL)
        return NVL_ERR_NOMEM;
    for (uint64_t i = 0; i < rows * nb; i++) {
        const float *b = w + i * 32;
        float amax = nvl_qt_amax(b, 32);
        if (isinf(amax) || isnan(amax)) {
            nvl_report("tensor '%s': block %llu holds %g", name,
                       (unsigned long long)i, (double)amax);
            return NVL_ERR_INVALID;
        }
        int x = shared_exponent(amax);
        s[i] = (unsigned char)(x + 127);
        for (int k = 0; k < 32; k++)
            q[i * 16 + k / 2] |=
                (unsigned char)(nvl_e2m1_encode(ldexpf(b[k], -x))
                                << (4 * (k & 1)));
    }
    return NVL_OK;
}

/* compressed-tensors' quantization_config for the MXFP4A16 preset as its
 * ModelCompressor.update_config writes it (the example config.json of
 * vllm-project/compressed-tensors' getting-started/install.md in its
 * docs, there with the MXFP4 preset's dynamic group-32 input_activations:
 * here null, weight-only, as vLLM's CompressedTensorsW4A16Mxfp4 runs
 * it) */
void nvl_qc_mxfp4(json_t *exclude, json_t *qconfig, json_t **hf_out)
{
    json_t *w = json_pack(
        "{s:n, s:n, s:b, s:i, s:i, s:s, s:o, s:s, s:s, s:b, s:s, s:n}",
        "actorder", "block_structure", "dynamic", 0, "group_size", 32,
        "num_bits", 4, "observer", "memoryless_minmax", "observer_kwargs",
        json_object(), "scale_dtype", "torch.uint8", "strategy", "group",
        "symmetric", 1, "type", "float", "zp_dtype");
    nvl_qc_ct("mxfp4-pack-quantized", w, json_null(), exclude, qconfig);
    json_t *g = json_object_get(json_object_get(qconfig, "config_groups"),
                                "group_0");
    json_object_set_new(g, "format", json_string("mxfp4-pack-quantized"));
    json_object_set_new(g, "output_activations", json_null());
    json_object_set_new(qconfig, "global_compression_ratio", json_null());
    json_object_set_new(qconfig, "sparsity_config", json_object());
    json_object_set_new(qconfig, "transform_config", json_object());
    *hf_out = NULL;
}
