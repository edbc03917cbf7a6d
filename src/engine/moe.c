/* The mixture-of-experts MLP of a Qwen3-MoE layer, experts tensor-parallel
 * (every rank holds a slice of every expert; no expert parallelism):
 *
 *   p = softmax(h W_router^T)              [M, experts], float32; the
 *                                          router is replicated
 *   S = the top_k experts of p per token;  w = p_S (/ sum p_S when
 *                                          norm_topk_prob)
 *   y = sum_{x in S} w_x (silu(h W_g,x^T) * h W_u,x^T) W_d,x^T
 *
 * as transformers' Qwen3MoeSparseMoeBlock computes it (experts in index
 * order, each adding its weighted output).  A rank holds rows [moe
 * intermediate shard] of each expert's gate and up and those columns of
 * its down, so its y is a partial sum that the MLP's one allreduce
 * completes, as for the dense MLP.
 *
 * Kernels, as fused-MoE serving kernels issue them:
 *   router           matmul (M, experts, hidden), bf16 weights
 *   topk_softmax     reads the M x experts logits, writes ids and weights
 *   experts_gate_up  grouped GEMM: expert x with t_x tokens costs
 *                    matmul(t_x, 2 x shard, hidden); the kernel's overhead
 *                    once (nvl_cost_grouped_matmul); idle experts' weights
 *                    are not read
 *   silu_mul         over the M x top_k rows of the shard
 *   experts_down     grouped GEMM: matmul(t_x, hidden, shard) per expert
 *   moe_sum          the weighted sum of each token's top_k rows
 * (--fusion none: experts_gate and experts_up, silu and mul apart).  The
 * token counts t_x come from the real routing in data mode and from a
 * seeded one in timing mode: each token picks top_k distinct experts,
 * uniformly, or Zipf-distributed with exponent route_skew over a per-layer
 * rotation of the experts (expert ranked r drawn with probability
 * proportional to 1 / (r + 1)^s).  So data and timing mode time a MoE
 * model differently; the dense models' agreement is unchanged. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void *alloc_or_abort(size_t n, size_t size)
{
    void *p = calloc(n + 1, size);
    if (p == NULL) {
        nvl_report("out of memory for the experts of a forward pass");
        nvl_runtime_abort(1);
    }
    return p;
}

static bool picked(const uint32_t *sel, uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        if (sel[i] == x)
            return true;
    return false;
}

/* Timing mode: per-expert token counts of a seeded routing of M tokens,
 * the same on every rank (a function of seed, pass, layer and row). */
static void seeded_counts(const nvl_engine_t *e, uint32_t li, uint64_t M,
                          uint64_t *count)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    double s = e->opts.route_skew;
    double *cdf = alloc_or_abort(E, sizeof *cdf);
    uint32_t *sel = alloc_or_abort(k, sizeof *sel);
    double total = 0;
    for (uint32_t r = 0; r < E; r++) {
        total += s > 0 ? pow((double)(r + 1), -s) : 1.0;
        cdf[r] = total;
    }
    uint64_t key = mix(e->opts.seed ^ mix(((uint64_t)e->pass << 32) | li));
    uint32_t rot = (uint32_t)(mix(e->opts.seed ^ li) % E);
    for (uint64_t t = 0; t < M; t++) {
        uint64_t h = mix(key + t);
        for (uint32_t j = 0; j < k; j++) {
            uint32_t x = E;
            /* distinct experts: redraw a repeat; past 64 tries (a steep
             * skew) take the most popular expert not yet picked */
            for (int tries = 0; tries < 64 && x == E; tries++) {
                h = mix(h);
                double u = (double)(h >> 11) * (1.0 / 9007199254740992.0) *
                           total;
                uint32_t lo = 0, hi = E - 1;
                while (lo < hi) {
                    uint32_t mid = (lo + hi) / 2;
                    if (cdf[mid] > u)
                        hi = mid;
                    else
                        lo = mid + 1;
                }
                x = (lo + rot) % E;
                if (picked(sel, j, x))
                    x = E;
            }
            for (uint32_t r = 0; x == E && r < E; r++)
                if (!picked(sel, j, (r + rot) % E))
                    x = (r + rot) % E;
            sel[j] = x;
            count[x]++;
        }
    }
    free(sel);
    free(cdf);
}

/* Data mode: routes each token (ids and weights, M x top_k) and counts the
 * tokens of each expert. */
static void route(const nvl_engine_t *e, const float *router, const float *h,
                  uint64_t M, uint32_t *ids, float *w, uint64_t *count)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    uint64_t hid = e->cfg.hidden;
    float *p = alloc_or_abort(M * E, sizeof *p);
    nvl_engine_linear(h, router, NULL, p, M, E, hid);
    for (uint64_t t = 0; t < M; t++) {
        float *pt = p + t * E;
        float mx = pt[0], sum = 0;
        for (uint32_t x = 1; x < E; x++)
            mx = pt[x] > mx ? pt[x] : mx;
        for (uint32_t x = 0; x < E; x++) {
            pt[x] = expf(pt[x] - mx);
            sum += pt[x];
        }
        float top = 0;
        for (uint32_t j = 0; j < k; j++) {
            /* the largest not yet taken; the lower index on a tie */
            uint32_t best = E;
            for (uint32_t x = 0; x < E; x++)
                if (!picked(ids + t * k, j, x) &&
                    (best == E || pt[x] > pt[best]))
                    best = x;
            ids[t * k + j] = best;
            w[t * k + j] = pt[best] / sum;
            top += w[t * k + j];
            count[best]++;
        }
        if (e->cfg.norm_topk_prob)
            for (uint32_t j = 0; j < k; j++)
                w[t * k + j] /= top;
    }
    free(p);
}

/* Data mode: this rank's partial sums of the routed experts' outputs,
 * written over h. */
static void experts_compute(const nvl_engine_t *e,
                            const nvl_layer_weights_t *l, float *h,
                            uint64_t M, const uint32_t *ids, const float *w)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    uint64_t hid = e->cfg.hidden, sn = e->shard.moe_intermediate.count;
    float *xs = alloc_or_abort(M * hid, sizeof *xs);
    float *g = alloc_or_abort(M * sn, sizeof *g);
    float *u = alloc_or_abort(M * sn, sizeof *u);
    float *d = alloc_or_abort(M * hid, sizeof *d);
    float *y = alloc_or_abort(M * hid, sizeof *y);
    uint64_t *row = alloc_or_abort(M, sizeof *row);
    float *wt = alloc_or_abort(M, sizeof *wt);
    for (uint32_t x = 0; x < E; x++) {
        uint64_t n = 0;
        for (uint64_t t = 0; t < M; t++)
            for (uint32_t j = 0; j < k; j++)
                if (ids[t * k + j] == x) {
                    memcpy(xs + n * hid, h + t * hid, hid * sizeof *xs);
                    row[n] = t;
                    wt[n++] = w[t * k + j];
                }
        if (n == 0 || sn == 0)
            continue;
        nvl_engine_linear(xs, l->eg + x * sn * hid, NULL, g, n, sn, hid);
        nvl_engine_linear(xs, l->eu + x * sn * hid, NULL, u, n, sn, hid);
        for (uint64_t i = 0; i < n * sn; i++)
            g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
        nvl_engine_linear(g, l->ed + x * hid * sn, NULL, d, n, hid, sn);
        for (uint64_t r = 0; r < n; r++)
            for (uint64_t i = 0; i < hid; i++)
                y[row[r] * hid + i] += d[r * hid + i] * wt[r];
    }
    memcpy(h, y, M * hid * sizeof *h);
    free(wt);
    free(row);
    free(y);
    free(d);
    free(u);
    free(g);
    free(xs);
}

void nvl_engine_moe(nvl_engine_t *e, uint32_t li, uint64_t M, float *h)
{
    const nvl_model_config_t *c = &e->cfg;
    uint32_t E = c->num_experts, k = c->top_k;
    uint64_t hid = c->hidden, sn = e->shard.moe_intermediate.count;
    int32_t L = (int32_t)li;
    uint64_t *count = alloc_or_abort(E, sizeof *count);
    if (e->data) {
        uint32_t *ids = alloc_or_abort(M * k, sizeof *ids);
        float *w = alloc_or_abort(M * k, sizeof *w);
        route(e, e->lw[li].router, h, M, ids, w, count);
        experts_compute(e, &e->lw[li], h, M, ids, w);
        free(w);
        free(ids);
    } else {
        seeded_counts(e, li, M, count);
    }

    nvl_cost_cfg_t router = e->opts.cost;
    router.weight_dtype = NVL_WDT_BF16;
    nvl_engine_kernel(e, "router", NVL_PART_GEMM, L,
                      nvl_cost_matmul(&router, M, E, hid));
    nvl_engine_elementwise(e, "topk_softmax", L,
                           (double)M * E + 2.0 * (double)M * k);
    double rows_sn = (double)M * k * sn;
    const nvl_cost_cfg_t *cc = &e->opts.cost;
    if (cc->fusion == NVL_FUSION_TYPICAL) {
        nvl_engine_kernel(e, "experts_gate_up", NVL_PART_GEMM, L,
                          nvl_cost_grouped_matmul(cc, E, count, 2 * sn, hid));
        nvl_engine_elementwise(e, "silu_mul", L, rows_sn * 3);
    } else {
        nvl_engine_kernel(e, "experts_gate", NVL_PART_GEMM, L,
                          nvl_cost_grouped_matmul(cc, E, count, sn, hid));
        nvl_engine_kernel(e, "experts_up", NVL_PART_GEMM, L,
                          nvl_cost_grouped_matmul(cc, E, count, sn, hid));
        nvl_engine_elementwise(e, "silu", L, rows_sn * 2);
        nvl_engine_elementwise(e, "mul", L, rows_sn * 3);
    }
    nvl_engine_kernel(e, "experts_down", NVL_PART_GEMM, L,
                      nvl_cost_grouped_matmul(cc, E, count, hid, sn));
    nvl_engine_elementwise(e, "moe_sum", L,
                           (double)M * k * hid + (double)M * hid);
    free(count);
}
