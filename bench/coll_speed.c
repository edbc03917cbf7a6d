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
 *     NCCL's (nvl_comm_set_allreduce: oneshot, twoshot, nvls-oneshot,
 *     nvls-twoshot, auto), in both modes.
 *
 *   mpirun -np N build/bench/coll_speed [--topo FILE] [--iters N]
 *       [--min-bytes SIZE] [--max-bytes SIZE] [--factor F] [--reps R]
 *       [--impl IMPL]
 * Reported, never asserted (timings belong in bench/, not in tests). */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/coll.h"
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

/* A number of bytes, optionally with K, M or G (powers of 1024), as
 * nccl-tests writes sizes; 0 when it is not one. */
static size_t parse_size(const char *text)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    int shift = 0;
    switch (end != text ? *end : '\0') {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    default: break;
    }
    if (end == text || *end != '\0' || v > (SIZE_MAX >> shift))
        return 0;
    return (size_t)v << shift;
}

static double per_call_us(double t0, long iters)
{
    double dt = MPI_Wtime() - t0, max;
    MPI_Allreduce(&dt, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max / iters * 1e6;
}

int main(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    const char *topo_path = "topology/gb200-nvl72.topo";
    long iters = 200;
    size_t min_bytes = 1024, max_bytes = (size_t)64 << 20, factor = 8;
    int reps = 5;
    nvl_ar_impl_t impl = NVL_AR_NCCL;
    bool bad_impl = false;
    static const struct option opts[] = {
        {"topo", required_argument, NULL, 't'},
        {"iters", required_argument, NULL, 'n'},
        {"min-bytes", required_argument, NULL, 'b'},
        {"max-bytes", required_argument, NULL, 'e'},
        {"factor", required_argument, NULL, 'f'},
        {"reps", required_argument, NULL, 'r'},
        {"impl", required_argument, NULL, 'i'},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 't')
            topo_path = optarg;
        else if (c == 'n')
            iters = atol(optarg) > 0 ? atol(optarg) : iters;
        else if (c == 'e')
            max_bytes = parse_size(optarg);
        else if (c == 'b')
            min_bytes = parse_size(optarg);
        else if (c == 'f')
            factor = (size_t)atoll(optarg);
        else if (c == 'r')
            reps = atoi(optarg);
        else if (c == 'i')
            bad_impl = nvl_ar_impl_parse(optarg, &impl) != NVL_OK;
    }
    if (bad_impl) {
        if (rt.rank == 0)
            nvl_report("coll_speed: --impl: expected nccl, oneshot, twoshot, "
                       "nvls-oneshot, nvls-twoshot or auto");
        nvl_runtime_finalize();
        return 1;
    }
    if (min_bytes < sizeof(float) || max_bytes < min_bytes || factor < 2 ||
        reps < 1 || reps > MAX_REPS) {
        if (rt.rank == 0)
            nvl_report("coll_speed: need 4 <= --min-bytes <= --max-bytes "
                       "(bytes, or with K, M, G), --factor >= 2, --reps "
                       "1..%d", MAX_REPS);
        nvl_runtime_finalize();
        return 1;
    }
    nvl_topo_t *topo = NULL;
    nvl_runtime_capture_begin();
    nvl_status_t st = nvl_topo_load(topo_path, &topo);
    if (nvl_runtime_capture_end(st) != NVL_OK ||
        nvl_runtime_check_topo(topo) != NVL_OK) {
        nvl_runtime_finalize();
        return 1;
    }
    nvl_vclock_t clock = {0};
    nvl_comm_t *comm;
    if (nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &comm) != NVL_OK ||
        nvl_comm_set_allreduce(comm, impl) != NVL_OK) {
        nvl_runtime_finalize();
        return 1;
    }
    nvl_runtime_print_header(stdout);
    if (rt.rank == 0)
        printf("# coll_speed: %d ranks, %ld iterations, topology %s, "
               "allreduce %s\n"
               "#\n# timing mode: wall time per call (us), the median of "
               "%d runs\n"
               "# %-32s %12s\n",
               rt.size, iters, topo->name, nvl_ar_impl_name(impl), reps,
               "call", "wall(us)");

    /* the median of reps alternating runs of each, after a warm-up */
    double x = 1, y, t0, mpi8[MAX_REPS], emu[2][MAX_REPS];
    size_t timing_counts[2] = {2, (size_t)1 << 28}; /* 8 B and 1 GiB floats */
    nvl_comm_set_mode(comm, NVL_MODE_TIMING);
    for (int r = -1; r < reps; r++) {
        long n = r < 0 ? 2 : iters;
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
    if (rt.rank == 0) {
        printf("  %-32s %12.2f\n", "MPI_Allreduce 8 B",
               median(mpi8, reps));
        printf("  %-32s %12.2f\n", "nvl_allreduce 8 B (timing)",
               median(emu[0], reps));
        printf("  %-32s %12.2f\n", "nvl_allreduce 1 GiB (timing)",
               median(emu[1], reps));
        printf("#\n# data mode, float sum: wall time per call (us), the "
               "median of %d alternating runs\n# %12s %12s %12s %8s  %s\n",
               reps, "size(B)", "nvlemu", "MPI", "ratio", "algorithm");
    }
    nvl_comm_set_mode(comm, NVL_MODE_DATA);
    float *send = malloc(max_bytes), *recv = malloc(max_bytes);
    if (send == NULL || recv == NULL) {
        nvl_report("out of memory for %zu-byte buffers", max_bytes);
        nvl_runtime_abort(1);
    }
    for (size_t i = 0; i < max_bytes / sizeof(float); i++)
        send[i] = (float)(i % 7);
    double worst = 0;
    size_t worst_bytes = 0;
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
        size_t count = bytes / sizeof(float);
        long n = iters;
        if (bytes >= ((size_t)1 << 20))
            n = iters / 20 > 2 ? iters / 20 : 2;
        nvl_coll_info_t info = {0};
        double t_emu[MAX_REPS], t_mpi[MAX_REPS];
        for (long i = 0; i < 2; i++) { /* warm up: buffers, connections */
            nvl_allreduce(comm, send, recv, count, NVL_DT_F32, NVL_OP_SUM,
                          &info);
            MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
        }
        for (int r = 0; r < reps; r++) { /* alternate, so drift hits both */
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (long i = 0; i < n; i++)
                nvl_allreduce(comm, send, recv, count, NVL_DT_F32,
                              NVL_OP_SUM, &info);
            t_emu[r] = per_call_us(t0, n);
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (long i = 0; i < n; i++)
                MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM,
                              MPI_COMM_WORLD);
            t_mpi[r] = per_call_us(t0, n);
        }
        double e = median(t_emu, reps), m = median(t_mpi, reps);
        if (e / m > worst) {
            worst = e / m;
            worst_bytes = bytes;
        }
        if (rt.rank == 0)
            printf("  %12zu %12.2f %12.2f %8.2f  %s/%s\n", bytes, e, m, e / m,
                   info.impl != NVL_AR_NCCL
                       ? nvl_ar_impl_name((nvl_ar_impl_t)info.impl)
                       : nvl_algo_key(info.algo),
                   info.impl != NVL_AR_NCCL ? "-" : nvl_proto_key(info.proto));
    }
    if (rt.rank == 0)
        printf("# worst ratio: %.2f at %zu B (nvlemu / MPI_Allreduce of the "
               "same floats; <= 1: one emulated call costs at most one MPI "
               "collective)\n", worst, worst_bytes);
    free(send);
    free(recv);
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
    nvl_runtime_finalize();
    return 0;
}
