/* Expert parallelism of a mixture-of-experts layer (nvl_engine_moe_ep;
 * moe.c has the experts' maths and kernels, moe_route.c the routing):
 * the experts are spread over ep groups of world / ep ranks (each expert
 * cut over its group's ranks as moe.c cuts it over the job's).  A rank routes its own rows, tells every rank how many rows
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
 * for it before the combine: that wait is the cost of imbalance.  Timing
 * mode keeps that bookkeeping once a pass for every expert-parallel layer
 * (moe_book.c: the seeded routing makes each layer's numbers known at the
 * pass's start): a small pass's every rank routes every member's rows
 * (their rows are known: attention.c's split, or the caller's under
 * data-parallel attention) and exchanges nothing; a large one exchanges
 * each rank's counts. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "moe_agrs.h"
#include "moe_ep.h"
#include "nvlemu/runtime.h"

static float *at(float *buf, uint64_t off) { return buf ? buf + off : NULL; }

/* TensorRT-LLM's fused_moe op (cpp/tensorrt_llm/thop/moeOp.cpp) takes a
 * workspace from PyTorch's allocator for every call, sized by
 * CutlassMoeFCRunner::getWorkspaceDeviceBufferSizes
 * (cpp/tensorrt_llm/kernels/cutlass_kernels/moe_gemm/moe_kernels.cu)
 * for x = top_k N expanded rows of the call's N rows, whichever experts
 * this rank holds (min-latency mode aside):
 *
 *   inputs  = max(permuted rows x h a, FC2's output x h 2, FC1's x I a)
 *   outputs = max(SwiGLU's input x 2I 2, FC2's output x h 2, FC1's x I a)
 *
 * (h hidden, I this rank's expert width, a the experts' input bytes a
 * value, 2: the bf16 GEMM outputs; the overlapped buffers of that
 * function), and five int32 or fp32 maps a row (the source and permuted
 * ids and experts, the final scales) and moeOp.cpp's source-to-dest map.
 * The memory profile that sizes the KV cache (KvCacheCreator.
 * estimate_max_tokens, tensorrt_llm/_torch/pyexecutor/_util.py) runs a
 * step of max_num_tokens on every rank and takes the peak, so under
 * attention DP the call's N is every rank's rows (the allgather). */
double nvl_engine_moe_runner_bytes(const nvl_engine_t *e, double rows)
{
    const nvl_model_config_t *c = &e->cfg;
    int32_t L = -1;
    for (uint32_t i = 0; i < e->layers && L < 0; i++)
        if (nvl_engine_layer_is_moe(e, i))
            L = (int32_t)i;
    if (L < 0 || rows <= 0)
        return 0;
    double n = nvl_ep_allgather(e) ? (double)nvl_comm_size(e->tp) : 1.0;
    double N = rows * n, x = (double)c->top_k * N, h = (double)c->hidden;
    double I = (double)e->shard.moe_intermediate.count;
    double a = nvl_engine_moe_act_bits(e, L) / 8.0;
    double in = x * fmax(fmax(h * a, h * 2.0), I * a);
    double out = x * fmax(fmax(2.0 * I * 2.0, h * 2.0), I * a);
    return N * h * (a + 2.0) + in + out + x * 6.0 * 4.0;
}

/* The run's all-to-all implementation for this pass. */
static nvl_a2a_t a2a_of(const nvl_engine_t *e)
{
    return e->opts.a2a_onesided ? nvl_ep_onesided_mode(e) : NVL_A2A_NCCL;
}

/* One all-to-all of rows: to[d] rows of `width` floats to member d (from
 * send at sofs[d]) and from[s] rows from member s (into recv at rofs[s]);
 * the own block is copied.  Accounted as `name` (x: which of the layer's
 * exchanges; its agreed time counted by nvl_engine_account_ep, now or
 * when a deferred pass settles); adds the bytes this rank sent to
 * *bytes. */
static nvl_status_t exchange(nvl_engine_t *e, const char *name, int32_t L,
                             nvl_ep_xchg_t x, float *send, const uint64_t *to,
                             const uint64_t *sofs, float *recv,
                             const uint64_t *from, const uint64_t *rofs,
                             uint64_t width, const double *wire_out,
                             const double *wire_in, double *bytes)
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
    nvl_engine_coll_done_ep(e, name, L, entry, &info, x);
    *bytes += sent * (double)nvl_dtype_size(NVL_DT_BF16); /* timed as bf16 */
    return NVL_OK;
}

/* The other implementation's dispatch and combine, the group's largest
 * (one small MPI_Allreduce, bookkeeping as ep_count's; `agreed`: already
 * agreed for the pass, timing mode's book). */
static void ep_alt_predict(nvl_engine_t *e, nvl_ep_layer_t *s,
                           const int64_t *agreed)
{
    int64_t t[2];
    bool usable = nvl_ep_alt_local(e, s, t);
    if (usable && agreed != NULL)
        t[0] = agreed[0], t[1] = agreed[1];
    else if (usable)
        MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_INT64_T, MPI_MAX,
                      nvl_comm_mpi(e->tp));
    e->cur.a2a_alt_usable = usable;
    e->cur.dispatch_alt_ps += t[0];
    e->cur.combine_alt_ps += t[1];
}

/* What every rank tells every other: the rows it will send it, and its
 * tokens per expert (summed: every expert's load over the job). */
static void ep_count_exchange(nvl_engine_t *e, nvl_ep_layer_t *s)
{
    int n = s->n;
    uint32_t E = e->cfg.num_experts;
    s->count = nvl_engine_moe_alloc(E, sizeof *s->count);
    MPI_Comm mpi = nvl_comm_mpi(e->tp);
    /* rows and (row, expert) pairs to each rank, in one exchange */
    uint64_t *two = nvl_engine_moe_alloc((uint64_t)n * 4, sizeof *two);
    for (int r = 0; r < n; r++)
        two[2 * r] = s->to[r], two[2 * r + 1] = s->pto[r];
    MPI_Alltoall(two, 2, MPI_UINT64_T, two + 2 * n, 2, MPI_UINT64_T, mpi);
    for (int r = 0; r < n; r++)
        s->from[r] = two[2 * n + 2 * r], s->pfrom[r] = two[2 * n + 2 * r + 1];
    free(two);
    MPI_Allreduce(s->mine, s->count, (int)E, MPI_UINT64_T, MPI_SUM, mpi);
}

/* With the counts known: the offsets of the exchanges and the pass's
 * load numbers (agreed_alt: ep_alt_predict's). */
static void ep_count(nvl_engine_t *e, nvl_ep_layer_t *s, const int64_t *agreed_alt)
{
    int n = s->n, etp = e->shard.etp;
    uint32_t E = e->cfg.num_experts;
    nvl_range_t held = e->shard.experts;
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
    ep_alt_predict(e, s, agreed_alt);
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
                                nvl_ep_layer_t *s)
{
    uint64_t hid = s->hid, pay = s->pay;
    uint32_t k = s->k;
    if (e->data) {
        s->sbuf = nvl_engine_moe_alloc(s->nsend * pay, sizeof *s->sbuf);
        s->rbuf = nvl_engine_moe_alloc(s->nrecv * pay, sizeof *s->rbuf);
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
    return exchange(e, "moe_dispatch", L, NVL_EP_XCHG_DISPATCH, s->sbuf,
                    s->to, s->sofs, s->rbuf, s->from, s->rofs, pay, s->wsend,
                    s->wrecv, &e->cur.dispatch_bytes);
}

/* The experts this rank holds, over the rows it received. */
static void ep_compute(nvl_engine_t *e, uint32_t li, nvl_ep_layer_t *s)
{
    nvl_range_t held = e->shard.experts;
    uint64_t hid = s->hid, pay = s->pay;
    uint32_t k = s->k;
    uint64_t *held_count = nvl_engine_moe_alloc(held.count, sizeof *held_count);
    for (uint32_t i = 0; i < held.count; i++)
        held_count[i] = s->count[held.first + i];
    if (e->data) {
        s->xin = nvl_engine_moe_alloc(s->nrecv * hid, sizeof *s->xin);
        s->win = nvl_engine_moe_alloc(s->nrecv * k, sizeof *s->win);
        s->idin = nvl_engine_moe_alloc(s->nrecv * k, sizeof *s->idin);
        for (uint64_t r = 0; r < s->nrecv; r++) {
            const float *p = s->rbuf + r * pay;
            memcpy(s->xin + r * hid, p, hid * sizeof *s->xin);
            for (uint32_t j = 0; j < k; j++) {
                s->idin[r * k + j] = (uint32_t)p[hid + j];
                s->win[r * k + j] = p[hid + k + j];
            }
        }
        nvl_engine_moe_compute(e, li, s->xin, s->xin, s->nrecv, s->idin,
                               s->win);
    }
    nvl_engine_moe_expert_kernels(e, (int32_t)li, held_count, s->nrecv,
                                  false);
    free(held_count);
}

/* Combine: the outputs back to the rows' ranks, summed there in rank
 * order into h. */
static nvl_status_t ep_combine(nvl_engine_t *e, int32_t L, float *h,
                               nvl_ep_layer_t *s)
{
    uint64_t hid = s->hid;
    if (e->data)
        s->back = nvl_engine_moe_alloc(s->nsend * hid, sizeof *s->back);
    nvl_status_t st = exchange(e, "moe_combine", L, NVL_EP_XCHG_COMBINE,
                               s->xin, s->from, s->rofs, s->back, s->to,
                               s->sofs, hid, s->wrecv, s->wsend,
                               &e->cur.combine_bytes);
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

/* The layer by allgather and reduce-scatter (moe_agrs.c): every rank's
 * rows, their most and their sum. */
static nvl_status_t ep_agrs(nvl_engine_t *e, uint32_t li, nvl_ep_layer_t *s,
                            float *h)
{
    nvl_range_t held = e->shard.experts;
    uint64_t P = 0, S = 0;
    for (int r = 0; r < s->n; r++) {
        P = s->from[r] > P ? s->from[r] : P;
        S += s->from[r];
    }
    uint64_t *held_count =
        nvl_engine_moe_alloc(held.count, sizeof *held_count);
    for (uint32_t i = 0; i < held.count; i++)
        held_count[i] = s->count[held.first + i];
    nvl_moe_agrs_t a = {.R = s->R, .P = P, .S = S, .ids = s->ids,
                        .w = s->w, .held_count = held_count};
    nvl_status_t st = nvl_engine_moe_agrs(e, li, &a, h);
    free(held_count);
    return st;
}

nvl_status_t nvl_engine_moe_ep(nvl_engine_t *e, uint32_t li, uint64_t R,
                               uint64_t row0, float *h)
{
    const nvl_model_config_t *c = &e->cfg;
    int32_t L = (int32_t)li;
    nvl_pass_stats_t before = e->cur;
    nvl_ep_layer_t s = {.R = R, .hid = c->hidden, .k = c->top_k,
                    .pay = c->hidden + 2 * (uint64_t)c->top_k,
                    .n = nvl_comm_size(e->tp)};
    if (e->data) {
        nvl_ep_route_counts(e, li, row0, h, &s);
        nvl_engine_moe_router_kernels(e, L, R);
        ep_count_exchange(e, &s);
        ep_count(e, &s, NULL);
    } else {
        nvl_ep_book_pass(e, R, row0);
        nvl_engine_moe_router_kernels(e, L, R);
        ep_count(e, &s, nvl_ep_from_book(e, li, &s));
    }
    nvl_status_t st = NVL_OK;
    if (nvl_ep_allgather(e)) {
        st = ep_agrs(e, li, &s, h);
    } else {
        st = ep_dispatch(e, L, h, &s);
        if (st == NVL_OK) {
            ep_compute(e, li, &s);
            st = ep_combine(e, L, h, &s);
        }
    }
    nvl_engine_moe_layer_done(e, li, &before);
    nvl_ep_free(&s);
    return st;
}
