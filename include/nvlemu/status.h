/* nvlemu: status codes and error reporting.
 *
 * Every fallible function returns nvl_status_t (NVL_OK == 0, errors < 0) or
 * NULL.  The function that detects an error reports it once, through
 * nvl_report(), with enough context to act on (file:line, rank, value);
 * callers only pass the status up.  Reports go to stderr, prefixed with
 * "nvlemu: " and, once MPI is up, with the rank ("nvlemu[rank 3]: ").
 * Tests redirect them with nvl_report_set_sink(). */
#ifndef NVLEMU_STATUS_H
#define NVLEMU_STATUS_H

#include <stddef.h>

typedef enum {
    NVL_OK = 0,
    NVL_ERR_INVALID = -1,  /* bad input: file, option, value */
    NVL_ERR_IO = -2,       /* a file could not be read or written */
    NVL_ERR_NOMEM = -3,    /* an allocation failed */
    NVL_ERR_MPI = -4,      /* an MPI call failed */
    NVL_ERR_MISMATCH = -5, /* ranks disagree (topology hash, call arguments) */
    NVL_ERR_RANGE = -6     /* a value is outside what the model allows */
} nvl_status_t;

/* A short fixed description of a status; never NULL, never to be freed. */
const char *nvl_status_str(nvl_status_t status);

/* Receives each report (the message, without prefix or newline). */
typedef void (*nvl_report_sink_t)(void *ctx, const char *message);

/* Reports an error once: printf-style, no trailing newline needed. */
void nvl_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Redirects reports to sink (NULL restores stderr).  Not thread-safe; meant
 * for tests. */
void nvl_report_set_sink(nvl_report_sink_t sink, void *ctx);

/* Sets the rank shown in the report prefix (-1: no rank, the default). */
void nvl_report_set_rank(int rank);

/* How many reports this process has printed (not those a sink took). */
unsigned long nvl_report_printed(void);

#endif
