/* mpi_floor: what Open MPI alone costs on this host with N ranks, the
 * floor bench/emu-speed divides the emulator's figures by.  Starts MPI,
 * runs --calls allreduces of one 8-byte integer (MAX, the shape of the
 * emulator's per-call agreement in timing mode), and prints on rank 0
 *
 *   mpi_floor: ranks N, MPI_Init S s, allreduce US us, peak RSS MB MB
 *
 * (MPI_Init's wall time on rank 0; the median allreduce over the calls,
 * each between two barriers' worth of work; the largest peak resident
 * set over the ranks).  Reported, never asserted.
 *
 *   mpirun -np N build/bench/mpi_floor [--calls N] */
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    double t0 = MPI_Wtime();
    MPI_Init(&argc, &argv);
    double init_s = MPI_Wtime() - t0;
    int rank, size, calls = 200;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i], "--calls") == 0)
            calls = atoi(argv[i + 1]);
    if (calls < 1) {
        if (rank == 0)
            fprintf(stderr, "mpi_floor: --calls must be at least 1\n");
        MPI_Finalize();
        return 1;
    }
    double *dt = malloc((size_t)calls * sizeof *dt);
    if (dt == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    int64_t v = rank, out = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < calls; i++) {
        double a = MPI_Wtime();
        MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
        dt[i] = MPI_Wtime() - a;
    }
    qsort(dt, (size_t)calls, sizeof *dt, cmp_double);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss = (double)ru.ru_maxrss / 1024.0, rss_max = 0; /* KB -> MB */
    MPI_Reduce(&rss, &rss_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_floor: ranks %d, MPI_Init %.3f s, allreduce %.1f us, "
               "peak RSS %.1f MB\n",
               size, init_s, 1e6 * dt[calls / 2], rss_max);
    free(dt);
    /* as nvlemu's ranks do, oversubscribed by 256 ranks or more on the
     * host (nvl_runtime_finalize) */
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (local != NULL && atol(local) > sysconf(_SC_NPROCESSORS_ONLN) &&
        atol(local) >= 256)
        sched_setscheduler(0, SCHED_IDLE, &(struct sched_param){0});
    MPI_Finalize();
    return out == size - 1 ? 0 : 1;
}
