/* Private to src/cli: `nvlemu serve`'s options (cmd_serve.c's table fills
 * them) and its outputs (serve_report.c), which cmd_serve.c calls. */
#ifndef NVLEMU_CLI_SERVE_REPORT_H
#define NVLEMU_CLI_SERVE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "model_opts.h"
#include "nvlemu/engine.h"
#include "nvlemu/serve.h"
#include "nvlemu/serving.h"

/* The options (cmd_serve.c's table fills them). */
typedef struct {
    nvl_cli_common_t common;
    const char *model, *workload, *trace, *csv;
    /* the generator */
    long requests, concurrency, prefix_groups, prefix_len, seed;
    double rate;
    nvl_serve_len_t isl, osl;
    double frontend_ms;   /* the front end's time per request (0: none) */
    double stream_us;     /* the output path's time per token (0: none) */
    /* the policy (0s: the scheduler's defaults) */
    int scheduler;
    long max_batch, max_tokens, chunk, block;
    double mem_fraction;
    int preempt, prefix_caching;
    nvl_serving_layout_opts_t layout;
    /* the model and its kernels, as `run` (model_opts.h) */
    nvl_cli_model_opts_t engine;
    double rope_yarn;
    /* results */
    double slo_ttft_ms, slo_tpot_ms, gpu_hour_cost;
} nvl_serve_args_t;

/* What rank 0 reports: the options, the serving configuration (its
 * policy resolved), the model, the topology, what was served and its
 * summary. */
typedef struct {
    const nvl_serve_args_t *args;
    const nvl_serving_config_t *serving;
    const nvl_model_config_t *model;
    const nvl_topo_t *topo;
    const nvl_serving_result_t *res;
    nvl_serve_summary_t sum;
    const nvl_validation_t *validation; /* the families covering it */
} nvl_serve_report_t;

void nvl_serve_report_text(const nvl_serve_report_t *r, FILE *out);
/* Reports and returns NVL_ERR_IO when a file cannot be written. */
nvl_status_t nvl_serve_report_json(const nvl_serve_report_t *r,
                                   const char *path);
nvl_status_t nvl_serve_report_csv(const nvl_serve_report_t *r,
                                  const char *path);
/* The Chrome trace: a track of steps per replica (steps[p][i], n_steps
 * of them, as the result holds them) and each request's queued /
 * prefill / decode spans. */
nvl_status_t nvl_serve_trace_write(const nvl_serve_report_t *r, FILE *out);

#endif
