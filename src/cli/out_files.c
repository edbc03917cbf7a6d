/* The commands' output files (cli.h): --json, --trace, --logits-out and
 * the like opened, checked before a run, and closed. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

FILE *nvl_cli_open_out(const char *option, const char *path)
{
    if (strcmp(path, "-") == 0)
        return stdout;
    FILE *f = fopen(path, "w");
    if (f == NULL)
        nvl_report("%s %s: cannot open for writing: %s", option, path,
                   strerror(errno));
    return f;
}

nvl_status_t nvl_cli_check_writable(const char *option, const char *path)
{
    if (path == NULL || strcmp(path, "-") == 0)
        return NVL_OK;
    bool existed = access(path, F_OK) == 0;
    FILE *f = fopen(path, "a");
    if (f == NULL) {
        nvl_report("%s %s: cannot write: %s", option, path, strerror(errno));
        return NVL_ERR_IO;
    }
    fclose(f);
    if (!existed)
        unlink(path);
    return NVL_OK;
}

nvl_status_t nvl_cli_close_out(const char *option, const char *path,
                               FILE *stream)
{
    if (stream == stdout)
        return NVL_OK;
    if (fclose(stream) != 0) {
        nvl_report("%s %s: write failed", option, path);
        return NVL_ERR_IO;
    }
    return NVL_OK;
}
