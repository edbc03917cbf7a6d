/* A serving workload: a JSONL request trace (jansson, one object a line),
 * or the generator (Poisson or closed-loop arrivals, lengths fixed or
 * drawn from a distribution, shared prefixes).  The generator uses its own
 * 64-bit generator (splitmix64, Steele et al., OOPSLA 2014), so the same
 * parameters give the same requests on every host and libc. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/serve.h"
#include "nvlemu/vclock.h"

/* ---- lengths -------------------------------------------------------------- */

nvl_status_t nvl_serve_len_parse(const char *label, const char *text,
                                 void *len_out)
{
    static const struct {
        const char *prefix;
        int kind;
    } kinds[] = {{"uniform:", NVL_LEN_UNIFORM},
                 {"normal:", NVL_LEN_NORMAL},
                 {"lognormal:", NVL_LEN_LOGNORMAL}};
    nvl_serve_len_t l = {.kind = NVL_LEN_FIXED};
    const char *p = text;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strncmp(text, kinds[i].prefix, strlen(kinds[i].prefix)) == 0) {
            l.kind = kinds[i].kind;
            p = text + strlen(kinds[i].prefix);
        }
    char *end = NULL;
    errno = 0;
    l.a = strtod(p, &end);
    bool ok = end != p && errno == 0 && isfinite(l.a);
    if (ok && l.kind != NVL_LEN_FIXED) {
        ok = *end == ':';
        if (ok) {
            p = end + 1;
            l.b = strtod(p, &end);
            ok = end != p && errno == 0 && isfinite(l.b);
        }
    }
    ok = ok && *end == '\0';
    if (ok)
        switch (l.kind) {
        case NVL_LEN_FIXED:
            ok = l.a >= 1 && l.a == floor(l.a) && l.a <= 1 << 30;
            break;
        case NVL_LEN_UNIFORM:
            ok = l.a >= 1 && l.b >= l.a && l.a == floor(l.a) &&
                 l.b == floor(l.b) && l.b <= 1 << 30;
            break;
        default: /* normal: mean, sd; lognormal: median, sigma */
            ok = l.a >= 1 && l.a <= 1 << 30 && l.b >= 0;
        }
    if (!ok) {
        nvl_report("%s '%s': expected a token count N >= 1, uniform:LO:HI "
                   "(1 <= LO <= HI), normal:MEAN:SD or lognormal:MEDIAN:"
                   "SIGMA (MEAN, MEDIAN >= 1; SD, SIGMA >= 0)", label, text);
        return NVL_ERR_INVALID;
    }
    *(nvl_serve_len_t *)len_out = l;
    return NVL_OK;
}

void nvl_serve_len_format(const nvl_serve_len_t *len, char *buf, size_t n)
{
    static const char *names[] = {"", "uniform:", "normal:", "lognormal:"};
    if (len->kind == NVL_LEN_FIXED)
        snprintf(buf, n, "%.0f", len->a);
    else
        snprintf(buf, n, "%s%.15g:%.15g", names[len->kind], len->a, len->b);
}

/* ---- the generator ---------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in (0, 1): never 0, so that log() is finite */
static double unit_open(uint64_t *s)
{
    return ((double)(splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double std_normal(uint64_t *s)
{
    double u = unit_open(s), v = unit_open(s);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v); /* Box-Muller */
}

static uint32_t draw_len(const nvl_serve_len_t *l, uint64_t *s)
{
    double x;
    switch (l->kind) {
    case NVL_LEN_UNIFORM:
        x = l->a + (double)(splitmix64(s) % (uint64_t)(l->b - l->a + 1));
        break;
    case NVL_LEN_NORMAL:
        x = round(l->a + l->b * std_normal(s));
        break;
    case NVL_LEN_LOGNORMAL:
        x = round(l->a * exp(l->b * std_normal(s)));
        break;
    default:
        x = l->a;
    }
    return x < 1 ? 1 : x > 1 << 30 ? 1u << 30 : (uint32_t)x;
}

nvl_status_t nvl_serve_generate(const nvl_serve_gen_t *g,
                                nvl_serve_workload_t *w_out)
{
    if (g->requests < 1) {
        nvl_report("--requests must be at least 1");
        return NVL_ERR_INVALID;
    }
    nvl_serve_workload_t w = {.n = g->requests,
                              .concurrency = g->concurrency};
    w.reqs = calloc(w.n, sizeof *w.reqs);
    if (w.reqs == NULL) {
        nvl_report("out of memory for %u requests", g->requests);
        return NVL_ERR_NOMEM;
    }
    uint64_t s = g->seed * 0x2545f4914f6cdd1dull + 0x5eedull;
    double t_s = 0;
    for (size_t i = 0; i < w.n; i++) {
        nvl_serve_req_t *r = &w.reqs[i];
        r->id = (uint32_t)i;
        if (g->concurrency > 0)
            r->arrival_ps = i < g->concurrency ? 0 : -1;
        else {
            if (g->rate_per_s > 0 && i > 0)
                t_s += -log(unit_open(&s)) / g->rate_per_s;
            if (!(t_s * 1e12 < (double)NVL_PS_MAX_DURATION)) {
                nvl_report("--rate %g req/s: request %zu of %u would arrive "
                           "at %.6g s, past the arrivals' range (%.1f days "
                           "of emulated time): a higher rate or fewer "
                           "requests", g->rate_per_s, i + 1, g->requests,
                           t_s, NVL_MAX_DURATION_DAYS);
                free(w.reqs);
                return NVL_ERR_RANGE;
            }
            r->arrival_ps = nvl_ps_from_s(t_s);
        }
        r->input_tokens = draw_len(&g->isl, &s);
        r->output_tokens = draw_len(&g->osl, &s);
        r->prefix = -1;
        if (g->prefix_groups > 0 && g->prefix_tokens > 0) {
            r->prefix = (int32_t)(splitmix64(&s) % g->prefix_groups);
            r->prefix_tokens = g->prefix_tokens < r->input_tokens
                                   ? g->prefix_tokens
                                   : r->input_tokens;
        }
    }
    *w_out = w;
    return NVL_OK;
}

/* ---- the trace ------------------------------------------------------------- */

/* The first of `keys` present in o (NULL: none). */
static json_t *field(json_t *o, const char *const *keys)
{
    for (; *keys != NULL; keys++) {
        json_t *v = json_object_get(o, *keys);
        if (v != NULL)
            return v;
    }
    return NULL;
}

/* A whole number >= 1 of field keys[0] (or an alias). */
static bool token_count(json_t *o, const char *const *keys, uint32_t *out,
                        char *why, size_t n)
{
    json_t *v = field(o, keys);
    double x = v == NULL                 ? -1
               : json_is_integer(v)      ? (double)json_integer_value(v)
               : json_is_real(v)         ? json_real_value(v)
                                         : -2;
    if (v == NULL)
        snprintf(why, n, "missing \"%s\"", keys[0]);
    else if (x == -2)
        snprintf(why, n, "\"%s\" is not a number", keys[0]);
    else if (x < 1 || x != floor(x) || x > 1 << 30)
        snprintf(why, n, "\"%s\" is %g: expected a whole number of tokens "
                 ">= 1", keys[0], x);
    else {
        *out = (uint32_t)x;
        return true;
    }
    return false;
}

/* The prefix id's number (adding it to w's names). */
static int32_t prefix_number(nvl_serve_workload_t *w, const char *name)
{
    for (size_t i = w->n_prefixes; i-- > 0;)
        if (strcmp(w->prefix_names[i], name) == 0)
            return (int32_t)i;
    char **names = realloc(w->prefix_names,
                           (w->n_prefixes + 1) * sizeof *names);
    char *copy = strdup(name);
    if (names == NULL || copy == NULL) {
        free(copy);
        if (names != NULL)
            w->prefix_names = names;
        return -2;
    }
    w->prefix_names = names;
    names[w->n_prefixes] = copy;
    return (int32_t)w->n_prefixes++;
}

static const char *const k_arr[] = {"arrival_s", "timestamp", NULL};
static const char *const k_in[] = {"input_tokens", "input_length", NULL};
static const char *const k_out[] = {"output_tokens", "output_length", NULL};
static const char *const k_pid[] = {"prefix_id", NULL};
static const char *const k_plen[] = {"prefix_tokens", NULL};

/* The line's arrival (*v_out), a number of seconds within range, not
 * before prev_s; why says what is wrong (false). */
static bool arrival(json_t *o, double prev_s, json_t **v_out, char *why,
                    size_t n)
{
    json_t *v;
    if (!json_is_object(o))
        snprintf(why, n, "expected a JSON object");
    else if ((v = field(o, k_arr)) == NULL)
        snprintf(why, n, "missing \"arrival_s\"");
    else if (!json_is_number(v))
        snprintf(why, n, "\"arrival_s\" is not a number");
    else if (!(json_number_value(v) >= 0) ||
             !isfinite(json_number_value(v)))
        snprintf(why, n, "\"arrival_s\" is %g: expected seconds >= 0",
                 json_number_value(v));
    else if (!(json_number_value(v) * 1e12 < (double)NVL_PS_MAX_DURATION))
        snprintf(why, n, "\"arrival_s\" %g is past the arrivals' range "
                 "(%.1f days of emulated time)", json_number_value(v),
                 NVL_MAX_DURATION_DAYS);
    else if (json_number_value(v) < prev_s)
        snprintf(why, n, "\"arrival_s\" %g is before the previous line's "
                 "%g: the trace must be sorted by arrival",
                 json_number_value(v), prev_s);
    else {
        *v_out = v;
        return true;
    }
    return false;
}

/* The prefix id's name as the line gives it (a string or a whole
 * number). */
static bool prefix_name(json_t *pid, char *name, size_t len, char *why,
                        size_t n)
{
    if (json_is_string(pid))
        snprintf(name, len, "%s", json_string_value(pid));
    else if (json_is_integer(pid))
        snprintf(name, len, "%lld", (long long)json_integer_value(pid));
    else {
        snprintf(why, n, "\"prefix_id\" must be a string or a whole number");
        return false;
    }
    return true;
}

/* The line's shared prefix, if any: its number and length (given, or
 * its first request's prompt; plen[number] keeps it). */
static bool parse_prefix(nvl_serve_workload_t *w, json_t *o,
                         nvl_serve_req_t *r, uint32_t **plen, char *why,
                         size_t n)
{
    json_t *pid = field(o, k_pid), *pl = field(o, k_plen);
    char name[64];
    if (pid == NULL && pl != NULL)
        snprintf(why, n, "\"prefix_tokens\" without \"prefix_id\"");
    if (pid == NULL)
        return pl == NULL;
    if (!prefix_name(pid, name, sizeof name, why, n))
        return false;
    if ((r->prefix = prefix_number(w, name)) < 0) {
        snprintf(why, n, "out of memory");
        return false;
    }
    uint32_t len = 0;
    if (pl != NULL && !token_count(o, k_plen, &len, why, n))
        return false;
    if (len > r->input_tokens) {
        snprintf(why, n, "\"prefix_tokens\" %u is more than "
                 "\"input_tokens\" %u", len, r->input_tokens);
        return false;
    }
    uint32_t *known = &(*plen)[r->prefix];
    if (*known == 0)
        *known = len ? len : r->input_tokens;
    else if (len && len != *known) {
        snprintf(why, n, "prefix \"%s\" is %u tokens here and %u on an "
                 "earlier line", name, len, *known);
        return false;
    }
    r->prefix_tokens = *known < r->input_tokens ? *known : r->input_tokens;
    return true;
}

/* One line's request; why says what is wrong (false). */
static bool parse_line(nvl_serve_workload_t *w, const char *text,
                       double prev_s, nvl_serve_req_t *r, uint32_t **plen,
                       double *t_out, char *why, size_t n)
{
    json_error_t err;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    if (o == NULL) {
        snprintf(why, n, "malformed JSON: %s (column %d)", err.text,
                 err.column);
        return false;
    }
    json_t *v;
    bool ok = arrival(o, prev_s, &v, why, n) &&
              token_count(o, k_in, &r->input_tokens, why, n) &&
              token_count(o, k_out, &r->output_tokens, why, n);
    if (ok) {
        *t_out = json_number_value(v);
        r->arrival_ps = nvl_ps_from_s(*t_out);
        r->prefix = -1;
        ok = parse_prefix(w, o, r, plen, why, n);
    }
    json_decref(o);
    return ok;
}

nvl_status_t nvl_serve_trace_load(const char *path,
                                  nvl_serve_workload_t *w_out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        nvl_report("--workload %s: cannot open: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    nvl_serve_workload_t w = {0};
    size_t cap = 0, cap_plen = 0;
    uint32_t *plen = NULL;
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t got;
    uint32_t lineno = 0;
    double prev_s = 0;
    nvl_status_t st = NVL_OK;
    while ((got = getline(&line, &line_cap, f)) > 0) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\n' || *p == '\r' || *p == '\0' || *p == '#')
            continue;
        if (w.n == cap) {
            cap = cap ? 2 * cap : 1024;
            nvl_serve_req_t *nr = realloc(w.reqs, cap * sizeof *nr);
            if (nr == NULL) {
                st = NVL_ERR_NOMEM;
                nvl_report("%s:%u: out of memory", path, lineno);
                break;
            }
            w.reqs = nr;
        }
        if (w.n_prefixes + 1 > cap_plen) {
            size_t nc = cap_plen ? 2 * cap_plen : 64;
            uint32_t *np = realloc(plen, nc * sizeof *np);
            if (np == NULL) {
                st = NVL_ERR_NOMEM;
                nvl_report("%s:%u: out of memory", path, lineno);
                break;
            }
            memset(np + cap_plen, 0, (nc - cap_plen) * sizeof *np);
            plen = np;
            cap_plen = nc;
        }
        nvl_serve_req_t *r = &w.reqs[w.n];
        memset(r, 0, sizeof *r);
        char why[256];
        if (!parse_line(&w, p, prev_s, r, &plen, &prev_s, why, sizeof why)) {
            nvl_report("%s:%u: %s", path, lineno, why);
            st = NVL_ERR_INVALID;
            break;
        }
        r->id = (uint32_t)w.n;
        r->line = lineno;
        w.n++;
    }
    if (st == NVL_OK && ferror(f)) {
        nvl_report("%s: read error: %s", path, strerror(errno));
        st = NVL_ERR_IO;
    }
    if (st == NVL_OK && w.n == 0) {
        nvl_report("%s: no requests (one JSON object a line: {\"arrival_s\": "
                   "0.0, \"input_tokens\": 512, \"output_tokens\": 128})",
                   path);
        st = NVL_ERR_INVALID;
    }
    free(line);
    free(plen);
    fclose(f);
    if (st != NVL_OK) {
        nvl_serve_workload_free(&w);
        return st;
    }
    *w_out = w;
    return NVL_OK;
}

void nvl_serve_workload_free(nvl_serve_workload_t *w)
{
    for (size_t i = 0; i < w->n_prefixes; i++)
        free(w->prefix_names[i]);
    free(w->prefix_names);
    free(w->reqs);
    memset(w, 0, sizeof *w);
}

/* ---- the front end ---------------------------------------------------------- */

/* Processor sharing with every request the same size c: the loop's
 * virtual time v advances at 1/n while n requests share it, a request
 * arriving at v0 leaves at v0 + c, so they leave in arrival order and
 * only the oldest one held can be next (Kleinrock, Queueing Systems II,
 * ch. 4: the processor-sharing queue). */
nvl_status_t nvl_serve_frontend(nvl_serve_workload_t *w, double per_request_s)
{
    if (w->concurrency > 0 && per_request_s > 0) {
        nvl_report("--frontend-ms: the front end is modelled for open "
                   "arrivals (a trace, --rate, or every request at time "
                   "0), not a closed loop (--concurrency %u)",
                   w->concurrency);
        return NVL_ERR_INVALID;
    }
    double *v0 = per_request_s > 0 ? malloc(w->n * sizeof *v0) : NULL;
    if (per_request_s > 0 && v0 == NULL && w->n > 0) {
        nvl_report("out of memory for the front end of %zu requests", w->n);
        return NVL_ERR_NOMEM;
    }
    double t = 0, v = 0, c = per_request_s;
    size_t head = 0, next = 0, held = 0;
    while (v0 != NULL && head < w->n) {
        double t_arr = next < w->n ? (double)w->reqs[next].arrival_ps / 1e12
                                   : INFINITY;
        double t_done = held > 0 ? t + (v0[head] + c - v) * (double)held
                                 : INFINITY;
        if (t_arr <= t_done) {
            v += held > 0 ? (t_arr - t) / (double)held : 0;
            t = t_arr;
            v0[next++] = v;
            held++;
        } else {
            v = v0[head] + c;
            t = t_done;
            nvl_serve_req_t *r = &w->reqs[head++];
            int64_t done_ps = nvl_ps_from_s(t);
            r->frontend_ps = done_ps > r->arrival_ps ? done_ps - r->arrival_ps
                                                     : 0;
            held--;
        }
    }
    for (size_t i = 0; v0 == NULL && i < w->n; i++)
        w->reqs[i].frontend_ps = 0;
    free(v0);
    return NVL_OK;
}
