/* Captured reports for unit tests: every nvl_report() between
 * capture_reports() and release_reports() is counted and kept (all of them,
 * one per line, in text; the latest in last) instead of printed.  Use the
 * two as a cmocka setup / teardown pair. */
#ifndef NVLEMU_TEST_REPORTS_H
#define NVLEMU_TEST_REPORTS_H

#include <stdio.h>
#include <string.h>

#include "nvlemu/status.h"

static struct {
    int count;
    char text[16384]; /* every report, one per line */
    char last[2048];  /* the latest */
} reports;

static void capture_report(void *ctx, const char *message)
{
    (void)ctx;
    size_t used = strlen(reports.text);
    snprintf(reports.text + used, sizeof reports.text - used, "%s%s",
             used ? "\n" : "", message);
    snprintf(reports.last, sizeof reports.last, "%s", message);
    reports.count++;
}

static inline int capture_reports(void **state)
{
    (void)state;
    memset(&reports, 0, sizeof reports);
    nvl_report_set_sink(capture_report, NULL);
    return 0;
}

static inline int release_reports(void **state)
{
    (void)state;
    nvl_report_set_sink(NULL, NULL);
    return 0;
}

/* Exactly one report captured, and it holds want (the includer has
 * cmocka.h). */
static inline void expect_one_report(const char *want)
{
    assert_int_equal(reports.count, 1);
    if (strstr(reports.last, want) == NULL)
        fail_msg("report '%s' lacks '%s'", reports.last, want);
}

#endif
