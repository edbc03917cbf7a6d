/* MPI test: bad collective calls fail on every rank, are reported exactly
 * once across the job, and never hang.  Run at 3 and 5 ranks (members
 * agree by a direct exchange that carries data) and 9 (by an allreduce). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test.h"

static mpi_test_t t;
static int rank_;

/* Every rank must see `want`; the job as a whole one report containing
 * `text`. */
static void expect(const char *what, nvl_status_t got, nvl_status_t want,
                   const char *text)
{
    mpi_test_expect_once(&t, what, got, want, text);
}

/* Calls that disagree on their arguments, or bad arguments everywhere. */
static void plain_mismatches(nvl_comm_t *comm)
{
    float buf[64] = {0}, out[64 * 8];
    /* rank 1 calls with another count */
    nvl_status_t st = nvl_allreduce(comm, buf, out, rank_ == 1 ? 9 : 8,
                                    NVL_DT_F32, NVL_OP_SUM, NULL);
    expect("count mismatch", st, NVL_ERR_MISMATCH, "member 1");
    /* rank 2 calls another collective */
    st = rank_ == 2 ? nvl_allgather(comm, buf, out, 8, NVL_DT_F32, NULL)
                    : nvl_allreduce(comm, buf, out, 8, NVL_DT_F32, NVL_OP_SUM,
                                    NULL);
    expect("collective mismatch", st, NVL_ERR_MISMATCH, "AllGather");
    /* every rank gives a root that is not a member */
    st = nvl_broadcast(comm, buf, out, 8, NVL_DT_F32, t.rt.size, NULL);
    expect("bad root", st, NVL_ERR_INVALID, "is not a member");
    /* a count whose bytes overflow */
    st = nvl_allgather(comm, buf, out, SIZE_MAX / 2, NVL_DT_F32, NULL);
    expect("overflow", st, NVL_ERR_INVALID, "overflows");
    /* NULL buffers in data mode */
    st = nvl_allreduce(comm, NULL, NULL, 8, NVL_DT_F32, NVL_OP_SUM, NULL);
    expect("NULL buffer", st, NVL_ERR_INVALID, "NULL buffer");
}

/* In groups of up to 8 the agreement messages carry the data: whole
 * buffers (while a member receives up to 64 KB of them), one share per
 * member (up to 64 KB each), or nothing (larger).  Calls that disagree
 * across those paths, or only on what the data means, must still fail
 * everywhere with one report. */
static void ride_along_mismatches(nvl_comm_t *comm, float *bin, float *bout,
                                  size_t big)
{
    nvl_status_t st;
    st = nvl_allreduce(comm, bin, bout, rank_ == 1 ? big : 8, NVL_DT_F32,
                       NVL_OP_SUM, NULL);
    expect("large vs whole-buffer count", st, NVL_ERR_MISMATCH,
           "member 1 (GPU 1) called AllReduce(count=100000");
    st = nvl_allreduce(comm, bin, bout, rank_ == 1 ? 9000 : big, NVL_DT_F32,
                       NVL_OP_SUM, NULL);
    expect("shares vs large count", st, NVL_ERR_MISMATCH,
           "AllReduce(count=9000, float, sum)");
    st = nvl_allreduce(comm, bin, bout, 8,
                       rank_ == 2 ? NVL_DT_BF16 : NVL_DT_F32, NVL_OP_SUM, NULL);
    expect("dtype mismatch", st, NVL_ERR_MISMATCH, "bfloat16");
    st = nvl_allreduce(comm, bin, bout, 8, NVL_DT_F32,
                       rank_ == 1 ? NVL_OP_MAX : NVL_OP_SUM, NULL);
    expect("op mismatch, same bytes", st, NVL_ERR_MISMATCH,
           "AllReduce(count=8, float, max)");
    nvl_comm_set_mode(comm, rank_ == 1 ? NVL_MODE_TIMING : NVL_MODE_DATA);
    st = nvl_allreduce(comm, bin, bout, 2000, NVL_DT_F32, NVL_OP_SUM, NULL);
    expect("mode mismatch", st, NVL_ERR_MISMATCH, "in timing mode");
    nvl_comm_set_mode(comm, NVL_MODE_DATA);
    st = rank_ == 2 ? nvl_allreduce(comm, NULL, NULL, big, NVL_DT_F32,
                                    NVL_OP_SUM, NULL)
                    : nvl_allreduce(comm, bin, bout, 8, NVL_DT_F32,
                                    NVL_OP_SUM, NULL);
    expect("bad arguments on one member", st, NVL_ERR_INVALID, "NULL buffer");
    st = rank_ == 0 ? nvl_broadcast(comm, bin, bout, big, NVL_DT_F32, 0, NULL)
                    : nvl_allreduce(comm, bin, bout, big, NVL_DT_F32,
                                    NVL_OP_SUM, NULL);
    expect("broadcast vs large allreduce", st, NVL_ERR_MISMATCH,
           "Broadcast(count=100000, float, root=0)");
}

/* A serving engine's kernel: on one host every member stages its
 * buffer in a shared window before agreeing, when the window has room
 * (after the first call of a size), and reads its peers' only once the
 * call is agreed.  Mismatches with the window made or not, staged on
 * some members only, beyond the window, or on the implementation
 * itself must fail alike, and the window still work afterwards. */
static void window_mismatches(nvl_comm_t *comm, float *bin, float *bout,
                              size_t big, float *hin, float *hout, size_t huge)
{
    nvl_status_t st;
    nvl_ar_impl_t oneshot = NVL_AR_NCCL, twoshot = NVL_AR_NCCL;
    if (nvl_ar_impl_parse("oneshot", &oneshot) != NVL_OK ||
        nvl_ar_impl_parse("twoshot", &twoshot) != NVL_OK)
        t.failures++;
    nvl_comm_set_allreduce(comm, twoshot);
    st = nvl_allreduce(comm, bin, bout, rank_ == 1 ? 9000 : 8, NVL_DT_F32,
                       NVL_OP_SUM, NULL);
    expect("twoshot count, no window yet", st, NVL_ERR_MISMATCH,
           "member 1 (GPU 1) called AllReduce(count=9000");
    st = nvl_allreduce(comm, bin, bout, 9000, NVL_DT_F32, NVL_OP_SUM, NULL);
    if (st != NVL_OK) /* makes the window */
        t.failures++;
    st = nvl_allreduce(comm, bin, bout, rank_ == 1 ? big : 8, NVL_DT_F32,
                       NVL_OP_SUM, NULL);
    expect("twoshot count, staged on some", st, NVL_ERR_MISMATCH,
           "member 1 (GPU 1) called AllReduce(count=100000");
    st = nvl_allreduce(comm, hin, hout, rank_ == 2 ? huge : 9000, NVL_DT_F32,
                       NVL_OP_SUM, NULL);
    expect("twoshot count beyond the window", st, NVL_ERR_MISMATCH,
           "AllReduce(count=1048577, float, sum)");
    st = nvl_allreduce(comm, bin, bout, 9000,
                       rank_ == 2 ? NVL_DT_BF16 : NVL_DT_F32, NVL_OP_SUM, NULL);
    expect("twoshot dtype", st, NVL_ERR_MISMATCH, "bfloat16");
    nvl_comm_set_allreduce(comm, rank_ == 1 ? oneshot : twoshot);
    st = nvl_allreduce(comm, bin, bout, 9000, NVL_DT_F32, NVL_OP_SUM, NULL);
    expect("implementation mismatch", st, NVL_ERR_MISMATCH,
           "with --allreduce oneshot");
    nvl_comm_set_allreduce(comm, rank_ == 1 ? NVL_AR_NCCL : twoshot);
    st = nvl_allreduce(comm, bin, bout, 8, NVL_DT_F32, NVL_OP_SUM, NULL);
    expect("NCCL against a kernel", st, NVL_ERR_MISMATCH,
           "with --allreduce nccl");
    nvl_comm_set_allreduce(comm, twoshot);
    nvl_comm_set_mode(comm, rank_ == 1 ? NVL_MODE_TIMING : NVL_MODE_DATA);
    st = nvl_allreduce(comm, bin, bout, 9000, NVL_DT_F32, NVL_OP_SUM, NULL);
    expect("twoshot mode", st, NVL_ERR_MISMATCH, "in timing mode");
    nvl_comm_set_mode(comm, NVL_MODE_DATA);
    for (size_t i = 0; i < 9000; i++)
        bin[i] = (float)(rank_ + 1) * (float)(i % 5);
    st = nvl_allreduce(comm, bin, bout, 9000, NVL_DT_F32, NVL_OP_SUM, NULL);
    float want = (float)(t.rt.size * (t.rt.size + 1) / 2);
    for (size_t i = 0; i < 9000 && st == NVL_OK; i++)
        if (bout[i] != want * (float)(i % 5)) {
            fprintf(stderr, "rank %d: twoshot after the errors: element %zu "
                    "is %g, not %g\n", rank_, i, bout[i],
                    want * (float)(i % 5));
            t.failures++;
            break;
        }
    if (st != NVL_OK)
        t.failures++;
    nvl_comm_set_allreduce(comm, NVL_AR_NCCL);
}

int main(int argc, char **argv)
{
    mpi_test_init(&t, &argc, &argv,
                  argc > 1 ? argv[1] : "topology/gb200-nvl72.topo");
    rank_ = t.rt.rank;
    nvl_comm_t *comm = t.comm;
    mpi_test_capture_reports(1);
    plain_mismatches(comm);
    size_t big = 100000; /* 400 KB: too large to ride along */
    size_t huge = ((size_t)1 << 20) + 1; /* 4 MB + 4: beyond the window */
    float *bin = calloc(big, sizeof *bin), *bout = calloc(big, sizeof *bout);
    float *hin = calloc(huge, sizeof *hin), *hout = calloc(huge, sizeof *hout);
    if (bin == NULL || bout == NULL || hin == NULL || hout == NULL)
        nvl_runtime_abort(1);
    ride_along_mismatches(comm, bin, bout, big);
    window_mismatches(comm, bin, bout, big, hin, hout, huge);
    free(hin);
    free(hout);
    free(bin);
    free(bout);
    /* afterwards the communicator still works, and the clock moved only for
     * calls that ran */
    float buf[64] = {0}, out[64 * 8];
    if (nvl_allreduce(comm, buf, out, 8, NVL_DT_F32, NVL_OP_SUM, NULL) != NVL_OK)
        t.failures++;
    int all = mpi_test_all_failures(&t);
    mpi_test_release_reports();
    if (rank_ == 0)
        printf("test_coll_errors: %d ranks, %d failure(s)\n", t.rt.size, all);
    return mpi_test_finish(&t, all);
}
