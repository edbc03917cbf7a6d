/* The agreement step that opens every call: the members agree on the start
 * time (the latest entry clock), on the call itself (its signature and the
 * signature's negation, so that a max tells whether any member differs),
 * on whether any member's arguments were wrong, and on the modeled
 * duration.  All five are merged by max; a sixth number, `pairs`, by sum
 * (a point-to-point group's check, p2p.c).
 *
 *   groups of up to NVL_DIRECT_MAX_MEMBERS: one direct exchange, every
 *     member sends every other one message [header | payload], and merges
 *     the N headers itself.  The payload is the first part of the call's
 *     data (src/coll/direct.c), so a small call needs no other message.
 *     Every message fits a receive slot of NVL_AGREE_MAX_PAYLOAD bytes
 *     whatever call its sender made, so a member that disagrees can neither
 *     overflow a slot nor leave a message unreceived: the mismatch shows in
 *     the merged header, never as a truncation or a hang.
 *   larger groups: one allreduce (recursive doubling, or MPI_Allreduce
 *     for large elements; log2 N rounds, where a direct exchange would
 *     cost N(N-1) messages) of one element [header | room bytes].  The
 *     room is the larger need of the last two agreed calls, so it is the
 *     same on every member whatever each calls now, and every member's
 *     element has the same size: a disagreement shows in the merged
 *     header, never as mismatched messages.  A
 *     data-mode allreduce that fits the room puts its buffer there,
 *     reduced along with the header (which tells merge() the dtype, op
 *     and size), so a small allreduce costs one agreement and nothing
 *     more.  Timing mode and large calls need no room: their agreement
 *     stays a bare header.
 *
 * Every member then holds the same merged values and takes the same branch:
 * go on, fail (the lowest failing member reports), or report a mismatch. */
#include <stdlib.h>
#include <string.h>

#include "xfer.h"
#include "nvlemu/hash.h"
#include "nvlemu/runtime.h"

enum { AGREE_CLOCK, AGREE_SIG, AGREE_NEG_SIG, AGREE_ERR, AGREE_TIME, AGREE_N };

/* The head of every message of the direct exchange, and of the element of
 * the larger groups' allreduce. */
typedef struct {
    int64_t v[AGREE_N];     /* merged by max */
    uint64_t pairs;         /* merged by sum */
    int64_t payload_bytes;  /* what follows in this message or element */
    int64_t payload_kind;   /* allreduce element: 1 + dtype x NVL_OP_COUNT
                               + op of a payload to reduce; GATHER_KIND
                               slots to gather; 0 none; -1 members
                               disagree (the result is not used) */
} agree_hdr_t;

/* A payload of one slot per member, each written by its member alone and
 * zero elsewhere: merged by OR, it gathers (ar_data.c's small calls). */
#define GATHER_KIND (1 + NVL_DT_COUNT * NVL_OP_COUNT)

_Static_assert(sizeof(agree_hdr_t) == NVL_AGREE_HEADER_BYTES,
               "the header size direct.c plans with");

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

/* One message from every member to every other.  On return h holds the
 * merge over all members, msgs[k].recv points at member k's payload, and
 * *sizes_ok tells whether every payload had the size this member expects. */
static nvl_status_t exchange(nvl_comm_t *c, agree_hdr_t *merged,
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
    agree_hdr_t h = *merged;
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
    nvl_status_t st = nvl_xfer_exchange(c, ops, m, NVL_TAG_AGREE);
    if (st != NVL_OK)
        return st;
    slot = buf;
    for (int k = 0; k < n; k++) {
        if (k == me)
            continue;
        memcpy(&h, slot, hb);
        for (int i = 0; i < AGREE_N; i++)
            if (h.v[i] > merged->v[i])
                merged->v[i] = h.v[i];
        merged->pairs += h.pairs;
        size_t want = msgs != NULL ? msgs[k].recv_bytes : 0;
        if ((uint64_t)h.payload_bytes != want)
            *sizes_ok = false;
        if (msgs != NULL)
            msgs[k].recv = slot + hb;
        slot += SLOT_BYTES;
    }
    return NVL_OK;
}

/* Merges element b into a (a = a merged with b; recursive doubling passes
 * the lower members' as a), elem bytes each. */
static void merge(char *a, const char *b, size_t elem)
{
    agree_hdr_t x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    for (int i = 0; i < AGREE_N; i++)
        if (y.v[i] > x.v[i])
            x.v[i] = y.v[i];
    x.pairs += y.pairs;
    if (x.payload_kind != y.payload_kind ||
        x.payload_bytes != y.payload_bytes || x.payload_bytes < 0 ||
        (size_t)x.payload_bytes > elem - sizeof x) {
        x.payload_kind = -1; /* the members disagree: shows in v */
    } else if (x.payload_kind == GATHER_KIND) {
        for (int64_t i = 0; i < x.payload_bytes; i++)
            a[sizeof x + (size_t)i] |= b[sizeof x + (size_t)i];
    } else if (x.payload_kind > 0) {
        int64_t k = x.payload_kind - 1;
        nvl_dtype_t dt = (nvl_dtype_t)(k / NVL_OP_COUNT);
        nvl_redop_t op = (nvl_redop_t)(k % NVL_OP_COUNT);
        nvl_reduce_into(dt, op, a + sizeof x, b + sizeof x,
                        (size_t)x.payload_bytes / nvl_dtype_size(dt));
    }
    memcpy(a, &x, sizeof x);
}

size_t nvl_agree_room(const nvl_comm_t *comm) { return comm->agree_room; }

/* The largest message Open MPI's shared-memory transport sends inline
 * (btl_vader_max_inline_send, 256 B): it leaves at once, where a larger
 * one completes only once the sender runs again; with more ranks than
 * cores that wait costs a trip through the scheduler, so the recursive
 * doubling below sends its element in pieces of this size (9 ranks on 2
 * cores, a 320 B element: 96 us against 189 us in one message). */
#define INLINE_BYTES 256

/* Elements of at least this size go through MPI_Allreduce, whose choice
 * for one large element is faster than recursive doubling (9 ranks, 16 KB:
 * 137 us against 302 us); from 320 B to 4 KB Open MPI 4.1's choice was
 * about twice as slow as its 40-byte allreduce (9 to 16 ranks), slower
 * than the pieces. */
#define MPI_ELEM_BYTES ((size_t)8 << 10)

/* One round of recursive doubling with peer: sends `send` and receives
 * into `recv` (either may be NULL), elem bytes in INLINE_BYTES pieces. */
static void swap_pieces(nvl_comm_t *c, int peer, const char *send,
                        char *recv, size_t elem)
{
    MPI_Request req[2 * (MPI_ELEM_BYTES / INLINE_BYTES)];
    int r = 0;
    for (size_t at = 0; at < elem; at += INLINE_BYTES) {
        int len = (int)(elem - at < INLINE_BYTES ? elem - at : INLINE_BYTES);
        if (recv != NULL)
            MPI_Irecv(recv + at, len, MPI_BYTE, peer, NVL_TAG_AGREE, c->mpi,
                      &req[r++]);
        if (send != NULL)
            MPI_Isend(send + at, len, MPI_BYTE, peer, NVL_TAG_AGREE, c->mpi,
                      &req[r++]);
    }
    MPI_Waitall(r, req, MPI_STATUSES_IGNORE);
}

/* Recursive doubling of one element, MPI's own choice for small
 * allreduces: members i >= p (the largest power of two <= N) first hand
 * their element to member i - p, which merges it and hands back the result
 * at the end; in round d members i and i ^ d swap elements and both
 * compute merge(lower member's, higher member's): the same operands in
 * the same order, so both hold the same bits after it, and after the last
 * round every member does.  Returns where the result is (mine or other). */
static char *recursive_doubling(nvl_comm_t *c, char *mine, char *other,
                                size_t elem)
{
    int n = c->size, me = c->rank, p = 1;
    while (2 * p <= n)
        p *= 2;
    if (me >= p) { /* handed to member me - p and back */
        swap_pieces(c, me - p, mine, NULL, elem);
        swap_pieces(c, me - p, NULL, other, elem);
        return other;
    }
    if (me + p < n) {
        swap_pieces(c, me + p, NULL, other, elem);
        merge(mine, other, elem);
    }
    for (int d = 1; d < p; d *= 2) {
        int peer = me ^ d;
        swap_pieces(c, peer, mine, other, elem);
        if (peer < me) { /* the lower one's first */
            char *t = mine;
            mine = other;
            other = t;
        }
        merge(mine, other, elem);
    }
    if (me + p < n)
        swap_pieces(c, me + p, mine, NULL, elem);
    return mine;
}

/* MPI_User_function merging larger elements: inout merged with in.  The
 * merge commutes (max, sum, and a reduction whose rounding is symmetric);
 * MPI's allreduce computes each merge once, or on two partners alike, and
 * hands on the bits, so every member still gets the same ones. */
static void merge_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int size = 0;
    MPI_Type_size(*type, &size);
    for (int e = 0; e < *len; e++)
        merge((char *)inout + (size_t)e * (size_t)size,
              (const char *)in + (size_t)e * (size_t)size, (size_t)size);
}

/* The element type of `bytes` and merge_op, created on first use. */
static bool mpi_element(nvl_comm_t *c, size_t bytes)
{
    if (c->agree_type_bytes == bytes)
        return true;
    nvl_agree_free(c);
    if (MPI_Type_contiguous((int)bytes, MPI_BYTE, &c->agree_type) !=
            MPI_SUCCESS ||
        MPI_Type_commit(&c->agree_type) != MPI_SUCCESS) {
        nvl_report("internal error: no MPI type of %zu bytes", bytes);
        return false;
    }
    MPI_Op_create(merge_op, 1, &c->agree_op);
    c->agree_type_bytes = bytes;
    return true;
}

void nvl_agree_free(nvl_comm_t *c)
{
    if (c->agree_type_bytes == 0)
        return;
    MPI_Type_free(&c->agree_type);
    MPI_Op_free(&c->agree_op);
    c->agree_type_bytes = 0;
}

/* Larger groups: one allreduce of one element [header | room], the room
 * holding the payload to reduce if any.  On return *merged is the merged
 * header and *reduced the reduced payload (NULL: none). */
static nvl_status_t allreduce(nvl_comm_t *c, agree_hdr_t *merged,
                              const nvl_agree_in_t *in, const void **reduced)
{
    const size_t hb = sizeof(agree_hdr_t);
    size_t elem = (hb + c->agree_room + 63) / 64 * 64;
    *reduced = NULL;
    size_t payload = in->reduce_bytes * (in->gather ? (size_t)c->size : 1);
    if (in->reduce_send != NULL && payload > c->agree_room) {
        nvl_report("internal error: %zu-byte payload, room for %zu",
                   payload, c->agree_room);
        return NVL_ERR_INVALID;
    }
    char *buf = agree_buf(c, 2 * elem);
    if (buf == NULL)
        return NVL_ERR_NOMEM;
    char *mine = buf, *other = buf + elem;
    agree_hdr_t h = *merged;
    h.payload_bytes = 0;
    h.payload_kind = 0;
    memset(mine + hb, 0, elem - hb);
    if (in->reduce_send != NULL && in->reduce_bytes > 0) {
        h.payload_bytes = (int64_t)payload;
        h.payload_kind = in->gather
                             ? GATHER_KIND
                             : 1 + (int64_t)in->dtype * NVL_OP_COUNT + in->op;
        memcpy(mine + hb + (in->gather ? (size_t)c->rank * in->reduce_bytes
                                       : 0),
               in->reduce_send, in->reduce_bytes);
    }
    memcpy(mine, &h, hb);
    if (elem < MPI_ELEM_BYTES) {
        mine = recursive_doubling(c, mine, other, elem);
    } else {
        if (!mpi_element(c, elem))
            return NVL_ERR_INVALID;
        MPI_Allreduce(mine, other, 1, c->agree_type, c->agree_op, c->mpi);
        mine = other;
    }
    memcpy(merged, mine, hb);
    if (merged->payload_kind > 0)
        *reduced = mine + hb;
    return NVL_OK;
}

nvl_status_t nvl_coll_agree(nvl_comm_t *comm, const nvl_agree_in_t *in,
                            nvl_agree_out_t *agreed_out)
{
    agree_hdr_t h = {{comm->clock->now_ps, in->signature, -in->signature,
                      in->ok ? 0 : 1, in->time_ps},
                     in->pairs, 0, 0};
    bool sizes_ok = true;
    const void *reduced = NULL;
    /* a failure here (reported where found) leaves peers waiting on this
     * member: end the job */
    if (comm->size <= NVL_DIRECT_MAX_MEMBERS) {
        if (exchange(comm, &h, in->msgs, &sizes_ok) != NVL_OK)
            nvl_runtime_abort(1);
    } else if (allreduce(comm, &h, in, &reduced) != NVL_OK) {
        nvl_runtime_abort(1);
    }
    /* the next room, from what every member now holds alike */
    bool agreed = !h.v[AGREE_ERR] && h.v[AGREE_SIG] == -h.v[AGREE_NEG_SIG];
    size_t need = agreed ? in->need : 0;
    comm->agree_room = need > comm->agree_need_prev ? need
                                                    : comm->agree_need_prev;
    comm->agree_need_prev = need;
    if (h.v[AGREE_ERR])
        return fail_once(comm, !in->ok, in->what, in->why);
    if (!agreed)
        return NVL_ERR_MISMATCH; /* the caller names who differs */
    if (!sizes_ok) { /* equal calls always expect what their peers send */
        nvl_report("internal error: member %d got an agreement payload of "
                   "another size than it expects", comm->rank);
        nvl_runtime_abort(1);
    }
    agreed_out->start_ps = h.v[AGREE_CLOCK];
    agreed_out->time_ps = h.v[AGREE_TIME];
    agreed_out->pairs = h.pairs;
    agreed_out->reduced = reduced;
    return NVL_OK;
}

/* ---- what the members must agree on, and who differs ------------------- */

/* What the members must agree on, as one number. */
int64_t nvl_coll_signature(const nvl_coll_call_t *c)
{
    uint64_t parts[] = {(uint64_t)c->coll, (uint64_t)c->count,
                        (uint64_t)c->dtype, (uint64_t)c->op,
                        (uint64_t)(int64_t)c->root,
                        (uint64_t)c->comm->mode,
                        (uint64_t)c->comm->data_path,
                        (uint64_t)c->comm->ar_impl};
    return (int64_t)(nvl_fnv1a64(parts, sizeof parts) >> 1);
}

void nvl_coll_describe(const nvl_coll_call_t *c, char *buf, size_t len)
{
    if (c->coll == NVL_COLL_COUNT) {
        snprintf(buf, len, "nvl_group_end (a point-to-point group)");
        return;
    }
    if (c->coll == NVL_COLL_COUNT + 1) {
        snprintf(buf, len, "no further call (the end of a deferred batch)");
        return;
    }
    if (c->coll > NVL_COLL_COUNT) {
        snprintf(buf, len, "an unknown call (%d)", (int)c->coll);
        return;
    }
    bool reduces = c->coll == NVL_COLL_ALLREDUCE ||
                   c->coll == NVL_COLL_REDUCE ||
                   c->coll == NVL_COLL_REDUCESCATTER;
    bool rooted = c->coll == NVL_COLL_BROADCAST || c->coll == NVL_COLL_REDUCE;
    char root[32] = "";
    if (rooted)
        snprintf(root, sizeof root, ", root=%d", c->root);
    snprintf(buf, len, "%s(count=%zu, %s%s%s%s)", nvl_coll_name(c->coll),
             c->count,
             c->dtype < NVL_DT_COUNT ? nvl_dtype_name(c->dtype) : "bad dtype",
             reduces ? ", " : "",
             !reduces ? ""
             : c->op < NVL_OP_COUNT ? nvl_redop_name(c->op)
                                    : "bad op",
             root);
}

/* Every member's call, at member 0, which names the first that differs. */
enum { SIG_COLL, SIG_COUNT, SIG_DTYPE, SIG_OP, SIG_ROOT, SIG_MODE, SIG_PATH,
       SIG_IMPL, SIG_N };

nvl_status_t nvl_coll_report_mismatch(nvl_comm_t *comm,
                                      const nvl_coll_call_t *c)
{
    int64_t mine[SIG_N] = {(int64_t)c->coll, (int64_t)c->count,
                           (int64_t)c->dtype, (int64_t)c->op,
                           (int64_t)c->root, (int64_t)comm->mode,
                           (int64_t)comm->data_path, (int64_t)comm->ar_impl};
    int64_t *all = NULL;
    if (comm->rank == 0)
        all = malloc((size_t)comm->size * sizeof mine);
    MPI_Gather(mine, SIG_N, MPI_INT64_T, all, SIG_N, MPI_INT64_T, 0,
               comm->mpi);
    if (comm->rank == 0 && all != NULL) {
        for (int r = 1; r < comm->size; r++) {
            int64_t *o = all + SIG_N * r;
            if (memcmp(o, mine, sizeof mine) == 0)
                continue;
            nvl_coll_call_t other = *c;
            other.coll = (nvl_coll_t)o[SIG_COLL];
            other.count = (size_t)o[SIG_COUNT];
            other.dtype = (nvl_dtype_t)o[SIG_DTYPE];
            other.op = (nvl_redop_t)o[SIG_OP];
            other.root = (int)o[SIG_ROOT];
            char a[160], b[160], ma[96] = "", mb[96] = "";
            nvl_coll_describe(c, a, sizeof a);
            nvl_coll_describe(&other, b, sizeof b);
            if (o[SIG_MODE] != mine[SIG_MODE]) {
                snprintf(ma, sizeof ma, " in %s mode",
                         mine[SIG_MODE] == NVL_MODE_DATA ? "data" : "timing");
                snprintf(mb, sizeof mb, " in %s mode",
                         o[SIG_MODE] == NVL_MODE_DATA ? "data" : "timing");
            }
            if (o[SIG_PATH] != mine[SIG_PATH]) {
                snprintf(ma + strlen(ma), sizeof ma - strlen(ma),
                         " on the %s data path",
                         mine[SIG_PATH] ? "algorithm's" : "fast");
                snprintf(mb + strlen(mb), sizeof mb - strlen(mb),
                         " on the %s data path",
                         o[SIG_PATH] ? "algorithm's" : "fast");
            }
            if (o[SIG_IMPL] != mine[SIG_IMPL]) {
                snprintf(ma + strlen(ma), sizeof ma - strlen(ma),
                         " with --allreduce %s",
                         nvl_ar_impl_name((nvl_ar_impl_t)mine[SIG_IMPL]));
                snprintf(mb + strlen(mb), sizeof mb - strlen(mb),
                         " with --allreduce %s",
                         nvl_ar_impl_name((nvl_ar_impl_t)o[SIG_IMPL]));
            }
            nvl_report("ranks disagree on a collective: member 0 (GPU %u) "
                       "called %s%s, member %d (GPU %u) called %s%s",
                       comm->gpus[0], a, ma, r, comm->gpus[r], b, mb);
            break;
        }
    }
    free(all);
    return NVL_ERR_MISMATCH;
}
