/* rank_memory: preloaded into every rank of a job by bench/rank-memory,
 * it copies the rank's /proc/self/smaps and smaps_rollup into the
 * directory NVL_RANK_MEMORY_DIR names (RANK.smaps, RANK.rollup) when the
 * program calls MPI_Finalize, before Open MPI unmaps its shared memory:
 * the rank's memory at the end of its work, every mapping counted, from
 * any MPI program, unchanged (the MPI profiling interface). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* /proc/self/NAME into DIR/RANK.SUFFIX; silent on failure (the script
 * reports the ranks whose files are missing). */
static void copy_proc(const char *dir, int rank, const char *name,
                      const char *suffix)
{
    char src[64], dst[4096], buf[65536];
    snprintf(src, sizeof src, "/proc/self/%s", name);
    snprintf(dst, sizeof dst, "%s/%d.%s", dir, rank, suffix);
    FILE *in = fopen(src, "r"), *out = in != NULL ? fopen(dst, "w") : NULL;
    size_t n;
    while (out != NULL && (n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    if (out != NULL)
        fclose(out);
    if (in != NULL)
        fclose(in);
}

int MPI_Finalize(void)
{
    const char *dir = getenv("NVL_RANK_MEMORY_DIR");
    int rank = 0;
    if (dir != NULL && dir[0] != '\0') {
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        copy_proc(dir, rank, "smaps", "smaps");
        copy_proc(dir, rank, "smaps_rollup", "rollup");
    }
    return PMPI_Finalize();
}
