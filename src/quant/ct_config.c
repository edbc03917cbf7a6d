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
 * anything else is refused, naming the file and the key.  Groups may
 * differ in scheme (an llm-compressor recipe of several): each module
 * takes its group's (nvl_quant_config_group). */
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

/* Group g's entry of out->group: its scheme (format, layout,
 * activations) and its targets, appended to out->target. */
static nvl_status_t one_group(const char *file, const json_t *q,
                              const char *g, const json_t *v,
                              nvl_quant_config_t *out)
{
    nvl_quant_group_t *gr = &out->group[out->n_group];
    char key[200];
    snprintf(key, sizeof key, "quantization_config.config_groups.%s.targets",
             g);
    snprintf(gr->name, sizeof gr->name, "%s", g);
    gr->target0 = out->n_target;
    if (group_format(file, g, json_object_get(v, "weights"), &gr->format) !=
            NVL_OK ||
        name_list(file, key, json_object_get(v, "targets"), &out->n_target,
                  out->target) != NVL_OK ||
        group_layout(file, g, q, v, gr->format, &gr->stored) != NVL_OK)
        return NVL_ERR_INVALID;
    gr->n_target = out->n_target - gr->target0;
    /* input_activations null: weights only (W4A16, W8A16) */
    const json_t *a = json_object_get(v, "input_activations");
    if (int_acts(file, g, gr->format, a) != NVL_OK)
        return NVL_ERR_INVALID;
    gr->weight_only = !json_is_object(a);
    gr->act_dynamic = gr->format == NVL_QUANT_FP8 && json_is_object(a) &&
                      json_is_true(json_object_get(a, "dynamic"));
    out->n_group++;
    return NVL_OK;
}

/* The groups, each with its own scheme (llm-compressor writes a recipe's
 * schemes as groups of their own: attention FP8 and the MLP int4, say);
 * format, stored and the activations of q are the first group's. */
static nvl_status_t groups(const char *file, const json_t *q,
                           const json_t *cg, nvl_quant_config_t *out)
{
    const char *g;
    const json_t *v;
    if (!json_is_object(cg) || json_object_size(cg) == 0 ||
        json_object_size(cg) > NVL_QUANT_GROUP_MAX) {
        nvl_report("%s: quantization_config.config_groups must be an object "
                   "of 1 to %d groups", file, NVL_QUANT_GROUP_MAX);
        return NVL_ERR_INVALID;
    }
    json_object_foreach((json_t *)cg, g, v)
    {
        if (one_group(file, q, g, v, out) != NVL_OK)
            return NVL_ERR_INVALID;
    }
    nvl_quant_config_as_group(out, 0, out);
    return NVL_OK;
}

void nvl_quant_config_as_group(const nvl_quant_config_t *q, int g,
                               nvl_quant_config_t *out)
{
    if (out != q)
        *out = *q;
    out->format = q->group[g].format;
    out->stored = q->group[g].stored;
    out->weight_only = q->group[g].weight_only;
    out->act_dynamic = q->group[g].act_dynamic;
}

bool nvl_quant_config_mixed(const nvl_quant_config_t *q)
{
    for (int g = 1; g < q->n_group; g++)
        if (q->group[g].format != q->group[0].format ||
            q->group[g].stored != q->group[0].stored ||
            q->group[g].weight_only != q->group[0].weight_only ||
            q->group[g].act_dynamic != q->group[0].act_dynamic)
            return true;
    return false;
}

/* The group whose scheme target string t applies: the last group that
 * lists it (compressed-tensors' target_to_scheme and vLLM's
 * target_scheme_map are dicts filled group by group). */
static int group_of_target(const nvl_quant_config_t *q, const char *t)
{
    int g_out = -1;
    for (int g = 0; g < q->n_group; g++)
        for (int i = 0; i < q->group[g].n_target; i++)
            if (strcmp(q->target[q->group[g].target0 + i], t) == 0)
                g_out = g;
    return g_out;
}

/* The target that applies to module `name`, in compressed-tensors' order
 * (sorted: whole names, then "re:" expressions, each alphabetically) or
 * vLLM's (the file's); a class target ("Linear") only when no name or
 * expression matches; NULL: none. */
static const char *first_target(const nvl_quant_config_t *q,
                                const char *name, bool sorted)
{
    const char *best = NULL, *cls = NULL;
    for (int i = 0; i < q->n_target; i++) {
        const char *t = q->target[i];
        if (strcmp(t, "Linear") == 0) {
            cls = cls != NULL ? cls : t;
            continue;
        }
        if (!nvl_quant_ct_match(t, name))
            continue;
        if (!sorted && best == NULL)
            best = t;
        bool re = strncmp(t, "re:", 3) == 0;
        bool best_re = best != NULL && strncmp(best, "re:", 3) == 0;
        if (sorted && (best == NULL || re < best_re ||
                       (re == best_re && strcmp(t, best) < 0)))
            best = t;
    }
    return best != NULL ? best : cls;
}

/* compressed_tensors/quantization/lifecycle/apply.py: a module takes the
 * scheme of the first of its matching targets as
 * find_name_or_class_matches sorts them (whole names, then "re:"
 * expressions, then its class's name) and _scheme_from_targets takes it;
 * vLLM's CompressedTensorsConfig.get_scheme takes find_matched_target's
 * (compressed_tensors/utils.py: the first target in the file's order that
 * equals or matches the name, else the class). */
int nvl_quant_config_group(const nvl_quant_config_t *q, const char *name,
                           int *other_out)
{
    *other_out = -1;
    for (int i = 0; i < q->n_exclude && q->compressed_tensors; i++)
        if (nvl_quant_ct_match(q->exclude[i], name))
            return -1; /* ignored */
    if (!q->compressed_tensors)
        return -1;
    const char *ct = first_target(q, name, true);
    const char *vllm = first_target(q, name, false);
    int g = ct != NULL ? group_of_target(q, ct) : -1;
    int v = vllm != NULL ? group_of_target(q, vllm) : -1;
    if (v != g)
        *other_out = v;
    return g;
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
