/* The model types nvlemu reads from config.json's model_type: one row
 * each (model_impl.h), carrying what the loader does differently for it
 * (config.c reads what they share). */
#include <string.h>

#include "model_impl.h"

/* The mixture-of-experts keys of a qwen3_moe config.json. */
static int get_moe(json_t *root, const char *file, nvl_model_config_t *c)
{
    /* the hub's checkpoints say num_experts, transformers 5 writes
     * num_local_experts */
    const char *experts = json_object_get(root, "num_experts") == NULL &&
                                  json_object_get(root, "num_local_experts")
                              ? "num_local_experts"
                              : "num_experts";
    if (!nvl_cfg_count(root, file, experts, 0, &c->num_experts) ||
        !nvl_cfg_count(root, file, "num_experts_per_tok", 0, &c->top_k) ||
        !nvl_cfg_count(root, file, "moe_intermediate_size", 0,
                       &c->moe_intermediate) ||
        !nvl_cfg_count(root, file, "decoder_sparse_step", 1,
                       &c->decoder_sparse_step) ||
        !nvl_cfg_bool(root, file, "norm_topk_prob", false, &c->norm_topk_prob))
        return 0;
    if (c->top_k > c->num_experts) {
        nvl_report("%s: num_experts_per_tok %u is more than %s %u", file,
                   c->top_k, experts, c->num_experts);
        return 0;
    }
    json_t *list = json_object_get(root, "mlp_only_layers");
    if (list == NULL || json_is_null(list))
        return 1;
    if (!json_is_array(list) ||
        json_array_size(list) > NVL_MOE_MAX_MLP_ONLY) {
        nvl_report("%s: 'mlp_only_layers' must be a list of at most %d "
                   "layer indices", file, NVL_MOE_MAX_MLP_ONLY);
        return 0;
    }
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= (json_int_t)c->layers) {
            nvl_report("%s: 'mlp_only_layers' entry %zu is not a layer index "
                       "(0..%u)", file, i, c->layers - 1);
            return 0;
        }
        c->mlp_only_layers[c->n_mlp_only++] = (uint32_t)json_integer_value(v);
    }
    return 1;
}

/* Qwen2: q, k and v always carry biases (no key says so). */
static int get_qwen2_biases(json_t *root, const char *file,
                            nvl_model_config_t *c)
{
    (void)root, (void)file;
    c->qkv_bias = true;
    return 1;
}

/* Qwen3: biases on q, k and v only with attention_bias. */
static int get_qwen3_biases(json_t *root, const char *file,
                            nvl_model_config_t *c)
{
    return nvl_cfg_bool(root, file, "attention_bias", false, &c->qkv_bias);
}

/* Llama's attention_bias puts a bias on o_proj too, and mlp_bias on the
 * three MLP projections: neither is modeled, so both must be false. */
static int get_llama_biases(json_t *root, const char *file,
                            nvl_model_config_t *c)
{
    static const char *const keys[] = {"attention_bias", "mlp_bias"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        bool on;
        if (!nvl_cfg_bool(root, file, keys[i], false, &on))
            return 0;
        if (on) {
            nvl_report("%s: '%s' true is not supported for model_type llama "
                       "(only bias-free Llama checkpoints, as Meta's, are "
                       "modeled)", file, keys[i]);
            return 0;
        }
    }
    c->qkv_bias = false;
    return 1;
}

/* gpt-oss (transformers' GptOssConfig, modeling_gpt_oss.py): every layer
 * a mixture of num_local_experts experts of intermediate_size, top
 * num_experts_per_tok chosen on the router's biased logits and weighted
 * by the softmax over those k (the same weights as the softmax over all,
 * renormalised over the k: norm_topk_prob); the experts fused and
 * biased, their SwiGLU clamped at swiglu_limit with GptOssExperts' alpha
 * 1.702 (a constant of the module, not a key). */
static int get_gptoss_experts(json_t *root, const char *file,
                              nvl_model_config_t *c)
{
    if (!nvl_cfg_count(root, file, "num_local_experts", 0, &c->num_experts) ||
        !nvl_cfg_count(root, file, "num_experts_per_tok", 0, &c->top_k))
        return 0;
    if (c->top_k > c->num_experts) {
        nvl_report("%s: num_experts_per_tok %u is more than "
                   "num_local_experts %u", file, c->top_k, c->num_experts);
        return 0;
    }
    c->moe_intermediate = c->intermediate;
    c->norm_topk_prob = true;
    c->decoder_sparse_step = 1;
    c->experts_fused = true;
    c->swiglu_alpha = 1.702;
    c->swiglu_limit = 7.0;
    c->moe_split_block = 32;
    return nvl_cfg_real(root, file, "swiglu_limit", &c->swiglu_limit) != 0;
}

/* gpt-oss: attention_bias (default true) on q, k, v and o. */
static int get_gptoss_biases(json_t *root, const char *file,
                             nvl_model_config_t *c)
{
    if (!nvl_cfg_bool(root, file, "attention_bias", true, &c->qkv_bias))
        return 0;
    c->o_bias = c->qkv_bias;
    return 1;
}

/* gpt-oss's sinks, sliding_window (default 128) and layer_types (default:
 * layer i sliding when i is even, GptOssConfig's rule). */
static int get_gptoss_attention(json_t *root, const char *file,
                                nvl_model_config_t *c)
{
    c->attn_sinks = true;
    if (!nvl_cfg_count(root, file, "sliding_window", 128, &c->sliding_window))
        return 0;
    if (c->layers > NVL_MODEL_MAX_LAYER_TYPES) {
        nvl_report("%s: %u layers: at most %d layer types are kept", file,
                   c->layers, NVL_MODEL_MAX_LAYER_TYPES);
        return 0;
    }
    c->n_layer_types = c->layers;
    json_t *list = json_object_get(root, "layer_types");
    if (list == NULL || json_is_null(list)) {
        for (uint32_t i = 0; i < c->layers; i++)
            c->layer_sliding[i] = i % 2 == 0;
        return 1;
    }
    if (!json_is_array(list) || json_array_size(list) != c->layers) {
        nvl_report("%s: 'layer_types' must be a list of num_hidden_layers "
                   "(%u) entries", file, c->layers);
        return 0;
    }
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        const char *t = json_string_value(v);
        bool sliding = t != NULL && strcmp(t, "sliding_attention") == 0;
        if (!sliding && (t == NULL || strcmp(t, "full_attention") != 0)) {
            nvl_report("%s: 'layer_types' entry %zu is not "
                       "\"sliding_attention\" or \"full_attention\"", file,
                       i);
            return 0;
        }
        c->layer_sliding[i] = sliding;
    }
    return 1;
}

/* Defaults: transformers' Qwen2Config / Qwen3Config (max_position_embeddings
 * 32768) and LlamaConfig (2048). */
const nvl_model_type_row_t nvl_model_type_rows[] = {
    [NVL_QWEN2] = {{"qwen2", "Qwen2, Qwen2.5: biases on q, k and v; head_dim "
                             "hidden / heads"},
                   .default_max_positions = 32768,
                   .head_dim_from_heads = true,
                   .qk_norm = false,
                   .attn = NVL_ATTN_KIND_GQA,
                   .get_biases = get_qwen2_biases},
    [NVL_QWEN3] = {{"qwen3", "Qwen3: per-head RMSNorm on q and k before "
                             "RoPE, biases only with attention_bias, "
                             "head_dim given apart"},
                   .default_max_positions = 32768,
                   .qk_norm = true,
                   .attn = NVL_ATTN_KIND_GQA,
                   .get_biases = get_qwen3_biases},
    [NVL_QWEN3_MOE] = {{"qwen3_moe", "Qwen3-MoE: Qwen3's attention, most "
                                     "layers' MLP a mixture of SwiGLU "
                                     "experts (top_k of num_experts)"},
                       .default_max_positions = 32768,
                       .qk_norm = true,
                       .attn = NVL_ATTN_KIND_GQA,
                       .get_experts = get_moe,
                       .get_biases = get_qwen3_biases},
    [NVL_LLAMA] = {{"llama", "Llama 2, 3.x: Qwen2's layer without biases "
                             "(attention_bias, mlp_bias must be false), "
                             "rope_type llama3"},
                   .default_max_positions = 2048,
                   .qk_norm = false,
                   .attn = NVL_ATTN_KIND_GQA,
                   .get_biases = get_llama_biases},
    [NVL_GPT_OSS] = {{"gpt_oss", "gpt-oss: biases on q, k, v, o; a sink "
                                 "logit per head; sliding-window and full "
                                 "layers; every MLP biased experts with a "
                                 "clamped SwiGLU (MX-FP4 in the releases)"},
                     .default_max_positions = 131072,
                     .qk_norm = false,
                     .attn = NVL_ATTN_KIND_GQA,
                     .get_experts = get_gptoss_experts,
                     .get_biases = get_gptoss_biases,
                     .get_attention = get_gptoss_attention},
};

const nvl_family_t nvl_model_type_family =
    NVL_FAMILY("model-type", "config.json's model_type values nvlemu reads "
                             "(--model DIR)",
               nvl_model_type_rows);
