/* Shared by the libFuzzer harnesses (tests/fuzz/): reports go nowhere (a
 * rejected input is the common case), a broken contract aborts with a
 * message libFuzzer keeps beside the crashing input, and inputs become
 * C strings or files. */
#ifndef NVLEMU_FUZZ_H
#define NVLEMU_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvlemu/status.h"
#include "nvlemu/topo.h"

static void fuzz_quiet_sink(void *ctx, const char *message)
{
    (void)ctx;
    (void)message;
}

/* Call first in LLVMFuzzerTestOneInput. */
static inline void fuzz_quiet(void) { nvl_report_set_sink(fuzz_quiet_sink, NULL); }

/* A contract the header promises does not hold: stop, saying which. */
#define FUZZ_REQUIRE(cond, what)                                             \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "fuzz contract broken: %s (%s:%d)\n", (what),    \
                    __FILE__, __LINE__);                                     \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* data as a NUL-terminated string (stops at an embedded NUL); free it. */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* A fresh directory for one input's files (removed by fuzz_rmdir). */
static inline void fuzz_tmpdir(char *path, size_t len)
{
    snprintf(path, len, "%s/nvlemu-fuzz-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(path) == NULL)
        abort();
}

static inline void fuzz_write(const char *dir, const char *name,
                              const uint8_t *data, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
}

static inline void fuzz_rmdir(const char *dir, const char *const *names,
                              size_t n)
{
    char path[4096];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* argv[0] = prog and one argument per line of text (which it cuts up),
 * at most max - 2 of them; NULL-terminated.  Returns argc. */
static inline int fuzz_argv(char *text, char *prog, char **argv, int max)
{
    int argc = 0;
    char *save = NULL;
    argv[argc++] = prog;
    for (char *a = strtok_r(text, "\n", &save); a != NULL && argc < max - 1;
         a = strtok_r(NULL, "\n", &save))
        argv[argc++] = a;
    argv[argc] = NULL;
    return argc;
}

/* The canonical export of a topology as text (free it). */
static inline char *fuzz_topo_export(const nvl_topo_t *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    FUZZ_REQUIRE(f != NULL, "open_memstream");
    FUZZ_REQUIRE(nvl_topo_export(t, f) == NVL_OK, "a loaded topology exports");
    fclose(f);
    return buf;
}

#endif
