/* The tuner's choice on prediction-only communicators
 * (nvl_comm_create_virtual: no MPI) as NCCL makes it: within an algorithm
 * the protocol NCCL's own rating puts first (tuning.cc), across
 * algorithms the fastest modeled; and on the lent HGX H100 at 2-4 GPUs
 * the protocol and channel count NCCL 2.28's TUNING log printed for each
 * all_reduce size (tests/data/calibration/hgx-h100-x4/nccl-tuner-choice.csv). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "nvlemu/coll.h"
#include "nvlemu/topo.h"
#include "reports.h"
#include "shipped.h"

static int setup(void **state)
{
    unsetenv("NCCL_ALGO");
    return capture_reports(state);
}

static int teardown(void **state)
{
    unsetenv("NCCL_ALGO");
    return release_reports(state);
}

/* The choice is NCCL's: within each algorithm the protocol of lowest
 * NCCL rating (or modeled time where it has none); among the rated
 * algorithms the lowest rating; that one and the unrated ones by modeled
 * time. */
static void expect_fastest(const nvl_comm_t *comm, nvl_coll_t coll,
                           size_t bytes)
{
    nvl_coll_info_t best, win = {0};
    double win_key = -1;
    assert_int_equal(nvl_coll_choose(comm, coll, bytes, &best), NVL_OK);
    const nvl_tuner_cfg_t *cfg = nvl_comm_tuner(comm);
    assert_true(cfg->algo_enabled[best.algo] && cfg->proto_enabled[best.proto]);
    for (int a = 0; a < NVL_ALGO_COUNT; a++) {
        nvl_coll_info_t rep = {0}, other;
        double rep_key = -1, rep_rating = -1;
        for (int p = 0; p < NVL_PROTO_COUNT; p++) {
            if (!cfg->algo_enabled[a] || !cfg->proto_enabled[p] ||
                nvl_coll_nccl_declines(comm, coll, bytes, (nvl_algo_t)a) ||
                nvl_coll_predict(comm, coll, bytes, (nvl_algo_t)a,
                                 (nvl_proto_t)p, &other) != NVL_OK)
                continue;
            double r = nvl_coll_nccl_rating_s(comm, coll, bytes, (nvl_algo_t)a,
                                              (nvl_proto_t)p);
            double key = r >= 0 ? r : (double)other.time_ps;
            if (rep_key < 0 || key < rep_key) {
                rep = other;
                rep_key = key;
                rep_rating = r;
            }
        }
        if (rep_key >= 0 && a == (int)best.algo)
            assert_int_equal(rep.proto, best.proto);
        if (rep_key >= 0 && rep_rating < 0)
            assert_true(best.time_ps <= rep.time_ps);
        if (rep_rating >= 0 && (win_key < 0 || rep_rating < win_key)) {
            win = rep;
            win_key = rep_rating;
        }
    }
    if (win_key >= 0)
        assert_true(best.time_ps <= win.time_ps ||
                    (best.algo == win.algo && best.proto == win.proto));
}

static void test_choice_is_fastest_enabled(void **state)
{
    (void)state;
    const char *topos[] = {"gb200-nvl72.topo", "hgx-h200.topo",
                           "h200-nvl2.topo", "gb200-nvl72x2-ib.topo"};
    const int ranks[] = {2, 3, 8, 72, 144};
    const char *algos[] = {NULL, "Ring", "^NVLS", "Tree,Ring"};
    for (size_t t = 0; t < sizeof topos / sizeof topos[0]; t++) {
        nvl_topo_t *topo = load(topos[t]);
        for (size_t r = 0; r < sizeof ranks / sizeof ranks[0]; r++) {
            if ((uint32_t)ranks[r] > topo->gpus)
                continue;
            for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
                if (algos[a] != NULL)
                    setenv("NCCL_ALGO", algos[a], 1);
                nvl_comm_t *comm = NULL;
                assert_int_equal(nvl_comm_create_virtual(topo, ranks[r], NULL,
                                                         &comm),
                                 NVL_OK);
                unsetenv("NCCL_ALGO");
                for (int coll = 0; coll <= NVL_COLL_ALLREDUCE; coll++)
                    for (size_t b = 8; b <= ((size_t)1 << 32); b *= 64)
                        expect_fastest(comm, (nvl_coll_t)coll, b);
                nvl_comm_destroy(comm);
            }
        }
        nvl_topo_free(topo);
    }
}

/* NCCL 2.28 on the lent HGX H100 (NCCL_NVLS_ENABLE=0), all_reduce, its
 * TUNING lines (nccl-tuner-choice.csv, passes default.g2/g3/g4): the
 * protocol by size, and the channels at 4 GPUs (Ring LL: 8 x 4 = 32 bytes
 * per thread, 512 threads: one channel per 16 KB); every call's algorithm
 * and protocol, all five collectives: test_nccl_tuner_logs. */
static const struct {
    int gpus;
    size_t bytes;
    nvl_proto_t proto;
    int channels; /* 0: not checked */
} nccl_log[] = {
    {.gpus = 4, .bytes = 16384, .proto = NVL_PROTO_LL, .channels = 1},
    {.gpus = 4, .bytes = 32768, .proto = NVL_PROTO_LL, .channels = 2},
    {.gpus = 4, .bytes = 65536, .proto = NVL_PROTO_LL, .channels = 4},
    {.gpus = 4, .bytes = 262144, .proto = NVL_PROTO_LL, .channels = 16},
    {.gpus = 4, .bytes = 524288, .proto = NVL_PROTO_LL, .channels = 24},
    {.gpus = 4, .bytes = 2097152, .proto = NVL_PROTO_LL, .channels = 24},
    {.gpus = 4, .bytes = 4194304, .proto = NVL_PROTO_LL128, .channels = 24},
    {.gpus = 4, .bytes = 8388608, .proto = NVL_PROTO_LL128, .channels = 24},
    {.gpus = 4, .bytes = 16777216, .proto = NVL_PROTO_SIMPLE, .channels = 24},
    {.gpus = 3, .bytes = 2097152, .proto = NVL_PROTO_LL},
    {.gpus = 3, .bytes = 4194304, .proto = NVL_PROTO_SIMPLE},
    {.gpus = 2, .bytes = 1048576, .proto = NVL_PROTO_LL},
    {.gpus = 2, .bytes = 2097152, .proto = NVL_PROTO_SIMPLE},
};

static void test_nccl_log_choices(void **state)
{
    (void)state;
    nvl_topo_t *topo = load("hgx-h100.topo");
    for (size_t i = 0; i < sizeof nccl_log / sizeof nccl_log[0]; i++) {
        nvl_comm_t *comm = NULL;
        assert_int_equal(nvl_comm_create_virtual(topo, nccl_log[i].gpus, NULL,
                                                 &comm),
                         NVL_OK);
        nvl_coll_info_t info;
        assert_int_equal(nvl_coll_choose(comm, NVL_COLL_ALLREDUCE,
                                         nccl_log[i].bytes, &info),
                         NVL_OK);
        assert_int_equal(info.algo, NVL_ALGO_RING);
        assert_int_equal(info.proto, nccl_log[i].proto);
        if (nccl_log[i].channels > 0)
            assert_int_equal(info.channels, nccl_log[i].channels);
        nvl_comm_destroy(comm);
    }
    nvl_topo_free(topo);
}

/* Every call of the default passes in NCCL 2.28.9's TUNING lines on both
 * lent HGX boxes (nccl-tuner-choice.csv: 2-4 GPUs, the five collectives,
 * 8 B - 4 GB as nccl-tests sizes them): the model runs the algorithm and
 * protocol NCCL ran. */
static const char *const coll_log_names[] = {
    [NVL_COLL_BROADCAST] = "Broadcast", [NVL_COLL_REDUCE] = "Reduce",
    [NVL_COLL_ALLGATHER] = "AllGather",
    [NVL_COLL_REDUCESCATTER] = "ReduceScatter",
    [NVL_COLL_ALLREDUCE] = "AllReduce"};

static void check_tuner_log(const char *topo_name, const char *csv)
{
    nvl_topo_t *topo = load(topo_name);
    FILE *f = fopen(csv, "r");
    assert_non_null(f);
    char line[256];
    int checked = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        char pass[64], coll_name[32], algo[16], proto[16];
        int gpus, channels;
        unsigned long long size, log_bytes;
        if (strncmp(line, "default.", 8) != 0)
            continue;
        assert_int_equal(sscanf(line,
                                "%63[^,],%d,%31[^,],%llu,%llu,%15[^,],"
                                "%15[^,],%d",
                                pass, &gpus, coll_name, &size, &log_bytes,
                                algo, proto, &channels),
                         8);
        int coll = -1;
        for (int c = 0; c <= NVL_COLL_ALLREDUCE; c++)
            if (strcmp(coll_name, coll_log_names[c]) == 0)
                coll = c;
        assert_true(coll >= 0);
        nvl_comm_t *comm = NULL;
        assert_int_equal(nvl_comm_create_virtual(topo, gpus, NULL, &comm),
                         NVL_OK);
        nvl_coll_info_t info;
        assert_int_equal(nvl_coll_choose(comm, (nvl_coll_t)coll,
                                         (size_t)size, &info),
                         NVL_OK);
        if (strcasecmp(nvl_algo_name(info.algo), algo) != 0 ||
            strcasecmp(nvl_proto_name(info.proto), proto) != 0)
            fail_msg("%s: %d GPUs %s %llu B: NCCL %s %s, model %s %s",
                     csv, gpus, coll_name, size, algo, proto,
                     nvl_algo_name(info.algo), nvl_proto_name(info.proto));
        nvl_comm_destroy(comm);
        checked++;
    }
    fclose(f);
    assert_int_equal(checked, 450);
    nvl_topo_free(topo);
}

static void test_nccl_tuner_logs(void **state)
{
    (void)state;
    check_tuner_log("hgx-h100.topo", NVL_TEST_DATA
                    "/calibration/hgx-h100-x4/nccl-tuner-choice.csv");
    check_tuner_log("hgx-h200-x4.topo", NVL_TEST_DATA
                    "/calibration/hgx-h200-x4/nccl-tuner-choice.csv");
}

/* At 8 ranks, where no log is here: NCCL 2.28.9's own choice recomputed
 * from tuning.cc (the ring graph 360 / 720 GB/s, NVLS 8 x 40 / 8 x 80,
 * llMaxBw 141 / 282, perChMaxRingLL128Bw, nvlsEfficiency 0.85 / 0.74,
 * the latencies of tuning.cc:143-167), at the sizes on both sides of each
 * switch (docs/collectives.md, "The ring graph's bandwidth"); nccl-tests
 * sizes (all_gather's the whole output). */
static const struct {
    const char *topo;
    bool nvls;
    nvl_coll_t coll;
    size_t bytes;
    nvl_algo_t algo;
    nvl_proto_t proto;
} nccl_8[] = {
#define MB ((size_t)1 << 20)
    {"hgx-h100-8.topo", true, NVL_COLL_ALLREDUCE, MB, NVL_ALGO_RING,
     NVL_PROTO_LL},
    {"hgx-h100-8.topo", true, NVL_COLL_ALLREDUCE, 2 * MB, NVL_ALGO_NVLS,
     NVL_PROTO_SIMPLE},
    {"hgx-h100-8.topo", false, NVL_COLL_ALLREDUCE, 2 * MB, NVL_ALGO_RING,
     NVL_PROTO_LL},
    {"hgx-h100-8.topo", false, NVL_COLL_ALLREDUCE, 4 * MB, NVL_ALGO_RING,
     NVL_PROTO_LL128},
    {"hgx-h100-8.topo", false, NVL_COLL_ALLREDUCE, 32 * MB, NVL_ALGO_RING,
     NVL_PROTO_LL128},
    {"hgx-h100-8.topo", false, NVL_COLL_ALLREDUCE, 64 * MB, NVL_ALGO_RING,
     NVL_PROTO_SIMPLE},
    {"hgx-h200.topo", true, NVL_COLL_ALLGATHER, 4 * MB, NVL_ALGO_RING,
     NVL_PROTO_LL},
    {"hgx-h200.topo", true, NVL_COLL_ALLGATHER, 8 * MB, NVL_ALGO_RING,
     NVL_PROTO_LL128},
    {"hgx-h200.topo", true, NVL_COLL_REDUCESCATTER, 16 * MB, NVL_ALGO_RING,
     NVL_PROTO_LL128},
    {"hgx-h200.topo", true, NVL_COLL_REDUCESCATTER, 32 * MB, NVL_ALGO_RING,
     NVL_PROTO_SIMPLE},
    {"hgx-b200.topo", true, NVL_COLL_ALLREDUCE, 2 * MB, NVL_ALGO_RING,
     NVL_PROTO_LL},
    {"hgx-b200.topo", true, NVL_COLL_ALLREDUCE, 4 * MB, NVL_ALGO_NVLS,
     NVL_PROTO_SIMPLE},
    {"hgx-b200.topo", false, NVL_COLL_ALLREDUCE, 64 * MB, NVL_ALGO_RING,
     NVL_PROTO_LL128},
    {"hgx-b200.topo", false, NVL_COLL_ALLREDUCE, 128 * MB, NVL_ALGO_RING,
     NVL_PROTO_SIMPLE},
    {"hgx-b200.topo", true, NVL_COLL_ALLGATHER, 8 * MB, NVL_ALGO_RING,
     NVL_PROTO_LL},
    {"hgx-b200.topo", true, NVL_COLL_ALLGATHER, 64 * MB, NVL_ALGO_RING,
     NVL_PROTO_SIMPLE},
#undef MB
};

static void test_nccl_choice_8_ranks(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof nccl_8 / sizeof nccl_8[0]; i++) {
        nvl_topo_t *topo = load(nccl_8[i].topo);
        if (!nccl_8[i].nvls)
            setenv("NCCL_NVLS_ENABLE", "0", 1);
        nvl_comm_t *comm = NULL;
        assert_int_equal(nvl_comm_create_virtual(topo, 8, NULL, &comm),
                         NVL_OK);
        unsetenv("NCCL_NVLS_ENABLE");
        nvl_coll_info_t info;
        assert_int_equal(nvl_coll_choose(comm, nccl_8[i].coll,
                                         nccl_8[i].bytes, &info),
                         NVL_OK);
        if (info.algo != nccl_8[i].algo || info.proto != nccl_8[i].proto)
            fail_msg("row %zu: %s %zu B on %s: NCCL %s %s, model %s %s", i,
                     nvl_coll_name(nccl_8[i].coll), nccl_8[i].bytes,
                     nccl_8[i].topo, nvl_algo_name(nccl_8[i].algo),
                     nvl_proto_name(nccl_8[i].proto),
                     nvl_algo_name(info.algo), nvl_proto_name(info.proto));
        nvl_comm_destroy(comm);
        nvl_topo_free(topo);
    }
}

/* NCCL's rating by hand (tuning.cc, Hopper, one node), 4 ranks, LL128,
 * 4 MB: 14 us + 6 x 1.9 us + 4 MB / (360 x 0.92 GB/s x 4 / 6): the ring
 * graph's busBw is min(0.92 x 360, 24 x 36.7) GB/s, 331.2 as NCCL 2.28.9
 * prints it (hgx-h100-x4 nccl-debug-logs, Ring LL128 "19.7/ 441.6" for
 * allgather at 4 GPUs: 331.2 x 4/3). */
static void test_ring_rating_by_hand(void **state)
{
    (void)state;
    nvl_topo_t *topo = load("hgx-h100.topo");
    nvl_comm_t *comm = NULL;
    assert_int_equal(nvl_comm_create_virtual(topo, 4, NULL, &comm), NVL_OK);
    double bytes = 4194304.0;
    double bus = 360e9 * 0.92;
    double want = 14e-6 + 6 * 1.9e-6 + bytes / (bus * 4 / 6);
    double got = nvl_coll_nccl_rating_s(comm, NVL_COLL_ALLREDUCE,
                                        (size_t)bytes, NVL_ALGO_RING,
                                        NVL_PROTO_LL128);
    assert_true(got > 0 && got < want * (1 + 1e-9) && got > want * (1 - 1e-9));
    /* algorithms without a rating (NVLS below its 5 ranks) say so */
    assert_true(nvl_coll_nccl_rating_s(comm, NVL_COLL_ALLREDUCE, 1024,
                                       NVL_ALGO_NVLS, NVL_PROTO_SIMPLE) < 0);
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
}

/* NCCL's NVLS allreduce rating by hand (tuning.cc 2.28: 25 us, the NVLS
 * graph's nCh x bwIntra x nvlsEfficiency x (H-1)/H x N/(N-1)) on 8 x H200,
 * its graph 8 channels at 40 GB/s (9 x 50 > 18 x 20.6 GB/s), and on 5 x
 * B200 at the top of the Blackwell speeds (5 x 90), none for allgather,
 * and the switch it makes at 8 ranks: Ring LL to 1 MiB, NVLS from 2 MiB
 * on Hopper (the 2.27.7 sweep's page, published-nccl/README.md), Ring LL
 * to 2 MiB and NVLS from 4 MiB on B200. */
static void test_nvls_rating(void **state)
{
    (void)state;
    nvl_topo_t *topo = load("hgx-h200.topo");
    nvl_comm_t *comm = NULL;
    assert_int_equal(nvl_comm_create_virtual(topo, 8, NULL, &comm), NVL_OK);
    double bytes = 1 << 20;
    double rate = 8 * 40e9 * 0.85 * 7 / 8 * 8 / 7;
    double want = 25e-6 + bytes / rate;
    double got = nvl_coll_nccl_rating_s(comm, NVL_COLL_ALLREDUCE,
                                        (size_t)bytes, NVL_ALGO_NVLS,
                                        NVL_PROTO_SIMPLE);
    assert_true(got < want * (1 + 1e-6) && got > want * (1 - 1e-6));
    nvl_topo_t *b200 = load("hgx-b200.topo");
    nvl_comm_t *five = NULL;
    assert_int_equal(nvl_comm_create_virtual(b200, 5, NULL, &five), NVL_OK);
    want = 25e-6 + bytes / (5 * 90e9 * 0.74 * 4 / 5 * 5 / 4);
    got = nvl_coll_nccl_rating_s(five, NVL_COLL_ALLREDUCE, (size_t)bytes,
                                 NVL_ALGO_NVLS, NVL_PROTO_SIMPLE);
    assert_true(got < want * (1 + 1e-6) && got > want * (1 - 1e-6));
    nvl_comm_destroy(five);
    nvl_topo_free(b200);
    assert_true(nvl_coll_nccl_rating_s(comm, NVL_COLL_ALLGATHER, 1 << 20,
                                       NVL_ALGO_NVLS, NVL_PROTO_SIMPLE) < 0);
    const char *topos[] = {"hgx-h200.topo", "hgx-b200.topo"};
    const size_t last_ring[] = {(size_t)1 << 20, (size_t)2 << 20};
    for (int t = 0; t < 2; t++) {
        nvl_comm_t *c = NULL;
        nvl_topo_t *tp = t == 0 ? topo : load(topos[t]);
        assert_int_equal(nvl_comm_create_virtual(tp, 8, NULL, &c), NVL_OK);
        for (size_t b = 16384; b <= ((size_t)64 << 20); b *= 2) {
            nvl_coll_info_t info;
            assert_int_equal(nvl_coll_choose(c, NVL_COLL_ALLREDUCE, b, &info),
                             NVL_OK);
            bool ring_ll = info.algo == NVL_ALGO_RING &&
                           info.proto == NVL_PROTO_LL;
            assert_true(b <= last_ring[t] ? ring_ll
                                           : info.algo == NVL_ALGO_NVLS);
        }
        nvl_comm_destroy(c);
        if (t > 0)
            nvl_topo_free(tp);
    }
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
}

/* NCCL 2.18-2.20 on 8 Hopper GPUs (tuning.cc: llMaxBws Hopper-N1 87.7 GB/s,
 * NVLS Simple latency 23 us): Ring LL to 256 KB, NVLS from 512 KB, where
 * Ring LL rates 25.5 us and NVLS 24.7 us; with 2.21's 25 us NVLS rates
 * 26.7 us and Ring LL keeps 512 KB. */
static void test_nvls_tuning_lat(void **state)
{
    (void)state;
    const char *lats[] = {"nccl.nvls_tuning_lat=23us",
                          "nccl.nvls_tuning_lat=25us"};
    for (int v = 0; v < 2; v++) {
        nvl_topo_t *topo = load("hgx-h200.topo");
        assert_int_equal(nvl_topo_set(topo, "nccl.ll_max_bw=87.7GB/s"),
                         NVL_OK);
        assert_int_equal(nvl_topo_set(topo, lats[v]), NVL_OK);
        nvl_comm_t *comm = NULL;
        assert_int_equal(nvl_comm_create_virtual(topo, 8, NULL, &comm),
                         NVL_OK);
        size_t last_ring = v == 0 ? (size_t)256 << 10 : (size_t)512 << 10;
        for (size_t b = (size_t)128 << 10; b <= ((size_t)2 << 20); b *= 2) {
            nvl_coll_info_t info;
            assert_int_equal(nvl_coll_choose(comm, NVL_COLL_ALLREDUCE, b,
                                             &info),
                             NVL_OK);
            assert_true(b <= last_ring ? info.algo == NVL_ALGO_RING &&
                                             info.proto == NVL_PROTO_LL
                                       : info.algo == NVL_ALGO_NVLS);
        }
        nvl_comm_destroy(comm);
        nvl_topo_free(topo);
    }
}

/* NVLS allreduce before NCCL 2.20 ([nccl] nvls_whole_chunks): every
 * channel loops over the whole call in whole chunks (at least 16 KB), so
 * on 8 Hopper ranks (16 channels x 8 heads) a call from 128 KB to 2 MB is
 * one loop of full 16 KB chunks on its busiest channel and takes what 2 MB
 * takes; from 2.20 the call is split over the channels, and 128 KB takes
 * less than half of 2 MB's loop time. */
static void test_nvls_whole_chunks(void **state)
{
    (void)state;
    for (int whole = 0; whole < 2; whole++) {
        nvl_topo_t *topo = load("hgx-h200.topo");
        assert_int_equal(nvl_topo_set(topo, whole
                                                ? "nccl.nvls_whole_chunks=yes"
                                                : "nccl.nvls_whole_chunks=no"),
                         NVL_OK);
        nvl_comm_t *comm = NULL;
        assert_int_equal(nvl_comm_create_virtual(topo, 8, NULL, &comm),
                         NVL_OK);
        double t[2];
        size_t sizes[2] = {(size_t)128 << 10, (size_t)2 << 20};
        for (int i = 0; i < 2; i++) {
            nvl_coll_info_t info;
            assert_int_equal(nvl_coll_predict(comm, NVL_COLL_ALLREDUCE,
                                              sizes[i], NVL_ALGO_NVLS,
                                              NVL_PROTO_SIMPLE, &info),
                             NVL_OK);
            t[i] = (double)info.time_ps;
        }
        if (whole)
            assert_true(t[0] > 0.99 * t[1] && t[0] <= t[1]);
        else
            assert_true(t[0] < 0.8 * t[1]);
        nvl_comm_destroy(comm);
        nvl_topo_free(topo);
    }
}

/* The kernel a CUDA graph launches: the chosen (algorithm, protocol)'s
 * kernel, NCCL's latencies without the eager call's kernel overhead and
 * hop latencies, no host cost; nothing for no bytes; -1 outside the five
 * tuned collectives.  At 1 KB (Ring LL, 4 steps at 3 ranks) it has NCCL's
 * rating's latency, 6.6 us + 4 x 0.6 us. */
static void test_kernel_time(void **state)
{
    (void)state;
    nvl_topo_t *topo = load("hgx-h100.topo");
    nvl_comm_t *comm = NULL;
    assert_int_equal(nvl_comm_create_virtual(topo, 3, NULL, &comm), NVL_OK);
    for (size_t bytes = 1024; bytes <= ((size_t)1 << 30); bytes *= 32) {
        nvl_coll_info_t info;
        assert_int_equal(nvl_coll_choose(comm, NVL_COLL_ALLGATHER, bytes, &info),
                         NVL_OK);
        int64_t k = nvl_coll_kernel_time_ps(comm, NVL_COLL_ALLGATHER, bytes);
        assert_true(k > 0);
        /* the eager call pays the GPU's kernel overhead on top */
        assert_true(k + topo->gpu.kernel_overhead_ps <= info.time_ps);
        /* a CUDA graph's loop never beats its kernel */
        assert_true(nvl_coll_loop_time_ps(comm, &info, 3, 20) >= k);
    }
    double rating = nvl_coll_nccl_rating_s(comm, NVL_COLL_ALLREDUCE, 1024,
                                           NVL_ALGO_RING, NVL_PROTO_LL);
    int64_t k = nvl_coll_kernel_time_ps(comm, NVL_COLL_ALLREDUCE, 1024);
    assert_true(rating > 9.0e-6 && rating < 9.01e-6);
    /* NCCL's channel rule runs 1 KB on one channel, one SM: it moves at
     * the SM's peer rate ([nvlink] sm_peer_bw, 50 GB/s) rather than one
     * share of the path (370.8 / 24 GB/s), half of it LL's data */
    double want = 9.0e-6 + 1024.0 * 4 / 3 / (50e9 * 0.5);
    assert_true(k > nvl_ps_from_s(want * 0.999) &&
                k < nvl_ps_from_s(want * 1.001));
    assert_int_equal(nvl_coll_kernel_time_ps(comm, NVL_COLL_ALLREDUCE, 0), 0);
    assert_int_equal(nvl_coll_kernel_time_ps(comm, NVL_COLL_ALLTOALL, 1024), -1);
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
}

/* NVLSTree between two GB200 racks runs on NCCL's multi-node NVLS channels
 * ([nccl] nvls_tree_channels, 32: nvls.cc NVLS_NCHANNELS_SM100), not the
 * one domain's 24; 0 falls back to nvls_channels. */
static void test_nvlstree_channels(void **state)
{
    (void)state;
    nvl_topo_t *topo = load("gb200-nvl72x2-ib.topo");
    for (int pass = 0; pass < 2; pass++) {
        nvl_comm_t *comm = NULL;
        assert_int_equal(nvl_comm_create_virtual(topo, 144, NULL, &comm),
                         NVL_OK);
        nvl_coll_info_t info;
        assert_int_equal(nvl_coll_choose(comm, NVL_COLL_ALLREDUCE,
                                         (size_t)1 << 33, &info),
                         NVL_OK);
        assert_int_equal(info.algo, NVL_ALGO_NVLS_TREE);
        assert_int_equal(info.channels, pass == 0 ? 32 : 24);
        nvl_comm_destroy(comm);
        assert_int_equal(nvl_topo_set(topo, "nccl.nvls_tree_channels=0"),
                         NVL_OK);
    }
    nvl_topo_free(topo);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_choice_is_fastest_enabled),
        T(test_nccl_log_choices),
        T(test_nccl_tuner_logs),
        T(test_nccl_choice_8_ranks),
        T(test_ring_rating_by_hand),
        T(test_nvls_rating),
        T(test_nvls_tuning_lat),
        T(test_nvls_whole_chunks),
        T(test_kernel_time),
        T(test_nvlstree_channels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
