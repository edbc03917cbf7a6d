/* The end of a job (scripts/nvlrun, nvl_runtime_finalize): two or more
 * ranks, one mode.
 *
 *   late   rank 1 stops the launcher (its parent, mpiexec) for 3 s as its
 *          MPI_Finalize tells the launcher's PMIx server it is done:
 *          PMIx's client waits 2 s for the answer, then exits
 *          unregistered, the race a crowded host loses (a 576-rank run
 *          ended "exiting improperly", exit 1, after its report).  Under
 *          scripts/nvlrun the job must exit 0.
 *   skip   rank 1 exits 0 without finalizing: the job must still fail,
 *          with the runtime's report.
 *
 * PMIx_Finalize is interposed here (the program exports it: -rdynamic),
 * before Open MPI's PMIx component calls the library's. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvlemu/runtime.h"

static int stop_launcher = -1; /* the rank that stops it, in mode late */

int PMIx_Finalize(const void *info, size_t ninfo);
int PMIx_Finalize(const void *info, size_t ninfo)
{
    int (*real)(const void *, size_t) =
        (int (*)(const void *, size_t))dlsym(RTLD_NEXT, "PMIx_Finalize");
    if (stop_launcher == 1) {
        pid_t launcher = getppid();
        if (fork() == 0) { /* resumes it after 3 s, past PMIx's 2 s */
            sleep(3);
            kill(launcher, SIGCONT);
            _exit(0);
        }
        kill(launcher, SIGSTOP);
    }
    return real != NULL ? real(info, ninfo) : 0;
}

int main(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "late") != 0 && strcmp(mode, "skip") != 0) {
        fprintf(stderr, "usage: test_finalize late|skip\n");
        nvl_runtime_finalize();
        return 2;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(mode, "skip") == 0 && rt.rank == 1)
        exit(0);
    if (strcmp(mode, "late") == 0)
        stop_launcher = rt.rank;
    nvl_runtime_finalize();
    return 0;
}
