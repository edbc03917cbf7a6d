/* Shared by the element-type unit tests (test_dtype*.c): bit casts,
 * conversions through nvl_dtype_from_float / _to_float, and max / min as
 * the GPU computes them.  Header-only (static inline). */
#ifndef NVLEMU_TEST_DTYPE_TEST_H
#define NVLEMU_TEST_DTYPE_TEST_H

#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/coll.h"
#include "reports.h"

/* ---- helpers ------------------------------------------------------------- */

static inline float f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t bits_of_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline uint16_t to_bf16(float f)
{
    uint16_t h;
    nvl_dtype_from_float(NVL_DT_BF16, f, &h);
    return h;
}

static inline uint16_t to_f16(float f)
{
    uint16_t h;
    nvl_dtype_from_float(NVL_DT_F16, f, &h);
    return h;
}

static inline uint8_t to_fp8(float f)
{
    uint8_t c;
    nvl_dtype_from_float(NVL_DT_FP8_E4M3, f, &c);
    return c;
}

static inline float of_bf16(uint16_t h) { return nvl_dtype_to_float(NVL_DT_BF16, &h); }
static inline float of_f16(uint16_t h) { return nvl_dtype_to_float(NVL_DT_F16, &h); }
static inline float of_fp8(uint8_t c) { return nvl_dtype_to_float(NVL_DT_FP8_E4M3, &c); }

/* max and min as on the GPU (fmax.f32, __hmax): a NaN operand, quiet or
 * signaling, yields the other one.  (glibc's fmaxf returns NaN for a
 * signaling one.) */
static inline float gpu_max(float a, float b) { return isnan(a) ? b : isnan(b) ? a : fmaxf(a, b); }
static inline float gpu_min(float a, float b) { return isnan(a) ? b : isnan(b) ? a : fminf(a, b); }

/* Bits compared, so that -0.0 and 0.0 differ. */
#define assert_same_float(a, b) assert_int_equal(bits_of_f32(a), bits_of_f32(b))

#endif
