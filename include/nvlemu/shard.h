/* nvlemu: how a Qwen model is cut across a tensor-parallel group, as
 * Megatron and the serving engines cut it: QKV and gate/up column-parallel,
 * O and down row-parallel, embedding and lm_head vocab-parallel; each
 * expert of a mixture of experts cut like the dense MLP (its
 * moe_intermediate split), the router replicated; or, placed with expert
 * parallelism, the experts spread over groups of ranks and the attention
 * tensor- or data-parallel (nvl_shard_place).  Any TP
 * degree is allowed: counts that do not divide go one extra to the first
 * ranks, and ranks beyond the query-head count hold no attention (idle in
 * attention, as at TP = 72 on 64 heads). */
#ifndef NVLEMU_SHARD_H
#define NVLEMU_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#include "nvlemu/cost.h"
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
    /* what this rank's attention holds and computes (nvlemu/cost.h): the
     * KV cache's bytes per position (nvl_attn_kv_pos_bytes) and the
     * attention kernel's shape come from it alone */
    nvl_attn_geom_t attn;
    /* one layer's attention weights on this rank, in elements: the
     * projections (q, k, v, o), their biases, the q and k norms */
    double attn_matrix_elems, attn_bias_elems, attn_norm_elems;
    nvl_range_t intermediate; /* gate/up rows, down columns */
    /* the same of every expert this rank holds (none without experts) */
    nvl_range_t moe_intermediate;
    nvl_range_t vocab;        /* embedding and lm_head rows */
    /* placement of a mixture of experts (nvl_shard_place) */
    bool attn_dp;             /* attention data-parallel: tp is 1 */
    int ep, ep_rank;          /* expert groups; this rank's group */
    int etp;                  /* ranks sharing each group's experts
                                 (expert tensor parallelism) */
    nvl_range_t experts;      /* the experts this rank holds */
} nvl_shard_t;

/* Where the parts of a mixture-of-experts model go on `world` ranks. */
typedef struct {
    int ep;       /* expert-parallel degree: the experts are spread over ep
                     groups of world / ep ranks (uneven counts go one
                     extra to the first groups), each expert cut over the
                     ranks of its group like the dense MLP; 1: every rank
                     holds a slice of every expert (experts tensor-
                     parallel) */
    bool attn_dp; /* attention data-parallel: every rank holds the whole
                     attention, embedding, lm_head and dense MLPs and runs
                     its own sequences; else all of them are tensor-
                     parallel over the world */
} nvl_placement_t;

/* This rank's shard of cfg at tensor-parallel degree tp (experts tensor-
 * parallel).  Reports and returns NVL_ERR_INVALID when tp < 1, rank is
 * outside [0, tp), or the model has fewer rows than ranks to cut. */
nvl_status_t nvl_shard_plan(const nvl_model_config_t *cfg, int tp, int rank,
                            nvl_shard_t *shard_out);

/* This rank's shard of cfg on `world` ranks placed as pl says.  Reports
 * and returns NVL_ERR_INVALID, naming the value, when ep < 1, ep does not
 * divide world, ep exceeds the expert count, an expert has fewer rows
 * than world / ep, ep > 1 or attn_dp is asked of a dense model, or the
 * tensor-parallel part cannot be cut (as nvl_shard_plan). */
nvl_status_t nvl_shard_place(const nvl_model_config_t *cfg, int world,
                             int rank, const nvl_placement_t *pl,
                             nvl_shard_t *shard_out);

/* The head map: the key/value head that query head q_head of cfg reads
 * (grouped-query attention: one per group of q_heads / kv_heads query
 * heads). */
uint32_t nvl_shard_kv_head_of(const nvl_model_config_t *cfg, uint32_t q_head);

/* An even split of n items over parts: part i's range. */
nvl_range_t nvl_range_split(uint32_t n, int parts, int i);

#endif
