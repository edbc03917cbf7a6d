/* nvlemu sweep: the grid driver bench/sweep (a Python 3 script that
 * launches the mpirun jobs itself), run with this binary as its nvlemu.
 * Not an MPI program: run it directly, not under mpirun. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int nvl_cmd_sweep(int argc, char **argv)
{
    static const char script[] = NVL_SOURCE_DIR "/bench/sweep";
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    char **args = calloc((size_t)argc + 5, sizeof *args);
    if (args == NULL) {
        fprintf(stderr, "nvlemu sweep: out of memory\n");
        return 1;
    }
    int k = 0;
    args[k++] = "python3";
    args[k++] = (char *)script;
    if (n > 0) {
        self[n] = '\0';
        args[k++] = "--nvlemu";
        args[k++] = self;
    }
    for (int i = 1; i < argc; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    /* the summary records the command as typed, without the --nvlemu
     * added here */
    char typed[4200];
    snprintf(typed, sizeof typed, "%s sweep", nvl_cli_argv0);
    setenv("NVL_SWEEP_TYPED", typed, 1);
    execvp("python3", args);
    fprintf(stderr, "nvlemu sweep: cannot run python3 %s (install python3; "
                    "scripts/install-deps does)\n", script);
    free(args);
    return 1;
}
