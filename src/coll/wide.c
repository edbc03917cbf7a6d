/* The data paths of larger groups (more than NVL_DIRECT_MAX_MEMBERS): once
 * the members agree on a call, its data moves in one MPI collective of the
 * same name, reducing with nvl_reduce_into:
 *
 *   allreduce       MPI_Allreduce (unless it was reduced within the
 *                   agreement already, agree.c); from 4 MB a direct
 *                   reduce-scatter and allgather
 *   allgather       MPI_Allgather
 *   reduce-scatter  MPI_Reduce_scatter_block
 *
 * Why not the chosen algorithm's own pattern: every ring step or tree
 * level is one more round of messages, and with more ranks than cores each
 * round costs every rank a trip through the scheduler (9 ranks on 2 cores:
 * a 4 B allreduce along 16 ring steps took 4x Open MPI's own).  MPI's
 * collective takes its fewest rounds for the size.  The modeled time is
 * still the chosen algorithm's.
 *
 * Same bits on every member: MPI's allreduce algorithms (recursive
 * doubling, reduce-scatter then allgather, reduce then broadcast) compute
 * each element's reduction once, or on two partners with the same operands
 * in the same order, and hand on the bits; the order of the reduction is
 * MPI's (from 4 MB member order).  Elements travel as MPI's predefined types of
 * their size, reduced by one MPI_Op per dtype and op that calls
 * nvl_reduce_into, except float sums, which MPI_SUM adds as
 * nvl_reduce_into does (IEEE single addition) in Open MPI's vectorized
 * loop. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "host_paths.h"
#include "xfer.h"

/* One MPI_User_function per dtype and op: MPI passes no context. */
#define WIDE_REDUCE(dt, op, name)                                            \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type)   \
    {                                                                        \
        (void)type;                                                          \
        nvl_reduce_into(dt, op, inout, in, (size_t)*len);                    \
    }
#define WIDE_REDUCE_OPS(dt, tag)                                             \
    WIDE_REDUCE(dt, NVL_OP_SUM, reduce_##tag##_sum)                          \
    WIDE_REDUCE(dt, NVL_OP_MAX, reduce_##tag##_max)                          \
    WIDE_REDUCE(dt, NVL_OP_MIN, reduce_##tag##_min)
WIDE_REDUCE_OPS(NVL_DT_F32, f32)
WIDE_REDUCE_OPS(NVL_DT_BF16, bf16)
WIDE_REDUCE_OPS(NVL_DT_F16, f16)
WIDE_REDUCE_OPS(NVL_DT_FP8_E4M3, fp8)

#define WIDE_ROW(dt, tag)                                                    \
    [dt] = {[NVL_OP_SUM] = reduce_##tag##_sum,                               \
            [NVL_OP_MAX] = reduce_##tag##_max,                               \
            [NVL_OP_MIN] = reduce_##tag##_min}
static MPI_User_function *const reduce_fn[NVL_DT_COUNT][NVL_OP_COUNT] = {
    WIDE_ROW(NVL_DT_F32, f32), WIDE_ROW(NVL_DT_BF16, bf16),
    WIDE_ROW(NVL_DT_F16, f16), WIDE_ROW(NVL_DT_FP8_E4M3, fp8)};

/* MPI's predefined type of each dtype's size. */
static MPI_Datatype elem_type(nvl_dtype_t dt)
{
    switch (nvl_dtype_size(dt)) {
    case 4: return MPI_FLOAT;
    case 2: return MPI_UINT16_T;
    default: return MPI_UINT8_T;
    }
}

static void wide_setup(nvl_comm_t *c)
{
    if (c->wide_ready)
        return;
    for (int d = 0; d < NVL_DT_COUNT; d++)
        for (int o = 0; o < NVL_OP_COUNT; o++)
            MPI_Op_create(reduce_fn[d][o], 1, &c->reduce_op[d][o]);
    c->wide_ready = true;
}

void nvl_wide_free(nvl_comm_t *c)
{
    if (!c->wide_ready)
        return;
    for (int d = 0; d < NVL_DT_COUNT; d++)
        for (int o = 0; o < NVL_OP_COUNT; o++)
            MPI_Op_free(&c->reduce_op[d][o]);
    c->wide_ready = false;
}

/* Allreduces from this size on take two direct exchanges instead of
 * MPI_Allreduce: Open MPI's ring for large buffers makes 2(N-1) steps,
 * each a round through the scheduler when ranks outnumber cores, where
 * the exchanges move every block at once (9 and 12 ranks on 2 cores, 64
 * MB: 0.45 and 0.65 s against 2.9 and 4.1 s; 16 MB: 64 and 103 ms
 * against 74 and 137 ms; at 1 MB MPI_Allreduce is as fast or faster). */
#define DIRECT_MIN_BYTES ((size_t)4 << 20)

/* A large allreduce: a direct reduce-scatter (every member sends block k
 * to member k, which reduces the copies in member order) and a direct
 * allgather, every pair at once, as NVLS moves it. */
static nvl_status_t direct_allreduce(const nvl_coll_call_t *call)
{
    nvl_comm_t *c = call->comm;
    int n = c->size;
    size_t *off = malloc(2 * (size_t)n * sizeof *off);
    if (off == NULL) {
        nvl_report("out of memory for a %d-member allreduce", n);
        return NVL_ERR_NOMEM;
    }
    size_t *len = off + n;
    nvl_blocks_even(call->count, n, off, len);
    nvl_group_t g = nvl_group_all(c);
    nvl_blocks_t b = {off, len};
    if (call->recv != call->send)
        memcpy(call->recv, call->send,
               call->count * nvl_dtype_size(call->dtype));
    nvl_status_t st = nvl_direct_reduce_scatter(call, &g, call->recv, &b);
    if (st == NVL_OK)
        st = nvl_direct_allgather(call, &g, call->recv, &b);
    free(off);
    return st;
}

nvl_status_t nvl_wide_run(const nvl_coll_call_t *call, bool *handled_out)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, me = c->rank;
    size_t esz = nvl_dtype_size(call->dtype), count = call->count;
    size_t bytes = count * esz; /* allgather, RS: one member's block */
    *handled_out = false;
    if ((call->coll != NVL_COLL_ALLREDUCE &&
         call->coll != NVL_COLL_ALLGATHER &&
         call->coll != NVL_COLL_REDUCESCATTER) ||
        count > INT_MAX || bytes > INT_MAX)
        return NVL_OK; /* the algorithm's own pattern moves it */
    *handled_out = true;
    if (count == 0)
        return NVL_OK;
    wide_setup(c);
    MPI_Datatype type = elem_type(call->dtype);
    MPI_Op op = call->dtype == NVL_DT_F32 && call->op == NVL_OP_SUM
                    ? MPI_SUM
                    : c->reduce_op[call->dtype][call->op];
    const void *send = call->send;
    if (call->coll == NVL_COLL_ALLREDUCE && bytes >= DIRECT_MIN_BYTES)
        return direct_allreduce(call);
    if (call->coll == NVL_COLL_ALLREDUCE) {
        MPI_Allreduce(send == call->recv ? MPI_IN_PLACE : send, call->recv,
                      (int)count, type, op, c->mpi);
    } else if (call->coll == NVL_COLL_ALLGATHER) {
        /* in place: sendbuf = recvbuf + rank x sendcount, as in NCCL */
        bool inplace = send == (char *)call->recv + (size_t)me * bytes;
        MPI_Allgather(inplace ? MPI_IN_PLACE : send, (int)bytes, MPI_BYTE,
                      call->recv, (int)bytes, MPI_BYTE, c->mpi);
    } else {
        /* in place (recvbuf = sendbuf + rank x recvcount) the result goes
         * through scratch: MPI's MPI_IN_PLACE puts it at the start */
        char *recv = call->recv;
        bool inplace = (const char *)send + (size_t)me * bytes < recv + bytes &&
                       recv < (const char *)send + (size_t)n * bytes;
        if (inplace && (recv = nvl_xfer_scratch(c, bytes)) == NULL)
            return NVL_ERR_NOMEM;
        MPI_Reduce_scatter_block(send, recv, (int)count, type, op, c->mpi);
        if (recv != call->recv)
            memcpy(call->recv, recv, bytes);
    }
    return NVL_OK;
}
