/* The validation families (include/nvlemu/validation.h): reading
 * families.json, matching a query, and printing the matches. */
#include "nvlemu/validation.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/json.h"

typedef struct {
    const char *cls, *hardware, *unit;
    uint32_t ranks_lo, ranks_hi;
    bool sized;
    double size_lo, size_hi;
} region_t;

typedef struct {
    const char *name;
    double geomean_error, worst_error; /* NAN: none */
    bool held_out;
    json_t *attributes;                /* object of strings */
    region_t *regions;
    size_t n_regions;
} family_t;

struct nvl_validation {
    char *path;
    json_t *root; /* owns every string above */
    family_t *families;
    size_t n_families;
};

const char *nvl_validation_path(const nvl_validation_t *v)
{
    return v->path;
}

void nvl_validation_free(nvl_validation_t *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->n_families; i++)
        free(v->families[i].regions);
    free(v->families);
    json_decref(v->root);
    free(v->path);
    free(v);
}

/* ---- reading ------------------------------------------------------------ */

/* Where a malformed value is: "families[3].regions[0]" and the key. */
typedef struct {
    const char *path;
    char at[96];
} where_t;

static nvl_status_t bad(const where_t *w, const char *key, const char *expect)
{
    nvl_report("%s: %s.%s: expected %s (scripts/validation-report writes "
               "this file)", w->path, w->at, key, expect);
    return NVL_ERR_INVALID;
}

static nvl_status_t get_string(const where_t *w, json_t *obj, const char *key,
                               const char **out)
{
    json_t *x = json_object_get(obj, key);
    if (!json_is_string(x))
        return bad(w, key, "a string");
    *out = json_string_value(x);
    return NVL_OK;
}

/* An error: a number from 0, or null (no comparisons). */
static nvl_status_t get_error(const where_t *w, json_t *obj, const char *key,
                              double *out)
{
    json_t *x = json_object_get(obj, key);
    if (json_is_null(x)) {
        *out = NAN;
        return NVL_OK;
    }
    if (!json_is_number(x) || json_number_value(x) < 0)
        return bad(w, key, "a number from 0, or null");
    *out = json_number_value(x);
    return NVL_OK;
}

/* [lo, hi] with lo <= hi, numbers from `min` (whole when `whole`). */
static nvl_status_t get_range(const where_t *w, json_t *obj, const char *key,
                              bool whole, double min, double *lo, double *hi)
{
    json_t *x = json_object_get(obj, key);
    const char *expect = whole ? "[lo, hi], whole numbers from 1 with lo <= hi"
                               : "[lo, hi], numbers from 0 with lo <= hi";
    if (!json_is_array(x) || json_array_size(x) != 2)
        return bad(w, key, expect);
    json_t *a = json_array_get(x, 0), *b = json_array_get(x, 1);
    if ((whole && (!json_is_integer(a) || !json_is_integer(b))) ||
        !json_is_number(a) || !json_is_number(b))
        return bad(w, key, expect);
    *lo = json_number_value(a);
    *hi = json_number_value(b);
    if (!(*lo >= min) || !(*hi >= *lo) || (whole && *hi > UINT32_MAX))
        return bad(w, key, expect);
    return NVL_OK;
}

static nvl_status_t read_region(where_t *w, json_t *r, region_t *out)
{
    if (!json_is_object(r))
        return bad(w, "regions", "objects");
    double lo, hi;
    nvl_status_t st = get_string(w, r, "class", &out->cls);
    if (st == NVL_OK)
        st = get_string(w, r, "hardware", &out->hardware);
    if (st == NVL_OK)
        st = get_range(w, r, "ranks", true, 1, &lo, &hi);
    if (st != NVL_OK)
        return st;
    out->ranks_lo = (uint32_t)lo;
    out->ranks_hi = (uint32_t)hi;
    out->sized = !json_is_null(json_object_get(r, "sizes"));
    out->unit = "";
    if (out->sized) {
        st = get_range(w, r, "sizes", false, 0, &out->size_lo, &out->size_hi);
        if (st == NVL_OK)
            st = get_string(w, r, "size_unit", &out->unit);
    }
    return st;
}

static nvl_status_t read_family(where_t *w, json_t *f, family_t *out)
{
    if (!json_is_object(f))
        return bad(w, "", "an object");
    nvl_status_t st = get_string(w, f, "family", &out->name);
    if (st == NVL_OK)
        st = get_error(w, f, "geomean_error", &out->geomean_error);
    if (st == NVL_OK)
        st = get_error(w, f, "worst_error", &out->worst_error);
    if (st != NVL_OK)
        return st;
    json_t *h = json_object_get(f, "held_out");
    if (!json_is_boolean(h))
        return bad(w, "held_out", "true or false");
    out->held_out = json_is_true(h);
    out->attributes = json_object_get(f, "attributes");
    if (!json_is_object(out->attributes))
        return bad(w, "attributes", "an object of strings");
    const char *k;
    json_t *val;
    json_object_foreach(out->attributes, k, val)
        if (!json_is_string(val))
            return bad(w, "attributes", "an object of strings");
    json_t *regions = json_object_get(f, "regions");
    if (!json_is_array(regions))
        return bad(w, "regions", "an array");
    out->n_regions = json_array_size(regions);
    out->regions = calloc(out->n_regions + 1, sizeof *out->regions);
    if (out->regions == NULL) {
        nvl_report("%s: out of memory", w->path);
        return NVL_ERR_NOMEM;
    }
    size_t base = strlen(w->at);
    for (size_t i = 0; i < out->n_regions && st == NVL_OK; i++) {
        snprintf(w->at + base, sizeof w->at - base, ".regions[%zu]", i);
        st = read_region(w, json_array_get(regions, i), &out->regions[i]);
    }
    w->at[base] = '\0';
    return st;
}

nvl_status_t nvl_validation_load(const char *path, const char *root,
                                 nvl_validation_t **out)
{
    char buf[4096];
    if (path == NULL)
        path = getenv(NVL_VALIDATION_ENV);
    if (path == NULL || path[0] == '\0') {
        snprintf(buf, sizeof buf, "%s/%s", root, NVL_VALIDATION_FILE);
        path = buf;
    }
    nvl_validation_t *v = calloc(1, sizeof *v);
    if (v == NULL || (v->path = strdup(path)) == NULL) {
        free(v);
        nvl_report("%s: out of memory", path);
        return NVL_ERR_NOMEM;
    }
    json_error_t err;
    v->root = json_load_file(path, 0, &err);
    if (v->root == NULL) {
        if (err.line < 1)
            nvl_report("%s: cannot read the validation families: %s "
                       "(scripts/validation-report writes it; %s names "
                       "another)", path, err.text, NVL_VALIDATION_ENV);
        else
            nvl_report("%s:%d:%d: %s", path, err.line, err.column, err.text);
        nvl_validation_free(v);
        return err.line < 1 ? NVL_ERR_IO : NVL_ERR_INVALID;
    }
    where_t w = {.path = path, .at = "(top)"};
    json_t *fams = json_object_get(v->root, "families");
    if (!json_is_object(v->root) || !json_is_array(fams)) {
        nvl_validation_free(v);
        return bad(&w, "families", "an array");
    }
    v->n_families = json_array_size(fams);
    v->families = calloc(v->n_families + 1, sizeof *v->families);
    nvl_status_t st = v->families != NULL ? NVL_OK : NVL_ERR_NOMEM;
    if (st != NVL_OK)
        nvl_report("%s: out of memory", path);
    for (size_t i = 0; i < v->n_families && st == NVL_OK; i++) {
        snprintf(w.at, sizeof w.at, "families[%zu]", i);
        st = read_family(&w, json_array_get(fams, i), &v->families[i]);
    }
    if (st != NVL_OK) {
        nvl_validation_free(v);
        return st;
    }
    *out = v;
    return NVL_OK;
}

/* ---- matching ----------------------------------------------------------- */

static bool has_attrs(const family_t *f, const nvl_vquery_t *q)
{
    const char *k;
    json_t *val;
    json_object_foreach(f->attributes, k, val) {
        bool found = false;
        for (int i = 0; i < NVL_VQUERY_ATTRS && q->attrs[i].key != NULL; i++)
            found |= strcmp(q->attrs[i].key, k) == 0 &&
                     strcmp(q->attrs[i].value, json_string_value(val)) == 0;
        if (!found)
            return false;
    }
    return true;
}

/* "8 B", "4 GiB", "8 GB", "1.5e+12 FLOP", "64 sequences" */
static void size_text(const char *unit, double v, char *buf, size_t len)
{
    static const char *const bin[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    static const char *const dec[] = {"B", "KB", "MB", "GB", "TB"};
    if (strcmp(unit, "bytes") != 0) {
        snprintf(buf, len, "%.4g %s", v, unit);
        return;
    }
    int b = 0, d = 0;
    while (b < 4 && v >= 1024.0 * (double)(1ull << (10 * b)) &&
           fmod(v, 1024.0 * (double)(1ull << (10 * b))) == 0)
        b++;
    while (d < 4 && v >= 1e3 * pow(1e3, d))
        d++;
    /* a binary unit only where it reads as one: 8e9 B is "8 GB", not
     * "7.8125e+06 KiB" */
    double in_bin = v / (double)(1ull << (10 * b));
    if (d == 0 || (b > 0 && in_bin < 1024.0))
        snprintf(buf, len, "%g %s", in_bin, bin[b]);
    else
        snprintf(buf, len, "%.4g %s", v / pow(1e3, d), dec[d]);
}

static void range_text(const char *unit, double lo, double hi, char *buf,
                       size_t len)
{
    char a[48], b[48];
    size_text(unit, lo, a, sizeof a);
    size_text(unit, hi, b, sizeof b);
    if (lo == hi)
        snprintf(buf, len, "%s", a);
    else if (strcmp(unit, "bytes") == 0)
        snprintf(buf, len, "%s - %s", a, b);
    else
        snprintf(buf, len, "%.4g - %.4g %s", lo, hi, unit);
}

static void ranks_text(uint32_t lo, uint32_t hi, char *buf, size_t len)
{
    if (lo == hi)
        snprintf(buf, len, "%u rank%s", lo, lo == 1 ? "" : "s");
    else
        snprintf(buf, len, "%u-%u ranks", lo, hi);
}

/* "all_reduce on hgx-h100, 8 ranks, 1 KiB - 8 GiB" */
static void region_text(const region_t *r, char *buf, size_t len)
{
    char ranks[32], sizes[112] = "";
    ranks_text(r->ranks_lo, r->ranks_hi, ranks, sizeof ranks);
    if (r->sized) {
        sizes[0] = ',';
        sizes[1] = ' ';
        range_text(r->unit, r->size_lo, r->size_hi, sizes + 2,
                   sizeof sizes - 2);
    }
    snprintf(buf, len, "%s on %s, %s%s", r->cls, r->hardware, ranks, sizes);
}

/* How far x lies outside [lo, hi], in natural-log units (0 inside). */
static double log_outside(double x, double lo, double hi)
{
    if (x < lo)
        return log(lo / x);
    return x > hi ? log(x / hi) : 0.0;
}

/* 0 for the same topology, else 1 less the share of the longer name the
 * two names begin with: gb200-nvl72x8-ib lies nearer gb200-nvl72 (the same
 * rack, racks joined) than hgx-h200. */
static double hardware_distance(const char *a, const char *b)
{
    size_t n = 0, la = strlen(a), lb = strlen(b);
    while (a[n] != '\0' && a[n] == b[n])
        n++;
    if (n == la && n == lb)
        return 0.0;
    return 1.0 - (double)n / (double)(la > lb ? la : lb);
}

/* The nearest region of q's class among families with q's attributes: a
 * region on other hardware ranks after every one on q's own, and after
 * one on hardware whose name shares a longer beginning; then the
 * rank count's distance, then the sizes' (both in log units, so 4 -> 8
 * ranks weighs as 8 -> 16).  Fills m's nearest fields. */
static void nearest(const nvl_validation_t *v, const nvl_vquery_t *q,
                    nvl_vmatch_t *m)
{
    const family_t *best_f = NULL;
    const region_t *best_r = NULL;
    double best = INFINITY;
    for (size_t i = 0; i < v->n_families; i++) {
        const family_t *f = &v->families[i];
        if (!has_attrs(f, q))
            continue;
        for (size_t j = 0; j < f->n_regions; j++) {
            const region_t *r = &f->regions[j];
            if (strcmp(r->cls, q->cls) != 0)
                continue;
            double d = log_outside(q->ranks, r->ranks_lo, r->ranks_hi);
            if (r->sized && q->sized)
                d += 0.5 * (log_outside(q->size_lo, r->size_lo, r->size_hi) +
                            log_outside(q->size_hi, r->size_lo, r->size_hi));
            d += 1e6 * hardware_distance(r->hardware, q->hardware);
            if (d < best) {
                best = d;
                best_f = f;
                best_r = r;
            }
        }
    }
    if (best_f == NULL)
        return;
    m->nearest = best_f->name;
    m->nearest_geomean_error = best_f->geomean_error;
    m->nearest_worst_error = best_f->worst_error;
    m->nearest_held_out = best_f->held_out;
    region_text(best_r, m->nearest_covers, sizeof m->nearest_covers);
}

size_t nvl_validation_match(const nvl_validation_t *v, const nvl_vquery_t *q,
                            nvl_vmatch_t *out, size_t cap)
{
    size_t n = 0;
    char ranks[32];
    for (size_t i = 0; i < v->n_families && n < cap; i++) {
        const family_t *f = &v->families[i];
        if (!has_attrs(f, q))
            continue;
        for (size_t j = 0; j < f->n_regions && n < cap; j++) {
            const region_t *r = &f->regions[j];
            if (strcmp(r->cls, q->cls) != 0 ||
                strcmp(r->hardware, q->hardware) != 0 ||
                q->ranks < r->ranks_lo || q->ranks > r->ranks_hi)
                continue;
            bool both = r->sized && q->sized;
            if (both && (q->size_hi < r->size_lo || q->size_lo > r->size_hi))
                continue;
            nvl_vmatch_t *m = &out[n++];
            *m = (nvl_vmatch_t){.query = q, .family = f->name,
                                .geomean_error = f->geomean_error,
                                .worst_error = f->worst_error,
                                .held_out = f->held_out,
                                .extrapolated = both && (q->size_lo < r->size_lo ||
                                                         q->size_hi > r->size_hi)};
            region_text(r, m->covers, sizeof m->covers);
        }
    }
    if (n == 0 && cap > 0) {
        nvl_vmatch_t *m = &out[n++];
        *m = (nvl_vmatch_t){.query = q, .geomean_error = NAN,
                            .worst_error = NAN, .extrapolated = true,
                            .nearest_geomean_error = NAN,
                            .nearest_worst_error = NAN};
        ranks_text(q->ranks, q->ranks, ranks, sizeof ranks);
        snprintf(m->covers, sizeof m->covers, "%s on %s, %s", q->cls,
                 q->hardware, ranks);
        nearest(v, q, m);
    }
    return n;
}

/* ---- reporting ---------------------------------------------------------- */

#define MATCHES_PER_QUERY 16

static void error_text(double e, char *buf, size_t len)
{
    if (isnan(e))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f%%", 100 * e);
}

void nvl_validation_print(const nvl_validation_t *v, const nvl_vquery_t *qs,
                          size_t n, FILE *out)
{
    nvl_vmatch_t m[MATCHES_PER_QUERY];
    fprintf(out, "# validation (%s):\n", v->path);
    for (size_t i = 0; i < n; i++) {
        size_t k = nvl_validation_match(v, &qs[i], m, MATCHES_PER_QUERY);
        for (size_t j = 0; j < k; j++) {
            char geo[16], worst[16];
            if (m[j].family == NULL) {
                fprintf(out, "#   %s: extrapolated: no validation family "
                        "covers %s\n", qs[i].what, m[j].covers);
                if (m[j].nearest == NULL)
                    continue;
                error_text(m[j].nearest_geomean_error, geo, sizeof geo);
                error_text(m[j].nearest_worst_error, worst, sizeof worst);
                fprintf(out, "#     nearest: \"%s\"%s: geomean error %s, "
                        "worst %s (covers %s)\n", m[j].nearest,
                        m[j].nearest_held_out ? " (held out)" : "", geo,
                        worst, m[j].nearest_covers);
                continue;
            }
            error_text(m[j].geomean_error, geo, sizeof geo);
            error_text(m[j].worst_error, worst, sizeof worst);
            fprintf(out, "#   %s: \"%s\"%s: geomean error %s, worst %s "
                    "(covers %s)%s\n", qs[i].what, m[j].family,
                    m[j].held_out ? " (held out)" : "", geo, worst,
                    m[j].covers,
                    m[j].extrapolated ? "; extrapolated beyond it" : "");
        }
    }
}

static json_t *error_json(double e)
{
    return isnan(e) ? json_null() : json_real(e);
}

static json_t *nearest_json(const nvl_vmatch_t *m)
{
    if (m->nearest == NULL)
        return json_null();
    return json_pack("{s:s, s:o, s:o, s:b, s:s}", "family", m->nearest,
                     "geomean_error", error_json(m->nearest_geomean_error),
                     "worst_error", error_json(m->nearest_worst_error),
                     "held_out", m->nearest_held_out, "covers",
                     m->nearest_covers);
}

json_t *nvl_validation_json(const nvl_validation_t *v, const nvl_vquery_t *qs,
                            size_t n)
{
    nvl_vmatch_t m[MATCHES_PER_QUERY];
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < n; i++) {
        size_t k = nvl_validation_match(v, &qs[i], m, MATCHES_PER_QUERY);
        for (size_t j = 0; j < k; j++) {
            json_t *o = json_object();
            json_object_set_new(o, "query", json_string(qs[i].what));
            json_object_set_new(o, "family", m[j].family != NULL
                                                 ? json_string(m[j].family)
                                                 : json_null());
            json_object_set_new(o, "geomean_error",
                                error_json(m[j].geomean_error));
            json_object_set_new(o, "worst_error", error_json(m[j].worst_error));
            json_object_set_new(o, "held_out", json_boolean(m[j].held_out));
            json_object_set_new(o, "covers", json_string(m[j].covers));
            json_object_set_new(o, "extrapolated",
                                json_boolean(m[j].extrapolated));
            if (m[j].family == NULL)
                json_object_set_new(o, "nearest", nearest_json(&m[j]));
            if (json_array_append_new(list, o) != 0) {
                json_decref(list);
                return NULL;
            }
        }
    }
    return list;
}
