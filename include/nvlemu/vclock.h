/* nvlemu: virtual time.  Each rank (one emulated GPU) keeps one clock in
 * integer picoseconds.  Compute advances it by the cost model, and a
 * collective or message moves it to the earliest time the data could have
 * arrived under the topology; the host's speed never enters.  The same run
 * therefore gives bit-identical times on any number of hosts. */
#ifndef NVLEMU_VCLOCK_H
#define NVLEMU_VCLOCK_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t now_ps;
} nvl_vclock_t;

#define NVL_PS_PER_US INT64_C(1000000)
#define NVL_PS_PER_S INT64_C(1000000000000)

/* Moves the clock forward by dt_ps (>= 0). */
static inline void nvl_vclock_advance(nvl_vclock_t *c, int64_t dt_ps)
{
    c->now_ps += dt_ps > 0 ? dt_ps : 0;
}

/* Moves the clock to t_ps unless it is already later. */
static inline void nvl_vclock_wait_until(nvl_vclock_t *c, int64_t t_ps)
{
    if (t_ps > c->now_ps)
        c->now_ps = t_ps;
}

/* The clock's range.  One kernel or collective lasts at most
 * NVL_PS_MAX_DURATION (2^60 ps, about 13 days: longer durations saturate
 * there), and whoever advances a clock fails the run once it passes
 * NVL_PS_MAX_CLOCK (2^62 ps, about 53 days), holding it there; so the sum
 * never reaches INT64_MAX (2^63 - 1, 106 days) and never wraps. */
#define NVL_PS_MAX_DURATION (INT64_C(1) << 60)
#define NVL_PS_MAX_CLOCK (INT64_C(1) << 62)

/* The two limits in days, for messages. */
#define NVL_MAX_DURATION_DAYS ((double)NVL_PS_MAX_DURATION / 86400e12)
#define NVL_MAX_CLOCK_DAYS ((double)NVL_PS_MAX_CLOCK / 86400e12)

/* Whether one operation of dur_ps, begun at start_ps, fits the clock's
 * range: the duration below NVL_PS_MAX_DURATION (a saturated cost-model
 * result is not a time) and the end at most NVL_PS_MAX_CLOCK.  Whoever
 * computes such a time refuses it, naming its inputs, when it does not. */
static inline bool nvl_vclock_fits(int64_t start_ps, int64_t dur_ps)
{
    return dur_ps >= 0 && dur_ps < NVL_PS_MAX_DURATION && start_ps >= 0 &&
           start_ps <= NVL_PS_MAX_CLOCK - dur_ps;
}

/* Converts a duration in seconds (a cost-model result) to picoseconds,
 * rounding to nearest; the one place where real numbers become time.
 * Negative or NaN: 0; beyond NVL_PS_MAX_DURATION (or infinite): that. */
int64_t nvl_ps_from_s(double seconds);

#endif
