/* MPI test: nvlemu run's statistics table (src/cli/run_stats.c).  A
 * mixture of experts runs with its experts spread over every rank (uneven
 * at 3 and 5 ranks: query heads, experts, vocabulary and expert tokens
 * differ from rank to rank); each rank then reads its own numbers from the
 * engine here, independently of the table, and rank 0 checks that
 * nvl_run_stats_reduce gathered each of them unchanged and combined each
 * as the report needs (a mean taken as a sum or a maximum, or rank 0's
 * value taken as everyone's, fails), and the per-layer table's means. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/engine.h"
#include "nvlemu/runtime.h"
#include "run_stats.h"

static int rank_, size_, failures;

static void check_near(double got, double want, const char *what, int i)
{
    if (!(fabs(got - want) <= 1e-12 * fabs(want))) {
        fprintf(stderr, "%s[%d]: got %.17g, expected %.17g (%d ranks)\n",
                what, i, got, want, size_);
        failures++;
    }
}

/* The combination each row must have, as the report reads it: written
 * here, not taken from the table, so that a changed row fails. */
static const nvl_run_red_t want_red[NVL_RS_COUNT] = {
    [NVL_RS_PREFILL_MS] = NVL_RED_MEAN,
    [NVL_RS_DECODE_MS] = NVL_RED_MEAN,
    [NVL_RS_DECODE_LAYER_MS] = NVL_RED_MEAN,
    [NVL_RS_DECODE_IDLE_MS] = NVL_RED_MEAN,
    [NVL_RS_DECODE_BUSY_MS] = NVL_RED_MEAN,
    [NVL_RS_DECODE_FLOPS] = NVL_RED_MEAN,
    [NVL_RS_DECODE_HBM_BYTES] = NVL_RED_MEAN,
    [NVL_RS_Q_HEADS] = NVL_RED_MEAN,
    [NVL_RS_ATTN_IDLE] = NVL_RED_SUM,
    [NVL_RS_INTERMEDIATE] = NVL_RED_MEAN,
    [NVL_RS_VOCAB] = NVL_RED_MEAN,
    [NVL_RS_EXPERTS] = NVL_RED_MEAN,
    [NVL_RS_PEAK_RSS_BYTES] = NVL_RED_MAX,
    [NVL_RS_MOE_LAYERS] = NVL_RED_RANK0,
    [NVL_RS_EXPERT_PAIRS] = NVL_RED_MEAN,
    [NVL_RS_EXPERT_PAIRS_MAX] = NVL_RED_RANK0,
    [NVL_RS_EXPERT_PAIRS_MEAN] = NVL_RED_RANK0,
    [NVL_RS_DISPATCH_MS] = NVL_RED_MEAN,
    [NVL_RS_COMBINE_MS] = NVL_RED_MEAN,
    [NVL_RS_DISPATCH_BYTES] = NVL_RED_MEAN,
    [NVL_RS_COMBINE_BYTES] = NVL_RED_MEAN,
    [NVL_RS_COMBINE_WAIT_MS] = NVL_RED_MEAN,
    [NVL_RS_C2C_H2D_BYTES] = NVL_RED_MEAN,
    [NVL_RS_C2C_D2H_BYTES] = NVL_RED_MEAN,
    [NVL_RS_C2C_H2D_MS] = NVL_RED_MEAN,
    [NVL_RS_DISPATCH_ALT_MS] = NVL_RED_MEAN,
    [NVL_RS_COMBINE_ALT_MS] = NVL_RED_MEAN,
    [NVL_RS_A2A_ALT_USABLE] = NVL_RED_RANK0,
    [NVL_RS_OVERLAP_COMM_MS] = NVL_RED_MEAN,
    [NVL_RS_OVERLAP_HIDDEN_MS] = NVL_RED_MEAN,
    [NVL_RS_PREFILL_HIDDEN_MS] = NVL_RED_MEAN,
};

/* This rank's value i of a row in the report's unit, read from the engine
 * directly (NAN: the process's peak RSS, which moves; checked against
 * the gathered values). */
static double own(const nvl_engine_t *e, nvl_run_stat_id_t id, int i)
{
    size_t n;
    const nvl_pass_stats_t *p = nvl_engine_passes(e, &n);
    const nvl_shard_t *sh = nvl_engine_shard(e);
    double steps = n > 1 ? (double)(n - 1) : 1;
    double layers = nvl_engine_layers(e);
    double moe = p[0].moe_layers * steps, ms = 1e9;
    double d = 0; /* decode: summed over passes 1.. */
    for (size_t k = 1; k < n; k++) {
        const nvl_pass_stats_t *q = &p[k];
        double idle = (double)q->part_ps[NVL_PART_WAIT] +
                      (double)q->part_ps[NVL_PART_LAUNCH] +
                      (double)q->part_ps[NVL_PART_C2C], all = 0;
        for (int j = 0; j < NVL_PART_COUNT; j++)
            all += (double)q->part_ps[j];
        switch (id) {
        case NVL_RS_DECODE_MS: d += (double)q->part_ps[i]; break;
        case NVL_RS_DECODE_LAYER_MS: d += (double)q->layers_part_ps[i]; break;
        case NVL_RS_DECODE_IDLE_MS: d += idle; break;
        case NVL_RS_DECODE_BUSY_MS: d += all - idle; break;
        case NVL_RS_DECODE_FLOPS: d += q->flops; break;
        case NVL_RS_DECODE_HBM_BYTES: d += q->hbm_bytes; break;
        case NVL_RS_EXPERT_PAIRS: d += q->expert_pairs; break;
        case NVL_RS_EXPERT_PAIRS_MAX: d += q->expert_pairs_max; break;
        case NVL_RS_EXPERT_PAIRS_MEAN: d += q->expert_pairs_mean; break;
        case NVL_RS_DISPATCH_MS: d += (double)q->dispatch_ps; break;
        case NVL_RS_COMBINE_MS: d += (double)q->combine_ps; break;
        case NVL_RS_DISPATCH_BYTES: d += q->dispatch_bytes; break;
        case NVL_RS_COMBINE_BYTES: d += q->combine_bytes; break;
        case NVL_RS_COMBINE_WAIT_MS: d += (double)q->combine_wait_ps; break;
        case NVL_RS_C2C_H2D_BYTES: d += q->c2c_h2d_bytes; break;
        case NVL_RS_C2C_D2H_BYTES: d += q->c2c_d2h_bytes; break;
        case NVL_RS_C2C_H2D_MS: d += (double)q->c2c_h2d_busy_ps; break;
        case NVL_RS_DISPATCH_ALT_MS: d += (double)q->dispatch_alt_ps; break;
        case NVL_RS_COMBINE_ALT_MS: d += (double)q->combine_alt_ps; break;
        case NVL_RS_OVERLAP_COMM_MS: d += (double)q->overlap_comm_ps; break;
        case NVL_RS_OVERLAP_HIDDEN_MS:
            d += (double)q->overlap_hidden_ps;
            break;
        default: break;
        }
    }
    switch (id) {
    case NVL_RS_PREFILL_MS: return (double)p[0].part_ps[i] / ms;
    case NVL_RS_DECODE_MS:
    case NVL_RS_DECODE_IDLE_MS:
    case NVL_RS_DECODE_BUSY_MS:
    case NVL_RS_COMBINE_WAIT_MS:
    case NVL_RS_C2C_H2D_MS:
    case NVL_RS_OVERLAP_COMM_MS:
    case NVL_RS_OVERLAP_HIDDEN_MS: return d / ms / steps;
    case NVL_RS_PREFILL_HIDDEN_MS: return (double)p[0].overlap_hidden_ps / ms;
    case NVL_RS_A2A_ALT_USABLE: return n > 0 && p[n - 1].a2a_alt_usable;
    case NVL_RS_C2C_H2D_BYTES:
    case NVL_RS_C2C_D2H_BYTES: return d / steps;
    case NVL_RS_DECODE_LAYER_MS: return d / ms / steps / layers;
    case NVL_RS_DISPATCH_MS:
    case NVL_RS_COMBINE_MS:
    case NVL_RS_DISPATCH_ALT_MS:
    case NVL_RS_COMBINE_ALT_MS: return d / ms / moe;
    case NVL_RS_EXPERT_PAIRS:
    case NVL_RS_EXPERT_PAIRS_MAX:
    case NVL_RS_EXPERT_PAIRS_MEAN:
    case NVL_RS_DISPATCH_BYTES:
    case NVL_RS_COMBINE_BYTES: return d / moe;
    case NVL_RS_Q_HEADS: return sh->q_heads.count;
    case NVL_RS_ATTN_IDLE: return sh->q_heads.count == 0;
    case NVL_RS_INTERMEDIATE: return sh->intermediate.count;
    case NVL_RS_VOCAB: return sh->vocab.count;
    case NVL_RS_EXPERTS: return sh->experts.count;
    case NVL_RS_PEAK_RSS_BYTES: return NAN;
    case NVL_RS_MOE_LAYERS: return p[0].moe_layers;
    default: return d;
    }
}

/* Every row's values, rank-major, as this rank reads them. */
static double *own_all(const nvl_engine_t *e, int *width_out)
{
    int w = 0;
    for (int r = 0; r < NVL_RS_COUNT; r++)
        w += nvl_run_stats[r].width;
    double *v = malloc((size_t)w * sizeof *v);
    if (v == NULL)
        nvl_runtime_abort(1);
    for (int r = 0, s = 0; r < NVL_RS_COUNT; r++)
        for (int i = 0; i < nvl_run_stats[r].width; i++)
            v[s++] = own(e, (nvl_run_stat_id_t)r, i);
    *width_out = w;
    return v;
}

static void check_rows(const nvl_run_totals_t *t, const double *all, int w)
{
    int uneven = 0;
    for (int r = 0, s = 0; r < NVL_RS_COUNT; r++) {
        const char *name = nvl_run_stats[r].name;
        if (nvl_run_stats[r].red != want_red[r]) {
            fprintf(stderr, "%s: combined as %d, the report needs %d\n",
                    name, (int)nvl_run_stats[r].red, (int)want_red[r]);
            failures++;
        }
        for (int i = 0; i < nvl_run_stats[r].width; i++, s++) {
            /* value 0 of a row: as gathered (checked against the rank's
               own), so that ties fall as the table's; the others: own */
            double sum = 0, lo = INFINITY, hi = -INFINITY, first = 0;
            int lo_k = 0, hi_k = 0;
            for (int k = 0; k < size_; k++) {
                double v = all[(size_t)k * w + s];
                if (i == 0) {
                    double g = nvl_run_stat_at(t, (nvl_run_stat_id_t)r, k);
                    if (!isnan(v))
                        check_near(g, v, name, k);
                    v = g;
                }
                if (k == 0)
                    first = v;
                sum += v;
                if (v < lo)
                    lo = v, lo_k = k;
                if (v > hi)
                    hi = v, hi_k = k;
            }
            double want = want_red[r] == NVL_RED_MEAN  ? sum / size_
                          : want_red[r] == NVL_RED_SUM ? sum
                          : want_red[r] == NVL_RED_MAX ? hi
                                                       : first;
            check_near(nvl_run_stat(t, (nvl_run_stat_id_t)r, i), want, name,
                       i);
            if (i == 0) {
                check_near(nvl_run_stat_min(t, (nvl_run_stat_id_t)r), lo,
                           name, -1);
                check_near(nvl_run_stat_max(t, (nvl_run_stat_id_t)r), hi,
                           name, -2);
                if (nvl_run_stat_argmin(t, (nvl_run_stat_id_t)r) != lo_k ||
                    nvl_run_stat_argmax(t, (nvl_run_stat_id_t)r) != hi_k) {
                    fprintf(stderr, "%s: least/most on ranks %d/%d, "
                            "expected %d/%d\n", name,
                            nvl_run_stat_argmin(t, (nvl_run_stat_id_t)r),
                            nvl_run_stat_argmax(t, (nvl_run_stat_id_t)r),
                            lo_k, hi_k);
                    failures++;
                }
                uneven += lo != hi;
            }
        }
    }
    /* the run must tell mean from max from rank 0's: ranks differ */
    if (uneven < 5) {
        fprintf(stderr, "only %d rows differ between ranks\n", uneven);
        failures++;
    }
}

int main(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK || argc < 3)
        return 1;
    rank_ = rt.rank;
    size_ = rt.size;
    nvl_model_config_t cfg;
    nvl_topo_t *topo;
    nvl_vclock_t clock = {0};
    nvl_comm_t *comm;
    nvl_engine_t *e;
    if (nvl_model_config_load(argv[1], &cfg) != NVL_OK ||
        nvl_topo_load(argv[2], &topo) != NVL_OK ||
        nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &comm) != NVL_OK)
        nvl_runtime_abort(1);
    nvl_engine_opts_t o;
    nvl_engine_opts_default(&o, topo);
    o.mode = NVL_MODE_TIMING;
    o.place.ep = size_;
    o.route_skew = 1.0;
    enum { BATCH = 4, LEN = 8, NEW = 4 };
    int lens[BATCH] = {LEN, LEN, LEN, LEN};
    int32_t out[BATCH * NEW];
    if (nvl_engine_create(&cfg, &o, comm, &e) != NVL_OK ||
        nvl_engine_generate(e, NULL, lens, BATCH, NEW, out, NULL) != NVL_OK)
        nvl_runtime_abort(1);
    nvl_run_totals_t t;
    if (nvl_run_stats_reduce(e, MPI_COMM_WORLD, &t) != NVL_OK)
        nvl_runtime_abort(1);
    int w;
    double *mine = own_all(e, &w);
    double *all = rank_ == 0 ? malloc((size_t)size_ * w * sizeof *all) : NULL;
    uint32_t nl = nvl_engine_layers(e);
    size_t nk = nvl_run_n_layer_stats;
    double *lmine = malloc(nl * nk * sizeof *lmine);
    double *lall = rank_ == 0 ? malloc(size_ * nl * nk * sizeof *lall) : NULL;
    if ((rank_ == 0 && (all == NULL || lall == NULL)) || lmine == NULL)
        nvl_runtime_abort(1);
    const nvl_moe_layer_stats_t *ls = nvl_engine_moe_layer_stats(e);
    for (uint32_t l = 0; l < nl; l++)
        for (size_t k = 0; k < nk; k++)
            lmine[l * nk + k] = *(const double *)(
                (const char *)&ls[l] + nvl_run_layer_stats[k].offset);
    MPI_Gather(mine, w, MPI_DOUBLE, all, w, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(lmine, (int)(nl * nk), MPI_DOUBLE, lall, (int)(nl * nk),
               MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank_ == 0) {
        check_rows(&t, all, w);
        /* per layer: the mean rank's */
        for (uint32_t l = 0; l < nl; l++)
            for (size_t k = 0; k < nk; k++) {
                double sum = 0;
                for (int r = 0; r < size_; r++)
                    sum += lall[((size_t)r * nl + l) * nk + k];
                check_near(nvl_run_layer_stat(&t, l, k), sum / size_,
                           nvl_run_layer_stats[k].key, (int)l);
            }
        printf("run statistics at %d ranks: %s\n", size_,
               failures ? "FAILED" : "ok");
    }
    int bad = failures, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    free(mine);
    free(all);
    free(lmine);
    free(lall);
    nvl_run_totals_free(&t);
    nvl_engine_free(e);
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
    nvl_runtime_finalize();
    return any ? 1 : 0;
}
