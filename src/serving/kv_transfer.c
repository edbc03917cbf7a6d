/* Disaggregated serving: each request's KV crosses from the prefill
 * replica that computed it to its decode replica.  Each member of the
 * decode replica receives the KV heads it will hold from a member of the
 * prefill replica holding them; all pairs move at once, timed by the
 * collectives' point-to-point group model (nvl_p2p_predict_member_ps,
 * NCCL's p2p path) of the busiest member; a replica's links carry one
 * request's KV at a time, in the order the prefills finished. */
#include <stdlib.h>
#include <string.h>

#include "serving_impl.h"

/* One KV head's bytes per position over every layer the engine runs
 * (the shard's attention geometry: what a position stores per head). */
static double kv_head_position_bytes(const nvl_engine_t *e,
                                     nvl_wdtype_t kv_dtype)
{
    return nvl_attn_kv_head_bytes(&nvl_engine_shard(e)->attn, kv_dtype) *
           (double)nvl_engine_layers(e);
}

/* The KV heads of the whole model: the geometry of its one-GPU shard
 * (what a position caches; one latent under MLA). */
static uint32_t model_kv_heads(const nvl_model_config_t *cfg)
{
    nvl_shard_t whole;
    return nvl_shard_plan(cfg, 1, 0, &whole) == NVL_OK ? whole.attn.kv_heads
                                                       : 0;
}

/* The kv heads member r of a TP group of n holds (the shard plan's: the
 * heads its query heads read; {0, 0} when it holds none). */
static nvl_range_t heads_of(const nvl_model_config_t *cfg, int n, int r)
{
    nvl_shard_t sh;
    if (nvl_shard_plan(cfg, n, r, &sh) != NVL_OK)
        return (nvl_range_t){0, 0};
    return sh.kv_heads;
}

/* The member (of n) that sends kv head h to the receiver's member j: of
 * the members holding h, the (j mod their count)-th. */
static int head_holder(const nvl_model_config_t *cfg, int n, uint32_t h,
                       int j)
{
    int holders = 0;
    for (int r = 0; r < n; r++) {
        nvl_range_t s = heads_of(cfg, n, r);
        holders += h >= s.first && h < s.first + s.count;
    }
    int pick = holders > 0 ? j % holders : 0;
    for (int r = 0; r < n; r++) {
        nvl_range_t s = heads_of(cfg, n, r);
        if (h >= s.first && h < s.first + s.count && pick-- == 0)
            return r;
    }
    return 0;
}

/* heads[i * dt + j]: the kv heads prefill member i (of pt) sends decode
 * member j (of dt); malloc'd. */
static double *head_matrix(const nvl_model_config_t *cfg, int pt, int dt)
{
    double *m = calloc((size_t)pt * (size_t)dt + 1, sizeof *m);
    if (m == NULL) {
        nvl_report("out of memory timing the KV transfers");
        nvl_runtime_abort(1);
    }
    for (int j = 0; j < dt; j++) {
        nvl_range_t hs = heads_of(cfg, dt, j);
        for (uint32_t h = hs.first; h < hs.first + hs.count; h++)
            m[(size_t)head_holder(cfg, pt, h, j) * (size_t)dt + (size_t)j]++;
    }
    return m;
}

/* One transfer's pairs: the prefill replica at world rank p0 (tp pt),
 * the decode replica at d0 (tp dt), the heads as `heads` assigns them,
 * and scratch of the world's size for each member's sends and receives. */
typedef struct {
    const nvl_comm_t *world;
    const double *heads;
    double head_pos_bytes;
    uint32_t model_kv_heads; /* the whole model's KV heads (one GPU's
                                shard: 1 for a latent cache) */
    int pt, dt;
    double *send, *recv;
} kv_pairs_t;

/* Time of moving `positions` positions of KV from p0 to d0. */
static int64_t kv_transfer_ps(const kv_pairs_t *k, double positions, int p0,
                              int d0)
{
    int n = nvl_comm_size(k->world);
    double b = k->head_pos_bytes * positions;
    int64_t worst = 0;
    for (int side = 0; side < 2; side++)
        for (int m = 0; m < (side ? k->dt : k->pt); m++) {
            memset(k->send, 0, (size_t)n * sizeof *k->send);
            memset(k->recv, 0, (size_t)n * sizeof *k->recv);
            for (int i = 0; i < k->pt; i++)
                for (int j = 0; j < k->dt; j++) {
                    double x =
                        k->heads[(size_t)i * (size_t)k->dt + (size_t)j] * b;
                    if (side == 0 && i == m)
                        k->send[d0 + j] += x;
                    if (side == 1 && j == m)
                        k->recv[p0 + i] += x;
                }
            int64_t t = nvl_p2p_predict_member_ps(
                k->world, side ? d0 + m : p0 + m, k->send, k->recv);
            if (t > worst)
                worst = t;
        }
    return worst;
}

/* Sorting request numbers by a time (qsort has no context argument). */
static const int64_t *ready_key;
static int cmp_ready_idx(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if (ready_key[a] != ready_key[b])
        return ready_key[a] < ready_key[b] ? -1 : 1;
    return (a > b) - (a < b);
}

void nvl_serving_sort_by_time(uint32_t *idx, size_t n, const int64_t *key)
{
    ready_key = key;
    qsort(idx, n, sizeof *idx, cmp_ready_idx);
}

/* The transfers in the order the prefills finished (order[k]), each
 * when both replicas' links are free; ready[i] its arrival. */
static void schedule_transfers(const nvl_serving_job_t *j,
                               const nvl_serve_workload_t *w,
                               const kv_pairs_t *k, const uint32_t *order,
                               const int64_t *done, int64_t *ready,
                               double *sum_ms_out, double *bytes_out)
{
    const nvl_serving_pool_t *P = &j->L.pools[0], *D = &j->L.pools[1];
    int64_t *out_free = calloc((size_t)P->replicas, sizeof *out_free);
    int64_t *in_free = calloc((size_t)D->replicas, sizeof *in_free);
    if (out_free == NULL || in_free == NULL) {
        nvl_report("out of memory timing the KV transfers");
        nvl_runtime_abort(1);
    }
    double sum_ms = 0, bytes = 0;
    for (size_t n = 0; n < w->n; n++) {
        uint32_t i = order[n];
        int src = (int)(i % (uint32_t)P->replicas);
        int dst = (int)(i % (uint32_t)D->replicas);
        int64_t start = done[i];
        if (out_free[src] > start)
            start = out_free[src];
        if (in_free[dst] > start)
            start = in_free[dst];
        int64_t t = kv_transfer_ps(k, (double)w->reqs[i].input_tokens,
                                   P->first_rank + src * P->tp,
                                   D->first_rank + dst * D->tp);
        out_free[src] = in_free[dst] = ready[i] = start + t;
        sum_ms += (double)(ready[i] - done[i]) / 1e9;
        bytes += k->head_pos_bytes * k->model_kv_heads *
                 w->reqs[i].input_tokens;
    }
    *sum_ms_out = sum_ms;
    *bytes_out = bytes;
    free(out_free);
    free(in_free);
}

void nvl_serving_kv_arrivals(const nvl_serving_job_t *j,
                             const nvl_serve_workload_t *w,
                             const nvl_serve_outcome_t *pre, int64_t *ready,
                             double *transfer_ms_mean, double *transfer_gb)
{
    int n = nvl_comm_size(j->world);
    kv_pairs_t k = {
        .world = j->world, .pt = j->L.pools[0].tp, .dt = j->L.pools[1].tp,
        .head_pos_bytes =
            kv_head_position_bytes(j->e, j->c->engine.cost.kv_dtype),
        .model_kv_heads = model_kv_heads(j->m),
        .send = calloc((size_t)n, sizeof *k.send),
        .recv = calloc((size_t)n, sizeof *k.recv)};
    uint32_t *order = malloc((w->n + 1) * sizeof *order);
    int64_t *done = malloc((w->n + 1) * sizeof *done);
    if (!k.send || !k.recv || !order || !done) {
        nvl_report("out of memory timing the KV transfers");
        nvl_runtime_abort(1);
    }
    double *heads = head_matrix(j->m, k.pt, k.dt);
    k.heads = heads;
    for (size_t i = 0; i < w->n; i++) {
        order[i] = (uint32_t)i;
        done[i] = pre[i].first_token_ps;
    }
    nvl_serving_sort_by_time(order, w->n, done);
    double sum_ms, bytes;
    schedule_transfers(j, w, &k, order, done, ready, &sum_ms, &bytes);
    *transfer_ms_mean = w->n ? sum_ms / (double)w->n : 0;
    *transfer_gb = bytes / 1e9;
    free(k.send);
    free(k.recv);
    free(order);
    free(done);
    free(heads);
}
