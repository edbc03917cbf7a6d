/* The data path of allreduce in small groups (up to NVL_DIRECT_MAX_MEMBERS
 * members): the agreement exchange every call opens with (agree.c) already
 * sends one message from every member to every other, so the data rides
 * along with it instead of following it.
 *
 *   WHOLE   (up to WHOLE_MAX_BYTES): member i sends its whole buffer x_i to
 *           every other; each reduces x_0 op x_1 op ... op x_{N-1}.
 *           One exchange in all.
 *   SHARES  (blocks of up to NVL_AGREE_MAX_PAYLOAD): member i sends block k
 *           of x_i to member k; member k reduces its block in the same
 *           order, then sends it to every other (a direct allgather).
 *           Two exchanges, each member moving 2(N-1)/N of the buffer.
 *   SPLIT   (larger): the agreement carries nothing, then the two
 *           exchanges of SHARES.
 *
 * Every element is reduced in member order 0, 1, ..., N-1 (as the NVLS
 * switch does), so every member gets the same bits on every path, at every
 * size.  This is only how the host moves the bytes: the algorithm and
 * protocol the tuner chose, and so the modeled time, are the same as for
 * any other data path. */
#include <string.h>

#include "coll_impl.h"

/* Up to here one exchange of whole buffers beats two of shares on the
 * host (bench/coll_speed, docs/collectives.md). */
#define WHOLE_MAX_BYTES ((size_t)16 << 10)

#define TAG_SPLIT 91

nvl_direct_path_t nvl_direct_plan(const nvl_coll_call_t *call,
                                  nvl_agree_msg_t *msgs)
{
    if (call->coll != NVL_COLL_ALLREDUCE)
        return NVL_DIRECT_NONE;
    const nvl_comm_t *c = call->comm;
    int n = c->size;
    size_t esz = nvl_dtype_size(call->dtype), bytes = call->count * esz;
    if (bytes <= WHOLE_MAX_BYTES && bytes <= NVL_AGREE_MAX_PAYLOAD) {
        for (int k = 0; k < n; k++)
            msgs[k] = (nvl_agree_msg_t){call->send, bytes, bytes, NULL};
        return NVL_DIRECT_WHOLE;
    }
    size_t off[NVL_DIRECT_MAX_MEMBERS], len[NVL_DIRECT_MAX_MEMBERS];
    nvl_blocks_even(call->count, n, off, len);
    if (len[0] * esz > NVL_AGREE_MAX_PAYLOAD) /* block 0 is the longest */
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
    nvl_status_t st = nvl_xfer_exchange(c, ops, m, TAG_SPLIT);
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
    if (st == NVL_ERR_NOMEM)
        nvl_report("out of memory in a direct allreduce");
    return st;
}
