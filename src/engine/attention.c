/* The attention half of a layer: norm, the attention variant's maths in
 * data mode (attn_gqa.c: projections, RoPE, the KV cache, attention,
 * o_proj's partial sums), the kernels of both modes, and the row-parallel
 * sum (or, before expert parallelism, the reduce-scatter / allgather
 * around the experts). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_tensors.h"
#include "nvlemu/runtime.h"

/* The columns of o_proj this rank holds: the input width of its GEMM. */
static uint64_t o_proj_k(const nvl_engine_t *e)
{
    const nvl_attn_variant_t *v = nvl_attn_variant_of(&e->cfg);
    return nvl_layer_tensor_part(&v->tensors[v->o_proj], &e->cfg, &e->shard)
        .n_cols;
}

/* Under --overlap async-tp the o_proj GEMM runs with its allreduce
 * (attention_out); not before expert parallelism's reduce-scatter. */
static bool o_proj_overlapped(const nvl_engine_t *e, uint32_t li)
{
    return e->ovl != NULL && !nvl_engine_moe_is_ep(e, li);
}

nvl_status_t nvl_engine_attention(nvl_engine_t *e, uint32_t li, int n,
                                  nvl_kv_cache_t *caches, const uint64_t *T,
                                  const uint64_t *past, uint64_t M,
                                  nvl_acts_t *b)
{
    const nvl_model_config_t *c = &e->cfg;
    const nvl_shard_t *s = &e->shard;
    uint64_t hid = c->hidden;
    int32_t L = (int32_t)li;

    /* the first layer has no residual add pending */
    nvl_engine_step(e, li > 0 || e->stage > 0 ? NVL_STEP_ADD_NORM
                                            : NVL_STEP_NORM, L,
                    (double)M, NULL);
    if (e->data) {
        nvl_engine_rmsnorm(b->x, e->lw[li].in_norm, b->h, M, hid,
                           c->rms_eps);
        nvl_attn_variant_of(c)->forward(e, li, n, caches, T, past, M, b);
    }
    nvl_engine_step(e, NVL_STEP_QKV, L, (double)M, NULL);
    if (c->qk_norm)
        nvl_engine_step(e, NVL_STEP_QK_NORM, L, (double)M, NULL);
    nvl_engine_step(e, NVL_STEP_ROPE_KV, L, (double)M, NULL);
    /* a sliding-window layer (gpt-oss) reads its window alone */
    nvl_attn_geom_t geom = s->attn;
    geom.window = nvl_model_layer_window(c, e->layer0 + li);
    nvl_engine_kernel(e, "attention", NVL_PART_ATTN, L,
           nvl_cost_attention_geom(&e->opts.cost, (size_t)n, T, past,
                                   &geom));
    /* row-parallel o_proj, pipelined with its allreduce under async TP
     * (attention_out) */
    if (!o_proj_overlapped(e, li))
        nvl_engine_matmul(e, "o_proj", NVL_QCLASS_ATTN, L, M, hid,
                          o_proj_k(e));
    return NVL_OK;
}

nvl_status_t nvl_engine_attention_out(nvl_engine_t *e, uint32_t li, uint64_t M,
                                  nvl_acts_t *b)
{
    uint64_t hid = e->cfg.hidden;
    uint64_t qk = o_proj_k(e);
    nvl_status_t st =
        o_proj_overlapped(e, li)
            ? nvl_engine_rowpar(e, "o_proj", NVL_QCLASS_ATTN, (int32_t)li,
                                M, hid, qk, b->h)
            : nvl_engine_allreduce_add_norm(e, (int32_t)li, b->h,
                                            M * hid);
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
nvl_status_t nvl_engine_attention_out_ep(nvl_engine_t *e, uint32_t li,
                                         uint64_t M, nvl_acts_t *b)
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
    nvl_engine_step(e, NVL_STEP_ADD_NORM, L, (double)R, NULL);
    if (st == NVL_OK && e->data) {
        for (uint64_t i = 0; i < R * hid; i++)
            rows[i] += b->x[mine.first * hid + i];
        nvl_engine_rmsnorm(rows, e->lw[li].post_norm, hl, R, hid, c->rms_eps);
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
