/* compressed-tensors checkpoints (llm-compressor's writer; config.json
 * quantization_config.quant_method "compressed-tensors"), read as vLLM
 * reads them (vllm/model_executor/layers/quantization/compressed_tensors/
 * compressed_tensors.py, CompressedTensorsConfig.from_config and the
 * _is_fp8_w8a8 / _is_fp4a4_nvfp4 scheme tests; .../compressed_tensors/
 * utils.py, should_ignore_layer and find_matched_target):
 *
 *   config_groups  {NAME: {"targets": [...], "weights": {num_bits, type,
 *                  strategy, group_size, block_structure},
 *                  "input_activations": {dynamic, strategy} | null}}
 *   ignore         module names matched whole, or "re:" + a regular
 *                  expression matched from the name's start (re.match)
 *   kv_cache_scheme  {num_bits 8, type "float"} | null
 *
 * Targets name modules the same way, or a module class ("Linear": every
 * GEMM).  nvlemu maps a group's weights onto its formats: float 8 bits
 * per tensor or per channel FP8, float 8 bits in [128, 128] blocks FP8
 * blocks, float 4 bits per group of 16 NVFP4, and the group's (or the
 * config's) "format" onto how the tensors are stored (ct_layout.c);
 * anything else is refused, naming the file and the key. */
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "quant_impl.h"

/* The weights' scheme of group `g` as an nvlemu format, or reported. */
static nvl_status_t group_format(const char *file, const char *g,
                                 const json_t *w, nvl_quant_format_t *f_out)
{
    const char *type = json_string_value(json_object_get(w, "type"));
    const char *strat = json_string_value(json_object_get(w, "strategy"));
    json_int_t bits = json_integer_value(json_object_get(w, "num_bits"));
    json_int_t gs = json_integer_value(json_object_get(w, "group_size"));
    const json_t *bs = json_object_get(w, "block_structure");
    bool fl = type != NULL && strcmp(type, "float") == 0;
    bool per_tensor_or_row = strat != NULL && (strcmp(strat, "tensor") == 0 ||
                                               strcmp(strat, "channel") == 0);
    bool in = type != NULL && strcmp(type, "int") == 0 &&
              !json_is_false(json_object_get(w, "symmetric"));
    nvl_quant_format_t f = NVL_QUANT_COUNT;
    if (in && bits == 8 && strat != NULL && strcmp(strat, "channel") == 0)
        f = NVL_QUANT_INT8;
    else if (in && bits == 4 && gs == 128 && strat != NULL &&
             strcmp(strat, "group") == 0)
        f = NVL_QUANT_INT4;
    else if (fl && bits == 8 && per_tensor_or_row)
        f = NVL_QUANT_FP8;
    else if (fl && bits == 8 && strat != NULL &&
             strcmp(strat, "block") == 0 && json_array_size(bs) == 2 &&
             json_integer_value(json_array_get(bs, 0)) == 128 &&
             json_integer_value(json_array_get(bs, 1)) == 128)
        f = NVL_QUANT_FP8_BLOCK;
    else if (fl && bits == 4 && gs == 16 && strat != NULL &&
             strcmp(strat, "tensor_group") == 0)
        f = NVL_QUANT_NVFP4;
    else if (fl && bits == 4 && gs == 32 && strat != NULL &&
             strcmp(strat, "group") == 0)
        f = NVL_QUANT_MXFP4;
    if (f == NVL_QUANT_COUNT) {
        nvl_report("%s: quantization_config.config_groups.%s.weights "
                   "(num_bits %lld, type '%s', strategy '%s'%s) is not a "
                   "scheme nvlemu reads: float 8 bits per tensor or channel "
                   "(FP8), in [128, 128] blocks (FP8 blocks) or 4 bits per "
                   "tensor_group of 16 (NVFP4) or group of 32 (MX-FP4); "
                   "symmetric int 8 bits per "
                   "channel (int8) or 4 bits per group of 128 (int4)",
                   file, g, (long long)bits, type ? type : "?",
                   strat ? strat : "?",
                   json_is_false(json_object_get(w, "symmetric"))
                       ? ", asymmetric: zero points"
                       : "");
        return NVL_ERR_INVALID;
    }
    *f_out = f;
    return NVL_OK;
}

/* The activations of an integer or MX-FP4 scheme: int4 weights run
 * weight-only (vLLM's CompressedTensorsWNA16), MX-FP4 too
 * (CompressedTensorsW4A16Mxfp4), int8 weights weight-only or with
 * dynamic symmetric int8 per token (CompressedTensorsW8A8Int8 with
 * input_symmetric and dynamic, the W8A8 preset); a static or asymmetric
 * int8 input is refused. */
static nvl_status_t int_acts(const char *file, const char *g,
                             nvl_quant_format_t f, const json_t *a)
{
    if ((f != NVL_QUANT_INT8 && f != NVL_QUANT_INT4 && f != NVL_QUANT_MXFP4) ||
        !json_is_object(a))
        return NVL_OK;
    const char *type = json_string_value(json_object_get(a, "type"));
    const char *strat = json_string_value(json_object_get(a, "strategy"));
    if (f == NVL_QUANT_INT8 && type != NULL && strcmp(type, "int") == 0 &&
        json_integer_value(json_object_get(a, "num_bits")) == 8 &&
        strat != NULL && strcmp(strat, "token") == 0 &&
        json_is_true(json_object_get(a, "dynamic")) &&
        !json_is_false(json_object_get(a, "symmetric")))
        return NVL_OK;
    nvl_report("%s: quantization_config.config_groups.%s.input_activations "
               "is not one nvlemu runs with %s weights: %s", file, g,
               nvl_quant_row(f)->m.name,
               f != NVL_QUANT_INT8 ? "null (W4A16, weight-only)"
                                   : "null (W8A16) or int 8 bits, strategy "
                                     "token, dynamic, symmetric (W8A8)");
    return NVL_ERR_INVALID;
}

/* How group `g` (format f, weights w) stores its tensors: the group's
 * "format", else the config's (q), else the one compressed-tensors
 * infers for the scheme (nvfp4-pack-quantized for NVFP4, float-quantized
 * for FP8: compressed_tensors/config/format.py); a format string that
 * names no layout of f is reported naming the file and the key. */
static nvl_status_t group_layout(const char *file, const char *g,
                                 const json_t *q, const json_t *grp,
                                 nvl_quant_format_t f,
                                 const nvl_quant_row_t **row_out)
{
    const char *gf = json_string_value(json_object_get(grp, "format"));
    const char *top = json_string_value(json_object_get(q, "format"));
    const char *strat = json_string_value(
        json_object_get(json_object_get(grp, "weights"), "strategy"));
    const char *fmt = gf != NULL ? gf
                      : top != NULL && strcmp(top, "mixed-precision") != 0
                          ? top
                      : f == NVL_QUANT_NVFP4 ? "nvfp4-pack-quantized"
                      : f == NVL_QUANT_INT8  ? "int-quantized"
                      : f == NVL_QUANT_INT4  ? "pack-quantized"
                      : f == NVL_QUANT_MXFP4 ? "mxfp4-pack-quantized"
                                             : "float-quantized";
    *row_out = nvl_quant_ct_layout(fmt, strat, f);
    if (*row_out == NULL) {
        char key[200] = "quantization_config.format";
        if (gf != NULL)
            snprintf(key, sizeof key,
                     "quantization_config.config_groups.%s.format", g);
        nvl_report("%s: %s '%s' is not a compressed-tensors format nvlemu "
                   "reads for %s weights (strategy '%s'): "
                   "nvfp4-pack-quantized (NVFP4), float-quantized or "
                   "naive-quantized (FP8 per tensor, per channel or in "
                   "[128, 128] blocks), int-quantized or naive-quantized "
                   "(int8 per channel), pack-quantized (int4 per group), "
                   "mxfp4-pack-quantized (MX-FP4)",
                   file, key, fmt, nvl_quant_row(f)->m.name, strat);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* A list of module names / "re:" expressions under `key` into list_out:
 * a regular expression is refused where POSIX's extended syntax would not
 * read it as Python's re does (no (?...) groups, no \d \w \s classes). */
static nvl_status_t name_list(const char *file, const char *key,
                              const json_t *l, int *n_out,
                              char list_out[][160])
{
    if (!json_is_array(l) ||
        json_array_size(l) + (size_t)*n_out > NVL_QUANT_EXCLUDE_MAX) {
        nvl_report("%s: %s must be an array of at most %d module names",
                   file, key, NVL_QUANT_EXCLUDE_MAX);
        return NVL_ERR_INVALID;
    }
    for (size_t i = 0; i < json_array_size(l); i++) {
        const char *m = json_string_value(json_array_get(l, i));
        bool bad = m == NULL || strlen(m) >= 150;
        if (!bad && strncmp(m, "re:", 3) == 0) {
            char pat[160];
            regex_t re;
            snprintf(pat, sizeof pat, "^(%s)", m + 3);
            bad = strstr(m, "(?") != NULL || strstr(m, "\\d") != NULL ||
                  strstr(m, "\\w") != NULL || strstr(m, "\\s") != NULL ||
                  regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0;
            if (!bad)
                regfree(&re);
        }
        if (bad) {
            nvl_report("%s: %s[%zu] must be a module name or 're:' and a "
                       "regular expression in POSIX extended syntax "
                       "(fewer than 150 characters)",
                       file, key, i);
            return NVL_ERR_INVALID;
        }
        snprintf(list_out[(*n_out)++], 160, "%s", m);
    }
    return NVL_OK;
}

bool nvl_quant_ct_match(const char *entry, const char *name)
{
    if (strncmp(entry, "re:", 3) != 0)
        return strcmp(entry, "Linear") == 0 || strcmp(entry, name) == 0;
    char pat[160];
    regex_t re;
    snprintf(pat, sizeof pat, "^(%s)", entry + 3);
    if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0)
        return false; /* refused when read */
    bool hit = regexec(&re, name, 0, NULL, 0) == 0;
    regfree(&re);
    return hit;
}

/* The groups: one format for all, their targets; the activations'
 * scheme of FP8 per tensor (dynamic: per token). */
static nvl_status_t groups(const char *file, const json_t *q,
                           const json_t *cg, nvl_quant_config_t *out)
{
    const char *g, *first = NULL;
    const json_t *v;
    if (!json_is_object(cg) || json_object_size(cg) == 0) {
        nvl_report("%s: quantization_config.config_groups must be an object "
                   "of at least one group", file);
        return NVL_ERR_INVALID;
    }
    json_object_foreach((json_t *)cg, g, v)
    {
        nvl_quant_format_t f;
        char key[200];
        snprintf(key, sizeof key, "quantization_config.config_groups.%s."
                 "targets", g);
        if (group_format(file, g, json_object_get(v, "weights"), &f) !=
                NVL_OK ||
            name_list(file, key, json_object_get(v, "targets"),
                      &out->n_target, out->target) != NVL_OK)
            return NVL_ERR_INVALID;
        if (first != NULL && f != out->format) {
            nvl_report("%s: quantization_config.config_groups.%s and .%s "
                       "quantize in different formats: nvlemu prices one "
                       "weight format per checkpoint", file, first, g);
            return NVL_ERR_INVALID;
        }
        const nvl_quant_row_t *stored;
        if (group_layout(file, g, q, v, f, &stored) != NVL_OK)
            return NVL_ERR_INVALID;
        if (first != NULL && stored != out->stored) {
            nvl_report("%s: quantization_config.config_groups.%s and .%s "
                       "store their weights differently (%s, %s): nvlemu "
                       "reads one layout per checkpoint", file, first, g,
                       out->stored->m.name, stored->m.name);
            return NVL_ERR_INVALID;
        }
        /* input_activations null: weights only (W4A16, W8A16) */
        const json_t *a = json_object_get(v, "input_activations");
        if (int_acts(file, g, f, a) != NVL_OK)
            return NVL_ERR_INVALID;
        out->weight_only = !json_is_object(a);
        out->act_dynamic = f == NVL_QUANT_FP8 && json_is_object(a) &&
                           json_is_true(json_object_get(a, "dynamic"));
        first = first ? first : g, out->format = f, out->stored = stored;
    }
    return NVL_OK;
}

nvl_status_t nvl_quant_ct_read(const char *file, const json_t *q,
                               nvl_quant_config_t *out)
{
    out->compressed_tensors = true;
    if (groups(file, q, json_object_get(q, "config_groups"), out) != NVL_OK)
        return NVL_ERR_INVALID;
    const json_t *kv = json_object_get(q, "kv_cache_scheme");
    if (kv != NULL && !json_is_null(kv)) {
        const char *t = json_string_value(json_object_get(kv, "type"));
        if (json_integer_value(json_object_get(kv, "num_bits")) != 8 ||
            t == NULL || strcmp(t, "float") != 0) {
            nvl_report("%s: quantization_config.kv_cache_scheme is not one "
                       "nvlemu reads (float 8 bits: FP8, or null)", file);
            return NVL_ERR_INVALID;
        }
        out->kv_fp8 = true;
    }
    const json_t *ig = json_object_get(q, "ignore");
    out->quantized = true;
    out->exclude_key = "ignore";
    return ig == NULL || json_is_null(ig)
               ? NVL_OK
               : name_list(file, "quantization_config.ignore", ig,
                           &out->n_exclude, out->exclude);
}
