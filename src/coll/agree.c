/* The agreement step that opens every call: the members agree on the start
 * time (the latest entry clock), on the call itself (its signature and the
 * signature's negation, so that a max tells whether any member differs),
 * on whether any member's arguments were wrong, and on the modeled
 * duration.  All five are merged by max.
 *
 *   groups of up to NVL_DIRECT_MAX_MEMBERS: one direct exchange, every
 *     member sends every other one message [header | payload], and merges
 *     the N headers itself.  The payload is the first part of the call's
 *     data (src/coll/direct.c), so a small call needs no other message.
 *     Every message fits a receive slot of NVL_AGREE_MAX_PAYLOAD bytes
 *     whatever call its sender made, so a member that disagrees can neither
 *     overflow a slot nor leave a message unreceived: the mismatch shows in
 *     the merged header, never as a truncation or a hang.
 *   larger groups: one MPI_Allreduce of the five numbers (MAX), where a
 *     direct exchange would cost N(N-1) messages.
 *
 * Every member then holds the same merged values and takes the same branch:
 * go on, fail (the lowest failing member reports), or report a mismatch. */
#include <stdlib.h>
#include <string.h>

#include "coll_impl.h"
#include "nvlemu/runtime.h"

enum { AGREE_CLOCK, AGREE_SIG, AGREE_NEG_SIG, AGREE_ERR, AGREE_TIME, AGREE_N };

/* The head of every message of the direct exchange. */
typedef struct {
    int64_t v[AGREE_N];     /* merged by max */
    int64_t payload_bytes;  /* what follows in this message */
} agree_hdr_t;

_Static_assert(sizeof(agree_hdr_t) == NVL_AGREE_HEADER_BYTES,
               "the header size direct.c plans with");

#define TAG_AGREE 90
#define SLOT_BYTES                                                           \
    ((sizeof(agree_hdr_t) + NVL_AGREE_MAX_PAYLOAD + 63) / 64 * 64)

/* Lowest failing member reports; everyone returns the error. */
static nvl_status_t fail_once(nvl_comm_t *comm, int failed, const char *call,
                              const char *why)
{
    int mine = failed ? comm->rank : comm->size, first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm->mpi);
    if (comm->rank == first)
        nvl_report("%s: %s", call, why);
    return NVL_ERR_INVALID;
}

/* The comm's agreement buffer, at least bytes long (owned by the comm). */
static char *agree_buf(nvl_comm_t *c, size_t bytes)
{
    if (bytes <= c->agree_bytes)
        return c->agree_buf;
    char *p = realloc(c->agree_buf, bytes);
    if (p == NULL) {
        nvl_report("out of memory: %zu bytes for the agreement exchange",
                   bytes);
        return NULL;
    }
    c->agree_buf = p;
    c->agree_bytes = bytes;
    return p;
}

/* One message from every member to every other.  On return v holds the
 * max over all members, msgs[k].recv points at member k's payload, and
 * *sizes_ok tells whether every payload had the size this member expects. */
static nvl_status_t exchange(nvl_comm_t *c, int64_t v[AGREE_N],
                             nvl_agree_msg_t *msgs, bool *sizes_ok)
{
    int n = c->size, me = c->rank;
    const size_t hb = sizeof(agree_hdr_t);
    *sizes_ok = true;
    if (msgs != NULL)
        msgs[me].recv = NULL;
    if (n == 1)
        return NVL_OK;
    /* receive slots, then one packed message per distinct payload */
    size_t need = (size_t)(n - 1) * SLOT_BYTES;
    for (int k = 0; k < n; k++) {
        if (k == me)
            continue;
        if (msgs != NULL && msgs[k].send_bytes > NVL_AGREE_MAX_PAYLOAD) {
            nvl_report("internal error: %zu-byte agreement payload",
                       msgs[k].send_bytes);
            return NVL_ERR_INVALID;
        }
        need += (hb + (msgs != NULL ? msgs[k].send_bytes : 0) + 63) / 64 * 64;
    }
    char *buf = agree_buf(c, need);
    if (buf == NULL)
        return NVL_ERR_NOMEM;
    nvl_p2p_op_t ops[2 * NVL_DIRECT_MAX_MEMBERS];
    size_t m = 0;
    char *slot = buf, *pack = buf + (size_t)(n - 1) * SLOT_BYTES;
    for (int k = 0; k < n; k++)
        if (k != me) {
            ops[m++] = (nvl_p2p_op_t){false, slot, SLOT_BYTES, k};
            slot += SLOT_BYTES;
        }
    agree_hdr_t h;
    memcpy(h.v, v, sizeof h.v);
    /* peers sent the same payload (a whole small buffer) share one copy */
    const void *prev_src = NULL;
    size_t prev_bytes = 0;
    char *prev = NULL;
    for (int k = 0; k < n; k++) {
        if (k == me)
            continue;
        const void *src = msgs != NULL ? msgs[k].send : NULL;
        size_t bytes = msgs != NULL ? msgs[k].send_bytes : 0;
        if (prev == NULL || src != prev_src || bytes != prev_bytes) {
            h.payload_bytes = (int64_t)bytes;
            memcpy(pack, &h, hb);
            if (bytes > 0)
                memcpy(pack + hb, src, bytes);
            prev = pack;
            prev_src = src;
            prev_bytes = bytes;
            pack += (hb + bytes + 63) / 64 * 64;
        }
        ops[m++] = (nvl_p2p_op_t){true, prev, hb + bytes, k};
    }
    nvl_status_t st = nvl_xfer_exchange(c, ops, m, TAG_AGREE);
    if (st != NVL_OK)
        return st;
    slot = buf;
    for (int k = 0; k < n; k++) {
        if (k == me)
            continue;
        memcpy(&h, slot, hb);
        for (int i = 0; i < AGREE_N; i++)
            if (h.v[i] > v[i])
                v[i] = h.v[i];
        size_t want = msgs != NULL ? msgs[k].recv_bytes : 0;
        if ((uint64_t)h.payload_bytes != want)
            *sizes_ok = false;
        if (msgs != NULL)
            msgs[k].recv = slot + hb;
        slot += SLOT_BYTES;
    }
    return NVL_OK;
}

nvl_status_t nvl_coll_agree(nvl_comm_t *comm, int64_t sig, bool ok,
                            const char *what, const char *why,
                            int64_t time_ps, nvl_agree_msg_t *msgs,
                            int64_t *start_ps_out, int64_t *time_ps_out)
{
    int64_t v[AGREE_N] = {comm->clock->now_ps, sig, -sig, ok ? 0 : 1,
                          time_ps};
    bool sizes_ok = true;
    if (comm->size <= NVL_DIRECT_MAX_MEMBERS) {
        /* a failure here (reported where found) leaves peers waiting on
         * this member: end the job */
        if (exchange(comm, v, msgs, &sizes_ok) != NVL_OK)
            nvl_runtime_abort(1);
    } else {
        int64_t mine[AGREE_N];
        memcpy(mine, v, sizeof mine);
        MPI_Allreduce(mine, v, AGREE_N, MPI_INT64_T, MPI_MAX, comm->mpi);
    }
    if (v[AGREE_ERR])
        return fail_once(comm, !ok, what, why);
    if (v[AGREE_SIG] != -v[AGREE_NEG_SIG])
        return NVL_ERR_MISMATCH; /* the caller names who differs */
    if (!sizes_ok) { /* equal calls always expect what their peers send */
        nvl_report("internal error: member %d got an agreement payload of "
                   "another size than it expects", comm->rank);
        nvl_runtime_abort(1);
    }
    *start_ps_out = v[AGREE_CLOCK];
    *time_ps_out = v[AGREE_TIME];
    return NVL_OK;
}
