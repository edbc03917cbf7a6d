/* A replica under data-parallel attention, TensorRT-LLM's DEP layout
 * (enable_attention_dp with expert parallelism; docs/serve.md, "Attention
 * data-parallel (DEP)"): every rank of the replica schedules its own
 * sequences (nvl_serve_run_dp) and the ranks run each step together,
 * this rank its own batch through the engine, whose mixture-of-experts
 * layers join all of them; the step ends at the slowest rank's end.
 *
 * What a step of rank r runs, from TensorRT-LLM's PyTorch executor:
 *   - a rank with nothing scheduled runs one dummy generation request
 *     (PyExecutor._pad_attention_dp_dummy_request,
 *     tensorrt_llm/_torch/pyexecutor/py_executor.py), so that it takes
 *     part in the experts' collectives: one one-token row without a past;
 *   - a CUDA graph replays only when every rank's step is generation-only
 *     with one batch size (CUDAGraphRunner.maybe_get_cuda_graph's
 *     tp_allgather of [can_run_cuda_graph, batch_size],
 *     tensorrt_llm/_torch/pyexecutor/cuda_graph_runner.py): a
 *     generation-only step pads every rank to the graph of the largest
 *     rank's batch; a step with a context anywhere runs as scheduled;
 *   - rank r's rows are rows sum_{q<r} rows_q.. of the replica's step, so
 *     each rank draws its own seeded expert routing (every rank's rows
 *     handed to the engine: timing mode routes them all on each rank). */
#include <stdlib.h>

#include "serving_impl.h"

typedef struct {
    nvl_serving_step_t *sc;
    int rank;                /* in the replica */
} dp_ctx_t;

/* The rows rank r runs (the header's rule); gen_rows: the graph's rows
 * of a generation-only step, 0 otherwise. */
static uint32_t rank_rows(const nvl_serve_batch_t *b, uint32_t gen_rows)
{
    uint64_t rows = b->n > 0 ? b->tokens : 1;
    if (gen_rows > rows)
        rows = gen_rows;
    return (uint32_t)rows;
}

static nvl_status_t dp_step(void *ctx, const nvl_serve_batch_t *b,
                            int ranks, int64_t *dur_ps_out)
{
    dp_ctx_t *c = ctx;
    uint32_t most = 1;
    bool gen_only = true;
    for (int r = 0; r < ranks; r++) {
        gen_only = gen_only && b[r].prefill_tokens == 0;
        most = (uint32_t)b[r].n > most ? (uint32_t)b[r].n : most;
    }
    uint32_t gen_rows =
        gen_only ? c->sc->sched->graph_rows(most, most, 0, c->sc->graph_cap)
                 : 0;
    uint64_t *rows = calloc((size_t)ranks + 1, sizeof *rows);
    if (rows == NULL) {
        nvl_report("out of memory for a step of %d ranks", ranks);
        nvl_runtime_abort(1);
    }
    for (int r = 0; r < ranks; r++)
        rows[r] = rank_rows(&b[r], gen_rows);
    nvl_engine_serve_rows(c->sc->e, ranks, rows);
    free(rows);
    nvl_serve_step_time_t t = {0, 0};
    nvl_status_t st = nvl_serving_run_step(
        c->sc, &b[c->rank], rank_rows(&b[c->rank], gen_rows), &t);
    /* every rank's executor loops on its own requests; the experts'
     * collectives hold the step to the slowest host */
    uint64_t most_requests = 0;
    for (int r = 0; r < ranks; r++)
        most_requests = (uint64_t)b[r].n > most_requests ? (uint64_t)b[r].n
                                                         : most_requests;
    if (st == NVL_OK)
        nvl_serving_host_loop(c->sc, most_requests, gen_rows == 0, &t);
    *dur_ps_out = t.dur_ps;
    return st;
}

nvl_status_t nvl_serving_dp_check(const nvl_serving_job_t *j)
{
    if (!nvl_engine_shard(j->e)->attn_dp)
        return NVL_OK;
    nvl_status_t st = NVL_OK;
    nvl_runtime_capture_begin();
    if (j->L.n_pools != 1) {
        nvl_report("serve --attn-parallel dp: disaggregated pools "
                   "(--prefill-gpus, --decode-gpus) run attention "
                   "tensor-parallel; drop one or the other");
        st = NVL_ERR_INVALID;
    } else if (!nvl_serve_scheduler(j->c->policy.sched)
                    ->admit_to_completion) {
        nvl_report("serve --attn-parallel dp: the ranks' requests are "
                   "handed out as TensorRT-LLM's attention-DP executor "
                   "does; use --scheduler trtllm");
        st = NVL_ERR_INVALID;
    }
    return nvl_runtime_capture_end_on(MPI_COMM_WORLD, st);
}

nvl_status_t nvl_serving_dp_run(nvl_serving_job_t *j,
                                const nvl_serve_workload_t *pw,
                                const uint32_t *which, size_t n,
                                nvl_serve_outcome_t *out)
{
    dp_ctx_t c = {.sc = &j->sc, .rank = nvl_comm_rank(j->group)};
    return nvl_serve_run_dp(pw, which, n, (uint32_t)j->L.replica,
                            &j->c->policy, &j->cap,
                            nvl_comm_size(j->group), dp_step, &c, out,
                            &j->stats, j->c->keep_steps ? &j->steps : NULL,
                            &j->n_steps);
}
