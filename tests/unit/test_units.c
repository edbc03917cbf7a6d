/* Unit tests of quantities with units (src/util/units.c): every unit of
 * every kind parses to its base unit, bad text is refused with a reason that
 * names what is wrong, and nvl_qty_format writes text that reads back to the
 * same double, bit for bit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/units.h"

typedef struct {
    const char *text;
    double value; /* in the kind's base unit */
} case_t;

#define N_CASES(a) (sizeof(a) / sizeof((a)[0]))

/* Parses text, which must succeed, and returns the value. */
static double parse_ok(nvl_qty_kind_t kind, const char *text)
{
    double v = -1.0;
    char why[256] = "";
    nvl_status_t st = nvl_qty_parse(kind, text, &v, why, sizeof why);
    if (st != NVL_OK)
        print_error("nvl_qty_parse(%s, \"%s\") failed: %s\n",
                    nvl_qty_kind_name(kind), text, why);
    assert_int_equal(st, NVL_OK);
    return v;
}

/* Expects every case to parse to its value; `exact` cases must be equal,
 * the others within one part in 1e15 (decimal fractions such as 0.8us are
 * not exact in binary, whatever the implementation). */
static void check_cases(nvl_qty_kind_t kind, const case_t *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double v = parse_ok(kind, cases[i].text);
        double want = cases[i].value;
        if (fabs(v - want) > 1e-15 * fabs(want)) {
            print_error("\"%s\" parsed as %.17g, expected %.17g\n",
                        cases[i].text, v, want);
            fail();
        }
    }
}

/* Parses text, which must fail, checks that the value was left alone and
 * that the reason contains `expect`. */
static void parse_fails(nvl_qty_kind_t kind, const char *text,
                        const char *expect)
{
    double v = 12345.0;
    char why[256] = "";
    nvl_status_t st = nvl_qty_parse(kind, text, &v, why, sizeof why);
    if (st == NVL_OK)
        print_error("nvl_qty_parse(%s, \"%s\") accepted %.17g\n",
                    nvl_qty_kind_name(kind), text, v);
    assert_int_equal(st, NVL_ERR_INVALID);
    assert_true(v == 12345.0);
    if (strstr(why, expect) == NULL) {
        print_error("reason for \"%s\" was \"%s\", expected it to contain "
                    "\"%s\"\n", text, why, expect);
        fail();
    }
}

/* ---- every unit of every kind ----------------------------------------- */

static void test_bytes_units(void **state)
{
    (void)state;
    static const case_t cases[] = {
        {"1B", 1.0},           {"186GB", 186e9},      {"2KB", 2e3},
        {"3MB", 3e6},          {"4TB", 4e12},         {"1KiB", 1024.0},
        {"2MiB", 2097152.0},   {"80GiB", 85899345920.0},
        {"1TiB", 1099511627776.0},                    {"0B", 0.0},
        {"1.5KiB", 1536.0},    {"141 GB", 141e9},     {"  240GB  ", 240e9},
    };
    check_cases(NVL_QTY_BYTES, cases, N_CASES(cases));
}

/* nccl-tests' bare suffixes: powers of 1024 in either case, beside the SI
 * and IEC units (1G is 1GiB, 1GB is 10^9). */
static void test_bytes_nccl_tests_suffixes(void **state)
{
    (void)state;
    static const case_t cases[] = {
        {"1K", 1024.0},        {"1k", 1024.0},       {"8M", 8388608.0},
        {"8m", 8388608.0},     {"1G", 1073741824.0}, {"1g", 1073741824.0},
        {"2T", 2199023255552.0}, {"1.5K", 1536.0},   {"1GB", 1e9},
    };
    check_cases(NVL_QTY_BYTES, cases, N_CASES(cases));
    parse_fails(NVL_QTY_BYTES, "1P", "unknown unit 'P'");
    parse_fails(NVL_QTY_BYTES, "1Kb", "unknown unit 'Kb'");
}

/* A bare number is read in the caller's unit, or refused without one. */
static void test_parse_in_bare_unit(void **state)
{
    (void)state;
    double v = 0;
    char why[128];
    assert_int_equal(nvl_qty_parse_in(NVL_QTY_BYTES, "4096", "B", &v, why,
                                      sizeof why), NVL_OK);
    assert_true(v == 4096.0);
    assert_int_equal(nvl_qty_parse_in(NVL_QTY_TIME, "500", "ms", &v, why,
                                      sizeof why), NVL_OK);
    assert_true(v == 5e11);
    assert_int_equal(nvl_qty_parse_in(NVL_QTY_TIME, "0.5s", "ms", &v, why,
                                      sizeof why), NVL_OK);
    assert_true(v == 5e11);
    assert_int_equal(nvl_qty_parse_in(NVL_QTY_TIME, "500", NULL, &v, why,
                                      sizeof why), NVL_ERR_INVALID);
    assert_non_null(strstr(why, "missing unit"));
    assert_true(nvl_qty_unit_scale(NVL_QTY_TIME, "ms") == 1e9);
    assert_true(nvl_qty_unit_scale(NVL_QTY_BYTES, "G") == 1073741824.0);
    assert_true(nvl_qty_unit_scale(NVL_QTY_TIME, "GB") == 0.0);
}

static void test_bandwidth_units(void **state)
{
    (void)state;
    static const case_t cases[] = {
        {"1B/s", 1.0},        {"2KB/s", 2e3},         {"3MB/s", 3e6},
        {"50GB/s", 50e9},     {"8TB/s", 8e12},        {"1KiB/s", 1024.0},
        {"1MiB/s", 1048576.0}, {"1GiB/s", 1073741824.0},
        {"8b/s", 1.0},        {"8Kb/s", 1e3},         {"8Mb/s", 1e6},
        {"400Gb/s", 50e9},    {"1.6Tb/s", 200e9},     {"4.8TB/s", 4.8e12},
        {"26.562GB/s", 26.562e9},                     {"0B/s", 0.0},
    };
    check_cases(NVL_QTY_BW, cases, N_CASES(cases));
}

static void test_bits_are_an_eighth_of_bytes(void **state)
{
    (void)state;
    assert_true(parse_ok(NVL_QTY_BW, "400Gb/s") == 50e9);
    assert_true(parse_ok(NVL_QTY_BW, "400Gb/s") ==
                parse_ok(NVL_QTY_BW, "50GB/s"));
    assert_true(parse_ok(NVL_QTY_BW, "1b/s") == 0.125);
}

static void test_time_units_are_picoseconds(void **state)
{
    (void)state;
    static const case_t cases[] = {
        {"5ps", 5.0},        {"120ns", 120e3},  {"0.8us", 0.8e6},
        {"3.3us", 3.3e6},    {"2ms", 2e9},      {"1s", 1e12},
        {"0.5s", 0.5e12},    {"0us", 0.0},      {"500000ps", 0.5e6},
    };
    check_cases(NVL_QTY_TIME, cases, N_CASES(cases));
}

static void test_flops_units_both_spellings(void **state)
{
    (void)state;
    static const case_t cases[] = {
        {"1FLOP/s", 1.0},        {"3GFLOP/s", 3e9},
        {"989TFLOP/s", 989e12},  {"2.5PFLOP/s", 2.5e15},
        {"1FLOPS", 1.0},         {"3GFLOPS", 3e9},
        {"989TFLOPS", 989e12},   {"2.5PFLOPS", 2.5e15},
    };
    check_cases(NVL_QTY_FLOPS, cases, N_CASES(cases));
    assert_true(parse_ok(NVL_QTY_FLOPS, "989TFLOPS") ==
                parse_ok(NVL_QTY_FLOPS, "989TFLOP/s"));
}

static void test_rate_units(void **state)
{
    (void)state;
    static const case_t cases[] = {
        {"7op/s", 7.0},   {"2Kop/s", 2e3},  {"3Mop/s", 3e6},
        {"5Gop/s", 5e9},  {"4.99648Top/s", 4.99648e12},
    };
    check_cases(NVL_QTY_RATE, cases, N_CASES(cases));
}

static void test_frequency_units(void **state)
{
    (void)state;
    static const case_t cases[] = {
        {"50Hz", 50.0},  {"32kHz", 32e3},  {"1410MHz", 1410e6},
        {"1.98GHz", 1.98e9},  {"2.11GHz", 2.11e9},
    };
    check_cases(NVL_QTY_FREQ, cases, N_CASES(cases));
}

/* A decimal unit scales the written number exactly once: the value is the
 * double nearest to the decimal quantity (2.11GHz is 2.11e9, not 2.11 x
 * 1e9 = 2109999999.9999998), exponents and hexadecimal included. */
static void test_decimal_units_round_once(void **state)
{
    (void)state;
    static const struct { nvl_qty_kind_t kind; const char *text; double v; }
    cases[] = {
        {NVL_QTY_FREQ, "2.11GHz", 2.11e9}, {NVL_QTY_FREQ, " 1.965GHz", 1.965e9},
        {NVL_QTY_BW, "1.1TB/s", 1.1e12}, {NVL_QTY_BYTES, "1.5e3MB", 1.5e9},
        {NVL_QTY_BYTES, "0.3GB", 0.3e9}, {NVL_QTY_TIME, "0.7us", 0.7e6},
        {NVL_QTY_BYTES, "0x1eMB", 30e6}, {NVL_QTY_BYTES, "1.5KiB", 1536.0},
        /* an exponent past long (found by fuzz_qty): zero stays zero */
        {NVL_QTY_BYTES, "0e11111111111111111018KB", 0.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double v = parse_ok(cases[i].kind, cases[i].text);
        if (v != cases[i].v) {
            print_error("\"%s\" parsed as %.17g, expected exactly %.17g\n",
                        cases[i].text, v, cases[i].v);
            fail();
        }
    }
}

static void test_count(void **state)
{
    (void)state;
    static const case_t cases[] = {
        {"0", 0.0}, {"18", 18.0}, {" 72 ", 72.0}, {"4096", 4096.0},
        {"9007199254740992", 9007199254740992.0},
    };
    check_cases(NVL_QTY_COUNT, cases, N_CASES(cases));
}

static void test_ratio_plain_and_percent(void **state)
{
    (void)state;
    static const case_t cases[] = {
        {"0.8", 0.8}, {"80%", 0.8}, {"1", 1.0}, {"250%", 2.5},
        {"0%", 0.0},  {"2", 2.0},   {"50 %", 0.5},
    };
    check_cases(NVL_QTY_RATIO, cases, N_CASES(cases));
}

static void test_bool_spellings(void **state)
{
    (void)state;
    static const char *const yes[] = {"yes", "true", "on", "1", "YES",
                                      "True", "ON", " yes", "yes "};
    static const char *const no[] = {"no", "false", "off", "0", "NO",
                                     "False", "Off", " no", "no\t"};
    for (size_t i = 0; i < N_CASES(yes); i++)
        assert_true(parse_ok(NVL_QTY_BOOL, yes[i]) == 1.0);
    for (size_t i = 0; i < N_CASES(no); i++)
        assert_true(parse_ok(NVL_QTY_BOOL, no[i]) == 0.0);
}

/* ---- errors ------------------------------------------------------------ */

static void test_missing_unit(void **state)
{
    (void)state;
    parse_fails(NVL_QTY_BW, "50", "missing unit");
    parse_fails(NVL_QTY_BYTES, "186", "missing unit");
    parse_fails(NVL_QTY_TIME, "0.5", "missing unit");
    parse_fails(NVL_QTY_FLOPS, "2.5", "missing unit");
    parse_fails(NVL_QTY_RATE, "4", "missing unit");
    parse_fails(NVL_QTY_FREQ, "2", "missing unit");
}

static void test_unknown_unit_is_named(void **state)
{
    (void)state;
    parse_fails(NVL_QTY_BW, "50GBs", "unknown unit 'GBs'");
    parse_fails(NVL_QTY_BW, "50GB", "unknown unit 'GB'"); /* a size */
    parse_fails(NVL_QTY_BW, "50gb/s", "unknown unit 'gb/s'");
    parse_fails(NVL_QTY_BYTES, "80Gib", "unknown unit 'Gib'");
    parse_fails(NVL_QTY_TIME, "3 sec", "unknown unit 'sec'");
    parse_fails(NVL_QTY_TIME, "0.5u", "unknown unit 'u'");
    parse_fails(NVL_QTY_FLOPS, "2.5PF", "unknown unit 'PF'");
    parse_fails(NVL_QTY_RATE, "4Tops", "unknown unit 'Tops'");
    parse_fails(NVL_QTY_FREQ, "2ghz", "unknown unit 'ghz'");
}

static void test_negative_refused(void **state)
{
    (void)state;
    parse_fails(NVL_QTY_BW, "-50GB/s", "negative");
    parse_fails(NVL_QTY_TIME, "-1us", "negative");
    parse_fails(NVL_QTY_COUNT, "-1", "negative");
    parse_fails(NVL_QTY_RATIO, "-0.5", "negative");
}

static void test_not_a_number(void **state)
{
    (void)state;
    parse_fails(NVL_QTY_BW, "fast", "does not start with a number");
    parse_fails(NVL_QTY_BW, "GB/s", "does not start with a number");
    parse_fails(NVL_QTY_COUNT, "eighteen", "does not start with a number");
    parse_fails(NVL_QTY_BW, "", "no value");
    parse_fails(NVL_QTY_BW, "   ", "no value");
    parse_fails(NVL_QTY_BW, "infGB/s", "not finite");
    parse_fails(NVL_QTY_RATIO, "nan", "not finite");
    parse_fails(NVL_QTY_BYTES, "1e999GB", "too large");
    /* finite as written, infinite in base units */
    parse_fails(NVL_QTY_BYTES, "1e308KB", "too large once converted");
    parse_fails(NVL_QTY_FLOPS, "1e300PFLOP/s", "too large once converted");
    parse_fails(NVL_QTY_BOOL, "maybe", "'maybe' is not a yes/no value");
    parse_fails(NVL_QTY_BOOL, "", "no value");
}

static void test_count_must_be_whole(void **state)
{
    (void)state;
    parse_fails(NVL_QTY_COUNT, "1.5", "whole number");
    parse_fails(NVL_QTY_COUNT, "18.000001", "whole number");
    parse_fails(NVL_QTY_COUNT, "18 links", "a count takes no unit");
    parse_fails(NVL_QTY_COUNT, "1e300", "at most 2^53"); /* beyond 2^53 */
}

static void test_ratio_takes_no_unit(void **state)
{
    (void)state;
    parse_fails(NVL_QTY_RATIO, "0.8x", "a ratio takes no unit");
    parse_fails(NVL_QTY_RATIO, "80 percent", "a ratio takes no unit");
}

static void test_unit_lists_and_kind_names(void **state)
{
    (void)state;
    assert_non_null(strstr(nvl_qty_units(NVL_QTY_BW), "GB/s"));
    assert_non_null(strstr(nvl_qty_units(NVL_QTY_BW), "Gb/s"));
    assert_non_null(strstr(nvl_qty_units(NVL_QTY_BYTES), "GiB"));
    assert_non_null(strstr(nvl_qty_units(NVL_QTY_TIME), "us"));
    assert_non_null(strstr(nvl_qty_units(NVL_QTY_FLOPS), "TFLOPS"));
    assert_string_equal(nvl_qty_kind_name(NVL_QTY_BW), "bandwidth");
    assert_string_equal(nvl_qty_kind_name(NVL_QTY_TIME), "time");
    for (int k = 0; k < NVL_QTY_KIND_COUNT; k++) {
        assert_non_null(nvl_qty_units((nvl_qty_kind_t)k));
        assert_true(nvl_qty_units((nvl_qty_kind_t)k)[0] != '\0');
    }
    assert_string_equal(nvl_qty_units(NVL_QTY_KIND_COUNT), "");
}

/* ---- formatting -------------------------------------------------------- */

/* format(x) must read back to x bit for bit. */
static void check_round_trip(nvl_qty_kind_t kind, double x)
{
    char text[96];
    int n = nvl_qty_format(kind, x, text, sizeof text);
    assert_true(n > 0 && (size_t)n < sizeof text);
    double back = parse_ok(kind, text);
    if (memcmp(&back, &x, sizeof x) != 0) {
        print_error("%s %.17g formatted as \"%s\" reads back as %.17g\n",
                    nvl_qty_kind_name(kind), x, text, back);
        fail();
    }
}

static void test_format_round_trips_awkward_values(void **state)
{
    (void)state;
    static const double bw[] = {26.562e9, 26.5625e9, 478.125e9, 50e9, 0.0,
                                0.125,    1.0 / 3.0, 1e-9,      1e13,
                                4.8e12,   12345678901234.5, 0.1 + 0.2};
    static const double time_ps[] = {0.5e6, 3.3e6,    0.0,    1.0,    1e12,
                                     6.6e6, 1.25e6,   2.7e6,  7.0e15, 999.0,
                                     1001.0, 123456789.0};
    static const double rate[] = {4.99648e12, 4.18176e12, 4.68864e12, 1.0};
    static const double flops[] = {2.5e15, 989e12, 1979e12, 2.25e15, 0.0};
    static const double bytes[] = {186e9, 80.0 * 1073741824.0, 141e9, 1.0,
                                   1023.0, 1e16};
    static const double freq[] = {2.11e9, 1.98e9, 1.965e9, 1410e6, 60.0};
    static const double ratio[] = {0.8, 0.5, 1.0, 1.0 / 3.0, 2.0, 0.01,
                                   100.0, 0.1 + 0.2};
    for (size_t i = 0; i < N_CASES(bw); i++)
        check_round_trip(NVL_QTY_BW, bw[i]);
    for (size_t i = 0; i < N_CASES(time_ps); i++)
        check_round_trip(NVL_QTY_TIME, time_ps[i]);
    for (size_t i = 0; i < N_CASES(rate); i++)
        check_round_trip(NVL_QTY_RATE, rate[i]);
    for (size_t i = 0; i < N_CASES(flops); i++)
        check_round_trip(NVL_QTY_FLOPS, flops[i]);
    for (size_t i = 0; i < N_CASES(bytes); i++)
        check_round_trip(NVL_QTY_BYTES, bytes[i]);
    for (size_t i = 0; i < N_CASES(freq); i++)
        check_round_trip(NVL_QTY_FREQ, freq[i]);
    for (size_t i = 0; i < N_CASES(ratio); i++)
        check_round_trip(NVL_QTY_RATIO, ratio[i]);
    check_round_trip(NVL_QTY_COUNT, 0.0);
    check_round_trip(NVL_QTY_COUNT, 72.0);
    check_round_trip(NVL_QTY_COUNT, 9007199254740992.0);
    check_round_trip(NVL_QTY_BOOL, 0.0);
    check_round_trip(NVL_QTY_BOOL, 1.0);
}

/* A fixed xorshift sequence, so that the "random" values are the same on
 * every run. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_format_round_trips_many_values(void **state)
{
    (void)state;
    static const nvl_qty_kind_t kinds[] = {
        NVL_QTY_RATIO, NVL_QTY_BYTES, NVL_QTY_BW,   NVL_QTY_TIME,
        NVL_QTY_FLOPS, NVL_QTY_RATE,  NVL_QTY_FREQ,
    };
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t k = 0; k < N_CASES(kinds); k++) {
        for (int i = 0; i < 3000; i++) {
            /* a full 53-bit mantissa scaled over 1e-6 .. 1e19 */
            double m = (double)(next_random(&s) >> 11) / 9007199254740992.0;
            int e = (int)(next_random(&s) % 26) - 6;
            check_round_trip(kinds[k], m * pow(10.0, e));
            /* and short decimals as people write them: 26.562, 4.99648 */
            double d = (double)(next_random(&s) % 1000000) /
                       pow(10.0, (double)(next_random(&s) % 6));
            check_round_trip(kinds[k], d * pow(10.0, e));
        }
    }
    for (int i = 0; i < 3000; i++)
        check_round_trip(NVL_QTY_COUNT,
                         (double)(next_random(&s) >> 11)); /* < 2^53 */
}

static void test_format_text_is_readable(void **state)
{
    (void)state;
    static const struct {
        nvl_qty_kind_t kind;
        double value;
        const char *text;
    } cases[] = {
        {NVL_QTY_BW, 50e9, "50GB/s"},
        {NVL_QTY_BW, 8e12, "8TB/s"},
        {NVL_QTY_BW, 0.0, "0B/s"},
        {NVL_QTY_TIME, 0.5e6, "500ns"},
        {NVL_QTY_TIME, 3.3e6, "3.3us"},
        {NVL_QTY_TIME, 2e12, "2s"},
        {NVL_QTY_BYTES, 186e9, "186GB"},
        {NVL_QTY_FLOPS, 2.5e15, "2.5PFLOP/s"},
        {NVL_QTY_FLOPS, 989e12, "989TFLOP/s"},
        {NVL_QTY_RATE, 4.99648e12, "4.99648Top/s"},
        {NVL_QTY_FREQ, 1.5e9, "1.5GHz"},
        {NVL_QTY_RATIO, 0.8, "0.8"},
        {NVL_QTY_RATIO, 1.0, "1"},
        {NVL_QTY_COUNT, 72.0, "72"},
        {NVL_QTY_BOOL, 1.0, "yes"},
        {NVL_QTY_BOOL, 0.0, "no"},
    };
    for (size_t i = 0; i < N_CASES(cases); i++) {
        char text[96];
        nvl_qty_format(cases[i].kind, cases[i].value, text, sizeof text);
        assert_string_equal(text, cases[i].text);
    }
}

static void test_format_reads_back_what_files_say(void **state)
{
    (void)state;
    /* values as the shipped topology files write them */
    static const struct {
        nvl_qty_kind_t kind;
        const char *text;
    } cases[] = {
        {NVL_QTY_BW, "26.562GB/s"},    {NVL_QTY_BW, "26.5625GB/s"},
        {NVL_QTY_BW, "478.125GB/s"},   {NVL_QTY_BW, "400Gb/s"},
        {NVL_QTY_BW, "4.8TB/s"},       {NVL_QTY_RATE, "4.99648Top/s"},
        {NVL_QTY_RATE, "4.18176Top/s"}, {NVL_QTY_FREQ, "1.965GHz"},
        {NVL_QTY_TIME, "0.5us"},       {NVL_QTY_TIME, "1.25us"},
        {NVL_QTY_FLOPS, "1979TFLOP/s"}, {NVL_QTY_BYTES, "80GiB"},
        {NVL_QTY_RATIO, "80%"},
    };
    for (size_t i = 0; i < N_CASES(cases); i++)
        check_round_trip(cases[i].kind, parse_ok(cases[i].kind,
                                                 cases[i].text));
}

static void test_format_truncates_like_snprintf(void **state)
{
    (void)state;
    char small[4];
    int n = nvl_qty_format(NVL_QTY_BW, 50e9, small, sizeof small);
    assert_int_equal(n, (int)strlen("50GB/s"));
    assert_string_equal(small, "50G");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_units),
        cmocka_unit_test(test_bytes_nccl_tests_suffixes),
        cmocka_unit_test(test_parse_in_bare_unit),
        cmocka_unit_test(test_bandwidth_units),
        cmocka_unit_test(test_bits_are_an_eighth_of_bytes),
        cmocka_unit_test(test_time_units_are_picoseconds),
        cmocka_unit_test(test_flops_units_both_spellings),
        cmocka_unit_test(test_rate_units),
        cmocka_unit_test(test_frequency_units),
        cmocka_unit_test(test_decimal_units_round_once),
        cmocka_unit_test(test_count),
        cmocka_unit_test(test_ratio_plain_and_percent),
        cmocka_unit_test(test_bool_spellings),
        cmocka_unit_test(test_missing_unit),
        cmocka_unit_test(test_unknown_unit_is_named),
        cmocka_unit_test(test_negative_refused),
        cmocka_unit_test(test_not_a_number),
        cmocka_unit_test(test_count_must_be_whole),
        cmocka_unit_test(test_ratio_takes_no_unit),
        cmocka_unit_test(test_unit_lists_and_kind_names),
        cmocka_unit_test(test_format_round_trips_awkward_values),
        cmocka_unit_test(test_format_round_trips_many_values),
        cmocka_unit_test(test_format_text_is_readable),
        cmocka_unit_test(test_format_reads_back_what_files_say),
        cmocka_unit_test(test_format_truncates_like_snprintf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
