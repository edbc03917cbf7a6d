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
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvlemu/coll.h"
#include "nvlemu/runtime.h"
#include "nvlemu/topo.h"
#include "nvlemu/units.h"
#include "perf.h"

#ifndef NVL_BENCH_COLL
#error "build with -DNVL_BENCH_COLL=\"all_reduce\" (a row of perf_colls.c)"
#endif
#ifndef NVL_VERSION
#define NVL_VERSION "unknown"
#endif
#define NCCL_TESTS_VERSION "2.19.6" /* whose output this reproduces */

/* ---- options ------------------------------------------------------------ */

typedef enum { MODE_AUTO, MODE_DATA, MODE_TIMING } bench_mode_t;

typedef struct {
    const char *topo;
    size_t min_bytes, max_bytes, step_bytes, data_max;
    long step_factor, iters, warmup, root, check;
    nvl_dtype_t dtype;
    nvl_redop_t op;
    bench_mode_t mode;
    int help;
} bench_args_t;

typedef enum {
    OPT_PATH,    /* const char *, the argument itself */
    OPT_SIZE,    /* size_t bytes: a number with K, M or G (1024-based) */
    OPT_LONG,    /* long >= min */
    OPT_DTYPE,   /* nvl_dtype_t by name */
    OPT_OP,      /* nvl_redop_t by name */
    OPT_MODE,    /* bench_mode_t by name */
    OPT_ONE,     /* nccl-tests option that must stay 1 here */
    OPT_IGNORED, /* nccl-tests option without meaning here: a number */
    OPT_HELP
} opt_kind_t;

typedef struct {
    const char *name; /* long name, without "--" */
    char short_name;  /* nccl-tests' letter, or 0 */
    opt_kind_t kind;
    size_t offset;    /* of the field in bench_args_t */
    long min;         /* OPT_LONG */
    const char *arg;
    const char *doc;
} bench_opt_t;

#define AT(field) offsetof(bench_args_t, field)
static const bench_opt_t opts[] = {
    {"topo", 0, OPT_PATH, AT(topo), 0, "FILE",
     "topology to emulate (required); rank r plays GPU r"},
    {"minbytes", 'b', OPT_SIZE, AT(min_bytes), 0, "SIZE",
     "smallest size (default 32M; K, M, G are powers of 1024)"},
    {"maxbytes", 'e', OPT_SIZE, AT(max_bytes), 0, "SIZE",
     "largest size (default 32M)"},
    {"stepbytes", 'i', OPT_SIZE, AT(step_bytes), 0, "SIZE",
     "increment between sizes when --stepfactor is 1 (default 1M)"},
    {"stepfactor", 'f', OPT_LONG, AT(step_factor), 1, "N",
     "multiply the size by N between sizes (default 1: use --stepbytes)"},
    {"iters", 'n', OPT_LONG, AT(iters), 1, "N",
     "timed calls per size and layout (default 20)"},
    {"warmup_iters", 'w', OPT_LONG, AT(warmup), 0, "N",
     "untimed calls before them (default 5)"},
    {"datatype", 'd', OPT_DTYPE, AT(dtype), 0, "TYPE",
     "float, half, bfloat16 or f8e4m3 (default float)"},
    {"op", 'o', OPT_OP, AT(op), 0, "OP", "sum, max or min (default sum)"},
    {"root", 'r', OPT_LONG, AT(root), 0, "N",
     "root of broadcast and reduce (default 0)"},
    {"check", 'c', OPT_LONG, AT(check), 0, "N",
     "check the results of data-mode sizes (default 1; 0: no check)"},
    {"mode", 0, OPT_MODE, AT(mode), 0, "MODE",
     "data, timing, or auto: data mode up to --data-max and timing mode "
     "above (default auto)"},
    {"data-max", 0, OPT_SIZE, AT(data_max), 0, "SIZE",
     "largest size that auto mode runs in data mode (default 1M)"},
    {"ngpus", 'g', OPT_ONE, 0, 0, "1",
     "GPUs per rank: only 1 (one rank plays one GPU)"},
    {"nthreads", 't', OPT_ONE, 0, 0, "1", "threads per rank: only 1"},
    {"average", 'a', OPT_IGNORED, 0, 0, "N",
     "accepted and ignored: every rank sees the same emulated time"},
    {"blocking", 'z', OPT_IGNORED, 0, 0, "N", "accepted and ignored"},
    {"cudagraph", 'G', OPT_IGNORED, 0, 0, "N", "accepted and ignored"},
    {"help", 'h', OPT_HELP, 0, 0, NULL, "this help"},
};
#define N_OPTS (sizeof opts / sizeof opts[0])
#define OPT_LONG_ONLY 256 /* getopt value of row i without a letter: +i */

static const char *const mode_names[] = {
    [MODE_AUTO] = "auto", [MODE_DATA] = "data", [MODE_TIMING] = "timing"};

/* "-b/--minbytes" or "--topo", for messages. */
static const char *opt_label(const bench_opt_t *o)
{
    static char buf[64];
    if (o->short_name)
        snprintf(buf, sizeof buf, "-%c/--%s", o->short_name, o->name);
    else
        snprintf(buf, sizeof buf, "--%s", o->name);
    return buf;
}

/* nccl-tests' sizes: a number of bytes, optionally with K, M or G. */
static nvl_status_t parse_size(const bench_opt_t *o, const char *text,
                               size_t *bytes_out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    double unit = 1;
    switch (end != text ? *end : '\0') {
    case 'K': case 'k': unit = 1024.0; end++; break;
    case 'M': case 'm': unit = 1024.0 * 1024; end++; break;
    case 'G': case 'g': unit = 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    v *= unit;
    if (end == text || *end != '\0' || errno != 0 || !(v >= 0) ||
        v != floor(v) || v > 0x1p62) {
        nvl_report("%s %s: expected a whole number of bytes, optionally with "
                   "K, M or G (powers of 1024), as in 8, 64K, 8G",
                   opt_label(o), text);
        return NVL_ERR_INVALID;
    }
    *bytes_out = (size_t)v;
    return NVL_OK;
}

static nvl_status_t parse_long(const bench_opt_t *o, const char *text,
                               long min, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < min ||
        v > 1000000000L) {
        nvl_report("%s %s: expected a whole number from %ld to 1000000000",
                   opt_label(o), text, min);
        return NVL_ERR_INVALID;
    }
    *out = v;
    return NVL_OK;
}

static nvl_status_t set_option(const bench_opt_t *o, const char *value,
                               bench_args_t *a)
{
    void *field = (char *)a + o->offset;
    long ignored;
    switch (o->kind) {
    case OPT_PATH: *(const char **)field = value; return NVL_OK;
    case OPT_SIZE: return parse_size(o, value, field);
    case OPT_LONG: return parse_long(o, value, o->min, field);
    case OPT_DTYPE: return nvl_dtype_parse(value, field);
    case OPT_OP: return nvl_redop_parse(value, field);
    case OPT_MODE:
        for (size_t m = 0; m < sizeof mode_names / sizeof mode_names[0]; m++)
            if (strcmp(value, mode_names[m]) == 0) {
                *(bench_mode_t *)field = (bench_mode_t)m;
                return NVL_OK;
            }
        nvl_report("%s %s: expected data, timing or auto", opt_label(o),
                   value);
        return NVL_ERR_INVALID;
    case OPT_ONE:
        if (strcmp(value, "1") != 0) {
            nvl_report("%s %s: must be 1 here: each MPI rank plays one GPU "
                       "with one thread (for N GPUs, start N ranks: mpirun "
                       "-np N)",
                       opt_label(o), value);
            return NVL_ERR_INVALID;
        }
        return NVL_OK;
    case OPT_IGNORED: return parse_long(o, value, 0, &ignored);
    case OPT_HELP: a->help = 1; return NVL_OK;
    }
    return NVL_ERR_INVALID;
}

/* Checks what one option alone cannot; nranks is the MPI world size. */
static nvl_status_t check_args(const bench_args_t *a,
                               const nvl_bench_coll_t *row, int nranks)
{
    size_t esz = nvl_dtype_size(a->dtype);
    const struct { const char *label; size_t bytes; bool used; } sizes[] = {
        {"-b/--minbytes", a->min_bytes, true},
        {"-e/--maxbytes", a->max_bytes, true},
        {"-i/--stepbytes", a->step_bytes, a->step_factor == 1},
    };
    if (a->topo == NULL) {
        nvl_report("--topo FILE is required (e.g. --topo "
                   "topology/gb200-nvl72.topo)");
        return NVL_ERR_INVALID;
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].used && sizes[i].bytes % esz != 0) {
            nvl_report("%s %zu: not a whole number of %zu-byte %s elements",
                       sizes[i].label, sizes[i].bytes, esz,
                       nvl_dtype_name(a->dtype));
            return NVL_ERR_INVALID;
        }
    }
    if (a->min_bytes > a->max_bytes) {
        nvl_report("-b/--minbytes %zu is larger than -e/--maxbytes %zu",
                   a->min_bytes, a->max_bytes);
        return NVL_ERR_INVALID;
    }
    if (a->step_factor == 1 && a->step_bytes == 0 &&
        a->min_bytes < a->max_bytes) {
        nvl_report("-i/--stepbytes 0 with -f/--stepfactor 1 never reaches "
                   "-e/--maxbytes");
        return NVL_ERR_INVALID;
    }
    if (a->step_factor > 1 && a->min_bytes == 0) {
        nvl_report("-b/--minbytes 0 does not grow by -f/--stepfactor %ld; "
                   "start at one element or more",
                   a->step_factor);
        return NVL_ERR_INVALID;
    }
    if (row->has_root && a->root >= nranks) {
        nvl_report("-r/--root %ld: no such rank (the job has %d: 0..%d)",
                   a->root, nranks, nranks - 1);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

static nvl_status_t parse_args(int argc, char **argv,
                               const nvl_bench_coll_t *row, int nranks,
                               bench_args_t *a)
{
    struct option longopts[N_OPTS + 1];
    char shortopts[2 * N_OPTS + 2] = ":";
    size_t ns = 1;
    for (size_t i = 0; i < N_OPTS; i++) {
        int has_arg = opts[i].kind == OPT_HELP ? no_argument
                                               : required_argument;
        int val = opts[i].short_name ? opts[i].short_name
                                     : OPT_LONG_ONLY + (int)i;
        longopts[i] = (struct option){opts[i].name, has_arg, NULL, val};
        if (opts[i].short_name) {
            shortopts[ns++] = opts[i].short_name;
            if (has_arg == required_argument)
                shortopts[ns++] = ':';
        }
    }
    shortopts[ns] = '\0';
    longopts[N_OPTS] = (struct option){NULL, 0, NULL, 0};

    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (c == ':' || c == '?') {
            const char *what = argv[optind - 1];
            char letter[3] = {'-', (char)optopt, '\0'};
            if (optopt > 0 && optopt < OPT_LONG_ONLY)
                what = letter;
            if (c == ':')
                nvl_report("option %s needs a value (see --help)", what);
            else
                nvl_report("unknown option '%s' (see --help)", what);
            return NVL_ERR_INVALID;
        }
        const bench_opt_t *o = NULL;
        for (size_t i = 0; i < N_OPTS && o == NULL; i++)
            if (c == (opts[i].short_name ? opts[i].short_name
                                         : OPT_LONG_ONLY + (int)i))
                o = &opts[i];
        nvl_status_t st = set_option(o, optarg, a);
        if (st != NVL_OK)
            return st;
    }
    if (optind < argc) {
        nvl_report("unexpected argument '%s' (see --help)", argv[optind]);
        return NVL_ERR_INVALID;
    }
    return a->help ? NVL_OK : check_args(a, row, nranks);
}

static void print_help(FILE *out)
{
    fprintf(out, "usage: mpirun -np N %s_perf --topo FILE [options]\n\n"
                 "Times the emulated %s on N ranks (one GPU each) and prints "
                 "nccl-tests' table.\n\noptions:\n",
            NVL_BENCH_COLL, NVL_BENCH_COLL);
    for (size_t i = 0; i < N_OPTS; i++) {
        char left[96];
        snprintf(left, sizeof left, "%s%s%s", opt_label(&opts[i]),
                 opts[i].arg ? " " : "", opts[i].arg ? opts[i].arg : "");
        fprintf(out, "  %-28s %s\n", left, opts[i].doc);
    }
}

/* ---- one size ------------------------------------------------------------ */

typedef struct {
    const nvl_bench_coll_t *row;
    const bench_args_t *args;
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
            /* back to back, a call never beats its host enqueue time */
            out->time_ps += nvl_coll_loop_time_ps(b->comm, &out->info, 1);
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

/* Prints time, algbw, busbw and #wrong of one phase; returns busbw. */
static double print_phase(const bench_size_t *b, size_t bytes,
                          const bench_phase_t *p)
{
    double time_us = (double)p->time_ps / (double)b->args->iters / 1e6;
    double algbw = time_us > 0 ? (double)bytes / 1e3 / time_us : 0;
    double busbw = algbw * b->row->busbw_factor(b->call.nranks);
    char t[32], ab[32], bb[32], wrong[32] = "N/A";
    format_num(time_us, 7, t, sizeof t);
    format_num(algbw, 6, ab, sizeof ab);
    format_num(busbw, 6, bb, sizeof bb);
    if (p->wrong >= 0)
        snprintf(wrong, sizeof wrong, "%g", (double)p->wrong);
    printf("  %7s  %6s  %6s  %6s", t, ab, bb, wrong);
    return busbw;
}

typedef struct {
    double busbw_sum;
    int busbw_n;
    int64_t wrong;
} bench_totals_t;

static nvl_status_t run_size(const nvl_bench_coll_t *row,
                             const bench_args_t *a, nvl_comm_t *comm,
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
    if (b.call.rank == 0) {
        char root[16] = "-1", wall[32];
        if (row->has_root)
            snprintf(root, sizeof root, "%d", b.call.root);
        printf("%12zu  %12zu  %8s  %6s  %6s", bytes, count,
               nvl_dtype_name(a->dtype),
               row->has_op ? nvl_redop_name(a->op) : "none", root);
        for (int i = 0; i < 2; i++) {
            totals->busbw_sum += print_phase(&b, bytes, &ph[i]);
            totals->busbw_n++;
            if (ph[i].wrong > 0)
                totals->wrong += ph[i].wrong;
        }
        const nvl_coll_info_t *info = &ph[0].info;
        format_num((ph[0].wall_s + ph[1].wall_s) * 1e6 / (2.0 * a->iters), 8,
                   wall, sizeof wall);
        printf("  %8s  %8s  %6s\n", wall,
               nvl_algo_name(info->algo),
               nvl_proto_name((nvl_proto_t)info->proto));
        fflush(stdout);
    }
    return NVL_OK;
}

/* ---- the header ---------------------------------------------------------- */

static void print_header(const nvl_bench_coll_t *row, const bench_args_t *a,
                         const nvl_topo_t *topo, const nvl_runtime_t *rt)
{
    typedef struct {
        int pid;
        char host[64];
    } rank_id_t;
    rank_id_t me = {(int)getpid(), ""}, *all = NULL;
    snprintf(me.host, sizeof me.host, "%s", rt->host.hostname);
    char *dot = strchr(me.host, '.');
    if (dot != NULL)
        *dot = '\0';
    if (rt->rank == 0)
        all = malloc((size_t)rt->size * sizeof *all);
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE,
               0, MPI_COMM_WORLD);
    if (rt->rank != 0)
        return;

    char step[48], hbm[32], link[32];
    if (a->step_factor > 1)
        snprintf(step, sizeof step, "%ld(factor)", a->step_factor);
    else
        snprintf(step, sizeof step, "%zu(bytes)", a->step_bytes);
    printf("# nvlemu %s (output of nccl-tests version %s), topology %s: %s\n",
           NVL_VERSION, NCCL_TESTS_VERSION, topo->name, topo->description);
    printf("# Collective test starting: %s_perf\n", row->name);
    printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %s warmup "
           "iters: %ld iters: %ld agg iters: 1 validation: %d graph: 0 "
           "unalign: 0\n",
           a->min_bytes, a->max_bytes, step, a->warmup, a->iters,
           a->check ? 1 : 0);
    nvl_runtime_print_header(stdout);
    if (a->mode == MODE_AUTO)
        printf("# nvlemu: data mode up to %zu bytes (real buffers%s), timing "
               "mode above (no payload, #wrong N/A)\n",
               a->data_max, a->check ? ", results checked" : "");
    else
        printf("# nvlemu: %s mode at every size%s\n", mode_names[a->mode],
               a->mode == MODE_DATA && a->check ? " (results checked)" : "");
    printf("# nvlemu: time = emulated time per call (mean of the virtual "
           "clock over the iters, at least the host's enqueue time); "
           "wall(us) = host time per call; algo proto = the tuner's "
           "choice\n");
    printf("#\n# Using devices\n");
    nvl_qty_format(NVL_QTY_BYTES, (double)topo->gpu.hbm_bytes, hbm,
                   sizeof hbm);
    for (int r = 0; r < rt->size && all != NULL; r++) {
        uint32_t g = (uint32_t)r;
        nvl_qty_format(NVL_QTY_BW, nvl_topo_nvlink_bw(topo, g), link,
                       sizeof link);
        printf("#  Rank %2d Group %2d Pid %6d on %10s device %2u [GPU %u of "
               "%s] %s HBM, NVLink %s\n",
               r, 0, all[r].pid, all[r].host,
               g % topo->node.gpus_per_tray, g, topo->name, hbm, link);
    }
    free(all);
    /* nccl-tests' column header, then ours */
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

int main(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    const nvl_bench_coll_t *row = nvl_bench_coll_find(NVL_BENCH_COLL);
    bench_args_t args = {
        .min_bytes = 32u << 20, .max_bytes = 32u << 20,
        .step_bytes = 1u << 20, .data_max = 1u << 20, .step_factor = 1,
        .iters = 20, .warmup = 5, .check = 1, .dtype = NVL_DT_F32,
        .op = NVL_OP_SUM, .mode = MODE_AUTO};
    nvl_topo_t *topo = NULL;
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
    if (st == NVL_OK)
        st = parse_args(argc, argv, row, rt.size, &args);
    if (st == NVL_OK && !args.help)
        st = nvl_topo_load(args.topo, &topo);
    if (nvl_runtime_capture_end(st) != NVL_OK)
        goto out;
    if (args.help) {
        if (rt.rank == 0)
            print_help(stdout);
        code = 0;
        goto out;
    }
    if (nvl_runtime_check_topo(topo) != NVL_OK ||
        nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &comm) != NVL_OK)
        goto out;
    /* NCCL_ALGO / NCCL_PROTO may leave nothing that runs this collective:
     * say so before the table (the p2p ones need no algorithm) */
    nvl_coll_info_t probe;
    if (row->coll <= NVL_COLL_ALLREDUCE &&
        nvl_coll_choose(comm, row->coll, 0, &probe) != NVL_OK)
        goto out;

    print_header(row, &args, topo, &rt);
    /* inputs stay small integers: with |input| <= 2, sums over at most
     * E / 2 ranks stay exact (fp8: 8 ranks, bf16: 128) */
    nvl_bench_call_t call = {
        .rank = rt.rank, .nranks = rt.size, .dtype = args.dtype,
        .op = args.op, .root = (int)args.root, .reducing = row->has_op,
        .sum_ranks = exact_int_limit(args.dtype) / 2};
    bench_totals_t totals = {0};
    st = NVL_OK;
    for (size_t size = args.min_bytes; st == NVL_OK;) {
        st = run_size(row, &args, comm, &call, size, &totals);
        if (args.step_factor > 1) {
            if (size > args.max_bytes / (size_t)args.step_factor)
                break;
            size *= (size_t)args.step_factor;
        } else {
            if (args.max_bytes - size < args.step_bytes ||
                args.step_bytes == 0)
                break;
            size += args.step_bytes;
        }
    }
    if (st != NVL_OK)
        goto out;
    if (rt.rank == 0) {
        printf("# Out of bounds values : %" PRId64 " %s\n", totals.wrong,
               totals.wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g \n#\n",
               totals.busbw_n ? totals.busbw_sum / totals.busbw_n : 0.0);
        printf("# Collective test concluded: %s_perf\n#\n\n", row->name);
        fflush(stdout);
    }
    int64_t wrong = totals.wrong;
    MPI_Bcast(&wrong, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    code = wrong == 0 ? 0 : 1;
out:
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
    nvl_runtime_finalize();
    return code;
}
