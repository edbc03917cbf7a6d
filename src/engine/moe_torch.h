/* Private to the engine: moe_torch.c's entries, called by moe.c. */
#ifndef NVL_ENGINE_MOE_TORCH_H
#define NVL_ENGINE_MOE_TORCH_H

#include "engine_impl.h"

/* moe_torch.c, --stack torch or compiled (nvl_engine_moe_torch_stack):
 * issues the kernels torch's eager ops launch (compiled: the top-k's as
 * Inductor fuses them) for layer L's top-k over M rows (after the router
 * GEMM), for the sort of
 * `pairs` (token, expert) pairs with their per-expert offsets, and for the
 * weighted scatter of `pairs` expert rows back into `rows` token rows
 * (each a row of moe_torch.c's table, priced by src/cost/). */
/* Whether the engine's stack runs a torch MoE layer (torch, compiled). */
bool nvl_engine_moe_torch_stack(const nvl_engine_t *e);
void nvl_engine_moe_torch_route(nvl_engine_t *e, int32_t L, uint64_t M);
void nvl_engine_moe_torch_sort(nvl_engine_t *e, int32_t L, double pairs);
/* The kernel torch._grouped_mm launches before the experts' gate+up
 * (down: false) or down grouped GEMM of layer L. */
void nvl_engine_moe_torch_prepare(nvl_engine_t *e, int32_t L, bool down);
void nvl_engine_moe_torch_unpermute(nvl_engine_t *e, int32_t L, double pairs,
                                    uint64_t rows);

#endif
