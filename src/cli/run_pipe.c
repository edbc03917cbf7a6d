/* `nvlemu run`'s pipeline: the stages, where they sit on the topology,
 * the links between them, and what the pipeline costs (bubble, sends and
 * receives), in the text report and the JSON. */
#include <stdio.h>

#include "nvlemu/topo.h"
#include "run_report.h"

/* Layers of stage k (as the engine splits them: --pp-layers, or even). */
static uint32_t stage_layers(const nvl_run_result_t *r, int k)
{
    uint32_t given = r->engine->pp_layers[k];
    return given ? given
                 : nvl_range_split(r->layers, r->pipe.stages, k).count;
}

/* Stage k's first layer. */
static uint32_t stage_first(const nvl_run_result_t *r, int k)
{
    uint32_t first = 0;
    for (int j = 0; j < k; j++)
        first += stage_layers(r, j);
    return first;
}

/* The NVLink domains stage k's GPUs sit in: "d" or "d0-d1". */
static void stage_domains(const nvl_run_result_t *r, int k, size_t len,
                          char *out)
{
    int tp = r->pipe.tp;
    uint32_t lo = nvl_topo_domain_of(r->topo, (uint32_t)(k * tp));
    uint32_t hi = nvl_topo_domain_of(r->topo, (uint32_t)(k * tp + tp - 1));
    if (lo == hi)
        snprintf(out, len, "%u", lo);
    else
        snprintf(out, len, "%u-%u", lo, hi);
}

void nvl_run_pipe_text(const nvl_run_result_t *r, const nvl_run_derived_t *d,
                       FILE *out)
{
    const nvl_engine_pipe_t *p = &r->pipe;
    if (p->stages <= 1)
        return;
    fprintf(out, "# pipeline: PP %d x TP %d, %d microbatch(es) of the batch "
                 "in flight; placement:\n", p->stages, p->tp,
            p->microbatches);
    for (int k = 0; k < p->stages; k++) {
        char dom[32];
        stage_domains(r, k, sizeof dom, dom);
        uint32_t f = stage_first(r, k);
        fprintf(out, "#   stage %d: layers %u-%u on GPUs %d-%d (NVLink "
                     "domain %s)\n", k, f, f + stage_layers(r, k) - 1,
                k * p->tp, k * p->tp + p->tp - 1, dom);
    }
    for (int k = 0; k + 1 < p->stages; k++) {
        uint32_t a = (uint32_t)(k * p->tp), b = a + (uint32_t)p->tp;
        fprintf(out, "#   stage %d -> %d: %s, %.0f GB/s and %.2f us per "
                     "GPU pair (GPU %u -> %u, each TP rank to its peer)\n",
                k, k + 1,
                nvl_fabric_name(nvl_topo_fabric(r->topo, a, b)),
                nvl_topo_p2p_bw(r->topo, a, b) / 1e9,
                (double)nvl_topo_p2p_lat_ps(r->topo, a, b) / 1e6, a, b);
    }
    double bubble = STAT(NVL_RS_PP_BUBBLE_MS, 0);
    fprintf(out, "# pipeline per decode step (mean over ranks): bubble "
                 "%.3f ms (%.0f%% of the step), send/recv %.3f ms, %.2f MB; "
                 "prefill: bubble %.3f ms, send/recv %.3f ms\n",
            bubble, d->tpot_ms > 0 ? 100 * bubble / d->tpot_ms : 0,
            STAT(NVL_RS_PP_XFER_MS, 0), STAT(NVL_RS_PP_BYTES, 0) / 1e6,
            STAT(NVL_RS_PP_PREFILL_BUBBLE_MS, 0),
            STAT(NVL_RS_PP_PREFILL_XFER_MS, 0));
}

json_t *nvl_run_pipe_json(const nvl_run_result_t *r,
                          const nvl_run_derived_t *d)
{
    const nvl_engine_pipe_t *p = &r->pipe;
    if (p->stages <= 1)
        return NULL;
    json_t *stages = json_array();
    for (int k = 0; k < p->stages; k++) {
        char dom[32];
        stage_domains(r, k, sizeof dom, dom);
        json_t *s = json_pack("{s:i, s:i, s:i, s:i, s:s}", "first_layer",
                              (int)stage_first(r, k), "layers",
                              (int)stage_layers(r, k), "first_gpu",
                              k * p->tp, "gpus", p->tp, "nvlink_domains",
                              dom);
        if (k + 1 < p->stages) {
            uint32_t a = (uint32_t)(k * p->tp), b = a + (uint32_t)p->tp;
            json_object_set_new(s, "link_to_next", json_pack(
                "{s:s, s:f, s:f}", "fabric",
                nvl_fabric_name(nvl_topo_fabric(r->topo, a, b)),
                "bw_gb_per_s", nvl_topo_p2p_bw(r->topo, a, b) / 1e9,
                "latency_us", (double)nvl_topo_p2p_lat_ps(r->topo, a, b) /
                                  1e6));
        }
        json_array_append_new(stages, s);
    }
    double bubble = STAT(NVL_RS_PP_BUBBLE_MS, 0);
    json_t *o = json_pack("{s:i, s:i, s:i, s:o}", "pp", p->stages, "tp",
                          p->tp, "microbatches", p->microbatches, "stages",
                          stages);
    json_object_set_new(o, nvl_run_stat_key(NVL_RS_PP_BUBBLE_MS),
                        json_real(bubble));
    json_object_set_new(o, "bubble_share_of_step",
                        json_real(d->tpot_ms > 0 ? bubble / d->tpot_ms : 0));
    json_object_set_new(o, nvl_run_stat_key(NVL_RS_PP_XFER_MS),
                        json_real(STAT(NVL_RS_PP_XFER_MS, 0)));
    json_object_set_new(o, nvl_run_stat_key(NVL_RS_PP_BYTES),
                        json_real(STAT(NVL_RS_PP_BYTES, 0)));
    json_object_set_new(o, nvl_run_stat_key(NVL_RS_PP_PREFILL_BUBBLE_MS),
                        json_real(STAT(NVL_RS_PP_PREFILL_BUBBLE_MS, 0)));
    json_object_set_new(o, nvl_run_stat_key(NVL_RS_PP_PREFILL_XFER_MS),
                        json_real(STAT(NVL_RS_PP_PREFILL_XFER_MS, 0)));
    return o;
}
