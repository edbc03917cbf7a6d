/* nvlemu serve's JSONL request traces: any text either loads or is
 * refused with a report; a loaded trace keeps the contract of
 * nvl_serve_trace_load (arrivals never decreasing, lengths >= 1, a prefix
 * within its prompt), and the scheduler serves it to the end within its
 * invariants (it checks them itself and fails otherwise). */
#include "fuzz.h"
#include "nvlemu/serve.h"

static nvl_status_t step(void *ctx, const nvl_serve_batch_t *b,
                         nvl_serve_step_time_t *time_out)
{
    (void)ctx;
    time_out->dur_ps = 1000000 + 1000 * (int64_t)b->tokens;
    time_out->free_ps = time_out->dur_ps;
    return NVL_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char dir[4096], path[4200];
    fuzz_tmpdir(dir, sizeof dir);
    fuzz_write(dir, "trace.jsonl", data, size);
    snprintf(path, sizeof path, "%s/trace.jsonl", dir);
    nvl_serve_workload_t w;
    if (nvl_serve_trace_load(path, &w) == NVL_OK) {
        FUZZ_REQUIRE(w.n >= 1, "a loaded trace has a request");
        uint64_t tokens = 0;
        for (size_t i = 0; i < w.n; i++) {
            const nvl_serve_req_t *r = &w.reqs[i];
            FUZZ_REQUIRE(r->input_tokens >= 1 && r->output_tokens >= 1,
                         "lengths are at least 1");
            FUZZ_REQUIRE(i == 0 || r->arrival_ps >= w.reqs[i - 1].arrival_ps,
                         "arrivals never decrease");
            FUZZ_REQUIRE(r->prefix < (int32_t)w.n_prefixes,
                         "a prefix id has a name");
            FUZZ_REQUIRE(r->prefix < 0 || r->prefix_tokens <= r->input_tokens,
                         "a prefix lies within its prompt");
            tokens += (uint64_t)r->input_tokens + r->output_tokens;
        }
        /* serve small traces on a small replica: every request finishes */
        if (tokens <= 200000 && w.n <= 2000) {
            nvl_serve_policy_t p = {.max_batch = 8, .max_tokens_per_step = 64,
                                    .chunk = 32, .block_tokens = 4,
                                    .preempt = NVL_PREEMPT_RECOMPUTE,
                                    .prefix_caching = true};
            nvl_serve_capacity_t cap = {.kv_blocks = 1 << 20,
                                        .kv_block_bytes = 64,
                                        .host_bytes = 4096,
                                        .max_context = 1 << 21};
            uint32_t *which = malloc(w.n * sizeof *which);
            nvl_serve_outcome_t *out = calloc(w.n, sizeof *out);
            for (size_t i = 0; i < w.n; i++)
                which[i] = (uint32_t)i;
            nvl_serve_replica_stats_t st;
            if (nvl_serve_check(&w, &p, &cap) == NVL_OK) {
                FUZZ_REQUIRE(nvl_serve_run(&w, which, w.n, 0, &p, &cap, false,
                                           0, step, NULL, out, &st, NULL,
                                           NULL) == NVL_OK,
                             "the scheduler serves a checked trace");
                for (size_t i = 0; i < w.n; i++)
                    FUZZ_REQUIRE(out[i].done &&
                                     out[i].first_token_ps <= out[i].done_ps,
                                 "every request finishes");
            }
            free(which);
            free(out);
        }
        nvl_serve_workload_free(&w);
    }
    static const char *const names[] = {"trace.jsonl"};
    fuzz_rmdir(dir, names, 1);
    return 0;
}
