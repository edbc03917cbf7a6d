/* Element types: names and parsing, conversions (exhaustive round trips,
 * ties, saturation, overflow, subnormals) and the element-wise reduction. */
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

static float f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_of_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint16_t to_bf16(float f)
{
    uint16_t h;
    nvl_dtype_from_float(NVL_DT_BF16, f, &h);
    return h;
}

static uint16_t to_f16(float f)
{
    uint16_t h;
    nvl_dtype_from_float(NVL_DT_F16, f, &h);
    return h;
}

static uint8_t to_fp8(float f)
{
    uint8_t c;
    nvl_dtype_from_float(NVL_DT_FP8_E4M3, f, &c);
    return c;
}

static float of_bf16(uint16_t h) { return nvl_dtype_to_float(NVL_DT_BF16, &h); }
static float of_f16(uint16_t h) { return nvl_dtype_to_float(NVL_DT_F16, &h); }
static float of_fp8(uint8_t c) { return nvl_dtype_to_float(NVL_DT_FP8_E4M3, &c); }

/* max and min as on the GPU (fmax.f32, __hmax): a NaN operand, quiet or
 * signaling, yields the other one.  (glibc's fmaxf returns NaN for a
 * signaling one.) */
static float gpu_max(float a, float b) { return isnan(a) ? b : isnan(b) ? a : fmaxf(a, b); }
static float gpu_min(float a, float b) { return isnan(a) ? b : isnan(b) ? a : fminf(a, b); }

/* Bits compared, so that -0.0 and 0.0 differ. */
#define assert_same_float(a, b) assert_int_equal(bits_of_f32(a), bits_of_f32(b))

/* ---- names and parsing --------------------------------------------------- */

static void test_sizes_and_names(void **state)
{
    (void)state;
    assert_int_equal(nvl_dtype_size(NVL_DT_F32), 4);
    assert_int_equal(nvl_dtype_size(NVL_DT_BF16), 2);
    assert_int_equal(nvl_dtype_size(NVL_DT_F16), 2);
    assert_int_equal(nvl_dtype_size(NVL_DT_FP8_E4M3), 1);

    assert_string_equal(nvl_dtype_name(NVL_DT_F32), "float");
    assert_string_equal(nvl_dtype_name(NVL_DT_BF16), "bfloat16");
    assert_string_equal(nvl_dtype_name(NVL_DT_F16), "half");
    assert_string_equal(nvl_dtype_name(NVL_DT_FP8_E4M3), "f8e4m3");

    assert_string_equal(nvl_redop_name(NVL_OP_SUM), "sum");
    assert_string_equal(nvl_redop_name(NVL_OP_MAX), "max");
    assert_string_equal(nvl_redop_name(NVL_OP_MIN), "min");

    assert_string_equal(nvl_coll_name(NVL_COLL_BROADCAST), "Broadcast");
    assert_string_equal(nvl_coll_name(NVL_COLL_REDUCE), "Reduce");
    assert_string_equal(nvl_coll_name(NVL_COLL_ALLGATHER), "AllGather");
    assert_string_equal(nvl_coll_name(NVL_COLL_REDUCESCATTER), "ReduceScatter");
    assert_string_equal(nvl_coll_name(NVL_COLL_ALLREDUCE), "AllReduce");
    assert_string_equal(nvl_coll_name(NVL_COLL_ALLTOALL), "AllToAll");
    assert_string_equal(nvl_coll_name(NVL_COLL_SENDRECV), "SendRecv");
}

static void test_dtype_parse_round_trip(void **state)
{
    (void)state;
    for (int t = 0; t < NVL_DT_COUNT; t++) {
        nvl_dtype_t got = NVL_DT_COUNT;
        assert_int_equal(nvl_dtype_parse(nvl_dtype_name((nvl_dtype_t)t), &got), NVL_OK);
        assert_int_equal(got, t);
    }
    static const struct {
        const char *name;
        nvl_dtype_t dtype;
    } cases[] = {
        {"f32", NVL_DT_F32},       {"FLOAT", NVL_DT_F32},
        {"bf16", NVL_DT_BF16},     {"BFloat16", NVL_DT_BF16},
        {"f16", NVL_DT_F16},       {"Half", NVL_DT_F16},
        {"fp8", NVL_DT_FP8_E4M3},  {"e4m3", NVL_DT_FP8_E4M3},
        {"F8E4M3", NVL_DT_FP8_E4M3}, {"fp8_e4m3", NVL_DT_FP8_E4M3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nvl_dtype_t got = NVL_DT_COUNT;
        assert_int_equal(nvl_dtype_parse(cases[i].name, &got), NVL_OK);
        assert_int_equal(got, cases[i].dtype);
    }
}

static void test_dtype_parse_error(void **state)
{
    (void)state;
    static const char *const bad[] = {"double", "int8", "f8e5m2", "", "float "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nvl_dtype_t got = NVL_DT_BF16;
        capture_reports(NULL);
        nvl_status_t st = nvl_dtype_parse(bad[i], &got);
        release_reports(NULL);
        assert_int_equal(st, NVL_ERR_INVALID);
        assert_int_equal(got, NVL_DT_BF16); /* untouched on error */
        assert_int_equal(reports.count, 1);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
        assert_non_null(strstr(reports.last, quoted));
        for (int t = 0; t < NVL_DT_COUNT; t++)
            assert_non_null(strstr(reports.last, nvl_dtype_name((nvl_dtype_t)t)));
        assert_non_null(strstr(reports.last, "bf16"));
        assert_non_null(strstr(reports.last, "fp8"));
    }
    nvl_dtype_t got = NVL_DT_BF16;
    capture_reports(NULL);
    assert_int_equal(nvl_dtype_parse(NULL, &got), NVL_ERR_INVALID);
    release_reports(NULL);
    assert_int_equal(reports.count, 1);
}

static void test_redop_parse(void **state)
{
    (void)state;
    for (int op = 0; op < NVL_OP_COUNT; op++) {
        nvl_redop_t got = NVL_OP_COUNT;
        assert_int_equal(nvl_redop_parse(nvl_redop_name((nvl_redop_t)op), &got), NVL_OK);
        assert_int_equal(got, op);
    }
    nvl_redop_t got = NVL_OP_COUNT;
    assert_int_equal(nvl_redop_parse("MAX", &got), NVL_OK);
    assert_int_equal(got, NVL_OP_MAX);

    /* nccl-tests' other operations are refused, not mapped. */
    static const char *const bad[] = {"prod", "avg", "mulsum", "all", "add"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        got = NVL_OP_MIN;
        capture_reports(NULL);
        nvl_status_t st = nvl_redop_parse(bad[i], &got);
        release_reports(NULL);
        assert_int_equal(st, NVL_ERR_INVALID);
        assert_int_equal(got, NVL_OP_MIN);
        assert_int_equal(reports.count, 1);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
        assert_non_null(strstr(reports.last, quoted));
        assert_non_null(strstr(reports.last, "unsupported"));
        assert_non_null(strstr(reports.last, "sum, max, min"));
    }
}

/* ---- exhaustive round trips ---------------------------------------------- */

static void test_fp8_all_codes(void **state)
{
    (void)state;
    for (unsigned c = 0; c < 256; c++) {
        float v = of_fp8((uint8_t)c);
        if ((c & 0x7f) == 0x7f) {
            assert_true(isnan(v));
            assert_int_equal(to_fp8(v) & 0x7f, 0x7f);
            continue;
        }
        assert_false(isnan(v));
        assert_false(isinf(v));
        assert_int_equal(to_fp8(v), c);
        assert_int_equal(signbit(v) != 0, (c & 0x80) != 0);
        /* codes order like their values: no holes, no overlaps */
        if ((c & 0x7f) > 0)
            assert_true(fabsf(v) > fabsf(of_fp8((uint8_t)(c - 1))));
    }
    assert_same_float(of_fp8(0x00), 0.0f);
    assert_same_float(of_fp8(0x80), -0.0f);
    assert_same_float(of_fp8(0x01), 0x1p-9f);
    assert_same_float(of_fp8(0x07), 7 * 0x1p-9f);
    assert_same_float(of_fp8(0x08), 0x1p-6f);
    assert_same_float(of_fp8(0x38), 1.0f);
    assert_same_float(of_fp8(0x39), 1.125f);
    assert_same_float(of_fp8(0x7e), 448.0f);
    assert_same_float(of_fp8(0xfe), -448.0f);
    assert_same_float(of_fp8(0xc0), -2.0f);
}

static void check_16bit_all_codes(nvl_dtype_t dtype, uint16_t exp_mask)
{
    uint16_t out;
    for (uint32_t c = 0; c < 65536; c++) {
        uint16_t code = (uint16_t)c;
        float v = nvl_dtype_to_float(dtype, &code);
        nvl_dtype_from_float(dtype, v, &out);
        bool nan_code = (code & exp_mask) == exp_mask && (code & ~exp_mask & 0x7fff) != 0;
        if (nan_code) {
            assert_true(isnan(v));
            assert_true((out & exp_mask) == exp_mask && (out & ~exp_mask & 0x7fff) != 0);
            assert_int_equal(out & 0x8000, code & 0x8000);
            continue;
        }
        assert_false(isnan(v));
        assert_int_equal(out, code);
        assert_int_equal(signbit(v) != 0, (code & 0x8000) != 0);
        if ((code & 0x7fff) > 0) {
            uint16_t prev = (uint16_t)(code - 1);
            assert_true(fabsf(v) > fabsf(nvl_dtype_to_float(dtype, &prev)));
        }
    }
}

static void test_bf16_all_codes(void **state)
{
    (void)state;
    check_16bit_all_codes(NVL_DT_BF16, 0x7f80);
    assert_same_float(of_bf16(0x3f80), 1.0f);
    assert_same_float(of_bf16(0x7f80), INFINITY);
    assert_same_float(of_bf16(0xff80), -INFINITY);
    assert_same_float(of_bf16(0x7f7f), f32_of_bits(0x7f7f0000));
    assert_same_float(of_bf16(0x0001), f32_of_bits(0x00010000)); /* subnormal */
}

static void test_f16_all_codes(void **state)
{
    (void)state;
    check_16bit_all_codes(NVL_DT_F16, 0x7c00);
    assert_same_float(of_f16(0x3c00), 1.0f);
    assert_same_float(of_f16(0x7bff), 65504.0f);
    assert_same_float(of_f16(0x7c00), INFINITY);
    assert_same_float(of_f16(0xfc00), -INFINITY);
    assert_same_float(of_f16(0xc000), -2.0f);
}

/* ---- rounding ------------------------------------------------------------ */

static void test_round_to_nearest_even(void **state)
{
    (void)state;
    /* bf16: 8 significant bits, ulp at 1.0 is 2^-7 */
    assert_int_equal(to_bf16(1.0f + 0x1p-8f), 0x3f80);        /* tie, down to even */
    assert_int_equal(to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);    /* tie, up to even */
    assert_int_equal(to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* above tie */
    assert_int_equal(to_bf16(1.0f + 0x1p-8f - 0x1p-20f), 0x3f80); /* below tie */
    assert_int_equal(to_bf16(257.0f), 0x4380);                /* 256 */
    assert_int_equal(to_bf16(259.0f), 0x4382);                /* 260 */
    assert_int_equal(to_bf16(-257.0f), 0xc380);

    /* f16: 11 significant bits */
    assert_int_equal(to_f16(1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    assert_int_equal(to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
    assert_int_equal(to_f16(2049.0f), 0x6800);                /* 2048|2050 tie: 2048 */
    assert_int_equal(to_f16(2051.0f), 0x6802);                /* 2050|2052 tie: 2052 */
    assert_int_equal(to_f16(-2049.0f), 0xe800);

    /* fp8 e4m3: 4 significant bits */
    assert_int_equal(to_fp8(1.0625f), 0x38);                  /* 1.0 */
    assert_int_equal(to_fp8(1.1875f), 0x3a);                  /* 1.25 */
    assert_int_equal(to_fp8(1.0625f + 0x1p-12f), 0x39);       /* 1.125 */
    assert_int_equal(to_fp8(17.0f), 0x58);                    /* 16 */
    assert_int_equal(to_fp8(19.0f), 0x5a);                    /* 20 */
    assert_int_equal(to_fp8(-17.0f), 0xd8);
    assert_int_equal(to_fp8(432.0f), 0x7e);                   /* 416|448 tie: 448 */
    assert_int_equal(to_fp8(400.0f), 0x7c);                   /* 384|416 tie: 384 */
}

static void test_fp8_saturation(void **state)
{
    (void)state;
    static const float big[] = {448.0f, 449.0f, 463.9f, 464.0f, 464.1f, 480.0f,
                                1e6f,   FLT_MAX, INFINITY};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        assert_int_equal(to_fp8(big[i]), 0x7e);
        assert_int_equal(to_fp8(-big[i]), 0xfe);
    }
    assert_int_equal(to_fp8(NAN) & 0x7f, 0x7f);
    assert_int_equal(to_fp8(-NAN) & 0x7f, 0x7f);
    assert_true(isnan(of_fp8(to_fp8(NAN))));
}

static void test_f16_bf16_overflow(void **state)
{
    (void)state;
    assert_int_equal(to_f16(65504.0f), 0x7bff);
    assert_int_equal(to_f16(65519.99f), 0x7bff);
    assert_int_equal(to_f16(65520.0f), 0x7c00); /* tie: the even neighbour is inf */
    assert_int_equal(to_f16(1e6f), 0x7c00);
    assert_int_equal(to_f16(-1e6f), 0xfc00);
    assert_int_equal(to_f16(FLT_MAX), 0x7c00);
    assert_int_equal(to_f16(INFINITY), 0x7c00);
    assert_int_equal(to_f16(-INFINITY), 0xfc00);
    assert_true(isnan(of_f16(to_f16(NAN))));

    assert_int_equal(to_bf16(FLT_MAX), 0x7f80); /* rounds past bf16's max */
    assert_int_equal(to_bf16(f32_of_bits(0x7f7f7fff)), 0x7f7f);
    assert_int_equal(to_bf16(INFINITY), 0x7f80);
    assert_int_equal(to_bf16(-INFINITY), 0xff80);
    assert_true(isnan(of_bf16(to_bf16(NAN))));
    /* a NaN whose payload sits only in the low bits must not become inf */
    uint16_t h = to_bf16(f32_of_bits(0x7f800001));
    assert_true(isnan(of_bf16(h)));
    h = to_bf16(f32_of_bits(0xffbfffff));
    assert_true(isnan(of_bf16(h)));
    assert_int_equal(h & 0x8000, 0x8000);
}

static void test_subnormals(void **state)
{
    (void)state;
    /* f16: subnormal quantum 2^-24, smallest normal 2^-14 */
    assert_same_float(of_f16(0x0001), 0x1p-24f);
    assert_same_float(of_f16(0x03ff), 1023 * 0x1p-24f);
    assert_same_float(of_f16(0x0400), 0x1p-14f);
    assert_same_float(of_f16(0x8001), -0x1p-24f);
    assert_int_equal(to_f16(0x1p-24f), 0x0001);
    assert_int_equal(to_f16(1023 * 0x1p-24f), 0x03ff);
    assert_int_equal(to_f16(0x1p-25f), 0x0000);                 /* tie to 0 */
    assert_int_equal(to_f16(0x1p-25f + 0x1p-40f), 0x0001);
    assert_int_equal(to_f16(3 * 0x1p-25f), 0x0002);             /* tie to even */
    assert_int_equal(to_f16(0x1p-14f - 0x1p-25f), 0x0400);      /* up to normal */
    assert_int_equal(to_f16(-0x1p-30f), 0x8000);                /* -0 */
    assert_int_equal(to_f16(f32_of_bits(0x00000001)), 0x0000);  /* f32 subnormal */

    /* fp8: subnormal quantum 2^-9, smallest normal 2^-6 */
    assert_int_equal(to_fp8(0x1p-9f), 0x01);
    assert_int_equal(to_fp8(5 * 0x1p-9f), 0x05);
    assert_int_equal(to_fp8(0x1p-10f), 0x00);                   /* tie to 0 */
    assert_int_equal(to_fp8(0x1p-10f + 0x1p-20f), 0x01);
    assert_int_equal(to_fp8(3 * 0x1p-10f), 0x02);               /* tie to even */
    assert_int_equal(to_fp8(5 * 0x1p-10f), 0x02);               /* tie to even */
    assert_int_equal(to_fp8(7.5f * 0x1p-9f), 0x08);             /* up to normal */
    assert_int_equal(to_fp8(-0x1p-9f), 0x81);
    assert_int_equal(to_fp8(-0x1p-12f), 0x80);                  /* -0 */

    /* bf16 keeps f32's exponent range, subnormals included */
    assert_int_equal(to_bf16(f32_of_bits(0x00010000)), 0x0001);
    assert_int_equal(to_bf16(f32_of_bits(0x00008000)), 0x0000); /* tie to 0 */
    assert_int_equal(to_bf16(f32_of_bits(0x00018000)), 0x0002); /* tie to even */
    assert_int_equal(to_bf16(f32_of_bits(0x007fffff)), 0x0080); /* up to normal */
    assert_int_equal(to_bf16(f32_of_bits(0x80010000)), 0x8001);
}

/* ---- reduction ----------------------------------------------------------- */

/* Runs op over a and b (values exactly representable in dtype) and checks
 * the result against want (representable too, or the expected rounding). */
static void check_reduce(nvl_dtype_t dtype, nvl_redop_t op, const float *a,
                         const float *b, const float *want, size_t n)
{
    unsigned char x[64], y[64], w[64];
    size_t sz = nvl_dtype_size(dtype);
    assert_true(n * sz <= sizeof x);
    for (size_t i = 0; i < n; i++) {
        nvl_dtype_from_float(dtype, a[i], x + i * sz);
        nvl_dtype_from_float(dtype, b[i], y + i * sz);
        nvl_dtype_from_float(dtype, want[i], w + i * sz);
        /* inputs must be exact, so that only the reduction rounds */
        assert_same_float(nvl_dtype_to_float(dtype, x + i * sz), a[i]);
        assert_same_float(nvl_dtype_to_float(dtype, y + i * sz), b[i]);
    }
    nvl_reduce_into(dtype, op, x, y, n);
    for (size_t i = 0; i < n; i++) {
        float got = nvl_dtype_to_float(dtype, x + i * sz);
        if (isnan(want[i])) {
            assert_true(isnan(got));
            continue;
        }
        if (memcmp(x + i * sz, w + i * sz, sz) != 0)
            fail_msg("%s %s element %zu: %g %s %g gave %g, expected %g",
                     nvl_dtype_name(dtype), nvl_redop_name(op), i, (double)a[i],
                     nvl_redop_name(op), (double)b[i], (double)got, (double)want[i]);
        /* y is read only */
        assert_same_float(nvl_dtype_to_float(dtype, y + i * sz), b[i]);
    }
}

#define N(arr) (sizeof(arr) / sizeof((arr)[0]))

static void test_reduce_f32(void **state)
{
    (void)state;
    const float a[] = {1.0f, -2.5f, 1e30f, 0.1f, 3.0f, NAN, 7.0f, FLT_MAX};
    const float b[] = {2.0f, 0.5f, 1e30f, 0.2f, -3.0f, 4.0f, NAN, FLT_MAX};
    const float sum[] = {3.0f, -2.0f, 2e30f, 0.1f + 0.2f, 0.0f, NAN, NAN, INFINITY};
    const float max[] = {2.0f, 0.5f, 1e30f, 0.2f, 3.0f, 4.0f, 7.0f, FLT_MAX};
    const float min[] = {1.0f, -2.5f, 1e30f, 0.1f, -3.0f, 4.0f, 7.0f, FLT_MAX};
    check_reduce(NVL_DT_F32, NVL_OP_SUM, a, b, sum, N(a));
    check_reduce(NVL_DT_F32, NVL_OP_MAX, a, b, max, N(a));
    check_reduce(NVL_DT_F32, NVL_OP_MIN, a, b, min, N(a));
}

static void test_reduce_bf16(void **state)
{
    (void)state;
    const float a[] = {1.0f, 256.0f, 256.0f, 255.0f, -1.5f, NAN, 3.0f, 0x1p-8f};
    const float b[] = {0x1p-8f, 1.0f, 3.0f, 1.0f, 0.25f, 2.0f, NAN, -1.0f};
    /* 1+2^-8 and 257 are ties (to even); 259 rounds up to 260 */
    const float sum[] = {1.0f, 256.0f, 260.0f, 256.0f, -1.25f, NAN, NAN, -0.99609375f};
    const float max[] = {1.0f, 256.0f, 256.0f, 255.0f, 0.25f, 2.0f, 3.0f, 0x1p-8f};
    const float min[] = {0x1p-8f, 1.0f, 3.0f, 1.0f, -1.5f, 2.0f, 3.0f, -1.0f};
    check_reduce(NVL_DT_BF16, NVL_OP_SUM, a, b, sum, N(a));
    check_reduce(NVL_DT_BF16, NVL_OP_MAX, a, b, max, N(a));
    check_reduce(NVL_DT_BF16, NVL_OP_MIN, a, b, min, N(a));
}

static void test_reduce_f16(void **state)
{
    (void)state;
    const float a[] = {2048.0f, 2048.0f, 65504.0f, 0.5f, -0.75f, NAN, 0x1p-24f, -65504.0f};
    const float b[] = {1.0f, 3.0f, 65504.0f, 0.25f, 0.5f, -1.0f, 0x1p-24f, -32.0f};
    /* 2049 ties to 2048; 2051 rounds to 2052; 65504+65504 overflows to inf;
     * -65536 ties between -65504 and -inf, to -inf (even) */
    const float sum[] = {2048.0f, 2052.0f, INFINITY, 0.75f, -0.25f, NAN, 0x1p-23f, -INFINITY};
    const float max[] = {2048.0f, 2048.0f, 65504.0f, 0.5f, 0.5f, -1.0f, 0x1p-24f, -32.0f};
    const float min[] = {1.0f, 3.0f, 65504.0f, 0.25f, -0.75f, -1.0f, 0x1p-24f, -65504.0f};
    check_reduce(NVL_DT_F16, NVL_OP_SUM, a, b, sum, N(a));
    check_reduce(NVL_DT_F16, NVL_OP_MAX, a, b, max, N(a));
    check_reduce(NVL_DT_F16, NVL_OP_MIN, a, b, min, N(a));
}

static void test_reduce_fp8(void **state)
{
    (void)state;
    const float a[] = {448.0f, 16.0f, 16.0f, 1.0f, 0x1p-9f, -1.0f, NAN, -448.0f};
    const float b[] = {448.0f, 1.0f, 3.0f, 0.125f, 0x1p-9f, 1.0f, 2.0f, -64.0f};
    /* 896 saturates to 448; 17 ties to 16; 19 rounds to 20; subnormals add */
    const float sum[] = {448.0f, 16.0f, 20.0f, 1.125f, 0x1p-8f, 0.0f, NAN, -448.0f};
    const float max[] = {448.0f, 16.0f, 16.0f, 1.0f, 0x1p-9f, 1.0f, 2.0f, -64.0f};
    const float min[] = {448.0f, 1.0f, 3.0f, 0.125f, 0x1p-9f, -1.0f, 2.0f, -448.0f};
    check_reduce(NVL_DT_FP8_E4M3, NVL_OP_SUM, a, b, sum, N(a));
    check_reduce(NVL_DT_FP8_E4M3, NVL_OP_MAX, a, b, max, N(a));
    check_reduce(NVL_DT_FP8_E4M3, NVL_OP_MIN, a, b, min, N(a));
}

/* Long arrays (vectorized body and remainder, a start off the vector
 * alignment) and in-place reduction agree with element-by-element
 * conversion. */
static void test_reduce_long_and_in_place(void **state)
{
    (void)state;
    enum { LEN = 1003 };
    static _Alignas(16) unsigned char xb[(LEN + 1) * 4], yb[(LEN + 1) * 4],
        zb[(LEN + 1) * 4];
    for (int t = 0; t < NVL_DT_COUNT; t++) {
        nvl_dtype_t dt = (nvl_dtype_t)t;
        size_t sz = nvl_dtype_size(dt);
        /* element 1 onwards: aligned for the type, not for vectors */
        unsigned char *x = xb + sz, *y = yb + sz, *z = zb + sz;
        for (int op = 0; op < NVL_OP_COUNT; op++) {
            for (size_t i = 0; i < LEN; i++) {
                float va = (float)((int)(i * 37 % 101) - 50) * 0.375f;
                float vb = (float)((int)(i * 53 % 89) - 44) * 0.8125f;
                nvl_dtype_from_float(dt, va, x + i * sz);
                nvl_dtype_from_float(dt, vb, y + i * sz);
            }
            memcpy(z, x, LEN * sz);
            nvl_reduce_into(dt, (nvl_redop_t)op, x, y, LEN);
            for (size_t i = 0; i < LEN; i++) {
                float va = nvl_dtype_to_float(dt, z + i * sz);
                float vb = nvl_dtype_to_float(dt, y + i * sz);
                float r = op == NVL_OP_SUM ? va + vb
                          : op == NVL_OP_MAX ? gpu_max(va, vb)
                                             : gpu_min(va, vb);
                unsigned char want[4];
                nvl_dtype_from_float(dt, r, want);
                assert_memory_equal(x + i * sz, want, sz);
            }
            /* in place: y op= y */
            memcpy(z, y, LEN * sz);
            nvl_reduce_into(dt, (nvl_redop_t)op, y, y, LEN);
            for (size_t i = 0; i < LEN; i++) {
                float v = nvl_dtype_to_float(dt, z + i * sz);
                unsigned char want[4];
                nvl_dtype_from_float(dt, op == NVL_OP_SUM ? v + v : v, want);
                assert_memory_equal(y + i * sz, want, sz);
            }
        }
    }
    nvl_reduce_into(NVL_DT_F32, NVL_OP_SUM, NULL, NULL, 0); /* nothing to do */
}

/* The reduction loops (vectorized, possibly built for several instruction
 * sets) agree with the scalar conversions on every code: all 256 x 256 fp8
 * pairs, and every 16-bit code against a scrambled partner, NaNs,
 * infinities and subnormals included. */
static void check_reduce_codes(nvl_dtype_t dt, nvl_redop_t op,
                               const unsigned char *a, const unsigned char *b,
                               size_t n)
{
    size_t sz = nvl_dtype_size(dt);
    unsigned char *x = malloc(n * sz);
    assert_non_null(x);
    memcpy(x, a, n * sz);
    nvl_reduce_into(dt, op, x, b, n);
    for (size_t i = 0; i < n; i++) {
        float va = nvl_dtype_to_float(dt, a + i * sz);
        float vb = nvl_dtype_to_float(dt, b + i * sz);
        float got = nvl_dtype_to_float(dt, x + i * sz);
        float r = op == NVL_OP_SUM ? va + vb : op == NVL_OP_MAX ? gpu_max(va, vb) : gpu_min(va, vb);
        if (isnan(r)) {
            if (!isnan(got))
                fail_msg("%s %s: %a, %a gave %a, expected NaN", nvl_dtype_name(dt),
                         nvl_redop_name(op), (double)va, (double)vb, (double)got);
            continue;
        }
        if (va == 0.0f && vb == 0.0f && op != NVL_OP_SUM) {
            assert_true(got == 0.0f); /* either zero may win, as in fmaxf */
            continue;
        }
        unsigned char want[4];
        nvl_dtype_from_float(dt, r, want);
        if (memcmp(x + i * sz, want, sz) != 0)
            fail_msg("%s %s: %a, %a gave %a, expected %a", nvl_dtype_name(dt),
                     nvl_redop_name(op), (double)va, (double)vb, (double)got,
                     (double)nvl_dtype_to_float(dt, want));
    }
    free(x);
}

static void test_reduce_all_codes(void **state)
{
    (void)state;
    enum { N8 = 256 * 256, N16 = 65536 };
    unsigned char *a = malloc(N16 * 2), *b = malloc(N16 * 2);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t i = 0; i < N8; i++) {
        a[i] = (unsigned char)(i >> 8);
        b[i] = (unsigned char)i;
    }
    for (int op = 0; op < NVL_OP_COUNT; op++)
        check_reduce_codes(NVL_DT_FP8_E4M3, (nvl_redop_t)op, a, b, N8);
    for (uint32_t i = 0; i < N16; i++) {
        uint16_t ca = (uint16_t)i, cb = (uint16_t)(i * 40503u + 12345u);
        memcpy(a + 2 * i, &ca, 2);
        memcpy(b + 2 * i, &cb, 2);
    }
    for (int op = 0; op < NVL_OP_COUNT; op++) {
        check_reduce_codes(NVL_DT_BF16, (nvl_redop_t)op, a, b, N16);
        check_reduce_codes(NVL_DT_F16, (nvl_redop_t)op, a, b, N16);
    }
    /* f32: the bf16 and f16 values, as pairs of floats */
    float *fa = malloc(N16 * sizeof(float)), *fb = malloc(N16 * sizeof(float));
    assert_non_null(fa);
    assert_non_null(fb);
    for (int t = NVL_DT_BF16; t <= NVL_DT_F16; t++) {
        for (size_t i = 0; i < N16; i++) {
            fa[i] = nvl_dtype_to_float((nvl_dtype_t)t, a + 2 * i);
            fb[i] = nvl_dtype_to_float((nvl_dtype_t)t, b + 2 * i);
        }
        for (int op = 0; op < NVL_OP_COUNT; op++)
            check_reduce_codes(NVL_DT_F32, (nvl_redop_t)op, (unsigned char *)fa,
                               (unsigned char *)fb, N16);
    }
    free(fa);
    free(fb);
    free(a);
    free(b);
}

static void test_reduce_invalid(void **state)
{
    (void)state;
    float x[2] = {1.0f, 2.0f}, y[2] = {3.0f, 4.0f};
    capture_reports(NULL);
    nvl_reduce_into(NVL_DT_F32, NVL_OP_COUNT, x, y, 2);
    nvl_reduce_into(NVL_DT_COUNT, NVL_OP_SUM, x, y, 2);
    release_reports(NULL);
    assert_int_equal(reports.count, 2);
    assert_same_float(x[0], 1.0f);
    assert_same_float(x[1], 2.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_and_names),
        cmocka_unit_test(test_dtype_parse_round_trip),
        cmocka_unit_test(test_dtype_parse_error),
        cmocka_unit_test(test_redop_parse),
        cmocka_unit_test(test_fp8_all_codes),
        cmocka_unit_test(test_bf16_all_codes),
        cmocka_unit_test(test_f16_all_codes),
        cmocka_unit_test(test_round_to_nearest_even),
        cmocka_unit_test(test_fp8_saturation),
        cmocka_unit_test(test_f16_bf16_overflow),
        cmocka_unit_test(test_subnormals),
        cmocka_unit_test(test_reduce_f32),
        cmocka_unit_test(test_reduce_bf16),
        cmocka_unit_test(test_reduce_f16),
        cmocka_unit_test(test_reduce_fp8),
        cmocka_unit_test(test_reduce_long_and_in_place),
        cmocka_unit_test(test_reduce_all_codes),
        cmocka_unit_test(test_reduce_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
