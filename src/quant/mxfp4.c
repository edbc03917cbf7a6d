/* OCP MX-FP4 as the OCP Microscaling Formats (MX) v1.0 specification
 * converts a vector of 32 scalars to an MX block: shared exponent
 * X = floor(log2(max |v|)) - emax_elem (2 for E2M1), each element
 * v / 2^X rounded to nearest even on the E2M1 grid and clamped to +-6; an
 * all-zero block takes the smallest E8M0 scale, 2^-127.  Stored as
 * gpt-oss's checkpoints store MX-FP4 (transformers'
 * integrations/mxfp4.py, convert_moe_packed_tensors): weight_blocks U8
 * [R, C/32, 16] (element 2i in the low nibble), weight_scales U8
 * [R, C/32] (the E8M0 code, X + 127). */
#include <math.h>

#include "quant_impl.h"

nvl_status_t nvl_qz_mxfp4(const nvl_quant_row_t *r, const char *name,
                          const float *w, uint64_t rows, uint64_t cols,
                          float amax_in, nvl_quant_tensor_t *out)
{
    (void)amax_in; /* no per-tensor scale */
    if (nvl_qt_check_block("mxfp4", name, cols, 32, false) != NVL_OK)
        return NVL_ERR_INVALID;
    uint64_t nb = cols / 32;
    uint64_t dshape[3] = {rows, nb, 16}, sshape[2] = {rows, nb};
    unsigned char *q = nvl_qt_part(out, 0, &r->data, 3, dshape, 1);
    unsigned char *s = nvl_qt_part(out, 1, &r->scale, 2, sshape, 1);
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
        int ex = 0;
        frexpf(amax, &ex); /* amax = m 2^ex, m in [0.5, 1) */
        int x = amax > 0.0f ? ex - 1 - 2 : -127;
        x = x < -127 ? -127 : x > 127 ? 127 : x;
        s[i] = (unsigned char)(x + 127);
        for (int k = 0; k < 32; k++)
            q[i * 16 + k / 2] |=
                (unsigned char)(nvl_e2m1_encode(ldexpf(b[k], -x))
                                << (4 * (k & 1)));
    }
    return NVL_OK;
}

/* transformers' Mxfp4Config (quant_method "mxfp4",
 * modules_to_not_convert), as gpt-oss's config.json carries it */
void nvl_qc_mxfp4(json_t *exclude, json_t *qconfig, json_t **hf_out)
{
    json_object_set_new(qconfig, "quant_method", json_string("mxfp4"));
    json_object_set(qconfig, "modules_to_not_convert", exclude);
    *hf_out = NULL;
}
