/* The Qwen2/Qwen3 forward pass, tensor-parallel, over a batch of sequences.
 *
 *   x = embed(ids)                               vocab-parallel + allreduce
 *   for each layer:
 *     h = rmsnorm(x); q,k,v = h W_qkv^T (+ b)    this rank's heads
 *     (Qwen3: rmsnorm per head on q and k)
 *     q,k = rope(q,k); a = softmax(q k^T / sqrt(d), causal) v   (GQA)
 *     x += allreduce(a W_o^T)                    row-parallel
 *     h = rmsnorm(x); x += allreduce((silu(h W_g^T) * h W_u^T) W_d^T)
 *       (Qwen3-MoE: the routed experts' weighted sum instead, moe.c)
 *   logits = rmsnorm(x) W_lm^T at each sequence's last position
 *                                                vocab-parallel + allgather
 * as transformers' Qwen2ForCausalLM / Qwen3ForCausalLM compute it, in
 * float32 (data mode).  Every step is also issued as the kernel (or
 * collective) a GPU would run, whose modeled time advances the clock in
 * both modes; --fusion decides which steps share a kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

/* ---- options, creation ------------------------------------------------- */

void nvl_engine_opts_default(nvl_engine_opts_t *o, const nvl_topo_t *topo)
{
    memset(o, 0, sizeof *o);
    o->mode = NVL_MODE_DATA;
    o->seed = 1;
    o->cost.topo = topo;
    o->cost.weight_dtype = NVL_WDT_BF16;
    o->cost.kv_dtype = NVL_WDT_BF16;
    /* FlashAttention-4 is Blackwell's kernel (the GPUs with FP4 units) */
    o->cost.attn = topo != NULL && topo->gpu.fp4_flops_per_s > 0
                       ? NVL_ATTN_FA4
                       : NVL_ATTN_FA3;
    o->cost.fusion = NVL_FUSION_TYPICAL;
    o->cost.launch = NVL_LAUNCH_GRAPH;
    o->place.ep = 1;
}

nvl_status_t nvl_engine_create(const nvl_model_config_t *cfg,
                               const nvl_engine_opts_t *opts, nvl_comm_t *tp,
                               nvl_engine_t **out)
{
    nvl_engine_t *e = calloc(1, sizeof *e);
    if (e == NULL) {
        nvl_report("out of memory for the engine");
        nvl_runtime_abort(1);
    }
    e->cfg = *cfg;
    e->opts = *opts;
    e->tp = tp;
    e->data = opts->mode == NVL_MODE_DATA;
    e->layers = opts->layers ? opts->layers : cfg->layers;
    e->moe_decode = calloc((size_t)cfg->layers + 1, sizeof *e->moe_decode);
    if (e->moe_decode == NULL) {
        nvl_report("out of memory for the engine");
        nvl_runtime_abort(1);
    }
    e->opts.cost.topo = nvl_comm_topo(tp);
    e->opts.cost.gpu = nvl_comm_gpu(tp, nvl_comm_rank(tp));
    nvl_comm_set_mode(tp, opts->mode);
    nvl_comm_set_time_dtype(tp, NVL_DT_BF16);
    nvl_stream_init(&e->stream, &e->opts.cost, nvl_comm_clock(tp));

    /* the same on every rank: the lowest rank reports */
    nvl_runtime_capture_begin();
    nvl_status_t st = NVL_OK;
    if (opts->layers > cfg->layers) {
        nvl_report("--layers %u: model '%s' has %u layers", opts->layers,
                   cfg->name, cfg->layers);
        st = NVL_ERR_INVALID;
    }
    if (st == NVL_OK)
        st = nvl_shard_place(cfg, nvl_comm_size(tp), nvl_comm_rank(tp),
                             &opts->place, &e->shard);
    if (st == NVL_OK && e->data)
        st = nvl_engine_load_weights(e);
    st = nvl_runtime_capture_end_on(nvl_comm_mpi(tp), st);
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
    if (st != NVL_OK) {
        nvl_engine_free(e);
        return st;
    }
    *out = e;
    return NVL_OK;
}

nvl_status_t nvl_engine_load(const nvl_model_config_t *cfg, const char *dir,
                             nvl_comm_t *tp, nvl_engine_t **out)
{
    nvl_engine_opts_t o;
    nvl_engine_opts_default(&o, nvl_comm_topo(tp));
    o.weights_dir = dir;
    return nvl_engine_create(cfg, &o, tp, out);
}

void nvl_engine_free(nvl_engine_t *e)
{
    if (e == NULL)
        return;
    nvl_engine_free_weights(e);
    if (e->dense != NULL && e->dense != e->tp)
        nvl_comm_destroy(e->dense);
    free(e->events);
    free(e->passes);
    free(e->moe_decode);
    free(e);
}

uint32_t nvl_engine_layers(const nvl_engine_t *e) { return e->layers; }

const nvl_shard_t *nvl_engine_shard(const nvl_engine_t *e)
{
    return &e->shard;
}

double nvl_engine_weight_bytes(const nvl_engine_t *e)
{
    const nvl_model_config_t *c = &e->cfg;
    const nvl_shard_t *s = &e->shard;
    double hid = c->hidden, hd = c->head_dim;
    double qn = s->q_heads.count * hd, kn = s->kv_heads.count * hd;
    double in = s->intermediate.count, vn = s->vocab.count;
    double sn = s->moe_intermediate.count, ne = s->experts.count;
    double wb = nvl_wdtype_bytes(e->opts.cost.weight_dtype);
    double attn = ((qn + 2 * kn) * hid + hid * qn) * wb +
                  (c->qkv_bias ? (qn + 2 * kn) * 2 : 0) + 2 * hid * 2 +
                  (c->qk_norm ? 2 * hd * 2 : 0);
    double total = 0;
    for (uint32_t i = 0; i < e->layers; i++)
        total += attn + (nvl_model_layer_is_moe(c, i)
                             /* experts held, and the router in bf16 */
                             ? ne * 3 * sn * hid * wb +
                                   c->num_experts * hid * 2
                             : 3 * in * hid * wb);
    /* embedding and lm_head stay bf16, as quantized checkpoints keep them */
    return total + vn * hid * 2 * (c->tied_embeddings ? 1 : 2) + hid * 2;
}

double nvl_engine_kv_bytes(const nvl_engine_t *e, uint64_t seqs,
                           uint64_t positions)
{
    double kvb = nvl_wdtype_bytes(e->opts.cost.kv_dtype == NVL_WDT_FP8
                                      ? NVL_WDT_FP8
                                      : NVL_WDT_BF16);
    if (e->shard.attn_dp && seqs > 0) /* the largest share */
        seqs = nvl_range_split((uint32_t)seqs, nvl_comm_size(e->tp), 0).count;
    return (double)e->layers * 2.0 * e->shard.kv_heads.count *
           e->cfg.head_dim * kvb * (double)seqs * (double)positions;
}

/* ---- issuing kernels and collectives ----------------------------------- */

static nvl_vclock_t *clk(nvl_engine_t *e) { return nvl_comm_clock(e->tp); }

static void launch_wait(nvl_engine_t *e, int32_t layer, int64_t before)
{
    int64_t now = clk(e)->now_ps;
    if (now > before)
        nvl_engine_account(e, "launch", NVL_PART_LAUNCH, layer, before,
                           now - before, 0, 0);
}

/* Runs one kernel (nothing when it has no work). */
void nvl_engine_kernel(nvl_engine_t *e, const char *name, nvl_part_t part,
                   int32_t layer, nvl_kernel_cost_t c)
{
    if (c.time_ps <= 0)
        return;
    int64_t before = clk(e)->now_ps;
    int64_t start = nvl_stream_kernel(&e->stream, clk(e), c.time_ps);
    if (start > before)
        nvl_engine_account(e, "launch", NVL_PART_LAUNCH, layer, before,
                           start - before, 0, 0);
    nvl_engine_account(e, name, part, layer, start, c.time_ps, c.flops,
                       c.bytes);
}

void nvl_engine_matmul(nvl_engine_t *e, const char *name, int32_t layer,
                   uint64_t m, uint64_t n, uint64_t k)
{
    nvl_engine_kernel(e, name, NVL_PART_GEMM, layer,
           nvl_cost_matmul(&e->opts.cost, m, n, k));
}

/* A memory-bound kernel moving `elems` bf16 elements through HBM. */
void nvl_engine_elementwise(nvl_engine_t *e, const char *name, int32_t layer,
                        double elems)
{
    if (elems > 0)
        nvl_engine_kernel(e, name, NVL_PART_OTHER, layer,
               nvl_cost_memory(&e->opts.cost, elems * 2.0));
}

int64_t nvl_engine_coll_begin(nvl_engine_t *e, int32_t layer)
{
    int64_t before = clk(e)->now_ps;
    nvl_stream_collective(&e->stream, clk(e));
    launch_wait(e, layer, before);
    return clk(e)->now_ps;
}

void nvl_engine_coll_done(nvl_engine_t *e, const char *name, int32_t layer,
                          int64_t entry_ps, const nvl_coll_info_t *info)
{
    if (info->start_ps > entry_ps)
        nvl_engine_account(e, "wait", NVL_PART_WAIT, layer, entry_ps,
                           info->start_ps - entry_ps, 0, 0);
    nvl_engine_account(e, name, NVL_PART_COLL, layer, info->start_ps,
                       info->time_ps, 0, (double)info->bytes);
    nvl_op_event_t *ev = nvl_engine_last_event(e);
    if (ev != NULL && ev->part == NVL_PART_COLL) {
        ev->algo = nvl_algo_name(info->algo);
        ev->proto = nvl_proto_name(info->proto);
    }
}

/* Row-parallel sum across the group (none at TP = 1, as serving engines
 * skip it). */
static nvl_status_t allreduce(nvl_engine_t *e, int32_t layer, float *buf,
                              size_t n)
{
    if (nvl_comm_size(e->dense) == 1)
        return NVL_OK;
    int64_t entry = nvl_engine_coll_begin(e, layer);
    nvl_coll_info_t info;
    void *b = e->data ? buf : NULL;
    nvl_status_t st = nvl_allreduce(e->dense, b, b, n, NVL_DT_F32,
                                    NVL_OP_SUM, &info);
    if (st == NVL_OK)
        nvl_engine_coll_done(e, "allreduce", layer, entry, &info);
    return st;
}

/* Every rank's vocabulary slice of the logits of n sequences, gathered
 * into logits (n x vocab) on every rank. */
static nvl_status_t gather_logits(nvl_engine_t *e, const float *local, int n,
                                  float *logits)
{
    const nvl_model_config_t *c = &e->cfg;
    int tp = nvl_comm_size(e->dense);
    uint32_t vn = e->shard.vocab.count;
    if (tp == 1) {
        if (e->data)
            memcpy(logits, local, (size_t)n * c->vocab * sizeof *logits);
        return NVL_OK;
    }
    /* slices are uneven: every rank sends the largest, padded */
    size_t maxv = nvl_range_split(c->vocab, tp, 0).count;
    size_t per = (size_t)n * maxv;
    float *send = NULL, *recv = NULL;
    if (e->data) {
        send = calloc(per + 1, sizeof *send);
        recv = malloc((per * tp + 1) * sizeof *recv);
        if (send == NULL || recv == NULL) {
            nvl_report("out of memory gathering %d x %u logits", n, c->vocab);
            nvl_runtime_abort(1);
        }
        for (int s = 0; s < n; s++)
            memcpy(send + s * maxv, local + (size_t)s * vn, vn * sizeof *send);
    }
    int64_t entry = nvl_engine_coll_begin(e, -1);
    nvl_coll_info_t info;
    nvl_status_t st = nvl_allgather(e->dense, send, recv, per, NVL_DT_F32,
                                    &info);
    if (st == NVL_OK)
        nvl_engine_coll_done(e, "allgather", -1, entry, &info);
    if (st == NVL_OK && e->data)
        for (int r = 0; r < tp; r++) {
            nvl_range_t v = nvl_range_split(c->vocab, tp, r);
            for (int s = 0; s < n; s++)
                memcpy(logits + (size_t)s * c->vocab + v.first,
                       recv + (size_t)r * per + (size_t)s * maxv,
                       v.count * sizeof *logits);
        }
    free(send);
    free(recv);
    return st;
}

/* ---- float32 arithmetic (data mode) ------------------------------------ */

/* sum_i x[i] w[i] in float32, in 8 interleaved partial sums (the order
 * the compiler may vectorize without reassociating), added pairwise. */
static float dot(const float *x, const float *w, uint64_t n)
{
    float acc[8] = {0};
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += x[i + j] * w[i + j];
    for (int j = 0; i < n; i++, j++)
        acc[j] += x[i] * w[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
           ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* y[t, o] = sum_i x[t, i] w[o, i] (+ b[o]) for t < T, o < O, i < I; each
 * weight row is read once for four tokens at a time. */
void nvl_engine_linear(const float *x, const float *w, const float *b,
                       float *y,                   uint64_t T, uint64_t O, uint64_t I)
{
    for (uint64_t t0 = 0; t0 < T; t0 += 4) {
        uint64_t nt = T - t0 < 4 ? T - t0 : 4;
        for (uint64_t o = 0; o < O; o++)
            for (uint64_t t = t0; t < t0 + nt; t++)
                y[t * O + o] =
                    dot(x + t * I, w + o * I, I) + (b ? b[o] : 0.0f);
    }
}

static void rmsnorm(const float *x, const float *w, float *y, uint64_t T,
                    uint64_t D, double eps)
{
    for (uint64_t t = 0; t < T; t++) {
        double ss = 0;
        for (uint64_t i = 0; i < D; i++)
            ss += (double)x[t * D + i] * x[t * D + i];
        float r = (float)(1.0 / sqrt(ss / D + eps));
        for (uint64_t i = 0; i < D; i++)
            y[t * D + i] = w[i] * (x[t * D + i] * r);
    }
}

/* rotate_half RoPE on one head vector at position pos */
static void rope(float *v, uint64_t d, uint64_t pos, double theta)
{
    uint64_t half = d / 2;
    for (uint64_t i = 0; i < half; i++) {
        float inv = (float)(1.0 / pow(theta, (double)(2 * i) / (double)d));
        float ang = (float)pos * inv;
        float cs = cosf(ang), sn = sinf(ang);
        float a = v[i], b = v[i + half];
        v[i] = a * cs - b * sn;
        v[i + half] = b * cs + a * sn;
    }
}

/* ---- the key/value cache ----------------------------------------------- */

/* One sequence's cache on this rank: per layer, the keys and values of
 * this rank's kv heads at every position so far (data mode), and its
 * length (both modes). */
typedef struct {
    float **k, **v; /* [layer][cap x kv heads x head_dim] */
    uint64_t len, cap;
} kv_cache_t;

static void cache_free(kv_cache_t *c, uint32_t layers)
{
    for (uint32_t i = 0; c->k != NULL && i < layers; i++) {
        free(c->k[i]);
        free(c->v[i]);
    }
    free(c->k);
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* Makes room for `more` positions (data mode); aborts the job when memory
 * runs out (the other ranks would wait in the next collective). */
static void cache_reserve(nvl_engine_t *e, kv_cache_t *c, uint64_t more)
{
    uint64_t row = (uint64_t)e->shard.kv_heads.count * e->cfg.head_dim;
    if (c->len + more <= c->cap)
        return;
    if (c->k == NULL) {
        c->k = calloc(e->layers, sizeof *c->k);
        c->v = calloc(e->layers, sizeof *c->v);
        if (c->k == NULL || c->v == NULL)
            goto oom;
    }
    uint64_t cap = c->cap ? c->cap : 16;
    while (cap < c->len + more)
        cap *= 2;
    for (uint32_t i = 0; i < e->layers; i++) {
        float *k = realloc(c->k[i], (cap * row + 1) * sizeof *k);
        if (k == NULL)
            goto oom;
        c->k[i] = k;
        float *v = realloc(c->v[i], (cap * row + 1) * sizeof *v);
        if (v == NULL)
            goto oom;
        c->v[i] = v;
    }
    c->cap = cap;
    return;
oom:
    nvl_report("out of memory for the KV cache of %llu positions",
               (unsigned long long)(c->len + more));
    nvl_runtime_abort(1);
}

/* ---- one forward pass --------------------------------------------------- */

/* Activations of one pass (data mode). */
typedef struct {
    float *x, *h;   /* [M, hidden] */
    float *q, *a;   /* [M, q heads x head_dim] */
    float *k, *v;   /* [M, kv heads x head_dim] */
    float *g, *u;   /* [M, intermediate shard] */
    float *sc;      /* [longest context] */
    float *last;    /* [n, vocab shard] */
} acts_t;

static void acts_free(acts_t *b)
{
    float **p = (float **)b;
    for (size_t i = 0; i < sizeof *b / sizeof(float *); i++)
        free(p[i]);
}

static void acts_alloc(nvl_engine_t *e, acts_t *b, uint64_t M, int n,
                       uint64_t ctx)
{
    const nvl_shard_t *s = &e->shard;
    uint64_t hid = e->cfg.hidden, hd = e->cfg.head_dim;
    uint64_t sizes[] = {M * hid, M * hid, M * s->q_heads.count * hd,
                        M * s->q_heads.count * hd, M * s->kv_heads.count * hd,
                        M * s->kv_heads.count * hd, M * s->intermediate.count,
                        M * s->intermediate.count, ctx,
                        (uint64_t)n * s->vocab.count};
    float **p = (float **)b;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if ((p[i] = calloc(sizes[i] + 1, sizeof(float))) == NULL) {
            nvl_report("out of memory for a %llu-token forward pass",
                       (unsigned long long)M);
            nvl_runtime_abort(1);
        }
}

/* Causal GQA attention of sequence s's new rows (from row r0) over its
 * cache, for this rank's query heads (data mode). */
static void attend(nvl_engine_t *e, const kv_cache_t *c, uint32_t li,
                   uint64_t r0, uint64_t T, uint64_t past, acts_t *b)
{
    const nvl_shard_t *s = &e->shard;
    uint64_t hd = e->cfg.head_dim, qn = s->q_heads.count;
    uint64_t kn = s->kv_heads.count;
    uint32_t group = e->cfg.q_heads / e->cfg.kv_heads;
    double scale = 1.0 / sqrt((double)hd);
    const float *kc = c->k[li], *vc = c->v[li];
    for (uint64_t j = 0; j < qn; j++) {
        uint64_t kvj = (s->q_heads.first + j) / group - s->kv_heads.first;
        for (uint64_t t = 0; t < T; t++) {
            const float *qv = b->q + ((r0 + t) * qn + j) * hd;
            uint64_t upto = past + t;
            double mx = -INFINITY, sum = 0;
            for (uint64_t p = 0; p <= upto; p++) {
                const float *kv = kc + (p * kn + kvj) * hd;
                double dot = 0;
                for (uint64_t i = 0; i < hd; i++)
                    dot += (double)qv[i] * kv[i];
                b->sc[p] = (float)(dot * scale);
                if (b->sc[p] > mx)
                    mx = b->sc[p];
            }
            for (uint64_t p = 0; p <= upto; p++) {
                b->sc[p] = (float)exp(b->sc[p] - mx);
                sum += b->sc[p];
            }
            float *av = b->a + ((r0 + t) * qn + j) * hd;
            for (uint64_t i = 0; i < hd; i++) {
                double acc = 0;
                for (uint64_t p = 0; p <= upto; p++)
                    acc += (double)b->sc[p] * vc[(p * kn + kvj) * hd + i];
                av[i] = (float)(acc / sum);
            }
        }
    }
}

/* The first layer has no residual pending; later ones fuse the previous
 * residual add into their norm (typical) or add it in its own kernel. */
static void norm_kernels(nvl_engine_t *e, int32_t layer, double rows,
                         bool residual_pending)
{
    double hid = e->cfg.hidden;
    if (e->opts.cost.fusion == NVL_FUSION_TYPICAL) {
        nvl_engine_elementwise(e,
                               residual_pending ? "add_rmsnorm" : "rmsnorm",
                               layer,
                    rows * hid * (residual_pending ? 4 : 2));
        return;
    }
    if (residual_pending)
        nvl_engine_elementwise(e, "residual_add", layer, rows * hid * 3);
    nvl_engine_elementwise(e, "rmsnorm", layer, rows * hid * 2);
}

/* The attention half of layer li for M rows of n sequences, up to o_proj:
 * its partial sums (complete with data-parallel attention) in b->h. */
static nvl_status_t attention_block(nvl_engine_t *e, uint32_t li, int n,
                                    kv_cache_t *caches, const uint64_t *T,
                                    const uint64_t *past, uint64_t M,
                                    acts_t *b)
{
    const nvl_model_config_t *c = &e->cfg;
    const nvl_shard_t *s = &e->shard;
    const nvl_layer_weights_t *l = e->data ? &e->lw[li] : NULL;
    uint64_t hid = c->hidden, hd = c->head_dim;
    uint64_t qn = s->q_heads.count, kn = s->kv_heads.count;
    bool typical = e->opts.cost.fusion == NVL_FUSION_TYPICAL;
    int32_t L = (int32_t)li;

    norm_kernels(e, L, (double)M, li > 0);
    if (e->data) {
        rmsnorm(b->x, l->in_norm, b->h, M, hid, c->rms_eps);
        nvl_engine_linear(b->h, l->wq, l->bq, b->q, M, qn * hd, hid);
        nvl_engine_linear(b->h, l->wk, l->bk, b->k, M, kn * hd, hid);
        nvl_engine_linear(b->h, l->wv, l->bv, b->v, M, kn * hd, hid);
    }
    if (typical) {
        nvl_engine_matmul(e, "qkv_proj", L, M, (qn + 2 * kn) * hd, hid);
    } else {
        nvl_engine_matmul(e, "q_proj", L, M, qn * hd, hid);
        nvl_engine_matmul(e, "k_proj", L, M, kn * hd, hid);
        nvl_engine_matmul(e, "v_proj", L, M, kn * hd, hid);
        if (c->qkv_bias)
            nvl_engine_elementwise(e, "qkv_bias", L,
                                   (double)M * (qn + 2 * kn) * hd * 2);
    }
    if (c->qk_norm) {
        if (typical) {
            nvl_engine_elementwise(e, "qk_norm", L,
                                   (double)M * (qn + kn) * hd * 2);
        } else {
            nvl_engine_elementwise(e, "q_norm", L, (double)M * qn * hd * 2);
            nvl_engine_elementwise(e, "k_norm", L, (double)M * kn * hd * 2);
        }
    }
    nvl_engine_elementwise(e, "rope", L, (double)M * (qn + kn) * hd * 2);
    if (e->data) {
        uint64_t r = 0;
        for (int sq = 0; sq < n; sq++)
            for (uint64_t t = 0; t < T[sq]; t++, r++) {
                uint64_t pos = past[sq] + t;
                for (uint64_t j = 0; j < qn; j++) {
                    float *qv = b->q + (r * qn + j) * hd;
                    if (l->q_norm)
                        rmsnorm(qv, l->q_norm, qv, 1, hd, c->rms_eps);
                    rope(qv, hd, pos, c->rope_theta);
                }
                for (uint64_t j = 0; j < kn; j++) {
                    float *kv = b->k + (r * kn + j) * hd;
                    if (l->k_norm)
                        rmsnorm(kv, l->k_norm, kv, 1, hd, c->rms_eps);
                    rope(kv, hd, pos, c->rope_theta);
                }
                /* append to the sequence's cache */
                memcpy(caches[sq].k[li] + pos * kn * hd, b->k + r * kn * hd,
                       kn * hd * sizeof(float));
                memcpy(caches[sq].v[li] + pos * kn * hd, b->v + r * kn * hd,
                       kn * hd * sizeof(float));
            }
        r = 0;
        for (int sq = 0; sq < n; sq++) {
            attend(e, &caches[sq], li, r, T[sq], past[sq], b);
            r += T[sq];
        }
    }
    nvl_engine_kernel(e, "attention", NVL_PART_ATTN, L,
           nvl_cost_attention(&e->opts.cost, (size_t)n, T, past,
                              (uint32_t)qn, (uint32_t)kn, (uint32_t)hd));
    /* row-parallel o_proj: partial sums (zeros on ranks without heads) */
    if (e->data)
        nvl_engine_linear(b->a, l->wo, NULL, b->h, M, hid, qn * hd);
    nvl_engine_matmul(e, "o_proj", L, M, hid, qn * hd);
    return NVL_OK;
}

/* The attention's partial sums completed (allreduce) and added to the
 * residual. */
static nvl_status_t attention_out(nvl_engine_t *e, uint32_t li, uint64_t M,
                                  acts_t *b)
{
    uint64_t hid = e->cfg.hidden;
    nvl_status_t st = allreduce(e, (int32_t)li, b->h, M * hid);
    if (e->data)
        for (uint64_t i = 0; i < M * hid; i++)
            b->x[i] += b->h[i];
    return st;
}

/* Tensor-parallel attention before expert parallelism: the o_proj partial
 * sums are reduce-scattered by rows (rank r gets rows nvl_range_split(M,
 * ranks, r), blocks padded to the largest share), added to the residual,
 * normed, sent through the experts (nvl_engine_moe_ep), added again, and
 * allgathered, so that every rank holds every row for the next layer. */
static nvl_status_t attention_out_moe_ep(nvl_engine_t *e, uint32_t li,
                                         uint64_t M, acts_t *b)
{
    const nvl_model_config_t *c = &e->cfg;
    int n = nvl_comm_size(e->tp), me = nvl_comm_rank(e->tp);
    uint64_t hid = c->hidden;
    int32_t L = (int32_t)li;
    nvl_range_t mine = nvl_range_split((uint32_t)M, n, me);
    uint64_t R = mine.count, per = nvl_range_split((uint32_t)M, n, 0).count *
                                   hid;
    float *blk = NULL, *rows = NULL, *hl = NULL;
    if (e->data) {
        blk = calloc((size_t)n * per + 1, sizeof *blk);
        rows = calloc(per + 1, sizeof *rows);
        hl = calloc(per + 1, sizeof *hl);
        if (blk == NULL || rows == NULL || hl == NULL) {
            nvl_report("out of memory for %llu rows",
                       (unsigned long long)M);
            nvl_runtime_abort(1);
        }
        for (int r = 0; r < n; r++) {
            nvl_range_t rr = nvl_range_split((uint32_t)M, n, r);
            memcpy(blk + (size_t)r * per, b->h + rr.first * hid,
                   rr.count * hid * sizeof *blk);
        }
    }
    nvl_coll_info_t info;
    int64_t entry = nvl_engine_coll_begin(e, L);
    nvl_status_t st = nvl_reducescatter(e->tp, blk, rows, per, NVL_DT_F32,
                                        NVL_OP_SUM, &info);
    if (st == NVL_OK)
        nvl_engine_coll_done(e, "reducescatter", L, entry, &info);
    norm_kernels(e, L, (double)R, true);
    if (st == NVL_OK && e->data) {
        for (uint64_t i = 0; i < R * hid; i++)
            rows[i] += b->x[mine.first * hid + i];
        rmsnorm(rows, e->lw[li].post_norm, hl, R, hid, c->rms_eps);
    }
    if (st == NVL_OK)
        st = nvl_engine_moe_ep(e, li, R, e->row0 + mine.first, hl);
    if (st == NVL_OK && e->data)
        for (uint64_t i = 0; i < R * hid; i++)
            rows[i] += hl[i];
    if (st == NVL_OK) {
        entry = nvl_engine_coll_begin(e, L);
        st = nvl_allgather(e->tp, rows, blk, per, NVL_DT_F32, &info);
        if (st == NVL_OK)
            nvl_engine_coll_done(e, "allgather", L, entry, &info);
    }
    if (st == NVL_OK && e->data)
        for (int r = 0; r < n; r++) {
            nvl_range_t rr = nvl_range_split((uint32_t)M, n, r);
            memcpy(b->x + rr.first * hid, blk + (size_t)r * per,
                   rr.count * hid * sizeof *blk);
        }
    free(hl);
    free(rows);
    free(blk);
    return st;
}

/* The MLP half of layer li: dense, or a mixture of experts (moe.c); one
 * allreduce either way. */
static nvl_status_t mlp_block(nvl_engine_t *e, uint32_t li, uint64_t M,
                              acts_t *b)
{
    const nvl_model_config_t *c = &e->cfg;
    const nvl_layer_weights_t *l = e->data ? &e->lw[li] : NULL;
    uint64_t hid = c->hidden, in = e->shard.intermediate.count;
    int32_t L = (int32_t)li;
    double rows_in = (double)M * in;

    norm_kernels(e, L, (double)M, true);
    if (e->data)
        rmsnorm(b->x, l->post_norm, b->h, M, hid, c->rms_eps);
    nvl_status_t st = NVL_OK;
    if (nvl_engine_moe_is_ep(e, li)) {
        /* data-parallel attention: this rank's rows, complete sums */
        st = nvl_engine_moe_ep(e, li, M, e->row0, e->data ? b->h : NULL);
    } else if (nvl_model_layer_is_moe(c, li)) {
        nvl_engine_moe(e, li, M, e->data ? b->h : NULL);
    } else {
        if (e->data) {
            nvl_engine_linear(b->h, l->wg, NULL, b->g, M, in, hid);
            nvl_engine_linear(b->h, l->wu, NULL, b->u, M, in, hid);
            for (uint64_t i = 0; i < M * in; i++)
                b->g[i] = b->g[i] / (1.0f + expf(-b->g[i])) * b->u[i];
            nvl_engine_linear(b->g, l->wd, NULL, b->h, M, hid, in);
        }
        if (e->opts.cost.fusion == NVL_FUSION_TYPICAL) {
            nvl_engine_matmul(e, "gate_up_proj", L, M, 2 * in, hid);
            nvl_engine_elementwise(e, "silu_mul", L, rows_in * 3);
        } else {
            nvl_engine_matmul(e, "gate_proj", L, M, in, hid);
            nvl_engine_matmul(e, "up_proj", L, M, in, hid);
            nvl_engine_elementwise(e, "silu", L, rows_in * 2);
            nvl_engine_elementwise(e, "mul", L, rows_in * 3);
        }
        nvl_engine_matmul(e, "down_proj", L, M, hid, in);
    }
    if (st == NVL_OK)
        st = allreduce(e, L, b->h, M * hid);
    if (e->data)
        for (uint64_t i = 0; i < M * hid; i++)
            b->x[i] += b->h[i];
    return st;
}

/* Runs T[s] new tokens of each of n sequences (tokens one sequence after
 * another) at positions caches[s].len .., appending to the caches, and
 * writes each sequence's last-position logits (n x vocab, every rank; data
 * mode).  The pass ends with the greedy sampling kernel and the host
 * reading its result. */
static nvl_status_t forward(nvl_engine_t *e, int n, kv_cache_t *caches,
                            const int32_t *tok, const uint64_t *T,
                            float *logits)
{
    const nvl_model_config_t *c = &e->cfg;
    const nvl_shard_t *s = &e->shard;
    uint64_t hid = c->hidden, vn = s->vocab.count;
    uint64_t M = 0, ctx = 0;
    uint64_t *past = malloc(((size_t)n + 1) * sizeof *past);
    if (past == NULL) {
        nvl_report("out of memory for %d sequences", n);
        nvl_runtime_abort(1);
    }
    for (int i = 0; i < n; i++) {
        past[i] = caches[i].len;
        M += T[i];
        if (past[i] + T[i] > ctx)
            ctx = past[i] + T[i];
    }
    acts_t b = {0};
    if (e->data) {
        acts_alloc(e, &b, M, n, ctx);
        for (int i = 0; i < n; i++)
            cache_reserve(e, &caches[i], T[i]);
    }
    nvl_engine_pass_begin(e, M);
    nvl_stream_begin_pass(&e->stream, clk(e));

    /* vocab-parallel embedding: the rows this rank holds, zeros elsewhere */
    if (e->data)
        for (uint64_t t = 0; t < M; t++) {
            uint32_t id = (uint32_t)tok[t];
            if (id >= s->vocab.first && id < s->vocab.first + vn)
                memcpy(b.x + t * hid,
                       e->embed + (id - s->vocab.first) * hid,
                       hid * sizeof *b.x);
        }
    nvl_engine_elementwise(e, "embedding", -1, (double)M * hid * 2);
    nvl_status_t st = allreduce(e, -1, b.x, M * hid);

    for (uint32_t li = 0; li < e->layers && st == NVL_OK; li++) {
        st = attention_block(e, li, n, caches, T, past, M, &b);
        if (st == NVL_OK && nvl_engine_moe_is_ep(e, li) &&
            !e->shard.attn_dp) {
            st = attention_out_moe_ep(e, li, M, &b);
            continue;
        }
        if (st == NVL_OK)
            st = attention_out(e, li, M, &b);
        if (st == NVL_OK)
            st = mlp_block(e, li, M, &b);
    }
    /* final norm (with the last residual add), then each sequence's last
     * position through the vocab-parallel lm_head (kept in bf16) */
    norm_kernels(e, -1, (double)M, true);
    if (e->data) {
        uint64_t r = 0;
        for (int i = 0; i < n; i++) {
            r += T[i];
            rmsnorm(b.x + (r - 1) * hid, e->norm, b.h + (uint64_t)i * hid, 1,
                    hid, c->rms_eps);
        }
        nvl_engine_linear(b.h, e->lm_head, NULL, b.last, (uint64_t)n, vn, hid);
    }
    nvl_cost_cfg_t head = e->opts.cost;
    head.weight_dtype = NVL_WDT_BF16;
    nvl_engine_kernel(e, "lm_head", NVL_PART_GEMM, -1,
           nvl_cost_matmul(&head, (uint64_t)n, vn, hid));
    if (st == NVL_OK)
        st = gather_logits(e, b.last, n, logits);
    nvl_engine_elementwise(e, "sample", -1, (double)n * c->vocab);
    nvl_stream_sync(&e->stream, clk(e));
    for (int i = 0; i < n; i++)
        caches[i].len += T[i];
    nvl_engine_pass_end(e, ctx);
    acts_free(&b);
    free(past);
    return st;
}

/* ---- generation -------------------------------------------------------- */

static nvl_status_t check_prompts(const nvl_engine_t *e, const int32_t *ids,
                                  const int *lens, int batch, int max_new)
{
    size_t at = 0;
    for (int b = 0; b < batch; b++) {
        if (lens[b] < 1) {
            nvl_report("prompt %d is empty", b);
            return NVL_ERR_INVALID;
        }
        uint64_t need = (uint64_t)lens[b] + (uint64_t)(max_new - 1);
        if (need > e->cfg.max_positions) {
            nvl_report("prompt %d: %d tokens + %d new need %llu positions, "
                       "more than model '%s' allows (max_position_embeddings "
                       "%u)", b, lens[b], max_new, (unsigned long long)need,
                       e->cfg.name, e->cfg.max_positions);
            return NVL_ERR_INVALID;
        }
        for (int t = 0; ids != NULL && t < lens[b]; t++, at++)
            if (ids[at] < 0 || (uint32_t)ids[at] >= e->cfg.vocab) {
                nvl_report("token id %d (prompt %d, position %d) is outside "
                           "the vocabulary (0..%u)", (int)ids[at], b, t,
                           e->cfg.vocab - 1);
                return NVL_ERR_INVALID;
            }
    }
    if (e->data && ids == NULL) {
        nvl_report("data mode needs prompt token ids");
        return NVL_ERR_INVALID;
    }
    int ranks = nvl_comm_size(e->tp);
    if (e->shard.attn_dp && batch < ranks) {
        nvl_report("data-parallel attention on %d ranks needs at least one "
                   "sequence per rank: batch %d", ranks, batch);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

static int32_t argmax(const float *v, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return (int32_t)best;
}

/* Data-parallel attention: every rank's new tokens and logits (rows of
 * `per` values, rank r's from row share.first) gathered on every rank. */
static void gather_outputs(nvl_engine_t *e, int batch, void *buf, int per,
                           MPI_Datatype type)
{
    int n = nvl_comm_size(e->tp);
    int *counts = malloc(2 * (size_t)n * sizeof *counts);
    if (counts == NULL) {
        nvl_report("out of memory gathering the outputs");
        nvl_runtime_abort(1);
    }
    for (int r = 0; r < n; r++) {
        nvl_range_t sh = nvl_range_split((uint32_t)batch, n, r);
        counts[r] = (int)sh.count * per;
        counts[n + r] = (int)sh.first * per;
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, type, buf, counts, counts + n, type,
                   nvl_comm_mpi(e->tp));
    free(counts);
}

nvl_status_t nvl_engine_generate(nvl_engine_t *e, const int32_t *ids,
                                 const int *lens, int batch, int max_new,
                                 int32_t *new_tokens_out,
                                 float *last_logits_out)
{
    /* the same on every rank: reported once */
    nvl_runtime_capture_begin();
    nvl_status_t st = batch < 1 || max_new < 1 ? NVL_ERR_INVALID : NVL_OK;
    if (st != NVL_OK)
        nvl_report("generate: batch %d and new tokens %d must be >= 1", batch,
                   max_new);
    else
        st = check_prompts(e, ids, lens, batch, max_new);
    st = nvl_runtime_capture_end_on(nvl_comm_mpi(e->tp), st);
    if (st != NVL_OK)
        return st;
    /* this rank's sequences: all, or its share (data-parallel attention);
     * prefill_row0: their first row in the whole batch's prefill */
    nvl_range_t mine = {0, (uint32_t)batch};
    uint64_t prefill_row0 = 0;
    if (e->shard.attn_dp)
        mine = nvl_range_split((uint32_t)batch, nvl_comm_size(e->tp),
                               nvl_comm_rank(e->tp));
    for (uint32_t b = 0; b < mine.first; b++)
        prefill_row0 += (uint64_t)lens[b];
    int nb = (int)mine.count;
    uint32_t V = e->cfg.vocab;
    kv_cache_t *caches = calloc((size_t)nb + 1, sizeof *caches);
    uint64_t *T = malloc(((size_t)nb + 1) * sizeof *T);
    int32_t *tok = malloc(((size_t)nb + 1) * sizeof *tok);
    float *logits = e->data ? malloc(((size_t)nb * V + 1) * sizeof *logits)
                            : NULL;
    if (caches == NULL || T == NULL || tok == NULL ||
        (e->data && logits == NULL)) {
        nvl_report("out of memory for a batch of %d", batch);
        nvl_runtime_abort(1);
    }
    for (int b = 0; b < nb; b++)
        T[b] = (uint64_t)lens[mine.first + (uint32_t)b];
    e->row0 = prefill_row0;
    st = forward(e, nb, caches, ids != NULL ? ids + prefill_row0 : NULL, T,
                 logits);
    if (st == NVL_OK && last_logits_out != NULL && e->data)
        memcpy(last_logits_out + (size_t)mine.first * V, logits,
               (size_t)nb * V * sizeof *logits);
    for (int s = 0; s < max_new && st == NVL_OK; s++) {
        for (int b = 0; b < nb; b++) {
            tok[b] = e->data ? argmax(logits + (size_t)b * V, V)
                             : -1; /* greedy */
            new_tokens_out[(size_t)(mine.first + (uint32_t)b) * max_new + s] =
                tok[b];
            T[b] = 1;
        }
        e->row0 = mine.first;
        if (s + 1 < max_new)
            st = forward(e, nb, caches, tok, T, logits);
    }
    if (st == NVL_OK && mine.count != (uint32_t)batch) {
        gather_outputs(e, batch, new_tokens_out, max_new, MPI_INT32_T);
        if (last_logits_out != NULL && e->data)
            gather_outputs(e, batch, last_logits_out, (int)V, MPI_FLOAT);
    }
    for (int b = 0; b < nb; b++)
        cache_free(&caches[b], e->layers);
    free(caches);
    free(T);
    free(tok);
    free(logits);
    return st;
}

nvl_status_t nvl_engine_last_logits(nvl_engine_t *e, const int32_t *ids,
                                    int batch, int len, float *logits_out)
{
    int *lens = malloc(((size_t)batch + 1) * sizeof *lens);
    int32_t *toks = malloc(((size_t)batch + 1) * sizeof *toks);
    if (lens == NULL || toks == NULL) {
        nvl_report("out of memory for a batch of %d", batch);
        nvl_runtime_abort(1);
    }
    for (int b = 0; b < batch; b++)
        lens[b] = len;
    nvl_status_t st =
        nvl_engine_generate(e, ids, lens, batch, 1, toks, logits_out);
    free(lens);
    free(toks);
    return st;
}
