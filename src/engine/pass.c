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

/* Bytes of layer li that live in host memory and cross NVLink-C2C into
 * HBM before the layer runs: its share of the layer's weights and of the
 * past positions' KV (`past` positions over this rank's sequences). */
static double host_bytes(const nvl_engine_t *e, uint32_t li, double past,
                         double kv_pos_bytes)
{
    const nvl_mem_plan_t *m = &e->mem;
    double wb = nvl_wdtype_bytes(e->opts.cost.weight_dtype);
    return m->weights_host_share * nvl_engine_layer_bytes(e, li, wb, 2) +
           m->kv_host_share * past * kv_pos_bytes;
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
    nvl_acts_t b = {0};
    if (e->data) {
        nvl_engine_acts_alloc(e, &b, M, n, ctx);
        for (int i = 0; i < n; i++)
            nvl_engine_kv_reserve(e, &caches[i], T[i]);
    }
    nvl_engine_pass_begin(e, M);
    nvl_stream_begin_pass(&e->stream, nvl_engine_clock(e));
    /* timing mode: the pass's collectives agreed once, at its end */
    e->settled_end_ps = -1;
    nvl_engine_defer(e);
    /* the step's token ids (at prefill the prompts) from the host */
    nvl_engine_c2c_sync_copy(e, "tokens_in", NVL_COPY_C2C_H2D, (double)M * 4);
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
    /* memory tiers: one layer's host bytes prefetched while the one
     * before runs (layer 0's while the embedding runs) */
    double past_sum = 0;
    for (int i = 0; i < n; i++)
        past_sum += (double)past[i];
    double kv_pos = 2.0 * s->kv_heads.count * c->head_dim *
                    nvl_wdtype_bytes(e->opts.cost.kv_dtype);
    if (e->layers > 0)
        nvl_engine_c2c_prefetch(e, 0, host_bytes(e, 0, past_sum, kv_pos));

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
    nvl_engine_step(e, NVL_STEP_ROPE_TABLES, -1, (double)M, NULL);
    nvl_status_t st = nvl_engine_allreduce(e, -1, b.x, M * hid);

    for (uint32_t li = 0; li < e->layers && st == NVL_OK; li++) {
        nvl_engine_c2c_wait(e, (int32_t)li);
        if (li + 1 < e->layers)
            nvl_engine_c2c_prefetch(e, (int32_t)li + 1,
                                    host_bytes(e, li + 1, past_sum, kv_pos));
        st = nvl_engine_attention(e, li, n, caches, T, past, M, &b);
        /* the new positions' host share written back */
        nvl_engine_c2c_writeback(e, (int32_t)li, e->mem.kv_host_share *
                                                     (double)M * kv_pos);
        if (st == NVL_OK && nvl_engine_moe_is_ep(e, li) &&
            !e->shard.attn_dp) {
            st = nvl_engine_attention_out_ep(e, li, M, &b);
            continue;
        }
        if (st == NVL_OK)
            st = nvl_engine_attention_out(e, li, M, &b);
        if (st == NVL_OK)
            st = nvl_engine_mlp(e, li, M, &b);
    }
    /* final norm (with the last residual add), then each sequence's last
     * position through the vocab-parallel lm_head (kept in bf16) */
    nvl_engine_step(e, NVL_STEP_ADD_NORM, -1, (double)M, NULL);
    if (e->data) {
        uint64_t r = 0;
        for (int i = 0; i < n; i++) {
            r += T[i];
            nvl_engine_rmsnorm(b.x + (r - 1) * hid, e->norm, b.h + (uint64_t)i * hid, 1,
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
    nvl_engine_c2c_drain(e);
    nvl_engine_c2c_sync_copy(e, "tokens_out", NVL_COPY_C2C_D2H, (double)n * 4);
    nvl_status_t settled = nvl_engine_settle(e);
    if (st == NVL_OK)
        st = settled;
    nvl_stream_sync(&e->stream, nvl_engine_clock(e));
    for (int i = 0; i < n; i++)
        caches[i].len += T[i];
    nvl_engine_pass_end(e, ctx);
    nvl_engine_acts_free(&b);
    free(past);
    return st;
}
