/* coll_speed: what the emulation itself costs on this host, side by side
 * with Open MPI on the same ranks, in one run.
 *
 *   timing mode: wall time of one emulated allreduce (8 B and 1 GiB: the
 *     payload never moves) against one MPI_Allreduce of 8 bytes;
 *   data mode: wall time per call of nvl_allreduce (float, sum, the
 *     algorithm the tuner picks) against MPI_Allreduce on the same buffers,
 *     from --min-bytes to --max-bytes by --factor; each size runs --reps
 *     times, the two alternating, and the medians are printed, with
 *     their ratio and, in the footer, the worst ratio over the sizes: at
 *     or below 1, one emulated call costs no more than one MPI
 *     collective on the same ranks (docs/collectives.md, "What the
 *     emulation costs", records the measured tables).
 *
 *   --impl IMPL times a serving engine's allreduce kernel instead of
 *     NCCL's (nvl_comm_set_allreduce; the names: nvlemu --list
 *     allreduce), in both modes.
 *
 *   mpirun -np N build/bench/coll_speed [--topo FILE] [--iters N]
 *       [--min-bytes SIZE] [--max-bytes SIZE] [--factor F] [--reps R]
 *       [--impl IMPL]
 * Reported, never asserted (timings belong in bench/, not in tests). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/coll.h"
#include "nvlemu/opts.h"
#include "nvlemu/runtime.h"

#define MAX_REPS 99

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double per_call_us(double t0, long iters)
{
    double dt = MPI_Wtime() - t0, max;
    MPI_Allreduce(&dt, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max / iters * 1e6;
}

typedef struct {
    const char *topo;
    long iters, factor, reps;
    size_t min_bytes, max_bytes;
    int impl; /* nvl_ar_impl_t */
    int help;
} speed_args_t;

#define AT(f) offsetof(speed_args_t, f)
static const nvl_opt_t speed_opts[] = {
    {.name = "topo", .kind = NVL_OPT_STRING, .offset = AT(topo),
     .arg = "FILE", .def = "topology/gb200-nvl72.topo",
     .doc = "the emulated system"},
    {.name = "iters", .kind = NVL_OPT_LONG, .offset = AT(iters), .arg = "N",
     .def = "200", .min = 1, .max = 100000000,
     .doc = "calls per timed run (a twentieth from 1 MiB on)"},
    {.name = "min-bytes", .kind = NVL_OPT_SIZE, .offset = AT(min_bytes),
     .arg = "SIZE", .def = "1K", .min_d = 4, .max_d = 0x1p40,
     .doc = "smallest data-mode size (docs/units.md: 1K = 1KiB, 1KB = 1000)"},
    {.name = "max-bytes", .kind = NVL_OPT_SIZE, .offset = AT(max_bytes),
     .arg = "SIZE", .def = "64M", .min_d = 4, .max_d = 0x1p40,
     .doc = "largest data-mode size"},
    {.name = "factor", .kind = NVL_OPT_LONG, .offset = AT(factor),
     .arg = "F", .def = "8", .min = 2, .max = 1L << 30,
     .doc = "multiply the size by F between sizes"},
    {.name = "reps", .kind = NVL_OPT_LONG, .offset = AT(reps), .arg = "R",
     .def = "5", .min = 1, .max = MAX_REPS,
     .doc = "runs per size; the median is printed"},
    {.name = "impl", .kind = NVL_OPT_ENUM, .offset = AT(impl),
     .def = "nccl", .family = &nvl_ar_impl_family,
     .doc = "the allreduce timed: NCCL's, or a serving engine's kernel "
            "(nvlemu --list allreduce)"},
    {.name = "help", .short_name = 'h', .kind = NVL_OPT_HELP,
     .offset = AT(help), .doc = "print this help"},
};
#undef AT

static const nvl_opts_t speed_set = {
    .prefix = "coll_speed",
    .help_hint = "coll_speed --help",
    .usage = "mpirun -np N coll_speed [options]",
    .opts = speed_opts,
    .n_opts = sizeof speed_opts / sizeof speed_opts[0],
};

/* The options, checked alike on every rank (every rank sees the same
 * argv): 0 to go on, else the exit code (-1: --help, printed). */
static int parse_args(int argc, char **argv, const nvl_runtime_t *rt,
                      speed_args_t *a)
{
    int first;
    nvl_runtime_capture_begin();
    nvl_status_t st = nvl_opts_parse(&speed_set, argc, argv, a, &first);
    if (st == NVL_OK && !a->help && a->max_bytes < a->min_bytes) {
        nvl_report("coll_speed: --max-bytes %zu is below --min-bytes %zu",
                   a->max_bytes, a->min_bytes);
        st = NVL_ERR_INVALID;
    }
    if (nvl_runtime_capture_end(st) != NVL_OK)
        return 1;
    if (a->help) {
        if (rt->rank == 0)
            nvl_opts_help(&speed_set, stdout);
        return -1;
    }
    return 0;
}

/* Timing mode: the median of reps alternating runs, after a warm-up, of
 * MPI_Allreduce of 8 bytes and nvl_allreduce of 8 B and 1 GiB (whose
 * payload never moves). */
static void time_timing_mode(nvl_comm_t *comm, const speed_args_t *a,
                             int rank)
{
    int reps = (int)a->reps;
    double x = 1, y, t0, mpi8[MAX_REPS], emu[2][MAX_REPS];
    size_t timing_counts[2] = {2, (size_t)1 << 28}; /* 8 B and 1 GiB floats */
    nvl_comm_set_mode(comm, NVL_MODE_TIMING);
    for (int r = -1; r < reps; r++) {
        long n = r < 0 ? 2 : a->iters;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < n; i++)
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        mpi8[r < 0 ? 0 : r] = per_call_us(t0, n);
        for (int k = 0; k < 2; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (long i = 0; i < n; i++)
                nvl_allreduce(comm, NULL, NULL, timing_counts[k], NVL_DT_F32,
                              NVL_OP_SUM, NULL);
            emu[k][r < 0 ? 0 : r] = per_call_us(t0, n);
        }
    }
    if (rank == 0) {
        printf("  %-32s %12.2f\n", "MPI_Allreduce 8 B",
               median(mpi8, reps));
        printf("  %-32s %12.2f\n", "nvl_allreduce 8 B (timing)",
               median(emu[0], reps));
        printf("  %-32s %12.2f\n", "nvl_allreduce 1 GiB (timing)",
               median(emu[1], reps));
    }
}

/* One data-mode size: the medians (us per call) of reps alternating runs
 * of nvl_allreduce and MPI_Allreduce on the same floats, after a warm-up;
 * *info_out: what the emulated call chose. */
static void time_size(nvl_comm_t *comm, const float *send, float *recv,
                      size_t bytes, const speed_args_t *a, double *emu_out,
                      double *mpi_out, nvl_coll_info_t *info_out)
{
    size_t count = bytes / sizeof(float);
    long n = a->iters;
    if (bytes >= ((size_t)1 << 20))
        n = a->iters / 20 > 2 ? a->iters / 20 : 2;
    double t_emu[MAX_REPS], t_mpi[MAX_REPS], t0;
    for (long i = 0; i < 2; i++) { /* warm up: buffers, connections */
        nvl_allreduce(comm, send, recv, count, NVL_DT_F32, NVL_OP_SUM,
                      info_out);
        MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
    }
    for (int r = 0; r < a->reps; r++) { /* alternate, so drift hits both */
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < n; i++)
            nvl_allreduce(comm, send, recv, count, NVL_DT_F32, NVL_OP_SUM,
                          info_out);
        t_emu[r] = per_call_us(t0, n);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < n; i++)
            MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
        t_mpi[r] = per_call_us(t0, n);
    }
    *emu_out = median(t_emu, (int)a->reps);
    *mpi_out = median(t_mpi, (int)a->reps);
}

/* Data mode: a row per size from --min-bytes to --max-bytes, and the
 * worst ratio. */
static void time_data_mode(nvl_comm_t *comm, const speed_args_t *a,
                           int rank)
{
    nvl_comm_set_mode(comm, NVL_MODE_DATA);
    float *send = malloc(a->max_bytes), *recv = malloc(a->max_bytes);
    if (send == NULL || recv == NULL) {
        nvl_report("out of memory for %zu-byte buffers", a->max_bytes);
        nvl_runtime_abort(1);
    }
    for (size_t i = 0; i < a->max_bytes / sizeof(float); i++)
        send[i] = (float)(i % 7);
    double worst = 0, e, m;
    size_t worst_bytes = 0;
    for (size_t bytes = a->min_bytes; bytes <= a->max_bytes;
         bytes *= (size_t)a->factor) {
        nvl_coll_info_t info = {0};
        time_size(comm, send, recv, bytes, a, &e, &m, &info);
        if (e / m > worst) {
            worst = e / m;
            worst_bytes = bytes;
        }
        if (rank == 0)
            printf("  %12zu %12.2f %12.2f %8.2f  %s/%s\n", bytes, e, m, e / m,
                   info.impl != NVL_AR_NCCL
                       ? nvl_ar_impl_name((nvl_ar_impl_t)info.impl)
                       : nvl_algo_key(info.algo),
                   info.impl != NVL_AR_NCCL ? "-" : nvl_proto_key(info.proto));
    }
    if (rank == 0)
        printf("# worst ratio: %.2f at %zu B (nvlemu / MPI_Allreduce of the "
               "same floats; <= 1: one emulated call costs at most one MPI "
               "collective)\n", worst, worst_bytes);
    free(send);
    free(recv);
}

int main(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    speed_args_t a = {0};
    int code = parse_args(argc, argv, &rt, &a);
    if (code != 0) {
        nvl_opts_free(&speed_set, &a);
        nvl_runtime_finalize();
        return code < 0 ? 0 : code;
    }
    nvl_topo_t *topo = NULL;
    nvl_runtime_capture_begin();
    nvl_status_t st = nvl_topo_load(a.topo, &topo);
    if (nvl_runtime_capture_end(st) != NVL_OK ||
        nvl_runtime_check_topo(topo) != NVL_OK) {
        nvl_runtime_finalize();
        return 1;
    }
    nvl_vclock_t clock = {0};
    nvl_comm_t *comm;
    if (nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &comm) != NVL_OK ||
        nvl_comm_set_allreduce(comm, (nvl_ar_impl_t)a.impl) != NVL_OK) {
        nvl_runtime_finalize();
        return 1;
    }
    nvl_runtime_print_header(stdout);
    if (rt.rank == 0)
        printf("# coll_speed: %d ranks, %ld iterations, topology %s, "
               "allreduce %s\n"
               "#\n# timing mode: wall time per call (us), the median of "
               "%ld runs\n"
               "# %-32s %12s\n",
               rt.size, a.iters, topo->name,
               nvl_ar_impl_name((nvl_ar_impl_t)a.impl), a.reps,
               "call", "wall(us)");
    time_timing_mode(comm, &a, rt.rank);
    if (rt.rank == 0)
        printf("#\n# data mode, float sum: wall time per call (us), the "
               "median of %ld alternating runs\n# %12s %12s %12s %8s  %s\n",
               a.reps, "size(B)", "nvlemu", "MPI", "ratio", "algorithm");
    time_data_mode(comm, &a, rt.rank);
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
    nvl_runtime_finalize();
    return 0;
}
