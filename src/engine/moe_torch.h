/* Private to the engine: moe_torch.c's entries, called by moe.c. */
#ifndef NVL_ENGINE_MOE_TORCH_H
#define NVL_ENGINE_MOE_TORCH_H

#include "engine_impl.h"

/* moe_torch.c, --stack torch: issues the kernels torch's eager ops launch
 * for layer L's top-k over M rows (after the router GEMM), for the sort of
 * `pairs` (token, expert) pairs with their per-expert offsets, and for the
 * weighted scatter of `pairs` expert rows back into `rows` token rows
 * (each a row of moe_torch.c's table, priced by src/cost/). */
void nvl_engine_moe_torch_route(nvl_engine_t *e, int32_t L, uint64_t M);
void nvl_engine_moe_torch_sort(nvl_engine_t *e, int32_t L, double pairs);
void nvl_engine_moe_torch_unpermute(nvl_engine_t *e, int32_t L, double pairs,
                                    uint64_t rows);

#endif
