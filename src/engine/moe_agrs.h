/* Private to the engine: moe_agrs.c's entry, called by moe_ep.c. */
#ifndef NVL_ENGINE_MOE_AGRS_H
#define NVL_ENGINE_MOE_AGRS_H

#include "engine_impl.h"

/* moe_agrs.c: one expert-parallel layer by allgather and reduce-scatter
 * over e->tp (opts.ep_comm allgather): this rank's R rows (ids, w: their
 * experts and weights, R x top_k, data mode) padded to P, the most rows
 * any rank has; S: the sum of every rank's rows (size x P when the ranks'
 * counts are equal); held_count[i]: the whole job's tokens for this
 * rank's i-th expert.  Data mode: h holds the normed rows [R, hidden] and
 * receives the experts' complete weighted sum; timing mode: h is NULL. */
typedef struct {
    uint64_t R, P, S;
    const uint32_t *ids;
    const float *w;
    const uint64_t *held_count;
} nvl_moe_agrs_t;
nvl_status_t nvl_engine_moe_agrs(nvl_engine_t *e, uint32_t li,
                                 const nvl_moe_agrs_t *a, float *h);

/* moe_ep.c, for memory.c's profile: the bytes TensorRT-LLM's CUTLASS MoE
 * runner allocates in a MoE layer's call for a step of `rows` rows on
 * this rank, beside the layer's working set: the rows it runs (this
 * rank's, or under the allgather exchange every rank's), their output,
 * and the runner's workspace for top_k of them a row; 0 without a MoE
 * layer. */
double nvl_engine_moe_runner_bytes(const nvl_engine_t *e, double rows);

#endif
