/* The compute cost model's pieces that its files share (private to
 * src/cost): cost.c defines most of them, attention.c and gemm_lib.c use
 * them too; marlin.c the Marlin kernel's and triton_moe.c vLLM's Triton
 * MoE kernel's, which cost.c uses; grouped_torch.c defines torch's
 * grouped kernels for cost.c. */
#ifndef NVLEMU_COST_IMPL_H
#define NVLEMU_COST_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvlemu/cost.h"

/* A kernel's fixed GPU time for ps picoseconds of it: a persistent kernel
 * (NVL_LAUNCH_PERSISTENT) saves the part an empty kernel costs (its launch
 * and teardown on the GPU, kernel_floor); seconds. */
double nvl_cost_overhead_s(const nvl_cost_cfg_t *cfg, int64_t ps);

/* What a simple kernel that reads and writes global memory costs before
 * its bytes: an empty kernel (kernel_floor) plus its first dependent load
 * and the completion of its stores (mem_latency); seconds. */
double nvl_cost_simple_fixed_s(const nvl_cost_cfg_t *cfg);

/* The HBM rate a streaming kernel reaches on cfg's GPU (its bandwidth,
 * with overrides, at hbm_efficiency); bytes per second. */
double nvl_cost_hbm_rate(const nvl_cost_cfg_t *cfg);

/* Whether g has FP4 tensor cores (Blackwell's block-scaled UMMA); a GPU
 * without them (Hopper) runs other kernels for the same layers. */
static inline bool nvl_cost_fp4_cores(const nvl_gpu_spec_t *g)
{
    return g->fp4_flops_per_s > 0;
}

/* The rows of a grouped GEMM's groups together (m[0] + ... +
 * m[groups - 1]: the (token, expert) pairs of a MoE layer). */
static inline double nvl_cost_grouped_rows(size_t groups, const uint64_t *m)
{
    double rows = 0;
    for (size_t i = 0; i < groups; i++)
        rows += (double)m[i];
    return rows;
}

/* vLLM's Marlin MoE GEMM (marlin.c): the rows of its moe block for these
 * groups (fused_marlin_moe's block_size_m: the first of 8, 16, 32, 48
 * with the rows a group on average / block < 0.9, else 64), and its
 * compute rate against the BF16 grouped kernel's. */
uint32_t nvl_cost_marlin_block(size_t groups, const uint64_t *m);
double nvl_cost_marlin_rel(void);

/* vLLM's Triton fused_moe (triton_moe.c): the rows of its tile for these
 * groups (BLOCK_SIZE_M of the config vLLM picks), its compute rate
 * against the dense BF16 GEMM's (cuBLAS at matmul_efficiency) and a
 * tile's fixed work in steps of k. */
uint32_t nvl_cost_triton_block(const nvl_cost_cfg_t *cfg, size_t groups,
                               const uint64_t *m);
double nvl_cost_triton_rel(const nvl_cost_cfg_t *cfg);
double nvl_cost_triton_tile_k_pad(const nvl_cost_cfg_t *cfg);

/* A grouped GEMM's CTA tile as CUTLASS's grouped kernels take it: 64 rows
 * x 128 columns (cost.c, grouped_torch.c). */
#define NVL_GROUPED_TILE_M 64
#define NVL_GROUPED_TILE_N 128

/* torch._scaled_grouped_mm's row tile on SM90 (grouped_torch.c): the rows
 * each group is padded to (its 2 x 2 cluster's), with *rel_out scaled by
 * the kernel's rate (the spilling tile) and the useful share of its
 * padded N and K; 0 (and *rel_out untouched) where it does not apply:
 * weights not on FP8 tensor cores, not torch's grouped GEMM, or a GPU with
 * FP4 tensor cores. */
uint32_t nvl_cost_torch_fp8_tile(const nvl_cost_cfg_t *cfg, nvl_wdtype_t core,
                                 size_t groups, const uint64_t *m, uint64_t n,
                                 uint64_t k, double *rel_out);

/* The floor of torch's decode-shape grouped kernel (64 x 128 x 128
 * Pingpong; grouped_torch.c) for these groups, in seconds, or a negative
 * value where aten takes another kernel (rows / groups and n both above
 * 128), the weights are neither bf16 nor FP8 on FP8 tensor cores (core),
 * or the GPU is not SM90. */
double nvl_cost_torch_grouped_floor_s(const nvl_cost_cfg_t *cfg,
                                      nvl_wdtype_t dt, nvl_wdtype_t core,
                                      size_t groups, const uint64_t *m,
                                      uint64_t n, uint64_t k);

#endif
