/* Which quantized format a checkpoint declares: ModelOpt's
 * hf_quant_config.json, else config.json's quantization_config, as vLLM
 * finds them (vllm/model_executor/layers/quantization/modelopt.py,
 * ModelOptFp8Config / ModelOptNvFp4Config.from_config; fp8.py,
 * Fp8Config.from_config: weight_block_size; mxfp4.py). */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quant_impl.h"

/* The GEMM classes (nvl_quant_class_t), each with the module names its
 * weights sit under in a Hugging Face checkpoint. */
static const struct {
    nvl_member_t m;
} classes[NVL_QCLASS_COUNT] = {
    [NVL_QCLASS_ATTN] = {{"attention", "q/k/v/o projections "
                                       "(model.layers.N.self_attn.*)"}},
    [NVL_QCLASS_MLP] = {{"mlp", "a dense MLP's gate/up/down projections "
                                "(model.layers.N.mlp.*_proj)"}},
    [NVL_QCLASS_EXPERTS] = {{"experts", "a mixture of experts' experts "
                                        "(model.layers.N.mlp.experts)"}},
    [NVL_QCLASS_ROUTER] = {{"router", "a mixture of experts' router "
                                      "(mlp.gate, gpt-oss mlp.router)"}},
    [NVL_QCLASS_LM_HEAD] = {{"lm_head", "the output projection "
                                        "(lm_head)"}},
};
const nvl_family_t nvl_quant_class_family =
    NVL_FAMILY("gemm-class", "classes of GEMM weights, each stored in a "
                             "weight format of its own", classes);

bool nvl_quant_class_covered(nvl_quant_format_t f, nvl_quant_class_t c)
{
    if (c == NVL_QCLASS_ROUTER || c == NVL_QCLASS_LM_HEAD)
        return false;
    return f != NVL_QUANT_MXFP4 || c == NVL_QCLASS_EXPERTS;
}

bool nvl_quant_module_excluded(const char *pattern, const char *name)
{
    char prefix[512];
    size_t n = strlen(name);
    if (n >= sizeof prefix)
        return false;
    memcpy(prefix, name, n + 1);
    for (;;) {
        /* Python's fnmatch: '*' crosses dots, '?' and [...] as in
         * fnmatch(3); a backslash is an ordinary character */
        if (fnmatch(pattern, prefix, FNM_NOESCAPE) == 0)
            return true;
        char *dot = strrchr(prefix, '.');
        if (dot == NULL)
            return false;
        *dot = '\0';
    }
}

bool nvl_quant_config_skips(const nvl_quant_config_t *q, const char *name,
                            int *entry_out)
{
    for (int i = 0; i < q->n_exclude; i++)
        if (q->compressed_tensors ? nvl_quant_ct_match(q->exclude[i], name)
                                  : nvl_quant_module_excluded(q->exclude[i],
                                                              name)) {
            *entry_out = i;
            return true;
        }
    bool targeted = !q->compressed_tensors;
    for (int i = 0; i < q->n_target && !targeted; i++)
        targeted = nvl_quant_ct_match(q->target[i], name);
    *entry_out = -1;
    return !targeted;
}

/* The exclusion list under `key` of q (null or absent: none). */
static nvl_status_t exclusions(const char *file, const json_t *q,
                               const char *key, nvl_quant_config_t *out)
{
    const json_t *l = json_object_get(q, key);
    if (l == NULL || json_is_null(l))
        return NVL_OK;
    if (!json_is_array(l) || json_array_size(l) > NVL_QUANT_EXCLUDE_MAX) {
        nvl_report("%s: %s must be an array of at most %d module names",
                   file, key, NVL_QUANT_EXCLUDE_MAX);
        return NVL_ERR_INVALID;
    }
    out->exclude_key = key;
    for (size_t i = 0; i < json_array_size(l); i++) {
        const char *m = json_string_value(json_array_get(l, i));
        if (m == NULL || strlen(m) >= sizeof out->exclude[0]) {
            nvl_report("%s: %s[%zu] must be a module name (a string of "
                       "fewer than %zu characters)", file, key, i,
                       sizeof out->exclude[0]);
            return NVL_ERR_INVALID;
        }
        snprintf(out->exclude[out->n_exclude++], sizeof out->exclude[0],
                 "%s", m);
    }
    return NVL_OK;
}

/* The format whose row's algo is `algo` (quant_algo of ModelOpt, or
 * quant_method), or NVL_QUANT_COUNT. */
static nvl_quant_format_t by_algo(const char *algo)
{
    for (int f = 0; f < NVL_QUANT_COUNT; f++)
        if (algo != NULL && strcmp(nvl_quant_row(f)->algo, algo) == 0)
            return (nvl_quant_format_t)f;
    return NVL_QUANT_COUNT;
}

/* Whether gs (a group_size, NULL: absent) is NVFP4's 16; else reported
 * with its key. */
static bool group16(const char *file, const char *key, const json_t *gs)
{
    if (gs == NULL || (json_is_integer(gs) && json_integer_value(gs) == 16))
        return true;
    nvl_report("%s: %s must be 16 for NVFP4 (ModelOpt's block of 16 "
               "elements per E4M3 scale)",
               file, key);
    return false;
}

/* NVFP4's group_size in ModelOpt's keys: the key itself, and in
 * config.json's form each config group's weights.group_size
 * (convert_hf_quant_config_format); absent: 16. */
static nvl_status_t group_size(const char *file, const json_t *q)
{
    if (!group16(file, "group_size", json_object_get(q, "group_size")))
        return NVL_ERR_INVALID;
    const char *name;
    json_t *g;
    json_object_foreach(json_object_get(q, "config_groups"), name, g) {
        char key[160];
        snprintf(key, sizeof key, "config_groups.%.64s.weights.group_size",
                 name);
        if (!group16(file, key,
                     json_object_get(json_object_get(g, "weights"),
                                     "group_size")))
            return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* The KV cache type in ModelOpt's keys: kv_cache_quant_algo "FP8" or
 * null; in config.json's form kv_cache_scheme, {"num_bits": 8, "type":
 * "float", ...} for FP8 (convert_hf_quant_config_format writes another
 * algorithm's name as a string) or null. */
static nvl_status_t kv_algo(const char *file, const json_t *q,
                            nvl_quant_config_t *out)
{
    const char *key = "kv_cache_quant_algo";
    const json_t *kv = json_object_get(q, key);
    if (kv == NULL) {
        key = "kv_cache_scheme";
        kv = json_object_get(q, key);
    }
    const char *kvs = json_string_value(kv);
    bool fp8 = kvs != NULL && strcmp(kvs, "FP8") == 0;
    if (json_is_object(kv)) {
        const char *t = json_string_value(json_object_get(kv, "type"));
        fp8 = t != NULL && strcmp(t, "float") == 0 &&
              json_integer_value(json_object_get(kv, "num_bits")) == 8;
        kvs = "an object other than FP8's {\"num_bits\": 8, \"type\": "
              "\"float\"}";
    }
    if (kv != NULL && !json_is_null(kv) && !fp8) {
        nvl_report("%s: %s %s%s%s is not one nvlemu reads (FP8 or null)",
                   file, key, kvs && !json_is_object(kv) ? "'" : "",
                   kvs ? kvs : "not a string",
                   kvs && !json_is_object(kv) ? "'" : "");
        return NVL_ERR_INVALID;
    }
    out->kv_fp8 = fp8;
    return NVL_OK;
}

/* ModelOpt's keys (under "quantization" in hf_quant_config.json, flat in
 * config.json's quantization_config, where ModelOpt's export writes them
 * converted: `ignore` for exclude_modules, kv_cache_scheme, config_groups;
 * vLLM's ModelOptQuantConfigBase.from_config reads either): quant_algo
 * NVFP4 (group_size 16) or FP8. */
static nvl_status_t modelopt(const char *file, const json_t *q,
                             nvl_quant_config_t *out)
{
    const char *algo = json_string_value(json_object_get(q, "quant_algo"));
    nvl_quant_format_t f = by_algo(algo);
    if (algo == NULL || (f != NVL_QUANT_NVFP4 && f != NVL_QUANT_FP8)) {
        nvl_report("%s: quant_algo %s%s%s is not one nvlemu reads (NVFP4 or "
                   "FP8)",
                   file, algo ? "'" : "", algo ? algo : "missing",
                   algo ? "'" : "");
        return NVL_ERR_INVALID;
    }
    if ((f == NVL_QUANT_NVFP4 && group_size(file, q) != NVL_OK) ||
        kv_algo(file, q, out) != NVL_OK)
        return NVL_ERR_INVALID;
    out->quantized = true;
    out->format = f;
    return exclusions(file, q,
                      json_object_get(q, "exclude_modules") == NULL &&
                              json_object_get(q, "ignore") != NULL
                          ? "ignore"
                          : "exclude_modules",
                      out);
}

/* vLLM's Fp8Config.from_config: activation_scheme "static" or "dynamic"
 * (the default); dynamic per-tensor FP8 runs per token (Fp8LinearMethod) */
static nvl_status_t act_scheme(const char *file, const json_t *q,
                               nvl_quant_config_t *out)
{
    const json_t *a = json_object_get(q, "activation_scheme");
    const char *as = json_string_value(a);
    if (a != NULL && (as == NULL || (strcmp(as, "dynamic") != 0 &&
                                     strcmp(as, "static") != 0))) {
        nvl_report("%s: quantization_config.activation_scheme must be "
                   "\"dynamic\" or \"static\" (vLLM's Fp8Config)",
                   file);
        return NVL_ERR_INVALID;
    }
    out->act_dynamic = as == NULL || strcmp(as, "dynamic") == 0;
    return NVL_OK;
}

/* config.json's quantization_config */
static nvl_status_t hf_config(const char *file, const json_t *q,
                              nvl_quant_config_t *out)
{
    const char *method = json_string_value(json_object_get(q, "quant_method"));
    if (method != NULL && strcmp(method, "modelopt") == 0)
        return modelopt(file, q, out);
    if (method != NULL && strcmp(method, "compressed-tensors") == 0)
        return nvl_quant_ct_read(file, q, out);
    nvl_quant_format_t f = by_algo(method);
    if (f == NVL_QUANT_FP8_BLOCK) {
        const json_t *b = json_object_get(q, "weight_block_size");
        if (b == NULL) {
            f = NVL_QUANT_FP8; /* per-tensor weight_scale, as vLLM's Fp8Config
                                */
            if (act_scheme(file, q, out) != NVL_OK)
                return NVL_ERR_INVALID;
        } else if (json_array_size(b) != 2 ||
                   json_integer_value(json_array_get(b, 0)) != 128 ||
                   json_integer_value(json_array_get(b, 1)) != 128) {
            nvl_report("%s: quantization_config.weight_block_size must be "
                       "[128, 128] (the blocks nvlemu reads)",
                       file);
            return NVL_ERR_INVALID;
        }
    }
    /* NVFP4 is read through ModelOpt's keys, int8 and int4 through
     * compressed-tensors' */
    if (f == NVL_QUANT_COUNT || f == NVL_QUANT_NVFP4 || f == NVL_QUANT_INT8 ||
        f == NVL_QUANT_INT4) {
        nvl_report("%s: quantization_config.quant_method %s%s%s is not one "
                   "nvlemu reads (modelopt, fp8, mxfp4 or "
                   "compressed-tensors)",
                   file, method ? "'" : "", method ? method : "missing",
                   method ? "'" : "");
        return NVL_ERR_INVALID;
    }
    out->quantized = true;
    out->format = f;
    return exclusions(file, q, "modules_to_not_convert", out);
}

/* The bytes of an element of config.json's model dtype ("dtype", or
 * transformers 4's "torch_dtype"): 2 for bfloat16 and float16, 4 for
 * float32, 0 for anything else. */
static uint32_t model_dtype_bytes(const json_t *root)
{
    const char *d = json_string_value(json_object_get(root, "dtype"));
    if (d == NULL)
        d = json_string_value(json_object_get(root, "torch_dtype"));
    if (d == NULL)
        return 0;
    return strcmp(d, "bfloat16") == 0 || strcmp(d, "float16") == 0 ? 2
           : strcmp(d, "float32") == 0                             ? 4
                                                                   : 0;
}

/* What a and b (the same checkpoint's two configs) disagree on, or NULL:
 * the format, the KV cache's, the modules left out. */
static const char *disagree(const nvl_quant_config_t *a,
                            const nvl_quant_config_t *b)
{
    if (a->quantized != b->quantized || a->format != b->format ||
        a->compressed_tensors != b->compressed_tensors)
        return "the weight format";
    if (a->kv_fp8 != b->kv_fp8)
        return "the KV cache's format";
    bool same = a->n_exclude == b->n_exclude;
    for (int i = 0; same && i < a->n_exclude; i++)
        same = strcmp(a->exclude[i], b->exclude[i]) == 0;
    return same ? NULL : "the modules left unquantized";
}

/* With hf_quant_config.json read into hf: config.json's
 * quantization_config, where it has one, must say the same (vLLM's
 * get_quant_config reads config.json's, TensorRT-LLM's LLM API
 * hf_quant_config.json); its own errors are reported as such. */
static nvl_status_t same_in_config(const char *dir,
                                   const nvl_quant_config_t *hf)
{
    nvl_quant_config_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NVL_ERR_NOMEM;
    snprintf(c->file, sizeof c->file, "%s/config.json", dir);
    json_t *root = json_load_file(c->file, 0, NULL);
    const json_t *q = json_object_get(root, "quantization_config");
    nvl_status_t st = NVL_OK;
    const char *what = NULL;
    if (q != NULL && json_is_object(q)) {
        st = hf_config(c->file, q, c);
        what = st == NVL_OK ? disagree(hf, c) : NULL;
    }
    if (what != NULL) {
        nvl_report("%s: quantization_config and %s disagree on %s (%s%s, "
                   "KV %s, %d module(s) excluded against %s%s, KV %s, %d): "
                   "vLLM reads the first, TensorRT-LLM the second",
                   c->file, hf->file, what,
                   c->quantized ? nvl_quant_row(c->format)->m.name : "none",
                   c->compressed_tensors ? " (compressed-tensors)" : "",
                   c->kv_fp8 ? "fp8" : "bf16", c->n_exclude,
                   nvl_quant_row(hf->format)->m.name,
                   hf->compressed_tensors ? " (compressed-tensors)" : "",
                   hf->kv_fp8 ? "fp8" : "bf16", hf->n_exclude);
        st = NVL_ERR_INVALID;
    }
    json_decref(root);
    free(c);
    return st;
}

nvl_status_t nvl_quant_config_read(const char *dir, nvl_quant_config_t *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->file, sizeof out->file, "%s/hf_quant_config.json", dir);
    bool hf_quant = access(out->file, F_OK) == 0;
    if (!hf_quant)
        snprintf(out->file, sizeof out->file, "%s/config.json", dir);
    if (access(out->file, F_OK) != 0)
        return NVL_OK;
    json_error_t err;
    json_t *root = json_load_file(out->file, 0, &err);
    if (root == NULL) {
        nvl_report("%s:%d:%d: not valid JSON: %s", out->file, err.line,
                   err.column, err.text);
        return NVL_ERR_INVALID;
    }
    const json_t *q = json_object_get(root, hf_quant ? "quantization"
                                                     : "quantization_config");
    nvl_status_t st = NVL_OK;
    if (q != NULL && !json_is_object(q)) {
        nvl_report("%s: \"%s\" is not an object", out->file,
                   hf_quant ? "quantization" : "quantization_config");
        st = NVL_ERR_INVALID;
    } else if (q != NULL) {
        st = hf_quant ? modelopt(out->file, q, out)
                      : hf_config(out->file, q, out);
        if (st == NVL_OK && out->compressed_tensors)
            out->scale_bytes = model_dtype_bytes(root);
        if (st == NVL_OK && hf_quant)
            st = same_in_config(dir, out);
    } else if (hf_quant) {
        nvl_report("%s: no \"quantization\" object", out->file);
        st = NVL_ERR_INVALID;
    }
    json_decref(root);
    return st;
}
