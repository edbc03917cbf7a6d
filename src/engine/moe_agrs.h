/* Private to the engine: moe_agrs.c's entry, called by moe_ep.c. */
#ifndef NVL_ENGINE_MOE_AGRS_H
#define NVL_ENGINE_MOE_AGRS_H

#include "engine_impl.h"

/* moe_agrs.c: one expert-parallel layer by allgather and reduce-scatter
 * over e->tp (opts.ep_comm allgather): this rank's R rows (ids, w: their
 * experts and weights, R x top_k, data mode) padded to P, the most rows
 * any rank has; held_count[i]: the whole job's tokens for this rank's
 * i-th expert.  Data mode: h holds the normed rows [R, hidden] and
 * receives the experts' complete weighted sum; timing mode: h is NULL. */
typedef struct {
    uint64_t R, P;
    const uint32_t *ids;
    const float *w;
    const uint64_t *held_count;
} nvl_moe_agrs_t;
nvl_status_t nvl_engine_moe_agrs(nvl_engine_t *e, uint32_t li,
                                 const nvl_moe_agrs_t *a, float *h);

#endif
