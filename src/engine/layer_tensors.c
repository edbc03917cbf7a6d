/* The tensors every layer shares (its norms and MLP), and the attention variants by the config's attn (layer_tensors.h). */
#include "layer_tensors.h"

uint64_t nvl_width_hidden(const nvl_model_config_t *c)
{
    return c->hidden;
}

static uint64_t inter_width(const nvl_model_config_t *c)
{
    return c->intermediate;
}

static uint64_t experts_width(const nvl_model_config_t *c)
{
    return c->num_experts;
}

static bool dense_mlp(const nvl_model_config_t *c, uint32_t layer)
{
    return !nvl_model_layer_is_moe(c, layer);
}

/* The router of a mixture of experts, named mlp.gate (Qwen3-MoE) or, with
 * a bias, mlp.router (gpt-oss); its experts are read by load.c
 * (load_experts, load_experts_fused). */
static bool moe_gate(const nvl_model_config_t *c, uint32_t layer)
{
    return nvl_model_layer_is_moe(c, layer) && !c->experts_fused;
}

static bool moe_router(const nvl_model_config_t *c, uint32_t layer)
{
    return nvl_model_layer_is_moe(c, layer) && c->experts_fused;
}

/* Hugging Face's Qwen2/Qwen3/Llama decoder layer (modeling_qwen3.py's
 * Qwen3DecoderLayer): gate and up column-parallel, down row-parallel
 * (Megatron's MLP split). */
const nvl_layer_tensor_t nvl_layer_tensors[NVL_LAYER_COUNT] = {
    [NVL_LAYER_IN_NORM] = {.suffix = "input_layernorm.weight",
                           .rows = nvl_width_hidden,
                           .split = NVL_SPLIT_WHOLE},
    [NVL_LAYER_POST_NORM] = {.suffix = "post_attention_layernorm.weight",
                             .rows = nvl_width_hidden,
                             .split = NVL_SPLIT_WHOLE},
    [NVL_LAYER_ROUTER] = {.suffix = "mlp.gate.weight",
                          .rows = experts_width,
                          .cols = nvl_width_hidden,
                          .split = NVL_SPLIT_WHOLE,
                          .in_layer = moe_gate},
    [NVL_LAYER_ROUTER_OSS] = {.suffix = "mlp.router.weight",
                              .rows = experts_width,
                              .cols = nvl_width_hidden,
                              .split = NVL_SPLIT_WHOLE,
                              .in_layer = moe_router},
    [NVL_LAYER_ROUTER_BIAS] = {.suffix = "mlp.router.bias",
                               .rows = experts_width,
                               .split = NVL_SPLIT_WHOLE,
                               .in_layer = moe_router},
    [NVL_LAYER_GATE] = {.suffix = "mlp.gate_proj.weight",
                        .rows = inter_width,
                        .cols = nvl_width_hidden,
                        .split = NVL_SPLIT_INTER_ROWS,
                        .in_layer = dense_mlp,
                        .gemm_in = NVL_GEMM_IN_GATE_UP},
    [NVL_LAYER_UP] = {.suffix = "mlp.up_proj.weight",
                      .rows = inter_width,
                      .cols = nvl_width_hidden,
                      .split = NVL_SPLIT_INTER_ROWS,
                      .in_layer = dense_mlp,
                      .gemm_in = NVL_GEMM_IN_GATE_UP},
    [NVL_LAYER_DOWN] = {.suffix = "mlp.down_proj.weight",
                        .rows = nvl_width_hidden,
                        .cols = inter_width,
                        .split = NVL_SPLIT_INTER_COLS,
                        .in_layer = dense_mlp,
                        .gemm_in = NVL_GEMM_IN_DOWN},
};

/* The first element and the count of a dimension of `full` elements that
 * a rank holds: r, its range in heads of full / heads elements each
 * (heads 0: in elements); r NULL: all of it. */
static void split_dim(uint64_t full, uint32_t heads, const nvl_range_t *r,
                      uint64_t *first_out, uint64_t *count_out)
{
    uint64_t unit = r != NULL && heads > 0 ? full / heads : 1;
    *first_out = r != NULL ? r->first * unit : 0;
    *count_out = r != NULL ? r->count * unit : full;
}

nvl_tensor_part_t nvl_layer_tensor_part(const nvl_layer_tensor_t *t,
                                        const nvl_model_config_t *c,
                                        const nvl_shard_t *s)
{
    nvl_tensor_part_t p = {.rows = t->rows(c),
                           .cols = t->cols != NULL ? t->cols(c) : 0};
    const nvl_range_t *rr = NULL, *cr = NULL;
    uint32_t rh = 0, ch = 0;
    switch (t->split) {
    case NVL_SPLIT_Q_ROWS:
        rr = &s->q_heads, rh = c->q_heads;
        break;
    case NVL_SPLIT_KV_ROWS:
        rr = &s->kv_heads, rh = c->kv_heads;
        break;
    case NVL_SPLIT_Q_COLS:
        cr = &s->q_heads, ch = c->q_heads;
        break;
    case NVL_SPLIT_INTER_ROWS:
        rr = &s->intermediate;
        break;
    case NVL_SPLIT_INTER_COLS:
        cr = &s->intermediate;
        break;
    case NVL_SPLIT_WHOLE:
        break;
    }
    split_dim(p.rows, rh, rr, &p.row0, &p.n_rows);
    split_dim(p.cols, ch, cr, &p.col0, &p.n_cols);
    return p;
}

/* The variants, one file each (their only reader is this table), a row
 * per nvl_attn_kind_t. */
extern const nvl_attn_variant_t nvl_attn_gqa; /* attn_gqa.c */

static const nvl_attn_variant_t *const variants[] = {
    [NVL_ATTN_KIND_GQA] = &nvl_attn_gqa,
};

const nvl_attn_variant_t *nvl_attn_variant_of(const nvl_model_config_t *c)
{
    return variants[c->attn];
}
