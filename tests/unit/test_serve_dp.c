/* Attention-DP serving (nvl_serve_run_dp): TensorRT-LLM's hand-out of the
 * requests to the ranks, worked by hand, and the ranks' schedulers'
 * conservation with a step time given by a formula. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/family.h"
#include "nvlemu/serve.h"

#define RANKS 3

typedef struct {
    uint64_t steps, tokens;
    uint32_t first_rank[16]; /* the rank each request first ran on */
    uint32_t max_batch;
} fake_t;

/* Every rank's step at once: 1 ms + 10 us a token of the busiest rank. */
static nvl_status_t fake_dp_step(void *ctx, const nvl_serve_batch_t *b,
                                 int ranks, int64_t *dur_ps_out)
{
    fake_t *f = ctx;
    uint64_t most = 0;
    assert_int_equal(ranks, RANKS);
    for (int r = 0; r < ranks; r++) {
        assert_true((uint32_t)b[r].n <= f->max_batch);
        f->tokens += b[r].tokens;
        most = b[r].tokens > most ? b[r].tokens : most;
        for (int i = 0; i < b[r].n; i++)
            if (b[r].req[i] < 16 && b[r].past[i] == 0)
                f->first_rank[b[r].req[i]] = (uint32_t)r;
    }
    f->steps++;
    *dur_ps_out = 1000000000LL + 10000000LL * (int64_t)most;
    return NVL_OK;
}

/* TensorRT-LLM's scheduler: its row, found by name. */
static nvl_serve_sched_t trtllm(void)
{
    int v = NVL_SCHED_VLLM;
    assert_int_equal(nvl_family_parse(&nvl_serve_sched_family, "trtllm", &v),
                     NVL_OK);
    return v;
}

static nvl_serve_policy_t dp_policy(uint32_t max_batch)
{
    return (nvl_serve_policy_t){.sched = trtllm(),
                                .max_batch = max_batch,
                                .max_tokens_per_step = 4096, .chunk = 4096,
                                .whole_prompts = true, .block_tokens = 32,
                                .prefix_caching = true};
}

static void run_dp(nvl_serve_workload_t *w, const nvl_serve_policy_t *p,
                   uint64_t blocks, fake_t *f, nvl_serve_outcome_t *out,
                   nvl_serve_replica_stats_t *st)
{
    nvl_serve_capacity_t cap = {.kv_blocks = blocks, .kv_block_bytes = 1e6,
                                .max_context = 1 << 20};
    uint32_t *which = malloc(w->n * sizeof *which);
    for (size_t i = 0; i < w->n; i++)
        which[i] = (uint32_t)i;
    memset(f, 0, sizeof *f);
    f->max_batch = p->max_batch;
    assert_int_equal(nvl_serve_run_dp(w, which, w->n, 0, p, &cap, RANKS,
                                      fake_dp_step, f, out, st, NULL, NULL),
                     NVL_OK);
    for (size_t i = 0; i < w->n; i++)
        assert_true(out[i].done);
    free(which);
}

/* Seven requests at time 0 on 3 ranks of max batch 2: six are taken
 * (3 x 2 active at most), expected = ceil(6 / 3) = 2 a rank; longest
 * prompt first to the rank of the fewest prompt tokens (ties: fewer
 * requests, then the lower rank):
 *   400 (4) -> 0, 300 (1) -> 1, 250 (5) -> 2, 200 (2) -> 2 (250 < 300,
 *   400), 100 (0) -> 1 (300 < 400; rank 2 is full), 50 (3) -> 0.
 * The seventh (150) waits for a slot and goes to rank 0 (all idle). */
static void test_dp_assignment(void **state)
{
    (void)state;
    static const uint32_t isl[7] = {100, 300, 200, 50, 400, 250, 150};
    static const uint32_t rank_of[7] = {1, 1, 2, 0, 0, 2, 0};
    nvl_serve_workload_t w = {.n = 7};
    w.reqs = calloc(w.n, sizeof *w.reqs);
    for (uint32_t i = 0; i < 7; i++)
        w.reqs[i] = (nvl_serve_req_t){.id = i, .input_tokens = isl[i],
                                      .output_tokens = 3, .prefix = -1};
    nvl_serve_policy_t p = dp_policy(2);
    nvl_serve_outcome_t out[7];
    nvl_serve_replica_stats_t st;
    fake_t f;
    run_dp(&w, &p, 1000, &f, out, &st);
    for (int i = 0; i < 7; i++)
        assert_int_equal(f.first_rank[i], rank_of[i]);
    /* three steps for the six (a prefill, two decodes), three more */
    assert_int_equal(f.steps, 6);
    assert_int_equal(st.steps, 6);
    assert_true(out[6].scheduled_ps >= out[4].done_ps);
    assert_int_equal(st.kv_blocks, RANKS * 1000);
    free(w.reqs);
}

/* Many requests arriving over time, a cache that holds few: every token
 * computed once (no-evict: nothing preempted), each rank within its own
 * batch limit and blocks, the steps counted once. */
static void test_dp_conservation(void **state)
{
    (void)state;
    nvl_serve_workload_t w = {.n = 120};
    w.reqs = calloc(w.n, sizeof *w.reqs);
    uint64_t expect = 0;
    for (uint32_t i = 0; i < w.n; i++) {
        w.reqs[i] = (nvl_serve_req_t){
            .id = i, .arrival_ps = (int64_t)i * 3000000000LL,
            .input_tokens = 100 + 37 * (i % 9),
            .output_tokens = 20 + 7 * (i % 5), .prefix = -1};
        expect += w.reqs[i].input_tokens + w.reqs[i].output_tokens - 1;
    }
    nvl_serve_policy_t p = dp_policy(8);
    nvl_serve_outcome_t *out = calloc(w.n, sizeof *out);
    nvl_serve_replica_stats_t st;
    fake_t f;
    run_dp(&w, &p, 60, &f, out, &st);
    assert_int_equal(f.tokens, expect);
    assert_int_equal(st.tokens, expect);
    assert_int_equal(st.preemptions, 0);
    assert_int_equal(st.steps, f.steps);
    assert_true(st.peak_blocks <= RANKS * 60);
    for (size_t i = 0; i < w.n; i++)
        assert_true(out[i].arrival_ps <= out[i].scheduled_ps &&
                    out[i].scheduled_ps < out[i].first_token_ps &&
                    out[i].first_token_ps <= out[i].done_ps);
    free(out);
    free(w.reqs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dp_assignment),
        cmocka_unit_test(test_dp_conservation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
