/* The mixture-of-experts MLP of a Qwen3-MoE layer:
 *
 *   p = softmax(h W_router^T)              [M, experts], float32; the
 *                                          router is replicated
 *   S = the top_k experts of p per token;  w = p_S (/ sum p_S when
 *                                          norm_topk_prob)
 *   y = sum_{x in S} w_x (silu(h W_g,x^T) * h W_u,x^T) W_d,x^T
 *
 * as transformers' Qwen3MoeSparseMoeBlock computes it (experts in index
 * order, each adding its weighted output).
 *
 * Experts tensor-parallel (nvl_engine_moe): a rank holds rows [moe
 * intermediate shard] of each expert's gate and up and those columns of
 * its down, so its y is a partial sum that the MLP's one allreduce
 * completes, as for the dense MLP.
 *
 * Expert parallelism (nvl_engine_moe_ep): the experts are spread over
 * ep groups of world / ep ranks (each expert cut over its group's ranks
 * as above).  A rank routes its own rows, tells every rank how many rows
 * it will send it (an MPI_Alltoall) and how many tokens each of its
 * experts gets (an MPI_Allreduce) -- bookkeeping the GPUs' dispatch
 * kernels do in their layout step, not timed apart -- sends each row once to every rank of
 * each group holding one of its experts, with its expert ids and weights
 * (dispatch: hidden + 2 top_k values, timed as bf16), computes the
 * experts it holds for the rows it received, returns each row's weighted
 * sum over them (combine: hidden values), and adds what comes back in
 * rank order.  The all-to-alls are groups of sends and receives
 * (nvl_group_*): their time follows the busiest GPU's ports, so a rank
 * whose experts are hot receives and computes more, and the others wait
 * for it before the combine: that wait is the cost of imbalance.
 *
 * Kernels, as fused-MoE serving kernels issue them:
 *   router           matmul (M, experts, hidden), bf16 weights
 *   topk_softmax     reads the M x experts logits, writes ids and weights
 *   experts_gate_up  grouped GEMM: expert x with t_x tokens costs
 *                    matmul(t_x, 2 x shard, hidden); the kernel's overhead
 *                    once (nvl_cost_grouped_matmul); idle experts' weights
 *                    are not read
 *   silu_mul         over the (token, expert) pairs' rows of the shard
 *   experts_down     grouped GEMM: matmul(t_x, hidden, shard) per expert
 *   moe_sum          the weighted sum of each row's pairs
 *   combine_sum      (expert parallelism) the returned rows added up
 * (--stack torch: silu and mul apart, on strided views).  The
 * token counts t_x come from the real routing in data mode and from a
 * seeded one in timing mode: each token picks top_k distinct experts,
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

/* Timing mode, experts tensor-parallel: above this many (row, expert)
 * draws per layer the ranks share the drawing. */
#define NVL_MOE_SHARED_DRAWS 65536

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

/* Timing mode: a seeded routing of rows row0 .. row0 + M - 1 of the
 * pass (ids: M x top_k), the same on every rank and for every placement
 * (a function of seed, pass, layer and row). */
static void seeded_route(const nvl_engine_t *e, uint32_t li, uint64_t row0,
                         uint64_t M, uint32_t *ids)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    double s = e->opts.route_skew;
    double *cdf = alloc_or_abort(E, sizeof *cdf);
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
                x = (lo + rot) % E;
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
        }
        if (e->cfg.norm_topk_prob)
            for (uint32_t j = 0; j < k; j++)
                w[t * k + j] /= top;
    }
    free(p);
}

/* This rank's routing of its M rows (ids, and weights in data mode). */
static void route_rows(const nvl_engine_t *e, uint32_t li, uint64_t row0,
                       uint64_t M, const float *h, uint32_t *ids, float *w)
{
    if (e->data)
        route(e, e->lw[li].router, h, M, ids, w);
    else
        seeded_route(e, li, row0, M, ids);
}

/* Data mode: out = the sum over the experts this rank holds that each row
 * chose, in expert order, of w_x (silu(in W_g,x^T) * in W_u,x^T) W_d,x^T
 * with this rank's slice of each (in and out may be the same). */
static void experts_compute(const nvl_engine_t *e,
                            const nvl_layer_weights_t *l, const float *in,
                            float *out, uint64_t M, const uint32_t *ids,
                            const float *w)
{
    uint32_t k = e->cfg.top_k;
    nvl_range_t held = e->shard.experts;
    uint64_t hid = e->cfg.hidden, sn = e->shard.moe_intermediate.count;
    float *xs = alloc_or_abort(M * hid, sizeof *xs);
    float *g = alloc_or_abort(M * sn, sizeof *g);
    float *u = alloc_or_abort(M * sn, sizeof *u);
    float *d = alloc_or_abort(M * hid, sizeof *d);
    float *y = alloc_or_abort(M * hid, sizeof *y);
    uint64_t *row = alloc_or_abort(M, sizeof *row);
    float *wt = alloc_or_abort(M, sizeof *wt);
    for (uint32_t i = 0; i < held.count; i++) {
        uint32_t x = held.first + i;
        uint64_t n = 0;
        for (uint64_t t = 0; t < M; t++)
            for (uint32_t j = 0; j < k; j++)
                if (ids[t * k + j] == x) {
                    memcpy(xs + n * hid, in + t * hid, hid * sizeof *xs);
                    row[n] = t;
                    wt[n++] = w[t * k + j];
                }
        if (n == 0 || sn == 0)
            continue;
        nvl_engine_linear(xs, l->eg + i * sn * hid, NULL, g, n, sn, hid);
        nvl_engine_linear(xs, l->eu + i * sn * hid, NULL, u, n, sn, hid);
        for (uint64_t r = 0; r < n * sn; r++)
            g[r] = g[r] / (1.0f + expf(-g[r])) * u[r];
        nvl_engine_linear(g, l->ed + i * hid * sn, NULL, d, n, hid, sn);
        for (uint64_t r = 0; r < n; r++)
            for (uint64_t c = 0; c < hid; c++)
                y[row[r] * hid + c] += d[r * hid + c] * wt[r];
    }
    memcpy(out, y, M * hid * sizeof *out);
    free(wt);
    free(row);
    free(y);
    free(d);
    free(u);
    free(g);
    free(xs);
}

/* The router and top-k kernels over M rows. */
static void router_kernels(nvl_engine_t *e, int32_t L, uint64_t M)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    if (M == 0)
        return;
    nvl_cost_cfg_t router = e->opts.cost;
    router.weight_dtype = NVL_WDT_BF16;
    nvl_engine_kernel(e, "router", NVL_PART_GEMM, L,
                      nvl_cost_matmul(&router, M, E, e->cfg.hidden));
    nvl_engine_elementwise(e, "topk_softmax", L,
                           (double)M * E + 2.0 * (double)M * k);
}

/* The expert kernels of this rank: count[i] tokens for its i-th expert,
 * over `rows` distinct rows. */
static void expert_kernels(nvl_engine_t *e, int32_t L, const uint64_t *count,
                           uint64_t rows)
{
    uint32_t ne = e->shard.experts.count;
    uint64_t hid = e->cfg.hidden, sn = e->shard.moe_intermediate.count;
    double pairs = 0;
    for (uint32_t i = 0; i < ne; i++)
        pairs += (double)count[i];
    const nvl_cost_cfg_t *cc = &e->opts.cost;
    nvl_engine_step(e, NVL_STEP_EXPERTS_GATE_UP, L, pairs, count);
    nvl_engine_kernel(e, "experts_down", NVL_PART_GEMM, L,
                      nvl_cost_grouped_matmul(cc, ne, count, hid, sn));
    nvl_engine_elementwise(e, "moe_sum", L,
                           pairs * (double)hid + (double)rows * (double)hid);
}

/* Adds what layer li added to the pass's MoE numbers since `before` to
 * the layer's decode totals (decode passes only). */
static void layer_done(nvl_engine_t *e, uint32_t li,
                       const nvl_pass_stats_t *before)
{
    if (e->pass < 1)
        return;
    const nvl_pass_stats_t *c = &e->cur;
    nvl_moe_layer_stats_t *l = &e->moe_decode[li];
    l->dispatch_ps += (double)(c->dispatch_ps - before->dispatch_ps);
    l->combine_ps += (double)(c->combine_ps - before->combine_ps);
    l->dispatch_bytes += c->dispatch_bytes - before->dispatch_bytes;
    l->combine_bytes += c->combine_bytes - before->combine_bytes;
    l->expert_pairs_max += c->expert_pairs_max - before->expert_pairs_max;
    l->expert_pairs_mean += c->expert_pairs_mean - before->expert_pairs_mean;
    l->combine_wait_ps +=
        (double)(c->combine_wait_ps - before->combine_wait_ps);
    l->dispatch_alt_ps +=
        (double)(c->dispatch_alt_ps - before->dispatch_alt_ps);
    l->combine_alt_ps += (double)(c->combine_alt_ps - before->combine_alt_ps);
}

void nvl_engine_moe(nvl_engine_t *e, uint32_t li, uint64_t M, float *h)
{
    const nvl_model_config_t *c = &e->cfg;
    uint32_t E = c->num_experts, k = c->top_k;
    int32_t L = (int32_t)li;
    nvl_pass_stats_t before = e->cur;
    uint64_t *count = alloc_or_abort(E, sizeof *count);
    /* a long timing-mode pass draws its seeded routing a share of rows per
     * rank and sums the counts (the same counts, less host time) */
    int n = nvl_comm_size(e->tp);
    bool share = !e->data && n > 1 && M * k > NVL_MOE_SHARED_DRAWS;
    nvl_range_t rows = share ? nvl_range_split((uint32_t)M, n,
                                               nvl_comm_rank(e->tp))
                             : (nvl_range_t){0, (uint32_t)M};
    uint32_t *ids = alloc_or_abort((uint64_t)rows.count * k, sizeof *ids);
    float *w = alloc_or_abort((uint64_t)rows.count * k, sizeof *w);
    route_rows(e, li, rows.first, rows.count, h, ids, w);
    for (uint64_t i = 0; i < (uint64_t)rows.count * k; i++)
        count[ids[i]]++;
    if (share)
        MPI_Allreduce(MPI_IN_PLACE, count, (int)E, MPI_UINT64_T, MPI_SUM,
                      nvl_comm_mpi(e->tp));
    if (e->data)
        experts_compute(e, &e->lw[li], h, h, M, ids, w);
    router_kernels(e, L, M);
    expert_kernels(e, L, count, M);
    /* every rank computes a slice of every pair */
    e->cur.moe_layers++;
    e->cur.expert_pairs += (double)M * k;
    e->cur.expert_pairs_max += (double)M * k;
    e->cur.expert_pairs_mean += (double)M * k;
    layer_done(e, li, &before);
    free(w);
    free(ids);
    free(count);
}

bool nvl_engine_moe_is_ep(const nvl_engine_t *e, uint32_t li)
{
    return nvl_model_layer_is_moe(&e->cfg, li) &&
           nvl_comm_size(e->tp) > 1 &&
           (e->shard.ep > 1 || e->shard.attn_dp);
}

/* The expert group holding expert x (groups hold nvl_range_split shares). */
static int expert_group(const nvl_engine_t *e, uint32_t x)
{
    uint32_t E = e->cfg.num_experts, ep = (uint32_t)e->shard.ep;
    uint32_t base = E / ep, extra = E % ep;
    if (x < extra * (base + 1))
        return (int)(x / (base + 1));
    return (int)(extra + (x - extra * (base + 1)) / base);
}

static float *at(float *buf, uint64_t off) { return buf ? buf + off : NULL; }

/* The one-sided mode of this pass: low-latency in decode steps, high-
 * throughput in the prefill (SGLang's --deepep-mode auto,
 * DeepEPMode.resolve: normal for extend batches, low_latency for
 * decode). */
static nvl_a2a_t onesided_mode(const nvl_engine_t *e)
{
    return e->pass >= 1 ? NVL_A2A_ONESIDED_LL : NVL_A2A_ONESIDED_HT;
}

/* The run's all-to-all implementation for this pass. */
static nvl_a2a_t a2a_of(const nvl_engine_t *e)
{
    return e->opts.a2a_onesided ? onesided_mode(e) : NVL_A2A_NCCL;
}

/* One all-to-all of rows: to[d] rows of `width` floats to member d (from
 * send at sofs[d]) and from[s] rows from member s (into recv at rofs[s]);
 * the own block is copied.  Accounted as `name`; adds its time and the
 * bytes this rank sent to *ps and *bytes, the wait before it to *wait. */
static nvl_status_t exchange(nvl_engine_t *e, const char *name, int32_t L,
                             float *send, const uint64_t *to,
                             const uint64_t *sofs, float *recv,
                             const uint64_t *from, const uint64_t *rofs,
                             uint64_t width, const double *wire_out,
                             const double *wire_in, int64_t *ps,
                             double *bytes, int64_t *wait)
{
    nvl_comm_t *c = e->tp;
    int n = nvl_comm_size(c), me = nvl_comm_rank(c);
    if (e->data && to[me] > 0)
        memcpy(recv + rofs[me] * width, send + sofs[me] * width,
               to[me] * width * sizeof *recv);
    int64_t entry = nvl_engine_coll_begin(e, L);
    nvl_status_t st = nvl_group_start(c);
    double sent = 0;
    for (int d = 0; d < n && st == NVL_OK; d++)
        if (d != me && to[d] > 0) {
            st = nvl_send(c, at(send, sofs[d] * width), to[d] * width,
                          NVL_DT_F32, d);
            sent += (double)(to[d] * width);
        }
    for (int s = 0; s < n && st == NVL_OK; s++)
        if (s != me && from[s] > 0)
            st = nvl_recv(c, at(recv, rofs[s] * width), from[s] * width,
                          NVL_DT_F32, s);
    nvl_coll_info_t info;
    nvl_a2a_t a2a = a2a_of(e);
    bool ll = a2a == NVL_A2A_ONESIDED_LL;
    nvl_status_t end = nvl_group_end_a2a(c, a2a, ll ? wire_out : NULL,
                                         ll ? wire_in : NULL, &info);
    if (st == NVL_OK)
        st = end;
    if (st != NVL_OK)
        return st;
    nvl_engine_coll_done(e, name, L, entry, &info);
    *ps += info.time_ps;
    *bytes += sent * (double)nvl_dtype_size(NVL_DT_BF16); /* timed as bf16 */
    if (wait != NULL && info.start_ps > entry)
        *wait += info.start_ps - entry;
    return NVL_OK;
}

/* One expert-parallel MoE layer on this rank: its rows' routing and the
 * plan and buffers of the two all-to-alls. */
typedef struct {
    uint64_t R, hid, pay;          /* rows; values per row; dispatched */
    uint32_t k;                    /* experts per row */
    int n;                         /* ranks */
    uint32_t *ids;                 /* R x k: the rows' experts */
    float *w;                      /* R x k: their weights */
    unsigned char *dest;           /* R x n: row t goes to rank d */
    uint64_t *to, *sofs;           /* rows sent to each rank, and where */
    uint64_t *from, *rofs;         /* rows received from each, and where */
    uint64_t *pto, *pfrom;         /* (row, expert) pairs to / from each */
    double *wsend, *wrecv;         /* pairs / rows to and from each rank:
                                      the low-latency mode's wire factors
                                      (one message per pair) */
    uint64_t nsend, nrecv;
    uint64_t *mine;                /* tokens per expert, this rank's rows */
    uint64_t *count;               /* tokens per expert, the whole job */
    float *sbuf, *rbuf;            /* dispatch (data mode) */
    float *xin, *win, *back;       /* received rows, weights, outputs */
    uint32_t *idin;
} ep_layer_t;

static void ep_free(ep_layer_t *s)
{
    free(s->ids);
    free(s->w);
    free(s->dest);
    free(s->to);
    free(s->wsend);
    free(s->mine);
    free(s->count);
    free(s->sbuf);
    free(s->rbuf);
    free(s->xin);
    free(s->win);
    free(s->back);
    free(s->idin);
}

/* Routes this rank's R rows; row t goes to every rank of each group
 * holding one of its experts, once. */
static void ep_route(nvl_engine_t *e, uint32_t li, uint64_t row0,
                     const float *h, ep_layer_t *s)
{
    int n = s->n, etp = e->shard.etp;
    uint32_t k = s->k, E = e->cfg.num_experts;
    s->ids = alloc_or_abort(s->R * k, sizeof *s->ids);
    s->w = alloc_or_abort(s->R * k, sizeof *s->w);
    route_rows(e, li, row0, s->R, h, s->ids, s->w);
    router_kernels(e, (int32_t)li, s->R);
    s->dest = alloc_or_abort(s->R * (uint64_t)n, 1);
    s->to = alloc_or_abort((uint64_t)n * 6, sizeof *s->to);
    s->sofs = s->to + n, s->from = s->to + 2 * n, s->rofs = s->to + 3 * n;
    s->pto = s->to + 4 * n, s->pfrom = s->to + 5 * n;
    s->mine = alloc_or_abort(E, sizeof *s->mine);
    for (uint64_t t = 0; t < s->R; t++)
        for (uint32_t j = 0; j < k; j++) {
            uint32_t x = s->ids[t * k + j];
            int g = expert_group(e, x);
            s->mine[x]++;
            for (int i = 0; i < etp; i++) {
                unsigned char *d = &s->dest[t * (uint64_t)n + (uint64_t)(g * etp + i)];
                s->pto[g * etp + i]++;
                if (!*d) {
                    *d = 1;
                    s->to[g * etp + i]++;
                }
            }
        }
}

/* The wire factors of the low-latency mode, and the dispatch and combine
 * as the implementation the run does not use would time them (the
 * group's largest: one small MPI_Allreduce, bookkeeping as ep_count's). */
static void ep_alt_predict(nvl_engine_t *e, ep_layer_t *s)
{
    int n = s->n;
    s->wsend = alloc_or_abort((uint64_t)n * 6, sizeof *s->wsend);
    s->wrecv = s->wsend + n;
    double *dsend = s->wsend + 2 * n, *drecv = s->wsend + 3 * n;
    double *csend = s->wsend + 4 * n, *crecv = s->wsend + 5 * n;
    double esz = (double)nvl_dtype_size(NVL_DT_BF16); /* timed as bf16 */
    for (int r = 0; r < n; r++) {
        s->wsend[r] = s->to[r] ? (double)s->pto[r] / (double)s->to[r] : 1;
        s->wrecv[r] =
            s->from[r] ? (double)s->pfrom[r] / (double)s->from[r] : 1;
    }
    nvl_a2a_t alt = e->opts.a2a_onesided ? NVL_A2A_NCCL : onesided_mode(e);
    bool ll = alt == NVL_A2A_ONESIDED_LL;
    for (int r = 0; r < n; r++) { /* the queued bytes, as exchange() */
        double ws = ll ? s->wsend[r] : 1, wr = ll ? s->wrecv[r] : 1;
        dsend[r] = (double)(s->to[r] * s->pay) * esz * ws;
        drecv[r] = (double)(s->from[r] * s->pay) * esz * wr;
        csend[r] = (double)(s->from[r] * s->hid) * esz * wr;
        crecv[r] = (double)(s->to[r] * s->hid) * esz * ws;
    }
    char why[256];
    int64_t t[2] = {0, 0};
    bool usable = nvl_a2a_usable(e->tp, alt, why, sizeof why);
    if (usable) {
        t[0] = nvl_a2a_predict_ps(e->tp, alt, dsend, drecv);
        t[1] = nvl_a2a_predict_ps(e->tp, alt, csend, crecv);
        MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_INT64_T, MPI_MAX,
                      nvl_comm_mpi(e->tp));
    }
    e->cur.a2a_alt_usable = usable;
    e->cur.dispatch_alt_ps += t[0];
    e->cur.combine_alt_ps += t[1];
}

/* What every rank tells every other: the rows it will send it, and its
 * tokens per expert (summed: every expert's load over the job); then the
 * offsets of the exchanges and the pass's load numbers. */
static void ep_count(nvl_engine_t *e, ep_layer_t *s)
{
    int n = s->n, etp = e->shard.etp;
    uint32_t E = e->cfg.num_experts;
    nvl_range_t held = e->shard.experts;
    s->count = alloc_or_abort(E, sizeof *s->count);
    MPI_Comm mpi = nvl_comm_mpi(e->tp);
    /* rows and (row, expert) pairs to each rank, in one exchange */
    uint64_t *two = alloc_or_abort((uint64_t)n * 4, sizeof *two);
    for (int r = 0; r < n; r++)
        two[2 * r] = s->to[r], two[2 * r + 1] = s->pto[r];
    MPI_Alltoall(two, 2, MPI_UINT64_T, two + 2 * n, 2, MPI_UINT64_T, mpi);
    for (int r = 0; r < n; r++)
        s->from[r] = two[2 * n + 2 * r], s->pfrom[r] = two[2 * n + 2 * r + 1];
    free(two);
    MPI_Allreduce(s->mine, s->count, (int)E, MPI_UINT64_T, MPI_SUM, mpi);
    for (int r = 0; r < n; r++) {
        s->sofs[r] = s->nsend;
        s->rofs[r] = s->nrecv;
        s->nsend += s->to[r];
        s->nrecv += s->from[r];
    }
    double most = 0, sum = 0;
    for (int r = 0; r < n; r++) {
        nvl_range_t gx = nvl_range_split(E, e->shard.ep, r / etp);
        double load = 0;
        for (uint32_t i = 0; i < gx.count; i++)
            load += (double)s->count[gx.first + i];
        most = load > most ? load : most;
        sum += load;
    }
    ep_alt_predict(e, s);
    double own = 0;
    for (uint32_t i = 0; i < held.count; i++)
        own += (double)s->count[held.first + i];
    e->cur.moe_layers++;
    e->cur.expert_pairs += own;
    e->cur.expert_pairs_max += most;
    e->cur.expert_pairs_mean += sum / n;
}

/* Dispatch: each row with its experts and weights to its ranks. */
static nvl_status_t ep_dispatch(nvl_engine_t *e, int32_t L, const float *h,
                                ep_layer_t *s)
{
    uint64_t hid = s->hid, pay = s->pay;
    uint32_t k = s->k;
    if (e->data) {
        s->sbuf = alloc_or_abort(s->nsend * pay, sizeof *s->sbuf);
        s->rbuf = alloc_or_abort(s->nrecv * pay, sizeof *s->rbuf);
        uint64_t at_row = 0;
        for (int d = 0; d < s->n; d++)
            for (uint64_t t = 0; t < s->R; t++)
                if (s->dest[t * (uint64_t)s->n + (uint64_t)d]) {
                    float *p = s->sbuf + at_row++ * pay;
                    memcpy(p, h + t * hid, hid * sizeof *p);
                    for (uint32_t j = 0; j < k; j++) {
                        p[hid + j] = (float)s->ids[t * k + j];
                        p[hid + k + j] = s->w[t * k + j];
                    }
                }
    }
    return exchange(e, "moe_dispatch", L, s->sbuf, s->to, s->sofs, s->rbuf,
                    s->from, s->rofs, pay, s->wsend, s->wrecv,
                    &e->cur.dispatch_ps, &e->cur.dispatch_bytes, NULL);
}

/* The experts this rank holds, over the rows it received. */
static void ep_compute(nvl_engine_t *e, uint32_t li, ep_layer_t *s)
{
    nvl_range_t held = e->shard.experts;
    uint64_t hid = s->hid, pay = s->pay;
    uint32_t k = s->k;
    uint64_t *held_count = alloc_or_abort(held.count, sizeof *held_count);
    for (uint32_t i = 0; i < held.count; i++)
        held_count[i] = s->count[held.first + i];
    if (e->data) {
        s->xin = alloc_or_abort(s->nrecv * hid, sizeof *s->xin);
        s->win = alloc_or_abort(s->nrecv * k, sizeof *s->win);
        s->idin = alloc_or_abort(s->nrecv * k, sizeof *s->idin);
        for (uint64_t r = 0; r < s->nrecv; r++) {
            const float *p = s->rbuf + r * pay;
            memcpy(s->xin + r * hid, p, hid * sizeof *s->xin);
            for (uint32_t j = 0; j < k; j++) {
                s->idin[r * k + j] = (uint32_t)p[hid + j];
                s->win[r * k + j] = p[hid + k + j];
            }
        }
        experts_compute(e, &e->lw[li], s->xin, s->xin, s->nrecv, s->idin,
                        s->win);
    }
    expert_kernels(e, (int32_t)li, held_count, s->nrecv);
    free(held_count);
}

/* Combine: the outputs back to the rows' ranks, summed there in rank
 * order into h. */
static nvl_status_t ep_combine(nvl_engine_t *e, int32_t L, float *h,
                               ep_layer_t *s)
{
    uint64_t hid = s->hid;
    if (e->data)
        s->back = alloc_or_abort(s->nsend * hid, sizeof *s->back);
    nvl_status_t st = exchange(e, "moe_combine", L, s->xin, s->from, s->rofs,
                               s->back, s->to, s->sofs, hid, s->wrecv,
                               s->wsend, &e->cur.combine_ps,
                               &e->cur.combine_bytes,
                               &e->cur.combine_wait_ps);
    if (st != NVL_OK)
        return st;
    if (e->data) {
        memset(h, 0, s->R * hid * sizeof *h);
        uint64_t at_row = 0;
        for (int d = 0; d < s->n; d++)
            for (uint64_t t = 0; t < s->R; t++)
                if (s->dest[t * (uint64_t)s->n + (uint64_t)d]) {
                    const float *p = s->back + at_row++ * hid;
                    for (uint64_t i = 0; i < hid; i++)
                        h[t * hid + i] += p[i];
                }
    }
    nvl_engine_elementwise(e, "combine_sum", L,
                           (double)(s->nsend + s->R) * (double)hid);
    return NVL_OK;
}

nvl_status_t nvl_engine_moe_ep(nvl_engine_t *e, uint32_t li, uint64_t R,
                               uint64_t row0, float *h)
{
    const nvl_model_config_t *c = &e->cfg;
    int32_t L = (int32_t)li;
    nvl_pass_stats_t before = e->cur;
    ep_layer_t s = {.R = R, .hid = c->hidden, .k = c->top_k,
                    .pay = c->hidden + 2 * (uint64_t)c->top_k,
                    .n = nvl_comm_size(e->tp)};
    ep_route(e, li, row0, h, &s);
    ep_count(e, &s);
    nvl_status_t st = ep_dispatch(e, L, h, &s);
    if (st == NVL_OK) {
        ep_compute(e, li, &s);
        st = ep_combine(e, L, h, &s);
    }
    layer_done(e, li, &before);
    ep_free(&s);
    return st;
}
