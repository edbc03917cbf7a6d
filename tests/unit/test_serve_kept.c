/* vLLM's recompute preemption with prefix caching: a preempted request's
 * full blocks stay cached, and it resumes from those still there,
 * worked by hand on a 6-block cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/serve.h"

typedef struct {
    uint64_t steps, tokens;
} fake_t;

/* 1 ms + 10 us a token. */
static nvl_status_t fake_step(void *ctx, const nvl_serve_batch_t *b,
                              nvl_serve_step_time_t *time_out)
{
    fake_t *f = ctx;
    f->steps++;
    f->tokens += b->tokens;
    time_out->dur_ps = 1000000000LL + 10000000LL * (int64_t)b->tokens;
    time_out->free_ps = time_out->dur_ps;
    return NVL_OK;
}

static void run(bool caching, fake_t *f, nvl_serve_replica_stats_t *st)
{
    /* A: 40 + 12, B: 40 + 10, both at time 0; blocks of 16 */
    nvl_serve_req_t reqs[2] = {
        {.id = 0, .input_tokens = 40, .output_tokens = 12, .prefix = -1},
        {.id = 1, .input_tokens = 40, .output_tokens = 10, .prefix = -1}};
    nvl_serve_workload_t w = {.n = 2, .reqs = reqs};
    nvl_serve_policy_t p = {.max_batch = 8, .max_tokens_per_step = 64,
                            .chunk = 64, .block_tokens = 16,
                            .preempt = NVL_PREEMPT_RECOMPUTE,
                            .prefix_caching = caching};
    nvl_serve_capacity_t cap = {.kv_blocks = 6, .kv_block_bytes = 1e6,
                                .host_bytes = 0, .max_context = 1 << 20};
    uint32_t which[2] = {0, 1};
    nvl_serve_outcome_t out[2];
    memset(f, 0, sizeof *f);
    assert_int_equal(nvl_serve_check(&w, &p, &cap), NVL_OK);
    assert_int_equal(nvl_serve_run(&w, which, 2, 0, &p, &cap, false, 0,
                                   fake_step, f, out, st, NULL, NULL),
                     NVL_OK);
    assert_true(out[0].done && out[1].done);
    assert_int_equal(st->preemptions, 1);
}

/* Step 1: A's prompt (3 blocks) and B's first 24 tokens (2); step 2: B's
 * last 16 (its 3rd block, the cache full).  Each then decodes; in step 10
 * A's 49th position needs a 4th block: B (47 computed: 2 full blocks) is
 * preempted.  B waits for a block until A finishes (step 12), then
 * resumes from its 2 cached blocks (32 positions): of its 47 computed
 * positions 15 are computed again, where without the cache all 47 are. */
static void test_kept_blocks(void **state)
{
    (void)state;
    fake_t f;
    nvl_serve_replica_stats_t st;
    uint64_t once = (40 + 12 - 1) + (40 + 10 - 1);
    run(true, &f, &st);
    assert_int_equal(st.prefix_hits, 1);
    assert_int_equal(st.prefix_hit_tokens, 32);
    assert_int_equal(f.tokens, once + 15);
    run(false, &f, &st);
    assert_int_equal(st.prefix_hits, 0);
    assert_int_equal(f.tokens, once + 47);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
