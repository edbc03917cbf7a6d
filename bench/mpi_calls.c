/* mpi_calls: preloaded into every rank of a job (LD_PRELOAD, through
 * mpiexec -x), it counts the rank's MPI calls that exchange messages
 * (allreduce, broadcast, blocking and non-blocking sends and receives,
 * all-to-all, allgather, non-blocking allreduce) and at MPI_Finalize rank
 * 0 prints the mean over the ranks on standard error: the number of
 * agreements a run costs, which no load on the host changes (its wall
 * and CPU times move with it).  Unchanged program otherwise (the MPI
 * profiling interface).
 *
 *   mpiexec -n 8 -x LD_PRELOAD=build/bench/mpi_calls.so build/nvlemu run ...
 *
 * With NVL_MPI_CALLS_OUT=FILE rank 0 writes the same line to FILE too. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { C_ALLREDUCE, C_BCAST, C_SEND, C_RECV, C_ISEND, C_IRECV, C_ALLTOALL,
       C_ALLGATHER, C_IALLREDUCE, C_N };
static long counts[C_N];
static const char *const names[C_N] = {"allreduce", "bcast", "send", "recv",
                                       "isend", "irecv", "alltoall",
                                       "allgather", "iallreduce"};

int MPI_Allreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op,
                  MPI_Comm comm)
{
    counts[C_ALLREDUCE]++;
    return PMPI_Allreduce(sb, rb, n, t, op, comm);
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm comm)
{
    counts[C_BCAST]++;
    return PMPI_Bcast(b, n, t, root, comm);
}

int MPI_Send(const void *b, int n, MPI_Datatype t, int to, int tag,
             MPI_Comm comm)
{
    counts[C_SEND]++;
    return PMPI_Send(b, n, t, to, tag, comm);
}

int MPI_Recv(void *b, int n, MPI_Datatype t, int from, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    counts[C_RECV]++;
    return PMPI_Recv(b, n, t, from, tag, comm, status);
}

int MPI_Isend(const void *b, int n, MPI_Datatype t, int to, int tag,
              MPI_Comm comm, MPI_Request *req)
{
    counts[C_ISEND]++;
    return PMPI_Isend(b, n, t, to, tag, comm, req);
}

int MPI_Irecv(void *b, int n, MPI_Datatype t, int from, int tag,
              MPI_Comm comm, MPI_Request *req)
{
    counts[C_IRECV]++;
    return PMPI_Irecv(b, n, t, from, tag, comm, req);
}

int MPI_Alltoall(const void *sb, int sn, MPI_Datatype st, void *rb, int rn,
                 MPI_Datatype rt, MPI_Comm comm)
{
    counts[C_ALLTOALL]++;
    return PMPI_Alltoall(sb, sn, st, rb, rn, rt, comm);
}

int MPI_Allgather(const void *sb, int sn, MPI_Datatype st, void *rb, int rn,
                  MPI_Datatype rt, MPI_Comm comm)
{
    counts[C_ALLGATHER]++;
    return PMPI_Allgather(sb, sn, st, rb, rn, rt, comm);
}

int MPI_Iallreduce(const void *sb, void *rb, int n, MPI_Datatype t,
                   MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    counts[C_IALLREDUCE]++;
    return PMPI_Iallreduce(sb, rb, n, t, op, comm, req);
}

int MPI_Finalize(void)
{
    long sum[C_N];
    int rank, size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    PMPI_Reduce(counts, sum, C_N, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    /* also to the file NVL_MPI_CALLS_OUT names: a launcher may drop what
     * a rank prints as it ends */
    const char *path = getenv("NVL_MPI_CALLS_OUT");
    FILE *file = rank == 0 && path != NULL ? fopen(path, "w") : NULL;
    for (int k = 0; k < 2 && rank == 0; k++) {
        FILE *out = k == 0 ? stderr : file;
        if (out == NULL)
            continue;
        fprintf(out, "mpi_calls: per rank (mean of %d):", size);
        for (int i = 0; i < C_N; i++)
            fprintf(out, " %s %.1f", names[i], (double)sum[i] / size);
        fprintf(out, "\n");
    }
    if (file != NULL)
        fclose(file);
    return PMPI_Finalize();
}
