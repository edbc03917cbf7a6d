/* MPI test: deferred agreement (src/coll/defer.c) gives every call the
 * start and duration the per-call agreement gives, bit for bit, and
 * reports wrong or differing calls as it does.  Each member does its own
 * work between calls (seeded durations, different on every member) and
 * waits for launch times of its own (the max(x + a, b) form), then calls
 * allreduce, allgather, reduce-scatter, broadcast and point-to-point
 * groups of member-dependent sizes.  Run at 3, 5 and 7 ranks (direct
 * exchanges) and 10 (an allreduce). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test.h"

#define CALLS 60

static mpi_test_t t;
static int rank_;

/* splitmix64: member- and call-dependent durations */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The work before call k: a duration, and a launch time the clock waits
 * for (absolute, -1 none; about one call in four, often later than the
 * clock, so that the b of max(x + a, b) decides some starts). */
static void work(int rank, int k, int64_t *dur_ps, int64_t *launch_ps)
{
    uint64_t r = mix((uint64_t)rank * 1000003u + (uint64_t)k);
    *dur_ps = (int64_t)(r % 5000000); /* up to 5 us */
    *launch_ps = (r >> 40) % 4 == 0 ? (int64_t)k * 25000000 +
                                          (int64_t)((r >> 44) % 20000000)
                                    : -1;
}

/* Call k on comm (the same kind on every member; sizes may differ by
 * member when `differ` is the member that changes one). */
static nvl_status_t call(nvl_comm_t *c, int k, int differ,
                         nvl_coll_info_t *info)
{
    int me = nvl_comm_rank(c), n = nvl_comm_size(c);
    size_t count = 1000 + 37 * (size_t)k + (me == differ ? 1 : 0);
    switch (k % 5) {
    case 0:
        return nvl_allreduce(c, NULL, NULL, count, NVL_DT_BF16, NVL_OP_SUM,
                             info);
    case 1:
        return nvl_allgather(c, NULL, NULL, count, NVL_DT_BF16, info);
    case 2:
        return nvl_reducescatter(c, NULL, NULL, count, NVL_DT_F32,
                                 NVL_OP_SUM, info);
    case 3:
        return nvl_broadcast(c, NULL, NULL, count, NVL_DT_BF16, k % n, info);
    default: { /* each member sends its own amount to the next */
        nvl_group_start(c);
        nvl_send(c, NULL, count * (size_t)(me + 1), NVL_DT_BF16, (me + 1) % n);
        nvl_recv(c, NULL, count * (size_t)((me + n - 1) % n + 1), NVL_DT_BF16,
                 (me + n - 1) % n);
        return nvl_group_end(c, info);
    }
    }
}

static void fail(const char *what)
{
    fprintf(stderr, "rank %d: %s\n", rank_, what);
    t.failures++;
}

/* Every call with the per-call agreement, as without deferring: each
 * call's info into want; returns the clock after the member's last work
 * (tail_ps after its last call) and sets *want_end to the latest over the
 * members. */
static int64_t per_call(nvl_comm_t *comm, nvl_coll_info_t *want,
                        int64_t tail_ps, int64_t *want_end)
{
    for (int k = 0; k < CALLS; k++) {
        int64_t d, h;
        work(rank_, k, &d, &h);
        nvl_vclock_advance(&t.clock, d);
        nvl_vclock_wait_until(&t.clock, h);
        if (call(comm, k, -1, &want[k]) != NVL_OK)
            fail("per-call path failed");
    }
    int64_t want_clock = t.clock.now_ps + tail_ps;
    MPI_Allreduce(&want_clock, want_end, 1, MPI_INT64_T, MPI_MAX,
                  MPI_COMM_WORLD);
    return want_clock;
}

/* Records calls lo..hi-1 deferred, from the clock as it is: each entry
 * the work before it (the first: its own start). */
static void record(nvl_comm_t *comm, int lo, int hi)
{
    int64_t x0 = t.clock.now_ps;
    for (int k = lo; k < hi; k++) {
        int64_t d, h, a, b;
        work(rank_, k, &d, &h);
        if (k == lo) { /* the entry itself */
            a = x0 + d > h ? x0 + d : h;
            b = NVL_DEFER_NO_BOUND;
        } else {
            a = d;
            b = h >= 0 ? h : NVL_DEFER_NO_BOUND;
        }
        nvl_comm_defer_entry(comm, a, b, true);
        nvl_coll_info_t mine;
        if (call(comm, k, -1, &mine) != NVL_OK || mine.start_ps != -1)
            fail("recording failed");
    }
}

/* The replay of calls lo..hi-1: work, then the settled call, which must
 * be the per-call path's. */
static void replay(nvl_comm_t *comm, int lo, int hi, const nvl_coll_info_t *want)
{
    for (int k = lo; k < hi; k++) {
        int64_t d, h;
        work(rank_, k, &d, &h);
        nvl_vclock_advance(&t.clock, d);
        nvl_vclock_wait_until(&t.clock, h);
        nvl_coll_info_t got;
        nvl_comm_settled_call(comm, (size_t)(k - lo), &got);
        if (got.start_ps != want[k].start_ps ||
            got.time_ps != want[k].time_ps || got.algo != want[k].algo ||
            got.proto != want[k].proto || got.bytes != want[k].bytes) {
            fprintf(stderr, "rank %d call %d: start %lld / %lld, time "
                            "%lld / %lld\n", rank_, k,
                    (long long)got.start_ps, (long long)want[k].start_ps,
                    (long long)got.time_ps, (long long)want[k].time_ps);
            t.failures++;
        }
    }
}

/* Deferred, in two batches, from the same start: the same calls, the same
 * agreed end and the same clock afterwards; each batch carries a value of
 * every member but rank 0 (the largest comes back). */
static void deferred(nvl_comm_t *comm, const nvl_coll_info_t *want,
                     int64_t tail_ps, int64_t want_clock, int64_t want_end)
{
    t.clock.now_ps = 0;
    for (int lo = 0, hi = CALLS / 3; lo < CALLS; lo = hi, hi = CALLS) {
        if (nvl_comm_defer(comm) != NVL_OK)
            nvl_runtime_abort(1);
        record(comm, lo, hi);
        if (rank_ != 0)
            nvl_comm_defer_ride(comm, -7 * (int64_t)rank_ + lo);
        int64_t end = 0;
        if (hi == CALLS) /* the second batch: where the work ends too */
            nvl_comm_defer_entry(comm, tail_ps, NVL_DEFER_NO_BOUND, true);
        if (nvl_comm_settle(comm, hi == CALLS ? &end : NULL) != NVL_OK)
            fail("settle failed");
        if (hi == CALLS && end != want_end)
            fail("the agreed end differs");
        if (nvl_comm_settled_ride(comm) != -7 + lo)
            fail("the carried value differs");
        replay(comm, lo, hi, want);
    }
    if (t.clock.now_ps + tail_ps != want_clock)
        fail("the clock differs after the replay");
}

/* A member whose call differs: every member fails, one report naming the
 * first differing call; then a member that records one call fewer. */
static void wrong_calls(nvl_comm_t *comm)
{
    int differ = t.rt.size - 1;
    nvl_comm_defer(comm);
    for (int k = 0; k < 7; k++) {
        nvl_comm_defer_entry(comm, 1000, NVL_DEFER_NO_BOUND, true);
        call(comm, k, k == 5 ? differ : -1, NULL);
    }
    nvl_status_t st = nvl_comm_settle(comm, NULL);
    char text[160];
    snprintf(text, sizeof text, "member 0 (GPU 0) called AllReduce(count=%d,"
             " bfloat16, sum), member %d (GPU %d) called AllReduce(count=%d",
             1000 + 37 * 5, differ, differ, 1000 + 37 * 5 + 1);
    mpi_test_expect_once(&t, "differing call", st, NVL_ERR_MISMATCH, text);
    nvl_comm_defer(comm);
    for (int k = 0; k < (rank_ == differ ? 3 : 4); k++) {
        nvl_comm_defer_entry(comm, 1000, NVL_DEFER_NO_BOUND, true);
        call(comm, k, -1, NULL);
    }
    st = nvl_comm_settle(comm, NULL);
    mpi_test_expect_once(&t, "missing call", st, NVL_ERR_MISMATCH,
                         "no further call");
}

int main(int argc, char **argv)
{
    mpi_test_init(&t, &argc, &argv,
                  argc > 1 ? argv[1] : "topology/gb200-nvl72.topo");
    rank_ = t.rt.rank;
    nvl_comm_set_mode(t.comm, NVL_MODE_TIMING);
    static nvl_coll_info_t want[CALLS];
    /* the end of every member's work after the last call, agreed */
    int64_t tail_ps = 1000 * (int64_t)(rank_ + 1), want_end;
    int64_t want_clock = per_call(t.comm, want, tail_ps, &want_end);
    deferred(t.comm, want, tail_ps, want_clock, want_end);
    mpi_test_capture_reports(0);
    wrong_calls(t.comm);
    mpi_test_release_reports();
    int all = mpi_test_all_failures(&t);
    if (rank_ == 0)
        printf("deferred agreement: %d failure(s)\n", all);
    return mpi_test_finish(&t, all);
}
