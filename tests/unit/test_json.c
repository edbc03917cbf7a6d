/* Shortest reals in JSON: the layout of Python's repr, every double read
 * back exactly, no form with fewer digits that would, and strings and
 * integers left as jansson writes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/json.h"

static const char *fmt(double v)
{
    static char buf[48];
    nvl_json_format_real(v, buf, sizeof buf);
    return buf;
}

static void test_python_layout(void **state)
{
    (void)state;
    assert_string_equal(fmt(0.8), "0.8");
    assert_string_equal(fmt(2.0), "2.0");
    assert_string_equal(fmt(-0.5), "-0.5");
    assert_string_equal(fmt(0.0), "0.0");
    assert_string_equal(fmt(8e12), "8000000000000.0");
    assert_string_equal(fmt(1e16), "1e+16");
    assert_string_equal(fmt(1.5e-5), "1.5e-05");
    assert_string_equal(fmt(0.0001), "0.0001");
    assert_string_equal(fmt(123.456), "123.456");
    assert_string_equal(fmt(2.11 * 1e9), "2109999999.9999998");
    assert_string_equal(fmt(5e-324), "5e-324");
    assert_string_equal(fmt(1.7976931348623157e308), "1.7976931348623157e+308");
    assert_string_equal(fmt(1234567890123456.0), "1234567890123456.0");
}

/* Random bit patterns: each reads back, and one digit fewer would not. */
static void test_round_trip_and_shortest(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        if (v != v || v - v != 0) /* NaN, infinities: not JSON */
            continue;
        const char *s = fmt(v);
        assert_true(strtod(s, NULL) == v);
        size_t digits = 0;
        for (const char *p = s; *p != '\0' && *p != 'e'; p++)
            digits += *p >= '1' && *p <= '9';
        if (digits > 1) {
            char shorter[48];
            snprintf(shorter, sizeof shorter, "%.*e", (int)digits - 2, v);
            assert_true(strtod(shorter, NULL) != v);
        }
    }
}

static void test_dump_rewrites_reals_only(void **state)
{
    (void)state;
    json_t *o = json_pack("{s:f, s:i, s:s, s:[f, f]}", "eff", 0.8, "n",
                          123456789, "text", "1.10000000000000009 \"0.8\"",
                          "list", 2.11e9 * 1.0, 1e-7);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(nvl_json_dumpf(o, f, JSON_COMPACT | JSON_SORT_KEYS), 0);
    fclose(f);
    assert_string_equal(buf, "{\"eff\":0.8,\"list\":[2110000000.0,1e-07],"
                             "\"n\":123456789,\"text\":\"1.10000000000000009 "
                             "\\\"0.8\\\"\"}");
    free(buf);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_layout),
        cmocka_unit_test(test_round_trip_and_shortest),
        cmocka_unit_test(test_dump_rewrites_reals_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
