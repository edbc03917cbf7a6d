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

#include "nvlemu/coll.h"
#include "nvlemu/runtime.h"

#define CALLS 60

static int reports;
static char last[512];

static void sink(void *ctx, const char *message)
{
    (void)ctx;
    reports++;
    snprintf(last, sizeof last, "%s", message);
}

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

static int rank_, failures;

static void fail(const char *what)
{
    fprintf(stderr, "rank %d: %s\n", rank_, what);
    failures++;
}

int main(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    rank_ = rt.rank;
    nvl_topo_t *topo;
    if (nvl_topo_load(argc > 1 ? argv[1] : "topology/gb200-nvl72.topo",
                      &topo) != NVL_OK)
        return 1;
    nvl_vclock_t clock = {0};
    nvl_comm_t *comm;
    if (nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &comm) != NVL_OK)
        return 1;
    nvl_comm_set_mode(comm, NVL_MODE_TIMING);

    /* per call, as today */
    nvl_coll_info_t want[CALLS];
    int64_t want_clock;
    for (int k = 0; k < CALLS; k++) {
        int64_t d, h;
        work(rank_, k, &d, &h);
        nvl_vclock_advance(&clock, d);
        nvl_vclock_wait_until(&clock, h);
        if (call(comm, k, -1, &want[k]) != NVL_OK)
            fail("per-call path failed");
    }
    /* the end of every member's work after the last call, agreed */
    int64_t tail_ps = 1000 * (int64_t)(rank_ + 1), want_end;
    want_clock = clock.now_ps + tail_ps;
    MPI_Allreduce(&want_clock, &want_end, 1, MPI_INT64_T, MPI_MAX,
                  MPI_COMM_WORLD);

    /* deferred, in two batches, from the same start */
    clock.now_ps = 0;
    for (int lo = 0, hi = CALLS / 3; lo < CALLS; lo = hi, hi = CALLS) {
        if (nvl_comm_defer(comm) != NVL_OK)
            return 1;
        int64_t x0 = clock.now_ps;
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
        int64_t end = 0;
        if (hi == CALLS) /* the second batch: where the work ends too */
            nvl_comm_defer_entry(comm, tail_ps, NVL_DEFER_NO_BOUND, true);
        if (nvl_comm_settle(comm, hi == CALLS ? &end : NULL) != NVL_OK)
            fail("settle failed");
        if (hi == CALLS && end != want_end)
            fail("the agreed end differs");
        for (int k = lo; k < hi; k++) { /* the replay: work, then the call */
            int64_t d, h;
            work(rank_, k, &d, &h);
            nvl_vclock_advance(&clock, d);
            nvl_vclock_wait_until(&clock, h);
            nvl_coll_info_t got;
            nvl_comm_settled_call(comm, (size_t)(k - lo), &got);
            if (got.start_ps != want[k].start_ps ||
                got.time_ps != want[k].time_ps || got.algo != want[k].algo ||
                got.proto != want[k].proto || got.bytes != want[k].bytes) {
                fprintf(stderr, "rank %d call %d: start %lld / %lld, time "
                                "%lld / %lld\n", rank_, k,
                        (long long)got.start_ps, (long long)want[k].start_ps,
                        (long long)got.time_ps, (long long)want[k].time_ps);
                failures++;
            }
        }
    }
    if (clock.now_ps + tail_ps != want_clock)
        fail("the clock differs after the replay");

    /* a member whose call differs: every member fails, one report naming
     * the first differing call */
    nvl_report_set_sink(sink, NULL);
    int differ = rt.size - 1;
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
    int bad = st != NVL_ERR_MISMATCH, any_bad, total, has = 0, any_has;
    has = reports > 0 && strstr(last, text) != NULL;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&reports, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&has, &any_has, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank_ == 0 && (any_bad || total != 1 || !any_has)) {
        fprintf(stderr, "differing call: status %s, %d report(s), '%s' %s\n",
                any_bad ? "wrong" : "right", total, text,
                any_has ? "found" : "missing");
        failures++;
    }
    reports = 0;

    /* a member that records one call fewer */
    nvl_comm_defer(comm);
    for (int k = 0; k < (rank_ == differ ? 3 : 4); k++) {
        nvl_comm_defer_entry(comm, 1000, NVL_DEFER_NO_BOUND, true);
        call(comm, k, -1, NULL);
    }
    st = nvl_comm_settle(comm, NULL);
    bad = st != NVL_ERR_MISMATCH;
    has = reports > 0 && strstr(last, "no further call") != NULL;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&reports, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&has, &any_has, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank_ == 0 && (any_bad || total != 1 || !any_has)) {
        fprintf(stderr, "missing call: status %s, %d report(s)\n",
                any_bad ? "wrong" : "right", total);
        failures++;
    }
    nvl_report_set_sink(NULL, NULL);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank_ == 0)
        printf("deferred agreement: %d failure(s)\n", all);
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
    nvl_runtime_finalize();
    return all != 0;
}
