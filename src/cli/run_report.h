/* Private to src/cli: what `nvlemu run`'s two reports share: the numbers
 * derived from the reduced statistics (run_derive.c), read by the text
 * (run_report.c) and the JSON (run_json.c). */
#ifndef NVLEMU_CLI_RUN_REPORT_H
#define NVLEMU_CLI_RUN_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "run.h"

#define MS(ps) ((ps) / 1e9)
#define STAT(id, i) nvl_run_stat(r->totals, (id), (i))

/* Derived numbers, shared by both outputs. */
typedef struct {
    size_t steps;            /* decode steps */
    double ttft_ms, tpot_ms, tpot_min_ms, tpot_max_ms, e2e_ms;
    double tokens_per_s, tokens_per_s_per_gpu, tokens_per_s_rack;
    int replicas;            /* TP groups of this size in the system */
    double dec[NVL_PART_COUNT], dec_layer[NVL_PART_COUNT]; /* mean ms */
    double pre[NVL_PART_COUNT];
    double dec_total, pre_total;
    int slowest, fastest;    /* ranks: least and most idle in decode */
    double busy_ms[2], idle_ms[2];
    double q_min, q_max, i_min, i_max, v_min, v_max;
    int attn_idle_ranks;
    double hbm_bytes, rss_max, wall_per_step_s;
    /* NVLink-C2C per decode step: bytes both ways, the host-to-GPU queue's
     * busy time, the GPU's exposed wait, busy / TPOT */
    double c2c_bytes, c2c_ms, c2c_exposed_ms, c2c_utilisation;
    double decode_tflops_per_gpu, decode_hbm_tb_per_s;
    /* mixture of experts, per MoE layer of a decode step (means over the
     * ranks unless said) */
    double experts_min, experts_max;
    double dispatch_ms, combine_ms, dispatch_bytes, combine_bytes;
    double pairs_max, pairs_mean; /* per layer: busiest rank, mean rank */
    double wait_ms_step;          /* imbalance wait per decode step */
    int most_loaded;              /* the rank with most expert tokens */
    double most_loaded_pairs;     /* its tokens per layer */
    /* the all-to-alls by implementation (nccl, onesided), per MoE layer:
     * the run's own and the one it does not use (< 0: cannot run here) */
    double a2a_dispatch_ms[2], a2a_combine_ms[2];
    /* --overlap async-tp: the communication stream's busy time and the
     * part hidden under the GEMM chunks, per decode step; the prefill's */
    double ovl_comm_ms, ovl_hidden_ms, ovl_prefill_hidden_ms;
} nvl_run_derived_t;


/* The numbers both reports show, from r's passes and reduced statistics. */
void nvl_run_derive(const nvl_run_result_t *r, nvl_run_derived_t *d_out);

/* run_pipe.c: the pipeline's stages, their placement on the topology,
 * the links between them, and its bubble and send/recv time (nothing, and
 * NULL, without a pipeline). */
void nvl_run_pipe_text(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                       FILE *out);
json_t *nvl_run_pipe_json(const nvl_run_result_t *r,
                          const nvl_run_derived_t *d);

/* The run's queries for its validation families. */
void nvl_run_queries(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                     nvl_cli_queries_t *qs_out);

/* run_gemm.c: when some GEMM class is quantized, each GEMM of a layer on the
 * largest shard (attention's, the dense MLP's or the router's and one
 * expert's) and the lm_head with its format, weight bytes and scale
 * bytes (the timing model's nvl_cost_weight_bytes): a text line, and the
 * JSON object "gemm_weights" ({"format", "classes": {class: type},
 * "weight_only", "gemms": [{"name", "class", "format", "n", "k",
 * "weight_bytes", "scale_bytes"}]}); nothing (NULL) when every class is
 * bf16. */
void nvl_run_gemm_text(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                       FILE *out);
json_t *nvl_run_gemm_json(const nvl_run_result_t *r,
                          const nvl_run_derived_t *d);

#endif
