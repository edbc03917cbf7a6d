/* `nvlemu quantize`: a float checkpoint rewritten in a quantized format as
 * its writer lays it out (include/nvlemu/weights.h,
 * nvl_weights_quantize; the numerics are src/quant's). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nvlemu/json.h"
#include "nvlemu/weights.h"

typedef struct {
    const nvl_weights_t *w;
    nvl_quant_format_t f;
    const nvl_weights_quant_opts_t *q;
    nvl_st_entry_t *e; /* the tensors to write */
    size_t n, cap;
    void **owned; /* what the entries point to */
    size_t n_owned, cap_owned;
    bool router; /* a mixture of experts' router (P.mlp.gate.weight) */
    bool gptoss; /* mxfp4 of a gpt-oss: its experts alone, its layout */
    const char *dir; /* the checkpoint read */
} job_t;

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? 2 * *cap : 64;
    void *q = realloc(*p, c * size);
    if (q == NULL)
        return false;
    *p = q;
    *cap = c;
    return true;
}

/* Keeps p (freed with the job); false when memory runs out (p freed). */
static bool own(job_t *j, void *p)
{
    if (p == NULL || !grow((void **)&j->owned, &j->cap_owned, j->n_owned + 1,
                           sizeof *j->owned)) {
        free(p);
        nvl_report("out of memory quantizing a checkpoint");
        return false;
    }
    j->owned[j->n_owned++] = p;
    return true;
}

/* count floats, a weight's working copy (the caller frees it), or NULL
 * with the report made. */
static float *floats(uint64_t count)
{
    float *w = malloc((count + 1) * sizeof *w);
    if (w == NULL)
        nvl_report("out of memory quantizing a checkpoint");
    return w;
}

static nvl_status_t add(job_t *j, const nvl_st_entry_t *e)
{
    char *name = strdup(e->name);
    if (!own(j, name))
        return NVL_ERR_NOMEM;
    if (!grow((void **)&j->e, &j->cap, j->n + 1, sizeof *j->e)) {
        nvl_report("out of memory quantizing a checkpoint");
        return NVL_ERR_NOMEM;
    }
    j->e[j->n] = *e;
    j->e[j->n++].name = name;
    return NVL_OK;
}

/* The linear weights ModelOpt's default quantizes in a decoder layer:
 * the attention's, the MLP's and the experts' projections. */
static bool quantizable(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "model.layers.", 13) == 0 && n > 12 &&
           strcmp(name + n - 12, "_proj.weight") == 0;
}

/* A calibrated F32 scalar `name` = v of ndim 0 (ModelOpt exports scales
 * as 0-dimensional float32 tensors) or 1 ([1], compressed-tensors'
 * per-tensor scales). */
static nvl_status_t add_scalar_nd(job_t *j, const char *name, float v,
                                  int ndim)
{
    unsigned char *b = malloc(4);
    if (!own(j, b))
        return NVL_ERR_NOMEM;
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    for (int k = 0; k < 4; k++) /* little-endian, as safetensors */
        b[k] = (unsigned char)(u >> (8 * k));
    nvl_st_entry_t e = {name, "F32", ndim, {1}, b, 4};
    return add(j, &e);
}

static nvl_status_t add_scalar(job_t *j, const char *name, float v)
{
    return add_scalar_nd(j, name, v, 0);
}

/* The weight `name`'s input_scale from the calibrated amax of its input
 * (ModelOpt's get_activation_scaling_factor), where the format has static
 * input scales; none where calibration saw no input (an expert no token
 * reached, or an input nvlemu does not calibrate). */
static nvl_status_t input_scale(job_t *j, const char *name, size_t prefix)
{
    uint32_t layer = 0;
    int p = nvl_quant_calib_point(name, &layer);
    if (p < 0 || nvl_quant_input_scale(j->f, 1.0f) == 0.0f)
        return NVL_OK;
    if (layer >= j->q->calib->layers) {
        nvl_report("tensor '%s': layer %u, but the calibration ran %u "
                   "layer(s)", name, layer, j->q->calib->layers);
        return NVL_ERR_INVALID;
    }
    float amax = j->q->calib->amax[(size_t)layer * NVL_CALIB_COUNT +
                                   (size_t)p];
    if (!(amax > 0.0f))
        return NVL_OK;
    char full[512];
    snprintf(full, sizeof full, "%.*sinput_scale", (int)prefix, name);
    return add_scalar(j, full, nvl_quant_input_scale(j->f, amax));
}

/* Each layer's k_scale and v_scale for an FP8 KV cache under ModelOpt's
 * names (postprocess_state_dict: k_bmm_quantizer._amax -> k_proj.k_scale,
 * 0-dimensional), or compressed-tensors' (quantization/lifecycle/
 * initialize.py, initialize_attn_qparams: the attention module's k_scale
 * and v_scale, [1] for strategy "tensor"). */
static nvl_status_t kv_scales(job_t *j)
{
    bool ct = nvl_quant_row(j->f)->compressed_tensors;
    const char *const names[2] = {
        ct ? "self_attn.k_scale" : "self_attn.k_proj.k_scale",
        ct ? "self_attn.v_scale" : "self_attn.v_proj.v_scale"};
    nvl_status_t st = NVL_OK;
    for (uint32_t l = 0; l < j->q->calib->layers && st == NVL_OK; l++)
        for (int k = 0; k < 2 && st == NVL_OK; k++) {
            char full[192];
            snprintf(full, sizeof full, "model.layers.%u.%s", l, names[k]);
            float amax = j->q->calib->amax[(size_t)l * NVL_CALIB_COUNT +
                                           NVL_CALIB_K + (size_t)k];
            st = ct ? add_scalar_nd(j, full, nvl_quant_kv_scale_ct(amax), 1)
                    : add_scalar(j, full, nvl_quant_kv_scale_fp8(amax));
        }
    return st;
}

/* The per-tensor amax the writer gives `name`: where the format shares
 * one over a fused GEMM (ModelOpt's preprocess_linear_fusion sets every
 * part's weight amax to the largest, for NVFP4), the largest max |w| of
 * the parts in the checkpoint; else 0 (the weight's own). */
static nvl_status_t fused_amax(const job_t *j, const char *name, float *out)
{
    char parts[3][256];
    int n = nvl_quant_fused_parts(name, parts);
    *out = 0.0f;
    if (!nvl_quant_row(j->f)->fused_amax || n == 1)
        return NVL_OK;
    nvl_status_t st = NVL_OK;
    for (int i = 0; i < n && st == NVL_OK; i++) {
        nvl_tensor_info_t info;
        if (!nvl_weights_has(j->w, parts[i]))
            continue; /* a part the model does not have */
        if ((st = nvl_weights_info(j->w, parts[i], &info)) != NVL_OK)
            return st;
        if (info.ndim != 2)
            continue;
        uint64_t count = info.shape[0] * info.shape[1];
        float *w = floats(count);
        if (w == NULL)
            return NVL_ERR_NOMEM;
        st = nvl_weights_read_f32(j->w, parts[i], 0, info.shape[0], 0,
                                  info.shape[1], w);
        for (uint64_t k = 0; k < count && st == NVL_OK; k++)
            *out = fmaxf(*out, fabsf(w[k]));
        free(w);
    }
    return st;
}

/* q's parts as the entries stem[0, stem_len) + each part's suffix; the
 * job keeps their bytes, q is freed. */
static nvl_status_t add_parts(job_t *j, const char *stem, size_t stem_len,
                              nvl_quant_tensor_t *q)
{
    nvl_status_t st = NVL_OK;
    for (int i = 0; i < q->n_parts && st == NVL_OK; i++) {
        char full[512];
        snprintf(full, sizeof full, "%.*s%s", (int)stem_len, stem,
                 q->part[i].suffix);
        nvl_st_entry_t e = {full, q->part[i].dtype, q->part[i].ndim,
                            {0},  q->part[i].bytes, q->part[i].n_bytes};
        for (int d = 0; d < q->part[i].ndim; d++)
            e.shape[d] = q->part[i].shape[d];
        st = own(j, q->part[i].bytes) ? add(j, &e) : NVL_ERR_NOMEM;
        q->part[i].bytes = NULL;
    }
    nvl_quant_tensor_free(q);
    return st;
}

static nvl_status_t quantize_one(job_t *j, const char *name,
                                 const nvl_tensor_info_t *info)
{
    uint64_t rows = info->shape[0], cols = info->shape[1];
    /* the float copy lives while its tensor is quantized (the parts own
     * their bytes), not for the whole job */
    float *w = floats(rows * cols);
    if (w == NULL)
        return NVL_ERR_NOMEM;
    float amax;
    nvl_status_t st = fused_amax(j, name, &amax);
    if (st == NVL_OK)
        st = nvl_weights_read_f32(j->w, name, 0, rows, 0, cols, w);
    nvl_quant_tensor_t q;
    if (st == NVL_OK)
        st = nvl_quant_tensor(j->f, name, w, rows, cols, amax, &q);
    free(w);
    if (st != NVL_OK)
        return st;
    size_t prefix = strlen(name) - strlen("weight");
    st = add_parts(j, name, prefix, &q);
    if (st == NVL_OK && j->q->calib != NULL)
        st = input_scale(j, name, prefix);
    return st;
}

/* gpt-oss's experts: one tensor of all experts' gate_up or down
 * projections, [E, in, out] (no ".weight"), which its own MX-FP4 release
 * stores as _blocks / _scales under quant_method "mxfp4", while
 * compressed-tensors' "Linear" targets name nn.Linear modules only. */
static bool fused_experts(const char *name, const nvl_tensor_info_t *info)
{
    return info->ndim == 3 && strstr(name, ".mlp.experts.") != NULL &&
           strstr(name, "_proj") != NULL && strstr(name, "bias") == NULL;
}

/* A fused experts tensor [E, in, out] in gpt-oss's MX-FP4
 * (nvl_quant_mxfp4_experts): name_blocks and name_scales. */
static nvl_status_t quantize_experts(job_t *j, const char *name,
                                     const nvl_tensor_info_t *info)
{
    uint64_t e = info->shape[0], in = info->shape[1], out = info->shape[2];
    float *w = floats(e * in * out);
    if (w == NULL)
        return NVL_ERR_NOMEM;
    nvl_status_t st = nvl_weights_read_f32(j->w, name, 0, e * in, 0, out, w);
    nvl_quant_tensor_t q;
    if (st == NVL_OK)
        st = nvl_quant_mxfp4_experts(name, w, e, in, out, &q);
    free(w);
    return st == NVL_OK ? add_parts(j, name, strlen(name), &q) : st;
}

static nvl_status_t one(const char *name, void *ctx)
{
    job_t *j = ctx;
    nvl_tensor_info_t info;
    nvl_status_t st = nvl_weights_info(j->w, name, &info);
    if (st != NVL_OK)
        return st;
    size_t len = strlen(name);
    j->router = j->router || (len > 16 && strcmp(name + len - 16,
                                                 ".mlp.gate.weight") == 0);
    if (j->gptoss && fused_experts(name, &info))
        return quantize_experts(j, name, &info);
    if (!j->gptoss && quantizable(name) && info.ndim == 2)
        return quantize_one(j, name, &info);
    unsigned char *b;
    uint64_t n;
    const char *dtype;
    if ((st = nvl_weights_read_raw(j->w, name, &b, &n, &dtype)) != NVL_OK)
        return st;
    if (!own(j, b))
        return NVL_ERR_NOMEM;
    nvl_st_entry_t e = {name, dtype, info.ndim, {0}, b, n};
    memcpy(e.shape, info.shape, sizeof e.shape);
    return add(j, &e);
}

/* mxfp4 of a checkpoint with gpt-oss's fused experts (layer 0's
 * mlp.experts.gate_up_proj of three dimensions) is written in gpt-oss's
 * own layout, the experts alone: compressed-tensors' targets are Linear
 * modules, which fused experts are not.  Its config has no KV cache key:
 * --kv-dtype fp8 is refused. */
static nvl_status_t gptoss_layout(job_t *j)
{
    static const char *probe = "model.layers.0.mlp.experts.gate_up_proj";
    nvl_tensor_info_t info;
    if (!nvl_weights_has(j->w, probe))
        return NVL_OK;
    nvl_status_t st = nvl_weights_info(j->w, probe, &info);
    if (st != NVL_OK || !fused_experts(probe, &info))
        return st;
    j->gptoss = true;
    if (j->q->kv_fp8) {
        nvl_report("%s: gpt-oss's MX-FP4 checkpoint (quant_method \"mxfp4\", "
                   "its experts alone) has no KV cache key: --kv-dtype fp8 "
                   "is not written (give it to run, generate or serve)",
                   j->dir);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

static nvl_status_t write_json(const char *path, const json_t *j)
{
    FILE *f = fopen(path, "w");
    if (f == NULL || nvl_json_dumpf(j, f, JSON_INDENT(2)) != 0 ||
        fputc('\n', f) == EOF || fclose(f) != 0) {
        nvl_report("%s: cannot write: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

/* config.json with the writer's quantization_config, hf_quant_config.json
 * where the writer has one, generation_config.json copied.  A
 * compressed-tensors checkpoint with a router ignores it as
 * llm-compressor's mixture-of-experts examples do for every scheme
 * ("re:.*mlp.gate$": examples/awq/qwen3_moe_example.py W4A16,
 * model_free_ptq/qwen3.5_int8.py W8A8, quantizing_moe/deepseek_r1_example.py;
 * the router is an nn.Linear its "Linear" target would otherwise name;
 * nvlemu leaves it float), and an FP8 KV cache is its kv_cache_scheme. */
static nvl_status_t write_configs(const char *in, const char *out,
                                  const nvl_weights_quant_opts_t *qo,
                                  bool router, bool gptoss)
{
    char path[2048];
    json_error_t err;
    snprintf(path, sizeof path, "%s/config.json", in);
    json_t *cfg = json_load_file(path, JSON_PRESERVE_ORDER, &err);
    if (cfg == NULL) {
        nvl_report("%s:%d:%d: %s", path, err.line, err.column, err.text);
        return NVL_ERR_INVALID;
    }
    json_t *q = json_object(), *hf = NULL,
           *exclude = json_pack("[s]", "lm_head");
    bool ct = nvl_quant_row(qo->format)->compressed_tensors && !gptoss;
    if (router && ct)
        json_array_append_new(exclude, json_string("re:.*mlp.gate$"));
    if (gptoss)
        nvl_quant_gptoss_config(q);
    else
        nvl_quant_config_write(qo->format, exclude, q, &hf);
    if (qo->kv_fp8 && ct)
        json_object_set_new(q, "kv_cache_scheme", nvl_quant_ct_kv_scheme());
    if (qo->kv_fp8 && hf != NULL) { /* ModelOpt's KV cache keys */
        json_object_set_new(q, "kv_cache_scheme",
                            json_pack("{s:b, s:i, s:s}", "dynamic", 0,
                                      "num_bits", 8, "type", "float"));
        json_object_set_new(json_object_get(hf, "quantization"),
                            "kv_cache_quant_algo", json_string("FP8"));
    }
    json_object_set_new(cfg, "quantization_config", q);
    snprintf(path, sizeof path, "%s/config.json", out);
    nvl_status_t st = write_json(path, cfg);
    snprintf(path, sizeof path, "%s/hf_quant_config.json", out);
    if (st == NVL_OK && hf != NULL)
        st = write_json(path, hf);
    json_decref(hf);
    json_decref(exclude);
    json_decref(cfg);
    snprintf(path, sizeof path, "%s/generation_config.json", in);
    json_t *gen = json_load_file(path, JSON_PRESERVE_ORDER, &err);
    snprintf(path, sizeof path, "%s/generation_config.json", out);
    if (st == NVL_OK && gen != NULL)
        st = write_json(path, gen);
    json_decref(gen);
    return st;
}

nvl_status_t nvl_weights_quantize(const char *in_dir, const char *out_dir,
                                  const nvl_weights_quant_opts_t *q)
{
    nvl_weights_t *w;
    nvl_status_t st = nvl_weights_open(in_dir, &w);
    if (st != NVL_OK)
        return st;
    nvl_quant_config_t qc;
    if ((st = nvl_quant_config_read(in_dir, &qc)) == NVL_OK && qc.quantized) {
        nvl_report("%s: the checkpoint is already quantized (%s); quantize "
                   "reads a float one",
                   in_dir, qc.file);
        st = NVL_ERR_INVALID;
    }
    if (st == NVL_OK && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        nvl_report("%s: cannot create: %s", out_dir, strerror(errno));
        st = NVL_ERR_IO;
    }
    job_t j = {.w = w, .f = q->format, .q = q, .dir = in_dir};
    if (st == NVL_OK && q->format == NVL_QUANT_MXFP4)
        st = gptoss_layout(&j);
    if (st == NVL_OK)
        st = nvl_weights_foreach(w, one, &j);
    if (st == NVL_OK && q->calib != NULL && q->kv_fp8)
        st = kv_scales(&j);
    char path[2048];
    snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
    if (st == NVL_OK)
        st = nvl_st_write(path, j.e, j.n);
    if (st == NVL_OK)
        st = write_configs(in_dir, out_dir, q, j.router, j.gptoss);
    for (size_t i = 0; i < j.n_owned; i++)
        free(j.owned[i]);
    free(j.owned);
    free(j.e);
    nvl_weights_close(w);
    return st;
}
