/* Moving payloads through MPI for data mode, and the blocks and groups the
 * algorithms walk. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "xfer.h"
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

/* How long an oversubscribed rank polls before the runtime's wait, which
 * sleeps: a sleep on Linux lasts at least its timer slack (50 us), and a
 * rank asleep holds up its peers' rendezvous transfers.  Measured with 3,
 * 4 and 8 ranks on 2 cores (docs/collectives.md): a 1 KB direct exchange
 * takes 13 us this way against 34 us with the runtime's wait alone, and a
 * 4 MB allreduce of 3 ranks 2.3 ms against 7.1 ms when polling stops after
 * 50 us; polling without end gains nothing more. */
#define POLL_S 1e-3

static void wait_all(int n, MPI_Request *r)
{
    const nvl_runtime_t *rt = nvl_runtime();
    if (rt == NULL || rt->wait != NVL_WAIT_BLOCK) {
        MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
        return;
    }
    /* Open MPI yields the core in each idle poll: the runtime set
     * mpi_yield_when_idle for oversubscribed jobs */
    double until = MPI_Wtime() + POLL_S;
    do {
        int done = 0;
        MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE);
        if (done)
            return;
    } while (MPI_Wtime() < until);
    nvl_runtime_waitall(n, r);
}

static size_t pieces(size_t bytes)
{
    return bytes == 0 ? 0 : (bytes + PIECE_BYTES - 1) / PIECE_BYTES;
}

nvl_status_t nvl_xfer_exchange(nvl_comm_t *c, const nvl_p2p_op_t *ops,
                               size_t n, nvl_tag_t tag)
{
    size_t nreq = 0;
    for (size_t k = 0; k < n; k++)
        nreq += pieces(ops[k].bytes);
    MPI_Request few[2 * NVL_DIRECT_MAX_MEMBERS];
    MPI_Request *req = nreq <= 2 * NVL_DIRECT_MAX_MEMBERS
                           ? few
                           : malloc(nreq * sizeof *req);
    if (req == NULL) {
        nvl_report("out of memory for %zu MPI requests", nreq);
        return NVL_ERR_NOMEM;
    }
    size_t r = 0;
    for (int sends = 0; sends < 2; sends++) /* receives first */
        for (size_t k = 0; k < n; k++) {
            const nvl_p2p_op_t *o = &ops[k];
            if (o->send != (sends == 1))
                continue;
            for (size_t at = 0; at < o->bytes; at += PIECE_BYTES) {
                int len = (int)(o->bytes - at < PIECE_BYTES ? o->bytes - at
                                                             : PIECE_BYTES);
                if (o->send)
                    MPI_Isend((const char *)o->buf + at, len, MPI_BYTE,
                              o->peer, tag, c->mpi, &req[r++]);
                else
                    MPI_Irecv((char *)o->buf + at, len, MPI_BYTE, o->peer,
                              tag, c->mpi, &req[r++]);
            }
        }
    wait_all((int)r, req);
    if (req != few)
        free(req);
    return NVL_OK;
}

nvl_status_t nvl_xfer_sendrecv(nvl_comm_t *c, const void *sbuf,
                               size_t sbytes, int dst, void *rbuf,
                               size_t rbytes, int src, nvl_tag_t tag)
{
    nvl_p2p_op_t ops[2] = {{0}};
    size_t n = 0;
    if (src >= 0)
        ops[n++] = (nvl_p2p_op_t){false, rbuf, rbytes, src};
    if (dst >= 0)
        ops[n++] = (nvl_p2p_op_t){true, (void *)sbuf, sbytes, dst};
    return nvl_xfer_exchange(c, ops, n, tag);
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

nvl_status_t nvl_blocks_run(const nvl_coll_call_t *call,
                            const nvl_block_passes_t *p)
{
    nvl_comm_t *c = call->comm;
    int n = c->size;
    size_t esz = nvl_dtype_size(call->dtype);
    size_t *off = malloc(2 * (size_t)n * sizeof *off);
    char *work = NULL;
    nvl_status_t st = NVL_ERR_NOMEM;
    if (off == NULL)
        goto out;
    size_t *len = off + n;
    nvl_group_t g = nvl_group_all(c);
    nvl_blocks_t b = {off, len};
    if (call->coll == NVL_COLL_ALLREDUCE) {
        if (call->recv != call->send)
            memcpy(call->recv, call->send, call->count * esz);
        nvl_blocks_even(call->count, n, off, len);
        st = p->reduce_scatter(call, &g, call->recv, &b);
        if (st == NVL_OK)
            st = p->allgather(call, &g, call->recv, &b);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        off[i] = (size_t)i * call->count;
        len[i] = call->count;
    }
    if (call->coll == NVL_COLL_ALLGATHER) {
        memmove((char *)call->recv + off[c->rank] * esz, call->send,
                call->count * esz);
        st = p->allgather(call, &g, call->recv, &b);
    } else if (call->coll == NVL_COLL_REDUCESCATTER) {
        work = malloc(call->count * (size_t)n * esz + 1);
        if (work == NULL)
            goto out;
        memcpy(work, call->send, call->count * (size_t)n * esz);
        st = p->reduce_scatter(call, &g, work, &b);
        if (st == NVL_OK)
            memcpy(call->recv, work + off[c->rank] * esz, call->count * esz);
    } else {
        st = NVL_ERR_INVALID;
    }
out:
    if (st == NVL_ERR_NOMEM)
        nvl_report("out of memory in %s %s", p->name,
                   nvl_coll_name(call->coll));
    free(work);
    free(off);
    return st;
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
            b->len[rb] * esz, prev, NVL_TAG_RING_RS);
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
            buf + b->off[rb] * esz, b->len[rb] * esz, prev, NVL_TAG_RING_AG);
        if (st != NVL_OK)
            return st;
    }
    return NVL_OK;
}

/* Every member sends block[to] of its buffer to member `to` and receives
 * block[me] of member `from` into slot `from` of tmp (reduce-scatter), or
 * block[from] into its own buffer (allgather), all peers at once. */
static nvl_status_t direct_exchange(const nvl_coll_call_t *call,
                                    const nvl_group_t *g, char *buf,
                                    const nvl_blocks_t *b, char *tmp,
                                    nvl_tag_t tag)
{
    size_t esz = nvl_dtype_size(call->dtype);
    int n = g->n, p = g->pos;
    nvl_p2p_op_t few[2 * NVL_DIRECT_MAX_MEMBERS] = {{0}};
    nvl_p2p_op_t *ops = n <= NVL_DIRECT_MAX_MEMBERS
                            ? few
                            : malloc(2 * (size_t)n * sizeof *ops);
    if (ops == NULL) {
        nvl_report("out of memory for a %d-member exchange", n);
        return NVL_ERR_NOMEM;
    }
    size_t m = 0;
    for (int k = 0; k < n; k++) {
        if (k == p)
            continue;
        int out = tmp != NULL ? k : p; /* reduce-scatter sends their block */
        ops[m++] = (nvl_p2p_op_t){true, buf + b->off[out] * esz,
                                  b->len[out] * esz, g->members[k]};
        if (tmp != NULL)
            ops[m++] = (nvl_p2p_op_t){false, tmp + (size_t)k * b->len[p] * esz,
                                      b->len[p] * esz, g->members[k]};
        else
            ops[m++] = (nvl_p2p_op_t){false, buf + b->off[k] * esz,
                                      b->len[k] * esz, g->members[k]};
    }
    nvl_status_t st = nvl_xfer_exchange(call->comm, ops, m, tag);
    if (ops != few)
        free(ops);
    return st;
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
    /* slot j holds member j's copy of my block */
    char *tmp = nvl_xfer_scratch(call->comm, mine * (size_t)n + 1);
    if (tmp == NULL)
        return NVL_ERR_NOMEM;
    nvl_status_t st = direct_exchange(call, g, buf, b, tmp,
                                      NVL_TAG_DIRECT_RS);
    if (st != NVL_OK)
        return st;
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
    if (g->n == 1)
        return NVL_OK;
    return direct_exchange(call, g, buf, b, NULL, NVL_TAG_DIRECT_AG);
}
