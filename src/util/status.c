#include "nvlemu/status.h"

#include <stdarg.h>
#include <stdio.h>

static nvl_report_sink_t report_sink;
static void *report_ctx;
static int report_rank = -1;

const char *nvl_status_str(nvl_status_t status)
{
    switch (status) {
    case NVL_OK: return "ok";
    case NVL_ERR_INVALID: return "invalid input";
    case NVL_ERR_IO: return "input/output error";
    case NVL_ERR_NOMEM: return "out of memory";
    case NVL_ERR_MPI: return "MPI error";
    case NVL_ERR_MISMATCH: return "ranks disagree";
    case NVL_ERR_RANGE: return "value out of range";
    }
    return "unknown status";
}

void nvl_report_set_sink(nvl_report_sink_t sink, void *ctx)
{
    report_sink = sink;
    report_ctx = ctx;
}

void nvl_report_set_rank(int rank) { report_rank = rank; }

static unsigned long printed;

unsigned long nvl_report_printed(void) { return printed; }

void nvl_report(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (report_sink != NULL) {
        report_sink(report_ctx, msg);
        return;
    }
    printed++;
    if (report_rank >= 0)
        fprintf(stderr, "nvlemu[rank %d]: %s\n", report_rank, msg);
    else
        fprintf(stderr, "nvlemu: %s\n", msg);
    fflush(stderr);
}
