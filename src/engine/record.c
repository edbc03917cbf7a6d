/* Where a rank's time went: per-pass totals per part, and (when asked)
 * every kernel and collective as an event for a trace. */
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

static const char *const part_names[NVL_PART_COUNT] = {
    [NVL_PART_GEMM] = "gemm",     [NVL_PART_ATTN] = "attention",
    [NVL_PART_COLL] = "collective", [NVL_PART_OTHER] = "other",
    [NVL_PART_LAUNCH] = "launch", [NVL_PART_WAIT] = "wait",
    [NVL_PART_C2C] = "c2c",
};

const char *nvl_part_name(nvl_part_t part)
{
    return part < NVL_PART_COUNT ? part_names[part] : "?";
}

void *nvl_engine_grow(void *p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return p;
    size_t c = *cap ? 2 * *cap : 256;
    void *q = realloc(p, c * sz);
    if (q == NULL) {
        nvl_report("out of memory recording %zu events", n);
        nvl_runtime_abort(1);
    }
    *cap = c;
    return q;
}

void nvl_engine_pass_begin(nvl_engine_t *e, uint64_t tokens)
{
    memset(&e->cur, 0, sizeof e->cur);
    e->cur.start_ps = nvl_comm_clock(e->tp)->now_ps;
    e->cur.tokens = tokens;
    e->pass_wall_start = MPI_Wtime();
}

void nvl_engine_pass_end(nvl_engine_t *e, uint64_t context)
{
    e->cur.end_ps = nvl_comm_clock(e->tp)->now_ps;
    e->cur.context = context;
    e->cur.wall_s = MPI_Wtime() - e->pass_wall_start;
    e->passes = nvl_engine_grow(e->passes, &e->cap_passes, e->n_passes,
                     sizeof *e->passes);
    e->passes[e->n_passes++] = e->cur;
    e->pass++;
}

/* Keeps ev for the trace while recording is on. */
static void keep_event(nvl_engine_t *e, nvl_op_event_t ev)
{
    if (e->keep_passes >= 0 && e->pass >= e->keep_passes)
        return;
    e->events = nvl_engine_grow(e->events, &e->cap_events, e->n_events,
                     sizeof *e->events);
    e->events[e->n_events++] = ev;
}

void nvl_engine_account(nvl_engine_t *e, const char *name, nvl_part_t part,
                        int32_t layer, int64_t start_ps, int64_t dur_ps,
                        double flops, double bytes)
{
    if (dur_ps <= 0 && flops == 0 && bytes == 0)
        return;
    e->cur.part_ps[part] += dur_ps;
    if (layer >= 0)
        e->cur.layers_part_ps[part] += dur_ps;
    e->cur.flops += flops;
    if (part == NVL_PART_COLL)
        e->cur.coll_bytes += bytes;
    else if (part != NVL_PART_C2C) /* C2C bytes: nvl_engine_c2c_* */
        e->cur.hbm_bytes += bytes;
    /* events name the model's layer (a pipeline stage's first is not
     * layer 0) */
    keep_event(e, (nvl_op_event_t){
        .name = name, .part = part,
        .layer = layer >= 0 ? layer + (int32_t)e->layer0 : layer,
        .pass = e->pass,
        .start_ps = start_ps, .dur_ps = dur_ps, .flops = flops,
        .bytes = bytes});
}

void nvl_engine_account_c2c(nvl_engine_t *e, const char *name,
                            nvl_copy_path_t path, int32_t layer,
                            int64_t start_ps, int64_t dur_ps, double bytes)
{
    if (path == NVL_COPY_C2C_H2D) {
        e->cur.c2c_h2d_bytes += bytes;
        e->cur.c2c_h2d_busy_ps += dur_ps;
    } else {
        e->cur.c2c_d2h_bytes += bytes;
    }
    keep_event(e, (nvl_op_event_t){
        .name = name, .part = NVL_PART_C2C, .track = 1, .layer = layer,
        .pass = e->pass, .start_ps = start_ps, .dur_ps = dur_ps,
        .bytes = bytes});
}

void nvl_engine_account_comm(nvl_engine_t *e, const char *name,
                             int32_t layer, const nvl_coll_info_t *info)
{
    e->cur.coll_bytes += (double)info->bytes;
    e->cur.overlap_comm_ps += info->time_ps;
    keep_event(e, (nvl_op_event_t){
        .name = name, .algo = nvl_algo_name(info->algo),
        .proto = nvl_proto_name(info->proto), .part = NVL_PART_COLL,
        .track = 2, .layer = layer, .pass = e->pass,
        .start_ps = info->start_ps, .dur_ps = info->time_ps,
        .bytes = (double)info->bytes});
}

void nvl_engine_account_ep(nvl_engine_t *e, nvl_ep_xchg_t x, int32_t layer,
                           int64_t entry_ps, const nvl_coll_info_t *info)
{
    bool combine = x == NVL_EP_XCHG_COMBINE;
    int64_t wait = combine && info->start_ps > entry_ps
                       ? info->start_ps - entry_ps
                       : 0;
    *(combine ? &e->cur.combine_ps : &e->cur.dispatch_ps) += info->time_ps;
    e->cur.combine_wait_ps += wait;
    if (e->pass < 1 || layer < 0)
        return;
    nvl_moe_layer_stats_t *l = &e->moe_decode[layer];
    *(combine ? &l->combine_ps : &l->dispatch_ps) += (double)info->time_ps;
    l->combine_wait_ps += (double)wait;
}

nvl_op_event_t *nvl_engine_last_event(nvl_engine_t *e)
{
    bool recording = e->keep_passes < 0 || e->pass < e->keep_passes;
    return recording && e->n_events ? &e->events[e->n_events - 1] : NULL;
}

void nvl_engine_record_events(nvl_engine_t *e, int32_t passes)
{
    e->keep_passes = passes;
}

const nvl_op_event_t *nvl_engine_events(const nvl_engine_t *e, size_t *n_out)
{
    *n_out = e->n_events;
    return e->events;
}

const nvl_pass_stats_t *nvl_engine_passes(const nvl_engine_t *e,
                                          size_t *n_out)
{
    *n_out = e->n_passes;
    return e->passes;
}

void nvl_engine_reset_stats(nvl_engine_t *e)
{
    e->n_events = 0;
    e->n_passes = 0;
    e->pass = 0;
    memset(e->moe_decode, 0, e->layers * sizeof *e->moe_decode);
}

const nvl_moe_layer_stats_t *nvl_engine_moe_layer_stats(const nvl_engine_t *e)
{
    return e->moe_decode;
}
