/* The routing of a mixture-of-experts layer's rows (moe.c, moe_ep.c):
 * the experts of each row, hence the token counts t_x of the expert
 * kernels, come from the real routing in data mode and from a seeded one
 * in timing mode: each token picks top_k distinct experts,
 * uniformly, or Zipf-distributed with exponent route_skew over a per-layer
 * rotation of the experts (expert ranked r drawn with probability
 * proportional to 1 / (r + 1)^s), seeded by the row's index in the whole
 * batch so that every placement routes alike.  So data and timing mode
 * time a MoE model differently; the dense models' agreement is
 * unchanged. */
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

void *nvl_engine_moe_alloc(size_t n, size_t size)
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

/* Timing mode: a seeded routing of rows row0 .. row0 + M - 1 of the
 * pass (ids: M x top_k), the same on every rank and for every placement
 * (a function of seed, pass, layer and row). */
static void seeded_route(const nvl_engine_t *e, uint32_t li, uint64_t row0,
                         uint64_t M, uint32_t *ids)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    double s = e->opts.route_skew;
    double *cdf = nvl_engine_moe_alloc(E, sizeof *cdf);
    double total = 0;
    for (uint32_t r = 0; r < E; r++) {
        total += s > 0 ? pow((double)(r + 1), -s) : 1.0;
        cdf[r] = total;
    }
    uint64_t key = mix(e->opts.seed ^ mix(((uint64_t)e->pass << 32) | li));
    uint32_t rot = (uint32_t)(mix(e->opts.seed ^ li) % E);
    for (uint64_t t = 0; t < M; t++) {
        uint32_t *sel = ids + t * k;
        uint64_t h = mix(key + row0 + t);
        for (uint32_t j = 0; j < k; j++) {
            uint32_t x = E;
            /* distinct experts: redraw a repeat; past 64 tries (a steep
             * skew) take the most popular expert not yet picked */
            for (int tries = 0; tries < 64 && x == E; tries++) {
                h = mix(h);
                double u = (double)(h >> 11) * (1.0 / 9007199254740992.0) *
                           total;
                /* the first r with cdf[r] > u: floor(u) when uniform
                 * (cdf[r] = r + 1, exact in doubles), else bisection */
                uint32_t lo = 0, hi = E - 1;
                if (s <= 0)
                    lo = (uint32_t)u < E ? (uint32_t)u : E - 1;
                while (s > 0 && lo < hi) {
                    uint32_t mid = (lo + hi) / 2;
                    if (cdf[mid] > u)
                        hi = mid;
                    else
                        lo = mid + 1;
                }
                x = lo + rot < E ? lo + rot : lo + rot - E; /* mod E */
                if (picked(sel, j, x))
                    x = E;
            }
            for (uint32_t r = 0; x == E && r < E; r++)
                if (!picked(sel, j, (r + rot) % E))
                    x = (r + rot) % E;
            sel[j] = x;
        }
    }
    free(cdf);
}

/* Data mode: routes each token (ids and weights, M x top_k). */
static void route(const nvl_engine_t *e, const float *router, const float *h,
                  uint64_t M, uint32_t *ids, float *w)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    uint64_t hid = e->cfg.hidden;
    float *p = nvl_engine_moe_alloc(M * E, sizeof *p);
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
        }
        if (e->cfg.norm_topk_prob)
            for (uint32_t j = 0; j < k; j++)
                w[t * k + j] /= top;
    }
    free(p);
}

/* This rank's routing of its M rows (ids, and weights in data mode). */
void nvl_engine_moe_route(const nvl_engine_t *e, uint32_t li, uint64_t row0,
                       uint64_t M, const float *h, uint32_t *ids, float *w)
{
    if (e->data)
        route(e, e->lw[li].router, h, M, ids, w);
    else
        seeded_route(e, e->layer0 + li, row0, M, ids);
}

