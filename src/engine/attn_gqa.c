/* Grouped-query attention in data mode (Qwen2, Qwen3, Llama, gpt-oss):
 * its tensors, and q, k, v projections, (Qwen3) per-head q and k norms,
 * RoPE, the new keys and values cached, causal attention over the cache,
 * and o_proj's partial sums.  A rank holds whole query heads and the kv
 * heads they read (Megatron's attention split): q/k/v column-parallel,
 * o_proj row-parallel.
 *
 * gpt-oss's differences (transformers' modeling_gpt_oss.py,
 * eager_attention_forward): a learned logit s_h per query head joins
 * every softmax's denominator and no output (probabilities
 * exp(x_p - m) / (sum_p exp(x_p - m) + exp(s_h - m)), m the largest of
 * the x_p and s_h); a "sliding_attention" layer's query at position t
 * sees positions p > t - sliding_window (masking_utils.py,
 * sliding_window_overlay); o_proj has a bias, added once, by the rank
 * that holds query head 0. */
#include <math.h>

#include "layer_tensors.h"

/* Its tensors: the rows of gqa_tensors, a layer's attn[] slots. */
enum {
    GQA_WQ,     /* [q_heads x head_dim, hidden] */
    GQA_WK,     /* [kv_heads x head_dim, hidden] */
    GQA_WV,
    GQA_BQ,     /* [q_heads x head_dim] */
    GQA_BK,     /* [kv_heads x head_dim] */
    GQA_BV,
    GQA_Q_NORM, /* [head_dim], shared by the heads */
    GQA_K_NORM,
    GQA_WO,     /* [hidden, q_heads x head_dim] */
    GQA_BO,     /* [hidden] (gpt-oss) */
    GQA_SINKS,  /* [q_heads] (gpt-oss) */
    GQA_COUNT
};
_Static_assert(GQA_COUNT <= NVL_ATTN_TENSORS_MAX, "attn[] holds GQA's");

static uint64_t head_width(const nvl_model_config_t *c)
{
    return c->head_dim;
}

static uint64_t q_width(const nvl_model_config_t *c)
{
    return (uint64_t)c->q_heads * c->head_dim;
}

static uint64_t kv_width(const nvl_model_config_t *c)
{
    return (uint64_t)c->kv_heads * c->head_dim;
}

static bool qkv_bias(const nvl_model_config_t *c, uint32_t layer)
{
    (void)layer;
    return c->qkv_bias;
}

static bool qk_norm(const nvl_model_config_t *c, uint32_t layer)
{
    (void)layer;
    return c->qk_norm;
}

static bool o_bias(const nvl_model_config_t *c, uint32_t layer)
{
    (void)layer;
    return c->o_bias;
}

static bool sinks(const nvl_model_config_t *c, uint32_t layer)
{
    (void)layer;
    return c->attn_sinks;
}

static uint64_t heads_width(const nvl_model_config_t *c)
{
    return c->q_heads;
}

static const nvl_layer_tensor_t gqa_tensors[GQA_COUNT] = {
    [GQA_WQ] = {.suffix = "self_attn.q_proj.weight", .rows = q_width,
                .cols = nvl_width_hidden, .split = NVL_SPLIT_Q_ROWS,
                .gemm_in = NVL_GEMM_IN_QKV},
    [GQA_WK] = {.suffix = "self_attn.k_proj.weight", .rows = kv_width,
                .cols = nvl_width_hidden, .split = NVL_SPLIT_KV_ROWS,
                .gemm_in = NVL_GEMM_IN_QKV},
    [GQA_WV] = {.suffix = "self_attn.v_proj.weight", .rows = kv_width,
                .cols = nvl_width_hidden, .split = NVL_SPLIT_KV_ROWS,
                .gemm_in = NVL_GEMM_IN_QKV},
    [GQA_BQ] = {.suffix = "self_attn.q_proj.bias", .rows = q_width,
                .split = NVL_SPLIT_Q_ROWS, .in_layer = qkv_bias},
    [GQA_BK] = {.suffix = "self_attn.k_proj.bias", .rows = kv_width,
                .split = NVL_SPLIT_KV_ROWS, .in_layer = qkv_bias},
    [GQA_BV] = {.suffix = "self_attn.v_proj.bias", .rows = kv_width,
                .split = NVL_SPLIT_KV_ROWS, .in_layer = qkv_bias},
    [GQA_Q_NORM] = {.suffix = "self_attn.q_norm.weight",
                    .rows = head_width, .split = NVL_SPLIT_WHOLE,
                    .in_layer = qk_norm},
    [GQA_K_NORM] = {.suffix = "self_attn.k_norm.weight",
                    .rows = head_width, .split = NVL_SPLIT_WHOLE,
                    .in_layer = qk_norm},
    [GQA_WO] = {.suffix = "self_attn.o_proj.weight", .rows = nvl_width_hidden,
                .cols = q_width, .split = NVL_SPLIT_Q_COLS,
                .gemm_in = NVL_GEMM_IN_O},
    [GQA_BO] = {.suffix = "self_attn.o_proj.bias", .rows = nvl_width_hidden,
                .split = NVL_SPLIT_WHOLE, .in_layer = o_bias},
    [GQA_SINKS] = {.suffix = "self_attn.sinks", .rows = heads_width,
                   .split = NVL_SPLIT_Q_ROWS, .in_layer = sinks},
};

/* Causal attention of sequence s's new rows (from row r0) over its cache,
 * for this rank's query heads, each reading its group's kv head. */
static void attend(nvl_engine_t *e, const nvl_kv_cache_t *c, uint32_t li,
                   uint64_t r0, uint64_t T, uint64_t past, nvl_acts_t *b)
{
    const nvl_shard_t *s = &e->shard;
    uint64_t hd = e->cfg.head_dim, qn = s->q_heads.count;
    uint64_t kn = s->kv_heads.count;
    double scale = 1.0 / sqrt((double)hd);
    const float *kc = c->k[li], *vc = c->v[li];
    const float *sink = e->lw[li].attn[GQA_SINKS];
    uint64_t win = nvl_model_layer_window(&e->cfg, e->layer0 + li);
    for (uint64_t j = 0; j < qn; j++) {
        uint64_t kvj =
            nvl_shard_kv_head_of(&e->cfg, s->q_heads.first + (uint32_t)j) -
            s->kv_heads.first;
        for (uint64_t t = 0; t < T; t++) {
            const float *qv = b->q + ((r0 + t) * qn + j) * hd;
            uint64_t upto = past + t;
            uint64_t from = win > 0 && upto + 1 > win ? upto + 1 - win : 0;
            double mx = sink ? sink[j] : -INFINITY, sum = 0;
            for (uint64_t p = from; p <= upto; p++) {
                const float *kv = kc + (p * kn + kvj) * hd;
                double dot = 0;
                for (uint64_t i = 0; i < hd; i++)
                    dot += (double)qv[i] * kv[i];
                b->sc[p] = (float)(dot * scale);
                if (b->sc[p] > mx)
                    mx = b->sc[p];
            }
            for (uint64_t p = from; p <= upto; p++) {
                b->sc[p] = (float)exp(b->sc[p] - mx);
                sum += b->sc[p];
            }
            if (sink)
                sum += exp(sink[j] - mx);
            float *av = b->a + ((r0 + t) * qn + j) * hd;
            for (uint64_t i = 0; i < hd; i++) {
                double acc = 0;
                for (uint64_t p = from; p <= upto; p++)
                    acc += (double)b->sc[p] * vc[(p * kn + kvj) * hd + i];
                av[i] = (float)(acc / sum);
            }
        }
    }
}

/* Row r (position pos of sequence sq): the q and k heads normed (Qwen3)
 * and rotated, the new key and value appended to the cache. */
static void rope_and_cache(nvl_engine_t *e, uint32_t li, nvl_kv_cache_t *cs,
                           uint64_t r, uint64_t pos, nvl_acts_t *b)
{
    const nvl_model_config_t *c = &e->cfg;
    float *const *w = e->lw[li].attn;
    uint64_t hd = c->head_dim, qn = e->shard.q_heads.count;
    uint64_t kn = e->shard.kv_heads.count;
    for (uint64_t j = 0; j < qn; j++) {
        float *qv = b->q + (r * qn + j) * hd;
        if (w[GQA_Q_NORM])
            nvl_engine_rmsnorm(qv, w[GQA_Q_NORM], qv, 1, hd, c->rms_eps);
        nvl_engine_rope(qv, hd, pos, c);
    }
    for (uint64_t j = 0; j < kn; j++) {
        float *kv = b->k + (r * kn + j) * hd;
        if (w[GQA_K_NORM])
            nvl_engine_rmsnorm(kv, w[GQA_K_NORM], kv, 1, hd, c->rms_eps);
        nvl_engine_rope(kv, hd, pos, c);
    }
    nvl_engine_kv_store(e, li, 0, cs->k[li] + pos * kn * hd,
                        b->k + r * kn * hd, kn * hd);
    nvl_engine_kv_store(e, li, 1, cs->v[li] + pos * kn * hd,
                        b->v + r * kn * hd, kn * hd);
}

static void gqa_forward(nvl_engine_t *e, uint32_t li, int n,
                        nvl_kv_cache_t *caches, const uint64_t *T,
                        const uint64_t *past, uint64_t M, nvl_acts_t *b)
{
    float *const *w = e->lw[li].attn;
    uint64_t hid = e->cfg.hidden, hd = e->cfg.head_dim;
    uint64_t qn = e->shard.q_heads.count, kn = e->shard.kv_heads.count;
    const float *in =
        nvl_engine_gemm_input(e, li, NVL_GEMM_IN_QKV, b->h, M, hid);
    nvl_engine_linear(in, w[GQA_WQ], w[GQA_BQ], b->q, M, qn * hd, hid);
    nvl_engine_linear(in, w[GQA_WK], w[GQA_BK], b->k, M, kn * hd, hid);
    nvl_engine_linear(in, w[GQA_WV], w[GQA_BV], b->v, M, kn * hd, hid);
    uint64_t r = 0;
    for (int sq = 0; sq < n; sq++)
        for (uint64_t t = 0; t < T[sq]; t++, r++)
            rope_and_cache(e, li, &caches[sq], r, past[sq] + t, b);
    r = 0;
    for (int sq = 0; sq < n; sq++) {
        attend(e, &caches[sq], li, r, T[sq], past[sq], b);
        r += T[sq];
    }
    /* row-parallel o_proj: partial sums (zeros on ranks without heads),
     * the bias added by the rank of query head 0 */
    const float *bo = e->shard.q_heads.first == 0 && qn > 0 ? w[GQA_BO]
                                                           : NULL;
    nvl_engine_linear(nvl_engine_gemm_input(e, li, NVL_GEMM_IN_O, b->a, M,
                                            qn * hd),
                      w[GQA_WO], bo, b->h, M, hid, qn * hd);
}

const nvl_attn_variant_t nvl_attn_gqa = {
    .name = "gqa",
    .tensors = gqa_tensors,
    .n_tensors = GQA_COUNT,
    .o_proj = GQA_WO,
    .forward = gqa_forward,
};
