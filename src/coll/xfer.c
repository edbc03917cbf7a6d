/* Moving payloads through MPI for data mode, and the blocks and groups the
 * algorithms walk. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll_impl.h"
#include "nvlemu/runtime.h"

#define PIECE_BYTES ((size_t)1 << 30) /* MPI counts are int */

void *nvl_xfer_scratch(nvl_comm_t *c, size_t bytes)
{
    if (bytes <= c->scratch_bytes)
        return c->scratch;
    void *p = realloc(c->scratch, bytes);
    if (p == NULL) {
        nvl_report("out of memory: %zu bytes of collective scratch", bytes);
        return NULL;
    }
    c->scratch = p;
    c->scratch_bytes = bytes;
    return p;
}

static void wait_req(MPI_Request *r)
{
    if (nvl_runtime() != NULL)
        nvl_runtime_wait(r);
    else
        MPI_Wait(r, MPI_STATUS_IGNORE);
}

nvl_status_t nvl_xfer_sendrecv(nvl_comm_t *c, const void *sbuf,
                               size_t sbytes, int dst, void *rbuf,
                               size_t rbytes, int src, int tag)
{
    size_t sdone = 0, rdone = 0;
    do {
        MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        size_t rn = 0, sn = 0;
        if (src >= 0 && rdone < rbytes) {
            rn = rbytes - rdone < PIECE_BYTES ? rbytes - rdone : PIECE_BYTES;
            MPI_Irecv((char *)rbuf + rdone, (int)rn, MPI_BYTE, src, tag,
                      c->mpi, &req[0]);
        }
        if (dst >= 0 && sdone < sbytes) {
            sn = sbytes - sdone < PIECE_BYTES ? sbytes - sdone : PIECE_BYTES;
            MPI_Isend((const char *)sbuf + sdone, (int)sn, MPI_BYTE, dst, tag,
                      c->mpi, &req[1]);
        }
        wait_req(&req[0]);
        wait_req(&req[1]);
        rdone += rn;
        sdone += sn;
    } while ((src >= 0 && rdone < rbytes) || (dst >= 0 && sdone < sbytes));
    return NVL_OK;
}

void nvl_xfer_reduce(const nvl_coll_call_t *call, void *inout, const void *in,
                     size_t n)
{
    nvl_reduce_into(call->dtype, call->op, inout, in, n);
}

void nvl_blocks_even(size_t count, int n, size_t *off, size_t *len)
{
    size_t base = count / (size_t)n, extra = count % (size_t)n, at = 0;
    for (int i = 0; i < n; i++) {
        len[i] = base + ((size_t)i < extra ? 1 : 0);
        off[i] = at;
        at += len[i];
    }
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

nvl_status_t nvl_ring_reduce_scatter(const nvl_coll_call_t *call,
                                     const nvl_group_t *g, char *buf,
                                     const nvl_blocks_t *b)
{
    size_t esz = nvl_dtype_size(call->dtype);
    int n = g->n, p = g->pos;
    if (n == 1)
        return NVL_OK;
    size_t maxlen = 0;
    for (int i = 0; i < n; i++)
        if (b->len[i] > maxlen)
            maxlen = b->len[i];
    char *tmp = nvl_xfer_scratch(call->comm, maxlen * esz);
    if (tmp == NULL && maxlen > 0)
        return NVL_ERR_NOMEM;
    int next = g->members[mod(p + 1, n)], prev = g->members[mod(p - 1, n)];
    for (int s = 0; s < n - 1; s++) {
        int sb = mod(p - 1 - s, n), rb = mod(p - 2 - s, n);
        nvl_status_t st = nvl_xfer_sendrecv(
            call->comm, buf + b->off[sb] * esz, b->len[sb] * esz, next, tmp,
            b->len[rb] * esz, prev, 100);
        if (st != NVL_OK)
            return st;
        nvl_xfer_reduce(call, buf + b->off[rb] * esz, tmp, b->len[rb]);
    }
    return NVL_OK;
}

nvl_status_t nvl_ring_allgather(const nvl_coll_call_t *call,
                                const nvl_group_t *g, char *buf,
                                const nvl_blocks_t *b)
{
    size_t esz = nvl_dtype_size(call->dtype);
    int n = g->n, p = g->pos;
    int next = g->members[mod(p + 1, n)], prev = g->members[mod(p - 1, n)];
    for (int s = 0; s < n - 1; s++) {
        int sb = mod(p - s, n), rb = mod(p - s - 1, n);
        nvl_status_t st = nvl_xfer_sendrecv(
            call->comm, buf + b->off[sb] * esz, b->len[sb] * esz, next,
            buf + b->off[rb] * esz, b->len[rb] * esz, prev, 101);
        if (st != NVL_OK)
            return st;
    }
    return NVL_OK;
}

nvl_status_t nvl_direct_reduce_scatter(const nvl_coll_call_t *call,
                                       const nvl_group_t *g, char *buf,
                                       const nvl_blocks_t *b)
{
    size_t esz = nvl_dtype_size(call->dtype);
    int n = g->n, p = g->pos;
    if (n == 1)
        return NVL_OK;
    size_t mine = b->len[p] * esz;
    /* slot j holds member j's copy of my block; my own stays in buf */
    char *tmp = nvl_xfer_scratch(call->comm, mine * (size_t)n);
    if (tmp == NULL && mine > 0)
        return NVL_ERR_NOMEM;
    for (int k = 1; k < n; k++) {
        int to = mod(p + k, n), from = mod(p - k, n);
        nvl_status_t st = nvl_xfer_sendrecv(
            call->comm, buf + b->off[to] * esz, b->len[to] * esz,
            g->members[to], tmp + (size_t)from * mine, mine,
            g->members[from], 102);
        if (st != NVL_OK)
            return st;
    }
    memcpy(tmp + (size_t)p * mine, buf + b->off[p] * esz, mine);
    /* the switch reduces in a fixed order: member 0, 1, ..., n-1 */
    for (int j = 1; j < n; j++)
        nvl_xfer_reduce(call, tmp, tmp + (size_t)j * mine, b->len[p]);
    memcpy(buf + b->off[p] * esz, tmp, mine);
    return NVL_OK;
}

nvl_status_t nvl_direct_allgather(const nvl_coll_call_t *call,
                                  const nvl_group_t *g, char *buf,
                                  const nvl_blocks_t *b)
{
    size_t esz = nvl_dtype_size(call->dtype);
    int n = g->n, p = g->pos;
    for (int k = 1; k < n; k++) {
        int to = mod(p + k, n), from = mod(p - k, n);
        nvl_status_t st = nvl_xfer_sendrecv(
            call->comm, buf + b->off[p] * esz, b->len[p] * esz,
            g->members[to], buf + b->off[from] * esz, b->len[from] * esz,
            g->members[from], 103);
        if (st != NVL_OK)
            return st;
    }
    return NVL_OK;
}
