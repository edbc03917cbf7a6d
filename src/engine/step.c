/* The engine's serving step (nvlemu serve, src/serving/): a forward pass
 * of the scheduler's batch (pass.c), its end agreed over the group; with
 * a pipeline, each stage's end (pipe.c): stage 0's frees it for the next
 * batch while the later stages still run this one.  In timing mode a
 * pipeline's step is recorded whole and agreed in one exchange
 * (pipe_agree.c), its stages' ends with it. */
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

void nvl_engine_serve_rows(nvl_engine_t *e, int ranks, const uint64_t *rows)
{
    int n = nvl_comm_size(e->tp), me = nvl_comm_rank(e->tp);
    if (ranks != n || me >= n)
        return;
    uint64_t *first = nvl_engine_moe_alloc((size_t)n, sizeof *first);
    for (int r = 1; r < n; r++)
        first[r] = first[r - 1] + rows[r - 1];
    nvl_engine_ep_rows(e, rows, first);
    free(first);
}

nvl_status_t nvl_engine_serve_step(nvl_engine_t *e, int n,
                                   const uint64_t *past,
                                   const uint64_t *new_tokens,
                                   double h2d_bytes, double d2h_bytes,
                                   int64_t start_ps, int64_t *dur_ps_out,
                                   int64_t *free_ps_out,
                                   nvl_pass_stats_t *pass_out)
{
    nvl_vclock_t *clock = nvl_engine_clock(e);
    nvl_vclock_wait_until(clock, start_ps);
    nvl_kv_cache_t *caches = calloc((size_t)n + 1, sizeof *caches);
    if (caches == NULL) {
        nvl_report("out of memory for a step of %d sequences", n);
        nvl_runtime_abort(1);
    }
    for (int i = 0; i < n; i++)
        caches[i].len = past[i];
    if (e->stages > 1 && e->rec.serve == 0) { /* once, over the job */
        int mine = nvl_engine_pipe_can_record_step(e), all = 0;
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN,
                      nvl_comm_mpi(e->job));
        e->rec.serve = all ? 2 : 1;
    }
    bool whole = e->stages > 1 && e->rec.serve == 2;
    if (whole) {
        nvl_runtime_capture_begin();
        nvl_engine_step_record(e);
    }
    /* its routing's rows: nvl_engine_serve_rows's, else from row 0 */
    e->row0 = e->ep_rows != NULL ? e->ep_rows[nvl_comm_size(e->tp) +
                                              nvl_comm_rank(e->tp)]
                                 : 0;
    e->serve_h2d_bytes = h2d_bytes;
    e->serve_d2h_bytes = d2h_bytes;
    nvl_status_t st = nvl_engine_forward(e, n, caches, NULL, new_tokens,
                                         NULL);
    free(caches);
    int64_t latest = e->settled_end_ps, free_ps = 0;
    if (whole) {
        /* each stage's end: stage 0 takes the next batch at its own */
        int64_t ends[NVL_ENGINE_PP_MAX];
        st = nvl_engine_pipe_settle_step(e, st, ends, 1);
        if (st == NVL_OK) {
            nvl_vclock_wait_until(clock, ends[e->stage]);
            free_ps = ends[0];
            latest = ends[e->stages - 1];
        }
    } else if (e->stages > 1) {
        /* each stage's end: stage 0 takes the next batch at its own */
        st = nvl_engine_pipe_step_end(e, st, &free_ps, &latest);
    } else {
        /* the latest end over the group: agreed with the pass's
         * collectives when they were deferred (issue.c), else here */
        int64_t end = clock->now_ps;
        if (latest < 0)
            MPI_Allreduce(&end, &latest, 1, MPI_INT64_T, MPI_MAX,
                          nvl_comm_mpi(e->tp));
        nvl_vclock_wait_until(clock, latest);
        free_ps = latest;
    }
    if (st != NVL_OK)
        return st;
    size_t np;
    const nvl_pass_stats_t *p = nvl_engine_passes(e, &np);
    if (pass_out != NULL && np > 0)
        *pass_out = p[np - 1];
    e->n_passes = 0; /* nothing kept: pass numbers go on */
    e->n_events = 0;
    *dur_ps_out = latest - start_ps;
    *free_ps_out = free_ps - start_ps;
    return NVL_OK;
}
