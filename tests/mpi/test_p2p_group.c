/* MPI test: groups of sends and receives (nvl_group_start .. _end): the
 * data arrives, data and timing mode give the same clocks, a GPU's ports
 * are shared by everything it sends at once, and a send/receive size
 * mismatch, or a member ending a group while the others call a
 * collective, fails everywhere with one report instead of hanging. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test.h"

static mpi_test_t t;
static int rank_, size_;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "rank %d: ", rank_);                          \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            t.failures++;                                                  \
        }                                                                  \
    } while (0)

/* Each rank sends (k + 1) * base floats to rank + k for k = 1..fan and
 * receives as many from rank - k; returns the group's modeled time. */
static int64_t fan_out(nvl_comm_t *comm, int fan, size_t base, int check)
{
    int data = nvl_comm_mode(comm) == NVL_MODE_DATA;
    float *out[8], *in[8];
    nvl_group_start(comm);
    for (int k = 1; k <= fan; k++) {
        size_t n = (size_t)(k + 1) * base;
        out[k] = malloc(n * sizeof(float) + 1);
        in[k] = calloc(n + 1, sizeof(float));
        for (size_t i = 0; i < n; i++)
            out[k][i] = (float)(rank_ * 1000 + k * 10 + (int)(i % 7));
        nvl_send(comm, data ? out[k] : NULL, n, NVL_DT_F32,
                 (rank_ + k) % size_);
        nvl_recv(comm, data ? in[k] : NULL, n, NVL_DT_F32,
                 (rank_ - k + size_) % size_);
    }
    nvl_coll_info_t info;
    nvl_status_t st = nvl_group_end(comm, &info);
    CHECK(st == NVL_OK, "group_end returned %s", nvl_status_str(st));
    for (int k = 1; k <= fan; k++) {
        size_t n = (size_t)(k + 1) * base;
        int from = (rank_ - k + size_) % size_;
        for (size_t i = 0; check && data && i < n; i++)
            if (in[k][i] != (float)(from * 1000 + k * 10 + (int)(i % 7))) {
                CHECK(0, "fan %d: element %zu from %d is %g", k, i, from,
                      in[k][i]);
                break;
            }
        free(out[k]);
        free(in[k]);
    }
    return info.time_ps;
}

/* Data and timing mode agree, and fan-out to several peers shares the
 * ports (takes longer than to one). */
static void modes_and_ports(nvl_comm_t *comm)
{
    int fan = size_ - 1 < 4 ? size_ - 1 : 4;
    int64_t tm[2][2];
    for (int mode = 0; mode < 2; mode++) {
        nvl_comm_set_mode(comm, mode ? NVL_MODE_TIMING : NVL_MODE_DATA);
        tm[mode][0] = fan_out(comm, 1, 100000, 1);
        tm[mode][1] = fan_out(comm, fan, 100000, 1);
    }
    CHECK(tm[0][0] == tm[1][0] && tm[0][1] == tm[1][1],
          "data and timing mode differ: %lld/%lld vs %lld/%lld",
          (long long)tm[0][0], (long long)tm[0][1], (long long)tm[1][0],
          (long long)tm[1][1]);
    if (fan > 1)
        CHECK(tm[1][1] > tm[1][0], "fan-out of %d (%lld ps) not slower than 1 "
              "(%lld ps)", fan, (long long)tm[1][1], (long long)tm[1][0]);
}

/* The time a send of `bytes` spends on k p2p channels of `rate` bytes
 * per second in all, each ramping as a ring's end step with its share
 * (p2p.c p2p_ramp: [nccl] mid_efficiency, knee_bytes). */
static double ramped_s(const nvl_topo_t *topo, double bytes, int k,
                       double rate)
{
    double m = topo->nccl.mid_efficiency, x = bytes / k;
    double knee = (double)topo->nccl.knee_bytes;
    double r = knee > 0 ? m + (1 - m) * x / (x + knee) : 1.0;
    return bytes / (rate * r);
}

/* A p2p channel moves sm_peer_bw / 2 per direction over NVLink (half its
 * CTA's warps, NCCL sendrecv.h), ramping with its share of the bytes: a
 * send to the next member on NCCL's nChannelsMin channels (p2pnChannels
 * halved while x N exceeds it) takes t(16 MB) - t(8 MB) longer for 16 MB
 * than for 8 MB, t(S) = S / (k x sm_peer_bw / 2 x r(S / k)), where that
 * is below the port's rate and every member is in one NVLink domain. */
static void channel_rate(nvl_comm_t *comm)
{
    const nvl_topo_t *topo = nvl_comm_topo(comm);
    double sm = topo->nvlink.sm_peer_bw_bytes_per_s;
    int most = 1, least;
    while (most < (int)topo->nccl.channels)
        most *= 2;
    for (least = most; least * size_ > most && least > 1; least /= 2)
        ;
    double rate = least * sm / 2;
    if (sm <= 0 || (uint32_t)size_ > topo->nvlink.domain_gpus ||
        rate > nvl_topo_nvlink_bw(topo, 0) / 2)
        return;
    nvl_comm_set_mode(comm, NVL_MODE_TIMING);
    int64_t a = fan_out(comm, 1, (size_t)1 << 20, 0); /* 8 MB */
    int64_t b = fan_out(comm, 1, (size_t)2 << 20, 0); /* 16 MB */
    double mb8 = 8.0 * (1 << 20);
    double want_ps = (ramped_s(topo, 2 * mb8, least, rate) -
                      ramped_s(topo, mb8, least, rate)) * 1e12;
    CHECK(llabs((b - a) - (int64_t)want_ps) < (int64_t)(want_ps / 100),
          "8 MB more on %d channels took %lld ps, expected %.0f", least,
          (long long)(b - a), want_ps);
    nvl_comm_set_mode(comm, NVL_MODE_DATA);
}

/* A work that only sends gives the send all of its CTA's warps
 * (sendrecv.h): member 0 sending 8 MB to member 1 alone, which only
 * receives, finishes before the ring shift of 8 MB, where every member
 * sends and receives and each direction has half the warps (where the
 * shift's channels stay below the port's rate, in one NVLink domain). */
static void one_way_rate(nvl_comm_t *comm)
{
    const nvl_topo_t *topo = nvl_comm_topo(comm);
    double sm = topo->nvlink.sm_peer_bw_bytes_per_s;
    if (sm <= 0 || (uint32_t)size_ > topo->nvlink.domain_gpus ||
        8 * sm / 2 > nvl_topo_nvlink_bw(topo, 0) / 2)
        return;
    nvl_comm_set_mode(comm, NVL_MODE_TIMING);
    size_t n = (size_t)2 << 20; /* 8 MB of floats */
    nvl_coll_info_t info;
    nvl_group_start(comm);
    if (rank_ == 0)
        nvl_send(comm, NULL, n, NVL_DT_F32, 1);
    if (rank_ == 1)
        nvl_recv(comm, NULL, n, NVL_DT_F32, 0);
    nvl_status_t st = nvl_group_end(comm, &info);
    int64_t shift = fan_out(comm, 1, n / 2, 0);
    CHECK(st == NVL_OK && info.time_ps < shift,
          "a one-way 8 MB send took %lld ps, the ring shift %lld (%s)",
          (long long)info.time_ps, (long long)shift, nvl_status_str(st));
    nvl_comm_set_mode(comm, NVL_MODE_DATA);
}

/* Member 1 expects more than member 0 sends: fails everywhere, once. */
static void size_mismatch(nvl_comm_t *comm)
{
    float buf[64] = {0};
    nvl_group_start(comm);
    if (rank_ == 0)
        nvl_send(comm, buf, 10, NVL_DT_F32, 1);
    if (rank_ == 1)
        nvl_recv(comm, buf, 12, NVL_DT_F32, 0);
    nvl_status_t st = nvl_group_end(comm, NULL);
    CHECK(st == NVL_ERR_INVALID, "mismatched group returned %s",
          nvl_status_str(st));
    int reports = mpi_test_reports(), total;
    MPI_Allreduce(&reports, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank_ == 0)
        CHECK(total == 1, "%d reports of the mismatch, expected 1", total);
}

/* Member 1 ends a group while the others call an allreduce, small (its
 * data rides along with the agreement) and large: every member fails, one
 * report names both calls. */
static void group_vs_allreduce(nvl_comm_t *comm)
{
    float buf[64] = {0};
    size_t counts[2] = {8, 100000};
    float *big = calloc(counts[1], sizeof *big);
    for (int k = 0; k < 2 && big != NULL; k++) {
        nvl_status_t st;
        mpi_test_clear_reports();
        if (rank_ == 1) {
            nvl_group_start(comm);
            nvl_send(comm, buf, 10, NVL_DT_F32, 0);
            st = nvl_group_end(comm, NULL);
        } else {
            st = nvl_allreduce(comm, big, big, counts[k], NVL_DT_F32,
                               NVL_OP_SUM, NULL);
        }
        CHECK(st == NVL_ERR_MISMATCH, "group vs allreduce of %zu returned %s",
              counts[k], nvl_status_str(st));
        int reports = mpi_test_reports(), total;
        MPI_Allreduce(&reports, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank_ == 0)
            CHECK(total == 1, "%d reports of group vs allreduce, expected 1",
                  total);
        const char *last = mpi_test_last_report();
        if (rank_ == 0 && reports == 1)
            CHECK(strstr(last, "nvl_group_end") != NULL &&
                      strstr(last, "AllReduce") != NULL,
                  "the report names not both calls: %s", last);
    }
    free(big);
}

int main(int argc, char **argv)
{
    mpi_test_init(&t, &argc, &argv,
                  argc > 1 ? argv[1] : "topology/gb200-nvl72.topo");
    rank_ = t.rt.rank;
    size_ = t.rt.size;
    modes_and_ports(t.comm);
    channel_rate(t.comm);
    one_way_rate(t.comm);
    nvl_comm_set_mode(t.comm, NVL_MODE_DATA);
    mpi_test_capture_reports(1);
    size_mismatch(t.comm);
    group_vs_allreduce(t.comm);
    mpi_test_release_reports();
    /* the communicator still works */
    fan_out(t.comm, 1, 10, 1);
    int all = mpi_test_all_failures(&t);
    if (rank_ == 0)
        printf("test_p2p_group: %d ranks, %d failure(s)\n", size_, all);
    return mpi_test_finish(&t, all);
}
