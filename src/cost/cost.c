/* The compute cost model: one kernel's time on one GPU (formulas in
 * include/nvlemu/cost.h, reasoning and sources in docs/cost-model.md):
 * GEMMs dense and grouped, memory-bound kernels, norms; the attention
 * kernel is attention.c's. */
#include "nvlemu/cost.h"

#include <math.h>
#include <string.h>

#include "nvlemu/quant.h"

#include "cost_impl.h"

/* (Here rather than in gemm_lib.c, which then calls nothing of this
 * file.) */
nvl_status_t nvl_gemm_lib_check(const char *what, const nvl_cost_cfg_t *cfg)
{
    double rel;
    nvl_gemm_lib_t lib = nvl_gemm_lib_choose(cfg, cfg->weight_dtype, &rel);
    if (rel > 0)
        return NVL_OK;
    nvl_report("%s %s: the library has no %s GEMM kernel (docs/cost-model.md "
               "\"GEMM libraries\")", what, nvl_gemm_lib_name(lib),
               nvl_wdtype_name(cfg->weight_dtype));
    return NVL_ERR_INVALID;
}

double nvl_cost_overhead_s(const nvl_cost_cfg_t *cfg, int64_t ps)
{
    if (cfg->launch == NVL_LAUNCH_PERSISTENT) {
        int64_t floor_ps = cfg->topo->gpu.kernel_floor_ps;
        ps = ps > floor_ps ? ps - floor_ps : 0;
    }
    return (double)ps * 1e-12;
}

double nvl_cost_simple_fixed_s(const nvl_cost_cfg_t *cfg)
{
    return nvl_cost_overhead_s(cfg, cfg->topo->gpu.kernel_floor_ps) +
           (double)cfg->topo->gpu.mem_latency_ps * 1e-12;
}

double nvl_cost_hbm_rate(const nvl_cost_cfg_t *cfg)
{
    return nvl_topo_hbm_bw(cfg->topo, cfg->gpu) * cfg->topo->gpu.hbm_efficiency;
}

/* The rows of a dense GEMM's CTA tile at most: Hopper's WGMMA computes 64
 * rows a warpgroup and CUTLASS's SM90 TMA kernels run two consumer
 * warpgroups (a 128-row tile), Blackwell's 1-SM UMMA is 128 rows; cuBLAS's
 * kernels on an H200 take min(m, 64) rows at m <= 64 and 64-128 rows at
 * m = 128-256 (nvjet_sm90_tst_64x8, _64x32, _144x64, _144x128 in
 * tests/data/calibration/h200-narrow-gemm), narrowing the tile's columns
 * instead: more rows add no weight streams until a tile is full. */
#define NVL_DENSE_TILE_M 128.0
/* The K of a weight row one split-K part holds at least, in bytes: the
 * K loop's pipeline, 16 stages of a 128-byte K block (the TMA 128-byte
 * swizzle: 64 bf16 or 128 FP8 elements; nvjet_sm90_tst_64x8_64x16 and
 * nvjet_sm90_qqtst_64x8_128x16, the K block x stages of the split-K
 * kernels in h200-narrow-gemm); a shorter part never fills it. */
#define NVL_SPLIT_K_MIN_BYTES 2048.0

/* A dense GEMM as the split-K choice sees it: its shape, a weight row's
 * bytes (k_bytes), the tile's fixed work in steps of k, the tensor cores'
 * rate at the library's efficiency, the HBM rate, the width term's column
 * share (width), its cap (the SMs' share left) and exponent, the SMs. */
typedef struct {
    double m, n, k, k_bytes, k_pad, flops_per_s, hbm, width, cap, exp, sms;
} split_k_t;

/* The body of a dense GEMM (without the kernel overhead) at its best split
 * of the K loop into s parts, as cuBLAS's heuristics pick one
 * (docs/cost-model.md, "Split-K"): s x the CTAs stream weights at once, so
 * the width term sees s x width, up to its cap; s stops where the columns
 * fill the GPU, at one part per SM, and while each part holds a full
 * pipeline of K (NVL_SPLIT_K_MIN_BYTES of a weight row).  Each part pays
 * the tile's fixed work (s x k_pad steps of k in all) and writes its fp32
 * partial outputs (4 m n bytes) instead of the bf16 output (2 m n), and a
 * reduction kernel (a simple kernel: its fixed cost, then the s partials
 * read and the output written) follows.  s = 1 is the plain kernel. */
static double split_k_body_s(const nvl_cost_cfg_t *cfg, const split_k_t *p,
                             double flops, double bytes, uint32_t *parts_out)
{
    double out = 2.0 * p->m * p->n, best = 0;
    double s_max = p->width > 0 ? fmin(ceil(p->cap / p->width), p->sms) : 1;
    s_max = fmax(1.0, fmin(s_max, floor(p->k_bytes / NVL_SPLIT_K_MIN_BYTES)));
    for (double s = 1; s <= s_max; s++) {
        double part = s > 1 ? 2.0 * s * out : out;
        double t_c = flops / (p->flops_per_s * p->k / (p->k + s * p->k_pad));
        double e_w = pow(fmin(p->cap, s * p->width), p->exp);
        double t = fmax(t_c, (bytes - out + part) / (p->hbm * e_w));
        if (s > 1)
            t += nvl_cost_simple_fixed_s(cfg) + (part + out) / p->hbm;
        if (s == 1 || t < best) {
            best = t;
            *parts_out = (uint32_t)s;
        }
    }
    return best;
}

/* Matmuls of groups[i] = (m[i] rows) x n x k sharing one kernel: their
 * work, and the time of its body (without the kernel overhead).  The
 * groups' tiles fill the GPU together, so the width term e_m counts the
 * n ceil(m/64) output tiles of all of them (n ceil(m/128) for one
 * dense GEMM, whose K loop may be split: split_k_body_s); with m_tile > 0
 * the compute term counts each group's rows padded to whole tiles of
 * m_tile rows. */
/* What another kernel running beside a matmul holds (nvl_cost_matmul_
 * shared): SMs, and HBM bandwidth in bytes/s. */
typedef struct {
    uint32_t sms;
    double hbm_bytes_per_s;
} gpu_taken_t;

/* A grouped GEMM kernel's departures from the dense GEMM on the same
 * tensor cores (grouped_kernel below): its compute rate against the
 * dense one, and the fixed work of one output tile in steps of k where
 * it replaces the topology's (0: the dense kernel's). */
typedef struct {
    double rel;
    double tile_k_pad;
    /* rel is against the dense BF16 GEMM (cuBLAS at matmul_efficiency,
     * BF16's peak) whatever the weights' type: a kernel measured against
     * that one (vLLM's Triton fused_moe) */
    bool of_bf16_rate;
} grouped_kernel_t;

/* The width term's share of the weight columns streaming at once: TILES
 * (the columns of the GEMM's tiles), or for a dense GEMM of m rows (0: a
 * grouped one) whose library kernel takes one fixed tile
 * (nvl_gemm_lib_fixed_tile_n, its columns into *tile_n_out, else 0) its
 * CTAs, each at most an SM's share (matmul_cols_per_sm); such a kernel
 * does not split its K loop. */
static double stream_width(const nvl_cost_cfg_t *cfg, nvl_wdtype_t dt,
                           uint64_t m, double n, double tiles,
                           double *tile_n_out)
{
    const nvl_gpu_spec_t *g = &cfg->topo->gpu;
    double cols = (double)g->matmul_cols_per_sm;
    double tile_n = m > 0 ? nvl_gemm_lib_fixed_tile_n(cfg, dt) : 0;
    if (tile_n > 0)
        tiles = ceil((double)m / NVL_DENSE_TILE_M) * ceil(n / tile_n) *
                fmin(tile_n, cols);
    *tile_n_out = tile_n;
    return tiles / ((double)g->sm_count * cols);
}

/* A short wave keeps the SM clock at its boost where a full GPU of tensor
 * work runs at the power cap's: one H200 replaying cuBLASLt's fixed 128 x
 * 128 FP8 tile (torch._scaled_mm, a scale per row and per column) on 8 and
 * 32 CTAs of K = 16,384 held 1,980 MHz at 245-508 W, each CTA at 0.96 and
 * 0.92 of an SM's FP8 peak after the tile's k_pad (0.94 their mean), where
 * 8192^3 ran at 1,350 MHz at the 700 W cap, 0.62 of the GPU's peak
 * (tests/data/calibration/h200-gemm-clocks, its README). */
#define NVL_WAVE_SM_EFFICIENCY 0.94

/* The compute time of a fixed-tile kernel (tile_n columns, the tile's
 * rows padded) for m rows: its CTAs in waves of one an SM, each at its
 * SM's share of the rate at NVL_WAVE_SM_EFFICIENCY, unless a wave's CTAs
 * together pass the GPU's rate at the matmul efficiency e_c (the power
 * cap holds the GPU's tensor work, not each SM's). */
static double fixed_tile_waves_s(double m, double n, double k, double tile_n,
                                 double sms, double rate, double e_c,
                                 double k_share)
{
    double ctas = ceil(m / NVL_DENSE_TILE_M) * ceil(n / tile_n);
    double tile_flops = 2.0 * NVL_DENSE_TILE_M * tile_n * k;
    double t_sm = tile_flops / (rate / sms * NVL_WAVE_SM_EFFICIENCY * k_share);
    double t_gpu = tile_flops / (rate * e_c);
    double full = floor(ctas / sms), rest = ctas - full * sms;
    return full * fmax(t_sm, sms * t_gpu) +
           (rest > 0 ? fmax(t_sm, rest * t_gpu) : 0.0);
}

/* A tile's fixed work in steps of k: a grouped kernel's own where it
 * has one, else FP8's where the topology gives it (one k block holds
 * twice BF16's elements at twice the rate, so the same fixed time is
 * more steps of k), else the topology's. */
static double tile_k_pad(const nvl_gpu_spec_t *g, nvl_wdtype_t in_dt,
                         nvl_wdtype_t core, const grouped_kernel_t *gk)
{
    if (gk != NULL && gk->tile_k_pad > 0)
        return gk->tile_k_pad;
    if (in_dt != NVL_WDT_BF16 && core == NVL_WDT_FP8 &&
        g->fp8_matmul_k_pad > 0)
        return (double)g->fp8_matmul_k_pad;
    return (double)g->matmul_k_pad;
}

/* matmul_work, and the parts a dense GEMM's K loop runs in (1 if not
 * split) */
static nvl_kernel_cost_t matmul_parts(const nvl_cost_cfg_t *cfg,
                                      size_t groups, const uint64_t *m,
                                      uint64_t n, uint64_t k, uint32_t m_tile,
                                      const grouped_kernel_t *gk,
                                      const gpu_taken_t *taken,
                                      double *t_s_out, uint32_t *parts_out)
{
    nvl_kernel_cost_t c = {0, 0, 0};
    *t_s_out = 0;
    *parts_out = 1;
    const nvl_gpu_spec_t *g = &cfg->topo->gpu;
    nvl_wdtype_t dt = cfg->weight_dtype < NVL_WDT_COUNT ? cfg->weight_dtype
                                                        : NVL_WDT_BF16;
    double peak = nvl_wdtype_peak_flops_per_s(g, dt), rel;
    nvl_wdtype_t core = nvl_wdtype_core(dt), in_dt = dt;
    /* cuBLASLt's efficiency on the tensor cores, the library's share */
    double eff = g->matmul_efficiency;
    if (peak <= 0 || cfg->weight_only) {
        /* no tensor cores for the type (FP4 on Hopper) or weight-only:
         * dequantised in the kernel, BF16 inputs at BF16's rate */
        peak = g->bf16_flops_per_s;
        in_dt = NVL_WDT_BF16;
    } else if (core == NVL_WDT_FP8 && g->fp8_matmul_efficiency > 0)
        eff = g->fp8_matmul_efficiency;
    else if (core == NVL_WDT_FP4 && g->fp4_matmul_efficiency > 0)
        eff = g->fp4_matmul_efficiency;
    nvl_gemm_lib_choose(cfg, in_dt == NVL_WDT_BF16 ? NVL_WDT_BF16 : dt,
                        &rel);
    if (gk != NULL && gk->of_bf16_rate) /* peak x eff x rel: BF16's rate */
        rel = g->bf16_flops_per_s * g->matmul_efficiency / (peak * eff);
    eff *= rel * (gk != NULL ? gk->rel : 1.0);
    nvl_gemm_bytes_t wb =
        nvl_cost_weight_bytes(dt, n, k, cfg->weight_scale_bytes);
    double N = (double)n, K = (double)k, tiles = 0, tile_flops = 0;
    for (size_t i = 0; i < groups; i++) {
        if (m[i] == 0 || n == 0 || k == 0)
            continue;
        double M = (double)m[i];
        nvl_gemm_bytes_t ib = nvl_cost_input_bytes(in_dt, m[i], k);
        c.flops += 2.0 * M * N * K;
        /* the tensor cores compute whole tiles of m_tile rows */
        tile_flops += 2.0 * (m_tile ? ceil(M / m_tile) * m_tile : M) * N * K;
        c.bytes += wb.data_bytes + wb.scale_bytes + ib.data_bytes +
                   ib.scale_bytes + M * N * 2.0;
        /* the weight columns streaming at once: a grouped kernel walks
         * 64-row tiles of each group, a dense one NVL_DENSE_TILE_M rows */
        tiles += N * ceil(M / (m_tile ? 64.0 : NVL_DENSE_TILE_M));
    }
    double tile_n, width = stream_width(
        cfg, dt, m_tile || groups > 1 ? 0 : m[0], N, tiles, &tile_n);
    if (c.flops <= 0)
        return c;
    double k_pad = tile_k_pad(g, in_dt, core, gk);
    /* beside another kernel: the tensor cores of the SMs left, at most
     * their share of the columns in flight, the HBM bandwidth left */
    double sm_left = 1.0, hbm = nvl_cost_hbm_rate(cfg);
    if (m_tile == 0 && groups == 1) /* a benchmark's hot L2 (--harness) */
        hbm *= nvl_gemm_harness_mem_factor(cfg, c.bytes);
    if (taken != NULL && g->sm_count > 0) {
        uint32_t held = taken->sms < g->sm_count ? taken->sms : g->sm_count - 1;
        sm_left = (double)(g->sm_count - held) / (double)g->sm_count;
        hbm = fmax(hbm - taken->hbm_bytes_per_s, 0.1 * hbm);
    }
    double rate = nvl_topo_gpu_flops(cfg->topo, cfg->gpu, peak) * sm_left;
    if (m_tile == 0 && groups == 1 && tile_n <= 0) { /* its best K split */
        split_k_t sk = {.m = (double)m[0], .n = N, .k = K,
                        .k_bytes = wb.data_bytes / N, .k_pad = k_pad,
                        .flops_per_s = rate * eff, .hbm = hbm,
                        .width = width, .cap = sm_left,
                        .exp = g->matmul_width_exp,
                        .sms = (double)g->sm_count};
        *t_s_out = split_k_body_s(cfg, &sk, tile_flops, c.bytes, parts_out);
    } else {
        double e_c = eff * K / (K + k_pad);
        double e_w = pow(fmin(sm_left, width), g->matmul_width_exp);
        *t_s_out = fmax(tile_flops / (rate * e_c), c.bytes / (hbm * e_w));
        if (tile_n > 0) /* one fixed tile: its waves on the SMs left */
            *t_s_out = fmax(*t_s_out, fixed_tile_waves_s(
                (double)m[0], N, K, tile_n, g->sm_count * sm_left, rate,
                e_c, K / (K + k_pad))) + nvl_gemm_lib_fixed_s(cfg, dt);
    }
    c.time_ps = nvl_ps_from_s(nvl_cost_overhead_s(cfg, g->kernel_overhead_ps) +
                             *t_s_out);
    return c;
}

static nvl_kernel_cost_t matmul_work(const nvl_cost_cfg_t *cfg, size_t groups,
                                     const uint64_t *m, uint64_t n,
                                     uint64_t k, uint32_t m_tile,
                                     const grouped_kernel_t *gk,
                                     const gpu_taken_t *taken,
                                     double *t_s_out)
{
    uint32_t parts;
    return matmul_parts(cfg, groups, m, n, k, m_tile, gk, taken,
                        t_s_out, &parts);
}

nvl_kernel_cost_t nvl_cost_matmul(const nvl_cost_cfg_t *cfg, uint64_t m,
                                  uint64_t n, uint64_t k)
{
    double t_s;
    return matmul_work(cfg, 1, &m, n, k, 0, NULL, NULL, &t_s);
}

uint32_t nvl_cost_matmul_split_k(const nvl_cost_cfg_t *cfg, uint64_t m,
                                 uint64_t n, uint64_t k)
{
    double t_s;
    uint32_t parts;
    matmul_parts(cfg, 1, &m, n, k, 0, NULL, NULL, &t_s, &parts);
    return parts;
}

nvl_kernel_cost_t nvl_cost_matmul_shared(const nvl_cost_cfg_t *cfg,
                                         uint64_t m, uint64_t n, uint64_t k,
                                         uint32_t sms,
                                         double hbm_bytes_per_s)
{
    double t_s;
    gpu_taken_t taken = {sms, hbm_bytes_per_s};
    return matmul_work(cfg, 1, &m, n, k, 0, NULL, &taken, &t_s);
}

/* A grouped GEMM's CTA tile (PyTorch aten/src/ATen/native/cuda/GroupMM.cu:
 * 64 x 128 x 128 on SM100 and, for groups of at most 128 rows, on SM90):
 * each group's rows are padded to a whole tile's rows, and each
 * (group, 128-column) panel of weights is a tile of its own.  Block-scaled
 * FP4 on FP4 tensor cores (NVFP4, MX-FP4: Blackwell's tcgen05 kind
 * mxf4nvf4) has no 64-row MMA: CUTLASS's SM100 shapes for it are 128 rows
 * on one SM and 256 on two (python/cutlass_library/sm100_shapes.py,
 * SM100_MMA_SHAPES_MXF4NVF4_DENSE_1SM / _2SM), so TensorRT-LLM's CUTLASS
 * MoE GEMMs pad each expert's rows to at least 128.  (NVL_GROUPED_TILE_M
 * and _N: cost_impl.h.) */
#define NVL_GROUPED_TILE_M_FP4 128
/* A grouped GEMM's compute term against the dense GEMM of the same rows
 * on the same tensor cores, per tensor-core type (docs/cost-model.md,
 * "Mixture of experts"): the grouped kernel walks the experts' problems
 * one output tile at a time, and a tile that starts another expert's
 * problem loads its shape and pointers, rewrites and fences the CTA's
 * TMA descriptors (for block-scaled FP4 those of the scale factors too)
 * and stores its own epilogue, a fixed work per tile that the faster
 * low-precision MMAs do not hide:
 *   bf16  rate 1: torch._grouped_mm within 7 % of the model at 256-4,096
 *         rows an expert on an H200 (tests/data/calibration/
 *         h200-moe-prefill/);
 *   fp8   rate 0.70: on that H200 the CUTLASS SM90 FP8 grouped GEMM
 *         (torch._scaled_grouped_mm) takes 1.42x cuBLASLt's dense FP8
 *         time for the same rows, geomean of the 8 shapes at 2,048 and
 *         4,096 rows an expert (grouped-prefill.csv; torch's tiles below
 *         2,048: grouped_tile);
 *   fp4   the dense rate, and NVL_GROUPED_FP4_TILE_K_PAD elements of k
 *         of fixed work a 128 x 128 tile (in place of the dense kernel's
 *         matmul_k_pad): a whole NVFP4 MoE layer on a B200 (32 experts,
 *         top-4, hidden 2,880, intermediate 7,680, 4,096 tokens: 512 rows
 *         an expert) at 1,117-1,262 TFLOP/s across vLLM, FlashInfer CuTe
 *         DSL and SGLang (huggingface.co/blog/apsys/blackwell-nvfp4-
 *         comparison): 1.72-1.95 ms, where this model's layer takes 0.81
 *         ms of which 0.63 ms are the two grouped GEMMs at the dense
 *         CUTLASS rate; the rest of the layer as modeled, the two GEMMs
 *         take 1.43 ms there (their rate 0.39 of the dense one, geomean of
 *         the three), which this fixed work per tile gives (FC1's K 2,880
 *         and FC2's 7,680 over the same tiles' MMAs).  A tile's fixed work
 *         rather than a rate: the layer's one measurement cannot tell them
 *         apart, the kernel's tile walk says which (a shape of smaller K,
 *         Qwen3's 768-4,096, spends more of each tile on it). */
#define NVL_GROUPED_FP4_TILE_K_PAD 5854.0
static const grouped_kernel_t grouped_kernel[NVL_WDT_COUNT] = {
    [NVL_WDT_BF16] = {.rel = 1.0},
    [NVL_WDT_FP8] = {.rel = 0.70},
    [NVL_WDT_FP4] = {.rel = 1.0, .tile_k_pad = NVL_GROUPED_FP4_TILE_K_PAD}};
/* A grouped GEMM's weight panel (its group's n_tile columns over all of
 * K) is latency-bound on its SM, however few its rows: CUTLASS's
 * ptr-array grouped kernel rewrites the CTA's TMA descriptors when it
 * moves to another group's tile and fences them before its loads
 * (CUTLASS's include/cutlass/gemm/collective/
 * sm90_mma_array_tma_gmma_ss_warpspecialized.hpp, tensormaps_perform_update
 * and, on did_batch_change, tensormaps_fence_acquire), so the CTA
 * starts each panel with an empty pipeline, then streams it with
 * about NVL_GROUPED_PANEL_BYTES_PER_TRIP bytes of weights a memory round
 * trip: the panel takes NVL_GROUPED_PANEL_TRIPS + panel_bytes /
 * NVL_GROUPED_PANEL_BYTES_PER_TRIP round trips (mem_latency), a wave of
 * sm_count panels at a time.  Both fit by
 * scripts/calibration/fit-moe-grouped.py to torch._grouped_mm (bf16) on
 * the uniform rows of tests/data/calibration/h100-moe/grouped.csv and the
 * gate+up rows of h200-fp8-k/grouped-decode.csv (the H100's HBM rate and
 * the kernel's per-SM rate nearly coincide, the H200's do not); the
 * routed rows, the H200's down rows, prefill shapes and MoE decode step
 * are held out (docs/cost-model.md, "Mixture of experts", says what
 * 20,000 bytes a round trip means for the pipeline). */
#define NVL_GROUPED_PANEL_TRIPS 3.0
#define NVL_GROUPED_PANEL_BYTES_PER_TRIP 20000.0

/* The grouped kernel's row tile, its rate against grouped_kernel's in
 * *rel_out (torch's FP8 on SM90: grouped_torch.c). */
static uint32_t grouped_tile(const nvl_cost_cfg_t *cfg, nvl_wdtype_t core,
                             size_t groups, const uint64_t *m, uint64_t n,
                             uint64_t k, double *rel_out)
{
    *rel_out = 1.0;
    if (core == NVL_WDT_FP4)
        return NVL_GROUPED_TILE_M_FP4;
    uint32_t m_tile = nvl_cost_torch_fp8_tile(cfg, core, groups, m, n, k,
                                              rel_out);
    return m_tile > 0 ? m_tile : NVL_GROUPED_TILE_M;
}

nvl_kernel_cost_t nvl_cost_grouped_matmul(const nvl_cost_cfg_t *cfg,
                                          size_t groups, const uint64_t *m,
                                          uint64_t n, uint64_t k)
{
    double t_s, rel = 1.0;
    nvl_wdtype_t dt = cfg->weight_dtype < NVL_WDT_COUNT ? cfg->weight_dtype
                                                        : NVL_WDT_BF16;
    /* the weights' own tensor cores, or dequantised to BF16's */
    nvl_wdtype_t core = nvl_wdtype_core(dt);
    if (cfg->weight_only ||
        nvl_wdtype_peak_flops_per_s(&cfg->topo->gpu, dt) <= 0)
        core = NVL_WDT_BF16;
    bool marlin = groups > 0 && nvl_cost_moe_marlin(cfg);
    bool triton = groups > 0 && !marlin && nvl_cost_moe_triton(cfg);
    uint32_t m_tile = marlin   ? nvl_cost_marlin_block(groups, m)
                      : triton ? nvl_cost_triton_block(cfg, groups, m)
                               : grouped_tile(cfg, core, groups, m, n, k, &rel);
    grouped_kernel_t gk = grouped_kernel[core];
    gk.rel *= marlin ? nvl_cost_marlin_rel() : rel;
    if (triton)
        gk = (grouped_kernel_t){.rel = nvl_cost_triton_rel(cfg),
                                .tile_k_pad = nvl_cost_triton_tile_k_pad(cfg),
                                .of_bf16_rate = true};
    nvl_kernel_cost_t c =
        matmul_work(cfg, groups, m, n, k, m_tile, &gk, NULL, &t_s);
    if (c.flops <= 0)
        return c;
    const nvl_gpu_spec_t *g = &cfg->topo->gpu;
    double panels = 0;
    for (size_t i = 0; i < groups; i++)
        panels += m[i] > 0 ? ceil((double)n / NVL_GROUPED_TILE_N) : 0;
    double waves = ceil(panels / (double)(g->sm_count ? g->sm_count : 1));
    nvl_gemm_bytes_t pb = nvl_cost_weight_bytes(
        dt, n < NVL_GROUPED_TILE_N ? n : NVL_GROUPED_TILE_N, k,
        cfg->weight_scale_bytes);
    double trips = NVL_GROUPED_PANEL_TRIPS +
                   (pb.data_bytes + pb.scale_bytes) /
                       NVL_GROUPED_PANEL_BYTES_PER_TRIP;
    double t_panel = waves * trips * (double)g->mem_latency_ps * 1e-12;
    double t_torch =
        nvl_cost_torch_grouped_floor_s(cfg, dt, core, groups, m, n, k);
    if (t_torch >= 0)
        t_panel = t_torch;
    /* Triton's fused_moe loads its blocks through computed pointers, no
     * TMA descriptors to rewrite a group: no such floor (its 512-token
     * rows, held out: tests/data/calibration/h200-triton-moe/) */
    if (triton)
        t_panel = 0;
    c.time_ps = nvl_ps_from_s(nvl_cost_overhead_s(cfg, g->kernel_overhead_ps) +
                              fmax(t_s, t_panel));
    return c;
}

nvl_kernel_cost_t nvl_cost_memory_access(const nvl_cost_cfg_t *cfg,
                                         double bytes, nvl_access_t access)
{
    nvl_kernel_cost_t c = {0, 0, bytes > 0 ? bytes : 0};
    const nvl_gpu_spec_t *g = &cfg->topo->gpu;
    double rate = nvl_cost_hbm_rate(cfg);
    double fixed = nvl_cost_simple_fixed_s(cfg);
    /* a contiguous kernel streams its bytes at the GPU's measured
     * streaming rate where the topology gives one; strided_efficiency
     * is a share of hbm_efficiency's rate (what it was fit against) */
    if (access == NVL_ACCESS_CONTIGUOUS && g->stream_efficiency > 0)
        rate = nvl_topo_hbm_bw(cfg->topo, cfg->gpu) * g->stream_efficiency;
    if (access != NVL_ACCESS_CONTIGUOUS)
        rate *= g->strided_efficiency;
    if (access == NVL_ACCESS_INDEXED)
        fixed += (double)cfg->topo->gpu.mem_latency_ps * 1e-12;
    c.time_ps = nvl_ps_from_s(fixed + c.bytes / rate);
    return c;
}

nvl_kernel_cost_t nvl_cost_memory(const nvl_cost_cfg_t *cfg, double bytes)
{
    return nvl_cost_memory_access(cfg, bytes, NVL_ACCESS_CONTIGUOUS);
}

/* Resident threads per SM on Hopper and Blackwell (CUDA C++ Programming
 * Guide, "Compute capabilities": 2048 for compute capability 9.0 and
 * 10.0). */
#define NVL_THREADS_PER_SM 2048.0

nvl_kernel_cost_t nvl_cost_pointwise_waves(const nvl_cost_cfg_t *cfg,
                                           double bytes, double elements,
                                           uint32_t per_thread)
{
    nvl_kernel_cost_t c = nvl_cost_memory(cfg, bytes);
    if (per_thread == 0 || elements <= 0)
        return c;
    const nvl_gpu_spec_t *g = &cfg->topo->gpu;
    double waves = ceil(elements / ((double)g->sm_count *
                                    NVL_THREADS_PER_SM * per_thread));
    c.time_ps += nvl_ps_from_s((waves - 1.0) * (double)g->mem_latency_ps *
                               1e-12);
    return c;
}

/* The norm's body: the larger of its bytes through HBM and its rows'
 * steps (waves of resident CTAs x steps per row). */
static double norm_body_s(const nvl_cost_cfg_t *cfg, double rows,
                          uint64_t width, double bytes, uint32_t threads,
                          uint32_t vec, uint32_t passes)
{
    double t = threads ? threads : 1, step = t * (vec ? vec : 1);
    double resident = (double)cfg->topo->gpu.sm_count *
                      fmax(1.0, floor(NVL_THREADS_PER_SM / t));
    double waves = ceil(rows / resident);
    double steps = (double)passes * ceil((double)width / step);
    double t_row = waves * steps * (double)cfg->topo->gpu.norm_step_ps * 1e-12;
    return fmax(bytes / nvl_cost_hbm_rate(cfg), t_row);
}

nvl_kernel_cost_t nvl_cost_norm(const nvl_cost_cfg_t *cfg, double rows,
                                uint64_t width, double bytes,
                                uint32_t threads, uint32_t vec,
                                uint32_t passes)
{
    if (rows <= 0 || width == 0)
        return (nvl_kernel_cost_t){0, 0, 0};
    nvl_kernel_cost_t c = {0, 0, bytes > 0 ? bytes : 0};
    c.time_ps = nvl_ps_from_s(nvl_cost_simple_fixed_s(cfg) +
                              norm_body_s(cfg, rows, width, c.bytes, threads,
                                          vec, passes));
    return c;
}

nvl_kernel_cost_t nvl_cost_norm_epilogue(const nvl_cost_cfg_t *cfg,
                                         double rows, uint64_t width,
                                         double bytes, uint32_t threads,
                                         uint32_t vec, uint32_t passes)
{
    if (rows <= 0 || width == 0)
        return (nvl_kernel_cost_t){0, 0, 0};
    nvl_kernel_cost_t c = {0, 0, bytes > 0 ? bytes : 0};
    c.time_ps = nvl_ps_from_s(norm_body_s(cfg, rows, width, c.bytes, threads,
                                          vec, passes));
    return c;
}
