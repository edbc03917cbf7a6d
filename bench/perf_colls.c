/* The collectives the benchmarks time: one row each, with nccl-tests'
 * bus-bandwidth factor, buffer shapes and in-place layout, the call, and
 * the result every receive element must hold. */
#include <math.h>
#include <string.h>

#include "perf.h"

/* busbw = algbw x factor (nccl-tests' GetBw functions): the fraction of
 * the data that must cross each rank's links. */
static double bus_allreduce(int n) { return n > 1 ? 2.0 * (n - 1) / n : 0; }
static double bus_spread(int n) { return (double)(n - 1) / n; }
static double bus_one(int n) { (void)n; return 1.0; }

float nvl_bench_input(const nvl_bench_call_t *c, int rank, size_t i)
{
    if (c->reducing && c->op == NVL_OP_SUM)
        return rank < c->sum_ranks
                   ? (float)((rank * 7 + (int)(i % 5) * 3) % 5 - 2)
                   : 0.0f;
    return (float)((rank * 5 + (int)(i % 17) * 11) % 17 - 8);
}

/* nvl_bench_input depends on i only through i % 5 (sums) or i % 17, so
 * every input and every reduction repeats with this period. */
#define INPUT_PERIOD 85

/* Element i reduced over every rank, exactly (see nvl_bench_input): one
 * period computed rank by rank, then looked up, so checking a buffer costs
 * its length and not its length times the rank count (at 72 ranks a
 * 1 MB check was 19 M inputs on each rank). */
static float reduced(const nvl_bench_call_t *c, size_t i)
{
    static struct {
        bool valid;
        int nranks, sum_ranks;
        bool reducing;
        nvl_redop_t op;
        float value[INPUT_PERIOD];
    } memo;
    if (!memo.valid || memo.nranks != c->nranks ||
        memo.sum_ranks != c->sum_ranks || memo.reducing != c->reducing ||
        memo.op != c->op) {
        for (size_t k = 0; k < INPUT_PERIOD; k++) {
            float acc = nvl_bench_input(c, 0, k);
            for (int r = 1; r < c->nranks; r++) {
                float v = nvl_bench_input(c, r, k);
                acc = c->op == NVL_OP_SUM   ? acc + v
                      : c->op == NVL_OP_MAX ? fmaxf(acc, v)
                                            : fminf(acc, v);
            }
            memo.value[k] = acc;
        }
        memo.valid = true;
        memo.nranks = c->nranks;
        memo.sum_ranks = c->sum_ranks;
        memo.reducing = c->reducing;
        memo.op = c->op;
    }
    return memo.value[i % INPUT_PERIOD];
}

/* ---- allreduce ---------------------------------------------------------- */

static nvl_status_t run_allreduce(nvl_comm_t *comm, const void *send,
                                  void *recv, const nvl_bench_call_t *c,
                                  nvl_coll_info_t *info)
{
    return nvl_allreduce(comm, send, recv, c->count, c->dtype, c->op, info);
}

static bool expect_allreduce(const nvl_bench_call_t *c, size_t i, float *v)
{
    *v = reduced(c, i);
    return true;
}

/* ---- allgather: block s of the result is rank s's input ----------------- */

static nvl_status_t run_allgather(nvl_comm_t *comm, const void *send,
                                  void *recv, const nvl_bench_call_t *c,
                                  nvl_coll_info_t *info)
{
    return nvl_allgather(comm, send, recv, c->count, c->dtype, info);
}

static bool expect_allgather(const nvl_bench_call_t *c, size_t i, float *v)
{
    *v = nvl_bench_input(c, (int)(i / c->count), i % c->count);
    return true;
}

/* ---- reduce-scatter: rank r gets block r reduced ------------------------ */

static nvl_status_t run_reducescatter(nvl_comm_t *comm, const void *send,
                                      void *recv, const nvl_bench_call_t *c,
                                      nvl_coll_info_t *info)
{
    return nvl_reducescatter(comm, send, recv, c->count, c->dtype, c->op,
                             info);
}

static bool expect_reducescatter(const nvl_bench_call_t *c, size_t i,
                                 float *v)
{
    *v = reduced(c, (size_t)c->rank * c->count + i);
    return true;
}

/* ---- broadcast: everyone gets the root's input -------------------------- */

static nvl_status_t run_broadcast(nvl_comm_t *comm, const void *send,
                                  void *recv, const nvl_bench_call_t *c,
                                  nvl_coll_info_t *info)
{
    return nvl_broadcast(comm, send, recv, c->count, c->dtype, c->root, info);
}

static bool expect_broadcast(const nvl_bench_call_t *c, size_t i, float *v)
{
    *v = nvl_bench_input(c, c->root, i);
    return true;
}

/* ---- reduce: the root gets the reduction -------------------------------- */

static nvl_status_t run_reduce(nvl_comm_t *comm, const void *send, void *recv,
                               const nvl_bench_call_t *c,
                               nvl_coll_info_t *info)
{
    return nvl_reduce(comm, send, recv, c->count, c->dtype, c->op, c->root,
                      info);
}

static bool expect_reduce(const nvl_bench_call_t *c, size_t i, float *v)
{
    if (c->rank != c->root)
        return false;
    *v = reduced(c, i);
    return true;
}

/* ---- alltoall: block s here is rank s's block for this rank ------------- */

static nvl_status_t run_alltoall(nvl_comm_t *comm, const void *send,
                                 void *recv, const nvl_bench_call_t *c,
                                 nvl_coll_info_t *info)
{
    return nvl_alltoall(comm, send, recv, c->count, c->dtype, info);
}

static bool expect_alltoall(const nvl_bench_call_t *c, size_t i, float *v)
{
    *v = nvl_bench_input(c, (int)(i / c->count),
                         (size_t)c->rank * c->count + i % c->count);
    return true;
}

/* ---- sendrecv: to rank + 1, from rank - 1 (nccl-tests' ring), or one
 * way, rank 0 to rank 1 in a group of its own while the others idle
 * (torch.distributed's send / recv: the same NCCL communicator, NCCL's
 * channels per peer set by its size) ----------------------------------- */

static nvl_status_t run_sendrecv(nvl_comm_t *comm, const void *send,
                                 void *recv, const nvl_bench_call_t *c,
                                 nvl_coll_info_t *info)
{
    int n = c->nranks;
    if (!c->one_way)
        return nvl_sendrecv(comm, send, (c->rank + 1) % n, recv,
                            (c->rank - 1 + n) % n, c->count, c->dtype, info);
    nvl_status_t st = nvl_group_start(comm);
    if (st == NVL_OK && c->rank == 0)
        st = nvl_send(comm, send, c->count, c->dtype, 1);
    if (st == NVL_OK && c->rank == 1)
        st = nvl_recv(comm, recv, c->count, c->dtype, 0);
    /* closed even after a failed queue: the group then fails everywhere */
    nvl_status_t end = nvl_group_end(comm, info);
    return st != NVL_OK ? st : end;
}

static bool expect_sendrecv(const nvl_bench_call_t *c, size_t i, float *v)
{
    if (c->one_way && c->rank != 1)
        return false; /* rank 1 alone receives */
    *v = nvl_bench_input(c, c->one_way ? 0 : (c->rank - 1 + c->nranks) %
                                                 c->nranks,
                         i);
    return true;
}

static const nvl_bench_coll_t colls[] = {
    {.name = "all_reduce", .coll = NVL_COLL_ALLREDUCE,
     .busbw_factor = bus_allreduce, .has_op = true,
     .inplace = NVL_BENCH_INPLACE_SAME,
     .run = run_allreduce, .expect = expect_allreduce},
    {.name = "all_gather", .coll = NVL_COLL_ALLGATHER,
     .busbw_factor = bus_spread, .split = true, .recv_blocks = true,
     .inplace = NVL_BENCH_INPLACE_SEND_IN_RECV,
     .run = run_allgather, .expect = expect_allgather},
    {.name = "reduce_scatter", .coll = NVL_COLL_REDUCESCATTER,
     .busbw_factor = bus_spread, .has_op = true, .split = true,
     .send_blocks = true, .inplace = NVL_BENCH_INPLACE_RECV_IN_SEND,
     .run = run_reducescatter, .expect = expect_reducescatter},
    {.name = "broadcast", .coll = NVL_COLL_BROADCAST,
     .busbw_factor = bus_one, .has_root = true,
     .inplace = NVL_BENCH_INPLACE_SAME,
     .run = run_broadcast, .expect = expect_broadcast},
    {.name = "reduce", .coll = NVL_COLL_REDUCE,
     .busbw_factor = bus_one, .has_root = true, .has_op = true,
     .inplace = NVL_BENCH_INPLACE_SAME,
     .run = run_reduce, .expect = expect_reduce},
    {.name = "alltoall", .coll = NVL_COLL_ALLTOALL,
     .busbw_factor = bus_spread, .split = true, .send_blocks = true,
     .recv_blocks = true, .inplace = NVL_BENCH_INPLACE_NONE,
     .run = run_alltoall, .expect = expect_alltoall},
    {.name = "sendrecv", .coll = NVL_COLL_SENDRECV,
     .busbw_factor = bus_one, .inplace = NVL_BENCH_INPLACE_SAME,
     .run = run_sendrecv, .expect = expect_sendrecv},
};

const nvl_bench_coll_t *nvl_bench_coll_find(const char *name)
{
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++)
        if (strcmp(colls[i].name, name) == 0)
            return &colls[i];
    return NULL;
}
