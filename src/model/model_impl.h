/* Private to src/model: the readers of config.json's values
 * (config_json.c) and the model types' table (model_type.c). */
#ifndef NVLEMU_MODEL_IMPL_H
#define NVLEMU_MODEL_IMPL_H

#include <jansson.h>

#include "nvlemu/model.h"

/* obj's key as a positive integer into *out: dflt when absent or null (dflt
 * 0: required).  1 on success, 0 on error (reported as "file: ..."). */
int nvl_cfg_count(json_t *obj, const char *file, const char *key,
                  uint32_t dflt, uint32_t *out);

/* obj's key as a positive number: 1 read, -1 absent (*out untouched), 0
 * not a positive number (reported). */
int nvl_cfg_real(json_t *obj, const char *file, const char *key,
                 double *out);

/* obj's key as a boolean, dflt when absent or null: 1, or 0 on error
 * (reported). */
int nvl_cfg_bool(json_t *obj, const char *file, const char *key, bool dflt,
                 bool *out);

/* One model_type of config.json: a row per nvl_model_family_t, carrying
 * what its loader does differently (nvl_model_config_load, config.c). */
typedef struct {
    nvl_member_t id;                /* config.json's model_type */
    uint32_t default_max_positions; /* max_position_embeddings if absent */
    /* head_dim absent: hidden / heads, which must divide (else head_dim is
     * required where hidden / heads does not divide) */
    bool head_dim_from_heads;
    bool qk_norm;                   /* per-head RMSNorm on q and k */
    nvl_attn_kind_t attn;           /* its attention variant */
    /* reads the mixture of experts' keys (NULL: dense) */
    int (*get_experts)(json_t *root, const char *file,
                       nvl_model_config_t *c);
    /* sets qkv_bias (and o_bias) from the type or its keys, refusing
     * biases that are not modeled; 0 on error (reported) */
    int (*get_biases)(json_t *root, const char *file, nvl_model_config_t *c);
    /* reads the attention's own keys: sinks, sliding window, layer types
     * (NULL: none, every layer full); 0 on error (reported) */
    int (*get_attention)(json_t *root, const char *file,
                         nvl_model_config_t *c);
} nvl_model_type_row_t;

/* Indexed by nvl_model_family_t: nvl_model_type_family's rows. */
extern const nvl_model_type_row_t nvl_model_type_rows[];

#endif
