/* The data paths of small groups (up to NVL_DIRECT_MAX_MEMBERS members):
 * the agreement exchange every call opens with (agree.c) already sends one
 * message from every member to every other, so the data rides along with
 * it instead of following it.
 *
 * allreduce, S bytes:
 *   WHOLE   (up to (N-1) x S = WHOLE_MAX_RECV_BYTES, unless a whole
 *           buffer is too large to go at once and a share is not): member
 *           i sends its whole buffer x_i to every other; each reduces
 *           x_0 op x_1 op ... op x_{N-1}.  One exchange in all.
 *   SHARES  (blocks of up to NVL_AGREE_MAX_PAYLOAD): member i sends block k
 *           of x_i to member k; member k reduces its block in the same
 *           order, then sends it to every other (a direct allgather).
 *           Two exchanges, each member moving 2(N-1)/N of the buffer.
 *   SPLIT   (larger): the agreement carries nothing, then the two
 *           exchanges of SHARES.
 * allgather, reduce-scatter (blocks of up to NVL_AGREE_MAX_PAYLOAD):
 *   GATHER  member i sends its block to every other.
 *   SCATTER member i sends its block k to member k, which reduces them.
 * Other collectives, and larger blocks: the chosen algorithm's run().
 *
 * Every element is reduced in member order 0, 1, ..., N-1 (as the NVLS
 * switch does), so every member gets the same bits on every path, at every
 * size.  This is only how the host moves the bytes: the algorithm and
 * protocol the tuner chose, and so the modeled time, are the same as for
 * any other data path. */
#include <string.h>

#include "host_paths.h"
#include "xfer.h"

/* Whole buffers while a member receives at most this much of them,
 * (N-1) x the buffer: where one exchange of whole buffers beats two of
 * shares on the host (2 to 8 ranks on 2 cores, bench/coll_speed). */
#define WHOLE_MAX_RECV_BYTES ((size_t)64 << 10)

/* The largest message Open MPI's shared-memory transport sends at once;
 * a larger one waits for a rendezvous with its receiver (vader's 4 KB
 * eager limit, its own headers included: 4040 bytes measured to go at
 * once, 4048 not).  Two exchanges of shares that go at once beat one of
 * whole buffers that does not: 2 ranks, 4 KB: 3.0 us against 6.8 us. */
#define EAGER_MAX_BYTES ((size_t)4000)


nvl_direct_path_t nvl_direct_plan(const nvl_coll_call_t *call,
                                  nvl_agree_msg_t *msgs)
{
    const nvl_comm_t *c = call->comm;
    int n = c->size;
    size_t esz = nvl_dtype_size(call->dtype), bytes = call->count * esz;
    if (call->coll == NVL_COLL_ALLGATHER ||
        call->coll == NVL_COLL_REDUCESCATTER) {
        if (bytes > NVL_AGREE_MAX_PAYLOAD) /* bytes: one member's block */
            return NVL_DIRECT_NONE;
        bool gather = call->coll == NVL_COLL_ALLGATHER;
        for (int k = 0; k < n; k++)
            msgs[k] = (nvl_agree_msg_t){
                (const char *)call->send + (gather ? 0 : (size_t)k * bytes),
                bytes, bytes, NULL};
        return gather ? NVL_DIRECT_GATHER : NVL_DIRECT_SCATTER;
    }
    if (call->coll != NVL_COLL_ALLREDUCE)
        return NVL_DIRECT_NONE;
    size_t off[NVL_DIRECT_MAX_MEMBERS], len[NVL_DIRECT_MAX_MEMBERS];
    nvl_blocks_even(call->count, n, off, len);
    size_t share = len[0] * esz; /* block 0 is the longest */
    const size_t hb = NVL_AGREE_HEADER_BYTES;
    bool whole_fits = bytes <= NVL_AGREE_MAX_PAYLOAD &&
                      bytes * (size_t)(n - 1) <= WHOLE_MAX_RECV_BYTES;
    bool whole_eager = bytes + hb <= EAGER_MAX_BYTES;
    bool share_eager = share + hb <= EAGER_MAX_BYTES;
    if (whole_fits && (whole_eager || !share_eager)) {
        for (int k = 0; k < n; k++)
            msgs[k] = (nvl_agree_msg_t){call->send, bytes, bytes, NULL};
        return NVL_DIRECT_WHOLE;
    }
    if (share > NVL_AGREE_MAX_PAYLOAD)
        return NVL_DIRECT_SPLIT;
    for (int k = 0; k < n; k++)
        msgs[k] = (nvl_agree_msg_t){(const char *)call->send + off[k] * esz,
                                    len[k] * esz, len[c->rank] * esz, NULL};
    return NVL_DIRECT_SHARES;
}

/* out = x_0 op x_1 op ... op x_{N-1} over elems elements, where x_k is
 * at x[k] and this member's own at x[rank] may be out itself; acc (elems
 * long) is needed only then, for members other than 0. */
static void reduce_in_order(const nvl_coll_call_t *call, const char **x,
                            char *out, char *acc, size_t elems)
{
    nvl_comm_t *c = call->comm;
    int me = c->rank;
    size_t bytes = elems * nvl_dtype_size(call->dtype);
    if (bytes == 0)
        return;
    if (x[me] != out || me == 0) /* else keep mine until its turn */
        acc = out;
    if (acc != x[0])
        memcpy(acc, x[0], bytes);
    for (int k = 1; k < c->size; k++)
        nvl_xfer_reduce(call, acc, x[k], elems);
    if (acc != out)
        memcpy(out, acc, bytes);
}

/* Reduces this member's block of every member's buffer (x_k's block `me`
 * lands at x[k]) in member order into out. */
static nvl_status_t reduce_block(const nvl_coll_call_t *call,
                                 const nvl_agree_msg_t *msgs,
                                 const char *mine, char *out, size_t elems)
{
    const char *x[NVL_DIRECT_MAX_MEMBERS];
    for (int k = 0; k < call->comm->size; k++)
        x[k] = k == call->comm->rank ? mine : msgs[k].recv;
    char *acc = NULL;
    if (mine == out && call->comm->rank > 0 && elems > 0) {
        acc = nvl_xfer_scratch(call->comm,
                               elems * nvl_dtype_size(call->dtype));
        if (acc == NULL)
            return NVL_ERR_NOMEM;
    }
    reduce_in_order(call, x, out, acc, elems);
    return NVL_OK;
}

/* SPLIT's first exchange: block k of the send buffer to member k, every
 * member's copy of block `me` into scratch, reduced into the receive
 * buffer.  No copy of the whole buffer: in place, blocks k != me are sent
 * before the allgather overwrites them. */
static nvl_status_t split_reduce_scatter(const nvl_coll_call_t *call,
                                         const size_t *off, const size_t *len)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, me = c->rank;
    size_t esz = nvl_dtype_size(call->dtype), mine = len[me] * esz;
    /* slot k: member k's copy of my block; slot me: the accumulator */
    char *tmp = nvl_xfer_scratch(c, (size_t)n * mine + 1);
    if (tmp == NULL)
        return NVL_ERR_NOMEM;
    nvl_p2p_op_t ops[2 * NVL_DIRECT_MAX_MEMBERS];
    const char *x[NVL_DIRECT_MAX_MEMBERS];
    size_t m = 0;
    for (int k = 0; k < n; k++) {
        x[k] = (const char *)call->send + off[me] * esz;
        if (k == me)
            continue;
        x[k] = tmp + (size_t)k * mine;
        ops[m++] = (nvl_p2p_op_t){false, tmp + (size_t)k * mine, mine, k};
        ops[m++] = (nvl_p2p_op_t){true, (char *)call->send + off[k] * esz,
                                  len[k] * esz, k};
    }
    nvl_status_t st = nvl_xfer_exchange(c, ops, m, NVL_TAG_SPLIT);
    if (st == NVL_OK)
        reduce_in_order(call, x, (char *)call->recv + off[me] * esz,
                        tmp + (size_t)me * mine, len[me]);
    return st;
}

nvl_status_t nvl_direct_finish(const nvl_coll_call_t *call,
                               nvl_direct_path_t path,
                               const nvl_agree_msg_t *msgs)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, me = c->rank;
    size_t esz = nvl_dtype_size(call->dtype);
    if (path == NVL_DIRECT_WHOLE)
        return reduce_block(call, msgs, call->send, call->recv, call->count);
    if (path == NVL_DIRECT_SCATTER)
        return reduce_block(call, msgs,
                            (const char *)call->send +
                                (size_t)me * call->count * esz,
                            call->recv, call->count);
    if (path == NVL_DIRECT_GATHER) {
        size_t bytes = call->count * esz;
        for (int k = 0; k < n && bytes > 0; k++) {
            char *dst = (char *)call->recv + (size_t)k * bytes;
            const void *src = k == me ? call->send : msgs[k].recv;
            if (dst != src) /* in place: the block is already there */
                memcpy(dst, src, bytes);
        }
        return NVL_OK;
    }
    size_t off[NVL_DIRECT_MAX_MEMBERS], len[NVL_DIRECT_MAX_MEMBERS];
    nvl_blocks_even(call->count, n, off, len);
    nvl_group_t g = nvl_group_all(c);
    nvl_blocks_t b = {off, len};
    nvl_status_t st =
        path == NVL_DIRECT_SHARES
            ? reduce_block(call, msgs,
                           (const char *)call->send + off[me] * esz,
                           (char *)call->recv + off[me] * esz, len[me])
            : split_reduce_scatter(call, off, len);
    if (st == NVL_OK)
        st = nvl_direct_allgather(call, &g, call->recv, &b);
    return st; /* out of memory: nvl_xfer_scratch reported it */
}
