/* The routing of a mixture-of-experts layer's rows (moe.c, moe_ep.c):
 * the experts of each row, hence the token counts t_x of the expert
 * kernels, come from the real routing in data mode and from a seeded one
 * in timing mode, where each row takes top_k distinct experts, uniformly,
 * or Zipf-distributed with exponent route_skew over a per-layer rotation
 * of the experts (expert ranked r drawn with probability proportional to
 * 1 / (r + 1)^s, a repeat drawn again).  So data and timing mode time a
 * MoE model differently; the dense models' agreement is unchanged.
 *
 * Timing mode draws each row's experts from a table (route_table): rows
 * of top_k distinct popularity ranks drawn once per engine from the
 * seed.  Row t of a pass's layer takes the table row picked by a hash of
 * the seed, the pass, the layer and t, then the layer's rotation: still a
 * function of those alone, so every rank and every placement routes a row
 * alike, at one hash and top_k look-ups a row instead of top_k draws with
 * rejection of repeats (a DEP8 Qwen3-235B serving row routes ~6e6 rows
 * through 94 layers).  Uniform, the table (2^11 rows) is seeded shuffles
 * of the experts cut into rows of top_k, so (top_k dividing E) every
 * expert is in exactly top_k / E of its rows and its count over R rows is
 * Binomial(R, top_k / E), as per-row draws give it.  Skewed, the table's
 * 2^15 rows are per-row draws, so each expert's share is its probability
 * to within sampling noise (relative sqrt((1 - p) / (2^15 p)): 2 % at
 * p = 1/16).  Either way a row's experts are distinct, and how many of
 * them one expert-parallel group holds (hence the rows each group
 * receives) follows the table's rows: the per-row draw's distribution
 * within the table's sampling noise (a group's share of rows, about 2/3
 * for 16 of 128 experts at top_k 8: 1.6 % relative at 2^11 rows). */
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

/* The table's rows, 2^bits (the module's header): uniform, the shuffles
 * make every expert's share exact at any size, so the table is small
 * enough to stay in a core's cache (2^11 rows of top_k 8: 64 KB; a random
 * row of a larger one is a cache miss that costs more than the row's
 * counting); skewed, its size bounds the shares' sampling noise. */
#define ROUTE_TABLE_BITS_UNIFORM 11
#define ROUTE_TABLE_BITS_SKEWED 15

/* A uniform double in [0, 1) from the hash h. */
static double unit(uint64_t h)
{
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

/* One row of k distinct popularity ranks under the Zipf weights (cdf of
 * E ranks, total its last), drawn from the hash h: a repeat is drawn
 * again; past 64 tries (a steep skew) the most popular rank not yet
 * picked. */
static void skewed_row(const double *cdf, uint32_t E, uint32_t k, uint64_t h,
                       uint32_t *sel)
{
    double total = cdf[E - 1];
    for (uint32_t j = 0; j < k; j++) {
        uint32_t x = E;
        for (int tries = 0; tries < 64 && x == E; tries++) {
            h = mix(h);
            double u = unit(h) * total;
            uint32_t lo = 0, hi = E - 1; /* the first r with cdf[r] > u */
            while (lo < hi) {
                uint32_t mid = (lo + hi) / 2;
                if (cdf[mid] > u)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            x = picked(sel, j, lo) ? E : lo;
        }
        for (uint32_t r = 0; x == E && r < E; r++)
            if (!picked(sel, j, r))
                x = r;
        sel[j] = x;
    }
}

/* Uniform rows: seeded shuffles of the E ranks (Fisher-Yates), each cut
 * into E / k rows of k. */
static void uniform_rows(uint32_t E, uint32_t k, uint64_t key, uint64_t rows,
                         uint32_t *tab)
{
    uint32_t *perm = nvl_engine_moe_alloc(E, sizeof *perm);
    uint32_t per = E / k;
    for (uint64_t row = 0, b = 0; row < rows; b++) {
        for (uint32_t x = 0; x < E; x++)
            perm[x] = x;
        uint64_t h = mix(key + b);
        for (uint32_t x = E - 1; x > 0; x--) {
            h = mix(h);
            uint32_t y = (uint32_t)(h % ((uint64_t)x + 1));
            uint32_t v = perm[x];
            perm[x] = perm[y];
            perm[y] = v;
        }
        for (uint32_t i = 0; i < per && row < rows; i++, row++)
            memcpy(tab + row * k, perm + (size_t)i * k, k * sizeof *tab);
    }
    free(perm);
}

/* The engine's routing table (the module's header), built on first use;
 * *bits: log2 of its rows. */
static const uint32_t *route_table(nvl_engine_t *e, uint32_t *bits)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    double s = e->opts.route_skew;
    *bits = s > 0 ? ROUTE_TABLE_BITS_SKEWED : ROUTE_TABLE_BITS_UNIFORM;
    if (e->route_table != NULL)
        return e->route_table;
    uint64_t rows = (uint64_t)1 << *bits;
    uint32_t *tab = nvl_engine_moe_alloc(rows * k, sizeof *tab);
    uint64_t key = mix(e->opts.seed ^ 0x726f757465746162ull); /* "routetab" */
    if (s > 0) {
        double *cdf = nvl_engine_moe_alloc(E, sizeof *cdf);
        double total = 0;
        for (uint32_t r = 0; r < E; r++)
            cdf[r] = total += pow((double)(r + 1), -s);
        for (uint64_t row = 0; row < rows; row++)
            skewed_row(cdf, E, k, mix(key + row), tab + row * k);
        free(cdf);
    } else {
        uniform_rows(E, k, key, rows, tab);
    }
    e->route_table = tab;
    return tab;
}

/* Timing mode's hash of a pass's layer li of this stage (layer0 + li of
 * the model), and the layer's rotation. */
typedef struct {
    const uint32_t *tab;
    uint32_t bits;
    uint64_t key;
    uint32_t rot, E, k;
} seeded_t;

static seeded_t seeded(nvl_engine_t *e, uint32_t li)
{
    uint32_t E = e->cfg.num_experts, bits;
    const uint32_t *tab = route_table(e, &bits);
    li += e->layer0;
    return (seeded_t){
        .tab = tab, .bits = bits,
        .key = mix(e->opts.seed ^ mix(((uint64_t)e->pass << 32) | li)),
        .rot = (uint32_t)(mix(e->opts.seed ^ li) % E), .E = E,
        .k = e->cfg.top_k};
}

/* Row `row` of the pass's layer: its table row, rotated (sel: k ids). */
static void seeded_row(const seeded_t *z, uint64_t row, uint32_t *sel)
{
    const uint32_t *r =
        z->tab + (mix(z->key + row) >> (64 - z->bits)) * z->k;
    for (uint32_t j = 0; j < z->k; j++) {
        uint32_t x = r[j] + z->rot;
        sel[j] = x < z->E ? x : x - z->E; /* mod E */
    }
}

/* Adds row t's k experts (sel) to the counts (nvl_engine_moe_count's;
 * last[g]: the last row + 1 that reached group g). */
static void count_row(const uint32_t *sel, uint32_t k, uint64_t t,
                      const nvl_moe_groups_t *g, uint64_t *last)
{
    for (uint32_t j = 0; j < k; j++) {
        uint32_t x = sel[j], gx = g->group[x];
        g->count[x]++;
        g->pairs[gx]++;
        if (last[gx] != t + 1) {
            last[gx] = t + 1;
            g->rows[gx]++;
        }
    }
}

void nvl_engine_moe_count(const nvl_engine_t *e, const uint32_t *ids,
                          uint64_t M, const nvl_moe_groups_t *g)
{
    uint32_t k = e->cfg.top_k;
    uint64_t *last = nvl_engine_moe_alloc(g->n, sizeof *last);
    for (uint64_t t = 0; t < M; t++)
        count_row(ids + t * k, k, t, g, last);
    free(last);
}

void nvl_engine_moe_route_count(nvl_engine_t *e, uint32_t li, uint64_t row0,
                                uint64_t M, const nvl_moe_groups_t *g)
{
    seeded_t z = seeded(e, li);
    uint64_t *last = nvl_engine_moe_alloc(g->n, sizeof *last);
    uint32_t *sel = nvl_engine_moe_alloc(z.k, sizeof *sel);
    for (uint64_t t = 0; t < M; t++) {
        seeded_row(&z, row0 + t, sel);
        count_row(sel, z.k, t, g, last);
    }
    free(sel);
    free(last);
}

/* Data mode: routes each token (ids and weights, M x top_k). */
static void route(const nvl_engine_t *e, const nvl_layer_weights_t *l,
                  const float *h, uint64_t M, uint32_t *ids, float *w)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    uint64_t hid = e->cfg.hidden;
    float *p = nvl_engine_moe_alloc(M * E, sizeof *p);
    /* gpt-oss's router has a bias; its softmax over the top k equals this
     * softmax renormalised over them (norm_topk_prob) */
    nvl_engine_linear(h, l->router, l->router_bias, p, M, E, hid);
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
void nvl_engine_moe_route(nvl_engine_t *e, uint32_t li, uint64_t row0,
                       uint64_t M, const float *h, uint32_t *ids, float *w)
{
    if (e->data) {
        route(e, &e->lw[li], h, M, ids, w);
        return;
    }
    seeded_t z = seeded(e, li);
    for (uint64_t t = 0; t < M; t++)
        seeded_row(&z, row0 + t, ids + t * z.k);
}

