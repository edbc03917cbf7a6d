/* One forward pass: the Qwen2/Qwen3 forward pass, tensor-parallel, over a
 * batch of sequences.
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
 * both modes; --stack decides which kernels each step runs (plan.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

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

/* A pass's shape: each sequence's cached positions, the rows, the
 * longest context, and what the memory tiers' copies need (the past
 * positions over every sequence, one position's KV bytes per layer). */
typedef struct {
    uint64_t *past;
    uint64_t M, ctx;
    int n;
    double past_sum, kv_pos;
} pass_t;

/* The share of layer li's KV in host memory: a sliding-window layer's
 * under the plan's window share (serving keeps the windows in HBM). */
static double kv_share(const nvl_engine_t *e, uint32_t li)
{
    return nvl_model_layer_window(&e->cfg, e->layer0 + li) > 0
               ? e->mem.window_host_share
               : e->mem.kv_host_share;
}

/* Bytes of layer li that live in host memory and cross NVLink-C2C into
 * HBM before the layer runs: its share of the layer's weights and of the
 * past positions' KV over this rank's sequences, a sliding-window layer
 * holding each sequence's last `window` alone (as the memory plan counts
 * them, nvl_engine_kv_bytes). */
static double host_bytes(const nvl_engine_t *e, uint32_t li, const pass_t *p)
{
    uint32_t w = nvl_model_layer_window(&e->cfg, e->layer0 + li);
    double past = p->past_sum;
    if (w > 0) {
        past = 0;
        for (int i = 0; i < p->n; i++)
            past += (double)(p->past[i] < w ? p->past[i] : w);
    }
    return e->mem.weights_host_share * nvl_engine_layer_bytes(e, li, false) +
           kv_share(e, li) * past * p->kv_pos;
}

static void pass_open(nvl_engine_t *e, int n, nvl_kv_cache_t *caches,
                      const uint64_t *T, pass_t *p, nvl_acts_t *b)
{
    p->past = malloc(((size_t)n + 1) * sizeof *p->past);
    if (p->past == NULL) {
        nvl_report("out of memory for %d sequences", n);
        nvl_runtime_abort(1);
    }
    p->M = p->ctx = 0;
    p->n = n;
    for (int i = 0; i < n; i++) {
        p->past[i] = caches[i].len;
        p->M += T[i];
        if (p->past[i] + T[i] > p->ctx)
            p->ctx = p->past[i] + T[i];
    }
    if (e->data) {
        nvl_engine_acts_alloc(e, b, p->M, n, p->ctx);
        for (int i = 0; i < n; i++)
            nvl_engine_kv_reserve(e, &caches[i], T[i]);
    }
    nvl_engine_pass_open(e, p->M);
    e->one_token_pass = p->M == (uint64_t)n;
    /* a pipeline's first stage: the tokens this microbatch needs are
     * those the last stage sampled */
    nvl_engine_pipe_wait_tokens(e);
    /* timing mode: the pass's collectives agreed once, at its end (a
     * later pipeline stage starts recording once its rows are received:
     * their arrival needs the previous stage's settled clock) */
    e->settled_end_ps = -1;
    if (e->link_prev == NULL)
        nvl_engine_defer(e);
    /* the step's token ids (at prefill the prompts) from the host */
    if (e->stage == 0)
        nvl_engine_c2c_sync_copy(e, "tokens_in", NVL_COPY_C2C_H2D,
                                 (double)p->M * 4);
    /* serving: the blocks this step reuses copied out first (preempted
     * KV swapped out, prefixes evicted), then swapped KV and cached
     * prefixes brought back */
    if (e->serve_d2h_bytes > 0)
        nvl_engine_c2c_sync_copy(e, "kv_swap_out", NVL_COPY_C2C_D2H,
                                 e->serve_d2h_bytes);
    if (e->serve_h2d_bytes > 0)
        nvl_engine_c2c_sync_copy(e, "kv_swap_in", NVL_COPY_C2C_H2D,
                                 e->serve_h2d_bytes);
    e->serve_h2d_bytes = e->serve_d2h_bytes = 0;
    p->past_sum = 0;
    for (int i = 0; i < n; i++)
        p->past_sum += (double)p->past[i];
    p->kv_pos = nvl_attn_kv_pos_bytes(&e->shard.attn, e->opts.cost.kv_dtype);
}

/* The vocab-parallel embedding (the rows this rank holds, zeros
 * elsewhere), the RoPE tables, the embedding's allreduce; layer 0's host
 * bytes prefetched while it runs. */
static nvl_status_t embed(nvl_engine_t *e, const int32_t *tok,
                          const pass_t *p, nvl_acts_t *b)
{
    const nvl_shard_t *s = &e->shard;
    uint64_t hid = e->cfg.hidden, vn = s->vocab.count;
    if (e->layers > 0)
        nvl_engine_c2c_prefetch(e, 0, host_bytes(e, 0, p));
    if (e->data)
        for (uint64_t t = 0; t < p->M; t++) {
            uint32_t id = (uint32_t)tok[t];
            if (id >= s->vocab.first && id < s->vocab.first + vn)
                memcpy(b->x + t * hid,
                       e->embed + (id - s->vocab.first) * hid,
                       hid * sizeof *b->x);
        }
    nvl_engine_elementwise(e, "embedding", -1, (double)p->M * hid * 2);
    nvl_engine_step(e, NVL_STEP_ROPE_TABLES, -1, (double)p->M, NULL);
    return nvl_engine_allreduce(e, -1, b->x, p->M * hid);
}

/* A later pipeline stage's start: layer 0's host bytes prefetched, the
 * previous stage's rows received, the RoPE tables. */
static nvl_status_t receive(nvl_engine_t *e, const pass_t *p, nvl_acts_t *b)
{
    if (e->layers > 0)
        nvl_engine_c2c_prefetch(e, 0, host_bytes(e, 0, p));
    nvl_status_t st = nvl_engine_pipe_recv(e, p->M, b);
    nvl_engine_defer(e);
    nvl_engine_step(e, NVL_STEP_ROPE_TABLES, -1, (double)p->M, NULL);
    return st;
}

/* The layers; memory tiers: one layer's host bytes prefetched while the
 * one before runs, the new positions' host share written back. */
static nvl_status_t layers(nvl_engine_t *e, int n, nvl_kv_cache_t *caches,
                           const uint64_t *T, const pass_t *p, nvl_acts_t *b)
{
    nvl_status_t st = NVL_OK;
    for (uint32_t li = 0; li < e->layers && st == NVL_OK; li++) {
        nvl_engine_c2c_wait(e, (int32_t)li);
        if (li + 1 < e->layers)
            nvl_engine_c2c_prefetch(e, (int32_t)li + 1,
                                    host_bytes(e, li + 1, p));
        st = nvl_engine_attention(e, li, n, caches, T, p->past, p->M, b);
        nvl_engine_c2c_writeback(e, (int32_t)li, kv_share(e, li) *
                                                     (double)p->M * p->kv_pos);
        if (st == NVL_OK && nvl_engine_moe_is_ep(e, li) &&
            !e->shard.attn_dp) {
            st = nvl_engine_attention_out_ep(e, li, p->M, b);
            continue;
        }
        if (st == NVL_OK)
            st = nvl_engine_attention_out(e, li, p->M, b);
        if (st == NVL_OK)
            st = nvl_engine_mlp(e, li, p->M, b);
    }
    return st;
}

/* The final norm (with the last residual add), then each sequence's last
 * position through the vocab-parallel lm_head (its class's type, bf16
 * unless --dtype is explicit), the
 * logits' allgather and sampling; the host reads the sampled tokens. */
static nvl_status_t head(nvl_engine_t *e, int n, const uint64_t *T,
                         const pass_t *p, nvl_acts_t *b, nvl_status_t st,
                         float *logits)
{
    const nvl_model_config_t *c = &e->cfg;
    uint64_t hid = c->hidden, vn = e->shard.vocab.count;
    nvl_engine_step(e, NVL_STEP_ADD_NORM, -1, (double)p->M, NULL);
    if (e->data) {
        uint64_t r = 0;
        for (int i = 0; i < n; i++) {
            r += T[i];
            nvl_engine_rmsnorm(b->x + (r - 1) * hid, e->norm,
                               b->h + (uint64_t)i * hid, 1, hid, c->rms_eps);
        }
        nvl_engine_linear(b->h, e->lm_head, NULL, b->last, (uint64_t)n, vn,
                          hid);
    }
    nvl_engine_matmul(e, "lm_head", NVL_QCLASS_LM_HEAD, -1, (uint64_t)n, vn,
                      hid);
    if (st == NVL_OK)
        st = gather_logits(e, b->last, n, logits);
    nvl_engine_elementwise(e, "sample", -1, (double)n * c->vocab);
    nvl_engine_c2c_drain(e);
    nvl_engine_c2c_sync_copy(e, "tokens_out", NVL_COPY_C2C_D2H, (double)n * 4);
    return st;
}

/* The pass's deferred collectives agreed (nothing when none were
 * recorded); the first failure wins. */
static nvl_status_t settle(nvl_engine_t *e, nvl_status_t st)
{
    nvl_status_t settled = nvl_engine_settle(e);
    return st == NVL_OK ? settled : st;
}

/* Runs T[s] new tokens of each of n sequences (tokens one sequence after
 * another) at positions caches[s].len .., appending to the caches, and
 * writes each sequence's last-position logits (n x vocab, every rank; data
 * mode).  The pass ends with the greedy sampling kernel and the host
 * reading its result. */
nvl_status_t nvl_engine_forward(nvl_engine_t *e, int n, nvl_kv_cache_t *caches,
                                const int32_t *tok, const uint64_t *T,
                                float *logits)
{
    pass_t p;
    nvl_acts_t b = {0};
    pass_open(e, n, caches, T, &p, &b);
    nvl_status_t st = e->stage == 0 ? embed(e, tok, &p, &b)
                                    : receive(e, &p, &b);
    if (st == NVL_OK)
        st = layers(e, n, caches, T, &p, &b);
    if (e->stage == e->stages - 1) {
        st = head(e, n, T, &p, &b, st, logits);
        /* the stage's worst status agreed with its collectives: the same
         * on all its ranks (generate.c's steps rely on it) */
        if (e->stages > 1)
            st = nvl_engine_pipe_settle_last(e, st);
    } else {
        /* a failure is sent on too: the next stage must not wait */
        if (st == NVL_OK)
            nvl_engine_c2c_drain(e);
        /* the stage agrees before its rows leave (pipe_send settles):
         * their arrival is timed from this rank's settled clock */
        st = nvl_engine_pipe_send(e, p.M, &b, st);
        e->norm_fused = false; /* the next stage adds the residual */
    }
    st = settle(e, st);
    free(e->ep_rows); /* one pass's (nvl_engine_ep_rows) */
    e->ep_rows = NULL;
    for (int i = 0; i < n; i++)
        caches[i].len += T[i];
    nvl_engine_pass_close(e, p.ctx);
    nvl_engine_acts_free(&b);
    free(p.past);
    return st;
}
