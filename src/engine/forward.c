/* The Qwen2/Qwen3 forward pass, tensor-parallel, float32.
 *
 *   x = embed(ids)                               vocab-parallel + allreduce
 *   for each layer:
 *     h = rmsnorm(x); q,k,v = h W_qkv^T (+ b)    this rank's heads
 *     (Qwen3: rmsnorm per head on q and k)
 *     q,k = rope(q,k); a = softmax(q k^T / sqrt(d), causal) v   (GQA)
 *     x += allreduce(a W_o^T)                    row-parallel
 *     h = rmsnorm(x); x += allreduce((silu(h W_g^T) * h W_u^T) W_d^T)
 *   logits = rmsnorm(x) W_lm^T                   vocab-parallel + allreduce
 * as transformers' Qwen2ForCausalLM / Qwen3ForCausalLM compute it. */
#include "nvlemu/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/runtime.h"
#include "nvlemu/shard.h"
#include "nvlemu/weights.h"

typedef struct {
    float *in_norm, *post_norm;       /* hidden */
    float *wq, *bq;                   /* [qh*hd, hidden], [qh*hd] */
    float *wk, *bk, *wv, *bv;         /* [kvh*hd, hidden], [kvh*hd] */
    float *q_norm, *k_norm;           /* [hd] (Qwen3) */
    float *wo;                        /* [hidden, qh*hd] */
    float *wg, *wu;                   /* [inter, hidden] */
    float *wd;                        /* [hidden, inter] */
} layer_t;

struct nvl_engine {
    nvl_model_config_t cfg;
    nvl_shard_t shard;
    nvl_comm_t *tp;
    float *embed;   /* [vocab shard, hidden] */
    float *lm_head; /* [vocab shard, hidden] (the embedding when tied) */
    float *norm;    /* [hidden] */
    layer_t *layers;
};

static void free_layer(layer_t *l)
{
    float **p = (float **)l;
    for (size_t i = 0; i < sizeof *l / sizeof(float *); i++)
        free(p[i]);
}

void nvl_engine_free(nvl_engine_t *e)
{
    if (e == NULL)
        return;
    for (uint32_t i = 0; e->layers != NULL && i < e->cfg.layers; i++)
        free_layer(&e->layers[i]);
    free(e->layers);
    if (e->lm_head != e->embed)
        free(e->lm_head);
    free(e->embed);
    free(e->norm);
    free(e);
}

/* Reads rows [r0, r0+nr) x columns [c0, c0+nc) of a tensor whose shape must
 * be [rows, cols] (cols 0: 1-D of rows elements). */
static float *slice(const nvl_weights_t *w, const char *name, uint64_t rows,
                    uint64_t cols, uint64_t r0, uint64_t nr, uint64_t c0,
                    uint64_t nc, nvl_status_t *st)
{
    if (*st != NVL_OK)
        return NULL;
    nvl_tensor_info_t info;
    if ((*st = nvl_weights_info(w, name, &info)) != NVL_OK)
        return NULL;
    bool ok = cols == 0 ? info.ndim == 1 && info.shape[0] == rows
                        : info.ndim == 2 && info.shape[0] == rows &&
                              info.shape[1] == cols;
    if (!ok) {
        nvl_report("tensor '%s' has the wrong shape (expected [%llu%s%llu])",
                   name, (unsigned long long)rows, cols ? ", " : "",
                   (unsigned long long)(cols ? cols : 0));
        *st = NVL_ERR_INVALID;
        return NULL;
    }
    float *out = malloc((nr * (cols ? nc : 1) + 1) * sizeof *out);
    if (out == NULL) {
        nvl_report("out of memory for tensor '%s'", name);
        *st = NVL_ERR_NOMEM;
        return NULL;
    }
    *st = cols ? nvl_weights_read_f32(w, name, r0, nr, c0, nc, out)
               : nvl_weights_read_f32(w, name, 0, 1, r0, nr, out);
    if (*st != NVL_OK) {
        free(out);
        return NULL;
    }
    return out;
}

nvl_status_t nvl_engine_load(const nvl_model_config_t *cfg, const char *dir,
                             nvl_comm_t *tp, nvl_engine_t **out)
{
    nvl_engine_t *e = calloc(1, sizeof *e);
    nvl_status_t st = e ? NVL_OK : NVL_ERR_NOMEM;
    nvl_weights_t *w = NULL;
    if (st == NVL_OK) {
        e->cfg = *cfg;
        e->tp = tp;
        st = nvl_shard_plan(cfg, nvl_comm_size(tp), nvl_comm_rank(tp),
                            &e->shard);
    }
    if (st == NVL_OK)
        st = nvl_weights_open(dir, &w);
    const nvl_model_config_t *c = cfg;
    const nvl_shard_t *s = &e->shard;
    uint64_t hd = c->head_dim, hid = c->hidden;
    if (st == NVL_OK) {
        e->layers = calloc(c->layers, sizeof *e->layers);
        if (e->layers == NULL)
            st = NVL_ERR_NOMEM;
    }
    e->embed = slice(w, "model.embed_tokens.weight", c->vocab, hid,
                     s->vocab.first, s->vocab.count, 0, hid, &st);
    if (st == NVL_OK && !c->tied_embeddings)
        e->lm_head = slice(w, "lm_head.weight", c->vocab, hid, s->vocab.first,
                           s->vocab.count, 0, hid, &st);
    else
        e->lm_head = e->embed;
    e->norm = slice(w, "model.norm.weight", hid, 0, 0, hid, 0, 0, &st);
    uint64_t qh = c->q_heads * hd, kvh = c->kv_heads * hd;
    uint64_t q0 = s->q_heads.first * hd, qn = s->q_heads.count * hd;
    uint64_t k0 = s->kv_heads.first * hd, kn = s->kv_heads.count * hd;
    uint64_t i0 = s->intermediate.first, in = s->intermediate.count;
    for (uint32_t i = 0; st == NVL_OK && i < c->layers; i++) {
        layer_t *l = &e->layers[i];
        char n[160];
#define P(suffix) (snprintf(n, sizeof n, "model.layers.%u.%s", i, suffix), n)
        l->in_norm = slice(w, P("input_layernorm.weight"), hid, 0, 0, hid, 0,
                           0, &st);
        l->post_norm = slice(w, P("post_attention_layernorm.weight"), hid, 0,
                             0, hid, 0, 0, &st);
        l->wq = slice(w, P("self_attn.q_proj.weight"), qh, hid, q0, qn, 0, hid,
                      &st);
        l->wk = slice(w, P("self_attn.k_proj.weight"), kvh, hid, k0, kn, 0,
                      hid, &st);
        l->wv = slice(w, P("self_attn.v_proj.weight"), kvh, hid, k0, kn, 0,
                      hid, &st);
        if (c->qkv_bias) {
            l->bq = slice(w, P("self_attn.q_proj.bias"), qh, 0, q0, qn, 0, 0,
                          &st);
            l->bk = slice(w, P("self_attn.k_proj.bias"), kvh, 0, k0, kn, 0, 0,
                          &st);
            l->bv = slice(w, P("self_attn.v_proj.bias"), kvh, 0, k0, kn, 0, 0,
                          &st);
        }
        if (c->qk_norm) {
            l->q_norm = slice(w, P("self_attn.q_norm.weight"), hd, 0, 0, hd, 0,
                              0, &st);
            l->k_norm = slice(w, P("self_attn.k_norm.weight"), hd, 0, 0, hd, 0,
                              0, &st);
        }
        l->wo = slice(w, P("self_attn.o_proj.weight"), hid, qh, 0, hid, q0,
                      qn, &st);
        l->wg = slice(w, P("mlp.gate_proj.weight"), c->intermediate, hid, i0,
                      in, 0, hid, &st);
        l->wu = slice(w, P("mlp.up_proj.weight"), c->intermediate, hid, i0,
                      in, 0, hid, &st);
        l->wd = slice(w, P("mlp.down_proj.weight"), hid, c->intermediate, 0,
                      hid, i0, in, &st);
#undef P
    }
    nvl_weights_close(w);
    /* every rank fails if one does */
    int bad = st != NVL_OK, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, nvl_comm_mpi(tp));
    if (any) {
        nvl_engine_free(e);
        return st != NVL_OK ? st : NVL_ERR_INVALID;
    }
    *out = e;
    return NVL_OK;
}

/* y[t, o] = sum_i x[t, i] w[o, i] (+ b[o]) for t < T, o < O, i < I */
static void linear(const float *x, const float *w, const float *b, float *y,
                   uint64_t T, uint64_t O, uint64_t I)
{
    for (uint64_t t = 0; t < T; t++)
        for (uint64_t o = 0; o < O; o++) {
            const float *xr = x + t * I, *wr = w + o * I;
            double acc = 0;
            for (uint64_t i = 0; i < I; i++)
                acc += (double)xr[i] * wr[i];
            y[t * O + o] = (float)acc + (b ? b[o] : 0.0f);
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
static void rope(float *v, uint64_t d, int pos, double theta)
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

static nvl_status_t allreduce(nvl_engine_t *e, float *buf, size_t n)
{
    return nvl_allreduce(e->tp, buf, buf, n, NVL_DT_F32, NVL_OP_SUM, NULL);
}

/* One sequence's key/value cache on this rank: per layer, the keys and
 * values of this rank's kv heads at every position so far. */
typedef struct {
    float *k, *v;  /* [cap, kv heads x head_dim] */
} kv_layer_t;

typedef struct {
    kv_layer_t *layers;
    uint64_t len, cap;
} kv_cache_t;

static void cache_free(kv_cache_t *c, uint32_t layers)
{
    for (uint32_t i = 0; c->layers != NULL && i < layers; i++) {
        free(c->layers[i].k);
        free(c->layers[i].v);
    }
    free(c->layers);
    memset(c, 0, sizeof *c);
}

/* Makes room for `more` positions; aborts the job when memory runs out
 * (the other ranks would wait in the next collective). */
static void cache_reserve(nvl_engine_t *e, kv_cache_t *c, uint64_t more)
{
    uint64_t row = (uint64_t)e->shard.kv_heads.count * e->cfg.head_dim;
    if (c->layers == NULL)
        c->layers = calloc(e->cfg.layers, sizeof *c->layers);
    if (c->layers == NULL)
        goto oom;
    if (c->len + more <= c->cap)
        return;
    uint64_t cap = c->cap ? c->cap : 16;
    while (cap < c->len + more)
        cap *= 2;
    for (uint32_t i = 0; i < e->cfg.layers; i++) {
        float *k = realloc(c->layers[i].k, (cap * row + 1) * sizeof *k);
        if (k == NULL)
            goto oom;
        c->layers[i].k = k;
        float *v = realloc(c->layers[i].v, (cap * row + 1) * sizeof *v);
        if (v == NULL)
            goto oom;
        c->layers[i].v = v;
    }
    c->cap = cap;
    return;
oom:
    nvl_report("out of memory for the KV cache of %llu positions",
               (unsigned long long)(c->len + more));
    nvl_runtime_abort(1);
}

/* Runs T new tokens of one sequence through the model at positions
 * cache->len .. cache->len + T - 1, appending their keys and values, and
 * writes the last token's logits (full vocabulary, every rank). */
static nvl_status_t forward(nvl_engine_t *e, kv_cache_t *cache,
                            const int32_t *tok, uint64_t T, float *logits)
{
    const nvl_model_config_t *c = &e->cfg;
    const nvl_shard_t *s = &e->shard;
    uint64_t hid = c->hidden, hd = c->head_dim;
    uint64_t qn = s->q_heads.count, kn = s->kv_heads.count;
    uint64_t in = s->intermediate.count, vn = s->vocab.count;
    cache_reserve(e, cache, T);
    uint64_t pos0 = cache->len, total = pos0 + T;
    float *x = malloc(T * hid * sizeof *x), *h = malloc(T * hid * sizeof *h);
    float *q = malloc((T * qn * hd + 1) * sizeof *q);
    float *a = malloc((T * qn * hd + 1) * sizeof *a);
    float *g = malloc((T * in + 1) * sizeof *g);
    float *u = malloc((T * in + 1) * sizeof *u);
    float *sc = malloc(total * sizeof *sc);
    if (!x || !h || !q || !a || !g || !u || !sc) {
        nvl_report("out of memory for a %llu-token forward pass",
                   (unsigned long long)T);
        nvl_runtime_abort(1);
    }
    uint32_t group = c->q_heads / c->kv_heads;
    /* vocab-parallel embedding: the rows this rank holds, zeros elsewhere */
    for (uint64_t t = 0; t < T; t++) {
        uint32_t id = (uint32_t)tok[t];
        bool mine = id >= s->vocab.first && id < s->vocab.first + vn;
        for (uint64_t i = 0; i < hid; i++)
            x[t * hid + i] =
                mine ? e->embed[(id - s->vocab.first) * hid + i] : 0.0f;
    }
    nvl_status_t st = allreduce(e, x, T * hid);
    double scale = 1.0 / sqrt((double)hd);
    for (uint32_t li = 0; li < c->layers && st == NVL_OK; li++) {
        const layer_t *l = &e->layers[li];
        float *kc = cache->layers[li].k, *vc = cache->layers[li].v;
        float *kn_new = kc + pos0 * kn * hd, *vn_new = vc + pos0 * kn * hd;
        rmsnorm(x, l->in_norm, h, T, hid, c->rms_eps);
        linear(h, l->wq, l->bq, q, T, qn * hd, hid);
        linear(h, l->wk, l->bk, kn_new, T, kn * hd, hid);
        linear(h, l->wv, l->bv, vn_new, T, kn * hd, hid);
        for (uint64_t t = 0; t < T; t++) {
            int pos = (int)(pos0 + t);
            for (uint64_t j = 0; j < qn; j++) {
                float *qv = q + (t * qn + j) * hd;
                if (l->q_norm)
                    rmsnorm(qv, l->q_norm, qv, 1, hd, c->rms_eps);
                rope(qv, hd, pos, c->rope_theta);
            }
            for (uint64_t j = 0; j < kn; j++) {
                float *kv = kn_new + (t * kn + j) * hd;
                if (l->k_norm)
                    rmsnorm(kv, l->k_norm, kv, 1, hd, c->rms_eps);
                rope(kv, hd, pos, c->rope_theta);
            }
        }
        /* causal GQA attention of the new tokens over the whole cache */
        for (uint64_t j = 0; j < qn; j++) {
            uint64_t kvj = (s->q_heads.first + j) / group - s->kv_heads.first;
            for (uint64_t t = 0; t < T; t++) {
                const float *qv = q + (t * qn + j) * hd;
                uint64_t upto = pos0 + t;
                double mx = -INFINITY, sum = 0;
                for (uint64_t p = 0; p <= upto; p++) {
                    const float *kv = kc + (p * kn + kvj) * hd;
                    double dot = 0;
                    for (uint64_t i = 0; i < hd; i++)
                        dot += (double)qv[i] * kv[i];
                    sc[p] = (float)(dot * scale);
                    if (sc[p] > mx)
                        mx = sc[p];
                }
                for (uint64_t p = 0; p <= upto; p++) {
                    sc[p] = (float)exp(sc[p] - mx);
                    sum += sc[p];
                }
                float *av = a + (t * qn + j) * hd;
                for (uint64_t i = 0; i < hd; i++) {
                    double acc = 0;
                    for (uint64_t p = 0; p <= upto; p++)
                        acc += (double)sc[p] * vc[(p * kn + kvj) * hd + i];
                    av[i] = (float)(acc / sum);
                }
            }
        }
        /* row-parallel o_proj: partial sums, then allreduce */
        linear(a, l->wo, NULL, h, T, hid, qn * hd);
        st = allreduce(e, h, T * hid);
        for (uint64_t i = 0; i < T * hid; i++)
            x[i] += h[i];
        rmsnorm(x, l->post_norm, h, T, hid, c->rms_eps);
        linear(h, l->wg, NULL, g, T, in, hid);
        linear(h, l->wu, NULL, u, T, in, hid);
        for (uint64_t i = 0; i < T * in; i++)
            g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
        linear(g, l->wd, NULL, h, T, hid, in);
        if (st == NVL_OK)
            st = allreduce(e, h, T * hid);
        for (uint64_t i = 0; i < T * hid; i++)
            x[i] += h[i];
    }
    cache->len = total;
    /* last position: final norm, vocab-parallel lm_head */
    rmsnorm(x + (T - 1) * hid, e->norm, h, 1, hid, c->rms_eps);
    memset(logits, 0, c->vocab * sizeof *logits);
    linear(h, e->lm_head, NULL, logits + s->vocab.first, 1, vn, hid);
    if (st == NVL_OK)
        st = allreduce(e, logits, c->vocab);
    free(x);
    free(h);
    free(q);
    free(a);
    free(g);
    free(u);
    free(sc);
    return st;
}

static nvl_status_t check_ids(const nvl_engine_t *e, const int32_t *ids,
                              size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (uint32_t)ids[i] >= e->cfg.vocab) {
            if (nvl_comm_rank(e->tp) == 0)
                nvl_report("token id %d (position %zu) is outside the "
                           "vocabulary (0..%u)", (int)ids[i], i,
                           e->cfg.vocab - 1);
            return NVL_ERR_INVALID;
        }
    return NVL_OK;
}

nvl_status_t nvl_engine_last_logits(nvl_engine_t *e, const int32_t *ids,
                                    int batch, int len, float *logits_out)
{
    nvl_status_t st = check_ids(e, ids, (size_t)batch * len);
    for (int b = 0; b < batch && st == NVL_OK; b++) {
        kv_cache_t cache = {0};
        st = forward(e, &cache, ids + (size_t)b * len, (uint64_t)len,
                     logits_out + (size_t)b * e->cfg.vocab);
        cache_free(&cache, e->cfg.layers);
    }
    return st;
}

static int32_t argmax(const float *v, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return (int32_t)best;
}

nvl_status_t nvl_engine_generate(nvl_engine_t *e, const int32_t *ids,
                                 const int *lens, int batch, int max_new,
                                 int32_t *new_tokens_out,
                                 float *last_logits_out)
{
    size_t total = 0;
    for (int b = 0; b < batch; b++)
        total += (size_t)lens[b];
    nvl_status_t st = check_ids(e, ids, total);
    float *logits = malloc(e->cfg.vocab * sizeof *logits);
    if (logits == NULL) {
        nvl_report("out of memory for %u logits", e->cfg.vocab);
        nvl_runtime_abort(1);
    }
    const int32_t *prompt = ids;
    for (int b = 0; b < batch && st == NVL_OK; b++) {
        kv_cache_t cache = {0};
        st = forward(e, &cache, prompt, (uint64_t)lens[b], logits);
        if (st == NVL_OK && last_logits_out != NULL)
            memcpy(last_logits_out + (size_t)b * e->cfg.vocab, logits,
                   e->cfg.vocab * sizeof *logits);
        for (int s = 0; s < max_new && st == NVL_OK; s++) {
            int32_t tok = argmax(logits, e->cfg.vocab); /* greedy */
            new_tokens_out[(size_t)b * max_new + s] = tok;
            if (s + 1 < max_new)
                st = forward(e, &cache, &tok, 1, logits);
        }
        cache_free(&cache, e->cfg.layers);
        prompt += lens[b];
    }
    free(logits);
    return st;
}
