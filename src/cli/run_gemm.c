/* run's report of a quantized weight type: each dense GEMM's weight bytes
 * and scale bytes on the rank holding the most (the numbers the timing
 * model reads: nvl_cost_weight_bytes), in text and JSON from one table. */
#include <stdio.h>

#include "run_report.h"

/* The dense GEMMs of one layer on the rank with the most query heads and
 * MLP rows, as the engine's plan has them (KV heads: kv_heads / tp, at
 * least one, as vLLM shards or replicates them).  Returns their count (0
 * for a mixture of experts' layers, whose experts are not listed). */
static int layer_gemms(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                       nvl_engine_gemm_t g[NVL_ENGINE_LAYER_GEMMS_MAX])
{
    const nvl_model_config_t *c = r->cfg;
    uint64_t kv = ((uint64_t)c->kv_heads + (uint64_t)r->tp - 1) /
                  (uint64_t)r->tp;
    return nvl_engine_layer_gemms(c, (uint64_t)d->q_max, kv,
                                  (uint64_t)d->i_max, g);
}

void nvl_run_gemm_text(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                       FILE *out)
{
    nvl_wdtype_t dt = r->args->engine.dtype;
    nvl_engine_gemm_t g[NVL_ENGINE_LAYER_GEMMS_MAX];
    int n = layer_gemms(r, d, g);
    if (nvl_wdtype_format(dt) == NULL || n == 0)
        return;
    fprintf(out, "# GEMM weights per layer on the largest shard, %s "
                 "(data + scales, read every pass):", nvl_wdtype_format(dt));
    for (int i = 0; i < n; i++) {
        nvl_gemm_bytes_t b = nvl_cost_weight_bytes(dt, g[i].n, g[i].k);
        fprintf(out, "%s %s [%llu x %llu] %.4g + %.4g MB", i ? ";" : "",
                g[i].name, (unsigned long long)g[i].n,
                (unsigned long long)g[i].k, b.data_bytes / 1e6,
                b.scale_bytes / 1e6);
    }
    fprintf(out, "%s\n", r->args->engine.act_quant == 1
                             ? "; activations bf16 (--act-quant none)"
                             : "; activations quantized alike");
}

json_t *nvl_run_gemm_json(const nvl_run_result_t *r,
                          const nvl_run_derived_t *d)
{
    nvl_wdtype_t dt = r->args->engine.dtype;
    nvl_engine_gemm_t g[NVL_ENGINE_LAYER_GEMMS_MAX];
    int n = layer_gemms(r, d, g);
    if (nvl_wdtype_format(dt) == NULL || n == 0)
        return NULL;
    json_t *rows = json_array();
    for (int i = 0; i < n; i++) {
        nvl_gemm_bytes_t b = nvl_cost_weight_bytes(dt, g[i].n, g[i].k);
        json_array_append_new(
            rows, json_pack("{s:s, s:I, s:I, s:f, s:f}", "name", g[i].name,
                            "n", (json_int_t)g[i].n, "k", (json_int_t)g[i].k,
                            "weight_bytes", b.data_bytes, "scale_bytes",
                            b.scale_bytes));
    }
    return json_pack("{s:s, s:b, s:o}", "format", nvl_wdtype_format(dt),
                     "weight_only", r->args->engine.act_quant == 1, "gemms",
                     rows);
}
