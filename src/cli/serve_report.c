/* nvlemu serve's outputs: the readable report, the JSON summary, the
 * per-request CSV and the Chrome trace (docs/serve.md "Results"). */
#include <jansson.h>
#include <string.h>

#include "nvlemu/json.h"
#include "serve_report.h"

#define MS(ps) ((double)(ps) / 1e9)

static void workload_line(const nvl_serve_report_t *r, char *buf, size_t n)
{
    const nvl_serve_args_t *a = r->args;
    if (a->workload != NULL) {
        snprintf(buf, n, "trace %s", a->workload);
        return;
    }
    char isl[64], osl[64], arr[96];
    nvl_serve_len_format(&a->isl, isl, sizeof isl);
    nvl_serve_len_format(&a->osl, osl, sizeof osl);
    if (a->concurrency > 0)
        snprintf(arr, sizeof arr, "closed loop, %ld in flight",
                 a->concurrency);
    else if (a->rate > 0)
        snprintf(arr, sizeof arr, "Poisson arrivals at %g req/s", a->rate);
    else
        snprintf(arr, sizeof arr, "all at time 0 (offline)");
    int k = snprintf(buf, n, "generator: %s, isl %s, osl %s, seed %ld", arr,
                     isl, osl, a->seed);
    if (a->prefix_groups > 0 && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, ", %ld shared prefixes of %ld "
                 "tokens", a->prefix_groups, a->prefix_len);
}

static void dist_row(FILE *out, const char *name, const nvl_serve_dist_t *d)
{
    fprintf(out, "%-12s %10.3f %10.3f %10.3f %10.3f %10.3f\n", name, d->mean,
            d->p50, d->p90, d->p99, d->max);
}

static double busy_share(const nvl_serving_pool_t *p, double span_s)
{
    double busy = 0;
    for (int i = 0; i < p->replicas; i++)
        busy += (double)p->stats[i].busy_ps / 1e12;
    return span_s > 0 ? busy / p->replicas / span_s : 0;
}

static void pool_totals(const nvl_serving_pool_t *p,
                        nvl_serve_replica_stats_t *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < p->replicas; i++) {
        const nvl_serve_replica_stats_t *s = &p->stats[i];
        nvl_serve_stats_add_work(t, s);
        t->steps += s->steps;
        if (s->peak_blocks > t->peak_blocks)
            t->peak_blocks = s->peak_blocks;
        t->kv_blocks = s->kv_blocks;
        t->busy_ps += s->busy_ps;
    }
}

/* The job's queries for its validation families: the serving
 * throughput of its first pool's TP groups, and that pool's steps at their
 * mean decode batch and the workload's mean prompt. */
static void serve_queries(const nvl_serve_report_t *r, nvl_cli_queries_t *qs)
{
    const nvl_serve_args_t *a = r->args;
    const nvl_serving_pool_t *pl = &r->res->pools[0];
    nvl_serve_replica_stats_t t;
    pool_totals(pl, &t);
    double batch = t.steps ? (double)t.decode_tokens / (double)t.steps : 0;
    const nvl_serve_workload_t *w = &r->res->w;
    double prompt = 0;
    for (size_t i = 0; i < w->n; i++)
        prompt += (double)w->reqs[i].input_tokens / (double)w->n;
    nvl_cli_step_t s = {
        .topo = r->topo, .cfg = r->model, .tp = pl->tp,
        .allreduce = a->engine.allreduce, .stack = a->engine.stack, .dtype = a->engine.dtype,
        .batch = batch >= 1 ? (long)(batch + 0.5) : 1,
        .prompt_len = prompt >= 1 ? (uint64_t)(prompt + 0.5) : 1,
        .decode = t.decode_tokens > 0};
    nvl_cli_step_queries(&s, qs);
    size_t i = qs->n++;
    snprintf(qs->cls[i], sizeof qs->cls[i], "serving");
    snprintf(qs->what[i], sizeof qs->what[i], "serving throughput, TP %d",
             pl->tp);
    qs->q[i] = (nvl_vquery_t){.what = qs->what[i], .cls = qs->cls[i],
                              .hardware = r->topo->name,
                              .ranks = (uint32_t)pl->tp};
    qs->q[i].attrs[0].key = "stack";
    qs->q[i].attrs[0].value = nvl_stack_name(a->engine.stack);
    qs->q[i].attrs[1].key = "scheduler";
    qs->q[i].attrs[1].value =
        nvl_serve_scheduler(r->serving->policy.sched)->id.name;
    qs->q[i].attrs[2].key = "model_class";
    qs->q[i].attrs[2].value = r->model->num_experts > 0 ? "moe" : "dense";
}

/* "# policy: ...": the scheduler's row and the resolved knobs. */
static void policy_line(const nvl_serve_report_t *r, FILE *out)
{
    const nvl_serve_policy_t *p = &r->serving->policy;
    const nvl_serve_scheduler_t *sch = nvl_serve_scheduler(p->sched);
    char chunk[32], preempt[64];
    if (p->whole_prompts)
        snprintf(chunk, sizeof chunk, "none (whole prompts)");
    else
        snprintf(chunk, sizeof chunk, "%u", p->chunk);
    if (sch->preemption_text != NULL)
        snprintf(preempt, sizeof preempt, "%s", sch->preemption_text);
    else
        snprintf(preempt, sizeof preempt, "preempt %s",
                 nvl_family_name(&nvl_serve_preempt_family, p->preempt));
    fprintf(out, "# policy: %s scheduler, max batch %u, %u tokens per "
                 "step, chunk %s, block %u, KV memory %.2f of %s, %s, "
                 "prefix caching %s\n",
            sch->id.name, p->max_batch, p->max_tokens_per_step, chunk,
            p->block_tokens, r->serving->mem_fraction,
            sch->mem_of_free ? "the free HBM" : "HBM", preempt,
            p->prefix_caching ? "on" : "off");
}

/* A pool's replica as TensorRT-LLM names its layouts (TP8: attention and
 * experts tensor-parallel; EP8: attention tensor-parallel, experts
 * expert-parallel; DEP8: attention data-parallel, experts expert-parallel),
 * what describes it when no name does, and " x PP3" with a pipeline. */
static void layout_name(const nvl_serve_report_t *r,
                        const nvl_serving_pool_t *pool, char *buf, size_t n)
{
    const nvl_placement_t *pl = &r->serving->engine.place;
    int ep = pl->ep > 0 ? pl->ep : 1, tp = pool->tp;
    int k;
    if (r->model->num_experts == 0 || (!pl->attn_dp && ep == 1))
        k = snprintf(buf, n, "TP%d", tp);
    else if (ep == tp)
        k = snprintf(buf, n, "%sEP%d", pl->attn_dp ? "D" : "", tp);
    else
        k = snprintf(buf, n, "attention %s%d, experts EP%d x TP%d",
                     pl->attn_dp ? "DP" : "TP", tp, ep, tp / ep);
    if (pool->pp > 1 && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " x PP%d", pool->pp);
}

/* The "# " lines: the job, the workload, the policy, the software. */
static void text_header(const nvl_serve_report_t *r, FILE *out)
{
    const nvl_serve_args_t *a = r->args;
    const nvl_serving_pool_t *p0 = &r->res->pools[0];
    char wl[256];
    workload_line(r, wl, sizeof wl);
    fprintf(out, "# nvlemu serve: %s on %s, %d GPUs:", r->model->name,
            r->topo->name, r->sum.gpus);
    for (int p = 0; p < r->res->n_pools; p++) {
        char lay[96];
        layout_name(r, &r->res->pools[p], lay, sizeof lay);
        fprintf(out, "%s %s %d x %s", p ? " +" : "", r->res->pools[p].name,
                r->res->pools[p].replicas, lay);
    }
    if (p0->system_replicas > p0->replicas)
        fprintf(out, " (of a system of %d replicas, %d GPUs: the others "
                     "serve the same share of the load)",
                p0->system_replicas, p0->system_replicas * p0->tp * p0->pp);
    fprintf(out, "\n# workload: %zu requests, %s", r->sum.requests, wl);
    if (r->args->frontend_ms > 0)
        fprintf(out, "; front end %g ms a request, shared round-robin",
                r->args->frontend_ms);
    if (r->args->stream_us > 0)
        fprintf(out, "; output path %g us a token, in turn",
                r->args->stream_us);
    fputc('\n', out);
    policy_line(r, out);
    char weights[160];
    nvl_cli_weights_name(r->model, &a->engine, weights, sizeof weights);
    fprintf(out, "# software: %s stack (%s), weights %s, KV %s; times in "
                 "emulated time\n",
            nvl_stack_name(a->engine.stack),
            a->engine.stack == NVL_STACK_TORCH      ? "PyTorch with CUDA graphs"
            : a->engine.stack == NVL_STACK_COMPILED ? "torch.compile'd layers"
                                                    : "a serving engine's fused kernels",
            weights, nvl_wdtype_name(a->engine.kv_dtype));
}

/* The latencies, throughput, goodput, cost and KV transfers. */
static void text_summary(const nvl_serve_report_t *r, FILE *out)
{
    const nvl_serve_summary_t *s = &r->sum;
    fprintf(out, "\nrequests     %zu finished in %.3f s (first arrival to "
                 "last token)\n\n", s->requests, s->makespan_s);
    fprintf(out, "%-12s %10s %10s %10s %10s %10s\n", "(ms)", "mean", "p50",
            "p90", "p99", "max");
    dist_row(out, "TTFT", &s->ttft_ms);
    dist_row(out, "TPOT", &s->tpot_ms);
    dist_row(out, "E2E", &s->e2e_ms);
    dist_row(out, "queue", &s->queue_ms);
    fprintf(out, "\nthroughput   %.1f output tok/s (%.2f per GPU), %.1f "
                 "total tok/s (%.2f per GPU), %.3f req/s\n",
            s->output_tok_per_s, s->output_tok_per_s_per_gpu,
            s->total_tok_per_s, s->total_tok_per_s_per_gpu, s->req_per_s);
    fprintf(out, "per user     %.2f tok/s (mean over requests of 1 / "
                 "TPOT)\n", s->tok_per_s_per_user);
    if (s->slo_ttft_ms > 0 || s->slo_tpot_ms > 0)
        fprintf(out, "goodput      %.1f%% of requests meet TTFT <= %g ms "
                     "and TPOT <= %g ms: %.3f req/s, %.1f output tok/s\n",
                100 * s->slo_attainment, s->slo_ttft_ms, s->slo_tpot_ms,
                s->goodput_req_per_s, s->goodput_tok_per_s);
    if (s->gpu_hour_cost > 0)
        fprintf(out, "cost         %.4f per million output tokens, %.4f "
                     "per million tokens in and out (%g per GPU-hour x %d "
                     "GPUs)\n", s->cost_per_m_output, s->cost_per_m_total,
                s->gpu_hour_cost, s->gpus);
    if (r->res->n_pools == 2)
        fprintf(out, "KV transfer  %.3f GB from prefill to decode, %.3f ms "
                     "per request from prefill end to decode arrival "
                     "(queueing on the links included)\n",
                r->res->kv_transfer_gb, r->res->kv_transfer_ms_mean);
}

/* The step time's split by part. */
static void text_parts(const nvl_serving_pool_t *pl, FILE *out)
{
    int64_t total = 0;
    for (int i = 0; i < NVL_PART_COUNT; i++)
        total += pl->part_ps[i];
    fprintf(out, "  step time   ");
    for (int i = 0; i < NVL_PART_COUNT; i++)
        if (pl->part_ps[i] > 0)
            fprintf(out, " %s %.1f%%", nvl_part_name((nvl_part_t)i),
                    total ? 100.0 * (double)pl->part_ps[i] / (double)total
                          : 0);
    fprintf(out, "\n");
}

static void text_pool(const nvl_serve_report_t *r,
                      const nvl_serving_pool_t *pl, FILE *out)
{
    nvl_serve_replica_stats_t t;
    pool_totals(pl, &t);
    char lay[96];
    layout_name(r, pl, lay, sizeof lay);
    fprintf(out, "\npool %s: %d replica(s) x %s\n", pl->name, pl->replicas,
            lay);
    fprintf(out, "  KV cache     %.2f GB per GPU (%.0f blocks of %u "
                 "positions; %.0f%% in host memory), peak use %.1f%%\n",
            pl->kv_gb_per_gpu, pl->kv_blocks,
            r->serving->policy.block_tokens, 100 * pl->kv_host_share,
            pl->kv_blocks > 0 ? 100.0 * (double)t.peak_blocks / pl->kv_blocks
                              : 0);
    fprintf(out, "  utilisation  %.1f%% busy (steps' time over the "
                 "makespan, mean over replicas)\n",
            100 * busy_share(pl, r->sum.makespan_s));
    double st = t.steps ? (double)t.steps : 1;
    fprintf(out, "  steps        %llu: %.1f sequences and %.1f tokens "
                 "each on average (%.1f%% prefill tokens)\n",
            (unsigned long long)t.steps, (double)t.seqs / st,
            (double)t.tokens / st,
            t.tokens ? 100.0 * (double)t.prefill_tokens / (double)t.tokens
                     : 0);
    fprintf(out, "  preemptions  %llu; prefix-cache hits %llu (%llu "
                 "prompt tokens not computed); C2C copies %.3f GB in, "
                 "%.3f GB out\n",
            (unsigned long long)t.preemptions,
            (unsigned long long)t.prefix_hits,
            (unsigned long long)t.prefix_hit_tokens, t.h2d_bytes / 1e9,
            t.d2h_bytes / 1e9);
    text_parts(pl, out);
}

void nvl_serve_report_text(const nvl_serve_report_t *r, FILE *out)
{
    text_header(r, out);
    text_summary(r, out);
    for (int p = 0; p < r->res->n_pools; p++)
        text_pool(r, &r->res->pools[p], out);
    fprintf(out, "\n# emulation: %.2f s wall\n", r->res->wall_s);
    nvl_cli_queries_t qs;
    serve_queries(r, &qs);
    nvl_validation_print(r->validation, qs.q, qs.n, out);
}

static json_t *dist_json(const nvl_serve_dist_t *d)
{
    return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "mean", d->mean, "p50",
                     d->p50, "p90", d->p90, "p99", d->p99, "min", d->min,
                     "max", d->max);
}

/* "inputs": what was asked, the policy as resolved. */
static json_t *json_inputs(const nvl_serve_report_t *r)
{
    const nvl_serve_args_t *a = r->args;
    const nvl_serve_policy_t *p = &r->serving->policy;
    char isl[64], osl[64];
    nvl_serve_len_format(&a->isl, isl, sizeof isl);
    nvl_serve_len_format(&a->osl, osl, sizeof osl);
    json_t *in = json_pack(
        "{s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:b}",
        "model", r->model->name, "topology", r->topo->name, "gpus",
        r->sum.gpus, "stack", nvl_stack_name(a->engine.stack), "dtype",
        nvl_wdtype_name(a->engine.dtype), "kv_dtype", nvl_wdtype_name(a->engine.kv_dtype),
        "allreduce", nvl_ar_impl_name((nvl_ar_impl_t)a->engine.allreduce),
        "max_batch", (json_int_t)p->max_batch, "max_tokens_per_step",
        (json_int_t)p->max_tokens_per_step, "chunk",
        (json_int_t)(p->whole_prompts ? 0 : p->chunk), "block",
        (json_int_t)p->block_tokens, "preempt",
        nvl_family_name(&nvl_serve_preempt_family, p->preempt),
        "prefix_caching", p->prefix_caching);
    json_object_set_new(in, "scheduler",
                        json_string(nvl_serve_scheduler(p->sched)->id.name));
    json_object_set_new(in, "mem_fraction",
                        json_real(r->serving->mem_fraction));
    json_object_set_new(in, "system_replicas",
                        json_integer(r->res->pools[0].system_replicas));
    json_object_set_new(in, "frontend_ms", json_real(a->frontend_ms));
    json_object_set_new(in, "stream_us", json_real(a->stream_us));
    if (a->workload != NULL)
        json_object_set_new(in, "workload", json_string(a->workload));
    else
        json_object_set_new(
            in, "generator",
            json_pack("{s:I, s:f, s:I, s:s, s:s, s:I, s:I, s:I}", "requests",
                      (json_int_t)a->requests, "rate", a->rate,
                      "concurrency", (json_int_t)a->concurrency, "isl", isl,
                      "osl", osl, "prefix_groups",
                      (json_int_t)a->prefix_groups, "prefix_len",
                      (json_int_t)a->prefix_len, "seed",
                      (json_int_t)a->seed));
    return in;
}

static json_t *json_pool(const nvl_serve_report_t *r,
                         const nvl_serving_pool_t *pl)
{
    nvl_serve_replica_stats_t t;
    pool_totals(pl, &t);
    json_t *parts = json_object();
    for (int i = 0; i < NVL_PART_COUNT; i++)
        json_object_set_new(parts, nvl_part_name((nvl_part_t)i),
                            json_real(MS(pl->part_ps[i])));
    char lay[96];
    layout_name(r, pl, lay, sizeof lay);
    json_t *o = json_pack(
        "{s:s, s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:I, "
        "s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:o}",
        "name", pl->name, "layout", lay, "gpus", pl->gpus, "tp", pl->tp,
        "replicas",
        pl->replicas, "kv_gb_per_gpu", pl->kv_gb_per_gpu, "kv_blocks",
        pl->kv_blocks, "kv_host_share", pl->kv_host_share, "kv_peak_use",
        pl->kv_blocks > 0 ? (double)t.peak_blocks / pl->kv_blocks : 0.0,
        "utilisation", busy_share(pl, r->sum.makespan_s), "steps",
        (json_int_t)t.steps, "tokens", (json_int_t)t.tokens,
        "prefill_tokens", (json_int_t)t.prefill_tokens, "decode_tokens",
        (json_int_t)t.decode_tokens, "preemptions",
        (json_int_t)t.preemptions, "prefix_hits", (json_int_t)t.prefix_hits,
        "prefix_hit_tokens", (json_int_t)t.prefix_hit_tokens, "c2c_in_gb",
        t.h2d_bytes / 1e9, "c2c_out_gb", t.d2h_bytes / 1e9,
        "step_time_ms_by_part", parts);
    json_object_set_new(o, "pp", json_integer(pl->pp));
    return o;
}

/* The summary's keys after "inputs", in the report's order. */
static void json_summary(const nvl_serve_summary_t *s, json_t *root)
{
    json_object_set_new(root, "requests",
                        json_integer((json_int_t)s->requests));
    json_object_set_new(root, "makespan_s", json_real(s->makespan_s));
    json_object_set_new(root, "ttft_ms", dist_json(&s->ttft_ms));
    json_object_set_new(root, "tpot_ms", dist_json(&s->tpot_ms));
    json_object_set_new(root, "e2e_ms", dist_json(&s->e2e_ms));
    json_object_set_new(root, "queue_ms", dist_json(&s->queue_ms));
    json_object_set_new(root, "input_tokens", json_real(s->input_tokens));
    json_object_set_new(root, "output_tokens", json_real(s->output_tokens));
    json_object_set_new(root, "output_tok_per_s",
                        json_real(s->output_tok_per_s));
    json_object_set_new(root, "total_tok_per_s",
                        json_real(s->total_tok_per_s));
    json_object_set_new(root, "req_per_s", json_real(s->req_per_s));
    json_object_set_new(root, "output_tok_per_s_per_gpu",
                        json_real(s->output_tok_per_s_per_gpu));
    json_object_set_new(root, "total_tok_per_s_per_gpu",
                        json_real(s->total_tok_per_s_per_gpu));
    json_object_set_new(root, "tok_per_s_per_user",
                        json_real(s->tok_per_s_per_user));
    json_object_set_new(
        root, "slo",
        json_pack("{s:f, s:f, s:I, s:f, s:f, s:f}", "ttft_ms", s->slo_ttft_ms,
                  "tpot_ms", s->slo_tpot_ms, "good_requests",
                  (json_int_t)s->good_requests, "attainment",
                  s->slo_attainment, "goodput_req_per_s",
                  s->goodput_req_per_s, "goodput_tok_per_s",
                  s->goodput_tok_per_s));
    if (s->gpu_hour_cost > 0)
        json_object_set_new(
            root, "cost",
            json_pack("{s:f, s:f, s:f}", "gpu_hour", s->gpu_hour_cost,
                      "per_million_output_tokens", s->cost_per_m_output,
                      "per_million_tokens", s->cost_per_m_total));
}

nvl_status_t nvl_serve_report_json(const nvl_serve_report_t *r,
                                   const char *path)
{
    json_t *pools = json_array();
    for (int p = 0; p < r->res->n_pools; p++)
        json_array_append_new(pools, json_pool(r, &r->res->pools[p]));
    json_t *root = json_object();
    json_object_set_new(root, "inputs", json_inputs(r));
    json_summary(&r->sum, root);
    if (r->res->n_pools == 2)
        json_object_set_new(
            root, "kv_transfer",
            json_pack("{s:f, s:f}", "gb", r->res->kv_transfer_gb, "ms_mean",
                      r->res->kv_transfer_ms_mean));
    json_object_set_new(root, "pools", pools);
    json_object_set_new(root, "wall_s", json_real(r->res->wall_s));
    nvl_cli_queries_t qs;
    serve_queries(r, &qs);
    json_object_set_new(root, "validation",
                        nvl_validation_json(r->validation, qs.q, qs.n));
    FILE *f = nvl_cli_open_out("--json", path);
    nvl_status_t st = NVL_ERR_IO;
    if (f != NULL) {
        nvl_json_dumpf(root, f, JSON_INDENT(2));
        fputc('\n', f);
        st = nvl_cli_close_out("--json", path, f);
    }
    json_decref(root);
    return st;
}

nvl_status_t nvl_serve_report_csv(const nvl_serve_report_t *r,
                                  const char *path)
{
    FILE *f = nvl_cli_open_out("--csv", path);
    if (f == NULL)
        return NVL_ERR_IO;
    nvl_serve_csv_write(&r->res->w, r->res->out, &r->sum, f);
    return nvl_cli_close_out("--csv", path, f);
}

/* One trace event, streamed (jansson encodes it). */
static void emit(FILE *out, json_t *ev, bool *first)
{
    fputs(*first ? "\n" : ",\n", out);
    *first = false;
    nvl_json_dumpf(ev, out, JSON_COMPACT);
    json_decref(ev);
}

/* A replica's track (tid; a pipeline's slot `slot` of pp: its steps k
 * with k % pp == slot, which never overlap: steps end in order). */
static int replica_tid(int rep, int pp, int slot)
{
    return pp > 1 ? (rep + 1) * NVL_ENGINE_PP_MAX + slot : rep;
}

/* Process 0: a track per replica, its steps as complete events; with a
 * pipeline, a track per step in flight. */
static void trace_replicas(const nvl_serve_report_t *r, FILE *out,
                           bool *first)
{
    const nvl_serving_result_t *res = r->res;
    int rep = 0;
    for (int p = 0; p < res->n_pools; p++)
        for (int i = 0; i < res->pools[p].replicas; i++, rep++) {
            int pp = res->pools[p].pp;
            for (int slot = 0; slot < pp; slot++) {
                char name[160], lay[96];
                layout_name(r, &res->pools[p], lay, sizeof lay);
                int n = snprintf(name, sizeof name, "%s replica %d (%s)",
                                 res->pools[p].name, i, lay);
                if (pp > 1)
                    snprintf(name + n, sizeof name - (size_t)n,
                             ", step in flight %d", slot + 1);
                emit(out, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name",
                                    "thread_name", "ph", "M", "pid", 0,
                                    "tid", replica_tid(rep, pp, slot),
                                    "args", "name", name),
                     first);
            }
            for (size_t k = 0; k < res->n_steps[rep]; k++) {
                const nvl_serve_step_rec_t *s = &res->steps[rep][k];
                int tid = replica_tid(rep, pp, (int)(k % (size_t)pp));
                emit(out,
                     json_pack("{s:s, s:s, s:f, s:f, s:i, s:i, s:{s:i, s:i, "
                               "s:i, s:i}}",
                               "name", s->prefill_tokens ? "step (prefill)"
                                                         : "step",
                               "ph", "X", "ts", (double)s->start_ps / 1e6,
                               "dur", (double)s->dur_ps / 1e6, "pid", 0,
                               "tid", tid, "args", "sequences", s->seqs,
                               "tokens", s->tokens, "prefill_tokens",
                               s->prefill_tokens, "kv_blocks_used",
                               s->blocks_used),
                     first);
            }
        }
}

/* Process 1: each request's life as async spans. */
static void trace_requests(const nvl_serving_result_t *res, FILE *out,
                           bool *first)
{
    for (size_t i = 0; i < res->w.n; i++) {
        const nvl_serve_outcome_t *o = &res->out[i];
        const nvl_serve_req_t *q = &res->w.reqs[i];
        const char *names[3] = {"queued", "prefill", "decode"};
        int64_t at[4] = {o->arrival_ps, o->scheduled_ps, o->first_token_ps,
                         o->done_ps};
        char id[32];
        snprintf(id, sizeof id, "request %u", q->id);
        for (int k = 0; k < 3; k++) {
            if (at[k + 1] <= at[k] && k != 1)
                continue;
            emit(out,
                 json_pack("{s:s, s:s, s:s, s:I, s:f, s:i, s:i, s:{s:i, "
                           "s:i, s:i}}",
                           "name", names[k], "cat", id, "ph", "b", "id",
                           (json_int_t)q->id, "ts", (double)at[k] / 1e6,
                           "pid", 1, "tid", 0, "args", "input_tokens",
                           q->input_tokens, "output_tokens", q->output_tokens,
                           "replica", o->replica),
                 first);
            emit(out,
                 json_pack("{s:s, s:s, s:s, s:I, s:f, s:i, s:i}", "name",
                           names[k], "cat", id, "ph", "e", "id",
                           (json_int_t)q->id, "ts", (double)at[k + 1] / 1e6,
                           "pid", 1, "tid", 0),
                 first);
        }
    }
}

nvl_status_t nvl_serve_trace_write(const nvl_serve_report_t *r, FILE *out)
{
    bool first = true;
    fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", out);
    emit(out, json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", "process_name",
                        "ph", "M", "pid", 0, "args", "name", "replicas"),
         &first);
    emit(out, json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", "process_name",
                        "ph", "M", "pid", 1, "args", "name", "requests"),
         &first);
    trace_replicas(r, out, &first);
    trace_requests(r->res, out, &first);
    fputs("\n]}\n", out);
    if (fflush(out) != 0 || ferror(out)) {
        nvl_report("--trace: write failed");
        return NVL_ERR_IO;
    }
    return NVL_OK;
}
