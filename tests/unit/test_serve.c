/* The serve module: traces and their errors, the generator, the
 * scheduler's invariants with a step time given by a formula, and the
 * summary's statistics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nvlemu/serve.h"
#include "nvlemu/vclock.h"
#include "reports.h"

/* |a - b| <= tol (cmocka 1.1 has no double assertion) */
#define assert_double_equal(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

/* ---- traces ---------------------------------------------------------------- */

/* TensorRT-LLM's scheduler: its row, found by name. */
static nvl_serve_sched_t trtllm(void)
{
    int v = NVL_SCHED_VLLM;
    assert_int_equal(nvl_family_parse(&nvl_serve_sched_family, "trtllm", &v),
                     NVL_OK);
    return v;
}

static char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/nvl_serve_test_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_trace_good(void **state)
{
    (void)state;
    char *p = write_tmp(
        "# a comment\n"
        "{\"arrival_s\": 0, \"input_tokens\": 100, \"output_tokens\": 5}\n"
        "\n"
        "{\"arrival_s\": 0.5, \"input_tokens\": 40, \"output_tokens\": 2, "
        "\"prefix_id\": \"sys\", \"prefix_tokens\": 32}\n"
        "{\"timestamp\": 0.5, \"input_length\": 64, \"output_length\": 1, "
        "\"prefix_id\": \"sys\"}\n");
    nvl_serve_workload_t w;
    assert_int_equal(nvl_serve_trace_load(p, &w), NVL_OK);
    unlink(p);
    assert_int_equal(w.n, 3);
    assert_int_equal(w.reqs[0].line, 2);
    assert_int_equal(w.reqs[1].line, 4);
    assert_int_equal(w.reqs[1].arrival_ps, 500000000000LL);
    assert_int_equal(w.reqs[0].prefix, -1);
    assert_int_equal(w.reqs[1].prefix, 0);
    assert_int_equal(w.reqs[2].prefix, 0);
    assert_int_equal(w.reqs[2].prefix_tokens, 32); /* the id's length */
    assert_int_equal(w.reqs[2].input_tokens, 64);
    assert_string_equal(w.prefix_names[0], "sys");
    nvl_serve_workload_free(&w);
}

/* Each bad trace fails with one report naming its line. */
static void test_trace_bad(void **state)
{
    (void)state;
    static const struct {
        const char *text, *expect;
    } cases[] = {
        {"{\"arrival_s\": 1, \"input_tokens\": 1, \"output_tokens\": 1}\n"
         "{\"arrival_s\": 0.5, \"input_tokens\": 1, \"output_tokens\": 1}\n",
         ":2: \"arrival_s\" 0.5 is before the previous line's 1"},
        {"{\"arrival_s\": 0, \"input_tokens\": -3, \"output_tokens\": 1}\n",
         ":1: \"input_tokens\" is -3"},
        {"{\"arrival_s\": 0, \"input_tokens\": 3, \"output_tokens\": 1\n",
         ":1: malformed JSON"},
        {"{\"arrival_s\": -1, \"input_tokens\": 3, \"output_tokens\": 1}\n",
         ":1: \"arrival_s\" is -1"},
        {"{\"arrival_s\": 0, \"input_tokens\": 3}\n",
         ":1: missing \"output_tokens\""},
        {"{\"arrival_s\": 0, \"input_tokens\": 3, \"output_tokens\": 1, "
         "\"prefix_id\": \"a\", \"prefix_tokens\": 9}\n",
         ":1: \"prefix_tokens\" 9 is more than \"input_tokens\" 3"},
        {"[1, 2]\n", ":1: expected a JSON object"},
        {"# nothing\n", "no requests"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *p = write_tmp(cases[i].text);
        nvl_serve_workload_t w;
        reports.count = 0;
        assert_int_not_equal(nvl_serve_trace_load(p, &w), NVL_OK);
        unlink(p);
        assert_int_equal(reports.count, 1);
        if (strstr(reports.last, cases[i].expect) == NULL)
            fail_msg("case %zu: '%s' lacks '%s'", i, reports.last,
                     cases[i].expect);
    }
}

/* ---- the generator ----------------------------------------------------------- */

static void test_generator(void **state)
{
    (void)state;
    nvl_serve_gen_t g = {.requests = 20000, .rate_per_s = 50, .seed = 7};
    assert_int_equal(nvl_serve_len_parse("--isl", "uniform:10:20", &g.isl),
                     NVL_OK);
    assert_int_equal(nvl_serve_len_parse("--osl", "64", &g.osl), NVL_OK);
    nvl_serve_workload_t a, b;
    assert_int_equal(nvl_serve_generate(&g, &a), NVL_OK);
    assert_int_equal(nvl_serve_generate(&g, &b), NVL_OK);
    assert_memory_equal(a.reqs, b.reqs, a.n * sizeof *a.reqs);
    /* Poisson arrivals: mean gap 1 / rate (20000 draws: within 3 %) */
    double span = (double)a.reqs[a.n - 1].arrival_ps / 1e12;
    assert_true(fabs(span / (double)(a.n - 1) - 0.02) < 0.02 * 0.03);
    for (size_t i = 0; i < a.n; i++) {
        assert_true(a.reqs[i].input_tokens >= 10 &&
                    a.reqs[i].input_tokens <= 20);
        assert_int_equal(a.reqs[i].output_tokens, 64);
        assert_true(i == 0 || a.reqs[i].arrival_ps >= a.reqs[i - 1].arrival_ps);
    }
    nvl_serve_workload_free(&a);
    nvl_serve_workload_free(&b);
    nvl_serve_len_t l;
    reports.count = 0;
    assert_int_not_equal(nvl_serve_len_parse("--isl", "uniform:9:3", &l),
                         NVL_OK);
    assert_int_not_equal(nvl_serve_len_parse("--isl", "0", &l), NVL_OK);
    assert_int_equal(reports.count, 2);
}

/* ---- the front end ------------------------------------------------------------ */

/* Processor sharing: requests arriving together all leave together; a
 * closed loop is refused; 0 clears. */
static void test_frontend(void **state)
{
    (void)state;
    nvl_serve_req_t r[4] = {[3] = {.arrival_ps = nvl_ps_from_s(1.0)}};
    nvl_serve_workload_t w = {.reqs = r, .n = 4};
    assert_int_equal(nvl_serve_frontend(&w, 0.010), NVL_OK);
    for (int i = 0; i < 4; i++) /* three at once: 30 ms; one alone: 10 */
        assert_true(llabs(r[i].frontend_ps - nvl_ps_from_s(i < 3 ? 0.030
                                                                 : 0.010)) < 10);
    /* one at 5 ms: the first's last 5 ms at half speed, then its own */
    r[1].arrival_ps = nvl_ps_from_s(0.005);
    w.n = 2;
    assert_int_equal(nvl_serve_frontend(&w, 0.010), NVL_OK);
    for (int i = 0; i < 2; i++)
        assert_true(llabs(r[i].frontend_ps - nvl_ps_from_s(0.015)) < 10);
    assert_int_equal(nvl_serve_frontend(&w, 0), NVL_OK);
    assert_true(r[0].frontend_ps == 0 && r[1].frontend_ps == 0);
    w.concurrency = 2;
    reports.count = 0;
    assert_true(nvl_serve_frontend(&w, 0.010) != NVL_OK && reports.count == 1);
    assert_non_null(strstr(reports.last, "--concurrency 2"));
}

/* ---- the scheduler ------------------------------------------------------------ */

/* A step of n sequences and T tokens takes 1 ms + 10 us per token; the
 * checker keeps what the scheduler handed over. */
typedef struct {
    const nvl_serve_policy_t *p;
    uint64_t steps, tokens, prefill, max_tokens, max_seqs;
    double h2d, d2h;
    /* a pipeline (p->in_flight > 1): each request's step end (by request;
     * NULL: not checked), the last steps' ends, the most in flight */
    int64_t *until, ends[16];
    int most;
} fake_t;

static nvl_status_t fake_step(void *ctx, const nvl_serve_batch_t *b,
                              nvl_serve_step_time_t *time_out)
{
    fake_t *f = ctx;
    uint64_t t = 0;
    for (int i = 0; i < b->n; i++)
        t += b->new_tokens[i];
    assert_int_equal(t, b->tokens);
    assert_true(b->tokens <= f->p->max_tokens_per_step);
    assert_true((uint32_t)b->n <= f->p->max_batch);
    f->steps++;
    f->tokens += t;
    f->prefill += b->prefill_tokens;
    f->h2d += b->h2d_bytes;
    f->d2h += b->d2h_bytes;
    if (t > f->max_tokens)
        f->max_tokens = t;
    if ((uint64_t)b->n > f->max_seqs)
        f->max_seqs = (uint64_t)b->n;
    time_out->dur_ps = 1000000000LL + 10000000LL * (int64_t)t;
    time_out->free_ps = time_out->dur_ps;
    uint32_t depth = f->p->in_flight;
    if (depth > 1) {
        /* stage 0 busy for a depth-th of the step; a request in a step in
         * flight runs in no other until it ends */
        time_out->free_ps = time_out->dur_ps / depth;
        int in = 1;
        for (int i = 0; i < 16; i++)
            in += f->ends[i] > b->start_ps;
        f->most = in > f->most ? in : f->most;
        f->ends[f->steps % 16] = b->start_ps + time_out->dur_ps;
        for (int i = 0; f->until != NULL && i < b->n; i++) {
            assert_true(b->start_ps >= f->until[b->req[i]]);
            f->until[b->req[i]] = b->start_ps + time_out->dur_ps;
        }
    }
    return NVL_OK;
}

static nvl_serve_workload_t make_load(size_t n, uint32_t isl, uint32_t osl,
                                      int64_t gap_ps)
{
    nvl_serve_workload_t w = {.n = n};
    w.reqs = calloc(n, sizeof *w.reqs);
    for (size_t i = 0; i < n; i++)
        w.reqs[i] = (nvl_serve_req_t){.id = (uint32_t)i,
                                      .arrival_ps = (int64_t)i * gap_ps,
                                      .input_tokens = isl + (uint32_t)(i % 7),
                                      .output_tokens = osl + (uint32_t)(i % 5),
                                      .prefix = -1};
    return w;
}

static uint32_t *all_of(size_t n)
{
    uint32_t *which = malloc(n * sizeof *which);
    for (size_t i = 0; i < n; i++)
        which[i] = (uint32_t)i;
    return which;
}

/* Runs w on a replica of `blocks` KV blocks; checks conservation. */
static void serve_all(nvl_serve_workload_t *w, nvl_serve_policy_t *p,
                      uint64_t blocks, fake_t *f, nvl_serve_outcome_t *out,
                      nvl_serve_replica_stats_t *st, int64_t *until)
{
    nvl_serve_capacity_t cap = {.kv_blocks = blocks, .kv_block_bytes = 1e6,
                                .host_bytes = 1e12, .max_context = 1 << 20};
    uint32_t *which = all_of(w->n);
    memset(f, 0, sizeof *f);
    f->p = p;
    f->until = until;
    nvl_serve_step_rec_t *recs = NULL;
    size_t n_recs = 0;
    assert_int_equal(nvl_serve_check(w, p, &cap), NVL_OK);
    assert_int_equal(nvl_serve_run(w, which, w->n, 0, p, &cap, false, 0,
                                   fake_step, f, out, st, &recs, &n_recs),
                     NVL_OK);
    assert_int_equal(n_recs, f->steps);
    for (size_t i = 0; i < n_recs; i++)
        assert_true(recs[i].blocks_used <= blocks); /* never over capacity */
    for (size_t i = 0; i < w->n; i++) {
        const nvl_serve_outcome_t *o = &out[i];
        assert_true(o->done);
        assert_true(o->arrival_ps <= o->scheduled_ps);
        assert_true(o->scheduled_ps < o->first_token_ps);
        assert_true(o->first_token_ps <= o->done_ps);
    }
    free(which);
    free(recs);
}

static nvl_serve_policy_t policy(void)
{
    return (nvl_serve_policy_t){.max_batch = 32, .max_tokens_per_step = 512,
                                .chunk = 512, .block_tokens = 16,
                                .preempt = NVL_PREEMPT_RECOMPUTE,
                                .prefix_caching = true};
}

/* With room for everyone: every token computed once. */
static void test_sched_conservation(void **state)
{
    (void)state;
    nvl_serve_workload_t w = make_load(200, 300, 40, 2000000000LL);
    nvl_serve_policy_t p = policy();
    nvl_serve_outcome_t *out = calloc(w.n, sizeof *out);
    nvl_serve_replica_stats_t st;
    fake_t f;
    serve_all(&w, &p, 100000, &f, out, &st, NULL);
    uint64_t expect = 0, prompts = 0;
    for (size_t i = 0; i < w.n; i++) {
        expect += w.reqs[i].input_tokens + w.reqs[i].output_tokens - 1;
        prompts += w.reqs[i].input_tokens;
    }
    assert_int_equal(f.tokens, expect);
    assert_int_equal(f.prefill, prompts);
    assert_int_equal(st.preemptions, 0);
    assert_int_equal(f.max_tokens <= 512, 1);
    free(out);
    nvl_serve_workload_free(&w);
}

/* A pipeline of 4 stages: at most 4 steps in flight (and more than one),
 * a request in at most one of them (TensorRT-LLM's rule; vLLM's lets a
 * prefill's next chunk in), every token computed once; and vLLM on a
 * cache that forces preemptions (never of a request in flight): every
 * request still finishes. */
static void test_sched_in_flight(void **state)
{
    (void)state;
    for (int sc = 0; sc < 3; sc++) {
        nvl_serve_workload_t w = make_load(120, 300, 30, 0);
        nvl_serve_policy_t p = policy();
        p.in_flight = 4;
        p.max_batch = 16;
        if (sc == 1) {
            p.sched = trtllm();
            p.whole_prompts = true;
            p.max_tokens_per_step = 4096;
        }
        nvl_serve_outcome_t *out = calloc(w.n, sizeof *out);
        int64_t *until = calloc(w.n, sizeof *until);
        nvl_serve_replica_stats_t st;
        fake_t f;
        uint64_t expect = 0, prompts = 0;
        for (size_t i = 0; i < w.n; i++) {
            expect += w.reqs[i].input_tokens + w.reqs[i].output_tokens - 1;
            prompts += w.reqs[i].input_tokens;
        }
        serve_all(&w, &p, sc == 2 ? 120 : 100000, &f, out, &st,
                  sc == 1 ? until : NULL);
        if (sc == 2)
            assert_true(st.preemptions > 0);
        else {
            assert_int_equal(f.tokens, expect);
            assert_int_equal(f.prefill, prompts);
        }
        assert_true(f.most > 1 && f.most <= 4);
        free(until);
        free(out);
        nvl_serve_workload_free(&w);
    }
}

/* One request: a prefill step, then one decode step per further token. */
static void test_sched_one_request(void **state)
{
    (void)state;
    nvl_serve_workload_t w = make_load(1, 300, 10, 0);
    nvl_serve_policy_t p = policy();
    nvl_serve_outcome_t out[1];
    nvl_serve_replica_stats_t st;
    fake_t f;
    serve_all(&w, &p, 1000, &f, out, &st, NULL);
    assert_int_equal(f.steps, 10);
    assert_int_equal(out[0].first_token_ps, 1000000000LL + 300 * 10000000LL);
    assert_int_equal(out[0].done_ps - out[0].first_token_ps,
                     9 * (1000000000LL + 10000000LL));
    /* chunked: 300 tokens in chunks of 128 take three steps */
    p.chunk = 128;
    serve_all(&w, &p, 1000, &f, out, &st, NULL);
    assert_int_equal(f.steps, 12);
    assert_int_equal(f.prefill, 300);
    nvl_serve_workload_free(&w);
}

/* A KV cache too small for the load: requests are preempted and still
 * finish; recompute computes more tokens, swap copies over C2C. */
static void test_sched_preemption(void **state)
{
    (void)state;
    nvl_serve_workload_t w = make_load(60, 200, 200, 0);
    nvl_serve_policy_t p = policy();
    nvl_serve_outcome_t *out = calloc(w.n, sizeof *out);
    nvl_serve_replica_stats_t st;
    fake_t f;
    uint64_t expect = 0;
    for (size_t i = 0; i < w.n; i++)
        expect += w.reqs[i].input_tokens + w.reqs[i].output_tokens - 1;
    serve_all(&w, &p, 200, &f, out, &st, NULL);
    assert_true(st.preemptions > 0);
    assert_true(f.tokens > expect);
    assert_true(st.peak_blocks <= 200);
    p.preempt = NVL_PREEMPT_SWAP;
    serve_all(&w, &p, 200, &f, out, &st, NULL);
    assert_true(st.preemptions > 0);
    assert_int_equal(f.tokens, expect); /* nothing recomputed */
    assert_true(f.d2h > 0 && f.h2d == f.d2h);
    free(out);
    nvl_serve_workload_free(&w);
}

/* TensorRT-LLM's no-evict admission on the same squeezed cache: nothing
 * is preempted, every token is computed once, and no more requests run
 * at once than the cache holds to completion; whole prompts: every
 * prompt in one step, so a step's prefill tokens are whole prompts. */
static void test_sched_trtllm(void **state)
{
    (void)state;
    nvl_serve_workload_t w = make_load(60, 200, 200, 0);
    nvl_serve_policy_t p = policy();
    p.sched = trtllm();
    p.whole_prompts = true;
    nvl_serve_outcome_t *out = calloc(w.n, sizeof *out);
    nvl_serve_replica_stats_t st;
    fake_t f;
    uint64_t expect = 0, prompts = 0;
    for (size_t i = 0; i < w.n; i++) {
        expect += w.reqs[i].input_tokens + w.reqs[i].output_tokens - 1;
        prompts += w.reqs[i].input_tokens;
    }
    serve_all(&w, &p, 200, &f, out, &st, NULL);
    assert_int_equal(st.preemptions, 0);
    assert_int_equal(f.tokens, expect);
    assert_int_equal(f.prefill, prompts);
    /* a request reserves ceil((<=206 + <=204) / 16) <= 26 blocks: at least
     * 7 fit in 200 blocks, and at most 200 / ceil(400 / 16) = 8 */
    assert_true(f.max_seqs >= 7 && f.max_seqs <= 8);
    /* a prompt longer than the step's budget can never run whole */
    nvl_serve_capacity_t cap = {.kv_blocks = 200, .kv_block_bytes = 1e6,
                                .max_context = 1 << 20};
    p.max_tokens_per_step = 100;
    reports.count = 0;
    assert_int_equal(nvl_serve_check(&w, &p, &cap), NVL_ERR_INVALID);
    assert_int_equal(reports.count, 1);
    assert_non_null(strstr(reports.last, "prompt tokens exceed"));
    free(out);
    nvl_serve_workload_free(&w);
}

/* trtllm-bench's limits for Llama-3.3-70B in nvfp4 (70.55e9 parameters as
 * 0.5 byte, FP8 KV: 80 layers x 8 heads x 128 x 2 bytes a token) on one
 * 179.06 GiB B200, kv_fraction 0.90, by hand:
 *   engine 32.853 GiB, cache (179.06 - 32.853) 0.9 = 131.586 GiB,
 *   a token 1.52588e-4 GiB. */
static void test_trtllm_bench_limits(void **state)
{
    (void)state;
    nvl_serve_trtllm_bench_in_t in = {
        .checkpoint_params = 70.55e9, .bytes_per_param = 0.5,
        .kv_bytes_per_elem = 1, .layers = 80, .kv_heads = 8,
        .kv_head_elems = 2 * 128, .tp = 1, .gpu_mem_gib = 179.06,
        .kv_fraction = 0.90, .mean_isl = 1000, .mean_osl = 1000,
        .max_isl = 1000};
    uint32_t bs, tok;
    /* 431.2 requests: 128 ceil(431.2 / 128) = 512; 862 tokens -> 2048 */
    assert_int_equal(nvl_serve_trtllm_bench_limits(&in, &bs, &tok), NVL_OK);
    assert_int_equal(bs, 512);
    assert_int_equal(tok, 2048);
    /* 2048/128: 396.3 requests -> 512; 6737 tokens -> 512 x 14 = 7168 */
    in.mean_isl = in.max_isl = 2048;
    in.mean_osl = 128;
    assert_int_equal(nvl_serve_trtllm_bench_limits(&in, &bs, &tok), NVL_OK);
    assert_int_equal(bs, 512);
    assert_int_equal(tok, 7168);
    /* 20000/2000: 39.2 requests -> 64; 431 tokens -> 2048, but whole
     * prompts need 20000 + 64; chunked they do not */
    in.mean_isl = in.max_isl = 20000;
    in.mean_osl = 2000;
    assert_int_equal(nvl_serve_trtllm_bench_limits(&in, &bs, &tok), NVL_OK);
    assert_int_equal(bs, 64);
    assert_int_equal(tok, 20064);
    in.chunked = true;
    assert_int_equal(nvl_serve_trtllm_bench_limits(&in, &bs, &tok), NVL_OK);
    assert_int_equal(tok, 2048);
    /* 8 layers: 3962.6 requests -> 256 x 16 = 4096; 2048/128 caps the
     * tokens at 32768 */
    in.layers = 8;
    in.mean_isl = in.max_isl = 1000;
    in.mean_osl = 1000;
    assert_int_equal(nvl_serve_trtllm_bench_limits(&in, &bs, &tok), NVL_OK);
    assert_int_equal(bs, 4096);
    assert_int_equal(tok, 8192); /* 7925 -> 512 x 16 */
    in.mean_isl = in.max_isl = 2048;
    in.mean_osl = 128;
    assert_int_equal(nvl_serve_trtllm_bench_limits(&in, &bs, &tok), NVL_OK);
    assert_int_equal(tok, 32768);
    /* a model larger than the GPUs fails */
    in.checkpoint_params = 500e9;
    reports.count = 0;
    assert_int_equal(nvl_serve_trtllm_bench_limits(&in, &bs, &tok),
                     NVL_ERR_NOMEM);
    assert_int_equal(reports.count, 1);
    /* an nvfp4 checkpoint's element count: 10 embedding + 90 linear as
     * 90 (1/2 + 1/16) */
    assert_true(fabs(nvl_serve_checkpoint_params(100, 10, 0.5) - 60.625) <
                1e-9);
    assert_true(fabs(nvl_serve_checkpoint_params(100, 10, 1.0) - 100) <
                1e-9);
}

/* Requests sharing a prefix: the later ones skip its full blocks. */
static void test_sched_prefix(void **state)
{
    (void)state;
    nvl_serve_workload_t w = make_load(5, 300, 4, 100000000000LL);
    for (size_t i = 0; i < w.n; i++) {
        w.reqs[i].prefix = 0;
        w.reqs[i].prefix_tokens = 200;
    }
    w.n_prefixes = 0;
    nvl_serve_policy_t p = policy();
    nvl_serve_outcome_t out[5];
    nvl_serve_replica_stats_t st;
    fake_t f;
    serve_all(&w, &p, 1000, &f, out, &st, NULL);
    assert_int_equal(out[0].cached_tokens, 0);
    for (size_t i = 1; i < w.n; i++)
        assert_int_equal(out[i].cached_tokens, 192); /* 12 full blocks */
    assert_int_equal(st.prefix_hits, 4);
    p.prefix_caching = false;
    serve_all(&w, &p, 1000, &f, out, &st, NULL);
    assert_int_equal(st.prefix_hits, 0);
    nvl_serve_workload_free(&w);
}

/* A request that can never fit is refused before serving, by id and
 * line. */
static void test_sched_check(void **state)
{
    (void)state;
    nvl_serve_workload_t w = make_load(3, 100, 10, 0);
    w.reqs[2].line = 9;
    w.reqs[2].input_tokens = 5000;
    nvl_serve_policy_t p = policy();
    nvl_serve_capacity_t cap = {.kv_blocks = 100, .kv_block_bytes = 1,
                                .max_context = 1 << 20};
    reports.count = 0;
    assert_int_not_equal(nvl_serve_check(&w, &p, &cap), NVL_OK);
    assert_int_equal(reports.count, 1);
    assert_non_null(strstr(reports.last, "request 2 (trace line 9)"));
    cap.kv_blocks = 10000;
    cap.max_context = 4000;
    assert_int_not_equal(nvl_serve_check(&w, &p, &cap), NVL_OK);
    assert_non_null(strstr(reports.last, "more than the model's context"));
    nvl_serve_workload_free(&w);
}

/* ---- the summary --------------------------------------------------------------- */

static void test_summary(void **state)
{
    (void)state;
    nvl_serve_workload_t w = make_load(5, 10, 3, 0);
    nvl_serve_outcome_t out[5];
    for (size_t i = 0; i < 5; i++) {
        w.reqs[i].output_tokens = 3;
        /* TTFT 10, 20, 30, 40, 50 ms; TPOT (i + 1) ms */
        out[i] = (nvl_serve_outcome_t){
            .arrival_ps = 0, .scheduled_ps = 0,
            .first_token_ps = (int64_t)(i + 1) * 10000000000LL,
            .done = true};
        out[i].done_ps = out[i].first_token_ps +
                         2 * (int64_t)(i + 1) * 1000000000LL;
    }
    nvl_serve_summary_t s;
    nvl_serve_summarize(&w, out, 2, 35, 0, 2.0, &s);
    assert_double_equal(s.ttft_ms.mean, 30, 1e-9);
    assert_double_equal(s.ttft_ms.p50, 30, 1e-9);
    assert_double_equal(s.ttft_ms.p90, 46, 1e-9); /* numpy's linear */
    assert_double_equal(s.tpot_ms.max, 5, 1e-9);
    assert_int_equal(s.good_requests, 3);
    double span = 0.060; /* the last done: 50 ms + 10 ms */
    assert_double_equal(s.makespan_s, span, 1e-12);
    assert_double_equal(s.output_tok_per_s, 15 / span, 1e-6);
    assert_double_equal(s.output_tok_per_s_per_gpu, 15 / span / 2, 1e-6);
    assert_double_equal(s.cost_per_m_output,
                        2.0 * 2 * span / 3600 / (15 / 1e6), 1e-9);
    nvl_serve_workload_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_trace_good, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(test_trace_bad, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(test_generator, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(test_frontend, capture_reports,
                                        release_reports),
        cmocka_unit_test(test_sched_conservation),
        cmocka_unit_test(test_sched_one_request),
        cmocka_unit_test(test_sched_in_flight),
        cmocka_unit_test(test_sched_preemption),
        cmocka_unit_test(test_sched_prefix),
        cmocka_unit_test_setup_teardown(test_sched_trtllm, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(test_trtllm_bench_limits,
                                        capture_reports, release_reports),
        cmocka_unit_test_setup_teardown(test_sched_check, capture_reports,
                                        release_reports),
        cmocka_unit_test(test_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
