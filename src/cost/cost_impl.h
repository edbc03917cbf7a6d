/* The compute cost model's pieces that its files share (private to
 * src/cost): cost.c defines most of them, attention.c uses them too;
 * marlin.c the Marlin kernel's, which cost.c uses. */
#ifndef NVLEMU_COST_IMPL_H
#define NVLEMU_COST_IMPL_H

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

/* vLLM's Marlin MoE GEMM (marlin.c): the rows of its moe block for these
 * groups (fused_marlin_moe's block_size_m: the first of 8, 16, 32, 48
 * with the rows a group on average / block < 0.9, else 64), and its
 * compute rate against the BF16 grouped kernel's. */
uint32_t nvl_cost_marlin_block(size_t groups, const uint64_t *m);
double nvl_cost_marlin_rel(void);

#endif
