/* One size of a <coll>_perf run (perf_main.c drives the sizes): the
 * out-of-place and the in-place phase, each -w untimed and -n timed calls
 * of the row's collective, a checked call on fresh inputs in data mode,
 * and nccl-tests' line of numbers with the emulator's columns. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/coll.h"
#include "nvlemu/runtime.h"
#include "perf.h"

typedef struct {
    const nvl_bench_coll_t *row;
    const nvl_bench_args_t *args;
    nvl_comm_t *comm;
    nvl_bench_call_t call;
    size_t send_elems, recv_elems, esz;
    char *send, *recv; /* NULL in timing mode */
} bench_size_t;

typedef struct {
    int64_t time_ps;      /* sum over the timed calls */
    double wall_s;        /* around the timed calls (rank 0) */
    int64_t wrong;        /* over all ranks; -1 when not checked */
    nvl_coll_info_t info; /* of the last timed call */
} bench_phase_t;

static void fill(const bench_size_t *b, char *buf)
{
    for (size_t i = 0; i < b->send_elems; i++)
        nvl_dtype_from_float(b->call.dtype,
                             nvl_bench_input(&b->call, b->call.rank, i),
                             buf + i * b->esz);
}

static int64_t count_wrong(const bench_size_t *b, const char *recv)
{
    int64_t wrong = 0;
    char rounded[8];
    for (size_t i = 0; i < b->recv_elems; i++) {
        float want;
        if (!b->row->expect(&b->call, i, &want))
            continue;
        /* the reference is exact in float; the dtype rounds it once */
        nvl_dtype_from_float(b->call.dtype, want, rounded);
        want = nvl_dtype_to_float(b->call.dtype, rounded);
        if (nvl_dtype_to_float(b->call.dtype, recv + i * b->esz) != want)
            wrong++;
    }
    return wrong;
}

/* Whether the calls after a first one of duration first_ps that ended at
 * end_ps may be agreed as one batch (timing mode, coll.h "deferred
 * agreement"): the same answer on every rank (agreed numbers only), and no
 * for a run that could reach the clock's range, whose per-call agreement
 * reports the call that passes it.  send: NULL in timing mode. */
static bool may_defer(const char *send, long calls, int64_t end_ps,
                      int64_t first_ps)
{
    if (send != NULL || calls <= 1) /* data mode: payloads must move */
        return false;
    return first_ps <= 0 ||
           (end_ps <= NVL_PS_MAX_CLOCK &&
            calls - 1 <= (NVL_PS_MAX_CLOCK - end_ps) / first_ps);
}

/* Back to back, a call never beats its host enqueue time: -g GPUs'
 * launches from one thread, once per -G calls.  With -z 1 the host waits
 * for each call: its path (and torch's launch, --caller torch) comes
 * before the device time instead of beside it. */
static int64_t loop_time_ps(const bench_size_t *b,
                            const nvl_coll_info_t *info)
{
    const nvl_bench_args_t *a = b->args;
    bool torch = a->caller == CALLER_TORCH;
    if (a->blocking)
        return nvl_coll_blocking_time_ps(b->comm, info, (int)a->ngpus,
                                         (int)a->graph_calls, torch);
    if (torch && a->graph_calls > 1) /* torch's graph of -G calls replayed */
        return info->time_ps;
    if (!torch && a->ngpus == 1 && a->graph_calls <= 1)
        return nvl_coll_process_loop_time_ps(b->comm, info, a->iters);
    int64_t t = nvl_coll_loop_time_ps(b->comm, info, (int)a->ngpus,
                                      (int)a->graph_calls);
    if (!torch)
        return t;
    nvl_coll_info_t host_only = *info; /* torch's whole call */
    host_only.time_ps = 0;
    int64_t host = nvl_coll_blocking_time_ps(b->comm, &host_only,
                                             (int)a->ngpus,
                                             (int)a->graph_calls, true);
    return t > host ? t : host;
}

/* `calls` calls of the row's collective back to back, summing their loop
 * times into *sum_ps (NULL: not timed, the warm-up) and leaving the last
 * call's outcome in *last.  In
 * timing mode the calls after the first are recorded and agreed in one
 * exchange (the same times, bit for bit, as agreeing on each). */
static nvl_status_t run_calls(const bench_size_t *b, const char *send,
                              char *recv, long calls, int64_t *sum_ps,
                              nvl_coll_info_t *last)
{
    nvl_status_t st = NVL_OK;
    bool deferred = false;
    for (long i = 0; i < calls && st == NVL_OK; i++) {
        if (i == 1 && may_defer(send, calls, last->start_ps + last->time_ps,
                                last->time_ps)) {
            st = nvl_comm_defer(b->comm);
            deferred = st == NVL_OK;
        } else if (deferred) { /* enters where the previous call ends */
            nvl_comm_defer_entry(b->comm, 0, NVL_DEFER_NO_BOUND, true);
        }
        if (st == NVL_OK)
            st = b->row->run(b->comm, send, recv, &b->call, last);
        if (st == NVL_OK && !deferred && sum_ps != NULL)
            *sum_ps += loop_time_ps(b, last);
    }
    if (!deferred)
        return st;
    size_t n = nvl_comm_deferred_calls(b->comm);
    nvl_status_t settled = nvl_comm_settle(b->comm, NULL);
    if (st == NVL_OK)
        st = settled;
    for (size_t k = 0; k < n && st == NVL_OK; k++)
        if ((st = nvl_comm_settled_call(b->comm, k, last)) == NVL_OK &&
            sum_ps != NULL)
            *sum_ps += loop_time_ps(b, last);
    return st;
}

/* Warm-up, timed calls, and (data mode, -c) one checked call, out of place
 * or in place. */
static nvl_status_t run_phase(const bench_size_t *b, bool in_place,
                              bench_phase_t *out)
{
    const nvl_bench_coll_t *row = b->row;
    /* timing mode (no buffers), or an in-place run the collective does not
     * allow: no payload */
    bool data = b->send != NULL &&
                !(in_place && row->inplace == NVL_BENCH_INPLACE_NONE);
    char *send = data ? b->send : NULL, *recv = data ? b->recv : NULL;
    size_t rank_off = (size_t)b->call.rank * b->call.count * b->esz;
    if (data && in_place) {
        switch (row->inplace) {
        case NVL_BENCH_INPLACE_SAME: send = recv; break;
        case NVL_BENCH_INPLACE_SEND_IN_RECV: send = recv + rank_off; break;
        case NVL_BENCH_INPLACE_RECV_IN_SEND: recv = send + rank_off; break;
        case NVL_BENCH_INPLACE_NONE: break;
        }
    }
    nvl_comm_set_mode(b->comm, data ? NVL_MODE_DATA : NVL_MODE_TIMING);
    if (data) {
        memset(recv, 0, b->recv_elems * b->esz);
        fill(b, send);
    }
    nvl_coll_info_t warm;
    nvl_status_t st = run_calls(b, send, recv, b->args->warmup, NULL, &warm);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    out->time_ps = 0;
    if (st == NVL_OK)
        st = run_calls(b, send, recv, b->args->iters, &out->time_ps,
                       &out->info);
    out->wall_s = MPI_Wtime() - t0;
    out->wrong = -1;
    if (st == NVL_OK && data && b->args->check) {
        memset(recv, 0xff, b->recv_elems * b->esz); /* NaN in every dtype */
        fill(b, send);
        st = row->run(b->comm, send, recv, &b->call, NULL);
        int64_t mine = st == NVL_OK ? count_wrong(b, recv) : 0;
        MPI_Allreduce(&mine, &out->wrong, 1, MPI_INT64_T, MPI_SUM,
                      MPI_COMM_WORLD);
    }
    return st;
}

/* nccl-tests' number format: two decimals, fewer as the integer part
 * grows, in width characters. */
static void format_num(double v, int width, char *buf, size_t len)
{
    int power = 0;
    for (double p = 1; v >= p && power < 40; p *= 10)
        power++;
    if (power < width - 2)
        snprintf(buf, len, "%*.2f", width, v);
    else if (power < width - 1)
        snprintf(buf, len, "%*.1f", width, v);
    else if (power < width + 1)
        snprintf(buf, len, "%*.0f", width, v);
    else
        snprintf(buf, len, "%*.1e", width, v);
}

/* Time per call (us), algbw and busbw (GB/s) of one phase. */
static void phase_numbers(const bench_size_t *b, size_t bytes,
                          const bench_phase_t *p, double out[3])
{
    double time_us = (double)p->time_ps / (double)b->args->iters / 1e6;
    double algbw = time_us > 0 ? (double)bytes / 1e3 / time_us : 0;
    out[0] = time_us;
    out[1] = algbw;
    out[2] = algbw * b->row->busbw_factor(b->call.nranks);
}

/* Prints time, algbw, busbw and #wrong of one phase. */
static void print_phase(const double num[3], int64_t wrong_elems)
{
    char t[32], ab[32], bb[32], wrong[32] = "N/A";
    format_num(num[0], 7, t, sizeof t);
    format_num(num[1], 6, ab, sizeof ab);
    format_num(num[2], 6, bb, sizeof bb);
    if (wrong_elems >= 0)
        snprintf(wrong, sizeof wrong, "%g", (double)wrong_elems);
    printf("  %7s  %6s  %6s  %6s", t, ab, bb, wrong);
}

/* nccl-tests -a: one time from every rank's own (0: rank 0's, 1: the
 * mean, 2: the minimum, 3: the maximum).  Collective over the job. */
static int64_t over_ranks(int64_t mine, long average, int nranks)
{
    int64_t v = mine;
    if (average == 0) {
        MPI_Bcast(&v, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
        return v;
    }
    MPI_Allreduce(&mine, &v, 1, MPI_INT64_T,
                  average == 2 ? MPI_MIN : average == 3 ? MPI_MAX : MPI_SUM,
                  MPI_COMM_WORLD);
    return average == 1 ? (v + nranks / 2) / nranks : v;
}

nvl_status_t nvl_bench_run_size(const nvl_bench_coll_t *row,
                                const nvl_bench_args_t *a, nvl_comm_t *comm,
                                const nvl_bench_call_t *proto, size_t size,
                                nvl_bench_totals_t *totals)
{
    int n = proto->nranks;
    bench_size_t b = {.row = row, .args = a, .comm = comm, .call = *proto};
    b.esz = nvl_dtype_size(a->dtype);
    size_t count = size / b.esz;
    if (row->split) /* nccl-tests: 16-byte aligned blocks, one per rank */
        count = count / (size_t)n & ~(16 / b.esz - 1);
    b.call.count = count;
    b.send_elems = count * (row->send_blocks ? (size_t)n : 1);
    b.recv_elems = count * (row->recv_blocks ? (size_t)n : 1);
    size_t bytes = (b.send_elems > b.recv_elems ? b.send_elems
                                                : b.recv_elems) * b.esz;
    bool data = a->mode == MODE_DATA ||
                (a->mode == MODE_AUTO && bytes <= a->data_max);
    if (data) {
        nvl_runtime_capture_begin();
        b.send = malloc(b.send_elems * b.esz + 1);
        b.recv = malloc(b.recv_elems * b.esz + 1);
        nvl_status_t st = NVL_OK;
        if (b.send == NULL || b.recv == NULL) {
            nvl_report("out of memory: %zu + %zu bytes of buffers for size "
                       "%zu (use --mode timing or a smaller --data-max)",
                       b.send_elems * b.esz, b.recv_elems * b.esz, bytes);
            st = NVL_ERR_NOMEM;
        }
        if (nvl_runtime_capture_end(st) != NVL_OK) {
            free(b.send);
            free(b.recv);
            return NVL_ERR_NOMEM;
        }
    }
    bench_phase_t ph[2];
    nvl_status_t st = run_phase(&b, false, &ph[0]);
    if (st == NVL_OK)
        st = run_phase(&b, true, &ph[1]);
    free(b.send);
    free(b.recv);
    if (st != NVL_OK)
        return st;
    for (int i = 0; i < 2; i++)
        ph[i].time_ps = over_ranks(ph[i].time_ps, a->average, n);
    if (b.call.rank == 0) {
        const nvl_coll_info_t *info = &ph[0].info;
        nvl_bench_row_t line = {
            .bytes = bytes, .count = count, .type = nvl_dtype_name(a->dtype),
            .redop = row->has_op ? nvl_redop_name(a->op) : "none",
            .root = row->has_root ? b.call.root : -1, .iters = a->iters,
            .wall_us = (ph[0].wall_s + ph[1].wall_s) * 1e6 / (2.0 * a->iters),
            /* a serving engine's kernel: its name, no NCCL protocol */
            .algo = info->impl != NVL_AR_NCCL
                        ? nvl_ar_impl_name((nvl_ar_impl_t)info->impl)
                        : nvl_algo_name(info->algo),
            .proto = info->impl != NVL_AR_NCCL
                         ? "-"
                         : nvl_proto_name((nvl_proto_t)info->proto),
            .channels = info->channels, .data = data};
        char wall[32];
        printf("%12zu  %12zu  %8s  %6s  %6d", bytes, count, line.type,
               line.redop, line.root);
        for (int i = 0; i < 2; i++) {
            double num[3];
            phase_numbers(&b, bytes, &ph[i], num);
            print_phase(num, ph[i].wrong);
            line.time_us[i] = num[0];
            line.algbw[i] = num[1];
            line.busbw[i] = num[2];
            line.wrong[i] = ph[i].wrong;
            totals->busbw_sum += num[2];
            totals->busbw_n++;
            if (ph[i].wrong > 0)
                totals->wrong += ph[i].wrong;
        }
        format_num(line.wall_us, 8, wall, sizeof wall);
        printf("  %8s  %8s  %6s\n", wall, line.algo, line.proto);
        fflush(stdout);
        if (totals->json != NULL)
            nvl_bench_json_row(totals->json, &line);
    }
    return NVL_OK;
}

/* ---- the header ---------------------------------------------------------- */
