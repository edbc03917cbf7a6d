/* nvlemu run's derived numbers (run_report.h): times, throughputs and
 * shares from the passes' ends and the reduced statistics (run_stats.h).
 * Times are the emulated GPU times; a decode step lasts from the end of
 * the previous pass to the end of its own (latest rank), so TPOT includes
 * sampling and the host's turn-around. */
#include <math.h>
#include <string.h>

#include "run_report.h"

static void derive_moe(const nvl_run_result_t *r, nvl_run_derived_t *d)
{
    const nvl_run_totals_t *t = r->totals;
    double steps = d->steps ? (double)d->steps : 1;
    double per = STAT(NVL_RS_MOE_LAYERS, 0) * steps; /* MoE layers, decode */
    d->experts_min = nvl_run_stat_min(t, NVL_RS_EXPERTS);
    d->experts_max = nvl_run_stat_max(t, NVL_RS_EXPERTS);
    d->most_loaded_pairs = -1;
    if (per <= 0)
        return;
    d->dispatch_ms = STAT(NVL_RS_DISPATCH_MS, 0);
    d->combine_ms = STAT(NVL_RS_COMBINE_MS, 0);
    d->dispatch_bytes = STAT(NVL_RS_DISPATCH_BYTES, 0);
    d->combine_bytes = STAT(NVL_RS_COMBINE_BYTES, 0);
    d->wait_ms_step = STAT(NVL_RS_COMBINE_WAIT_MS, 0);
    d->most_loaded = nvl_run_stat_argmax(t, NVL_RS_EXPERT_PAIRS);
    d->most_loaded_pairs = nvl_run_stat_max(t, NVL_RS_EXPERT_PAIRS);
    d->pairs_max = STAT(NVL_RS_EXPERT_PAIRS_MAX, 0);
    d->pairs_mean = STAT(NVL_RS_EXPERT_PAIRS_MEAN, 0);
    int own = r->args->engine.a2a_onesided ? 1 : 0;
    bool alt = STAT(NVL_RS_A2A_ALT_USABLE, 0) > 0;
    d->a2a_dispatch_ms[own] = d->dispatch_ms;
    d->a2a_combine_ms[own] = d->combine_ms;
    d->a2a_dispatch_ms[!own] = alt ? STAT(NVL_RS_DISPATCH_ALT_MS, 0) : -1;
    d->a2a_combine_ms[!own] = alt ? STAT(NVL_RS_COMBINE_ALT_MS, 0) : -1;
}

void nvl_run_derive(const nvl_run_result_t *r, nvl_run_derived_t *d)
{
    const nvl_run_totals_t *t = r->totals;
    memset(d, 0, sizeof *d);
    d->ovl_comm_ms = STAT(NVL_RS_OVERLAP_COMM_MS, 0);
    d->ovl_hidden_ms = STAT(NVL_RS_OVERLAP_HIDDEN_MS, 0);
    d->ovl_prefill_hidden_ms = STAT(NVL_RS_PREFILL_HIDDEN_MS, 0);
    int n = r->tp;
    d->steps = r->n_passes > 0 ? r->n_passes - 1 : 0;
    d->ttft_ms = r->n_passes ? MS((double)r->pass_end_ps[0]) : 0;
    d->e2e_ms = r->n_passes ? MS((double)r->pass_end_ps[r->n_passes - 1]) : 0;
    d->tpot_min_ms = INFINITY;
    double wall = 0;
    for (size_t i = 1; i < r->n_passes; i++) {
        double ms = MS((double)(r->pass_end_ps[i] - r->pass_end_ps[i - 1]));
        d->tpot_ms += ms / (double)d->steps;
        d->tpot_min_ms = fmin(d->tpot_min_ms, ms);
        d->tpot_max_ms = fmax(d->tpot_max_ms, ms);
        wall += r->pass_wall_s[i];
    }
    if (d->steps == 0)
        d->tpot_min_ms = 0;
    d->wall_per_step_s = d->steps ? wall / (double)d->steps : 0;
    double batch = (double)r->args->batch;
    if (d->tpot_ms > 0) {
        d->tokens_per_s = batch / (d->tpot_ms / 1e3);
        /* per GPU package: a die-view rank is 1/dies of one */
        d->tokens_per_s_per_gpu = d->tokens_per_s / n *
                                  (r->topo->die_view ? r->topo->gpu.dies : 1);
    }
    d->replicas = (int)(r->topo->gpus / (uint32_t)n);
    d->tokens_per_s_rack = d->tokens_per_s * d->replicas;
    double steps = d->steps ? (double)d->steps : 1;
    for (int p = 0; p < NVL_PART_COUNT; p++) {
        d->dec[p] = STAT(NVL_RS_DECODE_MS, p);
        d->dec_layer[p] = STAT(NVL_RS_DECODE_LAYER_MS, p);
        d->pre[p] = STAT(NVL_RS_PREFILL_MS, p);
    }
    /* slowest: the least idle rank; fastest: the most idle */
    int rk[2] = {nvl_run_stat_argmin(t, NVL_RS_DECODE_IDLE_MS),
                 nvl_run_stat_argmax(t, NVL_RS_DECODE_IDLE_MS)};
    d->slowest = rk[0];
    d->fastest = rk[1];
    for (int j = 0; j < 2; j++) {
        d->busy_ms[j] = nvl_run_stat_at(t, NVL_RS_DECODE_BUSY_MS, rk[j]);
        d->idle_ms[j] = nvl_run_stat_at(t, NVL_RS_DECODE_IDLE_MS, rk[j]);
    }
    d->q_min = nvl_run_stat_min(t, NVL_RS_Q_HEADS);
    d->q_max = nvl_run_stat_max(t, NVL_RS_Q_HEADS);
    d->i_min = nvl_run_stat_min(t, NVL_RS_INTERMEDIATE);
    d->i_max = nvl_run_stat_max(t, NVL_RS_INTERMEDIATE);
    d->v_min = nvl_run_stat_min(t, NVL_RS_VOCAB);
    d->v_max = nvl_run_stat_max(t, NVL_RS_VOCAB);
    d->attn_idle_ranks = (int)STAT(NVL_RS_ATTN_IDLE, 0);
    d->rss_max = STAT(NVL_RS_PEAK_RSS_BYTES, 0);
    derive_moe(r, d);
    double dec_s = d->tpot_ms * steps / 1e3;
    d->decode_tflops_per_gpu =
        dec_s > 0 ? STAT(NVL_RS_DECODE_FLOPS, 0) / dec_s / 1e12 : 0;
    d->decode_hbm_tb_per_s =
        dec_s > 0 ? STAT(NVL_RS_DECODE_HBM_BYTES, 0) / dec_s / 1e12 : 0;
    for (int p = 0; p < NVL_PART_COUNT; p++) {
        d->dec_total += d->dec[p];
        d->pre_total += d->pre[p];
    }
    d->hbm_bytes = (double)r->topo->gpu.hbm_bytes;
    d->c2c_bytes = STAT(NVL_RS_C2C_H2D_BYTES, 0) + STAT(NVL_RS_C2C_D2H_BYTES, 0);
    d->c2c_ms = STAT(NVL_RS_C2C_H2D_MS, 0);
    d->c2c_exposed_ms = d->dec[NVL_PART_C2C];
    d->c2c_utilisation = d->tpot_ms > 0 ? d->c2c_ms / d->tpot_ms : 0;
}

/* The run's queries for its validation families. */
void nvl_run_queries(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                     nvl_cli_queries_t *qs)
{
    const nvl_run_args_t *a = r->args;
    nvl_cli_step_t s = {.topo = r->topo, .cfg = r->cfg, .tp = r->tp,
                        .allreduce = a->engine.allreduce, .stack = a->engine.stack,
                        .dtype = a->engine.dtype, .batch = a->batch,
                        .prompt_len = r->prompt_len, .decode = d->steps > 0};
    nvl_cli_step_queries(&s, qs);
}

