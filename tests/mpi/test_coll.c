/* MPI test: every collective, algorithm, protocol, dtype and op against a
 * plain reference, in data mode, half of them in place; allreduce also at
 * the sizes where small groups change how the data moves, every member
 * holding the same bits; then the same calls in timing mode must give
 * identical virtual times.  Run at several rank counts by ctest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test.h"
#include "nvlemu/hash.h"

static mpi_test_t t;
static int rank_, size_;

/* A value every rank can recompute: small integers, exact in every dtype
 * incl. fp8 for sums of up to 17 ranks (kept <= 8 in magnitude each). */
static float input(int r, size_t i, nvl_redop_t op)
{
    int v = (int)((r * 7 + (int)(i % 13) * 3) % 9) - 4;
    if (op != NVL_OP_SUM)
        v = (int)((r * 5 + i * 11) % 17) - 8;
    return (float)v * (op == NVL_OP_SUM ? 0.5f : 1.0f);
}

static float combine(nvl_redop_t op, float a, float b)
{
    return op == NVL_OP_SUM ? a + b : op == NVL_OP_MAX ? fmaxf(a, b) : fminf(a, b);
}

static void fill(void *buf, nvl_dtype_t dt, int r, size_t n, size_t base,
                 nvl_redop_t op)
{
    size_t esz = nvl_dtype_size(dt);
    for (size_t i = 0; i < n; i++)
        nvl_dtype_from_float(dt, input(r, base + i, op), (char *)buf + i * esz);
}

static float reduced(int nranks, size_t i, nvl_redop_t op)
{
    float acc = input(0, i, op);
    for (int r = 1; r < nranks; r++)
        acc = combine(op, acc, input(r, i, op));
    return acc;
}

static void expect(const char *what, const void *buf, nvl_dtype_t dt,
                   size_t n, float (*want)(size_t, void *), void *ctx)
{
    size_t esz = nvl_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        float got = nvl_dtype_to_float(dt, (const char *)buf + i * esz);
        float w = want(i, ctx);
        /* the reference is exact in float; one rounding of the dtype */
        char tmp[4];
        nvl_dtype_from_float(dt, w, tmp);
        float wr = nvl_dtype_to_float(dt, tmp);
        if (got != wr) {
            fprintf(stderr, "rank %d: %s: element %zu = %g, expected %g\n",
                    rank_, what, i, got, wr);
            t.failures++;
            return;
        }
    }
}

typedef struct { nvl_redop_t op; int nranks; size_t off; int root; } want_ctx;
static float want_reduced(size_t i, void *c)
{
    want_ctx *w = c;
    return reduced(w->nranks, w->off + i, w->op);
}
static float want_gathered(size_t i, void *c)
{
    want_ctx *w = c; /* block r of count w->off holds rank r's input */
    return input((int)(i / w->off), i % w->off, NVL_OP_SUM);
}
static float want_root(size_t i, void *c)
{
    want_ctx *w = c;
    return input(w->root, i, NVL_OP_SUM);
}
static float want_a2a(size_t i, void *c)
{
    want_ctx *w = c; /* block s from rank s: its block for me */
    size_t s = i / w->off;
    return input((int)s, (size_t)rank_ * w->off + i % w->off, NVL_OP_SUM);
}
static float want_prev(size_t i, void *c)
{
    (void)c;
    return input((rank_ - 1 + size_) % size_, i, NVL_OP_SUM);
}

/* Every member must hold the same bits after an allreduce. */
static void expect_same_bits(const char *what, const void *buf, size_t bytes)
{
    uint64_t h = nvl_fnv1a64(buf, bytes);
    uint64_t lo, hi;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi) {
        fprintf(stderr, "rank %d: %s: members hold different bits\n", rank_,
                what);
        t.failures++;
    }
}

/* One call of a test: its arguments, buffers and the reference's. */
typedef struct {
    nvl_comm_t *comm;
    nvl_coll_t coll;
    nvl_dtype_t dt;
    nvl_redop_t op;
    size_t count, esz, n;
    int inplace, data;
    const char *label;
    char *send, *recv; /* the buffers; s, r: what the call gets (NULL in
                          timing mode) */
    char *s, *r;
    want_ctx w;
} call_t;

/* AllReduce, ReduceScatter and Reduce, checked in data mode. */
static nvl_status_t call_reducing(call_t *c)
{
    nvl_status_t st;
    switch (c->coll) {
    case NVL_COLL_ALLREDUCE:
        fill(c->send, c->dt, rank_, c->count, 0, c->op);
        if (c->inplace)
            c->r = c->s;
        st = nvl_allreduce(c->comm, c->s, c->r, c->count, c->dt, c->op, NULL);
        if (c->data && st == NVL_OK) {
            expect(c->label, c->r, c->dt, c->count, want_reduced, &c->w);
            expect_same_bits(c->label, c->r, c->count * c->esz);
        }
        return st;
    case NVL_COLL_REDUCESCATTER:
        fill(c->send, c->dt, rank_, c->count * c->n, 0, c->op);
        if (c->inplace && c->data) /* recvbuf = sendbuf + rank * recvcount */
            c->r = c->send + (size_t)rank_ * c->count * c->esz;
        st = nvl_reducescatter(c->comm, c->s, c->r, c->count, c->dt, c->op, NULL);
        c->w.off = (size_t)rank_ * c->count;
        if (c->data && st == NVL_OK)
            expect(c->label, c->r, c->dt, c->count, want_reduced, &c->w);
        return st;
    default: /* NVL_COLL_REDUCE */
        fill(c->send, c->dt, rank_, c->count, 0, c->op);
        if (c->inplace)
            c->r = c->s;
        st = nvl_reduce(c->comm, c->s, c->r, c->count, c->dt, c->op, c->w.root,
                        NULL);
        if (c->data && st == NVL_OK && rank_ == c->w.root)
            expect(c->label, c->r, c->dt, c->count, want_reduced, &c->w);
        return st;
    }
}

/* AllGather, Broadcast, AllToAll and SendRecv, checked in data mode. */
static nvl_status_t call_moving(call_t *c)
{
    nvl_status_t st;
    size_t count = c->count;
    switch (c->coll) {
    case NVL_COLL_ALLGATHER:
        if (c->inplace && c->data) { /* sendbuf = recvbuf + rank * sendcount */
            c->s = c->recv + (size_t)rank_ * count * c->esz;
            fill(c->s, c->dt, rank_, count, 0, NVL_OP_SUM);
        } else {
            fill(c->send, c->dt, rank_, count, 0, NVL_OP_SUM);
        }
        st = nvl_allgather(c->comm, c->s, c->r, count, c->dt, NULL);
        c->w.off = count;
        if (c->data && st == NVL_OK && count > 0)
            expect(c->label, c->r, c->dt, count * c->n, want_gathered, &c->w);
        return st;
    case NVL_COLL_BROADCAST:
        fill(c->send, c->dt, rank_, count, 0, NVL_OP_SUM);
        if (c->inplace)
            c->r = c->s;
        st = nvl_broadcast(c->comm, c->s, c->r, count, c->dt, c->w.root, NULL);
        if (c->data && st == NVL_OK)
            expect(c->label, c->r, c->dt, count, want_root, &c->w);
        return st;
    case NVL_COLL_ALLTOALL: /* never in place (as in NCCL) */
        fill(c->send, c->dt, rank_, count * c->n, 0, NVL_OP_SUM);
        st = nvl_alltoall(c->comm, c->s, c->r, count, c->dt, NULL);
        c->w.off = count;
        if (c->data && st == NVL_OK && count > 0)
            expect(c->label, c->r, c->dt, count * c->n, want_a2a, &c->w);
        return st;
    default: /* NVL_COLL_SENDRECV */
        fill(c->send, c->dt, rank_, count, 0, NVL_OP_SUM);
        if (c->inplace)
            c->r = c->s;
        st = nvl_sendrecv(c->comm, c->s, (rank_ + 1) % size_, c->r,
                          (rank_ - 1 + size_) % size_, count, c->dt, NULL);
        if (c->data && st == NVL_OK)
            expect(c->label, c->r, c->dt, count, want_prev, &c->w);
        return st;
    }
}

/* One call, checked against the reference in data mode; in place (as NCCL
 * defines it for each collective) when inplace is set.  Returns the clock
 * after it. */
static int64_t run_one(nvl_comm_t *comm, nvl_coll_t coll, nvl_dtype_t dt,
                       nvl_redop_t op, size_t count, int inplace, char *label)
{
    call_t c = {.comm = comm, .coll = coll, .dt = dt, .op = op, .count = count,
                .esz = nvl_dtype_size(dt), .n = (size_t)size_,
                .inplace = inplace, .label = label,
                .data = nvl_comm_mode(comm) == NVL_MODE_DATA,
                .w = {op, size_, 0, size_ > 2 ? 2 : 0}};
    size_t blocks = coll == NVL_COLL_ALLGATHER ||
                            coll == NVL_COLL_REDUCESCATTER ||
                            coll == NVL_COLL_ALLTOALL
                        ? c.n
                        : 1;
    c.send = calloc(count * blocks + 1, c.esz);
    c.recv = calloc(count * blocks + 1, c.esz);
    c.s = c.data ? c.send : NULL;
    c.r = c.data ? c.recv : NULL;
    int reducing = coll == NVL_COLL_ALLREDUCE || coll == NVL_COLL_REDUCE ||
                   coll == NVL_COLL_REDUCESCATTER;
    nvl_status_t st = reducing ? call_reducing(&c) : call_moving(&c);
    if (st != NVL_OK) {
        fprintf(stderr, "rank %d: %s returned %s\n", rank_, label, nvl_status_str(st));
        t.failures++;
    }
    free(c.send);
    free(c.recv);
    return nvl_comm_clock(comm)->now_ps;
}

/* Every collective x algorithm x protocol x dtype x op x count, the
 * algorithm and protocol forced; each call's clock into times. */
static int run_forced(nvl_comm_t *comm, int64_t *times, int ncalls)
{
    static const size_t counts[] = {0, 1, 7, 1000, 4099};
    for (int coll = 0; coll < NVL_COLL_COUNT; coll++)
    for (int a = 0; a < NVL_ALGO_COUNT; a++)
    for (int p = 0; p < NVL_PROTO_COUNT; p++)
    for (int dt = 0; dt < NVL_DT_COUNT; dt++)
    for (int op = 0; op < NVL_OP_COUNT; op++)
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        nvl_coll_info_t probe;
        int p2p = coll >= NVL_COLL_ALLTOALL;
        if (p2p && (a > 0 || p > 0))
            continue;
        if (!p2p && nvl_coll_predict(comm, (nvl_coll_t)coll, 1024, (nvl_algo_t)a,
                                     (nvl_proto_t)p, &probe) != NVL_OK)
            continue;
        int reducing = coll == NVL_COLL_ALLREDUCE || coll == NVL_COLL_REDUCE ||
                       coll == NVL_COLL_REDUCESCATTER;
        if (!reducing && op > 0)
            continue;
        nvl_tuner_cfg_t cfg;
        nvl_tuner_cfg_default(&cfg);
        for (int i = 0; i < NVL_ALGO_COUNT; i++) cfg.algo_enabled[i] = i == a;
        for (int i = 0; i < NVL_PROTO_COUNT; i++) cfg.proto_enabled[i] = i == p;
        nvl_comm_set_tuner(comm, &cfg);
        /* the forced algorithm's own data movement (ring.c, tree.c,
         * ...), not the fast path the tuner's choice does not change */
        nvl_comm_set_data_path(comm, NVL_DATA_PATH_ALGORITHM);
        /* half of the calls in place, alternating over every axis */
        int inplace = (coll + a + p + dt + op + (int)ci) % 2;
        char label[160];
        snprintf(label, sizeof label, "%s %s/%s %s %s count=%zu%s",
                 nvl_coll_name((nvl_coll_t)coll), nvl_algo_key((nvl_algo_t)a),
                 nvl_proto_key((nvl_proto_t)p), nvl_dtype_name((nvl_dtype_t)dt),
                 nvl_redop_name((nvl_redop_t)op), counts[ci],
                 inplace ? " in place" : "");
        times[ncalls++ % 4096] =
            run_one(comm, (nvl_coll_t)coll, (nvl_dtype_t)dt, (nvl_redop_t)op,
                    counts[ci], inplace, label);
    }
    return ncalls;
}

/* Allreduce as the tuner picks, at the sizes where groups of up to 8
 * change how the data moves (src/coll/direct.c): the largest whole buffer
 * that rides along with the agreement (members receive up to 64 KB of
 * them) and one element more, every dtype and op; in groups of up to 8,
 * also the largest shares (64 KB per member), one element more and a
 * larger uneven size, one op per dtype; in larger groups
 * (src/coll/wide.c), twice in a row (the second call rides along with the
 * agreement) the largest buffer that fits it (64 KB) and one element more,
 * and 4 MB and three elements (two direct exchanges), one op per dtype. */
static int run_tuned(nvl_comm_t *comm, int64_t *times, int ncalls)
{
    nvl_tuner_cfg_t dflt;
    nvl_tuner_cfg_default(&dflt);
    nvl_comm_set_tuner(comm, &dflt);
    nvl_comm_set_data_path(comm, NVL_DATA_PATH_FAST);
    for (int dt = 0; dt < NVL_DT_COUNT; dt++)
    for (int op = 0; op < NVL_OP_COUNT; op++)
    for (int k = 0; k < 10; k++) {
        int wide = k >= 5; /* the sizes of larger groups */
        if (wide != (size_ > 8) ||
            (k % 5 >= 2 && op != (dt + k) % NVL_OP_COUNT))
            continue;
        size_t esz = nvl_dtype_size((nvl_dtype_t)dt);
        size_t whole = 65536 / (size_ > 1 ? size_ - 1 : 1) / esz;
        size_t shares = (size_t)size_ * 65536 / esz;
        size_t room = 65536 / esz;
        size_t sizes[10] = {whole, whole + 1, shares, shares + 1,
                            2 * shares + 3, room, room, room + 1,
                            room + 1, ((size_t)4 << 20) / esz + 3};
        int inplace = (dt + op + k) % 2;
        char label[160];
        snprintf(label, sizeof label, "AllReduce tuned %s %s count=%zu%s",
                 nvl_dtype_name((nvl_dtype_t)dt),
                 nvl_redop_name((nvl_redop_t)op), sizes[k],
                 inplace ? " in place" : "");
        times[ncalls++ % 4096] =
            run_one(comm, NVL_COLL_ALLREDUCE, (nvl_dtype_t)dt,
                    (nvl_redop_t)op, sizes[k], inplace, label);
    }
    return ncalls;
}

/* nvl_comm_set_time_bits: an allgather of 4112 float32 values a rank
 * timed at 4.5 bits a value (moe_agrs.c's NVFP4 rows) moves and takes
 * what one of 2313 FP8 bytes a rank does; 0 restores the call's dtype. */
static void check_time_bits(nvl_comm_t *comm)
{
    nvl_coll_info_t a, b;
    nvl_comm_set_mode(comm, NVL_MODE_TIMING);
    nvl_comm_set_time_bits(comm, 4.5);
    nvl_status_t sa = nvl_allgather(comm, NULL, NULL, 4112, NVL_DT_F32, &a);
    nvl_comm_set_time_bits(comm, 0);
    nvl_status_t sb =
        nvl_allgather(comm, NULL, NULL, 2313, NVL_DT_FP8_E4M3, &b);
    if (sa != NVL_OK || sb != NVL_OK || a.bytes != b.bytes ||
        a.time_ps != b.time_ps || a.bytes != 2313 * (size_t)size_) {
        fprintf(stderr, "rank %d: time bits: %zu bytes in %lld ps, FP8 "
                        "%zu bytes in %lld ps\n", rank_, (size_t)a.bytes,
                (long long)a.time_ps, (size_t)b.bytes, (long long)b.time_ps);
        t.failures++;
    }
    /* nvl_comm_set_time_rooted: the allgather (reduce-scatter) takes a
     * broadcast's (reduce's) time of the gathered (scattered) bytes, and
     * false restores its own */
    nvl_coll_info_t c, d, f, g;
    nvl_comm_set_time_rooted(comm, true);
    nvl_status_t sc = nvl_allgather(comm, NULL, NULL, 4096, NVL_DT_BF16, &c);
    nvl_status_t sf = nvl_reducescatter(comm, NULL, NULL, 4096, NVL_DT_BF16,
                                        NVL_OP_SUM, &f);
    nvl_comm_set_time_rooted(comm, false);
    size_t all = 4096 * (size_t)size_;
    nvl_status_t sd = nvl_broadcast(comm, NULL, NULL, all, NVL_DT_BF16, 0, &d);
    nvl_status_t sg = nvl_reduce(comm, NULL, NULL, all, NVL_DT_BF16,
                                 NVL_OP_SUM, 0, &g);
    nvl_status_t se = nvl_allgather(comm, NULL, NULL, 4096, NVL_DT_BF16, &a);
    if (sc != NVL_OK || sd != NVL_OK || sf != NVL_OK || sg != NVL_OK ||
        se != NVL_OK || c.time_ps != d.time_ps || f.time_ps != g.time_ps ||
        (size_ > 2 && a.time_ps == c.time_ps)) {
        fprintf(stderr, "rank %d: rooted: allgather %lld ps, broadcast %lld "
                        "ps, reduce-scatter %lld ps, reduce %lld ps, "
                        "allgather again %lld ps\n", rank_,
                (long long)c.time_ps, (long long)d.time_ps,
                (long long)f.time_ps, (long long)g.time_ps,
                (long long)a.time_ps);
        t.failures++;
    }
}

int main(int argc, char **argv)
{
    mpi_test_init(&t, &argc, &argv,
                  argc > 1 ? argv[1] : "topology/gb200-nvl72.topo");
    rank_ = t.rt.rank;
    size_ = t.rt.size;
    nvl_comm_t *comm = t.comm;
    static int64_t times[2][4096];
    int ncalls = 0;
    for (int mode = 0; mode < 2; mode++) {
        nvl_comm_set_mode(comm, mode ? NVL_MODE_TIMING : NVL_MODE_DATA);
        t.clock.now_ps = 1000 * rank_; /* skewed entry clocks */
        ncalls = run_forced(comm, times[mode], 0);
        ncalls = run_tuned(comm, times[mode], ncalls);
    }
    for (int i = 0; i < ncalls && i < 4096; i++)
        if (times[0][i] != times[1][i]) {
            fprintf(stderr, "rank %d: call %d: data-mode time %lld ps != timing-mode %lld ps\n",
                    rank_, i, (long long)times[0][i], (long long)times[1][i]);
            t.failures++;
            break;
        }
    check_time_bits(comm);
    int all = mpi_test_all_failures(&t);
    if (rank_ == 0)
        printf("test_coll: %d ranks, %d calls per mode, %d failure(s)\n", size_, ncalls, all);
    return mpi_test_finish(&t, all);
}
