/* nvlemu run's report: the readable text and the JSON with stable keys
 * (docs/cost-model.md, "The report", lists them), both from the reduced
 * statistics (run_stats.h); no MPI here.  Times are the emulated GPU times; a decode
 * step lasts from the end of the previous pass to the end of its own
 * (latest rank), so TPOT includes sampling and the host's turn-around. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "nvlemu/runtime.h"
#include "nvlemu/json.h"
#include "run.h"

#define MS(ps) ((ps) / 1e9)

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
} derived_t;

#define STAT(id, i) nvl_run_stat(r->totals, (id), (i))
#define LAYER(l, f) layer_value(r, (l), offsetof(nvl_moe_layer_stats_t, f))

/* Layer l's field at `offset` of nvl_moe_layer_stats_t, the mean rank's. */
static double layer_value(const nvl_run_result_t *r, uint32_t l,
                          size_t offset)
{
    for (size_t k = 0; k < nvl_run_n_layer_stats; k++)
        if (nvl_run_layer_stats[k].offset == offset)
            return nvl_run_layer_stat(r->totals, l, k);
    return 0;
}

static void derive_moe(const nvl_run_result_t *r, derived_t *d)
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

static void derive(const nvl_run_result_t *r, derived_t *d)
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

static double pct(double part, double total)
{
    return total > 0 ? 100.0 * part / total : 0;
}

static void breakdown_text(FILE *out, const char *title, const double *parts,
                           double total, const char *unit, double scale)
{
    fprintf(out, "\n%-40s %10s %7s\n", title, unit, "share");
    for (int p = 0; p < NVL_PART_COUNT; p++)
        fprintf(out, "  %-38s %10.3f %6.1f%%\n",
                p == NVL_PART_LAUNCH ? "launch (GPU waits for the host)"
                : p == NVL_PART_WAIT ? "wait (GPU waits for slower ranks)"
                : p == NVL_PART_C2C  ? "c2c (GPU waits for host transfers)"
                                     : nvl_part_name((nvl_part_t)p),
                parts[p] * scale, pct(parts[p], total));
    double comp = parts[NVL_PART_GEMM] + parts[NVL_PART_ATTN] +
                  parts[NVL_PART_OTHER];
    double idle = parts[NVL_PART_LAUNCH] + parts[NVL_PART_WAIT] +
                  parts[NVL_PART_C2C];
    fprintf(out, "  %-38s %10.3f\n", "total", total * scale);
    fprintf(out, "  compute %.1f%% | communication %.1f%% | idle %.1f%%\n",
            pct(comp, total), pct(parts[NVL_PART_COLL], total),
            pct(idle, total));
}

/* The mixture of experts' lines: placement, all-to-alls, imbalance. */
/* A count every rank holds: "8", or "7 or 8" / "2 to 5" when shards are
 * uneven (not "8..8", which reads as a range). */
static const char *per_rank(double lo, double hi, char *buf, size_t len)
{
    if (lo == hi)
        snprintf(buf, len, "%.0f", lo);
    else
        snprintf(buf, len, "%.0f %s %.0f", lo, hi - lo == 1 ? "or" : "to", hi);
    return buf;
}

static void moe_text(const nvl_run_result_t *r, const derived_t *d,
                     FILE *out)
{
    const nvl_run_args_t *a = r->args;
    if (r->cfg->num_experts == 0)
        return;
    fprintf(out, "\nexperts: %u, top-%u; ", r->cfg->num_experts,
            r->cfg->top_k);
    char ex[48];
    fprintf(out, "%s per rank%s",
            per_rank(d->experts_min, d->experts_max, ex, sizeof ex),
            d->experts_min == d->experts_max ? "" : " (uneven)");
    fprintf(out, " (EP %ld, each expert cut over %ld rank(s)); %.0f MoE "
                 "layer(s)\n", a->engine.ep, r->tp / a->engine.ep, STAT(NVL_RS_MOE_LAYERS, 0));
    if (d->steps == 0 || STAT(NVL_RS_MOE_LAYERS, 0) == 0)
        return;
    if (a->engine.ep > 1 || a->engine.attn_dp) {
        fprintf(out, "  all-to-all per MoE layer (decode): dispatch %.4f ms, "
                     "%.1f KB sent; combine %.4f ms, %.1f KB sent (mean "
                     "rank, --a2a %s)\n", d->dispatch_ms,
                d->dispatch_bytes / 1e3, d->combine_ms,
                d->combine_bytes / 1e3,
                nvl_family_name(&nvl_engine_a2a_family, a->engine.a2a_onesided));
        fprintf(out, "  %-9s  dispatch   combine  (ms per MoE layer, "
                     "decode; * the run's)\n", "all-to-all");
        for (int i = 0; i < 2; i++)
            if (d->a2a_dispatch_ms[i] >= 0)
                fprintf(out, "  %-9s %9.4f %9.4f%s\n",
                        nvl_family_name(&nvl_engine_a2a_family, i),
                        d->a2a_dispatch_ms[i], d->a2a_combine_ms[i],
                        i == a->engine.a2a_onesided ? "  *" : "");
            else
                fprintf(out, "  %-9s  cannot run here (GPUs in more than one "
                             "NVLink domain)\n",
                        nvl_family_name(&nvl_engine_a2a_family, i));
    }
    fprintf(out, "  expert tokens per MoE layer (decode): busiest rank %.1f "
                 "vs mean %.1f (x%.2f); most loaded over the run: rank %d "
                 "(%.1f)\n", d->pairs_max, d->pairs_mean,
            d->pairs_mean > 0 ? d->pairs_max / d->pairs_mean : 1.0,
            d->most_loaded, d->most_loaded_pairs);
    if (a->engine.ep > 1 || a->engine.attn_dp)
        fprintf(out, "  cost of imbalance: %.4f ms per decode step (%.1f%%): "
                     "ranks waiting for the busiest before the combine\n",
                d->wait_ms_step, pct(d->wait_ms_step, d->tpot_ms));
    /* the layer whose busiest rank is furthest above the mean */
    int hot = -1;
    double hot_ratio = 0;
    for (uint32_t i = 0; i < r->layers; i++) {
        double mx = LAYER(i, expert_pairs_max), mn = LAYER(i, expert_pairs_mean);
        if (mn > 0 && mx / mn > hot_ratio) {
            hot_ratio = mx / mn;
            hot = (int)i;
        }
    }
    if (hot >= 0 && (a->engine.ep > 1 || a->engine.attn_dp))
        fprintf(out, "  most imbalanced layer %d: busiest rank %.1f expert "
                     "tokens vs mean %.1f (x%.2f), wait %.4f ms per step "
                     "(every layer: JSON experts.per_layer)\n", hot,
                LAYER(hot, expert_pairs_max) / (double)d->steps,
                LAYER(hot, expert_pairs_mean) / (double)d->steps, hot_ratio,
                MS(LAYER(hot, combine_wait_ps)) / (double)d->steps);
}

/* Where the bytes live: HBM, and the host tier's shares. */
static void memory_text(const nvl_run_result_t *r, const derived_t *d,
                        FILE *out)
{
    const nvl_mem_plan_t *m = r->mem;
    fprintf(out, "\n# memory per %s: weights %.2f GB + KV cache %.2f GB + "
                 "activations %.2f GB + reserve %.2f GB",
            r->topo->die_view ? "die" : "GPU", m->weights_bytes / 1e9,
            m->kv_bytes / 1e9, m->act_bytes / 1e9, m->reserve_bytes / 1e9);
    if (m->kv_host_share > 0 || m->weights_host_share > 0)
        fprintf(out, " + C2C staging %.2f GB, less %.2f GB in host memory "
                     "(KV %.1f%%, layer weights %.1f%%, of %.0f GB)",
                m->staging_bytes / 1e9, m->host_need_bytes / 1e9,
                100 * m->kv_host_share, 100 * m->weights_host_share,
                m->host_bytes / 1e9);
    fprintf(out, " = %.2f GB of %.0f GB HBM\n", m->hbm_need_bytes / 1e9,
            m->hbm_bytes / 1e9);
    if (d->c2c_ms > 0 && d->steps > 0)
        fprintf(out, "# NVLink-C2C per decode step: %.2f GB, host to GPU "
                     "busy %.3f ms (%.0f%% of the step), %.3f ms of it "
                     "exposed (the GPU waits)\n", d->c2c_bytes / 1e9,
                d->c2c_ms, 100 * d->c2c_utilisation, d->c2c_exposed_ms);
}

/* The run's queries for its validation families. */
static void run_queries(const nvl_run_result_t *r, const derived_t *d,
                        nvl_cli_queries_t *qs)
{
    const nvl_run_args_t *a = r->args;
    nvl_cli_step_t s = {.topo = r->topo, .cfg = r->cfg, .tp = r->tp,
                        .allreduce = a->engine.allreduce, .stack = a->engine.stack,
                        .dtype = a->engine.dtype, .batch = a->batch,
                        .prompt_len = r->prompt_len, .decode = d->steps > 0};
    nvl_cli_step_queries(&s, qs);
}

void nvl_run_report_text(const nvl_run_result_t *r, FILE *out)
{
    derived_t d;
    derive(r, &d);
    const nvl_run_args_t *a = r->args;
    nvl_runtime_print_header(out);
    char place[128];
    nvl_cli_placement_name(r->tp, a->engine.ep, a->engine.attn_dp, sizeof place, place);
    fprintf(out, "# nvlemu run: %s (%u of %u layers) on %s, %s, %s mode, "
                 "weights: %s\n", r->cfg->name, r->layers, r->cfg->layers,
            r->topo->name, place,
            r->mode == NVL_MODE_DATA ? "data" : "timing", r->weights);
    if (r->topo->die_view)
        fprintf(out, "# --rank-plays die: each rank plays one of the %u dies "
                     "of a GPU package, %d ranks on %d GPUs; per-GPU "
                     "numbers below are per die except tokens/s per GPU\n",
                r->topo->gpu.dies, r->tp, r->tp / (int)r->topo->gpu.dies);
    fprintf(out, "# batch %ld, prompt %llu tokens, %llu new tokens per "
                 "sequence%s; weights %s, KV %s, attention %s, stack %s, "
                 "launch %s, overlap %s\n", a->batch,
            (unsigned long long)r->prompt_len, (unsigned long long)r->gen_len,
            a->ctx ? " (--ctx: one steady-state decode step)" : "",
            nvl_wdtype_name(a->engine.dtype), nvl_wdtype_name(a->engine.kv_dtype),
            nvl_attn_name(r->engine->cost.attn), nvl_stack_name(a->engine.stack),
            nvl_launch_name(a->engine.launch), nvl_overlap_name(a->engine.overlap));
    if (a->engine.allreduce != NVL_AR_NCCL || a->engine.fuse_ar_norm)
        fprintf(out, "# allreduce %s%s\n",
                nvl_ar_impl_name((nvl_ar_impl_t)a->engine.allreduce),
                a->engine.fuse_ar_norm ? ", fused with the residual add + RMSNorm"
                                : "");
    if (r->cfg->rope_yarn_factor > 0)
        fprintf(out, "# YaRN rope scaling: factor %g over %u pretrained "
                     "positions (context up to %llu)\n",
                r->cfg->rope_yarn_factor, r->cfg->rope_original_positions,
                (unsigned long long)nvl_model_max_context(r->cfg));
    if (r->cfg->rope_llama3_factor > 0)
        fprintf(out, "# llama3 rope scaling: factor %g over %u pretrained "
                     "positions (context up to %llu)\n",
                r->cfg->rope_llama3_factor, r->cfg->rope_original_positions,
                (unsigned long long)nvl_model_max_context(r->cfg));
    for (int i = 0; i < a->common.set_files.n; i++)
        fprintf(out, "# what-if: --set-file %s\n", a->common.set_files.items[i]);
    for (int i = 0; i < a->common.sets.n; i++)
        fprintf(out, "# what-if: --set %s\n", a->common.sets.items[i]);
    char q[48], mlp[48], voc[48];
    fprintf(out, "# shards per rank: %s of %u query heads, %s of %u MLP rows, "
                 "%s of %u vocabulary rows",
            per_rank(d.q_min, d.q_max, q, sizeof q), r->cfg->q_heads,
            per_rank(d.i_min, d.i_max, mlp, sizeof mlp), r->cfg->intermediate,
            per_rank(d.v_min, d.v_max, voc, sizeof voc), r->cfg->vocab);
    if (d.attn_idle_ranks > 0)
        fprintf(out, "; %d rank(s) idle in attention", d.attn_idle_ranks);
    memory_text(r, &d, out);
    if (r->tokens != NULL && a->batch <= 4) {
        for (long b = 0; b < a->batch; b++) {
            fprintf(out, "# sequence %ld tokens:", b);
            for (uint64_t s = 0; s < r->gen_len && s < 16; s++)
                fprintf(out, " %d", r->tokens[(uint64_t)b * r->gen_len + s]);
            fprintf(out, "%s\n", r->gen_len > 16 ? " ..." : "");
        }
    }
    fprintf(out, "\nTTFT        %10.3f ms   prefill of %ld x %llu tokens\n",
            d.ttft_ms, a->batch, (unsigned long long)r->prompt_len);
    if (d.steps > 0) {
        fprintf(out, "TPOT        %10.3f ms   mean of %zu decode step(s); "
                     "min %.3f, max %.3f\n", d.tpot_ms, d.steps,
                d.tpot_min_ms, d.tpot_max_ms);
        if (d.steps <= 8) {
            fprintf(out, "  per step (ms):");
            for (size_t i = 1; i < r->n_passes; i++)
                fprintf(out, " %.3f", MS((double)(r->pass_end_ps[i] -
                                                  r->pass_end_ps[i - 1])));
            fprintf(out, "\n");
        }
        if (r->topo->die_view)
            fprintf(out, "throughput  %10.1f tokens/s for these %d dies (%d "
                         "GPUs), %.1f per GPU\n", d.tokens_per_s, r->tp,
                    r->tp / (int)r->topo->gpu.dies, d.tokens_per_s_per_gpu);
        else
            fprintf(out, "throughput  %10.1f tokens/s for these %d GPUs, "
                         "%.1f per GPU\n", d.tokens_per_s, r->tp,
                    d.tokens_per_s_per_gpu);
        fprintf(out, "rack        %10.1f tokens/s with %d group(s) of %d "
                     "on the %u GPUs\n", d.tokens_per_s_rack, d.replicas,
                r->tp, r->topo->gpus);
        fprintf(out, "decode      %10.2f TFLOP/s and %.2f TB/s of HBM per "
                     "GPU\n", d.decode_tflops_per_gpu, d.decode_hbm_tb_per_s);
        breakdown_text(out, "decode step (mean over steps and ranks)",
                       d.dec, d.dec_total, "ms", 1.0);
        char t[64];
        snprintf(t, sizeof t, "per layer, decode (mean of %u)", r->layers);
        double lt = 0;
        for (int p = 0; p < NVL_PART_COUNT; p++)
            lt += d.dec_layer[p];
        breakdown_text(out, t, d.dec_layer, lt, "us", 1e3);
        fprintf(out, "  slowest rank %d: busy %.3f ms, idle %.3f ms per "
                     "step; fastest rank %d: busy %.3f ms, idle %.3f ms\n",
                d.slowest, d.busy_ms[0], d.idle_ms[0], d.fastest,
                d.busy_ms[1], d.idle_ms[1]);
        if (a->engine.overlap != NVL_OVERLAP_NONE)
            fprintf(out, "  overlap (%s): communication stream %.3f ms per "
                         "step, %.3f ms of it hidden under the GEMM chunks, "
                         "%.3f ms exposed (in collective)\n",
                    nvl_overlap_name(a->engine.overlap), d.ovl_comm_ms,
                    d.ovl_hidden_ms, d.ovl_comm_ms - d.ovl_hidden_ms);
    }
    moe_text(r, &d, out);
    breakdown_text(out, "prefill (mean over ranks)", d.pre, d.pre_total, "ms",
                   1.0);
    fprintf(out, "\n# emulation: %.2f s wall, %.4f s per decode step, peak "
                 "RSS %.1f MB per rank (largest)\n", r->wall_s,
            d.wall_per_step_s, d.rss_max / 1e6);
    nvl_cli_queries_t qs;
    run_queries(r, &d, &qs);
    nvl_validation_print(r->validation, qs.q, qs.n, out);
}

static json_t *parts_json(const double *parts, double total, double scale,
                          const char *unit)
{
    json_t *o = json_object();
    char k[64];
    for (int p = 0; p < NVL_PART_COUNT; p++) {
        snprintf(k, sizeof k, "%s_%s", nvl_part_name((nvl_part_t)p), unit);
        json_object_set_new(o, k, json_real(parts[p] * scale));
        snprintf(k, sizeof k, "%s_share", nvl_part_name((nvl_part_t)p));
        json_object_set_new(o, k, json_real(total > 0 ? parts[p] / total : 0));
    }
    double comp = parts[NVL_PART_GEMM] + parts[NVL_PART_ATTN] +
                  parts[NVL_PART_OTHER];
    snprintf(k, sizeof k, "total_%s", unit);
    json_object_set_new(o, k, json_real(total * scale));
    snprintf(k, sizeof k, "compute_%s", unit);
    json_object_set_new(o, k, json_real(comp * scale));
    snprintf(k, sizeof k, "communication_%s", unit);
    json_object_set_new(o, k, json_real(parts[NVL_PART_COLL] * scale));
    snprintf(k, sizeof k, "idle_%s", unit);
    json_object_set_new(o, k, json_real((parts[NVL_PART_LAUNCH] +
                                         parts[NVL_PART_WAIT] +
                                         parts[NVL_PART_C2C]) * scale));
    return o;
}

/* null for a dense model */
static json_t *moe_json(const nvl_run_result_t *r, const derived_t *d)
{
    const nvl_run_args_t *a = r->args;
    if (r->cfg->num_experts == 0)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "experts", json_integer(r->cfg->num_experts));
    json_object_set_new(o, "top_k", json_integer(r->cfg->top_k));
    json_object_set_new(o, "ep", json_integer(a->engine.ep));
    json_object_set_new(o, "expert_tp", json_integer(r->tp / a->engine.ep));
    json_object_set_new(o, "attn_parallel", json_string(a->engine.attn_dp ? "dp"
                                                                    : "tp"));
    json_object_set_new(o, "experts_per_rank_min", json_real(d->experts_min));
    json_object_set_new(o, "experts_per_rank_max", json_real(d->experts_max));
    json_object_set_new(o, "moe_layers", json_real(STAT(NVL_RS_MOE_LAYERS, 0)));
    json_object_set_new(o, "dispatch_ms_per_layer", json_real(d->dispatch_ms));
    json_object_set_new(o, "dispatch_bytes_per_layer",
                        json_real(d->dispatch_bytes));
    json_object_set_new(o, "combine_ms_per_layer", json_real(d->combine_ms));
    json_object_set_new(o, "combine_bytes_per_layer",
                        json_real(d->combine_bytes));
    json_t *impls = json_object();
    for (int i = 0; i < 2 && (a->engine.ep > 1 || a->engine.attn_dp); i++)
        json_object_set_new(impls, nvl_family_name(&nvl_engine_a2a_family, i),
                            d->a2a_dispatch_ms[i] < 0
                                ? json_null()
                                : json_pack("{s:f, s:f}",
                                            "dispatch_ms_per_layer",
                                            d->a2a_dispatch_ms[i],
                                            "combine_ms_per_layer",
                                            d->a2a_combine_ms[i]));
    json_object_set_new(o, "all_to_all", impls);
    json_object_set_new(o, "expert_tokens_per_layer_max",
                        json_real(d->pairs_max));
    json_object_set_new(o, "expert_tokens_per_layer_mean",
                        json_real(d->pairs_mean));
    json_object_set_new(o, "imbalance",
                        json_real(d->pairs_mean > 0
                                      ? d->pairs_max / d->pairs_mean : 1.0));
    json_object_set_new(o, "imbalance_wait_ms_per_step",
                        json_real(d->wait_ms_step));
    json_object_set_new(o, "most_loaded_rank", json_integer(d->most_loaded));
    json_object_set_new(o, "most_loaded_rank_tokens_per_layer",
                        json_real(d->most_loaded_pairs));
    /* per MoE layer, per decode step, the mean rank's: the layer table */
    json_t *layers = json_array();
    double steps = d->steps ? (double)d->steps : 1;
    for (uint32_t i = 0; i < r->layers; i++) {
        if (!nvl_model_layer_is_moe(r->cfg, i))
            continue;
        json_t *l = json_pack("{s:i}", "layer", (int)i);
        for (size_t k = 0; k < nvl_run_n_layer_stats; k++)
            json_object_set_new(l, nvl_run_layer_stats[k].key,
                                json_real(nvl_run_layer_stat(r->totals, i, k) *
                                          nvl_run_layer_stats[k].scale /
                                          steps));
        json_array_append_new(layers, l);
    }
    json_object_set_new(o, "per_layer", layers);
    return o;
}

/* Writes root (and releases it) to path ('-': standard output). */
static nvl_status_t write_json(json_t *root, const char *path)
{
    int rc = strcmp(path, "-") == 0
                 ? nvl_json_dumpf(root, stdout, JSON_INDENT(2))
                 : nvl_json_dump_file(root, path, JSON_INDENT(2));
    if (strcmp(path, "-") == 0)
        fputc('\n', stdout);
    json_decref(root);
    if (rc != 0) {
        nvl_report("--json %s: cannot write: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

/* --kv-host / --weights-host as given: "auto" or the share. */
static json_t *host_share_json(double v)
{
    return v == NVL_HOST_AUTO ? json_string("auto") : json_real(v);
}

/* Every option the run was given, and its topology and NCCL settings. */
static json_t *inputs_json(const nvl_run_result_t *r)
{
    const nvl_run_args_t *a = r->args;
    json_t *in = json_object(), *sets = json_array();
    for (int i = 0; i < a->common.sets.n; i++)
        json_array_append_new(sets, json_string(a->common.sets.items[i]));
    json_object_set_new(in, "model", json_string(r->cfg->name));
    json_object_set_new(in, "topology", json_string(a->common.topo));
    json_object_set_new(in, "system", json_string(r->topo->name));
    json_object_set_new(in, "set", sets);
    json_object_set_new(in, "tp", json_integer(r->tp));
    json_object_set_new(in, "batch", json_integer(a->batch));
    json_object_set_new(in, "prompt_len", json_integer((json_int_t)r->prompt_len));
    json_object_set_new(in, "gen_len", json_integer((json_int_t)r->gen_len));
    json_object_set_new(in, "ctx", a->ctx ? json_integer(a->ctx) : json_null());
    json_object_set_new(in, "layers", json_integer(r->layers));
    json_object_set_new(in, "dtype", json_string(nvl_wdtype_name(a->engine.dtype)));
    json_object_set_new(in, "kv_dtype", json_string(nvl_wdtype_name(a->engine.kv_dtype)));
    json_object_set_new(in, "attn", json_string(nvl_attn_name(r->engine->cost.attn)));
    json_object_set_new(in, "stack", json_string(nvl_stack_name(a->engine.stack)));
    json_object_set_new(in, "overlap",
                        json_string(nvl_overlap_name(a->engine.overlap)));
    json_object_set_new(
        in, "a2a", json_string(nvl_family_name(&nvl_engine_a2a_family, a->engine.a2a_onesided)));
    json_object_set_new(in, "launch", json_string(nvl_launch_name(a->engine.launch)));
    if (a->engine.allreduce != NVL_AR_NCCL || a->engine.fuse_ar_norm) { /* NCCL's: as before */
        json_object_set_new(in, "allreduce", json_string(nvl_ar_impl_name(
                                                 (nvl_ar_impl_t)a->engine.allreduce)));
        json_object_set_new(in, "fuse_allreduce_norm",
                            json_boolean(a->engine.fuse_ar_norm));
    }
    json_object_set_new(in, "mode", json_string(r->mode == NVL_MODE_DATA
                                                    ? "data" : "timing"));
    json_object_set_new(in, "weights", json_string(r->weights));
    json_object_set_new(in, "seed", json_integer(a->seed));
    json_object_set_new(in, "route_skew", json_real(a->engine.route_skew));
    json_object_set_new(in, "ep", json_integer(a->engine.ep));
    json_object_set_new(in, "attn_parallel", json_string(a->engine.attn_dp ? "dp"
                                                                     : "tp"));
    const char *algo = r->tuner->algo_env, *proto = r->tuner->proto_env;
    json_object_set_new(in, "nccl_algo", *algo ? json_string(algo) : json_null());
    json_object_set_new(in, "nccl_proto", *proto ? json_string(proto) : json_null());

    if (r->topo->die_view) { /* absent in GPU mode: its reports unchanged */
        json_object_set_new(in, "rank_plays", json_string("die"));
        json_object_set_new(in, "gpus", json_integer(r->tp /
                                                     (int)r->topo->gpu.dies));
    }
    json_object_set_new(in, "kv_host", host_share_json(a->engine.kv_host));
    json_object_set_new(in, "weights_host", host_share_json(a->engine.weights_host));
    return in;
}

static json_t *memory_json(const nvl_run_result_t *r, const derived_t *d)
{
    const nvl_mem_plan_t *m = r->mem;
    json_t *o = json_object();
    json_object_set_new(o, "weights_gb", json_real(m->weights_bytes / 1e9));
    json_object_set_new(o, "kv_cache_gb", json_real(m->kv_bytes / 1e9));
    json_object_set_new(o, "activations_gb", json_real(m->act_bytes / 1e9));
    json_object_set_new(o, "reserve_gb", json_real(m->reserve_bytes / 1e9));
    json_object_set_new(o, "staging_gb", json_real(m->staging_bytes / 1e9));
    json_object_set_new(o, "hbm_need_gb", json_real(m->hbm_need_bytes / 1e9));
    json_object_set_new(o, "hbm_gb", json_real(m->hbm_bytes / 1e9));
    json_object_set_new(o, "kv_host_share", json_real(m->kv_host_share));
    json_object_set_new(o, "weights_host_share",
                        json_real(m->weights_host_share));
    json_object_set_new(o, "kv_host_gb",
                        json_real(m->kv_host_share * m->kv_bytes / 1e9));
    json_object_set_new(o, "weights_host_gb",
                        json_real(m->weights_host_share *
                                  m->layer_weights_bytes / 1e9));
    json_object_set_new(o, "host_gb", json_real(m->host_bytes / 1e9));
    json_object_set_new(o, "fits", json_boolean(m->fits));
    if (d != NULL) { /* the run's C2C traffic (none when it did not run) */
        json_object_set_new(o, "c2c_bytes_per_step", json_real(d->c2c_bytes));
        json_object_set_new(o, "c2c_ms_per_step", json_real(d->c2c_ms));
        json_object_set_new(o, "c2c_exposed_ms_per_step",
                            json_real(d->c2c_exposed_ms));
        json_object_set_new(o, "c2c_utilisation",
                            json_real(d->c2c_utilisation));
    }
    return o;
}

nvl_status_t nvl_run_report_json(const nvl_run_result_t *r, const char *path)
{
    derived_t d;
    derive(r, &d);
    const nvl_run_args_t *a = r->args;
    json_t *root = json_object(), *steps = json_array();
    for (size_t i = 1; i < r->n_passes; i++)
        json_array_append_new(steps, json_real(MS((double)(
                                         r->pass_end_ps[i] - r->pass_end_ps[i - 1]))));
    json_object_set_new(root, "inputs", inputs_json(r));
    json_object_set_new(root, "ttft_ms", json_real(d.ttft_ms));
    json_object_set_new(root, "tpot_ms", d.steps ? json_real(d.tpot_ms) : json_null());
    json_object_set_new(root, "tpot_ms_steps", steps);
    json_object_set_new(root, "e2e_ms", json_real(d.e2e_ms));
    json_object_set_new(root, "tokens_per_s", json_real(d.tokens_per_s));
    json_object_set_new(root, "tokens_per_s_per_gpu", json_real(d.tokens_per_s_per_gpu));
    json_object_set_new(root, "tokens_per_s_rack", json_real(d.tokens_per_s_rack));
    json_object_set_new(root, "replicas_per_system", json_integer(d.replicas));
    json_object_set_new(root, "decode_tflops_per_gpu", json_real(d.decode_tflops_per_gpu));
    json_object_set_new(root, "decode_hbm_tb_per_s_per_gpu", json_real(d.decode_hbm_tb_per_s));
    json_object_set_new(root, "decode_step_breakdown",
                        parts_json(d.dec, d.dec_total, 1.0, "ms"));
    double lt = 0;
    for (int p = 0; p < NVL_PART_COUNT; p++)
        lt += d.dec_layer[p];
    json_object_set_new(root, "decode_layer_breakdown",
                        parts_json(d.dec_layer, lt, 1e3, "us"));
    json_object_set_new(root, "prefill_breakdown",
                        parts_json(d.pre, d.pre_total, 1.0, "ms"));
    json_object_set_new(root, "slowest_rank",
                        json_pack("{s:i, s:f, s:f}", "rank", d.slowest,
                                  "busy_ms", d.busy_ms[0], "idle_ms", d.idle_ms[0]));
    json_object_set_new(root, "fastest_rank",
                        json_pack("{s:i, s:f, s:f}", "rank", d.fastest,
                                  "busy_ms", d.busy_ms[1], "idle_ms", d.idle_ms[1]));
    json_object_set_new(root, "shards",
                        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:i}",
                                  "q_heads_min", d.q_min, "q_heads_max", d.q_max,
                                  "intermediate_min", d.i_min,
                                  "intermediate_max", d.i_max, "vocab_min", d.v_min,
                                  "vocab_max", d.v_max, "attention_idle_ranks",
                                  d.attn_idle_ranks));
    json_object_set_new(root, "memory_per_gpu", memory_json(r, &d));
    json_object_set_new(root, "emulation",
                        json_pack("{s:f, s:f, s:f}", "wall_s", r->wall_s,
                                  "wall_s_per_decode_step", d.wall_per_step_s,
                                  "peak_rss_mb_max", d.rss_max / 1e6));
    json_object_set_new(root, "experts", moe_json(r, &d));
    nvl_cli_queries_t qs;
    run_queries(r, &d, &qs);
    json_object_set_new(root, "validation",
                        nvl_validation_json(r->validation, qs.q, qs.n));
    json_object_set_new(root, "overlap",
                        json_pack("{s:s, s:f, s:f, s:f, s:f}", "mode",
                                  nvl_overlap_name(a->engine.overlap),
                                  "comm_ms_per_step", d.ovl_comm_ms,
                                  "hidden_ms_per_step", d.ovl_hidden_ms,
                                  "exposed_ms_per_step",
                                  d.ovl_comm_ms - d.ovl_hidden_ms,
                                  "prefill_hidden_ms",
                                  d.ovl_prefill_hidden_ms));
    if (r->tokens != NULL) {
        json_t *toks = json_array();
        for (long b = 0; b < a->batch; b++) {
            json_t *row = json_array();
            for (uint64_t s = 0; s < r->gen_len; s++)
                json_array_append_new(row, json_integer(
                    r->tokens[(uint64_t)b * r->gen_len + s]));
            json_array_append_new(toks, row);
        }
        json_object_set_new(root, "new_tokens", toks);
    }
    return write_json(root, path);
}

nvl_status_t nvl_run_report_unfit_json(const nvl_run_result_t *r,
                                       const char *path)
{
    json_t *root = json_object();
    json_object_set_new(root, "inputs", inputs_json(r));
    json_object_set_new(root, "memory_per_gpu", memory_json(r, NULL));
    json_object_set_new(root, "error", json_string("does not fit"));
    return write_json(root, path);
}
