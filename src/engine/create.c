/* The engine's options, creation and teardown, and what its shard
 * weighs on a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/host.h"
#include "nvlemu/runtime.h"

void nvl_engine_opts_default(nvl_engine_opts_t *o, const nvl_topo_t *topo)
{
    memset(o, 0, sizeof *o);
    o->mode = NVL_MODE_DATA;
    o->seed = 1;
    o->cost.topo = topo;
    o->cost.weight_dtype = NVL_WDT_BF16;
    o->cost.kv_dtype = NVL_WDT_BF16;
    o->stack = NVL_STACK_FUSED;
    nvl_stack_cost(o->stack, &o->cost);
    o->cost.attn = nvl_stack_attn(topo, o->stack);
    o->cost.launch = NVL_LAUNCH_GRAPH;
    o->place.ep = 1;
    for (int c = 0; c < NVL_QCLASS_COUNT; c++)
        o->gemm_dtype[c] = NVL_WDT_COUNT;
}

nvl_wdtype_t nvl_engine_opts_gemm_dtype(const nvl_engine_opts_t *o,
                                        nvl_quant_class_t c)
{
    if (o->gemm_dtype[c] < NVL_WDT_COUNT)
        return o->gemm_dtype[c];
    return c == NVL_QCLASS_ROUTER || c == NVL_QCLASS_LM_HEAD
               ? NVL_WDT_BF16
               : o->cost.weight_dtype;
}

nvl_wdtype_t nvl_engine_opts_layer_dtype(const nvl_engine_opts_t *o,
                                         nvl_quant_class_t c, int64_t layer)
{
    if (nvl_model_layer_bf16(o->gemm_bf16_layers[c], layer))
        return NVL_WDT_BF16;
    if (layer >= 0 && layer < NVL_FORMAT_LAYERS &&
        o->gemm_layer_dtype[c][layer] > 0)
        return (nvl_wdtype_t)(o->gemm_layer_dtype[c][layer] - 1);
    return nvl_engine_opts_gemm_dtype(o, c);
}

/* Bytes an element of each GEMM class's matrices in checkpoint layer
 * `layer` (-1: the classes' own), block scales in the checkpoint's width,
 * and of the small tensors (norms, biases: bf16), or all float32 (f32). */
static double class_bytes(const nvl_engine_t *e, int64_t layer, bool f32,
                          double wb_out[NVL_QCLASS_COUNT])
{
    for (int c = 0; c < NVL_QCLASS_COUNT; c++)
        wb_out[c] = f32 ? 4.0
                        : nvl_wdtype_stored_bytes(
                              nvl_engine_opts_layer_dtype(
                                  &e->opts, (nvl_quant_class_t)c, layer),
                              e->opts.cost.weight_scale_bytes);
    return f32 ? 4.0 : 2.0;
}

double nvl_engine_layer_bytes(const nvl_engine_t *e, uint32_t li, bool f32)
{
    const nvl_model_config_t *c = &e->cfg;
    const nvl_shard_t *s = &e->shard;
    double wb[NVL_QCLASS_COUNT],
        sb = class_bytes(e, (int64_t)e->layer0 + li, f32, wb);
    double hid = c->hidden;
    double in = s->intermediate.count;
    double sn = s->moe_intermediate.count, ne = s->experts.count;
    /* the attention's projections and biases, the layer's two norms, the
     * q and k norms */
    double attn = s->attn_matrix_elems * wb[NVL_QCLASS_ATTN] +
                  s->attn_bias_elems * sb + 2 * hid * sb +
                  s->attn_norm_elems * sb;
    /* gpt-oss's experts' biases (gate/up's rows, down's whole) and its
     * router's */
    double moe_bias = c->experts_fused
                          ? ne * (2 * sn + hid) * sb + c->num_experts * sb
                          : 0;
    return attn + (nvl_engine_layer_is_moe(e, li)
                       /* experts held, and the whole router */
                       ? ne * 3 * sn * hid * wb[NVL_QCLASS_EXPERTS] +
                             c->num_experts * hid * wb[NVL_QCLASS_ROUTER] +
                             moe_bias
                       : 3 * in * hid * wb[NVL_QCLASS_MLP]);
}

/* Bytes of this rank's weight shard: the layers run, the embedding, the
 * lm_head (unless tied: then a bf16 copy on a last stage of its own) and
 * the final norm. */
static double shard_bytes(const nvl_engine_t *e, bool f32)
{
    const nvl_model_config_t *c = &e->cfg;
    double wb[NVL_QCLASS_COUNT], sb = class_bytes(e, -1, f32, wb);
    double hid = c->hidden, vn = e->shard.vocab.count;
    double total = 0;
    for (uint32_t i = 0; i < e->layers; i++)
        total += nvl_engine_layer_bytes(e, i, f32);
    /* the embedding on the first stage, the lm_head (a copy of it when
     * tied, on a stage of its own) and the final norm on the last */
    bool first = e->stage == 0, last = e->stage == e->stages - 1;
    double head = !last ? 0
                  : c->tied_embeddings ? (first ? 0 : sb)
                                       : wb[NVL_QCLASS_LM_HEAD];
    return total + vn * hid * ((first ? sb : 0) + head) +
           (last ? hid * sb : 0);
}

/* Data mode holds this rank's weights as float32 in host memory (load.c):
 * the ranks sharing a host must fit in what it has available, checked
 * before the first byte is read.  Collective over tp; every rank calls it
 * (local: this rank's status so far; 0 bytes are counted for a rank that
 * already failed). */
static nvl_status_t check_host_memory(const nvl_engine_t *e,
                                      nvl_status_t local)
{
    MPI_Comm host;
    MPI_Comm_split_type(nvl_comm_mpi(e->tp), MPI_COMM_TYPE_SHARED, 0,
                        MPI_INFO_NULL, &host);
    double mine = local == NVL_OK ? shard_bytes(e, true) : 0, need = 0;
    int ranks = 0;
    MPI_Allreduce(&mine, &need, 1, MPI_DOUBLE, MPI_SUM, host);
    MPI_Comm_size(host, &ranks);
    MPI_Comm_free(&host);
    uint64_t avail = nvl_host_memory_available_bytes();
    if (local != NVL_OK || avail == 0 || need <= (double)avail)
        return local;
    nvl_report("data mode holds the weights as float32 in host memory: the "
               "%d rank(s) on this host need %.2f GB (this rank %.2f GB), "
               "the host has %.2f GB available; use --mode timing (no "
               "payloads), more hosts, or a smaller model or --layers",
               ranks, need / 1e9, mine / 1e9, (double)avail / 1e9);
    return NVL_ERR_NOMEM;
}

/* --a2a onesided needs all-to-alls (a mixture of experts placed with
 * expert parallelism or data-parallel attention, more than one rank) and
 * NVLink peer access between every two GPUs of the job. */
static nvl_status_t check_a2a(const nvl_engine_t *e)
{
    bool moe = false;
    for (uint32_t i = 0; i < e->layers && !moe; i++)
        moe = nvl_engine_layer_is_moe(e, i);
    if (!moe || nvl_comm_size(e->tp) == 1 ||
        (e->shard.ep == 1 && !e->shard.attn_dp)) {
        nvl_report("--a2a onesided: this run has no all-to-all to replace "
                   "(%s; the one-sided kernels need a mixture of experts "
                   "placed with --ep N > 1 or --attn-parallel dp on more "
                   "than one rank)",
                   !moe ? "a dense model"
                   : nvl_comm_size(e->tp) == 1 ? "one rank"
                                               : "experts tensor-parallel");
        return NVL_ERR_INVALID;
    }
    char why[256];
    if (!nvl_a2a_usable(e->tp, NVL_A2A_ONESIDED_LL, why, sizeof why)) {
        nvl_report("--a2a onesided: %s; use --a2a nccl", why);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* A zeroed engine holding cfg, opts and the job's communicator; out of
 * memory aborts the job. */
static nvl_engine_t *alloc_engine(const nvl_model_config_t *cfg,
                                  const nvl_engine_opts_t *opts,
                                  nvl_comm_t *job)
{
    nvl_engine_t *e = calloc(1, sizeof *e);
    if (e != NULL)
        e->moe_decode = calloc((size_t)cfg->layers + 1,
                               sizeof *e->moe_decode);
    if (e == NULL || e->moe_decode == NULL) {
        nvl_report("out of memory for the engine");
        nvl_runtime_abort(1);
    }
    e->cfg = *cfg;
    e->opts = *opts;
    nvl_stack_cost(e->opts.stack, &e->opts.cost); /* cost reads its row */
    e->job = e->tp = job;
    e->data = opts->mode == NVL_MODE_DATA;
    return e;
}

nvl_status_t nvl_engine_create(const nvl_model_config_t *cfg,
                               const nvl_engine_opts_t *opts, nvl_comm_t *tp,
                               nvl_engine_t **engine_out)
{
    nvl_engine_t *e = alloc_engine(cfg, opts, tp);
    nvl_status_t st = nvl_engine_pipe_create(e);
    /* as every rank fails alike, rank 0 (of each stage) reports */
    if (st == NVL_OK)
        st = nvl_comm_set_allreduce(e->tp, opts->allreduce);
    if (st != NVL_OK) {
        nvl_engine_free(e);
        return st;
    }
    tp = e->tp;
    e->opts.cost.topo = nvl_comm_topo(tp);
    e->opts.cost.gpu = nvl_comm_gpu(tp, nvl_comm_rank(tp));
    nvl_comm_set_mode(tp, opts->mode);
    nvl_comm_set_time_dtype(tp, NVL_DT_BF16);
    /* a step launched as a CUDA graph replays NCCL's kernels in it */
    nvl_comm_set_graph(tp, opts->cost.launch == NVL_LAUNCH_GRAPH);
    nvl_stream_init(&e->stream, &e->opts.cost, nvl_comm_clock(tp));

    /* the same on every rank: the lowest rank reports */
    nvl_runtime_capture_begin();
    if (opts->layers > cfg->layers && e->stages == 1) {
        nvl_report("--layers %u: model '%s' has %u layers", opts->layers,
                   cfg->name, cfg->layers);
        st = NVL_ERR_INVALID;
    }
    if (st == NVL_OK)
        st = nvl_shard_place(cfg, nvl_comm_size(tp), nvl_comm_rank(tp),
                             &opts->place, &e->shard);
    if (st == NVL_OK && opts->a2a_onesided)
        st = check_a2a(e);
    if (e->data)
        st = check_host_memory(e, st);
    if (st == NVL_OK && e->data)
        st = nvl_engine_load_weights(e);
    st = nvl_runtime_capture_end_on(nvl_comm_mpi(e->job), st);
    e->dense = tp;
    if (st == NVL_OK && e->shard.attn_dp) {
        /* every rank its own attention: a communicator of one */
        st = nvl_comm_split(tp, nvl_comm_rank(tp), 0, &e->dense);
        if (st == NVL_OK) {
            nvl_comm_set_mode(e->dense, opts->mode);
            nvl_comm_set_time_dtype(e->dense, NVL_DT_BF16);
        } else {
            e->dense = tp;
        }
    }
    if (st == NVL_OK && opts->overlap == NVL_OVERLAP_ASYNC_TP &&
        nvl_comm_size(e->dense) > 1) {
        /* the communication stream: the same members, its own clock */
        st = nvl_comm_create(nvl_comm_mpi(e->dense), nvl_comm_topo(tp),
                             &e->ovl_clock, &e->ovl);
        if (st == NVL_OK) {
            nvl_comm_set_mode(e->ovl, opts->mode);
            nvl_comm_set_time_dtype(e->ovl, NVL_DT_BF16);
            nvl_comm_set_tuner(e->ovl, nvl_comm_tuner(e->dense));
            nvl_comm_set_graph(e->ovl, opts->cost.launch == NVL_LAUNCH_GRAPH);
            /* its chunks' allreduces: the same implementation */
            st = nvl_comm_set_allreduce(e->ovl, opts->allreduce);
        }
    }
    if (st != NVL_OK) {
        nvl_engine_free(e);
        return st;
    }
    *engine_out = e;
    return NVL_OK;
}

nvl_status_t nvl_engine_load(const nvl_model_config_t *cfg, const char *dir,
                             nvl_comm_t *tp, nvl_engine_t **engine_out)
{
    nvl_engine_opts_t o;
    nvl_engine_opts_default(&o, nvl_comm_topo(tp));
    o.weights_dir = dir;
    return nvl_engine_create(cfg, &o, tp, engine_out);
}

void nvl_engine_free(nvl_engine_t *e)
{
    if (e == NULL)
        return;
    nvl_engine_free_weights(e);
    if (e->ep_alone_pending) /* moe_ep.c's last wish, posted by every rank */
        nvl_runtime_wait(&e->ep_alone_req);
    if (e->dense != NULL && e->dense != e->tp)
        nvl_comm_destroy(e->dense);
    nvl_comm_destroy(e->ovl);
    nvl_engine_pipe_free(e);
    free(e->events);
    free(e->passes);
    free(e->tape);
    free(e->moe_decode);
    free(e->moe_counts);
    free(e->ep_book);
    free(e->ep_book_alt);
    free(e->ep_rows);
    free(e->route_table);
    free(e);
}

uint32_t nvl_engine_layers(const nvl_engine_t *e) { return e->layers; }

void nvl_engine_pipeline(const nvl_engine_t *e, nvl_engine_pipe_t *out)
{
    *out = (nvl_engine_pipe_t){
        .stages = e->stages, .stage = e->stage, .tp = nvl_comm_size(e->tp),
        .layer_first = e->layer0, .layer_count = e->layers,
        .layers_total = e->layers_total, .microbatches = e->microbatches};
}

bool nvl_engine_layer_is_moe(const nvl_engine_t *e, uint32_t li)
{
    return nvl_model_layer_is_moe(&e->cfg, e->layer0 + li);
}

const nvl_shard_t *nvl_engine_shard(const nvl_engine_t *e)
{
    return &e->shard;
}

bool nvl_engine_moe_is_ep(const nvl_engine_t *e, uint32_t li)
{
    return nvl_engine_layer_is_moe(e, li) &&
           nvl_comm_size(e->tp) > 1 &&
           (e->shard.ep > 1 || e->shard.attn_dp);
}

double nvl_engine_weight_bytes(const nvl_engine_t *e)
{
    return shard_bytes(e, false);
}

double nvl_engine_kv_window_positions(const nvl_engine_t *e,
                                      uint64_t positions, uint32_t *full_out)
{
    double held = 0;
    uint32_t full = 0;
    for (uint32_t li = 0; li < e->layers; li++) {
        uint32_t w = nvl_model_layer_window(&e->cfg, e->layer0 + li);
        full += w == 0;
        held += w == 0 ? 0 : (double)(w < positions ? w : positions);
    }
    *full_out = full;
    return held;
}

double nvl_engine_kv_bytes(const nvl_engine_t *e, uint64_t seqs,
                           uint64_t positions)
{
    if (e->shard.attn_dp && seqs > 0) /* the largest share */
        seqs = nvl_range_split((uint32_t)seqs, nvl_comm_size(e->tp), 0).count;
    uint32_t full;
    double held = nvl_engine_kv_window_positions(e, positions, &full) +
                  (double)full * (double)positions;
    return nvl_attn_kv_pos_bytes(&e->shard.attn, e->opts.cost.kv_dtype) *
           (double)seqs * held;
}
