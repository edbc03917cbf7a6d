/* nvlemu: how a Qwen model is cut across a tensor-parallel group, as
 * Megatron and the serving engines cut it: QKV and gate/up column-parallel,
 * O and down row-parallel, embedding and lm_head vocab-parallel; each
 * expert of a mixture of experts cut like the dense MLP (its
 * moe_intermediate split), the router replicated.  Any TP
 * degree is allowed: counts that do not divide go one extra to the first
 * ranks, and ranks beyond the query-head count hold no attention (idle in
 * attention, as at TP = 72 on 64 heads). */
#ifndef NVLEMU_SHARD_H
#define NVLEMU_SHARD_H

#include <stdint.h>

#include "nvlemu/model.h"
#include "nvlemu/status.h"

/* [first, first + count) */
typedef struct {
    uint32_t first;
    uint32_t count;
} nvl_range_t;

typedef struct {
    int tp, rank;
    nvl_range_t q_heads;      /* query heads (rows of q_proj / o_proj columns, per head_dim) */
    nvl_range_t kv_heads;     /* key/value heads this rank's query heads read:
                                 replicated on several ranks when tp exceeds
                                 them, two when a rank's heads straddle groups */
    nvl_range_t intermediate; /* gate/up rows, down columns */
    /* the same of every expert (experts tensor-parallel; none without) */
    nvl_range_t moe_intermediate;
    nvl_range_t vocab;        /* embedding and lm_head rows */
} nvl_shard_t;

/* This rank's shard of cfg at tensor-parallel degree tp.  Reports and
 * returns NVL_ERR_INVALID when tp < 1 or rank is outside [0, tp). */
nvl_status_t nvl_shard_plan(const nvl_model_config_t *cfg, int tp, int rank,
                            nvl_shard_t *out);

/* An even split of n items over parts: part i's range. */
nvl_range_t nvl_range_split(uint32_t n, int parts, int i);

#endif
