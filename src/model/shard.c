/* Tensor-parallel sharding rules (include/nvlemu/shard.h). */
#include "nvlemu/shard.h"

#include <string.h>

nvl_range_t nvl_range_split(uint32_t n, int parts, int i)
{
    uint32_t base = n / (uint32_t)parts, extra = n % (uint32_t)parts;
    uint32_t ui = (uint32_t)i;
    nvl_range_t r;
    r.count = base + (ui < extra ? 1 : 0);
    r.first = ui * base + (ui < extra ? ui : extra);
    return r;
}

uint32_t nvl_shard_kv_head_of(const nvl_model_config_t *cfg, uint32_t q_head)
{
    return q_head / (cfg->q_heads / cfg->kv_heads);
}

/* What the query heads of s hold of the attention: the KV heads they
 * read, the geometry, the weights. */
static void attention(const nvl_model_config_t *cfg, nvl_shard_t *s)
{
    nvl_range_t q = s->q_heads;
    s->kv_heads = (nvl_range_t){0, 0};
    if (q.count > 0) {
        uint32_t first = nvl_shard_kv_head_of(cfg, q.first);
        uint32_t last = nvl_shard_kv_head_of(cfg, q.first + q.count - 1);
        s->kv_heads = (nvl_range_t){first, last - first + 1};
    }
    s->attn = nvl_attn_geom_gqa(q.count, s->kv_heads.count, cfg->head_dim);
    /* in doubles: a config's dimensions may multiply past 2^64 */
    double hid = cfg->hidden, hd = cfg->head_dim;
    double qn = q.count * hd, kn = s->kv_heads.count * hd;
    s->attn_matrix_elems = (qn + 2 * kn) * hid + hid * qn;
    s->attn_bias_elems = (cfg->qkv_bias ? qn + 2 * kn : 0) +
                         (cfg->o_bias ? hid : 0) +
                         (cfg->attn_sinks ? q.count : 0);
    s->attn_norm_elems = cfg->qk_norm ? 2 * hd : 0;
}

/* The rows of each expert that part i of `parts` holds: an even split,
 * or under cfg->moe_split_block vLLM's split of gpt-oss's MX-FP4 experts
 * (vllm/model_executor/models/gpt_oss.py, _load_weights_mxfp4): every
 * part but the last ceil(blocks / parts) whole blocks, the last the rest.
 * A part left without rows is refused (reported, naming `what`). */
static nvl_status_t expert_rows(const nvl_model_config_t *cfg, int parts,
                                int i, const char *what, nvl_range_t *out)
{
    uint32_t n = cfg->moe_intermediate, b = cfg->moe_split_block;
    if (b == 0) {
        *out = nvl_range_split(n, parts, i);
        return NVL_OK;
    }
    uint32_t per = (n / b + (uint32_t)parts - 1) / (uint32_t)parts * b;
    if ((uint64_t)per * (uint32_t)(parts - 1) >= n) {
        nvl_report("%s %d: model '%s' splits each expert's %u rows in whole "
                   "blocks of %u, %u a rank as vLLM's gpt-oss loader does, "
                   "which leaves rank %d none", what, parts, cfg->name, n, b,
                   per, parts - 1);
        return NVL_ERR_INVALID;
    }
    uint32_t first = (uint32_t)i * per;
    *out = (nvl_range_t){first, i == parts - 1 ? n - first : per};
    return NVL_OK;
}

nvl_status_t nvl_shard_plan(const nvl_model_config_t *cfg, int tp, int rank,
                            nvl_shard_t *shard_out)
{
    if (tp < 1 || rank < 0 || rank >= tp) {
        nvl_report("tensor parallelism %d with rank %d: expected TP >= 1 and "
                   "0 <= rank < TP", tp, rank);
        return NVL_ERR_INVALID;
    }
    /* attention may leave ranks idle; the MLP and the vocabulary may not */
    if ((uint32_t)tp > cfg->intermediate || (uint32_t)tp > cfg->vocab) {
        nvl_report("tensor parallelism %d is more than model '%s' can use: "
                   "every rank needs rows of the MLP (%u) and of the "
                   "vocabulary (%u)", tp, cfg->name, cfg->intermediate,
                   cfg->vocab);
        return NVL_ERR_INVALID;
    }
    if (cfg->num_experts > 0 && (uint32_t)tp > cfg->moe_intermediate) {
        nvl_report("tensor parallelism %d is more than model '%s' can use: "
                   "every rank needs rows of each expert (%u)", tp, cfg->name,
                   cfg->moe_intermediate);
        return NVL_ERR_INVALID;
    }
    nvl_shard_t s;
    memset(&s, 0, sizeof s); /* padding too: shards compare whole */
    s.tp = tp;
    s.rank = rank;
    s.q_heads = nvl_range_split(cfg->q_heads, tp, rank);
    attention(cfg, &s);
    s.intermediate = nvl_range_split(cfg->intermediate, tp, rank);
    s.vocab = nvl_range_split(cfg->vocab, tp, rank);
    if (cfg->num_experts > 0 &&
        expert_rows(cfg, tp, rank, "tensor parallelism", &s.moe_intermediate) !=
            NVL_OK)
        return NVL_ERR_INVALID;
    s.ep = 1;
    s.etp = tp;
    s.experts = (nvl_range_t){0, cfg->num_experts};
    memcpy(shard_out, &s, sizeof s);
    return NVL_OK;
}

nvl_status_t nvl_shard_place(const nvl_model_config_t *cfg, int world,
                             int rank, const nvl_placement_t *pl,
                             nvl_shard_t *shard_out)
{
    if (world < 1 || rank < 0 || rank >= world) {
        nvl_report("%d ranks with rank %d: expected 0 <= rank < ranks", world,
                   rank);
        return NVL_ERR_INVALID;
    }
    int ep = pl->ep;
    if ((ep != 1 || pl->attn_dp) && cfg->num_experts == 0) {
        nvl_report("%s: model '%s' has no experts (expert parallelism and "
                   "data-parallel attention are for mixture-of-experts "
                   "models)", ep != 1 ? "--ep" : "--attn-parallel dp",
                   cfg->name);
        return NVL_ERR_INVALID;
    }
    if ((uint32_t)ep > cfg->num_experts && cfg->num_experts > 0) {
        nvl_report("--ep %d: model '%s' has only %u experts", ep, cfg->name,
                   cfg->num_experts);
        return NVL_ERR_INVALID;
    }
    if (ep < 1 || world % ep != 0) {
        nvl_report("--ep %d does not fit %d rank(s): the expert-parallel "
                   "degree must divide the world size (each group of "
                   "world / ep ranks shares its experts)", ep, world);
        return NVL_ERR_INVALID;
    }
    int etp = world / ep;
    if (cfg->num_experts > 0 && (uint32_t)etp > cfg->moe_intermediate) {
        nvl_report("--ep %d on %d ranks cuts every expert over %d ranks, "
                   "more than model '%s' can use (%u rows per expert)", ep,
                   world, etp, cfg->name, cfg->moe_intermediate);
        return NVL_ERR_INVALID;
    }
    /* the experts' rows are split below, over the expert-TP group */
    nvl_model_config_t even = *cfg;
    even.moe_split_block = 0;
    nvl_shard_t s;
    nvl_status_t st = nvl_shard_plan(&even, pl->attn_dp ? 1 : world,
                                     pl->attn_dp ? 0 : rank, &s);
    if (st != NVL_OK)
        return st;
    s.attn_dp = pl->attn_dp;
    s.ep = ep;
    s.etp = etp;
    s.ep_rank = rank / etp;
    if (cfg->num_experts > 0) {
        s.experts = nvl_range_split(cfg->num_experts, ep, s.ep_rank);
        if (expert_rows(cfg, etp, rank % etp,
                        ep == 1 ? "tensor parallelism"
                                : "expert tensor parallelism",
                        &s.moe_intermediate) != NVL_OK)
            return NVL_ERR_INVALID;
    }
    memcpy(shard_out, &s, sizeof s);
    return NVL_OK;
}
