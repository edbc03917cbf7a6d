/* PyTorch's grouped GEMM kernels (torch._grouped_mm, torch._scaled_grouped_mm)
 * as --stack torch and compiled run them (cfg->torch_grouped) on SM90: the
 * FP8 kernel's tiles and clusters and the decode-shape kernels' latency
 * floor, which nvl_cost_grouped_matmul (cost.c) takes in place of its
 * generic tile and panel floor (include/nvlemu/cost.h; docs/cost-model.md,
 * "Mixture of experts"). */
#include <math.h>
#include <stdbool.h>

#include "cost_impl.h"

/* torch._scaled_grouped_mm's tile on Hopper (aten ScaledGroupMM.cu,
 * dispatch_fp8_grouped_gemm_on_tile_size), M = the rows / the groups:
 * 64 x 128 x 128 when M or N <= 128; 128 x 128 x 128 when two of M, N, K
 * >= 2,048; else 128 x 256 x 64, whose two slow-accumulation copies (256
 * registers a thread) spill: TORCH_FP8_SPILL_REL of the rate, fit by
 * scripts/calibration/fit-fp8-spill.py (docs/cost-model.md).  Every one
 * of them runs in 2 x 2 x 1 clusters (the file's Schedule::ClusterShape),
 * and CUTLASS's grouped tile scheduler gives each group whole clusters:
 * its row tiles and its column tiles each rounded up to a multiple of 2
 * (a Qwen3-30B-A3B TP 4 gate+up shard, N 384, takes four 128-column
 * tiles, a TP 8 one, N 192, two 256-column ones), and each tile runs
 * whole k blocks (K 96 or 192 of a 128- or 64-deep tile: 128, 192 or
 * 256).  The tensor cores work through the padded tiles: the rate is
 * scaled by the useful share of the padded N and K, the rows padded to a
 * cluster's (m_tile). */
#define TORCH_FP8_LARGE 2048
#define TORCH_FP8_SMALL 128
#define TORCH_FP8_SPILL_REL 0.35
#define TORCH_FP8_CLUSTER 2.0

/* torch's FP8 grouped kernel on SM90: FP8 weights on FP8 tensor cores,
 * torch's grouped GEMMs, a GPU without FP4 tensor cores. */
static bool torch_fp8_sm90(const nvl_cost_cfg_t *cfg, nvl_wdtype_t core)
{
    return core == NVL_WDT_FP8 && cfg->torch_grouped &&
           !nvl_cost_fp4_cores(&cfg->topo->gpu);
}

uint32_t nvl_cost_torch_fp8_tile(const nvl_cost_cfg_t *cfg, nvl_wdtype_t core,
                                 size_t groups, const uint64_t *m, uint64_t n,
                                 uint64_t k, double *rel_out)
{
    if (!torch_fp8_sm90(cfg, core) || groups == 0 || n == 0 || k == 0)
        return 0;
    double rows = nvl_cost_grouped_rows(groups, m);
    double M = floor(rows / (double)groups), N = (double)n, K = (double)k;
    double tile_m = 2 * NVL_GROUPED_TILE_M, tile_n = NVL_GROUPED_TILE_N,
           tile_k = NVL_GROUPED_TILE_N;
    int large = (M >= TORCH_FP8_LARGE) + (N >= TORCH_FP8_LARGE) +
                (K >= TORCH_FP8_LARGE);
    if (M <= TORCH_FP8_SMALL || N <= TORCH_FP8_SMALL) {
        tile_m = NVL_GROUPED_TILE_M;
    } else if (large < 2) {
        tile_n = 2 * NVL_GROUPED_TILE_N;
        tile_k = NVL_GROUPED_TILE_M;
        *rel_out = TORCH_FP8_SPILL_REL;
    }
    double n_pad = ceil(ceil(N / tile_n) / TORCH_FP8_CLUSTER) *
                   TORCH_FP8_CLUSTER * tile_n;
    *rel_out *= N / n_pad * (K / (ceil(K / tile_k) * tile_k));
    return (uint32_t)(TORCH_FP8_CLUSTER * tile_m);
}

/* torch's grouped kernels on SM90 at decode shapes, where the rows / the
 * groups or N is at most 128: CUTLASS's ptr-array Pingpong kernel, 64 x
 * 128 x 128 tiles, one CTA an SM, persistent.
 *   bf16  torch._grouped_mm (GroupMM.cu, dispatch_bf16_grouped_kernel_on_
 *         tile_size) in 2 x 1 x 1 clusters: the cluster's two CTAs take two
 *         row tiles of one 128-column weight panel and share its k-blocks
 *         by TMA multicast, each loading half; the persistent scheduler
 *         rounds a problem's row tiles up to whole clusters (1-128 rows:
 *         two CTA tiles a panel; the profiled kernel:
 *         tests/data/calibration/h200-grouped-decode/kernels.json).
 *   fp8   torch._scaled_grouped_mm (ScaledGroupMM.cu) in 2 x 2 x 1
 *         clusters: the row tiles as above and the column tiles rounded up
 *         to pairs too (grouped_tile), each CTA loading half its panel.
 * The body is at least (START + ceil(ctas / sm_count) (TILE +
 * half_panel_bytes / BYTES_PER_TRIP)) mem_latency: a start (tensor maps
 * written and fenced, the first problem read, the first loads), then per
 * tile the tensor-map switch and the CTA's half panel.  BF16's START,
 * TILE and BYTES_PER_TRIP fit by scripts/calibration/
 * fit-torch-grouped-decode.py to 26 of that folder's 70 rows; the rest,
 * the DEP8 rows, the H100's and the MoE step held out (docs/cost-model.md,
 * "Mixture of experts").  FP8's tile adds TORCH_FP8_SCALE_TRIPS, its
 * epilogue's scale loads (a ColBroadcast of the rows' scales and a
 * RowBroadcast of the columns': the group's scale pointers, then the
 * scales, a dependent round trip before the tile's output), and streams
 * at BF16's bytes a trip; its START (a 2 x 2 cluster's launch and
 * barriers) fit by scripts/calibration/fit-torch-fp8-grouped.py to the
 * Qwen3-30B-A3B uniform rows of tests/data/calibration/h100-moe/
 * grouped.csv at 1-128 rows an expert (48 rows); every other FP8 grouped
 * row is held out. */
#define TORCH_BF16_SMALL 128
#define TORCH_GROUPED_CLUSTER_M 2.0
#define TORCH_GROUPED_START_TRIPS 6.0
#define TORCH_GROUPED_TILE_TRIPS 1.5
#define TORCH_GROUPED_BYTES_PER_TRIP 25000.0
#define TORCH_FP8_START_TRIPS 13.5
#define TORCH_FP8_SCALE_TRIPS 1.0

double nvl_cost_torch_grouped_floor_s(const nvl_cost_cfg_t *cfg,
                                      nvl_wdtype_t dt, nvl_wdtype_t core,
                                      size_t groups, const uint64_t *m,
                                      uint64_t n, uint64_t k)
{
    const nvl_gpu_spec_t *g = &cfg->topo->gpu;
    bool fp8 = torch_fp8_sm90(cfg, core);
    if (!cfg->torch_grouped || groups == 0 || nvl_cost_fp4_cores(g) ||
        !(fp8 || (dt == NVL_WDT_BF16 && core == NVL_WDT_BF16)))
        return -1;
    double cluster_n = fp8 ? TORCH_FP8_CLUSTER : 1.0;
    double rows = 0, ctas = 0;
    for (size_t i = 0; i < groups; i++) {
        double tiles = ceil((double)m[i] / NVL_GROUPED_TILE_M);
        rows += (double)m[i];
        ctas += ceil(tiles / TORCH_GROUPED_CLUSTER_M) * TORCH_GROUPED_CLUSTER_M;
    }
    if (floor(rows / (double)groups) > TORCH_BF16_SMALL &&
        n > TORCH_BF16_SMALL)
        return -1;
    ctas *= ceil(ceil((double)n / NVL_GROUPED_TILE_N) / cluster_n) * cluster_n;
    double sms = g->sm_count ? (double)g->sm_count : 1.0;
    nvl_gemm_bytes_t pb = nvl_cost_weight_bytes(
        dt, n < NVL_GROUPED_TILE_N ? n : NVL_GROUPED_TILE_N, k,
        fp8 ? cfg->weight_scale_bytes : 0);
    double tile_trips = (fp8 ? TORCH_GROUPED_TILE_TRIPS + TORCH_FP8_SCALE_TRIPS
                             : TORCH_GROUPED_TILE_TRIPS) +
                        (pb.data_bytes + pb.scale_bytes) /
                            TORCH_GROUPED_CLUSTER_M /
                            TORCH_GROUPED_BYTES_PER_TRIP;
    double start = fp8 ? TORCH_FP8_START_TRIPS : TORCH_GROUPED_START_TRIPS;
    return (start + ceil(ctas / sms) * tile_trips) *
           (double)g->mem_latency_ps * 1e-12;
}
