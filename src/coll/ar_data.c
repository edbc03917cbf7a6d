/* Data mode of the serving engines' allreduces: every element's n copies
 * are summed in the implementation's documented order, accumulated in
 * float and rounded to the element type once, so that every member gets
 * the same bits, at every size and on every host path:
 *
 *   small ((n-1) S <= WHOLE_MAX_BYTES): every member's whole buffer to
 *     every other (one MPI_Allgather); each reduces all of it.
 *   larger: member b gets block b (nvl_ar_blocks) of every buffer (one
 *     MPI_Alltoallv), reduces it, and the blocks are gathered (one
 *     MPI_Allgatherv).
 *
 * Which member computes a sum does not change it: only the order does.
 * The modeled time is the implementation's, whatever path the host takes. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll_impl.h"

/* Whole buffers while a member receives at most this much of them. */
#define WHOLE_MAX_BYTES ((size_t)64 << 10)

/* vLLM's packs: 16 bytes (packed_t<T>::P holds 16 / sizeof(T) elements). */
#define PACK_BYTES 16

void nvl_ar_blocks(size_t count, size_t esz, int n, int b, size_t *off,
                   size_t *len)
{
    size_t pack = PACK_BYTES / esz, packs = count / pack;
    size_t part = packs / (size_t)n * pack; /* elements per member */
    *off = (size_t)b * part;
    *len = b == n - 1 ? count - *off : part;
}

/* out[0..elems) = the sum over k of x[(first + k) % n], k = 0..n-1 (or
 * max / min), in float, rounded once.  out may be any of the x. */
static void reduce_ordered(const nvl_coll_call_t *call, const char **x,
                           int first, size_t elems, char *out)
{
    int n = call->comm->size;
    nvl_dtype_t dt = call->dtype;
    size_t esz = nvl_dtype_size(dt);
    float acc[256];
    for (size_t base = 0; base < elems; base += 256) {
        size_t m = elems - base < 256 ? elems - base : 256;
        for (size_t j = 0; j < m; j++)
            acc[j] = nvl_dtype_to_float(dt, x[first] + (base + j) * esz);
        for (int k = 1; k < n; k++) {
            const char *src = x[(first + k) % n] + base * esz;
            for (size_t j = 0; j < m; j++) {
                float v = nvl_dtype_to_float(dt, src + j * esz);
                switch (call->op) {
                case NVL_OP_SUM: acc[j] += v; break;
                case NVL_OP_MAX: acc[j] = v > acc[j] ? v : acc[j]; break;
                default: acc[j] = v < acc[j] ? v : acc[j]; break;
                }
            }
        }
        for (size_t j = 0; j < m; j++)
            nvl_dtype_from_float(dt, acc[j], out + (base + j) * esz);
    }
}

/* The first member of block b's sum. */
static int first_of(nvl_ar_order_t order, int b)
{
    return order == NVL_AR_ORDER_OWNER ? b : 0;
}

/* Every buffer everywhere, then each member reduces the whole of it. */
static nvl_status_t run_whole(const nvl_coll_call_t *call,
                              nvl_ar_order_t order)
{
    nvl_comm_t *c = call->comm;
    int n = c->size;
    size_t esz = nvl_dtype_size(call->dtype), bytes = call->count * esz;
    char *all = nvl_xfer_scratch(c, (size_t)n * bytes);
    const char **xb = malloc((size_t)n * sizeof *xb);
    if (all == NULL || xb == NULL) {
        free(xb);
        if (all != NULL)
            nvl_report("out of memory for a %d-member allreduce", n);
        return NVL_ERR_NOMEM;
    }
    MPI_Allgather(call->send, (int)bytes, MPI_BYTE, all, (int)bytes,
                  MPI_BYTE, c->mpi);
    for (int b = 0; b < n; b++) {
        size_t off, len;
        nvl_ar_blocks(call->count, esz, n, b, &off, &len);
        for (int k = 0; k < n; k++)
            xb[k] = all + (size_t)k * bytes + off * esz;
        reduce_ordered(call, xb, first_of(order, b), len,
                       (char *)call->recv + off * esz);
    }
    free(xb);
    return NVL_OK;
}

/* Block b to member b, reduced there, then gathered. */
static nvl_status_t run_blocks(const nvl_coll_call_t *call,
                               nvl_ar_order_t order)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, me = c->rank;
    size_t esz = nvl_dtype_size(call->dtype);
    size_t myoff, mylen;
    nvl_ar_blocks(call->count, esz, n, me, &myoff, &mylen);
    size_t mine = mylen * esz;
    char *tmp = nvl_xfer_scratch(c, (size_t)n * mine + 1);
    int *cnt = malloc(4 * (size_t)n * sizeof *cnt);
    const char **x = malloc((size_t)n * sizeof *x);
    if (tmp == NULL || cnt == NULL || x == NULL) {
        free(cnt);
        free(x);
        if (tmp != NULL)
            nvl_report("out of memory for a %d-member allreduce", n);
        return NVL_ERR_NOMEM;
    }
    int *sdisp = cnt + n, *rcnt = cnt + 2 * n, *rdisp = cnt + 3 * n;
    for (int k = 0; k < n; k++) {
        size_t off, len;
        nvl_ar_blocks(call->count, esz, n, k, &off, &len);
        cnt[k] = (int)(len * esz);
        sdisp[k] = (int)(off * esz);
        rcnt[k] = (int)mine;
        rdisp[k] = (int)((size_t)k * mine);
        x[k] = tmp + (size_t)k * mine;
    }
    MPI_Alltoallv(call->send, cnt, sdisp, MPI_BYTE, tmp, rcnt, rdisp,
                  MPI_BYTE, c->mpi);
    char *out = (char *)call->recv + myoff * esz;
    reduce_ordered(call, x, first_of(order, me), mylen, out);
    /* gathered in place: the counts and offsets are every member's block */
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, call->recv, cnt, sdisp,
                   MPI_BYTE, c->mpi);
    free(x);
    free(cnt);
    return NVL_OK;
}

nvl_status_t nvl_ar_run(const nvl_coll_call_t *call, nvl_ar_order_t order)
{
    int n = call->comm->size;
    size_t bytes = call->count * nvl_dtype_size(call->dtype);
    if (bytes == 0)
        return NVL_OK;
    if (n == 1) {
        if (call->recv != call->send)
            memcpy(call->recv, call->send, bytes);
        return NVL_OK;
    }
    if (bytes > INT_MAX / (size_t)n) {
        nvl_report("allreduce of %zu bytes on %d members: beyond what the "
                   "host's data path moves in one call", bytes, n);
        return NVL_ERR_RANGE;
    }
    return bytes * (size_t)(n - 1) <= WHOLE_MAX_BYTES
               ? run_whole(call, order)
               : run_blocks(call, order);
}
