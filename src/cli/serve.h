/* Private to src/cli: `nvlemu serve`'s options and results, shared by the
 * command (cmd_serve.c) and its outputs (serve_report.c). */
#ifndef NVLEMU_CLI_SERVE_H
#define NVLEMU_CLI_SERVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "model_opts.h"
#include "nvlemu/engine.h"
#include "nvlemu/serve.h"

/* The options (cmd_serve.c's table fills them). */
typedef struct {
    nvl_cli_common_t common;
    const char *model, *workload, *trace, *csv;
    /* the generator */
    long requests, concurrency, prefix_groups, prefix_len, seed;
    double rate;
    nvl_serve_len_t isl, osl;
    /* the policy (0s resolved to the scheduler's defaults by prepare) */
    int scheduler;
    long max_batch, max_tokens, chunk, block;
    double mem_fraction;
    bool whole_prompts;          /* resolved: prompts run whole */
    int preempt, prefix_caching;
    /* the layout */
    long tp, replicas, prefill_gpus, decode_gpus, prefill_tp, decode_tp;
    /* the model and its kernels, as `run` (model_opts.h) */
    nvl_cli_model_opts_t engine;
    double rope_yarn;
    /* results */
    double slo_ttft_ms, slo_tpot_ms, gpu_hour_cost;
} nvl_serve_args_t;

/* A pool of replicas: the whole job when aggregated, or the prefill and
 * the decode GPUs of a disaggregated one. */
typedef struct {
    const char *name;         /* "aggregated", "prefill", "decode" */
    int first_rank, gpus, tp, replicas;
    int system_replicas;      /* the system's (--replicas), >= replicas:
                                 the others serve the same share */
    nvl_serve_replica_stats_t *stats; /* per replica (rank 0) */
    int64_t part_ps[NVL_PART_COUNT];  /* step time by part, summed over
                                         steps, mean over the pool's ranks */
    double kv_blocks, kv_gb_per_gpu, kv_host_share;
} nvl_serve_pool_t;

/* What rank 0 reports. */
typedef struct {
    const nvl_serve_args_t *args;
    const nvl_model_config_t *cfg;
    const nvl_topo_t *topo;
    const nvl_serve_workload_t *w;
    const nvl_serve_outcome_t *out;
    nvl_serve_summary_t sum;
    nvl_serve_pool_t pools[2];
    int n_pools;
    double kv_transfer_ms_mean, kv_transfer_gb; /* disaggregated */
    double wall_s;
    const nvl_validation_t *validation; /* the families covering it */
} nvl_serve_result_t;

/* A --scheduler row (cmd_serve.c's table).  max_batch / max_tokens 0:
 * trtllm-bench's own rule (nvl_serve_trtllm_bench_limits). */
typedef struct {
    const char *name;
    nvl_serve_sched_t sched;
    long max_batch, max_tokens, block;
    bool chunked;                 /* --chunk 0 chunks prefills to the budget */
    nvl_engine_kv_rule_t kv_rule;
    /* a step's rows with its CUDA graph's padding (0: none) */
    uint32_t (*graph_rows)(uint32_t seqs, uint64_t tokens, uint64_t prefill);
} nvl_cli_sched_t;

/* The row of --scheduler's value. */
const nvl_cli_sched_t *nvl_cli_serve_sched(int scheduler);

void nvl_serve_report_text(const nvl_serve_result_t *r, FILE *out);
/* Reports and returns NVL_ERR_IO when a file cannot be written. */
nvl_status_t nvl_serve_report_json(const nvl_serve_result_t *r,
                                   const char *path);
nvl_status_t nvl_serve_report_csv(const nvl_serve_result_t *r,
                                  const char *path);
/* The Chrome trace: a track of steps per replica (steps[p][i], n_steps
 * of them) and each request's queued / prefill / decode spans. */
nvl_status_t nvl_serve_trace_write(const nvl_serve_result_t *r,
                                   nvl_serve_step_rec_t *const *steps,
                                   const size_t *n_steps, FILE *out);

#endif
