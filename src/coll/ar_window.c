/* The host path of the serving engines' allreduces when every member runs
 * on one host: an MPI-3 shared-memory window (MPI_Win_allocate_shared) in
 * which each member stages its buffer and reads its peers' in place, as
 * the kernels load their peers' IPC buffers over NVLink.  The sums are
 * ar_data.c's (nvl_ar_reduce_range: the implementation's documented order,
 * in float, rounded once), so the bits are those of every other path.
 *
 *   before agreeing: member i copies x_i into its slot, one of two by the
 *     parity of the window's calls;
 *   the agreement (agree.c) is the synchronisation: no member leaves it
 *     before every member entered it, so every slot holds its buffer;
 *   n S <= WHOLE_MAX_BYTES: each member reduces the whole call from the
 *     slots into its receive buffer (one-shot's own pattern): nothing but
 *     the agreement;
 *   larger: member b reduces block b (nvl_ar_blocks) into block b of its
 *     own slot, which no peer reads, then MPI_Barrier, then every member
 *     copies block b out of member b's slot (two-shot's pattern): the
 *     agreement and one barrier.
 * Two slots: a member stages call c + 2 into call c's slot only once it
 * has left the agreement of call c + 1, which no member enters before it
 * has read all it needed of call c.  A mismatched call reads nothing.
 *
 * Why not MPI's collectives (ar_data.c's path when the members span
 * hosts): their reductions cannot sum in these orders (a user-defined op
 * is applied pairwise in a grouping MPI chooses), so the data moves as
 * raw copies -- an MPI_Alltoallv and an MPI_Allgatherv after the
 * agreement, 1.2 to 2.1x one MPI_Allreduce at 9 ranks for 8 KB to 512 KB
 * -- where here it moves once, at memory speed, behind at most two
 * synchronisations (docs/collectives.md, "What the emulation costs").
 *
 * The window grows (collectively, after an agreed call: every member alike)
 * to the next power of two of the largest call, up to WINDOW_MAX_BYTES;
 * larger calls take ar_data.c's path. */
#include <stdlib.h>
#include <string.h>

#include "host_paths.h"

/* Calls of up to n S bytes in all are reduced whole by every member: one
 * synchronisation, but every member reads every buffer.  Above, blocks:
 * two synchronisations, each buffer read once.  9 and 16 ranks on 2 idle
 * cores: at 1 KB whole 30 and 82 us against blocks 48 and 118 us, at 8 KB
 * blocks 54 and 134 us against 76 and 222 us; with other jobs on the
 * cores (load 120) the barrier costs more: at 2 KB whole 0.79x and 1.0x
 * one MPI_Allreduce against blocks 1.1x and 1.4x, at 4 KB 0.6x both. */
#define WHOLE_MAX_BYTES ((size_t)64 << 10)

/* The largest call through the window; each member holds two slots of up
 * to this size. */
#define WINDOW_MAX_BYTES ((size_t)4 << 20)

/* The smallest slot (bytes). */
#define MIN_SLOT_BYTES ((size_t)4 << 10)

bool nvl_ar_window_fits(const nvl_comm_t *c, size_t bytes)
{
    return c->win_host >= 0 && c->size > 1 && bytes > 0 &&
           bytes <= WINDOW_MAX_BYTES &&
           c->data_path == NVL_DATA_PATH_FAST;
}

/* Member k's slot of this call's parity. */
static char *slot(const nvl_comm_t *c, int k)
{
    return c->win_slots[k] + (c->win_calls & 1) * c->win_slot_bytes;
}

bool nvl_ar_window_stage(const nvl_coll_call_t *call)
{
    nvl_comm_t *c = call->comm;
    size_t bytes = call->count * nvl_dtype_size(call->dtype);
    if (c->win_slot_bytes < bytes)
        return false; /* grown after agreeing */
    memcpy(slot(c, c->rank), call->send, bytes);
    MPI_Win_sync(c->win);
    return true;
}

void nvl_ar_window_free(nvl_comm_t *c)
{
    if (c->win_slot_bytes > 0) {
        MPI_Win_unlock_all(c->win);
        MPI_Win_free(&c->win);
        c->win_slot_bytes = 0;
    }
    free(c->win_slots);
    c->win_slots = NULL;
}

/* Collective: a window whose slots hold `bytes`, if the members share one
 * host (c->win_host says; the slots are left alone otherwise). */
static nvl_status_t grow(nvl_comm_t *c, size_t bytes)
{
    if (c->win_host == 0) {
        MPI_Comm node;
        int n = 0;
        MPI_Comm_split_type(c->mpi, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                            &node);
        MPI_Comm_size(node, &n);
        MPI_Comm_free(&node);
        c->win_host = n == c->size ? 1 : -1;
        if (c->win_host < 0)
            return NVL_OK;
    }
    if (c->win_slots == NULL &&
        (c->win_slots = calloc((size_t)c->size, sizeof *c->win_slots)) ==
            NULL) {
        nvl_report("out of memory for a %d-member window", c->size);
        return NVL_ERR_NOMEM;
    }
    size_t s = MIN_SLOT_BYTES;
    while (s < bytes)
        s *= 2;
    if (c->win_slot_bytes > 0) {
        MPI_Win_unlock_all(c->win);
        MPI_Win_free(&c->win);
        c->win_slot_bytes = 0;
    }
    char *mine;
    MPI_Win_allocate_shared((MPI_Aint)(2 * s), 1, MPI_INFO_NULL, c->mpi,
                            &mine, &c->win);
    for (int k = 0; k < c->size; k++) {
        MPI_Aint len;
        int unit;
        MPI_Win_shared_query(c->win, k, &len, &unit, &c->win_slots[k]);
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, c->win);
    c->win_slot_bytes = s;
    return NVL_OK;
}

nvl_status_t nvl_ar_window_run(const nvl_coll_call_t *call,
                               nvl_ar_order_t order, bool staged,
                               bool *handled_out)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, me = c->rank;
    size_t esz = nvl_dtype_size(call->dtype), bytes = call->count * esz;
    *handled_out = false;
    if (!staged) { /* the window is first made, or grown: stage now */
        nvl_status_t st = grow(c, bytes);
        if (st != NVL_OK || c->win_host < 0)
            return st;
        memcpy(slot(c, me), call->send, bytes);
        MPI_Win_sync(c->win);
        MPI_Barrier(c->mpi);
    }
    MPI_Win_sync(c->win);
    *handled_out = true;
    const char **x = malloc((size_t)n * sizeof *x);
    if (x == NULL) {
        nvl_report("out of memory for a %d-member allreduce", n);
        return NVL_ERR_NOMEM;
    }
    for (int k = 0; k < n; k++)
        x[k] = slot(c, k);
    if (bytes * (size_t)n <= WHOLE_MAX_BYTES) {
        nvl_ar_reduce_range(call, order, x, 0, call->count, call->recv);
    } else {
        size_t off, len;
        nvl_ar_blocks(call->count, esz, n, me, &off, &len);
        for (int k = 0; k < n; k++)
            x[k] += off * esz;
        nvl_ar_reduce_range(call, order, x, off, len, (char *)x[me]);
        MPI_Win_sync(c->win);
        MPI_Barrier(c->mpi);
        MPI_Win_sync(c->win);
        for (int k = 0; k < n; k++) {
            nvl_ar_blocks(call->count, esz, n, k, &off, &len);
            memcpy((char *)call->recv + off * esz, slot(c, k) + off * esz,
                   len * esz);
        }
    }
    free(x);
    c->win_calls++;
    return NVL_OK;
}
