/* The model-options block (model_opts.h): its parsers and the one
 * function that turns it into the engine's options. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_opts.h"
#include "nvlemu/model.h"
#include "nvlemu/weights.h"

nvl_status_t nvl_cli_parse_wdtype(const char *label, const char *text,
                                  void *dtype_out)
{
    if (strcmp(text, "auto") == 0) {
        *(nvl_wdtype_t *)dtype_out = NVL_CLI_DTYPE_AUTO;
        return NVL_OK;
    }
    return nvl_wdtype_parse(label, text, dtype_out);
}

nvl_status_t nvl_cli_parse_kv_dtype_auto(const char *label,
                                         const char *text, void *dtype_out)
{
    if (strcmp(text, "auto") == 0) {
        *(nvl_wdtype_t *)dtype_out = NVL_CLI_DTYPE_AUTO;
        return NVL_OK;
    }
    return nvl_cli_parse_kv_dtype(label, text, dtype_out);
}

nvl_status_t nvl_cli_parse_kv_dtype(const char *label, const char *text,
                                    void *dtype_out)
{
    nvl_wdtype_t dt;
    if (nvl_wdtype_parse(label, text, &dt) != NVL_OK)
        return NVL_ERR_INVALID;
    if (!nvl_wdtype_is_kv(dt)) {
        char kinds[64];
        nvl_family_names(&nvl_kv_dtype_family, ", ", ", ", kinds,
                         sizeof kinds);
        nvl_report("%s: %s is not a KV cache type (%s)", label,
                   nvl_wdtype_name(dt), kinds);
        return NVL_ERR_INVALID;
    }
    *(nvl_wdtype_t *)dtype_out = dt;
    return NVL_OK;
}

nvl_status_t nvl_cli_parse_launch(const char *label, const char *text,
                                  void *launch_out)
{
    return nvl_launch_parse(label, text, launch_out);
}

nvl_status_t nvl_cli_parse_attn(const char *label, const char *text,
                                void *choice_out)
{
    nvl_attn_impl_t attn;
    if (strcmp(text, "auto") == 0) {
        *(int *)choice_out = -1;
        return NVL_OK;
    }
    if (nvl_attn_parse(label, text, &attn) != NVL_OK)
        return NVL_ERR_INVALID;
    *(int *)choice_out = (int)attn;
    return NVL_OK;
}

/* --kv-host, --weights-host: "auto" or a share from 0 to 1. */
nvl_status_t nvl_cli_parse_host_share(const char *label, const char *text,
                                      void *share_out)
{
    if (strcmp(text, "auto") == 0) {
        *(double *)share_out = NVL_HOST_AUTO;
        return NVL_OK;
    }
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !(v >= 0 && v <= 1)) {
        nvl_report("%s %s: expected auto or a fraction from 0 to 1", label,
                   text);
        return NVL_ERR_INVALID;
    }
    *(double *)share_out = v;
    return NVL_OK;
}

nvl_status_t nvl_cli_parse_pp_layers(const char *label, const char *text,
                                     void *list_out)
{
    nvl_cli_pp_layers_t l = {0};
    const char *p = text;
    while (*p != '\0') {
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || *p == '-' || errno != 0 || v < 1 || v > 100000 ||
            (*end != ',' && *end != '\0') || l.n == NVL_ENGINE_PP_MAX) {
            nvl_report("%s %s: expected up to %d layer counts from 1 to "
                       "100000, separated by commas (40,40)", label, text,
                       NVL_ENGINE_PP_MAX);
            return NVL_ERR_INVALID;
        }
        l.layers[l.n++] = (uint32_t)v;
        p = *end == ',' ? end + 1 : end;
        if (*end == ',' && *p == '\0') {
            nvl_report("%s %s: a comma with no count after it", label, text);
            return NVL_ERR_INVALID;
        }
    }
    if (l.n == 0) {
        nvl_report("%s: expected layer counts (40,40)", label);
        return NVL_ERR_INVALID;
    }
    *(nvl_cli_pp_layers_t *)list_out = l;
    return NVL_OK;
}

/* The model's configuration and its weight formats per GEMM class
 * (model NULL: none, every class bf16). */
static nvl_status_t model_formats(const char *model,
                                  const nvl_quant_config_t *q,
                                  nvl_model_formats_t *f_out)
{
    nvl_model_config_t cfg;
    *f_out = (nvl_model_formats_t){.any = false};
    if (model == NULL)
        return NVL_OK;
    nvl_status_t st = nvl_model_is_preset(model)
                          ? nvl_model_preset(model, &cfg)
                          : nvl_model_config_load(model, &cfg);
    return st == NVL_OK ? nvl_model_gemm_formats(&cfg, q, f_out) : st;
}

/* compressed-tensors' groups of several schemes: a weight-only group
 * (input_activations null) beside one that quantizes its inputs is priced
 * by its weight type alone, so that type must be weight-only itself (int4:
 * W4A16); W8A16 or FP4 weights with bf16 inputs beside W8A8 are
 * reported, naming both groups. */
static nvl_status_t weight_only(const nvl_quant_config_t *q)
{
    int wo = -1, acts = -1;
    for (int g = 0; g < q->n_group && nvl_quant_config_mixed(q); g++) {
        nvl_wdtype_t dt =
            nvl_wdtype_of_quant(q->group[g].format, q->group[g].stored);
        if (!q->group[g].weight_only)
            acts = g;
        else if (!nvl_wdtype_weight_only(dt))
            wo = g;
    }
    if (wo < 0 || acts < 0)
        return NVL_OK;
    nvl_report("%s: quantization_config.config_groups.%s runs %s weights "
               "with bf16 inputs (input_activations null) and .%s quantizes "
               "its inputs: nvlemu prices weight-only GEMMs per run, not per "
               "class, except int4 (W4A16)", q->file, q->group[wo].name,
               nvl_quant_row(q->group[wo].format)->m.name,
               q->group[acts].name);
    return NVL_ERR_INVALID;
}

/* foreach's walk for stored_scale_bytes: the checkpoint and the width
 * found (0: none yet) */
typedef struct {
    const nvl_weights_t *w;
    uint32_t bytes;
} scale_walk_t;

/* The first "*.weight_scale" tensor stored in a float dtype (F32, BF16,
 * F16: the width the checkpoint chose) sets walk->bytes and stops the
 * walk; E4M3 and E8M0 scales (NVFP4's, MX-FP4's groups) have their
 * format's own width and are passed over. */
static nvl_status_t find_scale(const char *name, void *ctx)
{
    static const char suffix[] = ".weight_scale";
    scale_walk_t *walk = ctx;
    size_t n = strlen(name), k = sizeof suffix - 1;
    if (n <= k || strcmp(name + n - k, suffix) != 0)
        return NVL_OK;
    const char *dt;
    if (nvl_weights_stored_dtype(walk->w, name, &dt) != NVL_OK)
        return NVL_ERR_INVALID;
    walk->bytes = strcmp(dt, "F32") == 0                              ? 4
                  : strcmp(dt, "BF16") == 0 || strcmp(dt, "F16") == 0 ? 2
                                                                      : 0;
    return walk->bytes ? NVL_ERR_INVALID : NVL_OK; /* found: ends the walk */
}

/* A compressed-tensors checkpoint's scale width as its safetensors
 * header stores it (the bytes of the first float weight_scale's dtype:
 * what data mode reads and a GPU holds), where dir has its weights; else
 * q->scale_bytes, config.json's dtype.  A checkpoint that does not open
 * is reported (nvl_weights_open names the file) and fails. */
static nvl_status_t stored_scale_bytes(const char *dir,
                                       nvl_quant_config_t *q)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    bool one = access(path, F_OK) == 0;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (!q->compressed_tensors || (!one && access(path, F_OK) != 0))
        return NVL_OK;
    nvl_weights_t *w;
    if (nvl_weights_open(dir, &w) != NVL_OK)
        return NVL_ERR_INVALID;
    scale_walk_t walk = {w, 0};
    nvl_status_t st = nvl_weights_foreach(w, find_scale, &walk);
    if (walk.bytes)
        q->scale_bytes = walk.bytes;
    nvl_weights_close(w);
    return st == NVL_OK || walk.bytes ? NVL_OK : NVL_ERR_INVALID;
}

nvl_status_t nvl_cli_model_opts_resolve(nvl_cli_model_opts_t *m,
                                        const char *model)
{
    nvl_quant_config_t q = {0};
    nvl_model_formats_t f;
    if ((model != NULL && !nvl_model_is_preset(model) &&
         (nvl_quant_config_read(model, &q) != NVL_OK ||
          stored_scale_bytes(model, &q) != NVL_OK)) ||
        model_formats(model, &q, &f) != NVL_OK)
        return NVL_ERR_INVALID;
    nvl_wdtype_t want = f.any ? nvl_wdtype_of_quant(f.format, q.stored)
                              : NVL_WDT_BF16;
    bool follow = m->dtype == NVL_CLI_DTYPE_AUTO || q.quantized;
    if (m->dtype == NVL_CLI_DTYPE_AUTO) {
        m->dtype = want;
    } else if (q.quantized && m->dtype != want) {
        nvl_report("--dtype %s contradicts %s, whose checkpoint is %s (%s): "
                   "its GEMMs read %s weights; leave --dtype out or pass "
                   "--dtype %s",
                   nvl_wdtype_name(m->dtype), model,
                   nvl_quant_row(q.format)->m.name, q.file,
                   nvl_wdtype_name(want), nvl_wdtype_name(want));
        return NVL_ERR_INVALID;
    }
    for (int c = 0; c < NVL_QCLASS_COUNT; c++) {
        bool fixed = c == NVL_QCLASS_ROUTER || c == NVL_QCLASS_LM_HEAD;
        /* compressed-tensors' groups: each class its own group's type */
        int g = q.n_group > 1 ? f.group[c] : -1;
        nvl_wdtype_t own = g >= 0 ? nvl_wdtype_of_quant(q.group[g].format,
                                                        q.group[g].stored)
                                  : want;
        m->gemm_dtype[c] = follow ? (f.quantized[c] ? own : NVL_WDT_BF16)
                           : fixed ? NVL_WDT_BF16
                                   : m->dtype;
    }
    if (follow)
        memcpy(m->gemm_bf16_layers, f.bf16_layers, sizeof f.bf16_layers);
    /* compressed-tensors' groups by layer: those layers their group's */
    for (int c = 0; c < NVL_QCLASS_COUNT; c++)
        for (int l = 0; l < NVL_FORMAT_LAYERS; l++) {
            int g = q.n_group > 1 && follow ? f.layer_group[c][l] - 1 : -1;
            m->gemm_layer_dtype[c][l] =
                g < 0 ? 0
                      : (uint8_t)(nvl_wdtype_of_quant(q.group[g].format,
                                                      q.group[g].stored) +
                                  1);
        }
    m->weight_scale_bytes = q.quantized ? q.scale_bytes : 0;
    if (m->kv_dtype == NVL_CLI_DTYPE_AUTO)
        m->kv_dtype = q.kv_fp8 ? NVL_WDT_FP8 : NVL_WDT_BF16;
    /* a weight-only checkpoint (compressed-tensors' input_activations
     * null: W4A16, W8A16): --act-quant auto is none, in timing mode too
     * (its GEMMs read bf16 inputs at BF16's rate) */
    if (q.quantized && weight_only(&q) != NVL_OK)
        return NVL_ERR_INVALID;
    bool all = q.weight_only; /* and every group's */
    for (int g = 0; g < q.n_group; g++)
        all = all && q.group[g].weight_only;
    if (q.quantized && all)
        m->act_quant = 1;
    return NVL_OK;
}

void nvl_cli_weights_name(const nvl_model_config_t *cfg,
                          const nvl_cli_model_opts_t *m, char *buf,
                          size_t len)
{
    bool uniform = true;
    for (int c = 0; c < NVL_QCLASS_COUNT; c++) {
        bool fixed = c == NVL_QCLASS_ROUTER || c == NVL_QCLASS_LM_HEAD;
        nvl_wdtype_t want = fixed ? NVL_WDT_BF16 : m->dtype;
        uniform = uniform && (!nvl_model_has_class(cfg, (nvl_quant_class_t)c) ||
                              m->gemm_dtype[c] == want);
    }
    size_t used = 0;
    buf[0] = '\0';
    if (uniform)
        used = (size_t)snprintf(buf, len, "%s", nvl_wdtype_name(m->dtype));
    for (int c = 0; c < NVL_QCLASS_COUNT && used < len && !uniform; c++)
        if (nvl_model_has_class(cfg, (nvl_quant_class_t)c))
            used += (size_t)snprintf(
                buf + used, len - used, "%s%s %s", used ? " / " : "",
                nvl_family_name(&nvl_quant_class_family, c),
                nvl_wdtype_name(m->gemm_dtype[c]));
    /* the layers a checkpoint keeps in bf16 in a quantized class */
    for (int c = 0; c < NVL_QCLASS_COUNT && used < len; c++) {
        int n = 0;
        for (int i = 0; i < NVL_FORMAT_LAYER_WORDS; i++)
            n += __builtin_popcountll(m->gemm_bf16_layers[c][i]);
        if (n > 0)
            used += (size_t)snprintf(
                buf + used, len - used, " (%s bf16 in %d of %u layers)",
                nvl_family_name(&nvl_quant_class_family, c), n, cfg->layers);
    }
    /* and those another config group's type: each type and its count */
    for (int c = 0; c < NVL_QCLASS_COUNT && used < len; c++)
        for (int t = 1; t <= NVL_WDT_COUNT && used < len; t++) {
            int n = 0;
            for (int l = 0; l < NVL_FORMAT_LAYERS; l++)
                n += m->gemm_layer_dtype[c][l] == t;
            if (n > 0)
                used += (size_t)snprintf(
                    buf + used, len - used, " (%s %s in %d of %u layers)",
                    nvl_family_name(&nvl_quant_class_family, c),
                    nvl_wdtype_name((nvl_wdtype_t)(t - 1)), n, cfg->layers);
        }
}

nvl_status_t nvl_cli_model_opts_engine(const nvl_cli_model_opts_t *m,
                                       const nvl_topo_t *topo,
                                       nvl_engine_opts_t *o_out)
{
    nvl_engine_opts_t o;
    nvl_engine_opts_default(&o, topo);
    if (m->dtype == NVL_CLI_DTYPE_AUTO || m->kv_dtype == NVL_CLI_DTYPE_AUTO) {
        nvl_report("internal: --dtype / --kv-dtype auto left unresolved "
                   "(nvl_cli_model_opts_resolve)");
        return NVL_ERR_INVALID;
    }
    o.cost.weight_dtype = m->dtype;
    o.cost.weight_scale_bytes = m->weight_scale_bytes;
    memcpy(o.gemm_dtype, m->gemm_dtype, sizeof o.gemm_dtype);
    memcpy(o.gemm_bf16_layers, m->gemm_bf16_layers,
           sizeof o.gemm_bf16_layers);
    memcpy(o.gemm_layer_dtype, m->gemm_layer_dtype,
           sizeof o.gemm_layer_dtype);
    o.cost.kv_dtype = m->kv_dtype;
    o.stack = m->stack;
    nvl_stack_cost(m->stack, &o.cost);
    o.cost.attn = m->attn_choice >= 0 ? (nvl_attn_impl_t)m->attn_choice
                                      : nvl_stack_attn(topo, m->stack);
    o.cost.launch = m->launch;
    o.allreduce = (nvl_ar_impl_t)m->allreduce;
    o.fuse_allreduce_norm = m->fuse_ar_norm;
    o.overlap = m->overlap;
    o.a2a_onesided = m->a2a_onesided;
    o.ep_comm = (nvl_ep_comm_t)m->ep_comm;
    o.kv_host = m->kv_host;
    o.weights_host = m->weights_host;
    o.place.ep = (int)m->ep;
    o.place.attn_dp = m->attn_dp;
    o.layers = (uint32_t)m->layers;
    o.route_skew = m->route_skew;
    o.pp = (uint32_t)m->pp;
    memcpy(o.pp_layers, m->pp_layers.layers, sizeof o.pp_layers);
    o.act_quant_none = m->act_quant == 1;
    o.cost.weight_only = o.act_quant_none && m->dtype != NVL_WDT_BF16;
    *o_out = o;
    if (m->pp_layers.n != 0 && m->pp_layers.n != (uint32_t)m->pp) {
        nvl_report("--pp-layers lists %u stage(s), --pp is %ld: give one "
                   "layer count per stage", m->pp_layers.n, m->pp);
        return NVL_ERR_INVALID;
    }
    return nvl_engine_opts_check(&o);
}

void nvl_cli_placement_name(int ranks, long ep, bool attn_dp, size_t len,
                            char *name_out)
{
    if (ep == 1 && !attn_dp)
        snprintf(name_out, len, "TP %d", ranks);
    else
        snprintf(name_out, len, "EP %ld x expert-TP %ld, attention %s %d",
                 ep, ranks / ep, attn_dp ? "DP" : "TP", ranks);
}
