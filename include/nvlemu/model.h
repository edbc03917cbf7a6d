/* nvlemu: the Qwen and Llama models an emulated rack serves: their
 * architecture, from a built-in preset or a Hugging Face config.json.
 *
 * Families: Qwen2 (biases on q, k and v) and Qwen3 (no bias unless
 * attention_bias, per-head RMSNorm on q and k before RoPE, head_dim
 * independent of hidden / heads), Qwen3-MoE (Qwen3's attention; the
 * MLP of most layers a mixture of experts: a router picks top_k of
 * num_experts SwiGLU experts per token), and Llama (Llama 2 / 3.x: Qwen2's
 * layer without the q, k, v biases, head_dim possibly given apart; Llama
 * 3.1 and later stretch RoPE with rope_type "llama3"), and gpt-oss
 * (OpenAI's MoE: biases on q, k, v and o, a learned sink logit per head,
 * sliding-window and full attention layers alternating, every layer a
 * mixture of experts with a biased router and biased, fused gate/up
 * experts running a clamped SwiGLU). */
#ifndef NVLEMU_MODEL_H
#define NVLEMU_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvlemu/family.h"
#include "nvlemu/quant.h"
#include "nvlemu/status.h"

/* config.json's model_type, one row each of nvl_model_type_family
 * (src/model/model_type.c: the name and what its loader does
 * differently). */
typedef enum {
    NVL_QWEN2,
    NVL_QWEN3,
    NVL_QWEN3_MOE,
    NVL_LLAMA,
    NVL_GPT_OSS
} nvl_model_family_t;

/* The attention a model's layers run: one variant each, whose tensors
 * and data-mode maths the engine holds (src/engine/layer_tensors.c). */
typedef enum {
    NVL_ATTN_KIND_GQA /* grouped-query attention over q, k, v projections */
} nvl_attn_kind_t;

/* The model types (`nvlemu --list model-type`) and the built-in presets
 * (`nvlemu --list model`, src/model/presets.c) as families (family.h). */
extern const nvl_family_t nvl_model_type_family;
extern const nvl_family_t nvl_model_preset_family;

/* Layers 0 .. 64 x NVL_FORMAT_LAYER_WORDS - 1 may keep a quantized class
 * in bf16 on their own (a bit each), or take another config group's
 * scheme (NVL_FORMAT_LAYERS entries). */
#define NVL_FORMAT_LAYER_WORDS 4
#define NVL_FORMAT_LAYERS (64 * NVL_FORMAT_LAYER_WORDS)

/* The weight format of each GEMM class (nvl_quant_class_t) in a
 * checkpoint: quantized[c] when class c is stored in `format` (any
 * false: nothing quantized, every class bf16), except in the layers
 * bf16_layers[c] names (bit l % 64 of word l / 64: an exclusion list that
 * leaves whole layers' attention, dense MLP or experts in bf16); for a
 * compressed-tensors checkpoint of several config groups, group[c] is the
 * group whose scheme class c takes (-1: none; read only when the
 * checkpoint's n_group > 1). */
typedef struct {
    bool any;
    nvl_quant_format_t format;
    bool quantized[NVL_QCLASS_COUNT];
    int group[NVL_QCLASS_COUNT];
    uint64_t bf16_layers[NVL_QCLASS_COUNT][NVL_FORMAT_LAYER_WORDS];
    /* compressed-tensors' groups by layer: layer_group[c][l] - 1 is the
     * group whose scheme class c takes in layer l where that is not
     * group[c]'s scheme (0: group[c]'s) */
    uint8_t layer_group[NVL_QCLASS_COUNT][NVL_FORMAT_LAYERS];
} nvl_model_formats_t;

/* Whether bit `layer` of a bf16_layers mask is set (layer < 0 or past the
 * mask: false). */
bool nvl_model_layer_bf16(const uint64_t mask[NVL_FORMAT_LAYER_WORDS],
                          int64_t layer);

#define NVL_MOE_MAX_MLP_ONLY 128 /* mlp_only_layers entries kept */
#define NVL_MODEL_MAX_LAYER_TYPES 256 /* layer_types entries kept */

typedef struct {
    char name[64];              /* preset name or the directory read */
    nvl_model_family_t family;
    nvl_attn_kind_t attn;       /* its model_type row's */
    uint32_t hidden;
    uint32_t intermediate;
    uint32_t layers;
    uint32_t q_heads;
    uint32_t kv_heads;
    uint32_t head_dim;
    uint32_t vocab;
    uint32_t max_positions;
    bool tied_embeddings;       /* lm_head shares the embedding matrix */
    bool qkv_bias;
    bool o_bias;                /* a bias on o_proj (gpt-oss) */
    bool qk_norm;
    /* gpt-oss's attention: a learned logit per query head in every
     * softmax's denominator (self_attn.sinks), and sliding-window layers
     * (layer_types "sliding_attention": a query sees the last
     * sliding_window positions, itself included) */
    bool attn_sinks;
    uint32_t sliding_window;    /* 0: every layer full */
    uint32_t n_layer_types;     /* layer_types entries read (0: none) */
    bool layer_sliding[NVL_MODEL_MAX_LAYER_TYPES];
    double rope_theta;
    /* YaRN rope scaling (config.json's rope_scaling, or rope_parameters,
     * of type "yarn"; nvlemu run --rope-scaling yarn:F): the factor (0:
     * none) and the pretrained context it stretches. */
    double rope_yarn_factor;
    uint32_t rope_original_positions;
    /* YaRN's ramp: beta_fast and beta_slow (rotations; 32 and 1 by
     * default), and whether its ends are rounded to whole dimensions
     * (truncate, true by default; gpt-oss: false) */
    double rope_yarn_beta_fast, rope_yarn_beta_slow;
    bool rope_yarn_no_truncate;
    /* Llama 3.1's rope scaling (rope_type "llama3"): the factor low
     * frequencies are divided by (0: none), and the wavelengths, as
     * fractions of rope_original_positions, between which the scaling
     * is blended (src/model/rope.c gives the formula). */
    double rope_llama3_factor;
    double rope_low_freq_factor;
    double rope_high_freq_factor;
    double rms_eps;
    /* mixture of experts (num_experts 0: every layer a dense MLP) */
    uint32_t num_experts;
    uint32_t top_k;             /* num_experts_per_tok */
    uint32_t moe_intermediate;  /* each expert's SwiGLU width */
    bool norm_topk_prob;        /* renormalise the top-k probabilities */
    /* gpt-oss's experts: stored fused (mlp.experts.gate_up_proj [E,
     * hidden, 2 x moe_intermediate], gate and up interleaved, and
     * down_proj [E, moe_intermediate, hidden], with their biases, the
     * router mlp.router.weight / .bias) and run as a clamped SwiGLU:
     * (clamp(up, -limit, limit) + 1) x g sigmoid(alpha g), g = min(gate,
     * limit) (swiglu_limit 0: silu(gate) x up) */
    bool experts_fused;
    double swiglu_alpha, swiglu_limit;
    /* each rank's part of an expert's rows in whole blocks of this many
     * (gpt-oss: 32, MX-FP4's block, as vLLM's loader splits it:
     * src/model/shard.c); 0: an even split */
    uint32_t moe_split_block;
    uint32_t decoder_sparse_step; /* every step-th layer is sparse */
    uint32_t n_mlp_only;        /* layers kept dense */
    uint32_t mlp_only_layers[NVL_MOE_MAX_MLP_ONLY];
    /* a preset: the formats its released checkpoint stores (gpt-oss:
     * MX-FP4 experts, the rest bf16); a config.json: none (the
     * checkpoint's quantization_config says, nvl_model_gemm_formats) */
    nvl_model_formats_t release;
} nvl_model_config_t;

/* The weight format of each GEMM class of cfg's checkpoint: q (a
 * quantized checkpoint's configuration, nvl_quant_config_read) covers the
 * classes its format's engines quantize (nvl_quant_class_covered) less
 * those whose modules its exclusion list names (nvl_quant_module_
 * excluded, over every layer's modules; an entry naming no module of the
 * model is ignored, as vLLM and transformers ignore it); q NULL or not
 * quantized: cfg->release.  A list that excludes every module of a class
 * in some layers and none in the others keeps those layers' class in
 * bf16 (bf16_layers: the attention and dense MLP classes, layers below
 * 64 x NVL_FORMAT_LAYER_WORDS); any other split (part of a layer's
 * modules, per-layer experts) is reported naming q's file, the key and
 * the entry: NVL_ERR_INVALID. */
/* Whether cfg has GEMMs of class c: attention and lm_head always, a
 * dense MLP when some layer is dense, experts and a router when some
 * layer is a mixture of experts. */
bool nvl_model_has_class(const nvl_model_config_t *cfg, nvl_quant_class_t c);

nvl_status_t nvl_model_gemm_formats(const nvl_model_config_t *cfg,
                                    const nvl_quant_config_t *q,
                                    nvl_model_formats_t *formats_out);

/* Whether layer's MLP is a mixture of experts, as transformers'
 * Qwen3MoeDecoderLayer decides: experts exist, the layer is not in
 * mlp_only_layers, and (layer + 1) is a multiple of decoder_sparse_step. */
bool nvl_model_layer_is_moe(const nvl_model_config_t *cfg, uint32_t layer);

/* The positions a query of layer `layer` sees (itself included): the
 * sliding window of a "sliding_attention" layer, else 0 (all before
 * it). */
uint32_t nvl_model_layer_window(const nvl_model_config_t *cfg,
                                uint32_t layer);

/* The built-in preset called name (a row of nvl_model_preset_family:
 * `nvlemu --list model`), with the values of its published config.json,
 * its name in cfg_out->name.  Reports an unknown name with the list of
 * presets and returns NVL_ERR_INVALID. */
nvl_status_t nvl_model_preset(const char *name,
                              nvl_model_config_t *cfg_out);

/* The presets in their table's order; a name, or NULL past the last. */
size_t nvl_model_preset_count(void);
const char *nvl_model_preset_name(size_t index);
/* Whether name is one of the presets. */
bool nvl_model_is_preset(const char *name);

/* Reads a Hugging Face config.json: path is the file or the directory
 * holding it.  Accepts rope_theta at the top level or under
 * rope_parameters (transformers' defaults where a key is absent: rope_theta
 * 10000, rms_norm_eps 1e-6, num_key_value_heads = heads, head_dim = hidden /
 * heads, max_position_embeddings 32768 (llama: 2048); rope_scaling (or
 * rope_parameters) of rope_type / type "default", "yarn" (factor required,
 * original_max_position_embeddings default max_position_embeddings) or
 * "llama3" (factor, low_freq_factor, high_freq_factor and
 * original_max_position_embeddings all required, high_freq_factor above
 * low_freq_factor), any other type refused); model_type qwen2, qwen3,
 * qwen3_moe (num_experts (or num_local_experts), num_experts_per_tok,
 * moe_intermediate_size required; norm_topk_prob default false,
 * decoder_sparse_step 1, mlp_only_layers []) or llama (attention_bias and
 * mlp_bias must be false or absent: their o_proj and MLP biases are not
 * modeled) or gpt_oss (num_local_experts, num_experts_per_tok required,
 * the experts' width intermediate_size; attention_bias default true;
 * sliding_window default 128 and layer_types, by default alternating from
 * a sliding layer as GptOssConfig makes them, each "sliding_attention" or
 * "full_attention"; swiglu_limit default 7.0).  Reports the file, the key and what was expected (or jansson's line
 * and column for bad JSON) and returns NVL_ERR_IO or NVL_ERR_INVALID. */
nvl_status_t nvl_model_config_load(const char *path,
                                   nvl_model_config_t *cfg_out);

/* The positions a sequence may reach: max_positions, or under YaRN
 * rope_yarn_factor x rope_original_positions when that is more (Qwen2.5's
 * 128K context: factor 4 over 32768, its model cards' "Processing Long
 * Texts"). */
uint64_t nvl_model_max_context(const nvl_model_config_t *cfg);

/* --rope-scaling: "none" (0) or "yarn:FACTOR" (FACTOR from 1 to 64) into
 * *factor_out; reports "LABEL TEXT: ..." and returns NVL_ERR_INVALID.
 * The signature of an nvl_opt_t parser. */
nvl_status_t nvl_model_rope_scaling_parse(const char *label, const char *text,
                                          void *factor_out);

/* RoPE's inverse frequency of pair i (0 .. d/2 - 1) of a head of d
 * dimensions, with Llama 3's scaling when cfg has a llama3 factor, else
 * YaRN's blend when it has a YaRN factor (src/model/rope.c gives the
 * formulas), and the factor the rotation's cos and sin are scaled by
 * (YaRN: 0.1 ln factor + 1; else 1). */
double nvl_model_rope_inv_freq(const nvl_model_config_t *cfg, uint32_t i,
                               uint32_t d);
double nvl_model_rope_scale(const nvl_model_config_t *cfg);

/* Applies a YaRN factor (> 0) to cfg: over the pretrained context of its
 * own YaRN scaling, else over max_positions.  A model with llama3 rope
 * scaling is left unchanged: reported (the two are not stacked), and
 * NVL_ERR_INVALID returned. */
nvl_status_t nvl_model_set_yarn(nvl_model_config_t *cfg, double factor);

/* Parameters of the model (embedding, layers, final norm, lm_head unless
 * tied). */
uint64_t nvl_model_param_count(const nvl_model_config_t *cfg);

#endif
