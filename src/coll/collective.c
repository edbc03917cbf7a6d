/* The collective entry points: check the call, choose the algorithm (or a
 * serving engine's kernel), plan its data path (data mode, data_path.c),
 * agree on the call and on the start time (agree.c; what the path has
 * ride along goes with it), finish the data's move, advance the clock. */
#include <math.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_impl.h"
#include "host_paths.h"
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
    if (c->comm->time_bits > 0) /* values narrower than a byte */
        *bytes_out = (size_t)ceil((double)c->count * (double)mult *
                                  c->comm->time_bits / 8.0);
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

/* The collective whose cost the call takes (nvl_comm_set_time_rooted):
 * the summed bytes of a group of rooted calls are the call's own. */
static nvl_coll_t timed_as(const nvl_coll_call_t *call)
{
    if (!call->comm->time_rooted)
        return call->coll;
    if (call->coll == NVL_COLL_ALLGATHER)
        return NVL_COLL_BROADCAST;
    if (call->coll == NVL_COLL_REDUCESCATTER)
        return NVL_COLL_REDUCE;
    return call->coll;
}

/* What the checked call will cost: a serving engine's kernel (*engine_out
 * set), the tuner's choice, or the point-to-point model; 0 (why says)
 * when nothing enabled can run it or its time is past the clock's range. */
static int predict(const nvl_coll_call_t *call, size_t bytes,
                   nvl_coll_info_t *info, bool *engine_out, char *why,
                   size_t len)
{
    nvl_comm_t *comm = call->comm;
    if (call->coll == NVL_COLL_ALLREDUCE && comm->ar_impl != NVL_AR_NCCL &&
        nvl_ar_predict(comm, comm->ar_impl, bytes, info) == NVL_OK &&
        info->impl != NVL_AR_NCCL) {
        *engine_out = true;
    } else if (call->coll <= NVL_COLL_ALLREDUCE) {
        if (choose(comm, timed_as(call), bytes, info) != NVL_OK) {
            snprintf(why, len, "no enabled algorithm/protocol can run it on "
                               "%d rank(s) (check NCCL_ALGO, NCCL_PROTO, "
                               "NCCL_NVLS_ENABLE)",
                     comm->size);
            return 0;
        }
        if (comm->graph)
            nvl_coll_graph_time(comm, info);
    } else {
        info->time_ps = nvl_p2p_predict_ps(call);
    }
    if (!nvl_vclock_fits(0, info->time_ps)) {
        snprintf(why, len, "its modeled time is past the clock's range (one "
                 "call lasts at most %.1f days of emulated time): a smaller "
                 "size, or faster links", NVL_MAX_DURATION_DAYS);
        return 0;
    }
    return 1;
}

/* Whether the agreed start is within the clock's range.  A clock far past
 * it: the engine holds its clocks at NVL_PS_MAX_CLOCK and fails the run
 * itself, naming the layer (engine/issue.c), so only a caller that let the
 * clock run on (a bench's thousandth call of 13 days) gets here, before
 * the sum could wrap.  Every member holds the same agreed start: all
 * return false, member 0 says why. */
static bool start_in_range(const nvl_coll_call_t *call, int64_t start_ps)
{
    if (start_ps <= NVL_PS_MAX_CLOCK + NVL_PS_MAX_DURATION)
        return true;
    if (call->comm->rank == 0) {
        char name[160];
        nvl_coll_describe(call, name, sizeof name);
        nvl_report("%s: it would start at %.3f s of emulated time, past the "
                   "clock's range (%.1f days)", name,
                   (double)start_ps * 1e-12, NVL_MAX_CLOCK_DAYS);
    }
    return false;
}

/* Every collective: checked and timed, recorded under deferred agreement
 * (defer.c), or planned on its data path (data mode), agreed, moved, and
 * the clock set to its end. */
static nvl_status_t collective(nvl_coll_call_t *call, nvl_coll_info_t *out)
{
    nvl_comm_t *comm = call->comm;
    char why[256] = "", name[160] = "";
    size_t bytes = 0;
    bool engine = false;
    int ok = check(call, &bytes, why, sizeof why);
    if (ok && comm->group_open) {
        snprintf(why, sizeof why, "called inside a point-to-point group "
                                  "(nvl_group_start without nvl_group_end)");
        ok = 0;
    }
    nvl_coll_info_t info = {.coll = call->coll, .algo = NVL_ALGO_COUNT,
                            .proto = NVL_PROTO_SIMPLE, .bytes = bytes};
    ok = ok && predict(call, bytes, &info, &engine, why, sizeof why);
    if (!ok) /* named only where reported: formatting costs */
        nvl_coll_describe(call, name, sizeof name);
    if (comm->defer) /* agreed later, with the batch (defer.c) */
        return nvl_defer_record(call, ok, name, why, &info, out);
    nvl_agree_in_t in = {.signature = nvl_coll_signature(call), .ok = ok,
                         .what = name, .why = why, .time_ps = info.time_ps,
                         .dtype = call->dtype, .op = call->op};
    nvl_data_move_t move = {.call = call, .algo = info.algo,
                            .engine = engine};
    const nvl_data_path_row_t *path = NULL;
    if (ok && comm->mode == NVL_MODE_DATA) {
        move.data_bytes = call->count * nvl_dtype_size(call->dtype);
        if (engine)
            move.order = nvl_ar_order((nvl_ar_impl_t)info.impl);
        path = nvl_data_path_plan(&move, &in);
    }
    nvl_agree_out_t agreed;
    nvl_status_t st = nvl_coll_agree(comm, &in, &agreed);
    if (st == NVL_ERR_MISMATCH)
        return nvl_coll_report_mismatch(comm, call);
    if (st != NVL_OK)
        return st;
    info.start_ps = agreed.start_ps;
    info.time_ps = agreed.time_ps;
    if (!start_in_range(call, info.start_ps))
        return NVL_ERR_RANGE;
    if (path != NULL && (st = path->finish(&move, &agreed)) != NVL_OK) {
        /* a local failure while peers may wait on this rank: end it */
        nvl_coll_describe(call, name, sizeof name);
        nvl_report("%s failed on this rank: %s", name, nvl_status_str(st));
        nvl_runtime_abort(1);
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

/* nccl-tests' timed loop, one process per GPU (src/common.cu BenchTime at
 * 2.19.6: the host enqueues -n calls with no synchronization between them
 * and synchronizes once at the end, the clock started after a barrier):
 * each process's enqueue runs beside its GPU's previous kernel, so the
 * loop takes max(host, device) a call, plus the one call's worth of the
 * smaller that neither hides (the first enqueue before any kernel runs,
 * or the last kernel after the last enqueue), spread over the -n calls.
 * The device time is the kernel as a CUDA graph runs it (nccl-tests -G)
 * plus [nccl] stream_gap, what a back-to-back stream launch adds over a
 * graph node: 2.4 us by default (a stream launch's [gpu] kernel_overhead
 * in place of a graph node's kernel_floor; the lent HGX H200's eager rows
 * are 1-4 us over its -G rows whatever the ring's steps), 0 on the hosts
 * of AI Configurator's Hopper tables (docs/collectives.md, "The
 * one-process-per-GPU loop"); no per-step hop_lat. */
int64_t nvl_coll_process_loop_time_ps(const nvl_comm_t *comm,
                                      const nvl_coll_info_t *info, long iters)
{
    if (info->bytes == 0 || iters < 1 || !nvl_coll_has_kernel(comm, info))
        return nvl_coll_loop_time_ps(comm, info, 1, 1);
    int64_t host = comm->topo->nccl.launch_overhead_ps;
    int64_t device = nvl_coll_kernel_ps(comm, info) +
                     comm->topo->nccl.stream_gap_ps;
    int64_t hi = device > host ? device : host;
    int64_t lo = device > host ? host : device;
    return hi + lo / iters;
}
