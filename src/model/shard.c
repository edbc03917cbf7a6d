/* Tensor-parallel sharding rules (include/nvlemu/shard.h). */
#include "nvlemu/shard.h"

nvl_range_t nvl_range_split(uint32_t n, int parts, int i)
{
    uint32_t base = n / (uint32_t)parts, extra = n % (uint32_t)parts;
    uint32_t ui = (uint32_t)i;
    nvl_range_t r;
    r.count = base + (ui < extra ? 1 : 0);
    r.first = ui * base + (ui < extra ? ui : extra);
    return r;
}

nvl_status_t nvl_shard_plan(const nvl_model_config_t *cfg, int tp, int rank,
                            nvl_shard_t *out)
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
    nvl_shard_t s = {.tp = tp, .rank = rank};
    s.q_heads = nvl_range_split(cfg->q_heads, tp, rank);
    if (s.q_heads.count > 0) {
        /* a group of `group` query heads reads one key/value head */
        uint32_t group = cfg->q_heads / cfg->kv_heads;
        uint32_t first = s.q_heads.first / group;
        uint32_t last = (s.q_heads.first + s.q_heads.count - 1) / group;
        s.kv_heads = (nvl_range_t){first, last - first + 1};
    } else {
        s.kv_heads = (nvl_range_t){0, 0};
    }
    s.intermediate = nvl_range_split(cfg->intermediate, tp, rank);
    s.vocab = nvl_range_split(cfg->vocab, tp, rank);
    if (cfg->num_experts > 0)
        s.moe_intermediate = nvl_range_split(cfg->moe_intermediate, tp, rank);
    *out = s;
    return NVL_OK;
}
