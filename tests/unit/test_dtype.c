/* Element types: names and parsing, conversions (exhaustive round trips,
 * ties, saturation, overflow, subnormals); the reduction: test_dtype_reduce.c. */
#include "dtype_test.h"

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
