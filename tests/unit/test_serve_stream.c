/* The output path (--stream-us): each sampled token waits its turn at
 * the API server after the one before it, worked by hand for three
 * requests of two outputs each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/serve.h"

#define US 1000000LL /* picoseconds */

/* 1 ms + 10 us a token. */
static nvl_status_t fake_step(void *ctx, const nvl_serve_batch_t *b,
                              nvl_serve_step_time_t *time_out)
{
    (void)ctx;
    time_out->dur_ps = 1000 * US + 10 * US * (int64_t)b->tokens;
    time_out->free_ps = time_out->dur_ps;
    return NVL_OK;
}

/* Three requests of 8 prompt tokens and 2 outputs at time 0: step 1
 * prefills all three (24 tokens, 1,240 us), step 2 decodes them (3
 * tokens, 1,030 us, ending at 2,270 us). */
static void run(int64_t stream_us, nvl_serve_outcome_t out[3],
                nvl_serve_replica_stats_t *st)
{
    nvl_serve_req_t reqs[3];
    for (uint32_t i = 0; i < 3; i++)
        reqs[i] = (nvl_serve_req_t){.id = i, .input_tokens = 8,
                                    .output_tokens = 2, .prefix = -1};
    nvl_serve_workload_t w = {.n = 3, .reqs = reqs};
    nvl_serve_policy_t p = {.max_batch = 8, .max_tokens_per_step = 64,
                            .chunk = 64, .block_tokens = 16,
                            .preempt = NVL_PREEMPT_RECOMPUTE,
                            .stream_token_ps = stream_us * US};
    nvl_serve_capacity_t cap = {.kv_blocks = 100, .kv_block_bytes = 1e6,
                                .host_bytes = 0, .max_context = 1 << 20};
    uint32_t which[3] = {0, 1, 2};
    assert_int_equal(nvl_serve_run(&w, which, 3, 0, &p, &cap, false, 0,
                                   fake_step, NULL, out, st, NULL, NULL),
                     NVL_OK);
    assert_int_equal(st->steps, 2);
    assert_int_equal(st->end_ps, 2270 * US); /* the engine never waits */
}

/* Request i's first token at first_us + i x gap_us, its last at
 * done_us + i x gap_us. */
static void expect(int64_t stream_us, int64_t first_us, int64_t done_us,
                   int64_t gap_us)
{
    nvl_serve_outcome_t out[3];
    nvl_serve_replica_stats_t st;
    run(stream_us, out, &st);
    for (int64_t i = 0; i < 3; i++) {
        assert_int_equal(out[i].first_token_ps, (first_us + gap_us * i) * US);
        assert_int_equal(out[i].done_ps, (done_us + gap_us * i) * US);
    }
}

/* No output path: every token at its step's end. */
static void test_none(void **state)
{
    (void)state;
    expect(0, 1240, 2270, 0);
}

/* 100 us a token: the first step's three tokens at 1,340, 1,440 and
 * 1,540 us; the path is idle again before step 2 ends, whose three
 * follow it at 2,370, 2,470 and 2,570 us. */
static void test_keeps_up(void **state)
{
    (void)state;
    expect(100, 1340, 2370, 100);
}

/* 500 us a token: the path is the bound; the first tokens at 1,740,
 * 2,240 and 2,740 us, and step 2's (ready at 2,270 us) wait for them:
 * 3,240, 3,740 and 4,240 us, six tokens one after another from step
 * 1's end. */
static void test_bound(void **state)
{
    (void)state;
    expect(500, 1740, 3240, 500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none),
        cmocka_unit_test(test_keeps_up),
        cmocka_unit_test(test_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
