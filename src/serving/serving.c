/* nvl_serving_run: the phases of a serving job (include/nvlemu/
 * serving.h).  Phase 1 runs the aggregated replicas, or the prefill pool
 * on a copy of the workload in which every request makes one token;
 * disaggregated, the prefill outcomes then reach every rank, the KV's
 * trips give each request's arrival at its decode replica, and phase 2
 * runs the decode pool on prefilled requests.  A failed replica reports
 * once and every rank stops after the phase.  Rank 0 gathers the
 * results. */
#include <stdlib.h>
#include <string.h>

#include "serving_impl.h"

/* A copy of w in which every request makes one token (a prefill pool's
 * work). */
static nvl_status_t prefill_only(const nvl_serve_workload_t *w,
                                 nvl_serve_workload_t *p_out)
{
    *p_out = *w;
    p_out->prefix_names = NULL;
    p_out->n_prefixes = 0;
    p_out->reqs = malloc((w->n + 1) * sizeof *p_out->reqs);
    if (p_out->reqs == NULL) {
        nvl_report("out of memory for %zu requests", w->n);
        return NVL_ERR_NOMEM;
    }
    memcpy(p_out->reqs, w->reqs, w->n * sizeof *w->reqs);
    for (size_t i = 0; i < w->n; i++)
        p_out->reqs[i].output_tokens = 1;
    return NVL_OK;
}

static void *alloc_or_abort(size_t n, size_t size)
{
    void *p = calloc(n + 1, size);
    if (p == NULL) {
        nvl_report("out of memory for %zu requests", n);
        nvl_runtime_abort(1);
    }
    return p;
}

/* The requests (indices of w) replica r of a pool of R serves, in
 * arrival order: round-robin by request number. */
static uint32_t *assign(const nvl_serve_workload_t *w, int r, int R,
                        size_t *n_out)
{
    uint32_t *which = alloc_or_abort(w->n / (size_t)R + 1, sizeof *which);
    size_t n = 0;
    for (size_t i = (size_t)r; i < w->n; i += (size_t)R)
        which[n++] = (uint32_t)i;
    *n_out = n;
    return which;
}

/* Phase 1 on this rank's replica: the aggregated replicas' or the
 * prefill pool's requests (a closed loop's share of the concurrency). */
static nvl_status_t serve_first(nvl_serving_job_t *j,
                                const nvl_serve_workload_t *my_w,
                                nvl_serve_outcome_t *out, bool *mine)
{
    const nvl_serve_workload_t *w = my_w;
    const nvl_serving_pool_t *pool = &j->L.pools[j->L.pool];
    uint32_t R = (uint32_t)pool->system_replicas;
    size_t nw = 0;
    uint32_t *which = assign(my_w, j->L.replica_in_pool, (int)R, &nw);
    nvl_serve_workload_t local = *my_w;
    if (w->concurrency > 0) /* the closed loop's share */
        local.concurrency =
            w->concurrency / R +
            ((uint32_t)j->L.replica_in_pool < w->concurrency % R);
    if (nw > 0 && local.concurrency == 0 && w->concurrency > 0)
        local.concurrency = 1;
    nvl_status_t st =
        nvl_engine_shard(j->e)->attn_dp
            ? nvl_serving_dp_run(j, &local, which, nw, out)
            : nvl_serving_replica_run(j, &local, which, nw, false, out);
    for (size_t k = 0; k < nw; k++)
        mine[which[k]] = true;
    free(which);
    return st;
}

/* Phase 2 on a decode replica: its requests with more than one output,
 * arriving when their KV does (ready), prefilled. */
static nvl_status_t serve_decode(nvl_serving_job_t *j,
                                 const nvl_serve_workload_t *w,
                                 const int64_t *ready,
                                 nvl_serve_outcome_t *out, bool *mine)
{
    const nvl_serving_pool_t *pool = &j->L.pools[j->L.pool];
    nvl_serve_workload_t dw = *w;
    dw.reqs = alloc_or_abort(w->n, sizeof *dw.reqs);
    uint32_t *which = alloc_or_abort(w->n, sizeof *which);
    size_t nw = 0;
    memcpy(dw.reqs, w->reqs, w->n * sizeof *w->reqs);
    for (size_t i = 0; i < w->n; i++) {
        dw.reqs[i].arrival_ps = ready[i];
        if (i % (size_t)pool->replicas == (size_t)j->L.replica_in_pool &&
            w->reqs[i].output_tokens > 1)
            which[nw++] = (uint32_t)i;
    }
    nvl_serving_sort_by_time(which, nw, ready);
    nvl_status_t st = nvl_serving_replica_run(j, &dw, which, nw, true, out);
    for (size_t k = 0; k < nw; k++)
        mine[which[k]] = true;
    free(which);
    free(dw.reqs);
    return st;
}

/* Disaggregated: the prefill outcomes to every rank, the KV's trips,
 * phase 2; agreed over the job. */
static nvl_status_t serve_disagg(nvl_serving_job_t *j,
                                 const nvl_serve_workload_t *w,
                                 nvl_serve_outcome_t *out, bool *mine,
                                 nvl_serving_result_t *r)
{
    nvl_status_t st = NVL_OK;
    nvl_serving_gather_outcomes(out, mine, w->n, -1);
    int64_t *ready = alloc_or_abort(w->n, sizeof *ready);
    nvl_serving_kv_arrivals(j, w, out, ready, &r->kv_transfer_ms_mean,
                            &r->kv_transfer_gb);
    memset(mine, 0, w->n * sizeof *mine);
    if (j->L.pool == 1)
        st = serve_decode(j, w, ready, out, mine);
    free(ready);
    nvl_runtime_capture_begin();
    return nvl_runtime_capture_end_on(MPI_COMM_WORLD, st);
}

/* Rank 0, when the system has replicas the job does not emulate: the
 * emulated replicas' requests and outcomes only. */
static void emulated_only(const nvl_serve_workload_t *w,
                          nvl_serving_result_t *r)
{
    const nvl_serving_pool_t *pool = &r->pools[0];
    r->w = *w;
    r->out = r->all_out;
    if (r->n_pools != 1 || pool->system_replicas <= pool->replicas)
        return;
    r->w.reqs = malloc((w->n + 1) * sizeof *r->w.reqs);
    r->out = malloc((w->n + 1) * sizeof *r->out);
    if (r->w.reqs == NULL || r->out == NULL) {
        nvl_report("out of memory for the report");
        nvl_runtime_abort(1);
    }
    r->subset = true;
    r->w.n = 0;
    for (size_t i = 0; i < w->n; i++)
        if (i % (size_t)pool->system_replicas < (size_t)pool->replicas) {
            r->out[r->w.n] = r->all_out[i];
            r->w.reqs[r->w.n++] = w->reqs[i];
        }
}

/* The results to rank 0: outcomes, pools, steps. */
static void collect(nvl_serving_job_t *j, const nvl_serve_workload_t *w,
                    const bool *mine, nvl_serving_result_t *r)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    nvl_serving_gather_outcomes(r->all_out, mine, w->n, 0);
    nvl_serving_gather_pools(j, r);
    for (int p = 0; p < j->L.n_pools; p++)
        r->n_replicas += j->L.pools[p].replicas;
    r->steps = alloc_or_abort((size_t)r->n_replicas, sizeof *r->steps);
    r->n_steps = alloc_or_abort((size_t)r->n_replicas, sizeof *r->n_steps);
    if (j->c->keep_steps)
        nvl_serving_gather_steps(j, r);
    if (rank == 0)
        emulated_only(w, r);
}

/* The phases on this rank's replica, its results to rank 0. */
static nvl_status_t serve_job(nvl_serving_job_t *j,
                              const nvl_serve_workload_t *w,
                              nvl_serving_result_t *r)
{
    bool disagg = j->L.n_pools == 2;
    nvl_serve_workload_t pre_w = {0};
    if (disagg && prefill_only(w, &pre_w) != NVL_OK)
        nvl_runtime_abort(1);
    const nvl_serve_workload_t *my_w = disagg && j->L.pool == 0 ? &pre_w : w;
    double t0 = MPI_Wtime();
    nvl_status_t st = nvl_serving_replica_setup(j, my_w);
    if (st == NVL_OK) /* the same verdict on every rank */
        st = nvl_serving_dp_check(j);
    r->all_out = alloc_or_abort(w->n, sizeof *r->all_out);
    bool *mine = alloc_or_abort(w->n, sizeof *mine);
    if (st == NVL_OK) {
        if (!disagg || j->L.pool == 0)
            st = serve_first(j, my_w, r->all_out, mine);
        /* a failed replica reports once; every rank stops here */
        nvl_runtime_capture_begin();
        st = nvl_runtime_capture_end_on(MPI_COMM_WORLD, st);
    }
    if (st == NVL_OK && disagg)
        st = serve_disagg(j, w, r->all_out, mine, r);
    if (st == NVL_OK) {
        collect(j, w, mine, r);
        r->wall_s = MPI_Wtime() - t0;
    }
    free(mine);
    free(pre_w.reqs);
    return st;
}

nvl_status_t nvl_serving_run(const nvl_serving_config_t *c,
                             const nvl_model_config_t *m,
                             const nvl_topo_t *topo,
                             const nvl_serve_workload_t *w,
                             nvl_serving_result_t *result_out)
{
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    memset(result_out, 0, sizeof *result_out);
    nvl_serving_job_t j = {.c = c, .m = m, .topo = topo};
    nvl_status_t st = nvl_serving_layout_plan(
        &c->layout, w->concurrency > 0, size, rank, &j.L);
    if (st != NVL_OK)
        return st;
    if ((st = nvl_comm_create(MPI_COMM_WORLD, topo, &j.clock, &j.world)) !=
        NVL_OK)
        return st;
    if ((st = nvl_comm_split(j.world, j.L.replica, rank, &j.group)) !=
        NVL_OK) {
        nvl_comm_destroy(j.world);
        return st;
    }
    st = serve_job(&j, w, result_out);
    free(j.steps);
    free(j.sc.past);
    free(j.sc.newt);
    if (j.e != NULL)
        nvl_engine_free(j.e);
    nvl_comm_destroy(j.group);
    nvl_comm_destroy(j.world);
    if (st != NVL_OK)
        nvl_serving_result_free(result_out);
    return st;
}

void nvl_serving_result_free(nvl_serving_result_t *r)
{
    for (int p = 0; p < r->n_pools; p++)
        free(r->pools[p].stats);
    for (int i = 0; r->steps != NULL && i < r->n_replicas; i++)
        free(r->steps[i]);
    free(r->steps);
    free(r->n_steps);
    if (r->subset) {
        free(r->w.reqs);
        free(r->out);
    }
    free(r->all_out);
    memset(r, 0, sizeof *r);
}
