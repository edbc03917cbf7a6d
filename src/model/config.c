/* The reader of a Hugging Face config.json (jansson): what every model
 * type shares, each type's differences taken from its row (model_type.c),
 * rope scaling by its own table; and the derived quantities of a model. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "model_impl.h"

bool nvl_model_layer_is_moe(const nvl_model_config_t *cfg, uint32_t layer)
{
    if (cfg->num_experts == 0 || cfg->decoder_sparse_step == 0)
        return false;
    for (uint32_t i = 0; i < cfg->n_mlp_only; i++)
        if (cfg->mlp_only_layers[i] == layer)
            return false;
    return (layer + 1) % cfg->decoder_sparse_step == 0;
}

uint32_t nvl_model_layer_window(const nvl_model_config_t *cfg,
                                uint32_t layer)
{
    return layer < cfg->n_layer_types && cfg->layer_sliding[layer]
               ? cfg->sliding_window
               : 0;
}

/* A required positive number of a rope scaling block: 0 when it is absent
 * (reported with the type that needs it) or not a positive number. */
static int get_rope_real(json_t *rs, const char *file, const char *type,
                         const char *key, double *out)
{
    int r = nvl_cfg_real(rs, file, key, out);
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
    if (!nvl_cfg_count(rs, file, "original_max_position_embeddings", 0,
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
 * max_position_embeddings, beta_fast / beta_slow and truncate as given
 * (transformers' defaults 32, 1, true otherwise); 0 on error
 * (reported). */
static int get_yarn_scaling(json_t *rs, const char *file,
                            nvl_model_config_t *c)
{
    bool truncate;
    if (!get_rope_real(rs, file, "yarn", "factor", &c->rope_yarn_factor) ||
        nvl_cfg_real(rs, file, "beta_fast", &c->rope_yarn_beta_fast) == 0 ||
        nvl_cfg_real(rs, file, "beta_slow", &c->rope_yarn_beta_slow) == 0 ||
        !nvl_cfg_bool(rs, file, "truncate", true, &truncate))
        return 0;
    c->rope_yarn_no_truncate = !truncate;
    return nvl_cfg_count(rs, file, "original_max_position_embeddings",
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

/* The file to read for path: path itself, or its config.json when it is
 * a directory; NVL_ERR_INVALID (reported) for a bare name that is no file,
 * a mistyped preset most likely. */
static nvl_status_t config_file(const char *path, char *file, size_t len)
{
    struct stat st;
    if (stat(path, &st) != 0 && strchr(path, '/') == NULL) {
        char list[1024];
        nvl_family_names(&nvl_model_preset_family, ", ", ", ", list,
                         sizeof list);
        nvl_report("unknown model '%s': not a preset (%s) and no such "
                   "directory or config.json", path, list);
        return NVL_ERR_INVALID;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(file, len, "%s/config.json", path);
    else
        snprintf(file, len, "%s", path);
    return NVL_OK;
}

/* The row of config.json's model_type; NULL (reported) when missing or
 * not one of the model types. */
static const nvl_model_type_row_t *model_type(json_t *root, const char *file)
{
    const char *type = json_string_value(json_object_get(root, "model_type"));
    int v;
    if (type != NULL &&
        nvl_family_parse(&nvl_model_type_family, type, &v) == NVL_OK)
        return &nvl_model_type_rows[v];
    char names[256];
    nvl_family_names(&nvl_model_type_family, ", ", " or ", names,
                     sizeof names);
    nvl_report("%s: model_type '%s' is not supported (expected %s)", file,
               type ? type : "(missing)", names);
    return NULL;
}

/* head_dim: given, or hidden / heads (row's rule when neither). */
static int get_head_dim(json_t *root, const char *file,
                        const nvl_model_type_row_t *row,
                        nvl_model_config_t *c)
{
    bool divides = c->hidden % c->q_heads == 0;
    if (!row->head_dim_from_heads || json_object_get(root, "head_dim") != NULL)
        return nvl_cfg_count(root, file, "head_dim",
                             divides ? c->hidden / c->q_heads : 0,
                             &c->head_dim);
    if (!divides) {
        nvl_report("%s: hidden_size %u is not a multiple of "
                   "num_attention_heads %u and there is no head_dim",
                   file, c->hidden, c->q_heads);
        return 0;
    }
    c->head_dim = c->hidden / c->q_heads;
    return 1;
}

/* The shape every model type has, and its type's own keys. */
static int get_shape(json_t *root, const char *file,
                     const nvl_model_type_row_t *row, nvl_model_config_t *c)
{
    if (!nvl_cfg_count(root, file, "hidden_size", 0, &c->hidden) ||
        !nvl_cfg_count(root, file, "intermediate_size", 0,
                       &c->intermediate) ||
        !nvl_cfg_count(root, file, "num_hidden_layers", 0, &c->layers) ||
        !nvl_cfg_count(root, file, "num_attention_heads", 0, &c->q_heads) ||
        !nvl_cfg_count(root, file, "num_key_value_heads", c->q_heads,
                       &c->kv_heads) ||
        !nvl_cfg_count(root, file, "vocab_size", 0, &c->vocab) ||
        !nvl_cfg_count(root, file, "max_position_embeddings",
                       row->default_max_positions, &c->max_positions) ||
        !nvl_cfg_bool(root, file, "tie_word_embeddings", false,
                      &c->tied_embeddings))
        return 0;
    if (row->get_experts != NULL && !row->get_experts(root, file, c))
        return 0;
    if (!get_head_dim(root, file, row, c))
        return 0;
    if (c->q_heads % c->kv_heads != 0) {
        nvl_report("%s: num_attention_heads %u is not a multiple of "
                   "num_key_value_heads %u", file, c->q_heads, c->kv_heads);
        return 0;
    }
    c->qk_norm = row->qk_norm;
    c->attn = row->attn;
    if (row->get_attention != NULL && !row->get_attention(root, file, c))
        return 0;
    return row->get_biases(root, file, c);
}

/* rms_norm_eps and rope_theta, with transformers' defaults: rope_theta at
 * the top level (hub checkpoints) or under rope_parameters (transformers
 * 5). */
static int get_norm_and_rope(json_t *root, const char *file,
                             nvl_model_config_t *c)
{
    int r = nvl_cfg_real(root, file, "rms_norm_eps", &c->rms_eps);
    if (r == 0)
        return 0;
    if (r < 0)
        c->rms_eps = 1e-6; /* transformers' Qwen2/Qwen3 default */
    r = nvl_cfg_real(root, file, "rope_theta", &c->rope_theta);
    if (r < 0) {
        json_t *rp = json_object_get(root, "rope_parameters");
        r = json_is_object(rp)
                ? nvl_cfg_real(rp, file, "rope_theta", &c->rope_theta)
                : -1;
        if (r < 0)
            c->rope_theta = 10000.0; /* transformers' default when absent */
    }
    return r != 0 && get_rope_scaling(root, file, c);
}

nvl_status_t nvl_model_config_load(const char *path,
                                   nvl_model_config_t *cfg_out)
{
    char file[1024];
    nvl_status_t status = config_file(path, file, sizeof file);
    if (status != NVL_OK)
        return status;
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
    status = NVL_ERR_INVALID;
    const nvl_model_type_row_t *row = NULL;
    if (!json_is_object(root)) {
        nvl_report("%s: expected a JSON object", file);
        goto out;
    }
    snprintf(c.name, sizeof c.name, "%s", path);
    if ((row = model_type(root, file)) == NULL)
        goto out;
    c.family = (nvl_model_family_t)(row - nvl_model_type_rows);
    if (!get_shape(root, file, row, &c) || !get_norm_and_rope(root, file, &c))
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
    if (c->o_bias)
        attn += h;
    if (c->attn_sinks)
        attn += c->q_heads;
    if (c->qk_norm)
        attn += 2 * (uint64_t)c->head_dim;
    uint64_t dense = 3 * h * c->intermediate;
    uint64_t moe =
        (uint64_t)c->num_experts * (3 * h * c->moe_intermediate + h);
    if (c->experts_fused) /* the router's bias, the experts' biases */
        moe += (uint64_t)c->num_experts * (1 + 2 * c->moe_intermediate + h);
    uint64_t total = 0;
    for (uint32_t i = 0; i < c->layers; i++)
        total += attn + 2 * h + /* two RMSNorm weights */
                 (nvl_model_layer_is_moe(c, i) ? moe : dense);
    uint64_t emb = (uint64_t)c->vocab * h;
    return emb + total + h + (c->tied_embeddings ? 0 : emb);
}
