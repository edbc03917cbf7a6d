/* A checkpoint's weight format per GEMM class: the classes its format's
 * engines quantize, less the modules its exclusion list names, and the
 * layers that keep a class in bf16 (docs/quantization.md, "A format per
 * GEMM class", "Per layer"). */
#include <stdio.h>
#include <string.h>

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

/* The first module of class c that q skips, over layers [0, layers):
 * hit/total modules skipped and counted, *whole whether each layer's
 * modules are all skipped or none, *entry the list entry, first its name;
 * mask: the layers skipped whole. */
typedef struct {
    uint32_t total, hit;
    bool whole;
    int entry;
    char first[400];
    uint64_t mask[NVL_FORMAT_LAYER_WORDS];
} skips_t;

static void class_skips(const nvl_model_config_t *cfg,
                        const nvl_quant_config_t *q, nvl_quant_class_t c,
                        skips_t *k)
{
    *k = (skips_t){.whole = true, .entry = -1};
    for (uint32_t li = 0; li < cfg->layers; li++) {
        char names[4][96];
        int n = class_modules(cfg, c, li, names), in_layer = 0;
        for (int i = 0; i < n; i++) {
            int e;
            if (!nvl_quant_config_skips(q, names[i], &e))
                continue;
            in_layer++;
            if (k->hit++ == 0) {
                k->entry = e;
                snprintf(k->first, sizeof k->first, "%s", names[i]);
            }
        }
        k->total += (uint32_t)n;
        k->whole = k->whole && (in_layer == 0 || in_layer == n);
        if (in_layer > 0 && li < 64 * NVL_FORMAT_LAYER_WORDS)
            k->mask[li / 64] |= 1ull << (li % 64);
        else if (in_layer > 0)
            k->whole = false;
    }
}

/* Whether class c stays quantized under q's exclusions: none of its
 * modules excluded; all of them: not; whole layers of attention, a
 * dense MLP or the experts: quantized but those layers (*mask_out); else
 * reported. */
static nvl_status_t class_kept(const nvl_model_config_t *cfg,
                               const nvl_quant_config_t *q,
                               nvl_quant_class_t c, bool *quantized_out,
                               uint64_t mask_out[NVL_FORMAT_LAYER_WORDS])
{
    skips_t k;
    class_skips(cfg, q, c, &k);
    bool per_layer = k.whole && (c == NVL_QCLASS_ATTN || c == NVL_QCLASS_MLP ||
                                 c == NVL_QCLASS_EXPERTS);
    if (k.hit > 0 && k.hit < k.total && !per_layer) {
        char what[200];
        if (k.entry >= 0)
            snprintf(what, sizeof what, "%s entry '%s'", q->exclude_key,
                     q->exclude[k.entry]);
        else
            snprintf(what, sizeof what, "config_groups' targets");
        const char *cls = nvl_family_name(&nvl_quant_class_family, (int)c);
        nvl_report("%s: %s leaves %u of the %u %s modules of %s "
                   "unquantized (%s first): nvlemu prices one weight format "
                   "per GEMM class and layer, and a layer's attention, "
                   "dense MLP or experts whole (not some of its "
                   "projections); leave every %s module of a layer "
                   "quantized, or none",
                   q->file, what, k.hit, k.total, cls, cfg->name, k.first,
                   cls);
        return NVL_ERR_INVALID;
    }
    *quantized_out = k.hit < k.total;
    if (k.hit > 0 && k.hit < k.total)
        memcpy(mask_out, k.mask, sizeof k.mask);
    return NVL_OK;
}

/* Whether groups a and b of q quantize in one scheme. */
static bool same_scheme(const nvl_quant_config_t *q, int a, int b)
{
    const nvl_quant_group_t *x = &q->group[a], *y = &q->group[b];
    return x->format == y->format && x->stored == y->stored &&
           x->weight_only == y->weight_only &&
           x->act_dynamic == y->act_dynamic;
}

/* The config group whose scheme class c's modules take (*g_out; -1: none
 * targeted): one for a layer's modules, as the engines run q/k/v_proj
 * and gate/up_proj as one GEMM of one scheme (vLLM's compressed_tensors/
 * utils.py, should_ignore_layer: "Found a different quantization schemes
 * for [...] in ...qkv_proj. vLLM requires all to use the same scheme")
 * and nvlemu prices one format a class and layer; the first layer's for
 * the class, and another scheme's group in a later layer below
 * NVL_FORMAT_LAYERS in layer_out (group + 1), as vLLM gives each Linear
 * the scheme of its own target (CompressedTensorsConfig.get_scheme), but
 * not each MoE layer (get_moe_method: one scheme).  A module two groups'
 * targets match alike is ambiguous (compressed-tensors sorts the targets,
 * vLLM's find_matched_target takes the file's order).  Else reported,
 * naming the file, both groups and both modules. */
static nvl_status_t class_group(const nvl_model_config_t *cfg,
                                const nvl_quant_config_t *q,
                                nvl_quant_class_t c, int *g_out,
                                uint8_t layer_out[NVL_FORMAT_LAYERS])
{
    char first[400] = "";
    *g_out = -1;
    for (uint32_t li = 0; li < cfg->layers; li++) {
        char names[4][96], parts[3][256], lfirst[400] = "";
        int n = class_modules(cfg, c, li, names), other, lg = -1;
        for (int i = 0; i < n; i++) {
            int g = nvl_quant_config_group(q, names[i], &other);
            if (g < 0 && other < 0)
                continue;
            if (other >= 0) {
                nvl_report("%s: module '%s' is a target of "
                           "quantization_config.config_groups.%s, which "
                           "compressed-tensors applies (whole names, then "
                           "sorted expressions), and of .%s, which vLLM "
                           "applies (the file's order): give it one group",
                           q->file, names[i], g >= 0 ? q->group[g].name : "?",
                           q->group[other].name);
                return NVL_ERR_INVALID;
            }
            if (lg < 0)
                lg = g, snprintf(lfirst, sizeof lfirst, "%s", names[i]);
            if (same_scheme(q, lg, g))
                continue;
            char w[512];
            snprintf(w, sizeof w, "%s.weight", names[i]);
            int np = nvl_quant_fused_parts(w, parts);
            bool fused = false;
            for (int k = 0; k < np && np > 1; k++)
                fused = fused || (strncmp(parts[k], lfirst, strlen(lfirst)) ==
                                      0 && parts[k][strlen(lfirst)] == '.');
            nvl_report("%s: quantization_config.config_groups.%s quantizes "
                       "'%s' and .%s '%s' in other schemes: %s", q->file,
                       q->group[lg].name, lfirst, q->group[g].name,
                       names[i],
                       fused ? "vLLM runs them as one fused GEMM and "
                               "refuses parts of different schemes "
                               "(\"vLLM requires all to use the same "
                               "scheme\")"
                             : "nvlemu prices one weight format per GEMM "
                               "class (attention, mlp, experts) and layer");
            return NVL_ERR_INVALID;
        }
        if (lg < 0)
            continue;
        if (*g_out < 0) {
            *g_out = lg;
            snprintf(first, sizeof first, "%s", lfirst);
        } else if (!same_scheme(q, *g_out, lg) && c == NVL_QCLASS_EXPERTS) {
            nvl_report("%s: quantization_config.config_groups.%s quantizes "
                       "'%s' and .%s '%s' in other schemes: vLLM's "
                       "CompressedTensorsMoEMethod.get_moe_method gives "
                       "every MoE layer one scheme, the one of \"Linear\" "
                       "or of the experts' projection names", q->file,
                       q->group[*g_out].name, first, q->group[lg].name,
                       lfirst);
            return NVL_ERR_INVALID;
        } else if (!same_scheme(q, *g_out, lg) && li >= NVL_FORMAT_LAYERS) {
            nvl_report("%s: quantization_config.config_groups.%s quantizes "
                       "'%s' and .%s '%s' in other schemes: nvlemu keeps a "
                       "scheme of its own for layers 0 to %d only", q->file,
                       q->group[*g_out].name, first, q->group[lg].name,
                       lfirst, NVL_FORMAT_LAYERS - 1);
            return NVL_ERR_INVALID;
        } else if (!same_scheme(q, *g_out, lg)) {
            layer_out[li] = (uint8_t)(lg + 1);
        }
    }
    return NVL_OK;
}

bool nvl_model_layer_bf16(const uint64_t mask[NVL_FORMAT_LAYER_WORDS],
                          int64_t layer)
{
    return layer >= 0 && layer < 64 * NVL_FORMAT_LAYER_WORDS &&
           (mask[layer / 64] >> (layer % 64) & 1) != 0;
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
    for (int c = 0; c < NVL_QCLASS_COUNT; c++)
        f.group[c] = -1;
    for (int c = 0; c < NVL_QCLASS_COUNT; c++) {
        /* compressed-tensors' groups name their GEMMs themselves (targets,
         * ignore): every class but the router and lm_head, as vLLM
         * applies a scheme to each targeted Linear */
        bool ct = q->compressed_tensors && c != NVL_QCLASS_ROUTER &&
                  c != NVL_QCLASS_LM_HEAD;
        if (!ct && !nvl_quant_class_covered(q->format, (nvl_quant_class_t)c))
            continue;
        f.group[c] = -1;
        if (class_kept(cfg, q, (nvl_quant_class_t)c, &f.quantized[c],
                       f.bf16_layers[c]) != NVL_OK ||
            (ct && q->n_group > 1 &&
             class_group(cfg, q, (nvl_quant_class_t)c, &f.group[c],
                         f.layer_group[c]) != NVL_OK))
            return NVL_ERR_INVALID;
    }
    *formats_out = f;
    return NVL_OK;
}
