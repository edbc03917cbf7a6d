/* run's report of the weight formats: when some GEMM class is quantized,
 * each GEMM of a layer (and the lm_head) with its format, weight bytes and scale bytes on the rank
 * holding the most (the numbers the timing model reads:
 * nvl_cost_weight_bytes), in text and JSON from one table. */
#include <stdio.h>
#include <string.h>

#include "run_report.h"

/* One layer's GEMMs (the first layer's kind) on the rank with the most
 * query heads, MLP rows and experts (KV heads: kv_heads / tp, at least
 * one, as vLLM shards or replicates them; an expert's rows: split over
 * the expert-TP ranks), then the lm_head's vocabulary slice.  Returns
 * their count, 0 when no class is quantized. */
static int run_gemms(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                     nvl_engine_gemm_t g[NVL_ENGINE_LAYER_GEMMS_MAX + 1])
{
    const nvl_model_config_t *c = r->cfg;
    const nvl_cli_model_opts_t *m = &r->args->engine;
    bool quantized = false;
    for (int k = 0; k < NVL_QCLASS_COUNT; k++)
        quantized = quantized || nvl_wdtype_format(m->gemm_dtype[k]) != NULL;
    if (!quantized)
        return 0;
    uint64_t tp = (uint64_t)r->tp, kv = (c->kv_heads + tp - 1) / tp;
    bool moe = nvl_model_layer_is_moe(c, 0);
    uint64_t etp = tp / (uint64_t)(m->ep > 0 ? m->ep : 1);
    uint64_t rows = moe ? (c->moe_intermediate + etp - 1) / etp
                        : (uint64_t)d->i_max;
    int n = nvl_engine_layer_gemms(c, moe, (uint64_t)d->q_max, kv, rows, g);
    g[n++] = (nvl_engine_gemm_t){.name = "lm_head",
                                 .cls = NVL_QCLASS_LM_HEAD,
                                 .n = (uint64_t)d->v_max, .k = c->hidden};
    return n;
}

void nvl_run_gemm_text(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                       FILE *out)
{
    const nvl_wdtype_t *dt = r->args->engine.gemm_dtype;
    nvl_engine_gemm_t g[NVL_ENGINE_LAYER_GEMMS_MAX + 1];
    int n = run_gemms(r, d, g);
    if (n == 0)
        return;
    fprintf(out, "# GEMM weights per layer on the largest shard (data + "
                 "scales, read every pass");
    if (nvl_model_layer_is_moe(r->cfg, 0))
        fprintf(out, "; an expert's, of %.0f held", d->experts_max);
    fprintf(out, "):");
    for (int i = 0; i < n; i++) {
        nvl_gemm_bytes_t b = nvl_cost_weight_bytes(
            dt[g[i].cls], g[i].n, g[i].k, r->args->engine.weight_scale_bytes);
        const char *f = nvl_wdtype_format(dt[g[i].cls]);
        fprintf(out, "%s %s %s [%llu x %llu] %.4g + %.4g MB", i ? ";" : "",
                g[i].name, f ? f : "bf16", (unsigned long long)g[i].n,
                (unsigned long long)g[i].k, b.data_bytes / 1e6,
                b.scale_bytes / 1e6);
    }
    fprintf(out, "%s\n", r->args->engine.act_quant == 1
                             ? "; activations bf16 (weight-only: --act-quant "
                               "none, or a checkpoint without input "
                               "quantization)"
                         : nvl_wdtype_weight_only(r->args->engine.dtype)
                             ? "; activations bf16 (a weight-only format)"
                             : "; a quantized GEMM's activations "
                               "quantized alike");
}

json_t *nvl_run_gemm_json(const nvl_run_result_t *r,
                          const nvl_run_derived_t *d)
{
    const nvl_wdtype_t *dt = r->args->engine.gemm_dtype;
    nvl_engine_gemm_t g[NVL_ENGINE_LAYER_GEMMS_MAX + 1];
    int n = run_gemms(r, d, g);
    if (n == 0)
        return NULL;
    json_t *rows = json_array(), *classes = json_object();
    for (int c = 0; c < NVL_QCLASS_COUNT; c++)
        if (nvl_model_has_class(r->cfg, (nvl_quant_class_t)c))
            json_object_set_new(classes,
                                nvl_family_name(&nvl_quant_class_family, c),
                                json_string(nvl_wdtype_name(dt[c])));
    for (int i = 0; i < n; i++) {
        nvl_gemm_bytes_t b = nvl_cost_weight_bytes(
            dt[g[i].cls], g[i].n, g[i].k, r->args->engine.weight_scale_bytes);
        const char *f = nvl_wdtype_format(dt[g[i].cls]);
        json_array_append_new(
            rows, json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:f}", "name",
                            g[i].name, "class",
                            nvl_family_name(&nvl_quant_class_family,
                                            (int)g[i].cls),
                            "format", f ? f : "bf16", "n", (json_int_t)g[i].n,
                            "k", (json_int_t)g[i].k, "weight_bytes",
                            b.data_bytes, "scale_bytes", b.scale_bytes));
    }
    const char *f = nvl_wdtype_format(r->args->engine.dtype);
    return json_pack("{s:s, s:o, s:b, s:o}", "format", f ? f : "bf16",
                     "classes", classes, "weight_only",
                     r->args->engine.act_quant == 1 ||
                         nvl_wdtype_weight_only(r->args->engine.dtype),
                     "gemms", rows);
}
