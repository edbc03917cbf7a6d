/* coll_speed: what the emulation itself costs on this host, side by side
 * with Open MPI on the same ranks, in one run.
 *
 *   timing mode: wall time of one emulated allreduce (8 B and 1 GiB: the
 *     payload never moves) against one MPI_Allreduce of 8 bytes;
 *   data mode: wall throughput of nvl_allreduce (float, sum, the algorithm
 *     the tuner picks) against MPI_Allreduce on the same buffers.
 *
 *   mpirun -np N build/bench/coll_speed [--topo FILE] [--iters N]
 *                                       [--max-bytes SIZE]
 * Reported, never asserted (timings belong in bench/, not in tests). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/coll.h"
#include "nvlemu/runtime.h"

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
    size_t max_bytes = (size_t)64 << 20;
    static const struct option opts[] = {
        {"topo", required_argument, NULL, 't'},
        {"iters", required_argument, NULL, 'n'},
        {"max-bytes", required_argument, NULL, 'e'},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 't')
            topo_path = optarg;
        else if (c == 'n')
            iters = atol(optarg) > 0 ? atol(optarg) : iters;
        else if (c == 'e')
            max_bytes = (size_t)atoll(optarg);
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
    if (nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &comm) != NVL_OK) {
        nvl_runtime_finalize();
        return 1;
    }
    nvl_runtime_print_header(stdout);
    if (rt.rank == 0)
        printf("# coll_speed: %d ranks, %ld iterations, topology %s\n"
               "#\n# timing mode: wall time per call (us)\n"
               "# %-32s %12s\n",
               rt.size, iters, topo->name, "call", "wall(us)");

    double x = 1, y;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++)
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double mpi8 = per_call_us(t0, iters);
    nvl_comm_set_mode(comm, NVL_MODE_TIMING);
    double emu[2];
    size_t timing_counts[2] = {2, (size_t)1 << 28}; /* 8 B and 1 GiB floats */
    for (int k = 0; k < 2; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++)
            nvl_allreduce(comm, NULL, NULL, timing_counts[k], NVL_DT_F32,
                          NVL_OP_SUM, NULL);
        emu[k] = per_call_us(t0, iters);
    }
    if (rt.rank == 0) {
        printf("  %-32s %12.2f\n", "MPI_Allreduce 8 B", mpi8);
        printf("  %-32s %12.2f\n", "nvl_allreduce 8 B (timing)", emu[0]);
        printf("  %-32s %12.2f\n", "nvl_allreduce 1 GiB (timing)", emu[1]);
        printf("#\n# data mode, float sum: wall throughput per rank (GB/s "
               "of buffer per second)\n# %12s %12s %12s %8s  %s\n",
               "size(B)", "nvlemu", "MPI", "ratio", "algorithm");
    }
    nvl_comm_set_mode(comm, NVL_MODE_DATA);
    float *send = malloc(max_bytes), *recv = malloc(max_bytes);
    if (send == NULL || recv == NULL) {
        nvl_report("out of memory for %zu-byte buffers", max_bytes);
        nvl_runtime_abort(1);
    }
    for (size_t i = 0; i < max_bytes / sizeof(float); i++)
        send[i] = (float)(i % 7);
    for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 8) {
        size_t count = bytes / sizeof(float);
        long n = iters;
        if (bytes >= ((size_t)1 << 20))
            n = iters / 20 > 2 ? iters / 20 : 2;
        nvl_coll_info_t info = {0};
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < n; i++)
            nvl_allreduce(comm, send, recv, count, NVL_DT_F32, NVL_OP_SUM,
                          &info);
        double t_emu = per_call_us(t0, n);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (long i = 0; i < n; i++)
            MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
        double t_mpi = per_call_us(t0, n);
        if (rt.rank == 0)
            printf("  %12zu %12.3f %12.3f %8.2f  %s/%s\n", bytes,
                   bytes / t_emu / 1e3, bytes / t_mpi / 1e3, t_emu / t_mpi,
                   nvl_algo_key(info.algo), nvl_proto_key(info.proto));
    }
    free(send);
    free(recv);
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
    nvl_runtime_finalize();
    return 0;
}
