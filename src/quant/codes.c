/* The element and scale codes of the quantized formats (include/nvlemu/
 * quant.h): E2M1 (OCP MX v1.0's FP4 element type), E4M3 "fn" (OCP 8-bit
 * floating point v1.0: bias 7, no infinities, S.1111.111 NaN, 448 the
 * largest) and E8M0 (OCP MX v1.0's scale: 2^(c - 127), 0xFF NaN). */
#include <math.h>
#include <string.h>

#include "nvlemu/quant.h"

/* OCP MX v1.0's E2M1 values, as ModelOpt's e2m1_values lists them
 * (modelopt/torch/quantization/qtensor/nvfp4_tensor.py) */
static const float e2m1_values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
                                      4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                                      -2.0f, -3.0f, -4.0f, -6.0f};

float nvl_e2m1_decode(uint8_t c)
{
    return e2m1_values[c & 0x0F];
}

/* ModelOpt's NVFP4QTensor._cast_fp4: the ordinal is the count of the
 * midpoints (e2m1_bounds) below |x| (torch.searchsorted, left), plus one
 * at the midpoints 0.75, 1.75 and 3.5, whose lower neighbour has an odd
 * code: round to nearest, ties to even; anything above 5 is 6.  The sign
 * bit is (x < 0): -0.0 gives code 0.  torch sorts NaN last, so NaN gives 7
 * (6.0). */
uint8_t nvl_e2m1_encode(float x)
{
    static const float bounds[7] = {0.25f, 0.75f, 1.25f, 1.75f,
                                    2.5f,  3.5f,  5.0f};
    uint8_t sign = x < 0.0f ? 8 : 0;
    float a = fabsf(x);
    if (isnan(a))
        return 7;
    uint8_t ord = 0;
    while (ord < 7 && bounds[ord] < a)
        ord++;
    if (a == 0.75f || a == 1.75f || a == 3.5f)
        ord++;
    return (uint8_t)(sign | ord);
}

float nvl_e4m3_decode(uint8_t c)
{
    int e = (c >> 3) & 0x0F, m = c & 7;
    if ((c & 0x7F) == 0x7F)
        return NAN;
    float v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
    return (c & 0x80) ? -v : v;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* torch's c10::detail::fp8e4m3fn_from_fp32_value (c10/util/Float8_e4m3fn.h):
 * below 2^-6 the value is added to 2^-5 (141 << 23) so that the float
 * unit's own round-to-nearest-even lands the subnormal's mantissa in the
 * low bits; above, the exponent is rebiased and the 20 dropped bits
 * rounded to nearest even by adding 0x7FFFF plus the kept lowest bit. */
uint8_t nvl_e4m3_encode(float x)
{
    const uint32_t nan_from = UINT32_C(1087) << 20; /* 480.0f */
    const uint32_t denorm_mask = UINT32_C(141) << 23;
    uint32_t f = bits_of(x);
    uint8_t sign = (uint8_t)((f >> 24) & 0x80);
    f &= 0x7FFFFFFFu;
    uint8_t r;
    if (f >= nan_from) {
        r = 0x7F;
    } else if (f < (UINT32_C(121) << 23)) {
        f = bits_of(float_of(f) + float_of(denorm_mask));
        r = (uint8_t)(f - denorm_mask);
    } else {
        uint32_t odd = (f >> 20) & 1;
        f += ((uint32_t)(7 - 127) << 23) + 0x7FFFF + odd;
        r = (uint8_t)(f >> 20);
    }
    return (uint8_t)(r | sign);
}

/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits; every
 * value is exact in float32 */
static float half_value(uint16_t h)
{
    int e = (h >> 10) & 0x1F;
    float m = (float)(h & 0x3FF);
    float v = e == 0    ? ldexpf(m, -24)
              : e == 31 ? (m != 0.0f ? NAN : INFINITY)
                        : ldexpf(m + 1024.0f, e - 25);
    return (h & 0x8000) ? -v : v;
}

float nvl_e8m0_decode(uint8_t c)
{
    return c == 0xFF ? NAN : ldexpf(1.0f, (int)c - 127);
}

float nvl_quant_scale_value(nvl_qcode_t code, const unsigned char *b)
{
    switch (code) {
    case NVL_QCODE_E4M3:
        return nvl_e4m3_decode(b[0]);
    case NVL_QCODE_E8M0:
        return nvl_e8m0_decode(b[0]);
    case NVL_QCODE_F32:
        return float_of((uint32_t)b[0] | (uint32_t)b[1] << 8 |
                        (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
    case NVL_QCODE_BF16:
        return float_of((uint32_t)b[0] << 16 | (uint32_t)b[1] << 24);
    case NVL_QCODE_F16:
        return half_value((uint16_t)(b[0] | b[1] << 8));
    case NVL_QCODE_I8:
        return (float)(int8_t)b[0];
    case NVL_QCODE_I4:
        return (float)((b[0] & 0x0F) - 8);
    case NVL_QCODE_E2M1:
        break;
    }
    return nvl_e2m1_decode(b[0]);
}

uint32_t nvl_quant_code_bytes(nvl_qcode_t c)
{
    return c == NVL_QCODE_F32                          ? 4
           : c == NVL_QCODE_BF16 || c == NVL_QCODE_F16 ? 2
                                                       : 1;
}
