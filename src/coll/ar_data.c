/* Data mode of the serving engines' allreduces: every element's n copies
 * are summed in the implementation's documented order, accumulated in
 * float and rounded to the element type once, so that every member gets
 * the same bits, at every size and on every host path.  Members on one
 * host take the shared window (ar_window.c, which sums with
 * nvl_ar_reduce_range); the message paths below serve members on several
 * hosts, NVL_DATA_PATH_ALGORITHM and calls larger than the window:
 *
 *   groups of up to NVL_DIRECT_MAX_MEMBERS: the data rides along with the
 *     agreement every call opens with, as NCCL's calls do (direct.c):
 *     WHOLE buffers (each member reduces all), or SHARES (member k
 *     reduces block k of direct.c's even split, then a direct allgather);
 *   larger groups: while n S <= NVL_AGREE_MAX_PAYLOAD, every buffer
 *     rides along with the agreement too, gathered (agree.c), from the
 *     second of a loop of such calls on (the agreement's room follows the
 *     calls before);
 *   otherwise, and for SPLIT sizes: small ((n-1) S <= WHOLE_MAX_BYTES):
 *     every member's whole buffer to every other (one MPI_Allgather), each
 *     reduces all of it; larger: member b gets block b (nvl_ar_blocks) of
 *     every buffer (one MPI_Alltoallv), reduces it, and the blocks are
 *     gathered (one MPI_Allgatherv).
 *
 * Which member computes a sum does not change it: only the order does.
 * The modeled time is the implementation's, whatever path the host takes. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "host_paths.h"
#include "xfer.h"
#include "nvlemu/runtime.h"

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
    float acc[256], v[256];
    for (size_t base = 0; base < elems; base += 256) {
        size_t m = elems - base < 256 ? elems - base : 256;
        for (int k = 0; k < n; k++) {
            const char *src = x[(first + k) % n] + base * esz;
            float *dst = k == 0 ? acc : v;
            if (dt == NVL_DT_F32)
                memcpy(dst, src, m * sizeof *dst);
            else
                for (size_t j = 0; j < m; j++)
                    dst[j] = nvl_dtype_to_float(dt, src + j * esz);
            if (k == 0)
                continue;
            if (call->op == NVL_OP_SUM)
                for (size_t j = 0; j < m; j++)
                    acc[j] += v[j];
            else if (call->op == NVL_OP_MAX)
                for (size_t j = 0; j < m; j++)
                    acc[j] = v[j] > acc[j] ? v[j] : acc[j];
            else
                for (size_t j = 0; j < m; j++)
                    acc[j] = v[j] < acc[j] ? v[j] : acc[j];
        }
        if (dt == NVL_DT_F32)
            memcpy(out + base * esz, acc, m * sizeof *acc);
        else
            for (size_t j = 0; j < m; j++)
                nvl_dtype_from_float(dt, acc[j], out + (base + j) * esz);
    }
}

/* The first member of block b's sum. */
static int first_of(nvl_ar_order_t order, int b)
{
    return order == NVL_AR_ORDER_OWNER ? b : 0;
}

/* Cut where the owner of nvl_ar_blocks changes. */
void nvl_ar_reduce_range(const nvl_coll_call_t *call, nvl_ar_order_t order,
                         const char **x, size_t lo, size_t len, char *out)
{
    int n = call->comm->size;
    size_t esz = nvl_dtype_size(call->dtype);
    const char *small[NVL_DIRECT_MAX_MEMBERS];
    const char **xs = n <= NVL_DIRECT_MAX_MEMBERS ? small
                                                  : malloc(n * sizeof *xs);
    if (xs == NULL) { /* not worth a failure path: a few hundred bytes */
        nvl_report("out of memory for a %d-member allreduce", n);
        nvl_runtime_abort(1);
    }
    for (int b = 0; b < n && len > 0; b++) {
        size_t off, blen;
        nvl_ar_blocks(call->count, esz, n, b, &off, &blen);
        size_t a = lo > off ? lo : off, e = lo + len < off + blen
                                                 ? lo + len
                                                 : off + blen;
        if (a >= e)
            continue;
        for (int k = 0; k < n; k++)
            xs[k] = x[k] + (a - lo) * esz;
        reduce_ordered(call, xs, first_of(order, b), e - a,
                       out + (a - lo) * esz);
    }
    if (xs != small)
        free(xs);
}

/* The agreement carried the data (groups of up to
 * NVL_DIRECT_MAX_MEMBERS, direct.c's plan). */
static nvl_status_t run_direct(const nvl_coll_call_t *call,
                               nvl_ar_order_t order, nvl_direct_path_t path,
                               const nvl_agree_msg_t *msgs)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, me = c->rank;
    size_t esz = nvl_dtype_size(call->dtype);
    size_t off[NVL_DIRECT_MAX_MEMBERS], len[NVL_DIRECT_MAX_MEMBERS];
    nvl_blocks_even(call->count, n, off, len);
    bool whole = path == NVL_DIRECT_WHOLE;
    size_t lo = whole ? 0 : off[me], m = whole ? call->count : len[me];
    const char *x[NVL_DIRECT_MAX_MEMBERS];
    for (int k = 0; k < n; k++)
        x[k] = k == me ? (const char *)call->send + lo * esz : msgs[k].recv;
    nvl_ar_reduce_range(call, order, x, lo, m, (char *)call->recv + lo * esz);
    if (whole)
        return NVL_OK;
    nvl_group_t g = nvl_group_all(c);
    nvl_blocks_t b = {off, len};
    return nvl_direct_allgather(call, &g, call->recv, &b);
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

/* The agreement gathered every member's buffer (larger groups, small
 * calls): member k's at k x S. */
static nvl_status_t run_gathered(const nvl_coll_call_t *call,
                                 nvl_ar_order_t order, const char *all)
{
    int n = call->comm->size;
    size_t bytes = call->count * nvl_dtype_size(call->dtype);
    const char **x = malloc((size_t)n * sizeof *x);
    if (x == NULL) {
        nvl_report("out of memory for a %d-member allreduce", n);
        return NVL_ERR_NOMEM;
    }
    for (int k = 0; k < n; k++)
        x[k] = all + (size_t)k * bytes;
    nvl_ar_reduce_range(call, order, x, 0, call->count, call->recv);
    free(x);
    return NVL_OK;
}

/* Every buffer everywhere (one MPI_Allgather), then each member reduces
 * the whole of it. */
static nvl_status_t run_whole(const nvl_coll_call_t *call,
                              nvl_ar_order_t order)
{
    nvl_comm_t *c = call->comm;
    size_t bytes = call->count * nvl_dtype_size(call->dtype);
    char *all = nvl_xfer_scratch(c, (size_t)c->size * bytes);
    if (all == NULL)
        return NVL_ERR_NOMEM;
    MPI_Allgather(call->send, (int)bytes, MPI_BYTE, all, (int)bytes,
                  MPI_BYTE, c->mpi);
    return run_gathered(call, order, all);
}

nvl_status_t nvl_ar_run(const nvl_coll_call_t *call, nvl_ar_order_t order,
                        nvl_direct_path_t path, const nvl_agree_msg_t *msgs,
                        const void *gathered)
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
    if (path == NVL_DIRECT_WHOLE || path == NVL_DIRECT_SHARES)
        return run_direct(call, order, path, msgs);
    if (gathered != NULL)
        return run_gathered(call, order, gathered);
    if (bytes > INT_MAX / (size_t)n) {
        nvl_report("allreduce of %zu bytes on %d members: beyond what the "
                   "host's data path moves in one call", bytes, n);
        return NVL_ERR_RANGE;
    }
    return bytes * (size_t)(n - 1) <= WHOLE_MAX_BYTES
               ? run_whole(call, order)
               : run_blocks(call, order);
}
