/* One replica: its engine, its KV room and capacity, and the step
 * driver the scheduler calls (a step padded to its CUDA graph's rows run
 * through the engine's serving step). */
#include <stdlib.h>
#include <string.h>

#include "serving_impl.h"

/* Pads the step to `rows` rows, the padding as one-token sequences
 * without a past (their matmul rows are real work, their attention next
 * to none); returns the padded step's sequences. */
static nvl_status_t pad_step(nvl_serving_step_t *c, const nvl_serve_batch_t *b,
                             uint32_t rows, int *n_out)
{
    size_t pad = rows - b->tokens, need = (size_t)b->n + pad;
    if (need > c->pad_cap) {
        uint64_t *p = realloc(c->past, need * sizeof *p);
        uint64_t *t = p ? realloc(c->newt, need * sizeof *t) : NULL;
        if (p != NULL)
            c->past = p;
        if (t == NULL) {
            nvl_report("out of memory padding a step to its CUDA graph");
            return NVL_ERR_NOMEM;
        }
        c->newt = t;
        c->pad_cap = need;
    }
    memcpy(c->past, b->past, (size_t)b->n * sizeof *c->past);
    memcpy(c->newt, b->new_tokens, (size_t)b->n * sizeof *c->newt);
    for (size_t i = (size_t)b->n; i < need; i++) {
        c->past[i] = 0;
        c->newt[i] = 1;
    }
    *n_out = (int)need;
    return NVL_OK;
}

nvl_status_t nvl_serving_run_step(nvl_serving_step_t *c,
                                  const nvl_serve_batch_t *b, uint32_t rows,
                                  nvl_serve_step_time_t *time_out)
{
    nvl_pass_stats_t ps;
    int n = b->n;
    const uint64_t *past = b->past, *newt = b->new_tokens;
    if (rows > b->tokens) {
        nvl_status_t st = pad_step(c, b, rows, &n);
        if (st != NVL_OK)
            return st;
        past = c->past;
        newt = c->newt;
    }
    nvl_status_t st = nvl_engine_serve_step(c->e, n, past, newt,
                                            b->h2d_bytes, b->d2h_bytes,
                                            b->start_ps, &time_out->dur_ps,
                                            &time_out->free_ps, &ps);
    if (st == NVL_OK)
        for (int i = 0; i < NVL_PART_COUNT; i++)
            c->part_ps[i] += ps.part_ps[i];
    c->kernels = ps.kernels;
    return st;
}

void nvl_serving_host_loop(nvl_serving_step_t *c, uint64_t requests,
                           bool eager, nvl_serve_step_time_t *t)
{
    double launches_us = eager ? c->kernels * c->launch_us : 0;
    int64_t host_ps = nvl_ps_from_s(
        (c->host_us_per_step + (double)requests * c->host_us_per_request +
         launches_us) * 1e-6);
    if (c->sched->host_serial) {
        c->part_ps[NVL_PART_LAUNCH] += host_ps;
        t->dur_ps += host_ps;
        t->free_ps += host_ps;
        return;
    }
    if (host_ps > t->dur_ps)
        c->part_ps[NVL_PART_LAUNCH] += host_ps - t->dur_ps;
    t->dur_ps = host_ps > t->dur_ps ? host_ps : t->dur_ps;
    t->free_ps = host_ps > t->free_ps ? host_ps : t->free_ps;
}

/* The scheduler's step (nvl_serve_step_fn): a step a CUDA graph replays
 * runs its graph's rows, as long as the host's loop takes at the least. */
static nvl_status_t engine_step(void *ctx, const nvl_serve_batch_t *b,
                                nvl_serve_step_time_t *time_out)
{
    nvl_serving_step_t *c = ctx;
    uint32_t rows = c->sched->graph_rows((uint32_t)b->n, b->tokens,
                                         b->prefill_tokens, c->graph_cap);
    nvl_status_t st = nvl_serving_run_step(c, b, rows, time_out);
    if (st == NVL_OK)
        nvl_serving_host_loop(c, (uint64_t)b->n, rows == 0, time_out);
    return st;
}

static nvl_status_t make_engine(nvl_serving_job_t *j)
{
    nvl_engine_opts_t o = j->c->engine;
    o.mode = NVL_MODE_TIMING;
    return nvl_engine_create(j->m, &o, j->group, &j->e);
}

/* The KV room of this rank's engine under the scheduler's memory rule,
 * and the replica's capacity in blocks. */
static nvl_status_t kv_capacity(nvl_serving_job_t *j)
{
    const nvl_serve_policy_t *p = &j->c->policy;
    const nvl_serve_scheduler_t *row = nvl_serve_scheduler(p->sched);
    nvl_engine_kv_rule_t rule = {
        .fraction = j->c->mem_fraction,
        .of_free = row->mem_of_free,
        .sampler_logit_bytes = row->sampler_logit_bytes,
        .moe_runner = row->moe_runner_workspace,
        .outside_bytes = row->outside_bytes};
    nvl_status_t st = nvl_engine_serve_memory(
        j->e, p->max_tokens_per_step, p->max_batch, &rule, &j->room);
    if (st != NVL_OK)
        return st;
    double block = (double)p->block_tokens;
    j->cap = (nvl_serve_capacity_t){
        .kv_blocks = (uint64_t)(j->room.positions / block),
        .kv_block_bytes = block * j->room.kv_position_bytes *
                          (1 - j->room.kv_host_share),
        .host_bytes = j->room.host_free_bytes,
        .max_context = nvl_model_max_context(j->m)};
    return NVL_OK;
}

nvl_status_t nvl_serving_replica_setup(nvl_serving_job_t *j,
                                       const nvl_serve_workload_t *pool_w)
{
    nvl_status_t st = make_engine(j);
    j->sc.e = j->e;
    const nvl_serve_policy_t *p = &j->c->policy;
    j->sc.sched = nvl_serve_scheduler(p->sched);
    j->sc.graph_cap = p->max_batch < p->max_tokens_per_step
                          ? p->max_batch
                          : p->max_tokens_per_step;
    j->sc.host_us_per_request = nvl_serve_host_us_per_request(
        j->sc.sched, j->topo->host.torch_op_ps);
    j->sc.host_us_per_step = nvl_serve_host_us_per_step(
        j->sc.sched, j->topo->host.torch_op_ps);
    j->sc.launch_us = j->sc.sched->eager_without_graph
                          ? nvl_serve_eager_launch_us(
                                j->topo->host.torch_op_ps,
                                j->topo->gpu.launch_overhead_ps)
                          : 0;
    nvl_runtime_capture_begin();
    st = nvl_runtime_capture_end_on(MPI_COMM_WORLD, st);
    if (st != NVL_OK)
        return st;
    nvl_runtime_capture_begin();
    st = kv_capacity(j);
    if (st == NVL_OK) {
        if (j->c->policy.preempt == NVL_PREEMPT_SWAP &&
            j->cap.host_bytes <= 0) {
            nvl_report("--preempt swap: topology '%s' has no host memory "
                       "left to swap to (no NVLink-C2C host tier, or "
                       "--kv-host took it all)", j->topo->name);
            st = NVL_ERR_INVALID;
        } else
            st = nvl_serve_check(pool_w, &j->c->policy, &j->cap);

    }
    return nvl_runtime_capture_end_on(MPI_COMM_WORLD, st);
}

nvl_status_t nvl_serving_replica_run(nvl_serving_job_t *j,
                                     const nvl_serve_workload_t *pw,
                                     const uint32_t *which, size_t n,
                                     bool prefilled, nvl_serve_outcome_t *out)
{
    return nvl_serve_run(pw, which, n, (uint32_t)j->L.replica,
                         &j->c->policy, &j->cap, prefilled, 0, engine_step,
                         &j->sc, out, &j->stats,
                         j->c->keep_steps ? &j->steps : NULL, &j->n_steps);
}
