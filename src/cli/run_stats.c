/* The statistics table of `nvlemu run` and its one cross-rank reduction. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "nvlemu/status.h"
#include "run_stats.h"

#define PASS(f) NVL_SRC_DECODE, offsetof(nvl_pass_stats_t, f)
#define SHARD(f) NVL_SRC_SHARD, offsetof(nvl_shard_t, f)

/* Passes per step: one per microbatch of a pipeline (the first group the
 * prefill), else 1. */
static size_t pass_group(const nvl_engine_t *e)
{
    nvl_engine_pipe_t pp;
    nvl_engine_pipeline(e, &pp);
    return pp.microbatches > 1 ? (size_t)pp.microbatches : 1;
}

/* The first pass of the decode steps the statistics cover: after the
 * prefill; with a pipeline and two decode steps or more, after the first
 * decode step too, which fills the pipeline (its first microbatches wait
 * for the last ones' prefill: the prefill's bubble, not a step's). */
static size_t decode_from(const nvl_engine_t *e)
{
    size_t n, g = pass_group(e);
    nvl_engine_passes(e, &n);
    return g > 1 && n / g >= 3 ? 2 * g : g;
}

static double decode_part_ps(const nvl_engine_t *e, int part)
{
    size_t n;
    const nvl_pass_stats_t *p = nvl_engine_passes(e, &n);
    double s = 0;
    for (size_t i = decode_from(e); i < n; i++)
        s += (double)p[i].part_ps[part];
    return s;
}

/* Decode steps counted (at least 1: the divisor of a per-step number). */
static double steps(const nvl_engine_t *e)
{
    size_t n, g = pass_group(e), from = decode_from(e);
    nvl_engine_passes(e, &n);
    return n > from ? (double)((n - from) / g) : 1;
}

/* Per decode step, in ms, as the report has always summed them: each
 * part's time converted, then added. */
static double idle_ms(const nvl_engine_t *e, int i)
{
    (void)i;
    return (decode_part_ps(e, NVL_PART_WAIT) / 1e9 +
            decode_part_ps(e, NVL_PART_LAUNCH) / 1e9 +
            decode_part_ps(e, NVL_PART_C2C) / 1e9) / steps(e);
}

static double busy_ms(const nvl_engine_t *e, int i)
{
    (void)i;
    double all = 0;
    for (int p = 0; p < NVL_PART_COUNT; p++)
        all += decode_part_ps(e, p) / 1e9 / steps(e);
    return all - idle_ms(e, 0);
}

static double attn_idle(const nvl_engine_t *e, int i)
{
    (void)i;
    return nvl_engine_shard(e)->q_heads.count == 0;
}

/* Whether the other all-to-all implementation could run (the last
 * pass's answer; the same on every rank). */
static double a2a_alt_usable(const nvl_engine_t *e, int i)
{
    (void)i;
    size_t n;
    const nvl_pass_stats_t *p = nvl_engine_passes(e, &n);
    return n > 0 && p[n - 1].a2a_alt_usable;
}

static double peak_rss_bytes(const nvl_engine_t *e, int i)
{
    (void)e, (void)i;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss * 1024.0; /* Linux: kilobytes */
}

const nvl_run_stat_t nvl_run_stats[NVL_RS_COUNT] = {
    [NVL_RS_PREFILL_MS] = {"prefill_ms", NVL_SRC_PREFILL,
                           offsetof(nvl_pass_stats_t, part_ps), NVL_I64,
                           NVL_PART_COUNT, NULL, NVL_RED_MEAN, "ms",
                           "prefill_breakdown", NVL_PER_MS},
    [NVL_RS_DECODE_MS] = {"decode_ms", PASS(part_ps), NVL_I64,
                          NVL_PART_COUNT, NULL, NVL_RED_MEAN,
                          "ms per decode step", "decode_step_breakdown",
                          NVL_PER_MS_STEP},
    [NVL_RS_DECODE_LAYER_MS] = {"decode_layer_ms", PASS(layers_part_ps),
                                 NVL_I64, NVL_PART_COUNT, NULL,
                                 NVL_RED_MEAN, "ms per decode step and layer",
                                 "decode_layer_breakdown",
                                 NVL_PER_MS_STEP_LAYER},
    [NVL_RS_DECODE_IDLE_MS] = {"decode_idle_ms", NVL_SRC_OTHER, 0, NVL_F64,
                               1, idle_ms, NVL_RED_MEAN, "ms per decode step",
                               "slowest_rank.idle_ms",
                               NVL_PER_NONE},
    [NVL_RS_DECODE_BUSY_MS] = {"decode_busy_ms", NVL_SRC_OTHER, 0, NVL_F64,
                               1, busy_ms, NVL_RED_MEAN, "ms per decode step",
                               "slowest_rank.busy_ms",
                               NVL_PER_NONE},
    [NVL_RS_DECODE_FLOPS] = {"decode_flops", PASS(flops), NVL_F64, 1, NULL,
                             NVL_RED_MEAN, "FLOP", "decode_tflops_per_gpu",
                             NVL_PER_NONE},
    [NVL_RS_DECODE_HBM_BYTES] = {"decode_hbm_bytes", PASS(hbm_bytes),
                                 NVL_F64, 1, NULL, NVL_RED_MEAN, "bytes",
                                 "decode_hbm_tb_per_s_per_gpu", NVL_PER_NONE},
    [NVL_RS_Q_HEADS] = {"q_heads", SHARD(q_heads), NVL_U32, 1, NULL,
                        NVL_RED_MEAN, "heads", "shards.q_heads",
                        NVL_PER_NONE},
    [NVL_RS_ATTN_IDLE] = {"attn_idle", NVL_SRC_OTHER, 0, NVL_F64, 1,
                          attn_idle, NVL_RED_SUM, "ranks",
                          "shards.attention_idle_ranks", NVL_PER_NONE},
    [NVL_RS_INTERMEDIATE] = {"intermediate", SHARD(intermediate), NVL_U32,
                             1, NULL, NVL_RED_MEAN, "rows",
                             "shards.intermediate", NVL_PER_NONE},
    [NVL_RS_VOCAB] = {"vocab", SHARD(vocab), NVL_U32, 1, NULL, NVL_RED_MEAN,
                      "rows", "shards.vocab", NVL_PER_NONE},
    [NVL_RS_EXPERTS] = {"experts", SHARD(experts), NVL_U32, 1, NULL,
                        NVL_RED_MEAN, "experts",
                        "experts.experts_per_rank", NVL_PER_NONE},
    [NVL_RS_PEAK_RSS_BYTES] = {"peak_rss_bytes", NVL_SRC_OTHER, 0, NVL_F64,
                               1, peak_rss_bytes, NVL_RED_MAX, "bytes",
                               "emulation.peak_rss_mb_max", NVL_PER_NONE},
    [NVL_RS_MOE_LAYERS] = {"moe_layers", NVL_SRC_PREFILL,
                           offsetof(nvl_pass_stats_t, moe_layers), NVL_U32,
                           1, NULL, NVL_RED_RANK0, "layers",
                           "experts.moe_layers", NVL_PER_NONE},
    [NVL_RS_EXPERT_PAIRS] = {"expert_pairs", PASS(expert_pairs), NVL_F64, 1,
                             NULL, NVL_RED_MEAN, "pairs per MoE layer",
                             "experts.most_loaded_rank_tokens_per_layer",
                             NVL_PER_MOE_LAYER},
    [NVL_RS_EXPERT_PAIRS_MAX] = {"expert_pairs_max", PASS(expert_pairs_max),
                                 NVL_F64, 1, NULL, NVL_RED_RANK0,
                                 "pairs per MoE layer",
                                 "experts.expert_tokens_per_layer_max",
                                 NVL_PER_MOE_LAYER},
    [NVL_RS_EXPERT_PAIRS_MEAN] = {"expert_pairs_mean",
                                  PASS(expert_pairs_mean), NVL_F64, 1, NULL,
                                  NVL_RED_RANK0, "pairs per MoE layer",
                                  "experts.expert_tokens_per_layer_mean",
                                  NVL_PER_MOE_LAYER},
    [NVL_RS_DISPATCH_MS] = {"dispatch_ms", PASS(dispatch_ps), NVL_I64, 1,
                            NULL, NVL_RED_MEAN, "ms per MoE layer",
                            "experts.dispatch_ms_per_layer",
                            NVL_PER_MS_MOE_LAYER},
    [NVL_RS_COMBINE_MS] = {"combine_ms", PASS(combine_ps), NVL_I64, 1, NULL,
                           NVL_RED_MEAN, "ms per MoE layer",
                           "experts.combine_ms_per_layer",
                           NVL_PER_MS_MOE_LAYER},
    [NVL_RS_DISPATCH_BYTES] = {"dispatch_bytes", PASS(dispatch_bytes),
                               NVL_F64, 1, NULL, NVL_RED_MEAN,
                               "bytes per MoE layer",
                               "experts.dispatch_bytes_per_layer",
                               NVL_PER_MOE_LAYER},
    [NVL_RS_COMBINE_BYTES] = {"combine_bytes", PASS(combine_bytes), NVL_F64,
                              1, NULL, NVL_RED_MEAN, "bytes per MoE layer",
                              "experts.combine_bytes_per_layer",
                              NVL_PER_MOE_LAYER},
    [NVL_RS_COMBINE_WAIT_MS] = {"combine_wait_ms", PASS(combine_wait_ps),
                                NVL_I64, 1, NULL, NVL_RED_MEAN,
                                "ms per decode step",
                                "experts.imbalance_wait_ms_per_step",
                                NVL_PER_MS_STEP},
    [NVL_RS_C2C_H2D_BYTES] = {"c2c_h2d_bytes", PASS(c2c_h2d_bytes), NVL_F64,
                              1, NULL, NVL_RED_MEAN, "bytes per decode step",
                              "memory_per_gpu.c2c_bytes_per_step",
                              NVL_PER_STEP},
    [NVL_RS_C2C_D2H_BYTES] = {"c2c_d2h_bytes", PASS(c2c_d2h_bytes), NVL_F64,
                              1, NULL, NVL_RED_MEAN, "bytes per decode step",
                              "memory_per_gpu.c2c_bytes_per_step",
                              NVL_PER_STEP},
    [NVL_RS_C2C_H2D_MS] = {"c2c_h2d_ms", PASS(c2c_h2d_busy_ps), NVL_I64, 1,
                           NULL, NVL_RED_MEAN, "ms per decode step",
                           "memory_per_gpu.c2c_ms_per_step", NVL_PER_MS_STEP},
    [NVL_RS_DISPATCH_ALT_MS] = {"dispatch_alt_ms", PASS(dispatch_alt_ps),
                                NVL_I64, 1, NULL, NVL_RED_MEAN,
                                "ms per MoE layer",
                                "experts.all_to_all.dispatch_ms_per_layer",
                                NVL_PER_MS_MOE_LAYER},
    [NVL_RS_COMBINE_ALT_MS] = {"combine_alt_ms", PASS(combine_alt_ps),
                               NVL_I64, 1, NULL, NVL_RED_MEAN,
                               "ms per MoE layer",
                               "experts.all_to_all.combine_ms_per_layer",
                               NVL_PER_MS_MOE_LAYER},
    [NVL_RS_A2A_ALT_USABLE] = {"a2a_alt_usable", NVL_SRC_OTHER, 0, NVL_F64,
                               1, a2a_alt_usable, NVL_RED_RANK0, "yes/no",
                               "experts.all_to_all", NVL_PER_NONE},
    [NVL_RS_OVERLAP_COMM_MS] = {"overlap_comm_ms", PASS(overlap_comm_ps),
                                NVL_I64, 1, NULL, NVL_RED_MEAN,
                                "ms per decode step",
                                "overlap.comm_ms_per_step", NVL_PER_MS_STEP},
    [NVL_RS_OVERLAP_HIDDEN_MS] = {"overlap_hidden_ms",
                                  PASS(overlap_hidden_ps), NVL_I64, 1, NULL,
                                  NVL_RED_MEAN, "ms per decode step",
                                  "overlap.hidden_ms_per_step",
                                  NVL_PER_MS_STEP},
    [NVL_RS_PREFILL_HIDDEN_MS] = {"prefill_hidden_ms", NVL_SRC_PREFILL,
                                  offsetof(nvl_pass_stats_t,
                                           overlap_hidden_ps),
                                  NVL_I64, 1, NULL, NVL_RED_MEAN, "ms",
                                  "overlap.prefill_hidden_ms", NVL_PER_MS},
    [NVL_RS_PP_BUBBLE_MS] = {"pp_bubble_ms", PASS(pp_bubble_ps), NVL_I64,
                             1, NULL, NVL_RED_MEAN, "ms per decode step",
                             "pipeline.bubble_ms_per_step", NVL_PER_MS_STEP},
    [NVL_RS_PP_XFER_MS] = {"pp_xfer_ms", PASS(pp_xfer_ps), NVL_I64, 1, NULL,
                           NVL_RED_MEAN, "ms per decode step",
                           "pipeline.send_recv_ms_per_step",
                           NVL_PER_MS_STEP},
    [NVL_RS_PP_BYTES] = {"pp_bytes", PASS(pp_bytes), NVL_F64, 1, NULL,
                         NVL_RED_MEAN, "bytes per decode step",
                         "pipeline.send_recv_bytes_per_step", NVL_PER_STEP},
    [NVL_RS_PP_PREFILL_BUBBLE_MS] = {"pp_prefill_bubble_ms", NVL_SRC_PREFILL,
                                     offsetof(nvl_pass_stats_t,
                                              pp_bubble_ps),
                                     NVL_I64, 1, NULL, NVL_RED_MEAN, "ms",
                                     "pipeline.prefill_bubble_ms",
                                     NVL_PER_MS},
    [NVL_RS_PP_PREFILL_XFER_MS] = {"pp_prefill_xfer_ms", NVL_SRC_PREFILL,
                                   offsetof(nvl_pass_stats_t, pp_xfer_ps),
                                   NVL_I64, 1, NULL, NVL_RED_MEAN, "ms",
                                   "pipeline.prefill_send_recv_ms",
                                   NVL_PER_MS},
};

#define LAYER(f, k, s) {k, offsetof(nvl_moe_layer_stats_t, f), s}
const nvl_run_layer_stat_t nvl_run_layer_stats[] = {
    LAYER(dispatch_ps, "dispatch_ms", 1e-9),
    LAYER(dispatch_bytes, "dispatch_bytes", 1),
    LAYER(combine_ps, "combine_ms", 1e-9),
    LAYER(combine_bytes, "combine_bytes", 1),
    LAYER(expert_pairs_max, "expert_tokens_max", 1),
    LAYER(expert_pairs_mean, "expert_tokens_mean", 1),
    LAYER(combine_wait_ps, "imbalance_wait_ms", 1e-9),
    LAYER(dispatch_alt_ps, "dispatch_alt_ms", 1e-9),
    LAYER(combine_alt_ps, "combine_alt_ms", 1e-9),
};
const size_t nvl_run_n_layer_stats =
    sizeof nvl_run_layer_stats / sizeof nvl_run_layer_stats[0];

const char *nvl_run_stat_key(nvl_run_stat_id_t id)
{
    const char *path = nvl_run_stats[id].json, *dot = strrchr(path, '.');
    return dot != NULL ? dot + 1 : path;
}

/* First value of row id among all the rows' values laid side by side. */
static int slot(nvl_run_stat_id_t id)
{
    int s = 0;
    for (int r = 0; r < (int)id; r++)
        s += nvl_run_stats[r].width;
    return s;
}

static double field(const void *base, const nvl_run_stat_t *st, int i)
{
    const char *p = (const char *)base + st->offset;
    switch (st->type) {
    case NVL_I64: return (double)((const int64_t *)p)[i];
    case NVL_U32: return (double)((const uint32_t *)p)[i];
    default:      return ((const double *)p)[i];
    }
}

/* Value i of row st on this rank, as read. */
static double read_field(const nvl_engine_t *e, const nvl_run_stat_t *st,
                       int i)
{
    size_t n;
    const nvl_pass_stats_t *p = nvl_engine_passes(e, &n);
    switch (st->src) {
    case NVL_SRC_PREFILL: {
        double s = 0;
        for (size_t k = 0; k < n && k < pass_group(e); k++)
            s += field(&p[k], st, i);
        return st->type == NVL_U32 && n > 0 ? field(&p[0], st, i) : s;
    }
    case NVL_SRC_DECODE: {
        double s = 0;
        for (size_t k = decode_from(e); k < n; k++)
            s += field(&p[k], st, i);
        return s;
    }
    case NVL_SRC_SHARD: {
        const char *sh = (const char *)nvl_engine_shard(e) + st->offset;
        return ((const nvl_range_t *)sh)->count;
    }
    default:
        return st->other(e, i);
    }
}

/* Value i of row st on this rank, in the row's unit (0 where the divisor
 * is). */
static double read_row(const nvl_engine_t *e, const nvl_run_stat_t *st,
                       int i)
{
    size_t n;
    const nvl_pass_stats_t *p = nvl_engine_passes(e, &n);
    double v = read_field(e, st, i);
    double layers = nvl_engine_layers(e) ? nvl_engine_layers(e) : 1;
    double moe = (n > 0 ? p[0].moe_layers : 0) * steps(e);
    switch (st->per) {
    case NVL_PER_NONE: return v;
    case NVL_PER_MS: return v / 1e9;
    case NVL_PER_MS_STEP: return v / 1e9 / steps(e);
    case NVL_PER_STEP: return v / steps(e);
    case NVL_PER_MS_STEP_LAYER: return v / 1e9 / steps(e) / layers;
    case NVL_PER_MS_MOE_LAYER: return moe > 0 ? v / 1e9 / moe : 0;
    case NVL_PER_MOE_LAYER: return moe > 0 ? v / moe : 0;
    }
    return v;
}

static void reduce_slots(nvl_run_totals_t *t, int width)
{
    for (int r = 0; r < NVL_RS_COUNT; r++) {
        const nvl_run_stat_t *st = &nvl_run_stats[r];
        for (int i = 0, s = slot((nvl_run_stat_id_t)r); i < st->width;
             i++, s++) {
            double sum = 0, mean = 0;
            t->min[s] = INFINITY;
            t->max[s] = -INFINITY;
            for (int k = 0; k < t->ranks; k++) {
                double v = t->value[(size_t)k * width + s];
                sum += v;
                mean += v / t->ranks; /* each rank's share */
                if (v < t->min[s])
                    t->min[s] = v, t->argmin[s] = k;
                if (v > t->max[s])
                    t->max[s] = v, t->argmax[s] = k;
            }
            t->red[s] = st->red == NVL_RED_MEAN  ? mean
                        : st->red == NVL_RED_SUM ? sum
                        : st->red == NVL_RED_MAX ? t->max[s]
                                                 : t->value[s];
        }
    }
}

/* With a pipeline, each stage runs its own MoE layers: the MoE layers
 * are the stages' sum (over each stage's first rank), and a per-MoE-layer
 * number the mean over every stage's layers (each rank weighted by its
 * stage's MoE layers; rank 0's rows over the stages' first ranks), not
 * stage 0's alone. */
static void reduce_stages(nvl_run_totals_t *t, int width,
                          const nvl_engine_pipe_t *pp)
{
    int ml = slot(NVL_RS_MOE_LAYERS);
    for (int r = 0; r < NVL_RS_COUNT && pp->stages > 1; r++) {
        const nvl_run_stat_t *st = &nvl_run_stats[r];
        bool per_layer = st->per == NVL_PER_MOE_LAYER ||
                         st->per == NVL_PER_MS_MOE_LAYER;
        if (!per_layer && r != NVL_RS_MOE_LAYERS)
            continue;
        bool leaders = st->red == NVL_RED_RANK0;
        for (int i = 0, s = slot((nvl_run_stat_id_t)r); i < st->width;
             i++, s++) {
            double sum = 0, w = 0;
            for (int k = 0; k < t->ranks; k++) {
                if (leaders && k % pp->tp != 0)
                    continue;
                double wk = t->value[(size_t)k * width + ml];
                double v = t->value[(size_t)k * width + s];
                sum += per_layer ? v * wk : v;
                w += wk;
            }
            if (!per_layer)
                t->red[s] = sum;
            else if (w > 0)
                t->red[s] = sum / w;
        }
    }
}

/* Every MoE layer's numbers, summed over the ranks on rank 0 then divided:
 * the mean rank's (of the ranks running the layer: a pipeline stage's). */
static nvl_status_t reduce_layers(const nvl_engine_t *e, MPI_Comm comm,
                                  int rank, nvl_run_totals_t *t)
{
    nvl_engine_pipe_t pp;
    nvl_engine_pipeline(e, &pp);
    uint32_t nl = pp.layers_total;
    size_t nk = nvl_run_n_layer_stats, n = (size_t)nl * nk + 1;
    const nvl_moe_layer_stats_t *ls = nvl_engine_moe_layer_stats(e);
    double *mine = calloc(n, sizeof *mine);
    double *sum = rank == 0 ? calloc(n, sizeof *sum) : NULL;
    if (mine == NULL || (rank == 0 && sum == NULL)) {
        free(mine);
        free(sum);
        nvl_report("out of memory for the report's %u layers", nl);
        return NVL_ERR_NOMEM;
    }
    for (uint32_t l = 0; l < pp.layer_count; l++)
        for (size_t k = 0; k < nk; k++)
            mine[(pp.layer_first + l) * nk + k] =
                *(const double *)((const char *)&ls[l] +
                                  nvl_run_layer_stats[k].offset);
    MPI_Reduce(mine, sum, (int)(n - 1), MPI_DOUBLE, MPI_SUM, 0, comm);
    free(mine);
    if (rank == 0) {
        for (size_t j = 0; j + 1 < n; j++)
            sum[j] /= pp.tp;
        t->layers = nl;
        t->layer = sum;
    }
    return NVL_OK;
}

nvl_status_t nvl_run_stats_reduce(const nvl_engine_t *e, MPI_Comm comm,
                                  nvl_run_totals_t *totals_out)
{
    int rank, ranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    int width = slot(NVL_RS_COUNT);
    nvl_run_totals_t t = {.ranks = ranks};
    double *mine = malloc((size_t)width * sizeof *mine);
    if (rank == 0) {
        t.value = malloc((size_t)ranks * width * sizeof *t.value);
        t.red = malloc((size_t)width * 3 * sizeof *t.red);
        t.argmin = malloc((size_t)width * 2 * sizeof *t.argmin);
    }
    if (mine == NULL ||
        (rank == 0 && (t.value == NULL || t.red == NULL || t.argmin == NULL))) {
        free(mine);
        nvl_run_totals_free(&t);
        nvl_report("out of memory for the report of %d ranks", ranks);
        return NVL_ERR_NOMEM;
    }
    for (int r = 0; r < NVL_RS_COUNT; r++)
        for (int i = 0; i < nvl_run_stats[r].width; i++)
            mine[slot((nvl_run_stat_id_t)r) + i] =
                read_row(e, &nvl_run_stats[r], i);
    MPI_Gather(mine, width, MPI_DOUBLE, t.value, width, MPI_DOUBLE, 0, comm);
    free(mine);
    if (rank == 0) {
        t.min = t.red + width;
        t.max = t.red + 2 * width;
        t.argmax = t.argmin + width;
        reduce_slots(&t, width);
        nvl_engine_pipe_t pp;
        nvl_engine_pipeline(e, &pp);
        reduce_stages(&t, width, &pp);
    }
    nvl_status_t st = reduce_layers(e, comm, rank, &t);
    if (st != NVL_OK) {
        nvl_run_totals_free(&t);
        return st;
    }
    *totals_out = t;
    return NVL_OK;
}

void nvl_run_totals_free(nvl_run_totals_t *t)
{
    free(t->value);
    free(t->red);
    free(t->argmin);
    free(t->layer);
    memset(t, 0, sizeof *t);
}

double nvl_run_stat(const nvl_run_totals_t *t, nvl_run_stat_id_t id, int i)
{
    return t->red[slot(id) + i];
}

double nvl_run_stat_min(const nvl_run_totals_t *t, nvl_run_stat_id_t id)
{
    return t->min[slot(id)];
}

double nvl_run_stat_max(const nvl_run_totals_t *t, nvl_run_stat_id_t id)
{
    return t->max[slot(id)];
}

int nvl_run_stat_argmin(const nvl_run_totals_t *t, nvl_run_stat_id_t id)
{
    return t->argmin[slot(id)];
}

int nvl_run_stat_argmax(const nvl_run_totals_t *t, nvl_run_stat_id_t id)
{
    return t->argmax[slot(id)];
}

double nvl_run_stat_at(const nvl_run_totals_t *t, nvl_run_stat_id_t id,
                       int rank)
{
    return t->value[(size_t)rank * slot(NVL_RS_COUNT) + slot(id)];
}

double nvl_run_layer_stat(const nvl_run_totals_t *t, uint32_t l, size_t k)
{
    return t->layer[(size_t)l * nvl_run_n_layer_stats + k];
}
