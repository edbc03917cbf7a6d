/* The collective entry points: check the call, choose the algorithm, agree
 * on the call and on the start time (agree.c; in small groups the first of
 * the data rides along, direct.c), move the data (data mode), advance the
 * clock. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_impl.h"
#include "nvlemu/runtime.h"

/* Checks one rank's arguments; writes why on error. */
static int check(const nvl_coll_call_t *c, size_t *bytes_out, char *why,
                 size_t len)
{
    int n = c->comm->size;
    if (c->dtype >= NVL_DT_COUNT) {
        snprintf(why, len, "unknown dtype %d", (int)c->dtype);
        return 0;
    }
    if (c->op >= NVL_OP_COUNT) {
        snprintf(why, len, "unknown reduction op %d", (int)c->op);
        return 0;
    }
    size_t esz = nvl_dtype_size(c->dtype);
    size_t mult = (c->coll == NVL_COLL_ALLGATHER ||
                   c->coll == NVL_COLL_REDUCESCATTER ||
                   c->coll == NVL_COLL_ALLTOALL)
                      ? (size_t)n
                      : 1;
    if (c->count > SIZE_MAX / esz / mult) {
        snprintf(why, len, "count %zu x %zu-byte %s x %zu overflows", c->count,
                 esz, nvl_dtype_name(c->dtype), mult);
        return 0;
    }
    if ((c->coll == NVL_COLL_BROADCAST || c->coll == NVL_COLL_REDUCE) &&
        (c->root < 0 || c->root >= n)) {
        snprintf(why, len, "root %d is not a member (0..%d)", c->root, n - 1);
        return 0;
    }
    if (c->coll == NVL_COLL_SENDRECV &&
        (c->peer_to < 0 || c->peer_to >= n || c->peer_from < 0 ||
         c->peer_from >= n)) {
        snprintf(why, len, "peers %d/%d are not members (0..%d)", c->peer_to,
                 c->peer_from, n - 1);
        return 0;
    }
    if (c->comm->mode == NVL_MODE_DATA && c->count > 0 &&
        (c->recv == NULL ||
         (c->send == NULL && c->coll != NVL_COLL_BROADCAST))) {
        snprintf(why, len, "NULL buffer in data mode");
        return 0;
    }
    if (c->comm->mode == NVL_MODE_DATA && c->coll == NVL_COLL_ALLTOALL &&
        c->count > 0 && c->send == c->recv) {
        snprintf(why, len, "in-place alltoall is not supported (as in NCCL)");
        return 0;
    }
    if (c->comm->time_elem_bytes != 0)
        esz = c->comm->time_elem_bytes; /* what the modeled GPU moves */
    *bytes_out = c->count * esz * mult;
    return 1;
}

/* nvl_coll_choose_quiet, remembering the last answer: a loop of equal
 * calls asks the same question each time, and the tuner's sweep over
 * every algorithm and protocol costs about as much as a small exchange. */
static nvl_status_t choose(nvl_comm_t *comm, nvl_coll_t coll, size_t bytes,
                           nvl_coll_info_t *info_out)
{
    if (comm->choice_valid && comm->choice.coll == coll &&
        comm->choice.bytes == bytes) {
        *info_out = comm->choice;
        return NVL_OK;
    }
    nvl_status_t st = nvl_coll_choose_quiet(comm, coll, bytes, info_out);
    comm->choice_valid = st == NVL_OK;
    if (st == NVL_OK)
        comm->choice = *info_out;
    return st;
}

static nvl_status_t collective(nvl_coll_call_t *call, nvl_coll_info_t *out)
{
    nvl_comm_t *comm = call->comm;
    char why[256] = "", name[160] = "";
    size_t bytes = 0;
    int ok = check(call, &bytes, why, sizeof why);
    if (ok && comm->group_open) {
        snprintf(why, sizeof why, "called inside a point-to-point group "
                                  "(nvl_group_start without nvl_group_end)");
        ok = 0;
    }
    nvl_coll_info_t info = {.coll = call->coll, .algo = NVL_ALGO_COUNT,
                            .proto = NVL_PROTO_SIMPLE, .bytes = bytes};
    bool custom = false; /* a serving engine's kernel (allreduce.c) */
    if (ok && call->coll == NVL_COLL_ALLREDUCE &&
        comm->ar_impl != NVL_AR_NCCL &&
        nvl_ar_predict(comm, comm->ar_impl, bytes, &info) == NVL_OK &&
        info.impl != NVL_AR_NCCL) {
        custom = true;
    } else if (ok && call->coll <= NVL_COLL_ALLREDUCE) {
        if (choose(comm, call->coll, bytes, &info) != NVL_OK) {
            snprintf(why, sizeof why, "no enabled algorithm/protocol can run "
                                      "it on %d rank(s) (check NCCL_ALGO, "
                                      "NCCL_PROTO, NCCL_NVLS_ENABLE)",
                     comm->size);
            ok = 0;
        }
    } else if (ok) {
        info.time_ps = nvl_p2p_predict_ps(call);
    }
    if (ok && !nvl_vclock_fits(0, info.time_ps)) {
        snprintf(why, sizeof why, "its modeled time is past the clock's "
                 "range (one call lasts at most %.1f days of emulated "
                 "time): a smaller size, or faster links", NVL_MAX_DURATION_DAYS);
        ok = 0;
    }
    if (!ok) /* named only where reported: formatting costs */
        nvl_coll_describe(call, name, sizeof name);
    if (comm->defer) /* agreed later, with the batch (defer.c) */
        return nvl_defer_record(call, ok, name, why, &info, out);
    /* small groups: the agreement's messages carry the first of the data;
     * larger ones: an allreduce that fits the agreement's room is reduced
     * within it */
    nvl_agree_msg_t msgs[NVL_DIRECT_MAX_MEMBERS] = {{0}};
    bool own = comm->data_path == NVL_DATA_PATH_ALGORITHM;
    bool direct = comm->size <= NVL_DIRECT_MAX_MEMBERS && !own;
    bool data = comm->mode == NVL_MODE_DATA;
    nvl_direct_path_t path = NVL_DIRECT_NONE;
    nvl_agree_in_t in = {.signature = nvl_coll_signature(call), .ok = ok,
                         .what = name, .why = why, .time_ps = info.time_ps,
                         .msgs = direct ? msgs : NULL, .dtype = call->dtype,
                         .op = call->op};
    size_t data_bytes = ok ? call->count * nvl_dtype_size(call->dtype) : 0;
    /* a serving engine's kernel on one host: its buffer is staged in a
     * shared window, read by the peers once the agreement is done
     * (ar_window.c); nothing rides along */
    bool window = custom && data && nvl_ar_window_fits(comm, data_bytes);
    bool staged = window && nvl_ar_window_stage(call);
    if (direct && ok && data && !window)
        path = nvl_direct_plan(call, msgs);
    /* a serving engine's kernel sums in its own order: its buffers are
     * gathered within the agreement instead (ar_data.c) */
    size_t ride = custom ? data_bytes * (size_t)comm->size : data_bytes;
    if (!direct && !own && ok && data && call->coll == NVL_COLL_ALLREDUCE &&
        !window && ride <= NVL_AGREE_MAX_PAYLOAD) {
        in.need = ride;
        if (ride <= nvl_agree_room(comm)) {
            in.reduce_send = call->send;
            in.reduce_bytes = data_bytes;
            in.gather = custom;
        }
    }
    nvl_agree_out_t agreed;
    nvl_status_t st = nvl_coll_agree(comm, &in, &agreed);
    if (st == NVL_ERR_MISMATCH)
        return nvl_coll_report_mismatch(comm, call);
    if (st != NVL_OK)
        return st;
    info.start_ps = agreed.start_ps;
    info.time_ps = agreed.time_ps;
    if (info.start_ps > NVL_PS_MAX_CLOCK + NVL_PS_MAX_DURATION) {
        /* a clock far past its range: the engine holds its clocks at
         * NVL_PS_MAX_CLOCK and fails the run itself, naming the layer
         * (engine/issue.c), so only a caller that let the clock run on
         * (a bench's thousandth call of 13 days) gets here, before the sum
         * could wrap.  Every member holds the same agreed start: all
         * return, one says. */
        if (comm->rank == 0) {
            nvl_coll_describe(call, name, sizeof name);
            nvl_report("%s: it would start at %.3f s of emulated time, past "
                       "the clock's range (%.1f days)", name,
                       (double)info.start_ps * 1e-12, NVL_MAX_CLOCK_DAYS);
        }
        return NVL_ERR_RANGE;
    }
    if (data) {
        bool handled = true;
        if (custom) {
            nvl_ar_order_t order = nvl_ar_order((nvl_ar_impl_t)info.impl);
            bool moved = false;
            if (window)
                st = nvl_ar_window_run(call, order, staged, &moved);
            if (st == NVL_OK && !moved)
                st = nvl_ar_run(call, order, path, msgs, agreed.reduced);
        } else if (path != NVL_DIRECT_NONE) {
            st = nvl_direct_finish(call, path, msgs);
        } else if (agreed.reduced != NULL) {
            if (call->recv != agreed.reduced && data_bytes > 0)
                memcpy(call->recv, agreed.reduced, data_bytes);
        } else {
            handled = false;
            if (!direct && !own)
                st = nvl_wide_run(call, &handled);
        }
        if (st == NVL_OK && !handled)
            st = call->coll <= NVL_COLL_ALLREDUCE
                     ? nvl_coll_algo(info.algo)->run(call)
                     : nvl_p2p_run(call);
        if (st != NVL_OK) {
            /* a local failure while peers may wait on this rank: end it */
            nvl_coll_describe(call, name, sizeof name);
            nvl_report("%s failed on this rank: %s", name, nvl_status_str(st));
            nvl_runtime_abort(1);
        }
    }
    comm->clock->now_ps = info.start_ps + info.time_ps;
    if (out != NULL)
        *out = info;
    return NVL_OK;
}

nvl_status_t nvl_allreduce(nvl_comm_t *comm, const void *sendbuf,
                           void *recvbuf, size_t count, nvl_dtype_t dtype,
                           nvl_redop_t op, nvl_coll_info_t *info_out)
{
    nvl_coll_call_t c = {comm, NVL_COLL_ALLREDUCE, sendbuf, recvbuf, count,
                         dtype, op, 0, 0, 0};
    return collective(&c, info_out);
}

nvl_status_t nvl_allgather(nvl_comm_t *comm, const void *sendbuf,
                           void *recvbuf, size_t sendcount, nvl_dtype_t dtype,
                           nvl_coll_info_t *info_out)
{
    nvl_coll_call_t c = {comm, NVL_COLL_ALLGATHER, sendbuf, recvbuf,
                         sendcount, dtype, NVL_OP_SUM, 0, 0, 0};
    return collective(&c, info_out);
}

nvl_status_t nvl_reducescatter(nvl_comm_t *comm, const void *sendbuf,
                               void *recvbuf, size_t recvcount,
                               nvl_dtype_t dtype, nvl_redop_t op,
                               nvl_coll_info_t *info_out)
{
    nvl_coll_call_t c = {comm, NVL_COLL_REDUCESCATTER, sendbuf, recvbuf,
                         recvcount, dtype, op, 0, 0, 0};
    return collective(&c, info_out);
}

nvl_status_t nvl_broadcast(nvl_comm_t *comm, const void *sendbuf,
                           void *recvbuf, size_t count, nvl_dtype_t dtype,
                           int root, nvl_coll_info_t *info_out)
{
    nvl_coll_call_t c = {comm, NVL_COLL_BROADCAST, sendbuf, recvbuf, count,
                         dtype, NVL_OP_SUM, root, 0, 0};
    return collective(&c, info_out);
}

nvl_status_t nvl_reduce(nvl_comm_t *comm, const void *sendbuf, void *recvbuf,
                        size_t count, nvl_dtype_t dtype, nvl_redop_t op,
                        int root, nvl_coll_info_t *info_out)
{
    nvl_coll_call_t c = {comm, NVL_COLL_REDUCE, sendbuf, recvbuf, count,
                         dtype, op, root, 0, 0};
    return collective(&c, info_out);
}

nvl_status_t nvl_alltoall(nvl_comm_t *comm, const void *sendbuf,
                          void *recvbuf, size_t count, nvl_dtype_t dtype,
                          nvl_coll_info_t *info_out)
{
    nvl_coll_call_t c = {comm, NVL_COLL_ALLTOALL, sendbuf, recvbuf, count,
                         dtype, NVL_OP_SUM, 0, 0, 0};
    return collective(&c, info_out);
}

nvl_status_t nvl_sendrecv(nvl_comm_t *comm, const void *sendbuf, int to,
                          void *recvbuf, int from, size_t count,
                          nvl_dtype_t dtype, nvl_coll_info_t *info_out)
{
    nvl_coll_call_t c = {comm, NVL_COLL_SENDRECV, sendbuf, recvbuf, count,
                         dtype, NVL_OP_SUM, 0, to, from};
    return collective(&c, info_out);
}
