/* Quantities with units: one table of units per kind; parse and format share
 * it, so what is written can always be read back. */
#include "nvlemu/units.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    nvl_qty_kind_t kind;
    const char *suffix; /* exact, case-sensitive */
    double scale;       /* base units per one of these */
    int preferred;      /* used when formatting */
} unit_t;

#define PS_PER_S 1e12

static const unit_t units[] = {
    {NVL_QTY_BYTES, "B", 1.0, 1},
    {NVL_QTY_BYTES, "KB", 1e3, 1},
    {NVL_QTY_BYTES, "MB", 1e6, 1},
    {NVL_QTY_BYTES, "GB", 1e9, 1},
    {NVL_QTY_BYTES, "TB", 1e12, 1},
    {NVL_QTY_BYTES, "KiB", 1024.0, 0},
    {NVL_QTY_BYTES, "MiB", 1048576.0, 0},
    {NVL_QTY_BYTES, "GiB", 1073741824.0, 0},
    {NVL_QTY_BYTES, "TiB", 1099511627776.0, 0},
    /* nccl-tests' size suffixes (its parsesize: K, M, G as powers of two,
     * either case) and T beside them */
    {NVL_QTY_BYTES, "K", 1024.0, 0},
    {NVL_QTY_BYTES, "M", 1048576.0, 0},
    {NVL_QTY_BYTES, "G", 1073741824.0, 0},
    {NVL_QTY_BYTES, "T", 1099511627776.0, 0},
    {NVL_QTY_BYTES, "k", 1024.0, 0},
    {NVL_QTY_BYTES, "m", 1048576.0, 0},
    {NVL_QTY_BYTES, "g", 1073741824.0, 0},
    {NVL_QTY_BYTES, "t", 1099511627776.0, 0},

    {NVL_QTY_BW, "B/s", 1.0, 1},
    {NVL_QTY_BW, "KB/s", 1e3, 1},
    {NVL_QTY_BW, "MB/s", 1e6, 1},
    {NVL_QTY_BW, "GB/s", 1e9, 1},
    {NVL_QTY_BW, "TB/s", 1e12, 1},
    {NVL_QTY_BW, "KiB/s", 1024.0, 0},
    {NVL_QTY_BW, "MiB/s", 1048576.0, 0},
    {NVL_QTY_BW, "GiB/s", 1073741824.0, 0},
    {NVL_QTY_BW, "b/s", 0.125, 0},
    {NVL_QTY_BW, "Kb/s", 125.0, 0},
    {NVL_QTY_BW, "Mb/s", 125e3, 0},
    {NVL_QTY_BW, "Gb/s", 125e6, 0},
    {NVL_QTY_BW, "Tb/s", 125e9, 0},

    {NVL_QTY_TIME, "ps", 1.0, 1},
    {NVL_QTY_TIME, "ns", 1e3, 1},
    {NVL_QTY_TIME, "us", 1e6, 1},
    {NVL_QTY_TIME, "ms", 1e9, 1},
    {NVL_QTY_TIME, "s", PS_PER_S, 1},

    {NVL_QTY_FLOPS, "FLOP/s", 1.0, 1},
    {NVL_QTY_FLOPS, "GFLOP/s", 1e9, 1},
    {NVL_QTY_FLOPS, "TFLOP/s", 1e12, 1},
    {NVL_QTY_FLOPS, "PFLOP/s", 1e15, 1},
    {NVL_QTY_FLOPS, "FLOPS", 1.0, 0},
    {NVL_QTY_FLOPS, "GFLOPS", 1e9, 0},
    {NVL_QTY_FLOPS, "TFLOPS", 1e12, 0},
    {NVL_QTY_FLOPS, "PFLOPS", 1e15, 0},

    {NVL_QTY_RATE, "op/s", 1.0, 1},
    {NVL_QTY_RATE, "Kop/s", 1e3, 1},
    {NVL_QTY_RATE, "Mop/s", 1e6, 1},
    {NVL_QTY_RATE, "Gop/s", 1e9, 1},
    {NVL_QTY_RATE, "Top/s", 1e12, 1},

    {NVL_QTY_FREQ, "Hz", 1.0, 1},
    {NVL_QTY_FREQ, "kHz", 1e3, 1},
    {NVL_QTY_FREQ, "MHz", 1e6, 1},
    {NVL_QTY_FREQ, "GHz", 1e9, 1},
};

#define N_UNITS (sizeof units / sizeof units[0])

static const char *const kind_names[NVL_QTY_KIND_COUNT] = {
    [NVL_QTY_COUNT] = "count",   [NVL_QTY_RATIO] = "ratio",
    [NVL_QTY_BOOL] = "yes/no",   [NVL_QTY_BYTES] = "size",
    [NVL_QTY_BW] = "bandwidth",  [NVL_QTY_TIME] = "time",
    [NVL_QTY_FLOPS] = "FLOP rate", [NVL_QTY_RATE] = "operation rate",
    [NVL_QTY_FREQ] = "frequency",
};

static const char *const unit_lists[NVL_QTY_KIND_COUNT] = {
    [NVL_QTY_COUNT] = "a whole number without unit",
    [NVL_QTY_RATIO] = "a number without unit, or a percentage like 80%",
    [NVL_QTY_BOOL] = "yes, no, true, false, on, off, 1 or 0",
    [NVL_QTY_BYTES] = "B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, "
                      "TiB, or nccl-tests' K, M, G, T (powers of 1024)",
    [NVL_QTY_BW] = "B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, b/s, "
                   "Kb/s, Mb/s, Gb/s, Tb/s",
    [NVL_QTY_TIME] = "ps, ns, us, ms, s",
    [NVL_QTY_FLOPS] = "FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s (or FLOPS, "
                      "GFLOPS, TFLOPS, PFLOPS)",
    [NVL_QTY_RATE] = "op/s, Kop/s, Mop/s, Gop/s, Top/s",
    [NVL_QTY_FREQ] = "Hz, kHz, MHz, GHz",
};

const char *nvl_qty_units(nvl_qty_kind_t kind)
{
    return kind < NVL_QTY_KIND_COUNT ? unit_lists[kind] : "";
}

const char *nvl_qty_kind_name(nvl_qty_kind_t kind)
{
    return kind < NVL_QTY_KIND_COUNT ? kind_names[kind] : "?";
}

static nvl_status_t parse_bool(const char *t, double *out, char *why,
                               size_t why_len)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};
    /* trailing blanks are ignored, as after the other kinds' units */
    size_t n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t'))
        n--;
    for (size_t i = 0; i < 4; i++) {
        if (strlen(yes[i]) == n && strncasecmp(t, yes[i], n) == 0) {
            *out = 1.0;
            return NVL_OK;
        }
        if (strlen(no[i]) == n && strncasecmp(t, no[i], n) == 0) {
            *out = 0.0;
            return NVL_OK;
        }
    }
    snprintf(why, why_len, "'%.*s' is not a yes/no value", (int)n, t);
    return NVL_ERR_INVALID;
}

/* number (written as the len characters at text) x scale, rounded once:
 * for a power-of-ten scale the decimal exponent moves in the text and
 * strtod rounds the result (2.11GHz is 2110000000, where 2.11 x 1e9 gives
 * 2109999999.9999998); other scales (1024, 0.125, 125e6) multiply. */
static double scaled(const char *text, size_t len, double number,
                     double scale)
{
    int k = (int)lround(log10(scale));
    if (k < 1 || k > 22 || pow(10.0, k) != scale || len > 64 ||
        memchr(text, 'x', len) != NULL || memchr(text, 'X', len) != NULL)
        return number * scale; /* hexadecimal: 'e' is a digit there */
    size_t mant = strcspn(text, "eE");
    long exp = 0;
    if (mant < len)
        exp = strtol(text + mant + 1, NULL, 10); /* saturates at LONG_MAX */
    else
        mant = len;
    if (exp > 100000 || exp < -100000) /* strtod saturates such numbers */
        return number * scale;
    exp += k;
    char buf[96];
    snprintf(buf, sizeof buf, "%.*se%ld", (int)mant, text, exp);
    return strtod(buf, NULL);
}

nvl_status_t nvl_qty_parse(nvl_qty_kind_t kind, const char *text,
                           double *value_out, char *why_buf, size_t why_len)
{
    return nvl_qty_parse_in(kind, text, NULL, value_out, why_buf, why_len);
}

double nvl_qty_unit_scale(nvl_qty_kind_t kind, const char *suffix)
{
    for (size_t i = 0; i < N_UNITS; i++)
        if (units[i].kind == kind && strcmp(units[i].suffix, suffix) == 0)
            return units[i].scale;
    return 0.0;
}

/* The number at the start of text (after blanks): NULL and *number_out,
 * *end_out (just past it), or the reason it is not one. */
static const char *read_number(const char *text, double *number_out,
                               char **end_out)
{
    errno = 0;
    double number = strtod(text, end_out);
    if (*end_out == text)
        return "does not start with a number";
    if (errno == ERANGE || !isfinite(number))
        return "number is too large or not finite";
    if (number < 0)
        return "negative values are not allowed";
    *number_out = number;
    return NULL;
}

/* A count or a ratio: a bare number (a ratio also N%).  NULL and
 * *value_out, or the reason it is not one. */
static const char *unitless_value(nvl_qty_kind_t kind, double number,
                                  const char *unit, double *value_out)
{
    if (kind == NVL_QTY_RATIO) {
        if (strcmp(unit, "%") == 0)
            number /= 100.0;
        else if (unit[0] != '\0')
            return "a ratio takes no unit (expected a number, or a "
                   "percentage like 80%)";
        *value_out = number;
        return NULL;
    }
    if (unit[0] != '\0')
        return "a count takes no unit";
    if (number > 9007199254740992.0)
        return "a count must be at most 2^53 (9007199254740992)";
    if (number != floor(number))
        return "a count must be a whole number";
    *value_out = number;
    return NULL;
}

nvl_status_t nvl_qty_parse_in(nvl_qty_kind_t kind, const char *text,
                              const char *bare_unit, double *value_out,
                              char *why_buf, size_t why_len)
{
    const char *why = "no value";
    if (text == NULL || kind >= NVL_QTY_KIND_COUNT)
        goto fail;
    while (*text == ' ' || *text == '\t')
        text++;
    if (*text == '\0')
        goto fail;
    if (kind == NVL_QTY_BOOL)
        return parse_bool(text, value_out, why_buf, why_len);

    char *end;
    double number;
    if ((why = read_number(text, &number, &end)) != NULL)
        goto fail;
    const char *number_end = end;
    while (*end == ' ' || *end == '\t')
        end++;
    /* strip trailing blanks from the unit */
    char unit[32];
    size_t n = strlen(end);
    while (n > 0 && (end[n - 1] == ' ' || end[n - 1] == '\t'))
        n--;
    if (n >= sizeof unit) {
        why = "unit is too long";
        goto fail;
    }
    memcpy(unit, end, n);
    unit[n] = '\0';
    if (kind == NVL_QTY_COUNT || kind == NVL_QTY_RATIO) {
        if ((why = unitless_value(kind, number, unit, value_out)) != NULL)
            goto fail;
        return NVL_OK;
    }
    if (unit[0] == '\0' && bare_unit != NULL &&
        strlen(bare_unit) < sizeof unit)
        strcpy(unit, bare_unit);
    if (unit[0] == '\0') {
        why = "missing unit";
        goto fail;
    }
    for (size_t i = 0; i < N_UNITS; i++) {
        if (units[i].kind == kind && strcmp(units[i].suffix, unit) == 0) {
            double value = scaled(text, (size_t)(number_end - text), number,
                                  units[i].scale);
            if (!isfinite(value)) { /* 1e308KB: finite number, huge unit */
                why = "number is too large once converted to base units";
                goto fail;
            }
            *value_out = value;
            return NVL_OK;
        }
    }
    snprintf(why_buf, why_len, "unknown unit '%s'", unit);
    return NVL_ERR_INVALID;
fail:
    snprintf(why_buf, why_len, "%s", why);
    return NVL_ERR_INVALID;
}

/* Tries to write value with unit u; succeeds when it reads back exactly. */
static int try_format(const unit_t *u, double value, char *buf, size_t len)
{
    for (int digits = 15; digits <= 17; digits++) {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.*g%s", digits, value / u->scale,
                 u->suffix);
        double back;
        char why[128];
        if (nvl_qty_parse(u->kind, tmp, &back, why, sizeof why) == NVL_OK &&
            back == value)
            return snprintf(buf, len, "%s", tmp);
    }
    return -1;
}

int nvl_qty_format(nvl_qty_kind_t kind, double value, char *buf, size_t len)
{
    switch (kind) {
    case NVL_QTY_COUNT:
        return snprintf(buf, len, "%.0f", value);
    case NVL_QTY_RATIO:
        /* the shortest of 15 to 17 digits that reads back exactly: 0.8, not
         * 0.80000000000000004 */
        for (int digits = 15; digits < 17; digits++) {
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%.*g", digits, value);
            if (strtod(tmp, NULL) == value)
                return snprintf(buf, len, "%s", tmp);
        }
        return snprintf(buf, len, "%.17g", value);
    case NVL_QTY_BOOL:
        return snprintf(buf, len, "%s", value != 0.0 ? "yes" : "no");
    default:
        break;
    }
    /* the largest preferred unit in which the value is at least 1 */
    const unit_t *best = NULL, *base = NULL;
    for (size_t i = 0; i < N_UNITS; i++) {
        const unit_t *u = &units[i];
        if (u->kind != kind || !u->preferred)
            continue;
        if (u->scale == 1.0)
            base = u;
        if (value >= u->scale && (best == NULL || u->scale > best->scale))
            best = u;
    }
    if (best != NULL) {
        int n = try_format(best, value, buf, len);
        if (n >= 0)
            return n;
    }
    return snprintf(buf, len, "%.17g%s", value, base ? base->suffix : "");
}
