/* The numbers of an expert-parallel layer (moe_ep.h; moe_ep.c runs the
 * layer): the expert groups, each rank's rows routed and counted over
 * them, the other all-to-all implementation's times, and timing mode's
 * book of a pass.  The routing is seeded in timing mode, so the book of a
 * small pass is made by every rank routing every member's rows, with no
 * exchange; a large pass's by exchanging each rank's counts. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "moe_ep.h"
#include "nvlemu/runtime.h"

/* The expert group holding expert x (groups hold nvl_range_split shares). */
int nvl_ep_expert_group(const nvl_engine_t *e, uint32_t x)
{
    uint32_t E = e->cfg.num_experts, ep = (uint32_t)e->shard.ep;
    uint32_t base = E / ep, extra = E % ep;
    if (x < extra * (base + 1))
        return (int)(x / (base + 1));
    return (int)(extra + (x - extra * (base + 1)) / base);
}

/* The expert group of every expert (nvl_ep_expert_group), E entries. */
static uint32_t *ep_group_table(const nvl_engine_t *e)
{
    uint32_t E = e->cfg.num_experts;
    uint32_t *group = nvl_engine_moe_alloc(E, sizeof *group);
    for (uint32_t x = 0; x < E; x++)
        group[x] = (uint32_t)nvl_ep_expert_group(e, x);
    return group;
}

/* Whether this run's layers exchange by allgather and reduce-scatter
 * (moe_agrs.c): --ep-comm allgather, or auto under attention DP. */
bool nvl_ep_allgather(const nvl_engine_t *e)
{
    nvl_ep_comm_t c = e->opts.ep_comm;
    return c == NVL_EP_COMM_ALLGATHER ||
           (c == NVL_EP_COMM_AUTO && e->shard.attn_dp);
}

/* The one-sided mode of this pass: low-latency in decode steps, high-
 * throughput in the prefill (SGLang's --deepep-mode auto,
 * DeepEPMode.resolve: normal for extend batches, low_latency for
 * decode). */
nvl_a2a_t nvl_ep_onesided_mode(const nvl_engine_t *e)
{
    return e->pass >= 1 ? NVL_A2A_ONESIDED_LL : NVL_A2A_ONESIDED_HT;
}

void nvl_ep_free(nvl_ep_layer_t *s)
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

/* A member's rows and pairs to each rank, into to[d] and pto[d], from its
 * rows and pairs to each expert group (under the allgather every rank
 * gets all of its rows). */
static void ep_member_to(const nvl_engine_t *e, const uint64_t *grp_rows,
                         const uint64_t *grp_pairs, uint64_t rows,
                         uint64_t *to, uint64_t *pto)
{
    int n = nvl_comm_size(e->tp), etp = e->shard.etp;
    bool all = nvl_ep_allgather(e);
    for (int d = 0; d < n; d++) {
        to[d] = all ? rows : grp_rows[d / etp];
        pto[d] = grp_pairs[d / etp];
    }
}

/* The per-rank arrays of s; each rank's rows and pairs from its group's
 * (g: the counts over the expert groups, ep_member_to). */
static void ep_counts_to_ranks(nvl_engine_t *e, const nvl_moe_groups_t *g,
                               nvl_ep_layer_t *s)
{
    int n = s->n;
    s->to = nvl_engine_moe_alloc((uint64_t)n * 6, sizeof *s->to);
    s->sofs = s->to + n, s->from = s->to + 2 * n, s->rofs = s->to + 3 * n;
    s->pto = s->to + 4 * n, s->pfrom = s->to + 5 * n;
    ep_member_to(e, g->rows, g->pairs, s->R, s->to, s->pto);
}

/* Routes this rank's R rows (its counts, as nvl_ep_route_counts's); row t
 * goes to every rank of each group holding one of its experts, once
 * (dest).  Data mode. */
static void ep_route(nvl_engine_t *e, uint32_t li, uint64_t row0,
                     const float *h, const nvl_moe_groups_t *g,
                     nvl_ep_layer_t *s)
{
    int n = s->n, etp = e->shard.etp;
    uint32_t k = s->k;
    s->ids = nvl_engine_moe_alloc(s->R * k, sizeof *s->ids);
    s->w = nvl_engine_moe_alloc(s->R * k, sizeof *s->w);
    nvl_engine_moe_route(e, li, row0, s->R, h, s->ids, s->w);
    nvl_engine_moe_count(e, s->ids, s->R, g);
    s->dest = nvl_engine_moe_alloc(s->R * (uint64_t)n, 1);
    for (uint64_t t = 0; t < s->R; t++)
        for (uint32_t j = 0; j < k; j++)
            for (int i = 0; i < etp; i++)
                s->dest[t * (uint64_t)n +
                        (uint64_t)(g->group[s->ids[t * k + j]] * etp + i)] = 1;
}

/* The counts of layer li's routing of this rank's R rows over the expert
 * groups (routed in data mode, ep_route; counted from the seeded routing
 * in timing mode), and s's per-rank arrays from them. */
void nvl_ep_route_counts(nvl_engine_t *e, uint32_t li, uint64_t row0,
                            const float *h, nvl_ep_layer_t *s)
{
    uint32_t E = e->cfg.num_experts, ep = (uint32_t)e->shard.ep;
    uint32_t *group = ep_group_table(e);
    uint64_t *pr = nvl_engine_moe_alloc(2 * (size_t)ep, sizeof *pr);
    s->mine = nvl_engine_moe_alloc(E, sizeof *s->mine);
    nvl_moe_groups_t g = {.group = group, .n = ep, .count = s->mine,
                          .pairs = pr, .rows = pr + ep};
    if (e->data)
        ep_route(e, li, row0, h, &g, s);
    else
        nvl_engine_moe_route_count(e, li, row0, s->R, &g);
    ep_counts_to_ranks(e, &g, s);
    free(pr);
    free(group);
}

/* The wire factors of the low-latency mode, and the dispatch and combine
 * as the implementation the run does not use would time them, on member
 * `member` whose numbers s holds (t[0], t[1]); false when that
 * implementation is not usable. */
bool nvl_ep_alt_member(nvl_engine_t *e, nvl_ep_layer_t *s, int member,
                          int64_t t[2])
{
    int n = s->n;
    s->wsend = nvl_engine_moe_alloc((uint64_t)n * 6, sizeof *s->wsend);
    s->wrecv = s->wsend + n;
    double *dsend = s->wsend + 2 * n, *drecv = s->wsend + 3 * n;
    double *csend = s->wsend + 4 * n, *crecv = s->wsend + 5 * n;
    double esz = (double)nvl_dtype_size(NVL_DT_BF16); /* timed as bf16 */
    for (int r = 0; r < n; r++) {
        s->wsend[r] = s->to[r] ? (double)s->pto[r] / (double)s->to[r] : 1;
        s->wrecv[r] =
            s->from[r] ? (double)s->pfrom[r] / (double)s->from[r] : 1;
    }
    nvl_a2a_t alt = e->opts.a2a_onesided ? NVL_A2A_NCCL : nvl_ep_onesided_mode(e);
    bool ll = alt == NVL_A2A_ONESIDED_LL;
    for (int r = 0; r < n; r++) { /* the queued bytes, as exchange() */
        double ws = ll ? s->wsend[r] : 1, wr = ll ? s->wrecv[r] : 1;
        dsend[r] = (double)(s->to[r] * s->pay) * esz * ws;
        drecv[r] = (double)(s->from[r] * s->pay) * esz * wr;
        csend[r] = (double)(s->from[r] * s->hid) * esz * wr;
        crecv[r] = (double)(s->to[r] * s->hid) * esz * ws;
    }
    char why[256];
    t[0] = t[1] = 0;
    if (nvl_ep_allgather(e) || !nvl_a2a_usable(e->tp, alt, why, sizeof why))
        return false;
    t[0] = nvl_a2a_predict_member_ps(e->tp, member, alt, dsend, drecv);
    t[1] = nvl_a2a_predict_member_ps(e->tp, member, alt, csend, crecv);
    return true;
}

/* The same on this rank. */
bool nvl_ep_alt_local(nvl_engine_t *e, nvl_ep_layer_t *s, int64_t t[2])
{
    return nvl_ep_alt_member(e, s, nvl_comm_rank(e->tp), t);
}

/* Timing mode's book of a pass (R rows from row0 on this rank): for every
 * expert-parallel layer, [to n][pto n][from n][pfrom n][count E], and the
 * other implementation's two times (the group's largest).  The routing is
 * seeded (a function of the seed, the pass, the layer and the row), so
 * where every member's rows are known (ep_members) each rank routes every
 * member's rows of every layer at the pass's first such layer: the
 * numbers the members would exchange, with no exchange (ep_book_local);
 * else each routes its own and the group agrees in three MPI calls for
 * the pass, not three a layer (ep_book_exchange): the same numbers. */
static size_t book_stride(const nvl_engine_t *e)
{
    return 4 * (size_t)nvl_comm_size(e->tp) + (size_t)e->cfg.num_experts;
}

/* A layer of R rows whose to, pto, from and pfrom are b's four n-runs (a
 * book's layout). */
static nvl_ep_layer_t ep_book_layer(const nvl_engine_t *e, uint64_t R,
                                    uint64_t *b)
{
    int n = nvl_comm_size(e->tp);
    return (nvl_ep_layer_t){.R = R, .hid = e->cfg.hidden, .k = e->cfg.top_k,
                            .pay = e->cfg.hidden + 2 * (uint64_t)e->cfg.top_k,
                            .n = n, .to = b, .pto = b + n, .from = b + 2 * n,
                            .pfrom = b + 3 * n};
}

void nvl_engine_ep_rows(nvl_engine_t *e, const uint64_t *rows,
                        const uint64_t *first)
{
    int n = nvl_comm_size(e->tp);
    free(e->ep_rows);
    e->ep_rows = nvl_engine_moe_alloc(2 * (size_t)n, sizeof *e->ep_rows);
    memcpy(e->ep_rows, rows, (size_t)n * sizeof *rows);
    memcpy(e->ep_rows + n, first, (size_t)n * sizeof *first);
    e->row0 = first[nvl_comm_rank(e->tp)];
}

/* Every member's rows of the pass, rows[r] from row first[r]: under
 * tensor-parallel attention its share of the pass's rows (attention.c's
 * split of e->cur.tokens from e->row0), under data-parallel attention the
 * caller's (nvl_engine_ep_rows); false when they are not known (the same
 * on every member: the callers are).  This rank's must be (R, row0). */
static bool ep_members(nvl_engine_t *e, uint64_t R, uint64_t row0,
                       uint64_t *rows, uint64_t *first)
{
    int n = nvl_comm_size(e->tp), me = nvl_comm_rank(e->tp);
    if (e->shard.attn_dp && e->ep_rows == NULL)
        return false;
    for (int r = 0; r < n; r++) {
        nvl_range_t sh = nvl_range_split((uint32_t)e->cur.tokens, n, r);
        rows[r] = e->shard.attn_dp ? e->ep_rows[r] : sh.count;
        first[r] = e->shard.attn_dp ? e->ep_rows[n + r] : e->row0 + sh.first;
    }
    if (rows[me] != R || first[me] != row0) { /* the engine's own error */
        nvl_report("expert parallelism: pass %d routes %" PRIu64
                   " rows from row %" PRIu64 " on rank %d, its members' "
                   "rows say %" PRIu64 " from %" PRIu64,
                   (int)e->pass, R, row0, me, rows[me], first[me]);
        nvl_runtime_abort(1);
    }
    return true;
}

/* The other implementation's times over the group, the largest of each
 * member's (grp: every member's rows and pairs to each expert group);
 * false when it is not usable. */
static bool ep_alt_group(nvl_engine_t *e, const uint64_t *grp,
                         const uint64_t *rows, int64_t most[2])
{
    int n = nvl_comm_size(e->tp);
    size_t nn = (size_t)n, ep = (size_t)e->shard.ep;
    uint64_t *to = nvl_engine_moe_alloc(2 * nn * nn, sizeof *to);
    uint64_t *mem = nvl_engine_moe_alloc(4 * nn, sizeof *mem);
    for (int q = 0; q < n; q++)
        ep_member_to(e, grp + 2 * (size_t)q * ep, grp + (2 * (size_t)q + 1) * ep,
                     rows[q], to + 2 * q * nn, to + 2 * q * nn + nn);
    bool usable = true;
    most[0] = most[1] = 0;
    for (int q = 0; q < n && usable; q++) { /* member q's numbers */
        for (int d = 0; d < n; d++) {
            mem[d] = to[2 * q * nn + d];
            mem[n + d] = to[2 * q * nn + nn + d];
            mem[2 * n + d] = to[2 * d * nn + q];
            mem[3 * n + d] = to[2 * d * nn + nn + q];
        }
        nvl_ep_layer_t s = ep_book_layer(e, rows[q], mem);
        int64_t t[2];
        usable = nvl_ep_alt_member(e, &s, q, t);
        free(s.wsend);
        for (int i = 0; i < 2 && usable; i++)
            most[i] = t[i] > most[i] ? t[i] : most[i];
    }
    free(mem);
    free(to);
    if (!usable)
        most[0] = most[1] = 0;
    return usable;
}

/* The book from the members' rows (ep_members): each member's rows and
 * pairs to each expert group, hence this rank's to and from each rank;
 * the tokens per expert summed over the members in integers (the
 * exchange's sum); the other implementation's times as each member
 * predicts them, their largest (the exchange's max). */
static void ep_book_local(nvl_engine_t *e, const uint64_t *rows,
                          const uint64_t *first)
{
    int n = nvl_comm_size(e->tp), me = nvl_comm_rank(e->tp);
    int etp = e->shard.etp;
    uint32_t L = e->layers, ep = (uint32_t)e->shard.ep;
    size_t per = book_stride(e);
    bool all = nvl_ep_allgather(e);
    char why[256];
    nvl_a2a_t alt = e->opts.a2a_onesided ? NVL_A2A_NCCL : nvl_ep_onesided_mode(e);
    bool usable = !all && nvl_a2a_usable(e->tp, alt, why, sizeof why);
    uint32_t *group = ep_group_table(e);
    /* member q's rows [q][ep] and pairs [q][ep] to each expert group */
    uint64_t *grp = nvl_engine_moe_alloc(2 * (size_t)n * ep, sizeof *grp);
    for (uint32_t l = 0; l < L; l++) {
        if (!nvl_engine_moe_is_ep(e, l))
            continue;
        uint64_t *b = e->ep_book + l * per;
        memset(grp, 0, 2 * (size_t)n * ep * sizeof *grp);
        for (int q = 0; q < n; q++) {
            uint64_t *gq = grp + 2 * (size_t)q * ep;
            nvl_moe_groups_t g = {.group = group, .n = ep, .count = b + 4 * n,
                                  .pairs = gq + ep, .rows = gq};
            nvl_engine_moe_route_count(e, l, first[q], rows[q], &g);
        }
        ep_member_to(e, grp + 2 * (size_t)me * ep,
                     grp + (2 * (size_t)me + 1) * ep, rows[me], b, b + n);
        for (int d = 0; d < n; d++) { /* what member d sends this rank */
            const uint64_t *gd = grp + 2 * (size_t)d * ep;
            b[2 * n + d] = all ? rows[d] : gd[me / etp];
            b[3 * n + d] = gd[ep + (uint32_t)(me / etp)];
        }
        if (usable)
            ep_alt_group(e, grp, rows, e->ep_book_alt + 2 * (size_t)l);
    }
    free(grp);
    free(group);
}

static void ep_book_route(nvl_engine_t *e, uint64_t R, uint64_t row0,
                          uint64_t *send, uint64_t *mine)
{
    int n = nvl_comm_size(e->tp);
    uint32_t E = e->cfg.num_experts, L = e->layers;
    for (uint32_t l = 0; l < L; l++) {
        if (!nvl_engine_moe_is_ep(e, l))
            continue;
        nvl_ep_layer_t s = {.R = R, .k = e->cfg.top_k, .n = n};
        nvl_ep_route_counts(e, l, row0, NULL, &s);
        for (int d = 0; d < n; d++) {
            send[((size_t)d * L + l) * 2] = s.to[d];
            send[((size_t)d * L + l) * 2 + 1] = s.pto[d];
        }
        memcpy(mine + (size_t)l * E, s.mine, E * sizeof *mine);
        nvl_ep_free(&s);
    }
}

/* The book by exchange: this rank's rows routed, the rows and pairs to
 * each rank told by one MPI_Alltoall, the tokens per expert summed by an
 * MPI_Allreduce, the other implementation's times by another. */
static void ep_book_exchange(nvl_engine_t *e, uint64_t R, uint64_t row0)
{
    int n = nvl_comm_size(e->tp);
    uint32_t E = e->cfg.num_experts, L = e->layers;
    size_t per = book_stride(e);
    uint64_t *send = nvl_engine_moe_alloc(4 * (size_t)n * L, sizeof *send);
    uint64_t *recv = send + 2 * (size_t)n * L;
    uint64_t *mine = nvl_engine_moe_alloc(2 * (size_t)L * E, sizeof *mine);
    uint64_t *count = mine + (size_t)L * E;
    ep_book_route(e, R, row0, send, mine);
    MPI_Comm mpi = nvl_comm_mpi(e->tp);
    MPI_Alltoall(send, 2 * (int)L, MPI_UINT64_T, recv, 2 * (int)L,
                 MPI_UINT64_T, mpi);
    MPI_Allreduce(mine, count, (int)(L * E), MPI_UINT64_T, MPI_SUM, mpi);
    bool usable = false;
    for (uint32_t l = 0; l < L; l++) {
        if (!nvl_engine_moe_is_ep(e, l))
            continue;
        uint64_t *b = e->ep_book + l * per;
        for (int d = 0; d < n; d++) {
            b[d] = send[((size_t)d * L + l) * 2];
            b[n + d] = send[((size_t)d * L + l) * 2 + 1];
            b[2 * n + d] = recv[((size_t)d * L + l) * 2];
            b[3 * n + d] = recv[((size_t)d * L + l) * 2 + 1];
        }
        memcpy(b + 4 * n, count + (size_t)l * E, E * sizeof *b);
        nvl_ep_layer_t s = ep_book_layer(e, R, b);
        usable = nvl_ep_alt_local(e, &s, e->ep_book_alt + 2 * (size_t)l);
        free(s.wsend);
    }
    if (usable)
        MPI_Allreduce(MPI_IN_PLACE, e->ep_book_alt, 2 * (int)L, MPI_INT64_T,
                      MPI_MAX, mpi);
    free(mine);
    free(send);
}

/* Up to this many (row, expert) draws of a pass over the group's rows and
 * expert-parallel layers, every rank routes every member's rows (the
 * book without an exchange); above it each routes its own and the group
 * exchanges.  Routing them all costs each rank the group's draws instead
 * of its own (5-7 ns a draw on the 2-core host); the exchange, waits in
 * two blocking MPI calls a pass.  Measured there, Qwen3-235B FP4 under
 * data-parallel attention, the job's user + system CPU seconds over its
 * ranks: DEP32 on gb200-nvl72, 31 decode steps of 32 rows (24 000 draws a
 * pass): 3.7 routing alone, 3.7 exchanging (the load moved: 3.1 and 5.6
 * in a second pair); 15 steps of 256 rows (193 000 draws): 3.2 and 2.9,
 * 3.0 and 2.9; DEP8 on hgx-b200, 63 steps of 64 rows (385 000): 0.84 and
 * about 0.95; a 64 x 1000 prefill (48 million draws): 2.7 alone, 0.5
 * exchanging.  The bound sits where the two meet at 8 to 32 ranks. */
#define NVL_EP_LOCAL_DRAWS 524288.0

/* The draws of one of the pass's rows: top_k a layer over the
 * expert-parallel layers. */
static double ep_draws_per_row(const nvl_engine_t *e)
{
    double layers = 0;
    for (uint32_t l = 0; l < e->layers; l++)
        layers += nvl_engine_moe_is_ep(e, l) ? 1.0 : 0.0;
    return layers * (double)e->cfg.top_k;
}

void nvl_engine_ep_done(nvl_engine_t *e)
{
    if (e->ep_alone_pending)
        nvl_runtime_wait(&e->ep_alone_req);
    e->ep_alone_pending = false;
}

/* Whether every member routes this pass's book alone (known: the
 * members' rows, who, are known here).  Each member wishes to where it
 * knows them and the pass draws no more than NVL_EP_LOCAL_DRAWS; the
 * members agree by the largest wish, a non-blocking allreduce: a member
 * that wishes to goes on without waiting (nobody can exchange once one
 * member routes alone), one that does not waits and routes alone too
 * when any member does.  Members whose views of the rows agree (a
 * consistent job) wish alike, so in a job with every pass under the
 * bound nobody waits; in one whose ranks were given other rows (another
 * --batch) no member is left waiting in an exchange the others skip:
 * the first call that differs is named at the pass's agreement. */
static bool ep_alone(nvl_engine_t *e, bool known, const uint64_t *who)
{
    int n = nvl_comm_size(e->tp);
    double draws = 0; /* the group's (row, expert) draws of the pass */
    for (int r = 0; known && r < n; r++)
        draws += (double)who[r];
    nvl_engine_ep_done(e);
    e->ep_alone[0] =
        known && draws * ep_draws_per_row(e) <= NVL_EP_LOCAL_DRAWS;
    MPI_Iallreduce(&e->ep_alone[0], &e->ep_alone[1], 1, MPI_INT, MPI_MAX,
                   nvl_comm_mpi(e->tp), &e->ep_alone_req);
    e->ep_alone_pending = true;
    if (e->ep_alone[0])
        return true;
    nvl_engine_ep_done(e);
    if (e->ep_alone[1] && !known) { /* the engine's own error */
        nvl_report("expert parallelism: pass %d: members route the book "
                   "alone, rank %d was not given their rows",
                   (int)e->pass, nvl_comm_rank(e->tp));
        nvl_runtime_abort(1);
    }
    return e->ep_alone[1];
}

void nvl_ep_book_pass(nvl_engine_t *e, uint64_t R, uint64_t row0)
{
    if (e->ep_book != NULL && e->ep_book_pass == e->pass &&
        e->ep_book_rows == R && e->ep_book_row0 == row0)
        return;
    int n = nvl_comm_size(e->tp);
    uint32_t L = e->layers;
    free(e->ep_book);
    free(e->ep_book_alt);
    e->ep_book = nvl_engine_moe_alloc(L * book_stride(e), sizeof *e->ep_book);
    e->ep_book_alt =
        nvl_engine_moe_alloc(2 * (size_t)L, sizeof *e->ep_book_alt);
    uint64_t *who = nvl_engine_moe_alloc(2 * (size_t)n, sizeof *who);
    if (ep_alone(e, ep_members(e, R, row0, who, who + n), who))
        ep_book_local(e, who, who + n);
    else
        ep_book_exchange(e, R, row0);
    free(who);
    e->ep_book_pass = e->pass;
    e->ep_book_rows = R;
    e->ep_book_row0 = row0;
}

/* Layer li's numbers from the pass's book into s (as ep_route and
 * ep_count_exchange leave them); its agreed alternative times. */
const int64_t *nvl_ep_from_book(nvl_engine_t *e, uint32_t li,
                                   nvl_ep_layer_t *s)
{
    int n = s->n;
    uint32_t E = e->cfg.num_experts;
    const uint64_t *b = e->ep_book + li * book_stride(e);
    s->to = nvl_engine_moe_alloc((uint64_t)n * 6, sizeof *s->to);
    s->sofs = s->to + n, s->from = s->to + 2 * n, s->rofs = s->to + 3 * n;
    s->pto = s->to + 4 * n, s->pfrom = s->to + 5 * n;
    memcpy(s->to, b, n * sizeof *b);
    memcpy(s->pto, b + n, n * sizeof *b);
    memcpy(s->from, b + 2 * n, n * sizeof *b);
    memcpy(s->pfrom, b + 3 * n, n * sizeof *b);
    s->count = nvl_engine_moe_alloc(E, sizeof *s->count);
    memcpy(s->count, b + 4 * n, E * sizeof *b);
    return e->ep_book_alt + 2 * (size_t)li;
}

