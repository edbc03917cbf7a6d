/* The validation families (src/util/validation.c): which family covers a
 * query, at the edge of its region and outside it, and the reports of a
 * malformed file. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nvlemu/validation.h"
#include "reports.h"

/* Two families: all_reduce on 2 ranks of h200-nvl2 from 8 B to 4 GiB,
 * and a held-out decode family at batch 1-64 for --stack torch. */
static const char families[] =
    "{\"families\": ["
    " {\"family\": \"ar\", \"comparisons\": 30, \"geomean_error\": 0.058,"
    "  \"worst_error\": 0.152, \"source\": \"s\", \"held_out\": false,"
    "  \"attributes\": {}, \"regions\": [{\"class\": \"all_reduce\","
    "  \"hardware\": \"h200-nvl2\", \"ranks\": [2, 2], \"sizes\": [8, "
    "  4294967296], \"size_unit\": \"bytes\"}]},"
    " {\"family\": \"decode\", \"comparisons\": 36, \"geomean_error\": 0.024,"
    "  \"worst_error\": 0.056, \"source\": \"s\", \"held_out\": true,"
    "  \"attributes\": {\"stack\": \"torch\"}, \"regions\": [{\"class\":"
    "  \"decode\", \"hardware\": \"hgx-h200\", \"ranks\": [1, 2], \"sizes\":"
    "  [1, 64], \"size_unit\": \"sequences\"}]}]}";

static char path[64];

/* text into a temporary file, loaded; NULL when the load fails */
static nvl_validation_t *load_text(const char *text)
{
    snprintf(path, sizeof path, "/tmp/nvl-test-validation-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    nvl_validation_t *v = NULL;
    nvl_status_t st = nvl_validation_load(path, "/nonexistent", &v);
    unlink(path);
    assert_true((st == NVL_OK) == (v != NULL));
    return v;
}

static nvl_vquery_t ar_query(uint32_t ranks, double lo, double hi)
{
    return (nvl_vquery_t){.what = "q", .cls = "all_reduce",
                          .hardware = "h200-nvl2", .ranks = ranks,
                          .sized = true, .size_lo = lo, .size_hi = hi};
}

static void test_covered(void **state)
{
    (void)state;
    nvl_validation_t *v = load_text(families);
    nvl_vmatch_t m[4];
    nvl_vquery_t q = ar_query(2, 1 << 20, 64 << 20);
    assert_int_equal(nvl_validation_match(v, &q, m, 4), 1);
    assert_string_equal(m[0].family, "ar");
    assert_false(m[0].extrapolated);
    assert_false(m[0].held_out);
    assert_true(fabs(m[0].geomean_error - 0.058) < 1e-12);
    assert_true(fabs(m[0].worst_error - 0.152) < 1e-12);
    assert_string_equal(m[0].covers,
                        "all_reduce on h200-nvl2, 2 ranks, 8 B - 4 GiB");
    /* the family's attribute is one of the query's */
    nvl_vquery_t d = {.what = "d", .cls = "decode", .hardware = "hgx-h200",
                      .ranks = 2, .sized = true, .size_lo = 8, .size_hi = 8};
    d.attrs[0].key = "stack";
    d.attrs[0].value = "torch";
    assert_int_equal(nvl_validation_match(v, &d, m, 4), 1);
    assert_string_equal(m[0].family, "decode");
    assert_true(m[0].held_out);
    nvl_validation_free(v);
}

static void test_edge(void **state)
{
    (void)state;
    nvl_validation_t *v = load_text(families);
    nvl_vmatch_t m[4];
    /* both ends of the size range belong to the region */
    nvl_vquery_t q = ar_query(2, 8, 4294967296.0);
    assert_int_equal(nvl_validation_match(v, &q, m, 4), 1);
    assert_string_equal(m[0].family, "ar");
    assert_false(m[0].extrapolated);
    /* one byte past the end: still that family, but extrapolated */
    q = ar_query(2, 8, 4294967297.0);
    assert_int_equal(nvl_validation_match(v, &q, m, 4), 1);
    assert_string_equal(m[0].family, "ar");
    assert_true(m[0].extrapolated);
    nvl_validation_free(v);
}

static void test_extrapolated(void **state)
{
    (void)state;
    nvl_validation_t *v = load_text(families);
    nvl_vmatch_t m[4];
    /* another rank count, sizes beyond the region, another machine, and
     * a query without the family's attribute: no family covers them */
    nvl_vquery_t qs[] = {ar_query(8, 1 << 20, 1 << 20),
                         ar_query(2, 8e9, 16e9), ar_query(2, 64, 64),
                         {.what = "d", .cls = "decode",
                          .hardware = "hgx-h200", .ranks = 1}};
    qs[2].hardware = "gb200-nvl72";
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        assert_int_equal(nvl_validation_match(v, &qs[i], m, 4), 1);
        assert_null(m[0].family);
        assert_true(m[0].extrapolated);
        assert_true(isnan(m[0].geomean_error));
    }
    assert_string_equal(m[0].covers, "decode on hgx-h200, 1 rank");
    /* the nearest family of the class: "ar" for each all_reduce query,
     * other rank count, sizes and machine alike; none for the decode
     * query that lacks the family's attribute */
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(nvl_validation_match(v, &qs[i], m, 4), 1);
        assert_string_equal(m[0].nearest, "ar");
        assert_string_equal(m[0].nearest_covers,
                            "all_reduce on h200-nvl2, 2 ranks, 8 B - 4 GiB");
        assert_true(fabs(m[0].nearest_worst_error - 0.152) < 1e-12);
        assert_false(m[0].nearest_held_out);
    }
    assert_int_equal(nvl_validation_match(v, &qs[3], m, 4), 1);
    assert_null(m[0].nearest);
    nvl_validation_free(v);
}

/* The nearest family: the query's own hardware before any other, then
 * the closest rank count; decimal sizes print as decimal units. */
static void test_nearest(void **state)
{
    (void)state;
    static const char two[] =
        "{\"families\": ["
        " {\"family\": \"far\", \"comparisons\": 1, \"geomean_error\": 0.1,"
        "  \"worst_error\": 0.1, \"source\": \"s\", \"held_out\": false,"
        "  \"attributes\": {}, \"regions\": [{\"class\": \"all_reduce\","
        "  \"hardware\": \"hgx-h100\", \"ranks\": [8, 8], \"sizes\": [1024, "
        "  8e9], \"size_unit\": \"bytes\"}]},"
        " {\"family\": \"four\", \"comparisons\": 1, \"geomean_error\": 0.2,"
        "  \"worst_error\": 0.3, \"source\": \"s\", \"held_out\": true,"
        "  \"attributes\": {}, \"regions\": [{\"class\": \"all_reduce\","
        "  \"hardware\": \"gb200-nvl72\", \"ranks\": [4, 4], \"sizes\": [1000, "
        "  8e9], \"size_unit\": \"bytes\"}]},"
        " {\"family\": \"big\", \"comparisons\": 1, \"geomean_error\": 0.05,"
        "  \"worst_error\": 0.06, \"source\": \"s\", \"held_out\": true,"
        "  \"attributes\": {}, \"regions\": [{\"class\": \"all_reduce\","
        "  \"hardware\": \"gb200-nvl72\", \"ranks\": [72, 72], \"sizes\": "
        "  [536870912, 8e9], \"size_unit\": \"bytes\"}]}]}";
    nvl_validation_t *v = load_text(two);
    nvl_vmatch_t m[4];
    nvl_vquery_t q = {.what = "q", .cls = "all_reduce",
                      .hardware = "gb200-nvl72", .ranks = 8, .sized = true,
                      .size_lo = 1 << 20, .size_hi = 1 << 20};
    /* 8 ranks: 4 is one doubling away, 72 more than three */
    assert_int_equal(nvl_validation_match(v, &q, m, 4), 1);
    assert_null(m[0].family);
    assert_string_equal(m[0].nearest, "four");
    assert_true(m[0].nearest_held_out);
    assert_string_equal(m[0].nearest_covers,
                        "all_reduce on gb200-nvl72, 4 ranks, 1 KB - 8 GB");
    /* 64 ranks at 1 GB: the 72-rank family */
    q.ranks = 64;
    q.size_lo = q.size_hi = 1e9;
    nvl_validation_match(v, &q, m, 4);
    assert_string_equal(m[0].nearest, "big");
    /* another machine: hgx-h100's own family, though gb200's lie nearer
     * in ranks */
    q.hardware = "hgx-h100";
    q.ranks = 4;
    nvl_validation_match(v, &q, m, 4);
    assert_string_equal(m[0].nearest, "far");
    /* racks joined: gb200-nvl72's families before hgx-h100's */
    q.hardware = "gb200-nvl72x8-ib";
    q.ranks = 8;
    nvl_validation_match(v, &q, m, 4);
    assert_string_equal(m[0].nearest, "four");
    nvl_validation_free(v);
}

static void test_json(void **state)
{
    (void)state;
    nvl_validation_t *v = load_text(families);
    nvl_vquery_t qs[] = {ar_query(2, 64, 64), ar_query(72, 64, 64)};
    json_t *list = nvl_validation_json(v, qs, 2);
    assert_int_equal(json_array_size(list), 2);
    json_t *a = json_array_get(list, 0), *b = json_array_get(list, 1);
    assert_string_equal(json_string_value(json_object_get(a, "family")), "ar");
    assert_true(json_is_false(json_object_get(a, "extrapolated")));
    assert_true(json_is_null(json_object_get(b, "family")));
    assert_true(json_is_null(json_object_get(b, "worst_error")));
    assert_true(json_is_true(json_object_get(b, "extrapolated")));
    json_t *near = json_object_get(b, "nearest");
    assert_string_equal(json_string_value(json_object_get(near, "family")),
                        "ar");
    assert_true(json_is_false(json_object_get(near, "held_out")));
    assert_null(json_object_get(a, "nearest"));
    json_decref(list);
    nvl_validation_free(v);
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text, *expect;
    } bad[] = {
        {"{\"families\": [", ":1:14: ']' expected near end of file"},
        {"{\"families\": 3}", "(top).families: expected an array"},
        {"{\"families\": [{\"family\": \"x\", \"geomean_error\": -1}]}",
         "families[0].geomean_error: expected a number from 0, or null"},
        {"{\"families\": [{\"family\": \"x\", \"geomean_error\": null, "
         "\"worst_error\": null, \"held_out\": false, \"attributes\": {}, "
         "\"regions\": [{\"class\": \"c\", \"hardware\": \"h\", \"ranks\": "
         "[0, 2], \"sizes\": null}]}]}",
         "families[0].regions[0].ranks: expected [lo, hi], whole numbers"},
        {"{\"families\": [{\"family\": \"x\", \"geomean_error\": null, "
         "\"worst_error\": null, \"held_out\": false, \"attributes\": "
         "{\"stack\": 1}, \"regions\": []}]}",
         "families[0].attributes: expected an object of strings"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int before = reports.count;
        assert_null(load_text(bad[i].text));
        assert_int_equal(reports.count, before + 1);
        assert_non_null(strstr(reports.last, path));
        if (strstr(reports.last, bad[i].expect) == NULL)
            fail_msg("'%s' lacks '%s'", reports.last, bad[i].expect);
    }
    /* a missing file names itself and the variable that names another */
    nvl_validation_t *v = NULL;
    assert_int_equal(nvl_validation_load("/nonexistent/f.json", "/", &v),
                     NVL_ERR_IO);
    assert_non_null(strstr(reports.last, "/nonexistent/f.json: cannot read"));
    assert_non_null(strstr(reports.last, NVL_VALIDATION_ENV));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_covered),
        cmocka_unit_test(test_edge),
        cmocka_unit_test(test_extrapolated),
        cmocka_unit_test(test_nearest),
        cmocka_unit_test(test_json),
        cmocka_unit_test_setup_teardown(test_malformed, capture_reports,
                                        release_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
