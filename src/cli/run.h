/* Private to src/cli: `nvlemu run`'s inputs and results, shared by the
 * command (cmd_run.c), its report (run_report.c) and its trace
 * (run_trace.c). */
#ifndef NVLEMU_CLI_RUN_H
#define NVLEMU_CLI_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "model_opts.h"
#include "nvlemu/engine.h"
#include "run_stats.h"

/* `nvlemu run`'s options (cmd_run.c's table fills them). */
typedef struct {
    nvl_cli_common_t common; /* --topo, --set, --json, --help */
    const char *model, *trace;
    long batch, prompt_len, gen_len, ctx, trace_steps, seed;
    long tp; /* --tp: ranks per stage (0: the ranks / --pp) */
    nvl_cli_model_opts_t engine; /* the engine's options (model_opts.h) */
    int mode;          /* --mode: -1 auto, else nvl_mode_t */
    double rope_yarn;  /* --rope-scaling yarn:F (0: none) */
} nvl_run_args_t;

/* What rank 0 reports. */
typedef struct {
    const nvl_run_args_t *args;
    const nvl_engine_opts_t *engine; /* what the engine ran with (--attn
                                        auto resolved) */
    const nvl_model_config_t *cfg;
    const nvl_topo_t *topo;
    nvl_mode_t mode;
    const char *weights;      /* "checkpoint DIR", "synthetic", "none" */
    int tp;                   /* ranks (GPUs) of a replica: TP x PP */
    int replicas;             /* the job's copies of it (--tp), >= 1 */
    uint32_t layers;          /* layers run, every stage's */
    nvl_engine_pipe_t pipe;   /* rank 0's place in the pipeline */
    uint64_t prompt_len, gen_len; /* after --ctx */
    int64_t *pass_end_ps;     /* latest end over the ranks, per pass */
    double *pass_wall_s;      /* rank 0's wall time per pass */
    int64_t replica_spread_ps; /* largest difference of a pass's end
                                  between replicas (0: none, or one) */
    size_t n_passes;
    const nvl_run_totals_t *totals; /* every rank's numbers, reduced */
    const nvl_tuner_cfg_t *tuner;   /* the run's NCCL settings */
    const nvl_mem_plan_t *mem; /* per GPU, the largest shard */
    double wall_s;
    const int32_t *tokens;    /* batch x gen_len (data mode) */
    const nvl_validation_t *validation; /* the families covering it */
} nvl_run_result_t;

/* Writes the readable report. */
void nvl_run_report_text(const nvl_run_result_t *r, FILE *out);

/* Writes the JSON report (stable keys, listed in docs/cost-model.md, "The
 * report"); reports and returns NVL_ERR_IO if path cannot be written ('-':
 * standard output). */
nvl_status_t nvl_run_report_json(const nvl_run_result_t *r, const char *path);

/* A run that does not fit (r->mem->fits false): the JSON of its inputs
 * and memory_per_gpu, with "error": "does not fit" (r's times unset);
 * reports and returns NVL_ERR_IO as nvl_run_report_json. */
nvl_status_t nvl_run_report_unfit_json(const nvl_run_result_t *r,
                                       const char *path);

/* Collective over comm: every rank's recorded events to a Chrome trace
 * written by rank 0 to `out` (opened by rank 0; NULL elsewhere), one track
 * per rank. */
nvl_status_t nvl_run_trace_write(const nvl_engine_t *e, MPI_Comm comm,
                                 const nvl_topo_t *topo, FILE *out);

#endif
