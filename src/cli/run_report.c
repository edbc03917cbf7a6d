/* nvlemu run's readable report, from the derived numbers (run_report.h);
 * no MPI here. */
#include <stddef.h>
#include <stdio.h>

#include "nvlemu/runtime.h"
#include "run_report.h"

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

static void moe_text(const nvl_run_result_t *r, const nvl_run_derived_t *d,
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
                 "layer(s)\n", a->engine.ep, r->pipe.tp / a->engine.ep, STAT(NVL_RS_MOE_LAYERS, 0));
    if (d->steps == 0 || STAT(NVL_RS_MOE_LAYERS, 0) == 0)
        return;
    bool agrs = a->engine.attn_dp && a->engine.ep_comm != NVL_EP_COMM_ALLTOALL;
    if (agrs)
        fprintf(out, "  allgather + reduce-scatter per MoE layer (decode, "
                     "--ep-comm allgather): allgather %.4f ms, %.1f KB sent; "
                     "reduce-scatter %.4f ms, %.1f KB sent (mean rank)\n",
                d->dispatch_ms, d->dispatch_bytes / 1e3, d->combine_ms,
                d->combine_bytes / 1e3);
    else if (a->engine.ep > 1 || a->engine.attn_dp) {
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
static void memory_text(const nvl_run_result_t *r, const nvl_run_derived_t *d,
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

/* The header: the run, its inputs, what-ifs, shards, memory and (data
 * mode, small batches) the tokens. */
static void header_text(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                        FILE *out)
{
    const nvl_run_args_t *a = r->args;
    nvl_runtime_print_header(out);
    char place[128], weights[160];
    nvl_cli_placement_name(r->tp, a->engine.ep, a->engine.attn_dp, sizeof place, place);
    nvl_cli_weights_name(r->cfg, &a->engine, weights, sizeof weights);
    if (r->pipe.stages > 1)
        snprintf(place, sizeof place, "PP %d x TP %d", r->pipe.stages,
                 r->pipe.tp);
    fprintf(out, "# nvlemu run: %s (%u of %u layers) on %s, %s, %s mode, "
                 "weights: %s\n", r->cfg->name, r->layers, r->cfg->layers,
            r->topo->name, place,
            r->mode == NVL_MODE_DATA ? "data" : "timing", r->weights);
    if (r->replicas > 1)
        fprintf(out, "# --tp: %d replicas of these %d ranks (ranks 0-%d "
                     "the first), data-parallel copies that never talk; the "
                     "figures are the first's, the replicas' pass ends %s "
                     "(largest difference %.3f us)\n", r->replicas, r->tp,
                r->tp - 1, r->replica_spread_ps == 0 ? "equal" : "differ",
                (double)r->replica_spread_ps / 1e6);
    if (r->topo->die_view)
        fprintf(out, "# --rank-plays die: each rank plays one of the %u dies "
                     "of a GPU package, %d ranks on %d GPUs; per-GPU "
                     "numbers below are per die except tokens/s per GPU\n",
                r->topo->gpu.dies, r->tp, r->tp / (int)r->topo->gpu.dies);
    fprintf(out, "# batch %ld, prompt %llu tokens, %llu new tokens per "
                 "sequence%s; weights %s, KV %s, attention %s, stack %s, "
                 "launch %s, overlap %s\n", a->batch,
            (unsigned long long)r->prompt_len, (unsigned long long)r->gen_len,
            !a->ctx ? ""
            : r->pipe.stages > 1 ? " (--ctx: a steady-state decode step "
                                   "after one that fills the pipeline)"
                                 : " (--ctx: one steady-state decode step)",
            weights, nvl_wdtype_name(a->engine.kv_dtype),
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
            per_rank(d->q_min, d->q_max, q, sizeof q), r->cfg->q_heads,
            per_rank(d->i_min, d->i_max, mlp, sizeof mlp), r->cfg->intermediate,
            per_rank(d->v_min, d->v_max, voc, sizeof voc), r->cfg->vocab);
    if (d->attn_idle_ranks > 0)
        fprintf(out, "; %d rank(s) idle in attention", d->attn_idle_ranks);
    memory_text(r, d, out);
    nvl_run_gemm_text(r, d, out);
    if (r->tokens != NULL && a->batch <= 4) {
        for (long b = 0; b < a->batch; b++) {
            fprintf(out, "# sequence %ld tokens:", b);
            for (uint64_t s = 0; s < r->gen_len && s < 16; s++)
                fprintf(out, " %d", r->tokens[(uint64_t)b * r->gen_len + s]);
            fprintf(out, "%s\n", r->gen_len > 16 ? " ..." : "");
        }
    }
}

/* The decode steps: TPOT, throughput, and where a step's time went. */
static void decode_text(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                        FILE *out)
{
    const nvl_run_args_t *a = r->args;
    fprintf(out, "TPOT        %10.3f ms   mean of %zu decode step(s); "
                 "min %.3f, max %.3f\n", d->tpot_ms, d->steps,
            d->tpot_min_ms, d->tpot_max_ms);
    if (d->steps <= 8) {
        fprintf(out, "  per step (ms):");
        for (size_t i = 1; i < r->n_passes; i++)
            fprintf(out, " %.3f", MS((double)(r->pass_end_ps[i] -
                                              r->pass_end_ps[i - 1])));
        fprintf(out, "\n");
    }
    if (r->topo->die_view)
        fprintf(out, "throughput  %10.1f tokens/s for these %d dies (%d "
                     "GPUs), %.1f per GPU\n", d->tokens_per_s, r->tp,
                r->tp / (int)r->topo->gpu.dies, d->tokens_per_s_per_gpu);
    else
        fprintf(out, "throughput  %10.1f tokens/s for these %d GPUs, "
                     "%.1f per GPU\n", d->tokens_per_s, r->tp,
                d->tokens_per_s_per_gpu);
    fprintf(out, "rack        %10.1f tokens/s with %d group(s) of %d "
                 "on the %u GPUs\n", d->tokens_per_s_rack, d->replicas,
            r->tp, r->topo->gpus);
    if (r->replicas > 1)
        fprintf(out, "job         %10.1f tokens/s from its %d replicas\n",
                d->tokens_per_s * r->replicas, r->replicas);
    fprintf(out, "decode      %10.2f TFLOP/s and %.2f TB/s of HBM per "
                 "GPU\n", d->decode_tflops_per_gpu, d->decode_hbm_tb_per_s);
    breakdown_text(out, "decode step (mean over steps and ranks)",
                   d->dec, d->dec_total, "ms", 1.0);
    char t[64];
    snprintf(t, sizeof t, "per layer, decode (mean of %u)", r->layers);
    double lt = 0;
    for (int p = 0; p < NVL_PART_COUNT; p++)
        lt += d->dec_layer[p];
    breakdown_text(out, t, d->dec_layer, lt, "us", 1e3);
    fprintf(out, "  slowest rank %d: busy %.3f ms, idle %.3f ms per "
                 "step; fastest rank %d: busy %.3f ms, idle %.3f ms\n",
            d->slowest, d->busy_ms[0], d->idle_ms[0], d->fastest,
            d->busy_ms[1], d->idle_ms[1]);
    if (a->engine.overlap != NVL_OVERLAP_NONE)
        fprintf(out, "  overlap (%s): communication stream %.3f ms per "
                     "step, %.3f ms of it hidden under the GEMM chunks, "
                     "%.3f ms exposed (in collective)\n",
                nvl_overlap_name(a->engine.overlap), d->ovl_comm_ms,
                d->ovl_hidden_ms, d->ovl_comm_ms - d->ovl_hidden_ms);
}

void nvl_run_report_text(const nvl_run_result_t *r, FILE *out)
{
    nvl_run_derived_t d;
    nvl_run_derive(r, &d);
    header_text(r, &d, out);
    fprintf(out, "\nTTFT        %10.3f ms   prefill of %ld x %llu tokens\n",
            d.ttft_ms, r->args->batch, (unsigned long long)r->prompt_len);
    if (d.steps > 0)
        decode_text(r, &d, out);
    moe_text(r, &d, out);
    nvl_run_pipe_text(r, &d, out);
    breakdown_text(out, "prefill (mean over ranks)", d.pre, d.pre_total, "ms",
                   1.0);
    fprintf(out, "\n# emulation: %.2f s wall, %.4f s per decode step, peak "
                 "RSS %.1f MB per rank (largest)\n", r->wall_s,
            d.wall_per_step_s, d.rss_max / 1e6);
    nvl_cli_queries_t qs;
    nvl_run_queries(r, &d, &qs);
    nvl_validation_print(r->validation, qs.q, qs.n, out);
}

