/* A checkpoint's weight format per GEMM class: the classes its format's
 * engines quantize, less the modules its exclusion list names
 * (docs/quantization.md, "A format per GEMM class"). */
#include <stdio.h>

#include "nvlemu/model.h"

/* The modules of class c in layer li of cfg, as a Hugging Face checkpoint
 * names them (a Qwen3-MoE's experts by its expert 0); returns their
 * number (0: the layer has none). */
static int class_modules(const nvl_model_config_t *cfg, nvl_quant_class_t c,
                         uint32_t li, char names[4][96])
{
    static const char *const attn[] = {"q_proj", "k_proj", "v_proj",
                                       "o_proj"};
    static const char *const mlp[] = {"gate_proj", "up_proj", "down_proj"};
    static const char *const fused[] = {"gate_up_proj", "down_proj"};
    bool moe = nvl_model_layer_is_moe(cfg, li);
    const char *const *leaf = NULL, *fmt = NULL;
    int n = 0;
    if (c == NVL_QCLASS_ATTN) {
        leaf = attn, n = 4, fmt = "model.layers.%u.self_attn.%s";
    } else if (c == NVL_QCLASS_MLP && !moe) {
        leaf = mlp, n = 3, fmt = "model.layers.%u.mlp.%s";
    } else if (c == NVL_QCLASS_EXPERTS && moe && cfg->experts_fused) {
        leaf = fused, n = 2, fmt = "model.layers.%u.mlp.experts.%s";
    } else if (c == NVL_QCLASS_EXPERTS && moe) {
        leaf = mlp, n = 3, fmt = "model.layers.%u.mlp.experts.0.%s";
    }
    for (int i = 0; i < n; i++)
        snprintf(names[i], sizeof names[i], fmt, li, leaf[i]);
    return n;
}

/* Whether class c stays quantized under q's exclusions: none of its
 * modules excluded; all of them: not; some: reported. */
static nvl_status_t class_kept(const nvl_model_config_t *cfg,
                               const nvl_quant_config_t *q,
                               nvl_quant_class_t c, bool *quantized_out)
{
    uint32_t total = 0, hit = 0;
    int entry = -1;
    char first[400] = "";
    for (uint32_t li = 0; li < cfg->layers; li++) {
        char names[4][96];
        int n = class_modules(cfg, c, li, names);
        for (int i = 0; i < n; i++) {
            total++;
            int e;
            if (nvl_quant_config_skips(q, names[i], &e) && hit++ == 0) {
                entry = e;
                snprintf(first, sizeof first, "%s", names[i]);
            }
        }
    }
    if (hit > 0 && hit < total) {
        char what[200];
        if (entry >= 0)
            snprintf(what, sizeof what, "%s entry '%s'", q->exclude_key,
                     q->exclude[entry]);
        else
            snprintf(what, sizeof what, "config_groups' targets");
        const char *cls = nvl_family_name(&nvl_quant_class_family, (int)c);
        nvl_report("%s: %s leaves %u of the %u %s modules of %s "
                   "unquantized (%s first): nvlemu prices one weight format "
                   "per GEMM class, not per layer or per projection; leave "
                   "every layer's %s modules quantized, or none",
                   q->file, what, hit, total, cls, cfg->name, first, cls);
        return NVL_ERR_INVALID;
    }
    *quantized_out = hit == 0;
    return NVL_OK;
}

bool nvl_model_has_class(const nvl_model_config_t *cfg, nvl_quant_class_t c)
{
    bool moe = false, dense = false;
    for (uint32_t li = 0; li < cfg->layers; li++) {
        moe = moe || nvl_model_layer_is_moe(cfg, li);
        dense = dense || !nvl_model_layer_is_moe(cfg, li);
    }
    return c == NVL_QCLASS_MLP                                   ? dense
           : c == NVL_QCLASS_EXPERTS || c == NVL_QCLASS_ROUTER ? moe
                                                                 : true;
}

nvl_status_t nvl_model_gemm_formats(const nvl_model_config_t *cfg,
                                    const nvl_quant_config_t *q,
                                    nvl_model_formats_t *formats_out)
{
    if (q == NULL || !q->quantized) {
        *formats_out = cfg->release;
        return NVL_OK;
    }
    nvl_model_formats_t f = {.any = true, .format = q->format};
    for (int c = 0; c < NVL_QCLASS_COUNT; c++) {
        if (!nvl_quant_class_covered(q->format, (nvl_quant_class_t)c))
            continue;
        if (class_kept(cfg, q, (nvl_quant_class_t)c, &f.quantized[c]) !=
            NVL_OK)
            return NVL_ERR_INVALID;
    }
    *formats_out = f;
    return NVL_OK;
}
