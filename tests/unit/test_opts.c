/* Unit tests of the table-driven option parser (src/util/opts.c): every
 * row's default is applied before argv, each kind of row parses and checks
 * its value, aliases and letters reach the same row, a repeated row keeps
 * every value in order, and each kind of mistake fails once with a message
 * naming the option (as the user spelled it) and the value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/opts.h"
#include "reports.h"

typedef struct {
    const char *name, *path;
    long count, step;
    double ratio;
    int color, shape, verbose, help, half;
    nvl_opt_list_t sets;
    double bound_ms;
    size_t bytes;
} args_t;

static const nvl_opt_name_t colors[] = {
    {"red", 10}, {"green", 20}, {"blue", 30}, {NULL, 0}};

/* A family (family.h): an owner's rows, each led by its member's name. */
typedef struct {
    nvl_member_t id;
    int corners;
} shape_row_t;
static const shape_row_t shapes[] = {
    {{"circle", "round"}, 0}, {{"triangle", "three"}, 3},
    {{"square", "four"}, 4}};
static const nvl_family_t shape_family =
    NVL_FAMILY("shape", "shapes", shapes);

/* A custom row: an even number, stored halved. */
static nvl_status_t parse_even(const char *label, const char *text,
                               void *half_out)
{
    int v = atoi(text);
    if (v % 2 != 0) {
        nvl_report("%s %s: not even", label, text);
        return NVL_ERR_INVALID;
    }
    *(int *)half_out = v / 2;
    return NVL_OK;
}

#define AT(f) offsetof(args_t, f)
static const nvl_opt_t rows[] = {
    {.name = "name", .kind = NVL_OPT_STRING, .offset = AT(name), .arg = "S",
     .def = "anon", .doc = "a name"},
    {.name = "path", .kind = NVL_OPT_STRING, .offset = AT(path), .arg = "P",
     .required = true, .doc = "a path"},
    {.name = "count", .alias = "n-items", .short_name = 'n',
     .kind = NVL_OPT_LONG, .offset = AT(count), .arg = "N", .def = "7",
     .min = 1, .max = 100, .doc = "a count"},
    {.name = "step", .kind = NVL_OPT_LONG, .offset = AT(step), .arg = "N",
     .min = 0, .max = 5, .doc = "no default"},
    {.name = "ratio", .kind = NVL_OPT_DOUBLE, .offset = AT(ratio),
     .arg = "R", .def = "0.5", .min_d = 0, .max_d = 1, .doc = "a ratio"},
    {.name = "color", .kind = NVL_OPT_ENUM, .offset = AT(color),
     .arg = "C", .def = "green", .names = colors, .doc = "a color"},
    {.name = "shape", .kind = NVL_OPT_ENUM, .offset = AT(shape),
     .def = "triangle", .family = &shape_family, .doc = "a shape"},
    {.name = "verbose", .short_name = 'v', .kind = NVL_OPT_FLAG,
     .offset = AT(verbose), .doc = "talk"},
    {.name = "set", .kind = NVL_OPT_LIST, .offset = AT(sets), .arg = "K=V",
     .doc = "repeatable"},
    {.name = "even", .kind = NVL_OPT_CUSTOM, .offset = AT(half),
     .arg = "E", .def = "4", .parse = parse_even, .doc = "an even number"},
    {.name = "bound", .kind = NVL_OPT_QTY, .offset = AT(bound_ms),
     .arg = "TIME", .def = "0", .min_d = 0, .max_d = 1000,
     .qty = NVL_QTY_TIME, .unit = "ms", .doc = "a time in ms"},
    {.name = "bytes", .short_name = 'b', .kind = NVL_OPT_SIZE,
     .offset = AT(bytes), .arg = "SIZE", .def = "1K", .min_d = 4,
     .max_d = 0x1p40, .doc = "a size"},
    {.name = "help", .kind = NVL_OPT_HELP, .offset = AT(help),
     .doc = "this help"},
};
static const nvl_opts_t set = {
    .prefix = "demo", .help_hint = "demo --help", .usage = "demo --path P",
    .opts = rows, .n_opts = sizeof rows / sizeof rows[0], .max_args = 1};

/* Parses the NULL-terminated words after "demo" into a zeroed *a. */
static nvl_status_t parse(args_t *a, int *first_out, ...)
{
    char *argv[32] = {"demo"};
    int argc = 1;
    va_list ap;
    va_start(ap, first_out);
    for (char *w; (w = va_arg(ap, char *)) != NULL;)
        argv[argc++] = w;
    va_end(ap);
    memset(a, 0, sizeof *a);
    int first = -1;
    nvl_status_t st = nvl_opts_parse(&set, argc, argv, a, &first);
    if (first_out != NULL)
        *first_out = first;
    return st;
}

static void defaults_applied(void **state)
{
    (void)state;
    args_t a;
    int first;
    assert_int_equal(parse(&a, &first, "--path", "p", NULL), NVL_OK);
    assert_string_equal(a.name, "anon");
    assert_string_equal(a.path, "p");
    assert_int_equal(a.count, 7);
    assert_int_equal(a.step, 0); /* no default: the caller's zero */
    assert_true(a.ratio == 0.5);
    assert_int_equal(a.color, 20);
    assert_int_equal(a.shape, 1);
    assert_int_equal(shapes[a.shape].corners, 3);
    assert_int_equal(a.half, 2);
    assert_int_equal(a.verbose, 0);
    assert_int_equal(a.sets.n, 0);
    assert_int_equal(first, 3);
    assert_int_equal(reports.count, 0);
    nvl_opts_free(&set, &a);
}

static void every_kind(void **state)
{
    (void)state;
    args_t a;
    int first;
    assert_int_equal(parse(&a, &first, "--name", "x", "--path", "p",
                           "--count", "100", "--step", "0", "--ratio", "1",
                           "--color", "blue", "-v", "--even", "10", "ARG",
                           NULL),
                     NVL_OK);
    assert_string_equal(a.name, "x");
    assert_int_equal(a.count, 100);
    assert_int_equal(a.step, 0);
    assert_true(a.ratio == 1.0);
    assert_int_equal(a.color, 30);
    assert_int_equal(a.verbose, 1);
    assert_int_equal(a.half, 5);
    assert_int_equal(first, 16); /* the argument, after the options */
    assert_int_equal(reports.count, 0);
    nvl_opts_free(&set, &a);
}

static void aliases_and_letters(void **state)
{
    (void)state;
    args_t a;
    assert_int_equal(parse(&a, NULL, "--path", "p", "--n-items", "3", NULL),
                     NVL_OK);
    assert_int_equal(a.count, 3);
    assert_int_equal(parse(&a, NULL, "--path", "p", "-n", "4", NULL), NVL_OK);
    assert_int_equal(a.count, 4);
    /* the last value wins, whatever the spelling */
    assert_int_equal(parse(&a, NULL, "--path", "p", "--count", "5",
                           "--n-items", "6", NULL),
                     NVL_OK);
    assert_int_equal(a.count, 6);
    assert_int_equal(reports.count, 0);
}

static void repeated_list(void **state)
{
    (void)state;
    args_t a;
    assert_int_equal(parse(&a, NULL, "--set", "a=1", "--path", "p", "--set",
                           "b=2", "--set", "a=3", NULL),
                     NVL_OK);
    assert_int_equal(a.sets.n, 3);
    assert_string_equal(a.sets.items[0], "a=1");
    assert_string_equal(a.sets.items[1], "b=2");
    assert_string_equal(a.sets.items[2], "a=3");
    nvl_opts_free(&set, &a);
    assert_null(a.sets.items);
    assert_int_equal(a.sets.n, 0);
}

/* Each bad command line fails with exactly one report, containing want. */
static void fails_once(const char *want, nvl_status_t st)
{
    assert_int_equal(st, NVL_ERR_INVALID);
    if (reports.count != 1 || strstr(reports.last, want) == NULL)
        print_error("want one report with '%s', got %d: '%s'\n", want,
                    reports.count, reports.text);
    assert_int_equal(reports.count, 1);
    assert_non_null(strstr(reports.last, want));
    memset(&reports, 0, sizeof reports);
}

static void range_errors(void **state)
{
    (void)state;
    args_t a;
    fails_once("--count 0: expected a whole number from 1 to 100",
               parse(&a, NULL, "--path", "p", "--count", "0", NULL));
    fails_once("--count 101: expected a whole number from 1 to 100",
               parse(&a, NULL, "--path", "p", "--count", "101", NULL));
    fails_once("--n-items 3x: expected a whole number from 1 to 100",
               parse(&a, NULL, "--path", "p", "--n-items", "3x", NULL));
    fails_once("-n/--count -2: expected a whole number from 1 to 100",
               parse(&a, NULL, "--path", "p", "-n", "-2", NULL));
    fails_once("--step 6: expected a whole number from 0 to 5",
               parse(&a, NULL, "--path", "p", "--step", "6", NULL));
    fails_once("--ratio 1.5: expected a number from 0 to 1",
               parse(&a, NULL, "--path", "p", "--ratio", "1.5", NULL));
    fails_once("--ratio nan: expected a number from 0 to 1",
               parse(&a, NULL, "--path", "p", "--ratio", "nan", NULL));
    fails_once("--color: unknown value 'pink' (expected red, green or blue)",
               parse(&a, NULL, "--path", "p", "--color", "pink", NULL));
    fails_once("--even 3: not even",
               parse(&a, NULL, "--path", "p", "--even", "3", NULL));
}

/* Quantity rows: util/units' grammar, a bare number in the row's unit,
 * nccl-tests' K/M/G, the range in the row's unit, one report on error. */
static void quantity_rows(void **state)
{
    (void)state;
    args_t a;
    assert_int_equal(parse(&a, NULL, "--path", "p", NULL), NVL_OK);
    assert_true(a.bound_ms == 0.0);
    assert_int_equal(a.bytes, 1024);
    static const struct { const char *text; double ms; } times[] = {
        {"500", 500}, {"500ms", 500}, {"0.5s", 500}, {"250000us", 250},
        {"1e6ns", 1}};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        assert_int_equal(parse(&a, NULL, "--path", "p", "--bound",
                               times[i].text, NULL), NVL_OK);
        assert_true(a.bound_ms == times[i].ms);
    }
    static const struct { const char *text; size_t bytes; } sizes[] = {
        {"8", 8}, {"64K", 65536}, {"64k", 65536}, {"1M", 1048576},
        {"1G", 1073741824}, {"1GB", 1000000000}, {"2KiB", 2048},
        {"1.5K", 1536}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        assert_int_equal(parse(&a, NULL, "--path", "p", "-b", sizes[i].text,
                               NULL), NVL_OK);
        assert_int_equal(a.bytes, sizes[i].bytes);
    }
    assert_int_equal(reports.count, 0);
    fails_once("--bound 2s: expected 0ms to 1000ms",
               parse(&a, NULL, "--path", "p", "--bound", "2s", NULL));
    fails_once("--bound 3h: unknown unit 'h'",
               parse(&a, NULL, "--path", "p", "--bound", "3h", NULL));
    fails_once("-b/--bytes 2: expected a whole number of bytes from 4",
               parse(&a, NULL, "--path", "p", "-b", "2", NULL));
    fails_once("-b/--bytes 1.0001K: expected a whole number of bytes",
               parse(&a, NULL, "--path", "p", "-b", "1.0001K", NULL));
}

static void command_line_errors(void **state)
{
    (void)state;
    args_t a;
    fails_once("demo: unknown option '--colour' (see demo --help)",
               parse(&a, NULL, "--path", "p", "--colour", "red", NULL));
    fails_once("demo: unknown option '-x' (see demo --help)",
               parse(&a, NULL, "--path", "p", "-x", NULL));
    fails_once("demo: option --count needs a value (see demo --help)",
               parse(&a, NULL, "--path", "p", "--count", NULL));
    fails_once("demo: option -n needs a value (see demo --help)",
               parse(&a, NULL, "--path", "p", "-n", NULL));
    fails_once("demo: --path P is required (usage: demo --path P)",
               parse(&a, NULL, "--count", "3", NULL));
    fails_once("demo: unexpected argument 'two' (usage: demo --path P)",
               parse(&a, NULL, "--path", "p", "one", "two", NULL));
    /* a flag takes no value */
    fails_once("demo: option '--verbose=1' takes no value",
               parse(&a, NULL, "--path", "p", "--verbose=1", NULL));
}

/* --help skips the required rows; a bad value still fails. */
static void help(void **state)
{
    (void)state;
    args_t a;
    assert_int_equal(parse(&a, NULL, "--help", NULL), NVL_OK);
    assert_int_equal(a.help, 1);
    fails_once("--count 0:",
               parse(&a, NULL, "--help", "--count", "0", NULL));
}

/* A family's rows: parsed by name to their index, named in errors and in
 * --help from the owner's table. */
static void family_rows(void **state)
{
    (void)state;
    args_t a;
    assert_int_equal(parse(&a, NULL, "--path", "p", "--shape", "square",
                           NULL),
                     NVL_OK);
    assert_int_equal(a.shape, 2);
    fails_once("--shape: unknown value 'hexagon' (expected circle, "
               "triangle or square)",
               parse(&a, NULL, "--path", "p", "--shape", "hexagon", NULL));
    fails_once("--shape: unknown value 'Square'",
               parse(&a, NULL, "--path", "p", "--shape", "Square", NULL));
    assert_string_equal(nvl_family_name(&shape_family, 0), "circle");
    assert_string_equal(nvl_family_name(&shape_family, 3), "?");
    assert_string_equal(nvl_family_name(&shape_family, -1), "?");
    assert_null(nvl_family_member(&shape_family, 3));
    assert_string_equal(nvl_family_member(&shape_family, 2)->doc, "four");
    int v = -1;
    assert_int_equal(nvl_family_parse(&shape_family, "tri", &v),
                     NVL_ERR_INVALID);
    assert_int_equal(v, -1);
    assert_int_equal(reports.count, 0); /* the family never reports */
    char buf[64];
    nvl_family_names(&shape_family, "|", "|", buf, sizeof buf);
    assert_string_equal(buf, "circle|triangle|square");
    nvl_family_names(&shape_family, ", ", " or ", buf, 12);
    assert_string_equal(buf, "circle, tri"); /* truncated, terminated */
}

/* --help prints each row's default and alias from the row. */
static void help_text(void **state)
{
    (void)state;
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    assert_non_null(f);
    nvl_opts_help(&set, f);
    fclose(f);
    assert_non_null(strstr(buf, "usage: demo --path P\n"));
    assert_non_null(strstr(buf, "-n/--count N"));
    assert_non_null(strstr(buf, "a count (default 7) (also --n-items)\n"));
    assert_non_null(strstr(buf, "a path (required)\n"));
    assert_non_null(strstr(buf, "a color (default green)\n"));
    assert_non_null(strstr(buf, "--shape circle|triangle|square"));
    assert_non_null(strstr(buf, "a shape (default triangle)\n"));
    assert_non_null(strstr(buf, "-v/--verbose"));
    assert_null(strstr(buf, "no default (default"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(defaults_applied, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(every_kind, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(aliases_and_letters, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(repeated_list, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(range_errors, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(quantity_rows, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(command_line_errors, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(help, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(family_rows, capture_reports,
                                        release_reports),
        cmocka_unit_test(help_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
