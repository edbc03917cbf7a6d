/* Qwen and Llama model configurations: one table of presets, and the
 * reader of a Hugging Face config.json (jansson). */
#include "nvlemu/model.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Values of each model's config.json on the Hugging Face hub (Qwen/...,
 * and meta-llama/Llama-3.3-70B-Instruct, meta-llama/Llama-3.1-405B: no
 * biases, head_dim 128, rope_scaling {rope_type llama3, factor 8,
 * low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings
 * 8192}). */
static const nvl_model_config_t presets[] = {
    {.name = "qwen2.5-72b", .family = NVL_QWEN2, .hidden = 8192,
     .intermediate = 29568, .layers = 80, .q_heads = 64, .kv_heads = 8,
     .head_dim = 128, .vocab = 152064, .max_positions = 32768,
     .tied_embeddings = false, .qkv_bias = true, .qk_norm = false,
     .rope_theta = 1000000.0, .rms_eps = 1e-6},
    {.name = "qwen2.5-7b", .family = NVL_QWEN2, .hidden = 3584,
     .intermediate = 18944, .layers = 28, .q_heads = 28, .kv_heads = 4,
     .head_dim = 128, .vocab = 152064, .max_positions = 131072,
     .tied_embeddings = false, .qkv_bias = true, .qk_norm = false,
     .rope_theta = 1000000.0, .rms_eps = 1e-6},
    {.name = "qwen2.5-0.5b", .family = NVL_QWEN2, .hidden = 896,
     .intermediate = 4864, .layers = 24, .q_heads = 14, .kv_heads = 2,
     .head_dim = 64, .vocab = 151936, .max_positions = 32768,
     .tied_embeddings = true, .qkv_bias = true, .qk_norm = false,
     .rope_theta = 1000000.0, .rms_eps = 1e-6},
    {.name = "qwen3-32b", .family = NVL_QWEN3, .hidden = 5120,
     .intermediate = 25600, .layers = 64, .q_heads = 64, .kv_heads = 8,
     .head_dim = 128, .vocab = 151936, .max_positions = 40960,
     .tied_embeddings = false, .qkv_bias = false, .qk_norm = true,
     .rope_theta = 1000000.0, .rms_eps = 1e-6},
    {.name = "qwen3-30b-a3b", .family = NVL_QWEN3_MOE, .hidden = 2048,
     .intermediate = 6144, .layers = 48, .q_heads = 32, .kv_heads = 4,
     .head_dim = 128, .vocab = 151936, .max_positions = 40960,
     .tied_embeddings = false, .qkv_bias = false, .qk_norm = true,
     .rope_theta = 1000000.0, .rms_eps = 1e-6, .num_experts = 128,
     .top_k = 8, .moe_intermediate = 768, .norm_topk_prob = true,
     .decoder_sparse_step = 1},
    {.name = "qwen3-235b-a22b", .family = NVL_QWEN3_MOE, .hidden = 4096,
     .intermediate = 12288, .layers = 94, .q_heads = 64, .kv_heads = 4,
     .head_dim = 128, .vocab = 151936, .max_positions = 40960,
     .tied_embeddings = false, .qkv_bias = false, .qk_norm = true,
     .rope_theta = 1000000.0, .rms_eps = 1e-6, .num_experts = 128,
     .top_k = 8, .moe_intermediate = 1536, .norm_topk_prob = true,
     .decoder_sparse_step = 1},
    {.name = "llama3.3-70b", .family = NVL_LLAMA, .hidden = 8192,
     .intermediate = 28672, .layers = 80, .q_heads = 64, .kv_heads = 8,
     .head_dim = 128, .vocab = 128256, .max_positions = 131072,
     .tied_embeddings = false, .qkv_bias = false, .qk_norm = false,
     .rope_theta = 500000.0, .rms_eps = 1e-5, .rope_llama3_factor = 8,
     .rope_low_freq_factor = 1, .rope_high_freq_factor = 4,
     .rope_original_positions = 8192},
    {.name = "llama3.1-405b", .family = NVL_LLAMA, .hidden = 16384,
     .intermediate = 53248, .layers = 126, .q_heads = 128, .kv_heads = 8,
     .head_dim = 128, .vocab = 128256, .max_positions = 131072,
     .tied_embeddings = false, .qkv_bias = false, .qk_norm = false,
     .rope_theta = 500000.0, .rms_eps = 1e-5, .rope_llama3_factor = 8,
     .rope_low_freq_factor = 1, .rope_high_freq_factor = 4,
     .rope_original_positions = 8192},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

bool nvl_model_layer_is_moe(const nvl_model_config_t *cfg, uint32_t layer)
{
    if (cfg->num_experts == 0 || cfg->decoder_sparse_step == 0)
        return false;
    for (uint32_t i = 0; i < cfg->n_mlp_only; i++)
        if (cfg->mlp_only_layers[i] == layer)
            return false;
    return (layer + 1) % cfg->decoder_sparse_step == 0;
}

size_t nvl_model_preset_count(void) { return N_PRESETS; }

const char *nvl_model_preset_name(size_t i)
{
    return i < N_PRESETS ? presets[i].name : NULL;
}

bool nvl_model_is_preset(const char *name)
{
    for (size_t i = 0; i < N_PRESETS; i++)
        if (strcmp(name, presets[i].name) == 0)
            return true;
    return false;
}

nvl_status_t nvl_model_preset(const char *name,
                              nvl_model_config_t *cfg_out)
{
    char list[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < N_PRESETS; i++) {
        if (strcmp(name, presets[i].name) == 0) {
            *cfg_out = presets[i];
            return NVL_OK;
        }
        size_t n = strlen(presets[i].name);
        if (used + n + 3 >= sizeof list)
            break;
        if (used > 0) {
            memcpy(list + used, ", ", 2);
            used += 2;
        }
        memcpy(list + used, presets[i].name, n + 1);
        used += n;
    }
    nvl_report("unknown model preset '%s' (presets: %s; or give a Hugging "
               "Face model directory)", name, list);
    return NVL_ERR_INVALID;
}

/* Reads key as a positive integer; dflt 0 means required. */
static int get_count(json_t *root, const char *file, const char *key,
                     uint32_t dflt, uint32_t *out)
{
    json_t *v = json_object_get(root, key);
    if (v == NULL || json_is_null(v)) {
        if (dflt == 0) {
            nvl_report("%s: missing '%s' (a positive integer)", file, key);
            return 0;
        }
        *out = dflt;
        return 1;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > UINT32_MAX) {
        nvl_report("%s: '%s' must be a positive integer", file, key);
        return 0;
    }
    *out = (uint32_t)json_integer_value(v);
    return 1;
}

static int get_real(json_t *obj, const char *file, const char *key,
                    double *out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return -1; /* absent */
    if (!json_is_number(v) || json_number_value(v) <= 0) {
        nvl_report("%s: '%s' must be a positive number", file, key);
        return 0;
    }
    *out = json_number_value(v);
    return 1;
}

static int get_bool(json_t *root, const char *file, const char *key,
                    bool dflt, bool *out)
{
    json_t *v = json_object_get(root, key);
    if (v == NULL || json_is_null(v)) {
        *out = dflt;
        return 1;
    }
    if (!json_is_boolean(v)) {
        nvl_report("%s: '%s' must be true or false", file, key);
        return 0;
    }
    *out = json_is_true(v);
    return 1;
}

/* The mixture-of-experts keys of a qwen3_moe config.json. */
static int get_moe(json_t *root, const char *file, nvl_model_config_t *c)
{
    /* the hub's checkpoints say num_experts, transformers 5 writes
     * num_local_experts */
    const char *experts = json_object_get(root, "num_experts") == NULL &&
                                  json_object_get(root, "num_local_experts")
                              ? "num_local_experts"
                              : "num_experts";
    if (!get_count(root, file, experts, 0, &c->num_experts) ||
        !get_count(root, file, "num_experts_per_tok", 0, &c->top_k) ||
        !get_count(root, file, "moe_intermediate_size", 0,
                   &c->moe_intermediate) ||
        !get_count(root, file, "decoder_sparse_step", 1,
                   &c->decoder_sparse_step) ||
        !get_bool(root, file, "norm_topk_prob", false, &c->norm_topk_prob))
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

/* A required positive number of a rope scaling block: 0 when it is absent
 * (reported with the type that needs it) or not a positive number. */
static int get_rope_real(json_t *rs, const char *file, const char *type,
                         const char *key, double *out)
{
    int r = get_real(rs, file, key, out);
    if (r < 0)
        nvl_report("%s: rope scaling '%s' needs a '%s'", file, type, key);
    return r == 1;
}

/* Llama 3.1's rope scaling: every key required, as transformers'
 * _validate_llama3_parameters requires them; 0 on error (reported). */
static int get_llama3_scaling(json_t *rs, const char *file,
                              nvl_model_config_t *c)
{
    if (!get_rope_real(rs, file, "llama3", "factor", &c->rope_llama3_factor) ||
        !get_rope_real(rs, file, "llama3", "low_freq_factor",
                       &c->rope_low_freq_factor) ||
        !get_rope_real(rs, file, "llama3", "high_freq_factor",
                       &c->rope_high_freq_factor))
        return 0;
    if (json_object_get(rs, "original_max_position_embeddings") == NULL) {
        nvl_report("%s: rope scaling 'llama3' needs an "
                   "'original_max_position_embeddings' (a positive integer)",
                   file);
        return 0;
    }
    if (!get_count(rs, file, "original_max_position_embeddings", 0,
                   &c->rope_original_positions))
        return 0;
    if (c->rope_high_freq_factor <= c->rope_low_freq_factor) {
        nvl_report("%s: rope scaling 'llama3': high_freq_factor %g must be "
                   "more than low_freq_factor %g", file,
                   c->rope_high_freq_factor, c->rope_low_freq_factor);
        return 0;
    }
    return 1;
}

/* YaRN: the factor required, the pretrained context by default
 * max_position_embeddings; 0 on error (reported). */
static int get_yarn_scaling(json_t *rs, const char *file,
                            nvl_model_config_t *c)
{
    if (!get_rope_real(rs, file, "yarn", "factor", &c->rope_yarn_factor))
        return 0;
    return get_count(rs, file, "original_max_position_embeddings",
                     c->max_positions, &c->rope_original_positions);
}

static int get_no_scaling(json_t *rs, const char *file, nvl_model_config_t *c)
{
    (void)rs, (void)file, (void)c;
    return 1;
}

/* The rope types understood, by rope_type (or type), and their readers. */
static const struct {
    const char *name;
    int (*get)(json_t *rs, const char *file, nvl_model_config_t *c);
} rope_types[] = {
    {.name = "default", .get = get_no_scaling},
    {.name = "yarn", .get = get_yarn_scaling},
    {.name = "llama3", .get = get_llama3_scaling},
};

/* rope_scaling (hub checkpoints) or rope_parameters (transformers 5):
 * absent, null or without a type: none; else the reader of its row of
 * rope_types; any other type is refused.  0 on error (reported). */
static int get_rope_scaling(json_t *root, const char *file,
                            nvl_model_config_t *c)
{
    json_t *rs = json_object_get(root, "rope_scaling");
    if (!json_is_object(rs))
        rs = json_object_get(root, "rope_parameters");
    if (!json_is_object(rs))
        return 1;
    const char *type = json_string_value(json_object_get(rs, "rope_type"));
    if (type == NULL)
        type = json_string_value(json_object_get(rs, "type"));
    if (type == NULL)
        return 1;
    char list[64] = "";
    for (size_t i = 0; i < sizeof rope_types / sizeof rope_types[0]; i++) {
        if (strcmp(type, rope_types[i].name) == 0)
            return rope_types[i].get(rs, file, c);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 i ? ", " : "", rope_types[i].name);
    }
    nvl_report("%s: rope scaling type '%s' is not supported (%s)", file, type,
               list);
    return 0;
}

/* Llama's attention_bias puts a bias on o_proj too, and mlp_bias on the
 * three MLP projections: neither is modeled, so both must be false. */
static int get_llama_biases(json_t *root, const char *file)
{
    static const char *const keys[] = {"attention_bias", "mlp_bias"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        bool on;
        if (!get_bool(root, file, keys[i], false, &on))
            return 0;
        if (on) {
            nvl_report("%s: '%s' true is not supported for model_type llama "
                       "(only bias-free Llama checkpoints, as Meta's, are "
                       "modeled)", file, keys[i]);
            return 0;
        }
    }
    return 1;
}

nvl_status_t nvl_model_config_load(const char *path,
                                   nvl_model_config_t *cfg_out)
{
    char file[1024];
    struct stat st;
    if (stat(path, &st) != 0 && strchr(path, '/') == NULL) {
        /* a bare name that is no file: a mistyped preset, most likely */
        char list[1024] = "";
        for (size_t i = 0; i < nvl_model_preset_count(); i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%.64s",
                     i ? ", " : "", nvl_model_preset_name(i));
        nvl_report("unknown model '%s': not a preset (%s) and no such "
                   "directory or config.json", path, list);
        return NVL_ERR_INVALID;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(file, sizeof file, "%s/config.json", path);
    else
        snprintf(file, sizeof file, "%s", path);
    json_error_t err;
    json_t *root = json_load_file(file, 0, &err);
    if (root == NULL) {
        if (err.line < 0) {
            nvl_report("%s: cannot read: %s", file, err.text);
            return NVL_ERR_IO;
        }
        nvl_report("%s:%d:%d: not valid JSON: %s", file, err.line,
                   err.column, err.text);
        return NVL_ERR_INVALID;
    }
    nvl_model_config_t c = {0};
    nvl_status_t status = NVL_ERR_INVALID;
    if (!json_is_object(root)) {
        nvl_report("%s: expected a JSON object", file);
        goto out;
    }
    snprintf(c.name, sizeof c.name, "%s", path);
    const char *type = json_string_value(json_object_get(root, "model_type"));
    if (type != NULL && strcmp(type, "qwen2") == 0) {
        c.family = NVL_QWEN2;
    } else if (type != NULL && strcmp(type, "qwen3") == 0) {
        c.family = NVL_QWEN3;
    } else if (type != NULL && strcmp(type, "qwen3_moe") == 0) {
        c.family = NVL_QWEN3_MOE;
    } else if (type != NULL && strcmp(type, "llama") == 0) {
        c.family = NVL_LLAMA;
    } else {
        nvl_report("%s: model_type '%s' is not supported (expected qwen2, "
                   "qwen3, qwen3_moe or llama)", file,
                   type ? type : "(missing)");
        goto out;
    }
    if (!get_count(root, file, "hidden_size", 0, &c.hidden) ||
        !get_count(root, file, "intermediate_size", 0, &c.intermediate) ||
        !get_count(root, file, "num_hidden_layers", 0, &c.layers) ||
        !get_count(root, file, "num_attention_heads", 0, &c.q_heads) ||
        !get_count(root, file, "num_key_value_heads", c.q_heads,
                   &c.kv_heads) ||
        !get_count(root, file, "vocab_size", 0, &c.vocab) ||
        !get_count(root, file, "max_position_embeddings",
                   c.family == NVL_LLAMA ? 2048 : 32768, &c.max_positions) ||
        !get_bool(root, file, "tie_word_embeddings", false,
                  &c.tied_embeddings))
        goto out;
    if (c.family == NVL_QWEN3_MOE && !get_moe(root, file, &c))
        goto out;
    if (c.family != NVL_QWEN2 || json_object_get(root, "head_dim") != NULL) {
        if (!get_count(root, file, "head_dim",
                       c.hidden % c.q_heads == 0 ? c.hidden / c.q_heads : 0,
                       &c.head_dim))
            goto out;
    } else if (c.hidden % c.q_heads != 0) {
        nvl_report("%s: hidden_size %u is not a multiple of "
                   "num_attention_heads %u and there is no head_dim",
                   file, c.hidden, c.q_heads);
        goto out;
    } else {
        c.head_dim = c.hidden / c.q_heads;
    }
    if (c.q_heads % c.kv_heads != 0) {
        nvl_report("%s: num_attention_heads %u is not a multiple of "
                   "num_key_value_heads %u", file, c.q_heads, c.kv_heads);
        goto out;
    }
    if (c.family == NVL_QWEN2) {
        c.qkv_bias = true;
        c.qk_norm = false;
    } else if (c.family == NVL_LLAMA) {
        if (!get_llama_biases(root, file))
            goto out;
        c.qkv_bias = false;
        c.qk_norm = false;
    } else {
        if (!get_bool(root, file, "attention_bias", false, &c.qkv_bias))
            goto out;
        c.qk_norm = true;
    }
    int r = get_real(root, file, "rms_norm_eps", &c.rms_eps);
    if (r == 0)
        goto out;
    if (r < 0)
        c.rms_eps = 1e-6; /* transformers' Qwen2/Qwen3 default */
    /* rope_theta: top level (hub checkpoints) or under rope_parameters
     * (transformers 5) */
    r = get_real(root, file, "rope_theta", &c.rope_theta);
    if (r == 0)
        goto out;
    if (r < 0) {
        json_t *rp = json_object_get(root, "rope_parameters");
        r = json_is_object(rp) ? get_real(rp, file, "rope_theta", &c.rope_theta)
                               : -1;
        if (r == 0)
            goto out;
        if (r < 0)
            c.rope_theta = 10000.0; /* transformers' default when absent */
    }
    if (!get_rope_scaling(root, file, &c))
        goto out;
    *cfg_out = c;
    status = NVL_OK;
out:
    json_decref(root);
    return status;
}

uint64_t nvl_model_max_context(const nvl_model_config_t *cfg)
{
    double yarn = cfg->rope_yarn_factor * cfg->rope_original_positions;
    return yarn > cfg->max_positions ? (uint64_t)yarn : cfg->max_positions;
}

nvl_status_t nvl_model_rope_scaling_parse(const char *label, const char *text,
                                          void *factor_out)
{
    if (strcmp(text, "none") == 0) {
        *(double *)factor_out = 0;
        return NVL_OK;
    }
    char *end = NULL;
    errno = 0;
    double f = strncmp(text, "yarn:", 5) == 0 ? strtod(text + 5, &end) : 0;
    if (end == NULL || end == text + 5 || *end != '\0' || errno != 0 ||
        !(f >= 1 && f <= 64)) {
        nvl_report("%s %s: expected none or yarn:FACTOR (FACTOR from 1 to "
                   "64; yarn:4 is Qwen2.5's published 128K context)", label,
                   text);
        return NVL_ERR_INVALID;
    }
    *(double *)factor_out = f;
    return NVL_OK;
}

nvl_status_t nvl_model_set_yarn(nvl_model_config_t *cfg, double factor)
{
    if (cfg->rope_llama3_factor > 0) {
        nvl_report("YaRN rope scaling (factor %g) on model '%s': it already "
                   "has llama3 rope scaling (factor %g over %u pretrained "
                   "positions); the two are not stacked", factor, cfg->name,
                   cfg->rope_llama3_factor, cfg->rope_original_positions);
        return NVL_ERR_INVALID;
    }
    if (cfg->rope_yarn_factor == 0)
        cfg->rope_original_positions = cfg->max_positions;
    cfg->rope_yarn_factor = factor;
    return NVL_OK;
}

uint64_t nvl_model_param_count(const nvl_model_config_t *c)
{
    uint64_t h = c->hidden, q = (uint64_t)c->q_heads * c->head_dim,
             kv = (uint64_t)c->kv_heads * c->head_dim;
    uint64_t attn = h * q + 2 * h * kv + q * h;
    if (c->qkv_bias)
        attn += q + 2 * kv;
    if (c->qk_norm)
        attn += 2 * (uint64_t)c->head_dim;
    uint64_t dense = 3 * h * c->intermediate;
    uint64_t moe =
        (uint64_t)c->num_experts * (3 * h * c->moe_intermediate + h);
    uint64_t total = 0;
    for (uint32_t i = 0; i < c->layers; i++)
        total += attn + 2 * h + /* two RMSNorm weights */
                 (nvl_model_layer_is_moe(c, i) ? moe : dense);
    uint64_t emb = (uint64_t)c->vocab * h;
    return emb + total + h + (c->tied_embeddings ? 0 : emb);
}
