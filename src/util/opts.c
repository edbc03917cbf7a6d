/* Table-driven command-line options (include/nvlemu/opts.h). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/opts.h"

/* getopt_long's value for row i without a letter (letters are < 256). */
#define LONG_ONLY 256

/* "-b/--minbytes" or "--topo": how --help and messages name a row. */
static void row_label(const nvl_opt_t *o, char *buf, size_t len)
{
    if (o->short_name)
        snprintf(buf, len, "-%c/--%s", o->short_name, o->name);
    else
        snprintf(buf, len, "--%s", o->name);
}

static void *field_of(const nvl_opt_t *o, void *args)
{
    return (char *)args + o->offset;
}

static nvl_status_t parse_long(const nvl_opt_t *o, const char *label,
                               const char *text, long *value_out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < o->min ||
        v > o->max) {
        nvl_report("%s %s: expected a whole number from %ld to %ld", label,
                   text, o->min, o->max);
        return NVL_ERR_INVALID;
    }
    *value_out = v;
    return NVL_OK;
}

static nvl_status_t parse_double(const nvl_opt_t *o, const char *label,
                                 const char *text, double *value_out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !(v >= o->min_d) ||
        !(v <= o->max_d)) {
        nvl_report("%s %s: expected a number from %g to %g", label, text,
                   o->min_d, o->max_d);
        return NVL_ERR_INVALID;
    }
    *value_out = v;
    return NVL_OK;
}

/* A quantity in util/units' grammar, in the row's unit (a size row: a
 * whole number of bytes, its messages in a size's words). */
static nvl_status_t parse_qty(const nvl_opt_t *o, const char *label,
                              const char *text, double *value_out)
{
    bool size = o->kind == NVL_OPT_SIZE;
    nvl_qty_kind_t kind = size ? NVL_QTY_BYTES : o->qty;
    const char *unit = size ? "B" : o->unit;
    char why[160], what[96];
    double base;
    if (nvl_qty_parse_in(kind, text, unit, &base, why, sizeof why) !=
        NVL_OK) {
        if (size)
            snprintf(what, sizeof what, "a size: bytes");
        else
            snprintf(what, sizeof what, "a %s: a number in %s",
                     nvl_qty_kind_name(kind), unit);
        nvl_report("%s %s: %s (%s, or with one of %s; docs/units.md)", label,
                   text, why, what, nvl_qty_units(kind));
        return NVL_ERR_INVALID;
    }
    double v = base / nvl_qty_unit_scale(kind, unit);
    if ((size && v != floor(v)) || !(v >= o->min_d) || !(v <= o->max_d)) {
        if (size)
            nvl_report("%s %s: expected a whole number of bytes from %.0f "
                       "to %.0f", label, text, o->min_d, o->max_d);
        else
            nvl_report("%s %s: expected %g%s to %g%s", label, text, o->min_d,
                       unit, o->max_d, unit);
        return NVL_ERR_INVALID;
    }
    *value_out = v;
    return NVL_OK;
}

/* A size row's field is a size_t. */
static nvl_status_t parse_size(const nvl_opt_t *o, const char *label,
                               const char *text, size_t *bytes_out)
{
    double v;
    nvl_status_t st = parse_qty(o, label, text, &v);
    if (st == NVL_OK)
        *bytes_out = (size_t)v;
    return st;
}

/* The value's name in --help and messages: the row's .arg, or a
 * family's names as "a|b|c" (and "|also"); NULL for a flag. */
static const char *value_name(const nvl_opt_t *o, char *buf, size_t len)
{
    if (o->arg != NULL || o->family == NULL)
        return o->arg;
    nvl_family_names(o->family, "|", "|", buf, len);
    size_t used = strlen(buf);
    if (o->also != NULL && used < len)
        snprintf(buf + used, len - used, "|%s", o->also);
    return buf;
}

/* "a, b or c": an enum row's names, for messages and --help. */
static void enum_names(const nvl_opt_name_t *names, const char *last_sep,
                       char *buf, size_t len)
{
    size_t n = 0, used = 0;
    while (names[n].name != NULL)
        n++;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 i == 0 ? "" : i + 1 == n ? last_sep : ", ",
                                 names[i].name);
}

static nvl_status_t parse_enum(const nvl_opt_t *o, const char *label,
                               const char *text, int *value_out)
{
    char expected[256];
    if (o->family != NULL) {
        if (nvl_family_parse(o->family, text, value_out) == NVL_OK)
            return NVL_OK;
        nvl_family_names(o->family, ", ", " or ", expected, sizeof expected);
    } else {
        for (const nvl_opt_name_t *nm = o->names; nm->name != NULL; nm++)
            if (strcmp(text, nm->name) == 0) {
                *value_out = nm->value;
                return NVL_OK;
            }
        enum_names(o->names, " or ", expected, sizeof expected);
    }
    nvl_report("%s: unknown value '%s' (expected %s)", label, text,
               expected);
    return NVL_ERR_INVALID;
}

static nvl_status_t list_append(const char *label, const char *text,
                                nvl_opt_list_t *list)
{
    const char **items = realloc(list->items,
                                 ((size_t)list->n + 1) * sizeof *items);
    if (items == NULL) {
        nvl_report("%s: out of memory", label);
        return NVL_ERR_NOMEM;
    }
    items[list->n++] = text;
    list->items = items;
    return NVL_OK;
}

/* Stores one value (NULL for a flag) of row o into args. */
static nvl_status_t set_value(const nvl_opt_t *o, const char *label,
                              const char *text, void *args)
{
    void *field = field_of(o, args);
    switch (o->kind) {
    case NVL_OPT_FLAG:
    case NVL_OPT_HELP: *(int *)field = 1; return NVL_OK;
    case NVL_OPT_STRING: *(const char **)field = text; return NVL_OK;
    case NVL_OPT_LONG: return parse_long(o, label, text, field);
    case NVL_OPT_DOUBLE: return parse_double(o, label, text, field);
    case NVL_OPT_ENUM: return parse_enum(o, label, text, field);
    case NVL_OPT_LIST: return list_append(label, text, field);
    case NVL_OPT_QTY: return parse_qty(o, label, text, field);
    case NVL_OPT_SIZE: return parse_size(o, label, text, field);
    case NVL_OPT_CUSTOM: return o->parse(label, text, field);
    }
    nvl_report("%s: option row of unknown kind %d", label, (int)o->kind);
    return NVL_ERR_INVALID;
}

static nvl_status_t apply_defaults(const nvl_opts_t *set, void *args)
{
    for (size_t i = 0; i < set->n_opts; i++) {
        const nvl_opt_t *o = &set->opts[i];
        if (o->def == NULL || o->kind == NVL_OPT_FLAG ||
            o->kind == NVL_OPT_HELP)
            continue;
        char label[80];
        row_label(o, label, sizeof label);
        strncat(label, " (default)", sizeof label - strlen(label) - 1);
        nvl_status_t st = set_value(o, label, o->def, args);
        if (st != NVL_OK)
            return st;
    }
    return NVL_OK;
}

/* The getopt_long tables: each row's name and alias, and its letter. */
static nvl_status_t build_getopt(const nvl_opts_t *set,
                                 struct option **longopts_out,
                                 char **shortopts_out)
{
    struct option *lo = calloc(2 * set->n_opts + 1, sizeof *lo);
    char *so = calloc(2 * set->n_opts + 2, 1);
    if (lo == NULL || so == NULL) {
        free(lo);
        free(so);
        nvl_report("out of memory for the option table");
        return NVL_ERR_NOMEM;
    }
    size_t nl = 0, ns = 0;
    so[ns++] = ':'; /* a missing value returns ':' */
    for (size_t i = 0; i < set->n_opts; i++) {
        const nvl_opt_t *o = &set->opts[i];
        int has_arg = o->arg != NULL || o->family != NULL ? required_argument
                                                          : no_argument;
        int val = o->short_name ? o->short_name : LONG_ONLY + (int)i;
        lo[nl++] = (struct option){o->name, has_arg, NULL, val};
        if (o->alias != NULL)
            lo[nl++] = (struct option){o->alias, has_arg, NULL, val};
        if (o->short_name) {
            so[ns++] = o->short_name;
            if (has_arg == required_argument)
                so[ns++] = ':';
        }
    }
    *longopts_out = lo;
    *shortopts_out = so;
    return NVL_OK;
}

static const nvl_opt_t *row_of_val(const nvl_opts_t *set, int val,
                                   size_t *index_out)
{
    for (size_t i = 0; i < set->n_opts; i++) {
        const nvl_opt_t *o = &set->opts[i];
        if (val == (o->short_name ? o->short_name : LONG_ONLY + (int)i)) {
            *index_out = i;
            return o;
        }
    }
    return NULL;
}

/* "run: " or "", before a message. */
static const char *prefix_of(const nvl_opts_t *set, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", set->prefix ? set->prefix : "",
             set->prefix ? ": " : "");
    return buf;
}

/* Reports what getopt_long rejected: c is ':' (a missing value) or '?'
 * (an unknown option, or a value given to a flag); arg is the word. */
static void report_rejected(const nvl_opts_t *set, int c, const char *arg)
{
    char pre[64];
    char letter[3] = {'-', (char)optopt, '\0'};
    bool is_long = strncmp(arg, "--", 2) == 0;
    const char *what = is_long ? arg : letter;
    prefix_of(set, pre, sizeof pre);
    if (c == ':')
        nvl_report("%soption %s needs a value (see %s)", pre, what,
                   set->help_hint);
    else if (is_long && optopt != 0)
        nvl_report("%soption '%s' takes no value (see %s)", pre, what,
                   set->help_hint);
    else
        nvl_report("%sunknown option '%s' (see %s)", pre, what,
                   set->help_hint);
}

/* The rows every run must give, and the argument count. */
static nvl_status_t check_given(const nvl_opts_t *set, const bool *given,
                                int argc, char **argv, int first)
{
    char pre[64], value[256];
    for (size_t i = 0; i < set->n_opts; i++)
        if (set->opts[i].required && !given[i]) {
            nvl_report("%s--%s %s is required (usage: %s)",
                       prefix_of(set, pre, sizeof pre), set->opts[i].name,
                       value_name(&set->opts[i], value, sizeof value),
                       set->usage);
            return NVL_ERR_INVALID;
        }
    if (argc - first > set->max_args) {
        nvl_report("%sunexpected argument '%s' (usage: %s)",
                   prefix_of(set, pre, sizeof pre),
                   argv[first + set->max_args], set->usage);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

nvl_status_t nvl_opts_parse(const nvl_opts_t *set, int argc, char **argv,
                            void *args, int *first_arg_out)
{
    struct option *longopts;
    char *shortopts;
    bool *given = calloc(set->n_opts + 1, sizeof *given);
    if (given == NULL) {
        nvl_report("out of memory for the option table");
        return NVL_ERR_NOMEM;
    }
    nvl_status_t st = apply_defaults(set, args);
    if (st == NVL_OK)
        st = build_getopt(set, &longopts, &shortopts);
    if (st != NVL_OK) {
        free(given);
        return st;
    }
    bool help = false;
    /* 0, not 1: glibc then also forgets where it was inside a cluster of
     * short options (-Fn3) when the last parse stopped there, which would
     * otherwise point into the previous, possibly freed, argv (found by
     * tests/fuzz/fuzz_opts.c) */
    optind = 0;
    opterr = 0;
    int c, li = -1;
    while (st == NVL_OK &&
           (c = getopt_long(argc, argv, shortopts, longopts, &li)) != -1) {
        size_t i;
        const nvl_opt_t *o = NULL;
        if (c != ':' && c != '?')
            o = row_of_val(set, c, &i);
        if (o == NULL) {
            report_rejected(set, c, argv[optind - 1]);
            st = NVL_ERR_INVALID;
            break;
        }
        /* name the option as the user spelled it: an alias, a letter */
        char label[80];
        if (li >= 0 && strcmp(longopts[li].name, o->name) != 0)
            snprintf(label, sizeof label, "--%s", longopts[li].name);
        else
            row_label(o, label, sizeof label);
        li = -1;
        st = set_value(o, label, optarg, args);
        given[i] = true;
        help = help || o->kind == NVL_OPT_HELP;
    }
    free(longopts);
    free(shortopts);
    if (st == NVL_OK && !help)
        st = check_given(set, given, argc, argv, optind);
    free(given);
    *first_arg_out = optind;
    return st;
}

void nvl_opts_help(const nvl_opts_t *set, FILE *out)
{
    fprintf(out, "usage: %s\n\n", set->usage);
    if (set->intro != NULL)
        fprintf(out, "%s\n\n", set->intro);
    fprintf(out, "options:\n");
    char left[256], value[256];
    int width = 24;
    for (size_t i = 0; i < set->n_opts; i++) {
        const nvl_opt_t *o = &set->opts[i];
        row_label(o, left, sizeof left);
        const char *v = value_name(o, value, sizeof value);
        int len = (int)strlen(left) + (v ? 1 + (int)strlen(v) : 0);
        width = len > width ? len : width;
    }
    for (size_t i = 0; i < set->n_opts; i++) {
        const nvl_opt_t *o = &set->opts[i];
        row_label(o, left, sizeof left);
        const char *v = value_name(o, value, sizeof value);
        if (v != NULL) {
            strncat(left, " ", sizeof left - strlen(left) - 1);
            strncat(left, v, sizeof left - strlen(left) - 1);
        }
        fprintf(out, "  %-*s %s", width, left, o->doc);
        if (o->required)
            fprintf(out, " (required)");
        if (o->def != NULL && o->kind != NVL_OPT_FLAG &&
            o->kind != NVL_OPT_HELP)
            fprintf(out, " (default %s)", o->def);
        if (o->alias != NULL)
            fprintf(out, " (also --%s)", o->alias);
        fprintf(out, "\n");
    }
}

void nvl_opts_free(const nvl_opts_t *set, void *args)
{
    for (size_t i = 0; i < set->n_opts; i++)
        if (set->opts[i].kind == NVL_OPT_LIST) {
            nvl_opt_list_t *list = field_of(&set->opts[i], args);
            free(list->items);
            *list = (nvl_opt_list_t){NULL, 0};
        }
}
