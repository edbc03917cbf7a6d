/* A workload's results: per-request latencies, their means and
 * percentiles, throughput, goodput under SLOs and cost per million tokens
 * (docs/serve.md "Results", with each definition and whose it is). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/serve.h"

#define MS(ps) ((double)(ps) / 1e9)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Percentile q (0..100) of sorted v by linear interpolation between the
 * closest ranks (numpy.percentile's default, as vLLM's and SGLang's
 * benchmark scripts report them). */
static double percentile(const double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    double pos = q / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (pos - (double)lo);
}

static void dist(double *v, size_t n, nvl_serve_dist_t *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (n == 0)
        return;
    qsort(v, n, sizeof *v, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    d->mean = sum / (double)n;
    d->p50 = percentile(v, n, 50);
    d->p90 = percentile(v, n, 90);
    d->p99 = percentile(v, n, 99);
    d->min = v[0];
    d->max = v[n - 1];
}

void nvl_serve_stats_add_work(nvl_serve_replica_stats_t *t,
                              const nvl_serve_replica_stats_t *s)
{
    t->tokens += s->tokens;
    t->prefill_tokens += s->prefill_tokens;
    t->decode_tokens += s->decode_tokens;
    t->seqs += s->seqs;
    t->preemptions += s->preemptions;
    t->prefix_hits += s->prefix_hits;
    t->prefix_hit_tokens += s->prefix_hit_tokens;
    t->h2d_bytes += s->h2d_bytes;
    t->d2h_bytes += s->d2h_bytes;
}

/* Request i's time per output token after the first (ms; 0 when it made
 * one token). */
static double tpot_ms(const nvl_serve_req_t *r, const nvl_serve_outcome_t *o)
{
    return r->output_tokens > 1 ? MS(o->done_ps - o->first_token_ps) /
                                      (double)(r->output_tokens - 1)
                                : 0;
}

static bool meets(const nvl_serve_req_t *r, const nvl_serve_outcome_t *o,
                  double slo_ttft_ms, double slo_tpot_ms)
{
    return (slo_ttft_ms <= 0 ||
            MS(o->first_token_ps - o->arrival_ps) <= slo_ttft_ms) &&
           (slo_tpot_ms <= 0 || tpot_ms(r, o) <= slo_tpot_ms);
}

void nvl_serve_summarize(const nvl_serve_workload_t *w,
                         const nvl_serve_outcome_t *out, int gpus,
                         double slo_ttft_ms, double slo_tpot_ms,
                         double gpu_hour_cost, nvl_serve_summary_t *sum_out)
{
    nvl_serve_summary_t s = {.requests = w->n, .slo_ttft_ms = slo_ttft_ms,
                             .slo_tpot_ms = slo_tpot_ms,
                             .gpu_hour_cost = gpu_hour_cost, .gpus = gpus};
    size_t n = w->n;
    double *v[4];
    for (int j = 0; j < 4; j++)
        v[j] = malloc((n + 1) * sizeof *v[j]);
    if (!v[0] || !v[1] || !v[2] || !v[3]) {
        for (int j = 0; j < 4; j++)
            free(v[j]);
        memset(sum_out, 0, sizeof *sum_out);
        return;
    }
    int64_t first = INT64_MAX, last = 0;
    size_t n_tpot = 0;
    double inv_tpot = 0, good_tokens = 0;
    for (size_t i = 0; i < n; i++) {
        const nvl_serve_req_t *r = &w->reqs[i];
        const nvl_serve_outcome_t *o = &out[i];
        if (o->arrival_ps < first)
            first = o->arrival_ps;
        if (o->done_ps > last)
            last = o->done_ps;
        v[0][i] = MS(o->first_token_ps - o->arrival_ps);
        v[2][i] = MS(o->done_ps - o->arrival_ps);
        v[3][i] = MS(o->scheduled_ps - o->arrival_ps);
        if (r->output_tokens > 1) {
            double t = tpot_ms(r, o);
            v[1][n_tpot++] = t;
            if (t > 0)
                inv_tpot += 1e3 / t;
        }
        s.input_tokens += r->input_tokens;
        s.output_tokens += r->output_tokens;
        if (meets(r, o, slo_ttft_ms, slo_tpot_ms)) {
            s.good_requests++;
            good_tokens += r->output_tokens;
        }
    }
    dist(v[0], n, &s.ttft_ms);
    dist(v[1], n_tpot, &s.tpot_ms);
    dist(v[2], n, &s.e2e_ms);
    dist(v[3], n, &s.queue_ms);
    for (int j = 0; j < 4; j++)
        free(v[j]);
    s.makespan_s = n ? (double)(last - first) / 1e12 : 0;
    double span = s.makespan_s > 0 ? s.makespan_s : 1;
    s.output_tok_per_s = s.output_tokens / span;
    s.total_tok_per_s = (s.input_tokens + s.output_tokens) / span;
    s.req_per_s = (double)n / span;
    s.output_tok_per_s_per_gpu = s.output_tok_per_s / gpus;
    s.total_tok_per_s_per_gpu = s.total_tok_per_s / gpus;
    s.tok_per_s_per_user = n_tpot ? inv_tpot / (double)n_tpot : 0;
    s.goodput_req_per_s = (double)s.good_requests / span;
    s.goodput_tok_per_s = good_tokens / span;
    s.slo_attainment = n ? (double)s.good_requests / (double)n : 0;
    if (gpu_hour_cost > 0) {
        double spend = gpu_hour_cost * gpus * s.makespan_s / 3600.0;
        s.cost_per_m_output = spend / (s.output_tokens / 1e6);
        s.cost_per_m_total = spend /
                             ((s.input_tokens + s.output_tokens) / 1e6);
    }
    *sum_out = s;
}

void nvl_serve_csv_write(const nvl_serve_workload_t *w,
                         const nvl_serve_outcome_t *out,
                         const nvl_serve_summary_t *sum, FILE *f)
{
    fprintf(f, "id,line,replica,arrival_s,input_tokens,output_tokens,"
               "cached_tokens,queue_ms,ttft_ms,tpot_ms,e2e_ms,preemptions,"
               "meets_slo\n");
    for (size_t i = 0; i < w->n; i++) {
        const nvl_serve_req_t *r = &w->reqs[i];
        const nvl_serve_outcome_t *o = &out[i];
        fprintf(f, "%u,%u,%u,%.9f,%u,%u,%u,%.6f,%.6f,%.6f,%.6f,%u,%d\n",
                r->id, r->line, o->replica, (double)o->arrival_ps / 1e12,
                r->input_tokens, r->output_tokens, o->cached_tokens,
                MS(o->scheduled_ps - o->arrival_ps),
                MS(o->first_token_ps - o->arrival_ps), tpot_ms(r, o),
                MS(o->done_ps - o->arrival_ps), o->preemptions,
                meets(r, o, sum->slo_ttft_ms, sum->slo_tpot_ms) ? 1 : 0);
    }
}
