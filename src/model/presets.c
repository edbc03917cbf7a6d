/* The built-in models: one table of presets, a row per model with the
 * values of its published config.json, as the family "model" (the names
 * --model takes besides a Hugging Face directory). */
#include <stdio.h>

#include "nvlemu/model.h"

/* Values of each model's config.json on the Hugging Face hub (Qwen/...,
 * and meta-llama/Llama-3.3-70B-Instruct, meta-llama/Llama-3.1-405B: no
 * biases, head_dim 128, rope_scaling {rope_type llama3, factor 8,
 * low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings
 * 8192}). */
/* openai/gpt-oss-20b and openai/gpt-oss-120b's config.json on the hub
 * (their model card: 24 / 36 layers, 32 / 128 experts, top 4): hidden
 * 2880, intermediate_size 2880 (each expert's), 64 query / 8 KV heads
 * of head_dim 64, vocabulary 201088, attention_bias true,
 * sliding_window 128 with layer_types alternating from
 * "sliding_attention", rope_theta 150000 and rope_scaling {rope_type
 * yarn, factor 32, original_max_position_embeddings 4096, beta_fast 32,
 * beta_slow 1, truncate false}, max_position_embeddings 131072,
 * rms_norm_eps 1e-5, swiglu_limit 7.0, untied embeddings; released with
 * quantization_config {quant_method "mxfp4", modules_to_not_convert
 * ["model.layers.*.self_attn", "model.layers.*.mlp.router",
 * "model.embed_tokens", "lm_head"]}: the experts MX-FP4, the rest bf16. */
#define NVL_GPTOSS_ALTERNATE_12                                              \
    true, false, true, false, true, false, true, false, true, false, true,  \
        false
#define NVL_GPTOSS_PRESET(n_layers, n_experts, ...)                       \
    {.family = NVL_GPT_OSS, .hidden = 2880, .intermediate = 2880,           \
     .layers = (n_layers), .q_heads = 64, .kv_heads = 8, .head_dim = 64,    \
     .vocab = 201088, .max_positions = 131072, .tied_embeddings = false,    \
     .qkv_bias = true, .o_bias = true, .qk_norm = false, .attn_sinks = true,\
     .sliding_window = 128, .n_layer_types = (n_layers),                    \
     .layer_sliding = {__VA_ARGS__}, .rope_theta = 150000.0,            \
     .rope_yarn_factor = 32, .rope_original_positions = 4096,               \
     .rope_yarn_beta_fast = 32, .rope_yarn_beta_slow = 1,                   \
     .rope_yarn_no_truncate = true, .rms_eps = 1e-5,                        \
     .num_experts = (n_experts), .top_k = 4, .moe_intermediate = 2880,      \
     .norm_topk_prob = true, .decoder_sparse_step = 1,                      \
     .experts_fused = true, .swiglu_alpha = 1.702, .swiglu_limit = 7.0,    \
     .moe_split_block = 32,                                                \
     .release = {.any = true, .format = NVL_QUANT_MXFP4,                    \
                 .quantized = {[NVL_QCLASS_EXPERTS] = true}}}

typedef struct {
    nvl_member_t id;        /* the preset's name (cfg.name when copied) */
    nvl_model_config_t cfg;
} preset_row_t;

static const preset_row_t presets[] = {
    {{"qwen2.5-72b",
      "Qwen/Qwen2.5-72B-Instruct: dense, 80 layers, hidden 8192"},
     {.family = NVL_QWEN2, .hidden = 8192,
      .intermediate = 29568, .layers = 80, .q_heads = 64, .kv_heads = 8,
      .head_dim = 128, .vocab = 152064, .max_positions = 32768,
      .tied_embeddings = false, .qkv_bias = true, .qk_norm = false,
      .rope_theta = 1000000.0, .rms_eps = 1e-6}},
    {{"qwen2.5-7b",
      "Qwen/Qwen2.5-7B-Instruct: dense, 28 layers, hidden 3584"},
     {.family = NVL_QWEN2, .hidden = 3584,
      .intermediate = 18944, .layers = 28, .q_heads = 28, .kv_heads = 4,
      .head_dim = 128, .vocab = 152064, .max_positions = 131072,
      .tied_embeddings = false, .qkv_bias = true, .qk_norm = false,
      .rope_theta = 1000000.0, .rms_eps = 1e-6}},
    {{"qwen2.5-0.5b",
      "Qwen/Qwen2.5-0.5B-Instruct: dense, 24 layers, tied embeddings"},
     {.family = NVL_QWEN2, .hidden = 896,
      .intermediate = 4864, .layers = 24, .q_heads = 14, .kv_heads = 2,
      .head_dim = 64, .vocab = 151936, .max_positions = 32768,
      .tied_embeddings = true, .qkv_bias = true, .qk_norm = false,
      .rope_theta = 1000000.0, .rms_eps = 1e-6}},
    {{"qwen3-32b",
      "Qwen/Qwen3-32B: dense, 64 layers, hidden 5120"},
     {.family = NVL_QWEN3, .hidden = 5120,
      .intermediate = 25600, .layers = 64, .q_heads = 64, .kv_heads = 8,
      .head_dim = 128, .vocab = 151936, .max_positions = 40960,
      .tied_embeddings = false, .qkv_bias = false, .qk_norm = true,
      .rope_theta = 1000000.0, .rms_eps = 1e-6}},
    {{"qwen3-30b-a3b",
      "Qwen/Qwen3-30B-A3B: 48 layers, 128 experts, top 8"},
     {.family = NVL_QWEN3_MOE, .hidden = 2048,
      .intermediate = 6144, .layers = 48, .q_heads = 32, .kv_heads = 4,
      .head_dim = 128, .vocab = 151936, .max_positions = 40960,
      .tied_embeddings = false, .qkv_bias = false, .qk_norm = true,
      .rope_theta = 1000000.0, .rms_eps = 1e-6, .num_experts = 128,
      .top_k = 8, .moe_intermediate = 768, .norm_topk_prob = true,
      .decoder_sparse_step = 1}},
    {{"qwen3-235b-a22b",
      "Qwen/Qwen3-235B-A22B: 94 layers, 128 experts, top 8"},
     {.family = NVL_QWEN3_MOE, .hidden = 4096,
      .intermediate = 12288, .layers = 94, .q_heads = 64, .kv_heads = 4,
      .head_dim = 128, .vocab = 151936, .max_positions = 40960,
      .tied_embeddings = false, .qkv_bias = false, .qk_norm = true,
      .rope_theta = 1000000.0, .rms_eps = 1e-6, .num_experts = 128,
      .top_k = 8, .moe_intermediate = 1536, .norm_topk_prob = true,
      .decoder_sparse_step = 1}},
    {{"llama3.3-70b",
      "meta-llama/Llama-3.3-70B-Instruct: dense, 80 layers, hidden 8192"},
     {.family = NVL_LLAMA, .hidden = 8192,
      .intermediate = 28672, .layers = 80, .q_heads = 64, .kv_heads = 8,
      .head_dim = 128, .vocab = 128256, .max_positions = 131072,
      .tied_embeddings = false, .qkv_bias = false, .qk_norm = false,
      .rope_theta = 500000.0, .rms_eps = 1e-5, .rope_llama3_factor = 8,
      .rope_low_freq_factor = 1, .rope_high_freq_factor = 4,
      .rope_original_positions = 8192}},
    {{"llama3.1-405b",
      "meta-llama/Llama-3.1-405B: dense, 126 layers, hidden 16384"},
     {.family = NVL_LLAMA, .hidden = 16384,
      .intermediate = 53248, .layers = 126, .q_heads = 128, .kv_heads = 8,
      .head_dim = 128, .vocab = 128256, .max_positions = 131072,
      .tied_embeddings = false, .qkv_bias = false, .qk_norm = false,
      .rope_theta = 500000.0, .rms_eps = 1e-5, .rope_llama3_factor = 8,
      .rope_low_freq_factor = 1, .rope_high_freq_factor = 4,
      .rope_original_positions = 8192}},
    {{"gpt-oss-20b",
      "openai/gpt-oss-20b: 24 layers, 32 experts, top 4 (MX-FP4 experts)"},
     NVL_GPTOSS_PRESET(24, 32, NVL_GPTOSS_ALTERNATE_12,
                       NVL_GPTOSS_ALTERNATE_12)},
    {{"gpt-oss-120b",
      "openai/gpt-oss-120b: 36 layers, 128 experts, top 4 (MX-FP4 "
      "experts)"},
     NVL_GPTOSS_PRESET(36, 128, NVL_GPTOSS_ALTERNATE_12,
                       NVL_GPTOSS_ALTERNATE_12, NVL_GPTOSS_ALTERNATE_12)},
};


const nvl_family_t nvl_model_preset_family =
    NVL_FAMILY("model", "built-in model presets (--model NAME; or a Hugging "
                        "Face model directory)",
               presets);

size_t nvl_model_preset_count(void) { return nvl_model_preset_family.n_rows; }

const char *nvl_model_preset_name(size_t i)
{
    return i < nvl_model_preset_family.n_rows ? presets[i].id.name : NULL;
}

bool nvl_model_is_preset(const char *name)
{
    int i;
    return nvl_family_parse(&nvl_model_preset_family, name, &i) == NVL_OK;
}

nvl_status_t nvl_model_preset(const char *name,
                              nvl_model_config_t *cfg_out)
{
    int i;
    if (nvl_family_parse(&nvl_model_preset_family, name, &i) == NVL_OK) {
        *cfg_out = presets[i].cfg;
        snprintf(cfg_out->name, sizeof cfg_out->name, "%s",
                 presets[i].id.name);
        return NVL_OK;
    }
    char list[512];
    nvl_family_names(&nvl_model_preset_family, ", ", ", ", list, sizeof list);
    nvl_report("unknown model preset '%s' (presets: %s; or give a Hugging "
               "Face model directory)", name, list);
    return NVL_ERR_INVALID;
}
