/* nvlemu: serving a workload on replicas of a model in virtual time (the
 * body of `nvlemu serve`; docs/serve.md).  Between the engine and the
 * command line: it lays the job's ranks out as replicas, each a
 * tensor-parallel group of ranks with its own engine stepping through
 * the continuous-batching scheduler of include/nvlemu/serve.h.
 *
 * Aggregated: the job's ranks form ranks / tp replicas, requests assigned
 * round-robin.  Disaggregated (prefill and decode pools): the prefill
 * pool serves every prompt first, each request's KV then crosses to a
 * decode replica (timed by the collectives' point-to-point model between
 * the GPUs holding each KV head), and the decode pool serves the outputs.
 *
 * MPI: nvl_serving_run is collective over MPI_COMM_WORLD (the other
 * functions are local, the same on every rank).  Every rank
 * of a replica schedules identically and agrees on each step's end (the
 * engine's step, one agreement per step, none per request); the pools
 * exchange the prefill results in one reduction; rank 0 gathers the
 * outcomes, the replicas' statistics and (when kept) their steps once.
 * This module advances no clock itself: the engine's steps do. */
#ifndef NVLEMU_SERVING_H
#define NVLEMU_SERVING_H

#include <stdbool.h>
#include <stdint.h>

#include "nvlemu/engine.h"
#include "nvlemu/serve.h"
#include "nvlemu/status.h"
#include "nvlemu/topo.h"

/* ---- the layout ---------------------------------------------------------- */

/* How the job's ranks serve (0s: the defaults named). */
typedef struct {
    long tp;           /* aggregated: ranks per replica (0: all) */
    long replicas;     /* aggregated: the system's replicas, >= the job's
                          ranks / tp (0: ranks / tp) */
    long prefill_gpus, decode_gpus; /* disaggregated: the first and the
                                       last ranks (both 0: aggregated) */
    long prefill_tp, decode_tp;     /* ranks per replica of each pool
                                       (0: the whole pool) */
    long pp;           /* aggregated: pipeline stages per replica, of tp
                          ranks each (the engine's --pp; 0 or 1: none) */
} nvl_serving_layout_opts_t;

/* A pool of replicas: the whole job when aggregated, or the prefill and
 * the decode GPUs of a disaggregated one. */
typedef struct {
    const char *name;         /* "aggregated", "prefill", "decode" */
    int first_rank, gpus, tp, replicas;
    int pp;                   /* pipeline stages a replica (>= 1): a
                                 replica is tp x pp ranks */
    int system_replicas;      /* the system's (--replicas), >= replicas:
                                 the others serve the same share */
    /* the results (rank 0, nvl_serving_run's) */
    nvl_serve_replica_stats_t *stats; /* per replica (owned) */
    int64_t part_ps[NVL_PART_COUNT];  /* step time by part, summed over
                                         steps, mean over the pool's ranks */
    double kv_blocks, kv_gb_per_gpu, kv_host_share;
} nvl_serving_pool_t;

/* The job's pools and this rank's place in them. */
typedef struct {
    int n_pools, pool;
    int replica;             /* global index over the pools */
    int replica_in_pool, rank_in_replica;
    nvl_serving_pool_t pools[2];
} nvl_serving_layout_t;

/* Lays `size` ranks out as o asks and places `rank`.  closed_loop: the
 * workload is a closed loop (which disaggregated pools do not support).
 * Reports (naming the options) and returns NVL_ERR_INVALID when the
 * numbers do not fit the job; the same on every rank. */
nvl_status_t nvl_serving_layout_plan(const nvl_serving_layout_opts_t *o,
                                     bool closed_loop, int size, int rank,
                                     nvl_serving_layout_t *layout_out);

/* ---- the configuration --------------------------------------------------- */

typedef struct {
    nvl_engine_opts_t engine;    /* every replica's engine, built by the
                                    caller (served in timing mode; its
                                    allreduce the replicas' TP one) */
    nvl_serving_layout_opts_t layout;
    /* the scheduler and its knobs; max_batch, max_tokens_per_step, chunk
     * and block_tokens 0 and mem_fraction 0: the scheduler's defaults,
     * filled by nvl_serving_policy_resolve */
    nvl_serve_policy_t policy;
    double mem_fraction;         /* of the memory the scheduler's rule
                                    takes (nvl_serve_scheduler_t) */
    bool keep_steps;             /* gather every step for a trace */
} nvl_serving_config_t;

/* Fills the policy's knobs left 0 with the scheduler's defaults, the
 * batch and token limits of a scheduler without fixed ones from its rule
 * (trtllm-bench's, from the model m, the GPUs' memory, the workload's
 * lengths and the decode replicas' TP, `ranks` when the layout gives
 * none), and whether prompts run whole.  Reports and fails when the rule
 * finds the model does not fit. */
nvl_status_t nvl_serving_policy_resolve(nvl_serving_config_t *c,
                                        const nvl_model_config_t *m,
                                        const nvl_serve_workload_t *w,
                                        int ranks);

/* ---- serving ------------------------------------------------------------- */

/* What the job served (on rank 0; zeros elsewhere). */
typedef struct {
    /* the requests reported and their outcomes: the workload's, or when
     * the system has replicas the job does not emulate, those of the
     * emulated replicas only */
    nvl_serve_workload_t w;      /* its reqs owned when a subset */
    nvl_serve_outcome_t *out;    /* per request of w (owned) */
    nvl_serving_pool_t pools[2];
    int n_pools;
    double kv_transfer_ms_mean;  /* disaggregated: a request's KV from
                                    prefill end to decode arrival */
    double kv_transfer_gb;
    /* keep_steps: each replica's steps (over the pools in order) */
    nvl_serve_step_rec_t **steps;
    size_t *n_steps;
    int n_replicas;
    double wall_s;               /* the host's time serving took */
    /* private */
    nvl_serve_outcome_t *all_out;
    bool subset;
} nvl_serving_result_t;

/* Serves w over the job (MPI_COMM_WORLD) with configuration c (its
 * policy resolved) on topo, model m: plans the layout, builds each
 * replica's engine and KV room (agreed over the job: a replica that
 * cannot hold a request fails every rank), runs the replicas (and the
 * KV transfers between pools), and gathers the results on rank 0.
 * Errors are reported once and returned on every rank.  Free the result
 * with nvl_serving_result_free. */
nvl_status_t nvl_serving_run(const nvl_serving_config_t *c,
                             const nvl_model_config_t *m,
                             const nvl_topo_t *topo,
                             const nvl_serve_workload_t *w,
                             nvl_serving_result_t *result_out);

void nvl_serving_result_free(nvl_serving_result_t *r);

#endif
