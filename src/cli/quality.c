/* Quality of a quantized model beside its reference (quality.h): both
 * scored teacher-forced, position by position, and compared. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quality.h"
#include "nvlemu/runtime.h"

/* The logits of seq s's scored positions: one batch of its prefixes of
 * from .. len - 1 tokens, one new token each, into out. */
static nvl_status_t score_one(nvl_engine_t *e, const nvl_quality_seqs_t *q,
                              int s, float *out)
{
    int rows = q->len[s] - q->from[s];
    const int32_t *t = q->tok + q->off[s];
    size_t total = 0;
    for (int p = q->from[s]; p < q->len[s]; p++)
        total += (size_t)p;
    int32_t *ids = malloc((total + 1) * sizeof *ids);
    int *lens = malloc(((size_t)rows + 1) * sizeof *lens);
    int32_t *next = malloc(((size_t)rows + 1) * sizeof *next);
    if (ids == NULL || lens == NULL || next == NULL) {
        nvl_report("out of memory scoring %d prefixes", rows);
        nvl_runtime_abort(1);
    }
    size_t at = 0;
    for (int p = q->from[s]; p < q->len[s]; p++) {
        memcpy(ids + at, t, (size_t)p * sizeof *ids);
        at += (size_t)p;
        lens[p - q->from[s]] = p;
    }
    nvl_status_t st = nvl_engine_generate(e, ids, lens, rows, 1, next, out);
    free(ids);
    free(lens);
    free(next);
    return st;
}

nvl_status_t nvl_cli_score(const nvl_model_config_t *cfg,
                           const nvl_engine_opts_t *o, nvl_comm_t *tp,
                           const nvl_quality_seqs_t *seqs,
                           float **logits_out, uint64_t *positions_out)
{
    uint64_t n = 0;
    for (int s = 0; s < seqs->n; s++)
        n += (uint64_t)(seqs->len[s] - seqs->from[s]);
    float *logits = malloc((n * cfg->vocab + 1) * sizeof *logits);
    if (logits == NULL) {
        nvl_report("out of memory for the logits of %llu positions",
                   (unsigned long long)n);
        nvl_runtime_abort(1);
    }
    nvl_engine_t *e = NULL;
    nvl_status_t st = nvl_engine_create(cfg, o, tp, &e);
    uint64_t at = 0;
    for (int s = 0; s < seqs->n && st == NVL_OK; s++) {
        st = score_one(e, seqs, s, logits + at * cfg->vocab);
        at += (uint64_t)(seqs->len[s] - seqs->from[s]);
    }
    if (e != NULL)
        nvl_engine_free(e);
    if (st != NVL_OK) {
        free(logits);
        return st;
    }
    *logits_out = logits;
    *positions_out = n;
    return NVL_OK;
}

/* log softmax of V logits into out (double) */
static void log_softmax(const float *x, uint32_t V, double *out)
{
    double mx = -INFINITY, sum = 0;
    for (uint32_t i = 0; i < V; i++)
        mx = fmax(mx, (double)x[i]);
    for (uint32_t i = 0; i < V; i++)
        sum += exp((double)x[i] - mx);
    double lse = mx + log(sum);
    for (uint32_t i = 0; i < V; i++)
        out[i] = (double)x[i] - lse;
}

static uint32_t top1(const float *x, uint32_t V)
{
    uint32_t b = 0;
    for (uint32_t i = 1; i < V; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

json_t *nvl_cli_quality_json(const float *q, const float *r, uint64_t n,
                             uint32_t V)
{
    double *lq = malloc(((size_t)V + 1) * sizeof *lq);
    double *lr = malloc(((size_t)V + 1) * sizeof *lr);
    if (lq == NULL || lr == NULL) {
        nvl_report("out of memory for a vocabulary of %u", V);
        nvl_runtime_abort(1);
    }
    double agree = 0, abs_sum = 0, abs_max = 0, kl_sum = 0, kl_max = 0;
    for (uint64_t p = 0; p < n; p++) {
        const float *qp = q + p * V, *rp = r + p * V;
        agree += top1(qp, V) == top1(rp, V);
        log_softmax(qp, V, lq);
        log_softmax(rp, V, lr);
        double kl = 0;
        for (uint32_t i = 0; i < V; i++) {
            double d = fabs((double)qp[i] - (double)rp[i]);
            abs_sum += d;
            abs_max = fmax(abs_max, d);
            kl += exp(lr[i]) * (lr[i] - lq[i]);
        }
        kl_sum += kl;
        kl_max = fmax(kl_max, kl);
    }
    free(lq);
    free(lr);
    double np = n > 0 ? (double)n : 1.0;
    return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}", "positions",
                     (json_int_t)n, "top1_agreement", agree / np,
                     "mean_abs_logit_error", abs_sum / (np * V),
                     "max_abs_logit_error", abs_max, "mean_kl", kl_sum / np,
                     "max_kl", kl_max);
}

json_t *nvl_cli_perplexity_json(const float *logits,
                                const nvl_quality_seqs_t *seqs, uint32_t V)
{
    double *l = malloc(((size_t)V + 1) * sizeof *l), nll = 0;
    if (l == NULL) {
        nvl_report("out of memory for a vocabulary of %u", V);
        nvl_runtime_abort(1);
    }
    uint64_t at = 0;
    for (int s = 0; s < seqs->n; s++)
        for (int p = seqs->from[s]; p < seqs->len[s]; p++, at++) {
            log_softmax(logits + at * V, V, l);
            nll -= l[seqs->tok[seqs->off[s] + (uint64_t)p]];
        }
    free(l);
    double mean = at > 0 ? nll / (double)at : 0.0;
    return json_pack("{s:I, s:f, s:f}", "tokens", (json_int_t)at,
                     "mean_nll", mean, "perplexity", exp(mean));
}

/* One line's JSON array of token ids appended to the growing arrays. */
static nvl_status_t add_line(const char *path, int line, const char *text,
                             uint32_t vocab, int32_t **tok, size_t *n_tok,
                             size_t *cap, int *len)
{
    json_error_t err;
    json_t *a = json_loads(text, 0, &err);
    nvl_status_t st = NVL_OK;
    if (a == NULL || !json_is_array(a) || json_array_size(a) < 2) {
        nvl_report("%s:%d: expected a JSON array of at least 2 token ids%s%s",
                   path, line, a == NULL ? ": " : "",
                   a == NULL ? err.text : "");
        json_decref(a);
        return NVL_ERR_INVALID;
    }
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || id >= (json_int_t)vocab) {
            nvl_report("%s:%d: entry %zu is not a token id of the "
                       "vocabulary (0..%u)", path, line, i, vocab - 1);
            st = NVL_ERR_INVALID;
            break;
        }
        if (*n_tok + 1 >= *cap) {
            *cap = *cap * 2 + 64;
            *tok = realloc(*tok, *cap * sizeof **tok);
            if (*tok == NULL) {
                nvl_report("out of memory reading %s", path);
                nvl_runtime_abort(1);
            }
        }
        (*tok)[(*n_tok)++] = (int32_t)id;
    }
    *len = (int)json_array_size(a);
    json_decref(a);
    return st;
}

nvl_status_t nvl_cli_read_token_file(const char *path, uint32_t vocab,
                                     int32_t **tok_out, int **len_out,
                                     uint64_t **off_out, int *n_out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        nvl_report("--eval %s: cannot read: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    int32_t *tok = NULL;
    int *len = NULL, n = 0, line = 0;
    uint64_t *off = NULL;
    size_t n_tok = 0, cap = 0;
    char *buf = NULL;
    size_t bcap = 0;
    nvl_status_t st = NVL_OK;
    while (st == NVL_OK && getline(&buf, &bcap, f) > 0) {
        line++;
        if (strspn(buf, " \t\r\n") == strlen(buf))
            continue;
        len = realloc(len, ((size_t)n + 1) * sizeof *len);
        off = realloc(off, ((size_t)n + 1) * sizeof *off);
        if (len == NULL || off == NULL) {
            nvl_report("out of memory reading %s", path);
            nvl_runtime_abort(1);
        }
        off[n] = n_tok;
        st = add_line(path, line, buf, vocab, &tok, &n_tok, &cap, &len[n]);
        n++;
    }
    free(buf);
    fclose(f);
    if (st == NVL_OK && n == 0) {
        nvl_report("--eval %s: no token lists", path);
        st = NVL_ERR_INVALID;
    }
    if (st != NVL_OK) {
        free(tok);
        free(len);
        free(off);
        return st;
    }
    *tok_out = tok;
    *len_out = len;
    *off_out = off;
    *n_out = n;
    return NVL_OK;
}
