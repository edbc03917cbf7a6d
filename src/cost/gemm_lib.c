/* GEMM libraries: which one a software stack's matrix products run in (of
 * the libraries its row in the engine gives, nvl_cost_cfg_t's stack_libs), and
 * how fast each runs relative to cuBLASLt on the same tensor cores
 * (include/nvlemu/cost.h; docs/cost-model.md "GEMM libraries"; the
 * published measurements in tests/data/calibration/published-gemm.csv).
 *
 * A cell is the library's compute efficiency divided by cuBLASLt's at the
 * same tensor-core type, each efficiency taken as the model takes it:
 * TFLOP/s / (peak x k / (k + matmul_k_pad)).  The topology's [gpu]
 * efficiencies are cuBLASLt's, so cuBLASLt's row is 1 by definition.
 *
 * And the harnesses published GEMM rates were timed under (cost gemm
 * --harness; docs/cost-model.md "GEMM harnesses"): what the benchmark's
 * loop changes against the kernel a step runs. */
#include "nvlemu/cost.h"

#include <string.h>

#include "cost_impl.h"

/* One row per library: its name and, per tensor-core type, its efficiency
 * relative to cuBLASLt's (0: the library has no kernel of that type). */
static const struct {
    nvl_member_t id;
    double rel[NVL_WDT_COUNT];
} libs[NVL_GEMM_COUNT] = {
    [NVL_GEMM_STACK] = {{"stack", "the library the stack calls for the "
                                  "type"},
                        {1, 1, 1}}, /* resolved before use */
    [NVL_GEMM_CUBLASLT] = {{"cublaslt", "cuBLASLt (the topology's [gpu] "
                                        "matmul efficiencies)"},
                           {1, 1, 1}},
    /* bf16: no published CUTLASS BF16 GEMM on B200/GB200 gathered:
     *   cuBLASLt's (derived, 1).
     * fp8: 2,545 TFLOP/s at M = 16384, N = K = 4096 on B200 (vLLM PR
     *   19566, activations quantised upstream): 0.574 of 4.5 PF; B200's
     *   cuBLASLt 2,377 at 8192^3 (TransformerEngine issue 1747): 0.532.
     * fp4: 3,904 TFLOP/s at M = 16384, N = 6144, K = 4096 on B200 (vLLM PR
     *   20646): 0.441 of 9 PF; B200's cuBLASLt 0.71 (topology/hgx-b200.topo:
     *   GB200's measured 0.78, Azure ND GB200 v6, scaled by B200's FP8
     *   ratio; no B200 cuBLASLt NVFP4 figure gathered): 0.622. */
    [NVL_GEMM_CUTLASS] = {{"cutlass", "CUTLASS"}, {1.0, 1.08, 0.622}},
    /* bf16: no published figure: cuBLASLt's (derived, 1).
     * fp8: no SM100 figure published; on SM90 1,500 TFLOP/s at M = 4096,
     *   N = 7168, K = 16384 on an H800 (DeepGEMM PR 81): 0.761 of 1,979 TF,
     *   against cuBLASLt's 0.70 on H200 (h200-ops FP8 GEMMs, the fitted
     *   matmul_efficiency); the Hopper ratio is carried to Blackwell.
     * fp4: DeepGEMM has no dense FP4 GEMM. */
    [NVL_GEMM_DEEPGEMM] = {{"deepgemm", "DeepGEMM (no FP4 kernel)"},
                           {1.0, 1.09, 0}},
    /* bf16, fp8: no published dense figure: cuBLASLt's (derived, 1).
     * fp4: 2,187 TFLOP/s against CUTLASS's 3,370 at M = 1024, N = 7168,
     *   K = 4608 on B200 (FlashInfer PR 1979, mm_fp4 backends): 0.649 of
     *   CUTLASS's, 0.649 x 0.622 = 0.404 of cuBLASLt's. */
    [NVL_GEMM_TRTLLM_GEN] = {{"trtllm-gen", "TensorRT-LLM's trtllm-gen "
                                            "kernels"},
                             {1.0, 1.0, 0.404}},
};

const nvl_family_t nvl_gemm_lib_family =
    NVL_FAMILY("library", "GEMM libraries (nvlemu cost gemm --library)",
               libs);

const char *nvl_gemm_lib_name(nvl_gemm_lib_t lib)
{
    return nvl_family_name(&nvl_gemm_lib_family, (int)lib);
}

nvl_gemm_lib_t nvl_gemm_lib_choose(const nvl_cost_cfg_t *cfg, nvl_wdtype_t dt,
                                   double *rel_out)
{
    dt = nvl_wdtype_core(dt); /* the libraries' cells: per tensor-core type */
    /* weights without tensor cores of their type run dequantised (BF16) */
    if (dt == NVL_WDT_FP4 && cfg->topo->gpu.fp4_flops_per_s <= 0)
        dt = NVL_WDT_BF16;
    nvl_gemm_lib_t best = NVL_GEMM_CUBLASLT;
    if (cfg->gemm_lib != NVL_GEMM_STACK && cfg->gemm_lib < NVL_GEMM_COUNT) {
        best = cfg->gemm_lib;
    } else {
        unsigned set = cfg->stack_libs[dt];
        double best_rel = -1;
        for (int l = NVL_GEMM_CUBLASLT; l < NVL_GEMM_COUNT; l++)
            if ((set & NVL_GEMM_LIB_SET(l)) && libs[l].rel[dt] > best_rel) {
                best = (nvl_gemm_lib_t)l;
                best_rel = libs[l].rel[dt];
            }
    }
    *rel_out = libs[best].rel[dt];
    return best;
}

/* The one tile of cuBLASLt's outer-vector-scaled FP8 kernel on Hopper: the
 * kernel name's 128x128 CTA tile and 1x1 cluster, the same at every m, n
 * and k measured (64-512 rows, 576-59,136 columns, K 448-29,568; torch
 * 2.11 with CUDA 13.0, torch._scaled_mm with a scale per row of x and per
 * column of W^T: tests/data/calibration/h200-fp8-scaled-mm), where the
 * per-tensor-scaled kernels of the same runs change tile and split K by
 * shape. */
#define NVL_OVSCALE_TILE_N 128.0

/* The per-SM tile of a block-scaled FP4 GEMM on Blackwell: 128 x 128 x 256
 * (CUTLASS examples/72_blackwell_narrow_precision_gemm/72b_blackwell_
 * nvfp4_nvfp4_gemm.cu, PerSmTileShape_MNK, one SM a CTA, cluster 1 x 1):
 * UMMA's 128 rows on one SM, 128 accumulator columns of the SM's 512 in
 * tensor memory.  cuBLASLt's FP4 kernels are not named in any published
 * figure; this tile's CTA count is the one its B200 rows at M = 128-512
 * and K = 7168 show (DeepGEMM PR 348: 11.1 and 10.6 us a call, 16 and 64
 * CTAs of 7,168-deep K loops, no split; modelled 14.7 and 11.2), where
 * 256-column tiles would halve the CTAs. */
#define NVL_BLOCK_SCALED_TILE_N 128.0

/* Whether the kernel for weight type dt is cuBLASLt's block-scaled FP4 GEMM
 * on Blackwell (FP4 weights and activations, not weight-only). */
static bool block_scaled_fp4(const nvl_cost_cfg_t *cfg, nvl_wdtype_t dt)
{
    double rel;
    return nvl_cost_fp4_cores(&cfg->topo->gpu) && !cfg->weight_only &&
           nvl_wdtype_core(dt) == NVL_WDT_FP4 &&
           nvl_gemm_lib_choose(cfg, dt, &rel) == NVL_GEMM_CUBLASLT;
}

double nvl_gemm_lib_fixed_tile_n(const nvl_cost_cfg_t *cfg, nvl_wdtype_t dt)
{
    double rel;
    const nvl_gpu_spec_t *g = &cfg->topo->gpu;
    bool hopper = g->fp8_flops_per_s > 0 && !nvl_cost_fp4_cores(g);
    if (block_scaled_fp4(cfg, dt))
        return NVL_BLOCK_SCALED_TILE_N;
    if (dt != NVL_WDT_FP8_CHANNEL || cfg->weight_only || !hopper)
        return 0;
    return nvl_gemm_lib_choose(cfg, dt, &rel) == NVL_GEMM_CUBLASLT
               ? NVL_OVSCALE_TILE_N
               : 0;
}

/* What cuBLASLt's block-scaled FP4 call costs once beyond a plain kernel's
 * kernel_overhead: the first tile's prologue (its first K stages and their
 * scale factors into shared and tensor memory before the first UMMA) and
 * the last tile's epilogue (the accumulators out of tensor memory, scaled,
 * stored), which a persistent kernel overlaps for every other tile: the
 * topology's [gpu] fp4_call_overhead (GB200's fit to 2 of the 15 cuBLASLt
 * FP4 rows of published-gemm.csv; docs/cost-model.md, "GEMM
 * libraries"). */
double nvl_gemm_lib_fixed_s(const nvl_cost_cfg_t *cfg, nvl_wdtype_t dt)
{
    return block_scaled_fp4(cfg, dt)
               ? (double)cfg->topo->gpu.fp4_call_overhead_ps * 1e-12
               : 0;
}

/* The L2 of the smallest GPU modelled, in bytes: H100's 50 MB (Chips and
 * Cheese; H200's is 60 MiB as torch reports it,
 * tests/data/calibration/h200-gemm-harness/env.txt, B200's 126 MB): a
 * GEMM whose operands and output fit stays in L2 from one replay to the
 * next on every one of them. */
#define NVL_HOT_L2_BYTES 50e6

/* One row per harness: its name, and whether the same operands stay in
 * L2 from one timed call to the next. */
static const struct {
    nvl_member_t id;
    bool hot_l2;
} harnesses[NVL_HARNESS_COUNT] = {
    [NVL_HARNESS_KERNEL] = {{"kernel", "the kernel as a step runs it: "
                                       "operands from HBM"},
                            false},
    /* superbench's cublaslt_gemm: cudaEventRecord around 1,000
     * back-to-back cublasLtMatmul calls; the GPU runs them back to back
     * and the model's kernel_overhead is a kernel's cost back to back */
    [NVL_HARNESS_EVENTS_LOOP] = {{"events-loop", "events around "
                                                 "back-to-back calls of a "
                                                 "native loop"},
                                 false},
    /* DeepGEMM's bench_kineto: the profiler's kernel time, an 8 GB
     * memset before each call flushing L2 (deep_gemm/testing/bench.py) */
    [NVL_HARNESS_KINETO] = {{"kineto-flush-l2", "the profiler's kernel "
                                                "time, L2 flushed before "
                                                "each call"},
                            false},
    /* triton.testing.do_bench_cudagraph: one call replayed in a CUDA
     * graph "minus the L2 cache flush" of do_bench (triton/testing.py) */
    [NVL_HARNESS_GRAPH_HOT] = {{"graph-hot-l2", "one call replayed in a "
                                                "CUDA graph on the same "
                                                "operands (hot L2)"},
                               true},
};

const nvl_family_t nvl_gemm_harness_family =
    NVL_FAMILY("harness", "GEMM benchmark harnesses (nvlemu cost gemm "
                          "--harness)",
               harnesses);

double nvl_gemm_harness_mem_factor(const nvl_cost_cfg_t *cfg, double bytes)
{
    nvl_gemm_harness_t h = cfg->gemm_harness;
    if (h >= NVL_HARNESS_COUNT || !harnesses[h].hot_l2 ||
        bytes > NVL_HOT_L2_BYTES)
        return 1.0;
    /* the topology's measured ratio ([gpu] hot_l2_speedup: H200's 1.7,
     * tests/data/calibration/h200-gemm-harness; 1 where unmeasured) */
    return cfg->topo->gpu.hot_l2_speedup;
}

const char *nvl_gemm_harness_name(nvl_gemm_harness_t h)
{
    return nvl_family_name(&nvl_gemm_harness_family, (int)h);
}
