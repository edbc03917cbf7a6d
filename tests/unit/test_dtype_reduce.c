/* Element types: the element-wise reduction (sum, max, min) of every type,
 * long and in place, every code of the 8-bit type, bad arguments. */
#include "dtype_test.h"

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
