/* The table-driven option parser every command and bench uses, over a
 * table with a row of every kind (flag, string, whole number and number
 * with ranges, name table, repeated list, custom parser, required row,
 * alias, one-letter spelling): the input is a command line, one argument
 * per line.  Parsing either fails with a report or leaves every field
 * within its row's contract (ranges held, names from the table, list
 * items from the command line); nvl_opts_free then frees it. */
#include "fuzz.h"
#include "nvlemu/opts.h"

typedef struct {
    int flag, help, mode;
    const char *name;
    long count;
    double ratio;
    nvl_opt_list_t sets;
    long custom;
} args_t;

static nvl_status_t parse_even(const char *label, const char *text,
                               void *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v % 2 != 0) {
        nvl_report("%s %s: expected an even number", label, text);
        return NVL_ERR_INVALID;
    }
    *(long *)out = v;
    return NVL_OK;
}

static const nvl_opt_name_t modes[] = {{"data", 0}, {"timing", 1},
                                       {"auto", 2}, {NULL, 0}};

#define AT(f) offsetof(args_t, f)
static const nvl_opt_t opts[] = {
    {.name = "flag", .short_name = 'F', .kind = NVL_OPT_FLAG, .offset = AT(flag),
     .doc = "a flag"},
    {.name = "name", .alias = "old-name", .kind = NVL_OPT_STRING,
     .offset = AT(name), .arg = "S", .def = "x", .doc = "a string"},
    {.name = "count", .short_name = 'n', .kind = NVL_OPT_LONG, .offset = AT(count),
     .arg = "N", .def = "3", .min = 1, .max = 1000, .doc = "a count"},
    {.name = "ratio", .kind = NVL_OPT_DOUBLE, .offset = AT(ratio), .arg = "R",
     .def = "0.5", .min_d = 0, .max_d = 1, .doc = "a ratio"},
    {.name = "mode", .kind = NVL_OPT_ENUM, .offset = AT(mode), .arg = "M",
     .def = "auto", .names = modes, .doc = "a name"},
    {.name = "set", .kind = NVL_OPT_LIST, .offset = AT(sets), .arg = "K=V",
     .doc = "repeatable"},
    {.name = "even", .short_name = 'e', .kind = NVL_OPT_CUSTOM, .offset = AT(custom),
     .arg = "E", .def = "2", .parse = parse_even, .doc = "custom"},
    {.name = "need", .kind = NVL_OPT_LONG, .offset = AT(count), .arg = "N",
     .min = 1, .max = 1000, .required = true, .doc = "required"},
    {.name = "help", .short_name = 'h', .kind = NVL_OPT_HELP, .offset = AT(help),
     .doc = "help"},
};
static const nvl_opts_t table = {.prefix = "fuzz", .help_hint = "--help",
                                 .usage = "fuzz [options] [ARG]", .opts = opts,
                                 .n_opts = sizeof opts / sizeof opts[0],
                                 .max_args = 1};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char *text = fuzz_string(data, size);
    char *argv[66];
    int argc = fuzz_argv(text, "fuzz", argv, 66);
    args_t args = {0};
    int first = 0;
    if (nvl_opts_parse(&table, argc, argv, &args, &first) == NVL_OK &&
        !args.help) {
        FUZZ_REQUIRE(args.count >= 1 && args.count <= 1000, "count in range");
        FUZZ_REQUIRE(args.ratio >= 0 && args.ratio <= 1, "ratio in range");
        FUZZ_REQUIRE(args.mode >= 0 && args.mode <= 2, "mode from its table");
        FUZZ_REQUIRE(args.custom % 2 == 0, "the custom parser's value");
        FUZZ_REQUIRE(args.name != NULL, "a string with a default");
        FUZZ_REQUIRE(first >= 1 && first <= argc && argc - first <= 1,
                     "at most max_args arguments");
        for (int i = 0; i < args.sets.n; i++)
            FUZZ_REQUIRE(args.sets.items[i] != NULL, "list items");
    }
    nvl_opts_free(&table, &args);
    free(text);
    return 0;
}
