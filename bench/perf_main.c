/* nccl-tests for the emulator: the one driver of every <coll>_perf
 * benchmark, built once per collective with -DNVL_BENCH_COLL="<coll>" (a
 * row of perf_colls.c).
 *
 * Every MPI rank plays one GPU of the topology.  For each size from -b to
 * -e (times -f, or plus -i) it calls the collective out of place and then
 * in place, -w untimed and -n timed times each, and prints nccl-tests'
 * table (the same '#' header, columns, number formats and footer, so that
 * existing scripts read it) with three columns more: the host's wall time
 * per call, and the algorithm and protocol the tuner chose.
 *
 *   time   emulated time of one call (us): the mean over the timed calls of
 *          the group's virtual end - start (nvl_coll_info_t.time_ps), but
 *          never less than the host's enqueue time of a call
 *          (nvl_coll_loop_time_ps: [nccl] launch_overhead), as a loop of
 *          back-to-back calls measures it
 *   algbw  size / time;  busbw = algbw x the collective's factor
 *          (nccl-tests: allreduce 2(n-1)/n, allgather, reduce-scatter and
 *          alltoall (n-1)/n, broadcast, reduce and sendrecv 1)
 *   #wrong elements that differ from the host's reference after one more
 *          call on fresh inputs (data mode, -c 1); N/A in timing mode
 *   wall   host seconds per timed call, measured on rank 0
 *
 * Sizes up to --data-max run in data mode (real buffers through MPI), the
 * larger ones in timing mode (no payload), which gives the same times. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvlemu/coll.h"
#include "nvlemu/opts.h"
#include "nvlemu/runtime.h"
#include "nvlemu/topo.h"
#include "nvlemu/units.h"
#include "nvlemu/validation.h"
#include "perf.h"

#ifndef NVL_BENCH_COLL
#error "build with -DNVL_BENCH_COLL=\"all_reduce\" (a row of perf_colls.c)"
#endif
#ifndef NVL_VERSION
#define NVL_VERSION "unknown"
#endif
#ifndef NVL_GIT_COMMIT
#define NVL_GIT_COMMIT "unknown"
#endif
#define NCCL_TESTS_VERSION "2.19.6" /* whose output this reproduces */

/* ---- one size ------------------------------------------------------------ */

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
    nvl_status_t st = NVL_OK;
    for (long i = 0; i < b->args->warmup && st == NVL_OK; i++)
        st = row->run(b->comm, send, recv, &b->call, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    out->time_ps = 0;
    for (long i = 0; i < b->args->iters && st == NVL_OK; i++) {
        st = row->run(b->comm, send, recv, &b->call, &out->info);
        if (st == NVL_OK)
            /* back to back, a call never beats its host enqueue time: -g
             * GPUs' launches from one thread, once per -G calls */
            out->time_ps += nvl_coll_loop_time_ps(
                b->comm, &out->info, (int)b->args->ngpus,
                (int)b->args->graph_calls);
    }
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

typedef struct {
    double busbw_sum;
    int busbw_n;
    int64_t wrong;
    nvl_bench_json_t *json; /* rank 0 with -J, else NULL */
} bench_totals_t;

static nvl_status_t run_size(const nvl_bench_coll_t *row,
                             const nvl_bench_args_t *a, nvl_comm_t *comm,
                             const nvl_bench_call_t *proto, size_t size,
                             bench_totals_t *totals)
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

typedef struct {
    int pid;
    char host[64];
} rank_id_t;

/* Every rank's process id and short host name, on rank 0 (the caller
 * frees); NULL on the other ranks. */
static rank_id_t *gather_rank_ids(const nvl_runtime_t *rt)
{
    rank_id_t me = {(int)getpid(), ""}, *all = NULL;
    snprintf(me.host, sizeof me.host, "%s", rt->host.hostname);
    char *dot = strchr(me.host, '.');
    if (dot != NULL)
        *dot = '\0';
    if (rt->rank == 0)
        all = malloc((size_t)rt->size * sizeof *all);
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE,
               0, MPI_COMM_WORLD);
    return all;
}

/* -J's configuration block, from the parsed options. */
static void json_config(nvl_bench_json_t *json, const nvl_bench_args_t *a,
                        const nvl_topo_t *topo)
{
    printf("# Writing JSON output to %s\n", nvl_bench_json_path(json));
    nvl_bench_config_t cfg = {
        .min_bytes = a->min_bytes, .max_bytes = a->max_bytes,
        .step_bytes = a->step_bytes, .data_max = a->data_max,
        .step_factor = a->step_factor, .warmup = a->warmup,
        .iters = a->iters, .check = a->check != 0,
        .average = (int)a->average, .nthreads = a->nthreads,
        .ngpus = a->ngpus, .graph_calls = a->graph_calls,
        .version = NVL_VERSION,
        .commit = NVL_GIT_COMMIT, .topology = topo->name,
        .topology_file = a->topo};
    nvl_bench_json_config(json, &cfg);
}

/* nccl-tests' "Using devices" lines: one per rank, the GPU (or die) it
 * plays. */
static void print_devices(const nvl_topo_t *topo, const nvl_runtime_t *rt,
                          const rank_id_t *all, nvl_bench_json_t *json)
{
    char hbm[32], link[32];
    printf("#\n# Using devices\n");
    nvl_qty_format(NVL_QTY_BYTES, (double)topo->gpu.hbm_bytes, hbm,
                   sizeof hbm);
    for (int r = 0; r < rt->size && all != NULL; r++) {
        uint32_t g = (uint32_t)r;
        nvl_qty_format(NVL_QTY_BW, nvl_topo_nvlink_bw(topo, g), link,
                       sizeof link);
        char hex[96], info[96];
        if (topo->die_view) /* --rank-plays die */
            snprintf(hex, sizeof hex, "die %u of GPU %u of %s",
                     g % topo->gpu.dies, nvl_topo_package_of(topo, g),
                     topo->name);
        else
            snprintf(hex, sizeof hex, "GPU %u of %s", g, topo->name);
        snprintf(info, sizeof info, "%s HBM, NVLink %s", hbm, link);
        printf("#  Rank %2d Group %2d Pid %6d on %10s device %2u [%s] %s\n",
               r, 0, all[r].pid, all[r].host, g % topo->node.gpus_per_tray,
               hex, info);
        if (json != NULL)
            nvl_bench_json_device(json, r, all[r].pid, all[r].host,
                                  (int)(g % topo->node.gpus_per_tray), hex,
                                  info);
    }
}

/* nccl-tests' column header, then ours. */
static void print_columns(void)
{
    printf("#\n# %10s  %12s  %8s  %6s  %6s           out-of-place           "
           "            in-place          \n",
           "", "", "", "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
           "%6s  %8s  %8s  %6s\n",
           "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
           "#wrong", "time", "algbw", "busbw", "#wrong", "wall(us)", "algo",
           "proto");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
           "%6s  %8s  %8s  %6s\n",
           "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
           "(us)", "(GB/s)", "(GB/s)", "", "", "", "");
}

static void print_header(const nvl_bench_coll_t *row, const nvl_bench_args_t *a,
                         const nvl_topo_t *topo, const nvl_runtime_t *rt,
                         nvl_bench_json_t *json)
{
    rank_id_t *all = gather_rank_ids(rt);
    if (rt->rank != 0)
        return;
    char step[48];
    if (a->step_factor > 1)
        snprintf(step, sizeof step, "%ld(factor)", a->step_factor);
    else
        snprintf(step, sizeof step, "%zu(bytes)", a->step_bytes);
    if (json != NULL)
        json_config(json, a, topo);
    printf("# nvlemu %s (output of nccl-tests version %s), topology %s: %s\n",
           NVL_VERSION, NCCL_TESTS_VERSION, topo->name, topo->description);
    printf("# Collective test starting: %s_perf\n", row->name);
    printf("# nThread %ld nGpus %ld minBytes %zu maxBytes %zu step: %s warmup "
           "iters: %ld iters: %ld agg iters: 1 validation: %d graph: %ld "
           "unalign: 0\n",
           a->nthreads, a->ngpus, a->min_bytes, a->max_bytes, step,
           a->warmup, a->iters, a->check ? 1 : 0, a->graph_calls);
    nvl_runtime_print_header(stdout);
    if (a->mode == MODE_AUTO)
        printf("# nvlemu: data mode up to %zu bytes (real buffers%s), timing "
               "mode above (no payload, #wrong N/A)\n",
               a->data_max, a->check ? ", results checked" : "");
    else
        printf("# nvlemu: %s mode at every size%s\n", nvl_bench_mode_names[a->mode].name,
               a->mode == MODE_DATA && a->check ? " (results checked)" : "");
    printf("# nvlemu: time = emulated time per call (mean of the virtual "
           "clock over the iters, at least the host's enqueue time); "
           "wall(us) = host time per call; algo proto = the tuner's "
           "choice\n");
    print_devices(topo, rt, all, json);
    free(all);
    print_columns();
    fflush(stdout);
}

/* The largest integer E such that 0..E are all exact in dtype (at most
 * 2^14): the bound on every partial sum of the check's inputs. */
static int exact_int_limit(nvl_dtype_t dtype)
{
    char elem[8];
    int e = 0;
    while (e < (1 << 14)) {
        nvl_dtype_from_float(dtype, (float)(e + 1), elem);
        if (nvl_dtype_to_float(dtype, elem) != (float)(e + 1))
            break;
        e++;
    }
    return e;
}

/* What the options name, loaded alike on every rank (nothing under
 * --help): the row's checks, the topology with its what-ifs and die view,
 * the validation families, and rank 0's -J file (argv as typed). */
static nvl_status_t prepare(nvl_bench_args_t *args,
                            const nvl_bench_coll_t *row,
                            const nvl_runtime_t *rt, int argc, char **typed,
                            nvl_topo_t **topo, nvl_validation_t **validation,
                            nvl_bench_json_t **json)
{
    nvl_status_t st = nvl_bench_check_args(args, row, rt->size);
    if (st == NVL_OK)
        st = nvl_topo_load(args->topo, topo);
    for (int i = 0; st == NVL_OK && i < args->set_files.n; i++)
        st = nvl_topo_set_file(*topo, args->set_files.items[i]);
    for (int i = 0; st == NVL_OK && i < args->sets.n; i++)
        st = nvl_topo_set(*topo, args->sets.items[i]);
    if (st == NVL_OK && args->rank_plays == NVL_PLAYS_DIE)
        st = nvl_topo_split_dies(*topo);
    if (st == NVL_OK)
        st = nvl_topo_check_die_ranks(*topo, (uint32_t)rt->size);
    if (st == NVL_OK)
        st = nvl_validation_load(NULL, NVL_SOURCE_DIR, validation);
    if (st == NVL_OK && args->json_path != NULL && rt->rank == 0)
        st = nvl_bench_json_open(args->json_path, argc, typed, json);
    return st;
}

/* Every size from -b to -e, times -f or plus -i. */
static nvl_status_t run_sizes(const nvl_bench_coll_t *row,
                              const nvl_bench_args_t *args, nvl_comm_t *comm,
                              const nvl_bench_call_t *call,
                              bench_totals_t *totals)
{
    nvl_status_t st = NVL_OK;
    for (size_t size = args->min_bytes; st == NVL_OK;) {
        st = run_size(row, args, comm, call, size, totals);
        if (args->step_factor > 1) {
            if (size > args->max_bytes / (size_t)args->step_factor)
                break;
            size *= (size_t)args->step_factor;
        } else {
            if (args->max_bytes - size < args->step_bytes ||
                args->step_bytes == 0)
                break;
            size += args->step_bytes;
        }
    }
    return st;
}

/* nccl-tests' footer on rank 0, with the validation families covering
 * this collective on these ranks and sizes (an engine's allreduce kernel
 * is a class of its own); closes -J (*json becomes NULL). */
static nvl_status_t print_footer(const nvl_bench_coll_t *row,
                                 const nvl_bench_args_t *args,
                                 const nvl_topo_t *topo, int nranks,
                                 const nvl_validation_t *validation,
                                 const bench_totals_t *totals,
                                 nvl_bench_json_t **json)
{
    double avg = totals->busbw_n ? totals->busbw_sum / totals->busbw_n : 0.0;
    printf("# Out of bounds values : %" PRId64 " %s\n", totals->wrong,
           totals->wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n#\n", avg);
    char cls[48];
    if (args->impl != NVL_AR_NCCL)
        snprintf(cls, sizeof cls, "allreduce-%s", nvl_ar_impl_name(args->impl));
    else
        snprintf(cls, sizeof cls, "%s", row->name);
    nvl_vquery_t q = {.what = cls, .cls = cls, .hardware = topo->name,
                      .ranks = (uint32_t)nranks, .sized = true,
                      .size_lo = (double)args->min_bytes,
                      .size_hi = (double)args->max_bytes};
    nvl_validation_print(validation, &q, 1, stdout);
    printf("#\n# Collective test concluded: %s_perf\n#\n\n", row->name);
    fflush(stdout);
    nvl_status_t st = nvl_bench_json_close(*json, totals->wrong, avg,
                                           nvl_validation_json(validation,
                                                               &q, 1));
    *json = NULL;
    return st;
}

/* --version: this build and the nccl-tests whose output it reproduces. */
static void print_version(int rank)
{
    if (rank == 0)
        printf("%s_perf: nvlemu %s (commit %s), output of nccl-tests %s\n",
               NVL_BENCH_COLL, NVL_VERSION, NVL_GIT_COMMIT,
               NCCL_TESTS_VERSION);
}

int main(int argc, char **argv)
{
    /* the options of perf_opts.c, with this benchmark named in the usage */
    nvl_opts_t opt_table = nvl_bench_opts;
    opt_table.usage = "mpirun -np N " NVL_BENCH_COLL "_perf --topo FILE "
                      "[options]";
    opt_table.intro = "Times the emulated " NVL_BENCH_COLL " on N ranks (one "
                      "GPU each) and prints nccl-tests' table.";
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        print_version(rt.rank);
        nvl_runtime_finalize();
        return 0;
    }
    const nvl_bench_coll_t *row = nvl_bench_coll_find(NVL_BENCH_COLL);
    nvl_bench_args_t args = {0};
    nvl_topo_t *topo = NULL;
    nvl_validation_t *validation = NULL;
    nvl_comm_t *comm = NULL;
    nvl_vclock_t clock = {0};
    int code = 1;

    nvl_runtime_capture_begin();
    nvl_status_t st = NVL_OK;
    if (row == NULL) {
        nvl_report("no benchmark row '%s' in bench/perf_colls.c",
                   NVL_BENCH_COLL);
        st = NVL_ERR_INVALID;
    }
    /* getopt_long reorders argv: -J records it as typed */
    char **typed = malloc(((size_t)argc + 1) * sizeof *typed);
    nvl_bench_json_t *json = NULL;
    if (typed == NULL) {
        nvl_report("out of memory");
        st = NVL_ERR_NOMEM;
    } else {
        memcpy(typed, argv, ((size_t)argc + 1) * sizeof *typed);
    }
    int first;
    if (st == NVL_OK)
        st = nvl_opts_parse(&opt_table, argc, argv, &args, &first);
    if (st == NVL_OK && !args.help)
        st = prepare(&args, row, &rt, argc, typed, &topo, &validation, &json);
    if (nvl_runtime_capture_end(st) != NVL_OK)
        goto out;
    if (args.help) {
        if (rt.rank == 0)
            nvl_opts_help(&opt_table, stdout);
        code = 0;
        goto out;
    }
    if (nvl_runtime_check_topo(topo) != NVL_OK ||
        nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &comm) != NVL_OK ||
        nvl_comm_set_allreduce(comm, args.impl) != NVL_OK)
        goto out;
    /* NCCL_ALGO / NCCL_PROTO may leave nothing that runs this collective:
     * say so before the table (the p2p ones need no algorithm) */
    nvl_coll_info_t probe;
    if (row->coll <= NVL_COLL_ALLREDUCE &&
        nvl_coll_choose(comm, row->coll, 0, &probe) != NVL_OK)
        goto out;

    print_header(row, &args, topo, &rt, json);
    /* inputs stay small integers: with |input| <= 2, sums over at most
     * E / 2 ranks stay exact (fp8: 8 ranks, bf16: 128) */
    nvl_bench_call_t call = {
        .rank = rt.rank, .nranks = rt.size, .dtype = args.dtype,
        .op = args.op, .root = (int)args.root, .reducing = row->has_op,
        .sum_ranks = exact_int_limit(args.dtype) / 2};
    bench_totals_t totals = {.json = json};
    if (run_sizes(row, &args, comm, &call, &totals) != NVL_OK)
        goto out;
    nvl_runtime_capture_begin();
    st = NVL_OK;
    if (rt.rank == 0)
        st = print_footer(row, &args, topo, rt.size, validation, &totals,
                          &json);
    if (nvl_runtime_capture_end(st) != NVL_OK)
        goto out;
    int64_t wrong = totals.wrong;
    MPI_Bcast(&wrong, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    code = wrong == 0 ? 0 : 1;
out:
    nvl_bench_json_free(json, true); /* a run that failed writes no file */
    free(typed);
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
    nvl_validation_free(validation);
    nvl_opts_free(&opt_table, &args);
    nvl_runtime_finalize();
    return code;
}
