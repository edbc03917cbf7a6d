/* Private to src/serving: one rank's serving job, shared by its rooms.
 * serving.c (the phases of nvl_serving_run) calls replica.c (a replica's
 * engine, KV room and step driver), dp_replica.c (a replica's ranks under
 * data-parallel attention; it calls replica.c's step), kv_transfer.c
 * (disaggregation's KV trips) and gather.c (the results across ranks);
 * none calls back. */
#ifndef NVLEMU_SERVING_IMPL_H
#define NVLEMU_SERVING_IMPL_H

#include "nvlemu/runtime.h"
#include "nvlemu/serving.h"

/* The step driver's state (replica.c's nvl_serving_step). */
typedef struct {
    nvl_engine_t *e;
    const nvl_serve_scheduler_t *sched; /* its CUDA-graph padding */
    double host_us_per_request; /* its engine's, on this topology's host */
    double host_us_per_step;    /* the same, a step's own */
    double launch_us;       /* an eager launch's host time; 0: graphs or
                               not, the host launches nothing a kernel */
    uint32_t kernels;       /* the last step's kernels */
    uint32_t graph_cap; /* the largest decode batch: min(max batch, tokens) */
    uint64_t *past, *newt;         /* the padded step (pad_cap rows) */
    size_t pad_cap;
    int64_t part_ps[NVL_PART_COUNT];
} nvl_serving_step_t;

typedef struct {
    const nvl_serving_config_t *c;
    const nvl_model_config_t *m;
    const nvl_topo_t *topo;
    nvl_serving_layout_t L;
    nvl_vclock_t clock;
    nvl_comm_t *world, *group;
    nvl_engine_t *e;
    nvl_engine_kv_room_t room;
    nvl_serve_capacity_t cap;
    nvl_serving_step_t sc;
    nvl_serve_replica_stats_t stats;
    nvl_serve_step_rec_t *steps;
    size_t n_steps;
} nvl_serving_job_t;

/* replica.c */
/* This rank's replica: its engine, KV room and capacity for pool_w's
 * requests; agreed over the job (one report). */
nvl_status_t nvl_serving_replica_setup(nvl_serving_job_t *j,
                                       const nvl_serve_workload_t *pool_w);
/* Serves which[0..n) of pw on this rank's replica into out. */
nvl_status_t nvl_serving_replica_run(nvl_serving_job_t *j,
                                     const nvl_serve_workload_t *pw,
                                     const uint32_t *which, size_t n,
                                     bool prefilled,
                                     nvl_serve_outcome_t *out);

/* Pads b to `rows` rows (one-token sequences without a past) when it has
 * fewer tokens, runs it through the engine's serving step (its times in
 * *time_out: the last stage's end and the first stage's, from its start)
 * and adds its parts to c->part_ps. */
nvl_status_t nvl_serving_run_step(nvl_serving_step_t *c,
                                  const nvl_serve_batch_t *b, uint32_t rows,
                                  nvl_serve_step_time_t *time_out);

/* The engine's host loop (the scheduler row's host_us_per_step and
 * host_us_per_request): overlapped, when the host's work for the step
 * and its `requests` scheduled requests (and, for a step without a CUDA graph under eager_without_graph, its
 * kernels' launches first) is longer than the step's GPU time, the step
 * (and the time until the next may start) lasts that long; serial
 * (host_serial), that work adds to both.  The GPU's wait counts as the
 * launch part. */
void nvl_serving_host_loop(nvl_serving_step_t *c, uint64_t requests,
                           bool eager, nvl_serve_step_time_t *t);

/* dp_replica.c: a replica under data-parallel attention (TensorRT-LLM's DEP) */
/* Whether the job can serve as its engine places attention: reports why
 * not (data-parallel attention with a scheduler other than TensorRT-LLM's
 * or with disaggregated pools); the same verdict on every rank. */
nvl_status_t nvl_serving_dp_check(const nvl_serving_job_t *j);
/* nvl_serving_replica_run's work, each rank of the replica its own
 * scheduler (nvl_serve_run_dp). */
nvl_status_t nvl_serving_dp_run(nvl_serving_job_t *j,
                                const nvl_serve_workload_t *pw,
                                const uint32_t *which, size_t n,
                                nvl_serve_outcome_t *out);

/* kv_transfer.c */
/* Disaggregated: when each request's KV reaches its decode replica
 * (ready[i]), from the prefill outcomes pre; the mean transfer and the
 * bytes moved. */
void nvl_serving_kv_arrivals(const nvl_serving_job_t *j,
                             const nvl_serve_workload_t *w,
                             const nvl_serve_outcome_t *pre, int64_t *ready,
                             double *transfer_ms_mean, double *transfer_gb);
/* Sorts request numbers by key[number], then by number. */
void nvl_serving_sort_by_time(uint32_t *idx, size_t n, const int64_t *key);

/* gather.c */
/* Every rank's outcomes of the requests it served (mine[i]) to `root`
 * (root < 0: every rank), one reduction for all of them. */
void nvl_serving_gather_outcomes(nvl_serve_outcome_t *out, const bool *mine,
                                 size_t n, int root);
/* The replicas' statistics to rank 0's pools (r->pools, r->n_pools). */
void nvl_serving_gather_pools(const nvl_serving_job_t *j,
                              nvl_serving_result_t *r);
/* The replica leaders' step records to rank 0 (r->steps). */
void nvl_serving_gather_steps(const nvl_serving_job_t *j,
                              nvl_serving_result_t *r);

#endif
