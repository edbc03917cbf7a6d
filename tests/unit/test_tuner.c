/* The tuner and the collective model on prediction-only communicators
 * (nvl_comm_create_virtual: no MPI): NCCL_ALGO / NCCL_PROTO and the other
 * NCCL variables as NCCL reads them and latencies that follow the
 * algorithms' step counts (the choice itself: test_tuner_nccl.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/coll.h"
#include "nvlemu/topo.h"
#include "reports.h"
#include "shipped.h"

static const char *const vars[] = {"NCCL_ALGO",          "NCCL_PROTO",
                                   "NCCL_NVLS_ENABLE",   "NCCL_PAT_ENABLE",
                                   "NCCL_MAX_NCHANNELS", "NCCL_MIN_NCHANNELS",
                                   "NCCL_MAX_CTAS",      "NCCL_MIN_CTAS"};

static int setup(void **state)
{
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    return capture_reports(state);
}

static int teardown(void **state)
{
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    return release_reports(state);
}

/* cfg from the environment after setting var=value */
static nvl_status_t cfg_with(const char *var, const char *value,
                             nvl_tuner_cfg_t *cfg_out)
{
    setenv(var, value, 1);
    nvl_status_t st = nvl_tuner_cfg_from_env(cfg_out);
    unsetenv(var);
    return st;
}

static void expect_algos(const nvl_tuner_cfg_t *c, const char *want)
{
    for (int a = 0; a < NVL_ALGO_COUNT; a++) {
        /* whole names: "NVLS" is inside "NVLSTree" */
        char word[32];
        snprintf(word, sizeof word, ",%s,", nvl_algo_name((nvl_algo_t)a));
        char wrapped[128];
        snprintf(wrapped, sizeof wrapped, ",%s,", want);
        bool listed = strstr(wrapped, word) != NULL;
        assert_int_equal(c->algo_enabled[a], listed);
    }
}

static void test_default_enables_all(void **state)
{
    (void)state;
    nvl_tuner_cfg_t c;
    assert_int_equal(nvl_tuner_cfg_from_env(&c), NVL_OK);
    expect_algos(&c, "Tree,Ring,NVLS,NVLSTree,PAT");
    for (int p = 0; p < NVL_PROTO_COUNT; p++)
        assert_true(c.proto_enabled[p]);
    assert_int_equal(c.max_channels, 0);
    assert_string_equal(c.algo_env, "");
}

static void test_algo_list_and_case(void **state)
{
    (void)state;
    nvl_tuner_cfg_t c;
    assert_int_equal(cfg_with("NCCL_ALGO", "ring,TREE", &c), NVL_OK);
    expect_algos(&c, "Tree,Ring");
    assert_string_equal(c.algo_env, "ring,TREE");
    assert_int_equal(cfg_with("NCCL_ALGO", "NVLS", &c), NVL_OK);
    expect_algos(&c, "NVLS");
}

static void test_algo_exclusion(void **state)
{
    (void)state;
    nvl_tuner_cfg_t c;
    assert_int_equal(cfg_with("NCCL_ALGO", "^NVLS,Tree", &c), NVL_OK);
    expect_algos(&c, "Ring,NVLSTree,PAT");
    assert_int_equal(cfg_with("NCCL_PROTO", "^LL128", &c), NVL_OK);
    assert_true(c.proto_enabled[NVL_PROTO_LL]);
    assert_false(c.proto_enabled[NVL_PROTO_LL128]);
    assert_true(c.proto_enabled[NVL_PROTO_SIMPLE]);
    assert_string_equal(c.proto_env, "^LL128");
}

static void test_collnet_accepted_never_used(void **state)
{
    (void)state;
    nvl_tuner_cfg_t c;
    assert_int_equal(cfg_with("NCCL_ALGO", "Ring,CollNetDirect", &c), NVL_OK);
    expect_algos(&c, "Ring");
}

static void test_unknown_names_reported(void **state)
{
    (void)state;
    nvl_tuner_cfg_t c;
    assert_int_equal(cfg_with("NCCL_ALGO", "Rnig", &c), NVL_ERR_INVALID);
    assert_int_equal(reports.count, 1);
    /* the accepted names come from the algorithm table */
    for (int a = 0; a < NVL_ALGO_COUNT; a++)
        assert_non_null(strstr(reports.last, nvl_algo_name((nvl_algo_t)a)));
    assert_non_null(strstr(reports.last, "NCCL_ALGO=Rnig: unknown name"));
    assert_int_equal(cfg_with("NCCL_PROTO", "LL256", &c), NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "LL, LL128, Simple"));
}

static void test_nvls_pat_and_channels(void **state)
{
    (void)state;
    nvl_tuner_cfg_t c;
    assert_int_equal(cfg_with("NCCL_NVLS_ENABLE", "0", &c), NVL_OK);
    expect_algos(&c, "Tree,Ring,PAT");
    assert_int_equal(cfg_with("NCCL_PAT_ENABLE", "0", &c), NVL_OK);
    expect_algos(&c, "Tree,Ring,NVLS,NVLSTree");
    assert_int_equal(cfg_with("NCCL_MAX_NCHANNELS", "4", &c), NVL_OK);
    assert_int_equal(c.max_channels, 4);
    assert_int_equal(cfg_with("NCCL_MIN_CTAS", "2", &c), NVL_OK);
    assert_int_equal(c.min_channels, 2);
    assert_int_equal(cfg_with("NCCL_MAX_NCHANNELS", "-1", &c),
                     NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "NCCL_MAX_NCHANNELS=-1"));
}

/* The tuner's answer is the fastest enabled pair that can run the call,
 * of those NCCL's own rating does not decline. */
static void test_forced_pair_is_used(void **state)
{
    (void)state;
    nvl_topo_t *topo = load("gb200-nvl72.topo");
    setenv("NCCL_ALGO", "Ring", 1);
    setenv("NCCL_PROTO", "LL128", 1);
    nvl_comm_t *comm = NULL;
    assert_int_equal(nvl_comm_create_virtual(topo, 5, NULL, &comm), NVL_OK);
    nvl_coll_info_t info;
    for (size_t b = 1; b <= ((size_t)1 << 30); b *= 32) {
        assert_int_equal(nvl_coll_choose(comm, NVL_COLL_ALLREDUCE, b, &info),
                         NVL_OK);
        assert_int_equal(info.algo, NVL_ALGO_RING);
        assert_int_equal(info.proto, NVL_PROTO_LL128);
    }
    nvl_comm_destroy(comm);
    /* a pair that cannot run anything: the tuner refuses */
    setenv("NCCL_ALGO", "PAT", 1);
    setenv("NCCL_PROTO", "Simple", 1);
    assert_int_equal(nvl_comm_create_virtual(topo, 5, NULL, &comm), NVL_OK);
    assert_int_not_equal(nvl_coll_choose(comm, NVL_COLL_ALLREDUCE, 1024,
                                         &info),
                         NVL_OK);
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
}

static void test_unsupported_pairs(void **state)
{
    (void)state;
    nvl_topo_t *nvl2 = load("h200-nvl2.topo"), *rack = load("gb200-nvl72.topo");
    nvl_comm_t *c2 = NULL, *c72 = NULL;
    assert_int_equal(nvl_comm_create_virtual(nvl2, 2, NULL, &c2), NVL_OK);
    assert_int_equal(nvl_comm_create_virtual(rack, 72, NULL, &c72), NVL_OK);
    nvl_coll_info_t i;
    /* NVLS needs NVSwitch: none between two directly linked H200s */
    assert_int_equal(nvl_coll_predict(c2, NVL_COLL_ALLREDUCE, 1 << 20,
                                      NVL_ALGO_NVLS, NVL_PROTO_SIMPLE, &i),
                     NVL_ERR_RANGE);
    /* NVLS on the rack: Simple only */
    assert_int_equal(nvl_coll_predict(c72, NVL_COLL_ALLREDUCE, 1 << 20,
                                      NVL_ALGO_NVLS, NVL_PROTO_SIMPLE, &i),
                     NVL_OK);
    assert_int_equal(nvl_coll_predict(c72, NVL_COLL_ALLREDUCE, 1 << 20,
                                      NVL_ALGO_NVLS, NVL_PROTO_LL, &i),
                     NVL_ERR_RANGE);
    /* PAT does not run allreduce */
    assert_int_equal(nvl_coll_predict(c72, NVL_COLL_ALLREDUCE, 1 << 20,
                                      NVL_ALGO_PAT, NVL_PROTO_SIMPLE, &i),
                     NVL_ERR_RANGE);
    nvl_comm_destroy(c2);
    nvl_comm_destroy(c72);
    nvl_topo_free(nvl2);
    nvl_topo_free(rack);
}

/* One more microsecond of NCCL's per-step NVLink latency costs each call
 * one microsecond per step: 2 (n - 1) for a ring allreduce, n - 1 for a
 * ring allgather (NCCL's step counts), n - 1 for a ring broadcast (the
 * chain's hops: the first chunk crosses every one, ring.c). */
static void test_latency_follows_steps(void **state)
{
    (void)state;
    nvl_topo_t *topo = load("gb200-nvl72.topo");
    const int ranks[] = {3, 5, 8, 72};
    const struct {
        nvl_coll_t coll;
        int per_n, minus;
    } steps[] = {{NVL_COLL_ALLREDUCE, 2, 2},
                 {NVL_COLL_ALLGATHER, 1, 1},
                 {NVL_COLL_BROADCAST, 1, 1}};
    for (size_t r = 0; r < sizeof ranks / sizeof ranks[0]; r++)
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            nvl_comm_t *comm = NULL;
            assert_int_equal(nvl_comm_create_virtual(topo, ranks[r], NULL,
                                                     &comm),
                             NVL_OK);
            nvl_coll_info_t a, b;
            assert_int_equal(nvl_coll_predict(comm, steps[s].coll, 8,
                                              NVL_ALGO_RING, NVL_PROTO_LL, &a),
                             NVL_OK);
            topo->nccl.nvlink_lat_ps[NVL_ALGO_RING][NVL_PROTO_LL] += 1000000;
            assert_int_equal(nvl_coll_predict(comm, steps[s].coll, 8,
                                              NVL_ALGO_RING, NVL_PROTO_LL, &b),
                             NVL_OK);
            topo->nccl.nvlink_lat_ps[NVL_ALGO_RING][NVL_PROTO_LL] -= 1000000;
            int64_t want = (int64_t)(steps[s].per_n * ranks[r] - steps[s].minus) *
                           1000000;
            assert_true(llabs(b.time_ps - a.time_ps - want) <= 1);
            nvl_comm_destroy(comm);
        }
    nvl_topo_free(topo);
}

/* Predicted time of one call with a forced pair (ps). */
static int64_t predict_ps(nvl_topo_t *topo, int n, nvl_coll_t coll,
                          size_t bytes, nvl_algo_t algo, nvl_proto_t proto,
                          int *channels_out)
{
    nvl_comm_t *comm = NULL;
    assert_int_equal(nvl_comm_create_virtual(topo, n, NULL, &comm), NVL_OK);
    nvl_coll_info_t i;
    assert_int_equal(nvl_coll_predict(comm, coll, bytes, algo, proto, &i),
                     NVL_OK);
    nvl_comm_destroy(comm);
    if (channels_out != NULL)
        *channels_out = i.channels;
    return i.time_ps;
}

/* Broadcast and reduce are a chain (ring.c): every member more adds one
 * hop's latency and, in Simple, one chunk crossing one more hop at one
 * SM's peer rate (the last chunk, after the root's port is done; LL128 has
 * no chunk to fill), so the time grows
 * linearly in N (3, 5, 7: not powers of two either), below and above the
 * 512 KB chunk per channel; on 2 ranks reduce costs what broadcast does
 * (the receiver's reduction is far from HBM-bound on an H200). */
static void test_chain_pipeline_fill(void **state)
{
    (void)state;
    nvl_topo_t *topo = load("gb200-nvl72.topo");
    const size_t sizes[] = {1 << 20, (size_t)1 << 30}; /* x < c, x > c */
    for (size_t k = 0; k < 2; k++) {
        int64_t t3 = predict_ps(topo, 3, NVL_COLL_BROADCAST, sizes[k],
                                NVL_ALGO_RING, NVL_PROTO_SIMPLE, NULL);
        int64_t t5 = predict_ps(topo, 5, NVL_COLL_BROADCAST, sizes[k],
                                NVL_ALGO_RING, NVL_PROTO_SIMPLE, NULL);
        int64_t t7 = predict_ps(topo, 7, NVL_COLL_BROADCAST, sizes[k],
                                NVL_ALGO_RING, NVL_PROTO_SIMPLE, NULL);
        assert_true(t5 > t3);
        assert_true(llabs((t7 - t5) - (t5 - t3)) <= 2);
    }
    /* the fill per member: one hop + one 512 KB chunk at sm_peer_bw */
    int64_t a = predict_ps(topo, 3, NVL_COLL_BROADCAST, (size_t)1 << 30,
                           NVL_ALGO_RING, NVL_PROTO_SIMPLE, NULL);
    int64_t b = predict_ps(topo, 4, NVL_COLL_BROADCAST, (size_t)1 << 30,
                           NVL_ALGO_RING, NVL_PROTO_SIMPLE, NULL);
    double hop_ps = (double)topo->nccl.nvlink_lat_ps[NVL_ALGO_RING]
                                                    [NVL_PROTO_SIMPLE] +
                    (double)topo->nvlink.hop_lat_ps;
    double sm = topo->nvlink.sm_peer_bw_bytes_per_s; /* 50 GB/s */
    assert_true(sm > 0 && sm < 900e9);
    double fill_ps = 512.0 * 1024 / sm * 1e12;
    assert_true(fabs((double)(b - a) - hop_ps - fill_ps) < 1e-3 * fill_ps);
    /* LL128 forwards each line as it lands: a member more adds one hop */
    int64_t l3 = predict_ps(topo, 3, NVL_COLL_BROADCAST, 1 << 20,
                            NVL_ALGO_RING, NVL_PROTO_LL128, NULL);
    int64_t l4 = predict_ps(topo, 4, NVL_COLL_BROADCAST, 1 << 20,
                            NVL_ALGO_RING, NVL_PROTO_LL128, NULL);
    double hop128_ps = (double)topo->nccl.nvlink_lat_ps[NVL_ALGO_RING]
                                                       [NVL_PROTO_LL128] +
                       (double)topo->nvlink.hop_lat_ps;
    assert_true(fabs((double)(l4 - l3) - hop128_ps) <= 2);
    nvl_topo_t *nvl2 = load("h200-nvl2.topo");
    assert_int_equal(predict_ps(nvl2, 2, NVL_COLL_BROADCAST, 64 << 20,
                                NVL_ALGO_RING, NVL_PROTO_SIMPLE, NULL),
                     predict_ps(nvl2, 2, NVL_COLL_REDUCE, 64 << 20,
                                NVL_ALGO_RING, NVL_PROTO_SIMPLE, NULL));
    nvl_topo_free(nvl2);
    nvl_topo_free(topo);
}

/* NVLS runs on NCCL's nvlsChannels (16 Hopper, 24 Blackwell NVL, bounded
 * by NCCL_MAX_NCHANNELS), and at 72 ranks its mid sizes follow the chunk
 * pipeline: 16 KB chunks below 113 MB, so 64 MB reaches well under the
 * 8 GB busbw. */
static void test_nvls_channels_and_chunks(void **state)
{
    (void)state;
    nvl_topo_t *h200 = load("hgx-h200.topo"), *rack = load("gb200-nvl72.topo");
    int ch;
    predict_ps(h200, 8, NVL_COLL_ALLREDUCE, 1 << 20, NVL_ALGO_NVLS,
               NVL_PROTO_SIMPLE, &ch);
    assert_int_equal(ch, 16);
    predict_ps(rack, 72, NVL_COLL_ALLREDUCE, 1 << 20, NVL_ALGO_NVLS,
               NVL_PROTO_SIMPLE, &ch);
    assert_int_equal(ch, 24);
    setenv("NCCL_MAX_NCHANNELS", "8", 1);
    nvl_comm_t *comm = NULL;
    assert_int_equal(nvl_comm_create_virtual(rack, 72, NULL, &comm), NVL_OK);
    nvl_coll_info_t i;
    assert_int_equal(nvl_coll_predict(comm, NVL_COLL_ALLREDUCE, 1 << 20,
                                      NVL_ALGO_NVLS, NVL_PROTO_SIMPLE, &i),
                     NVL_OK);
    assert_int_equal(i.channels, 8);
    nvl_comm_destroy(comm);
    unsetenv("NCCL_MAX_NCHANNELS");
    double mid = (64 << 20) / (double)predict_ps(rack, 72, NVL_COLL_ALLREDUCE,
                                                 64 << 20, NVL_ALGO_NVLS,
                                                 NVL_PROTO_SIMPLE, NULL);
    double big = 8e9 / (double)predict_ps(rack, 72, NVL_COLL_ALLREDUCE,
                                          (size_t)8e9, NVL_ALGO_NVLS,
                                          NVL_PROTO_SIMPLE, NULL);
    assert_true(mid < 0.85 * big);
    nvl_topo_free(h200);
    nvl_topo_free(rack);
}

/* NVLS allgather and reduce-scatter: one port direction carries all S
 * bytes (reduce-scatter's read responses out, allgather's multicast
 * copies in), so both take S over the port's data rate (hgx-h200: 18 x
 * 26.5625 GB/s x eta = 370.8 GB/s), below the switch's 2 x nvls_bw x 5/6;
 * NCCL runs them on at most NCCL_MAX_NVLS_ARITY = 32 ranks; allreduce
 * keeps NVLS beyond 32 ranks. */
static void test_nvls_port_heads_arity(void **state)
{
    (void)state;
    nvl_topo_t *h200 = load("hgx-h200.topo"), *rack = load("gb200-nvl72.topo");
    const size_t s = (size_t)8e9;
    int64_t rs = predict_ps(h200, 7, NVL_COLL_REDUCESCATTER, s, NVL_ALGO_NVLS,
                            NVL_PROTO_SIMPLE, NULL);
    int64_t ag = predict_ps(h200, 7, NVL_COLL_ALLGATHER, s, NVL_ALGO_NVLS,
                            NVL_PROTO_SIMPLE, NULL);
    assert_int_equal(rs, ag);
    double algbw = (double)s / ((double)rs * 1e-12);
    assert_true(fabs(algbw - 370.8e9) < 0.005 * 370.8e9);
    /* allgather and reduce-scatter: NVLS at 32 ranks, none at 33;
     * allreduce: NVLS at 33 */
    const struct { int n; nvl_coll_t coll; nvl_status_t want; } rows[] = {
        {.n = 32, .coll = NVL_COLL_ALLGATHER, .want = NVL_OK},
        {.n = 33, .coll = NVL_COLL_ALLGATHER, .want = NVL_ERR_RANGE},
        {.n = 32, .coll = NVL_COLL_REDUCESCATTER, .want = NVL_OK},
        {.n = 33, .coll = NVL_COLL_REDUCESCATTER, .want = NVL_ERR_RANGE},
        {.n = 33, .coll = NVL_COLL_ALLREDUCE, .want = NVL_OK},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        nvl_comm_t *comm = NULL;
        assert_int_equal(nvl_comm_create_virtual(rack, rows[k].n, NULL, &comm),
                         NVL_OK);
        nvl_coll_info_t i;
        assert_int_equal(nvl_coll_predict(comm, rows[k].coll, 1 << 26,
                                          NVL_ALGO_NVLS, NVL_PROTO_SIMPLE, &i),
                         rows[k].want);
        nvl_comm_destroy(comm);
    }
    nvl_topo_free(h200);
    nvl_topo_free(rack);
}

/* --rank-plays die on gb200-nvl72.topo: NCCL's ring places a package's
 * two dies next to each other, so at N dies of N/2 packages half the ring's
 * edges are die links and half NVLink through the switch.  By hand, for a
 * Simple ring allreduce of S = 1 GiB on every channel:
 *   T = kernel + base + h_die (nvlink_lat + die_link_lat)
 *       + h_nv (nvlink_lat + hop_lat) + 2(N-1)/N S / busbw,
 *   busbw = path x eta x (N-1) / (N-2 + 1/r), r = mid + (1 - mid) x /
 *   (x + knee), x = wire / C (the ramp on the end steps only),
 * 2(N-1) steps of which floor(2(N-1) x (N/2) / N) = N-1 cross a die link;
 * path = min(die's 9 NVLink links x 50 GB/s, 5 TB/s) = 450 GB/s at 4 and
 * 6 dies; 5 TB/s on the two dies of one package (every edge a die link). */
static double ring_hand_ps(const nvl_topo_t *t, int n, double path,
                           int die_steps, double s)
{
    const nvl_nccl_spec_t *k = &t->nccl;
    int a = NVL_ALGO_RING, p = NVL_PROTO_SIMPLE, steps = 2 * (n - 1);
    double wire = 2.0 * (n - 1) / n * s, c = k->channels;
    double x = wire / c;
    double r = k->mid_efficiency + (1 - k->mid_efficiency) * x /
                                       (x + (double)k->knee_bytes);
    double busbw = path * (370.8 / 478.116) * (n - 1) / (n - 2 + 1 / r);
    return (double)t->gpu.kernel_overhead_ps + (double)k->base_lat_ps[a][p] +
           die_steps * ((double)k->nvlink_lat_ps[a][p] + 50e3) +
           (steps - die_steps) * ((double)k->nvlink_lat_ps[a][p] + 200e3) +
           wire / busbw * 1e12;
}

static void test_die_pairs_two_levels(void **state)
{
    (void)state;
    nvl_topo_t *t = load("gb200-nvl72.topo");
    assert_int_equal(t->nvlink.hop_lat_ps, 200000);
    assert_int_equal(nvl_topo_split_dies(t), NVL_OK);
    const double s = (double)(1u << 30);
    const struct { int n; double path; int die_steps; } cases[] = {
        {2, 5e12, 2}, {4, 450e9, 3}, {6, 450e9, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t got = predict_ps(t, cases[i].n, NVL_COLL_ALLREDUCE,
                                 (size_t)s, NVL_ALGO_RING, NVL_PROTO_SIMPLE,
                                 NULL);
        double want = ring_hand_ps(t, cases[i].n, cases[i].path,
                                   cases[i].die_steps, s);
        assert_true(fabs((double)got - want) < 1e-6 * want);
    }
    /* a small die-pair allreduce is latency: 2 die-link steps */
    int64_t pair = predict_ps(t, 2, NVL_COLL_ALLREDUCE, 8, NVL_ALGO_RING,
                              NVL_PROTO_LL, NULL);
    const nvl_nccl_spec_t *k = &t->nccl;
    double lat = (double)t->gpu.kernel_overhead_ps +
                 (double)k->base_lat_ps[NVL_ALGO_RING][NVL_PROTO_LL] +
                 2 * ((double)k->nvlink_lat_ps[NVL_ALGO_RING][NVL_PROTO_LL] +
                      50e3);
    assert_true(pair > lat && pair < lat + 1e3);
    nvl_topo_free(t);
}

/* The ring's end steps (model.c ring_steps_eff): on N ranks of an HGX
 * H100 board, a Simple ring of S = 128 MB (mid-size: the ramp r is ~0.77)
 * moves its wire bytes at path x eta x (N-1) / (N-2 + 1/(g r)), g =
 * gather_scatter_efficiency for reduce-scatter, 1 for allreduce: the
 * ramp on the steps a 2-rank call consists of, the forwarding steps at
 * the channel's rate.  2 ranks: g r, as fit. */
static void test_ring_end_steps(void **state)
{
    (void)state;
    nvl_topo_t *t = load("hgx-h100-8.topo");
    const nvl_nccl_spec_t *k = &t->nccl;
    const double s = (double)(128u << 20);
    const int a = NVL_ALGO_RING, p = NVL_PROTO_SIMPLE;
    const struct { int n; nvl_coll_t coll; } cases[] = {
        {.n = 2, .coll = NVL_COLL_ALLREDUCE},
        {.n = 3, .coll = NVL_COLL_ALLREDUCE},
        {.n = 7, .coll = NVL_COLL_ALLREDUCE},
        {.n = 2, .coll = NVL_COLL_REDUCESCATTER},
        {.n = 5, .coll = NVL_COLL_REDUCESCATTER},
        {.n = 7, .coll = NVL_COLL_REDUCESCATTER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = cases[i].n;
        bool ar = cases[i].coll == NVL_COLL_ALLREDUCE;
        int steps = ar ? 2 * (n - 1) : n - 1;
        double wire = (double)steps / n * s;
        double x = wire / (double)k->channels;
        double r = k->mid_efficiency + (1 - k->mid_efficiency) * x /
                                           (x + (double)k->knee_bytes);
        double end = (ar ? 1.0 : k->gather_scatter_efficiency) * r;
        double busbw = t->nvlink.links_per_gpu * t->nvlink.link_bw_bytes_per_s *
                       (370.8 / 478.116) * (n - 1) / (n - 2 + 1 / end);
        double want = (double)t->gpu.kernel_overhead_ps +
                      (double)k->base_lat_ps[a][p] +
                      steps * ((double)k->nvlink_lat_ps[a][p] +
                               (double)t->nvlink.hop_lat_ps) +
                      wire / busbw * 1e12;
        int64_t got = predict_ps(t, n, cases[i].coll, (size_t)s,
                                 NVL_ALGO_RING, NVL_PROTO_SIMPLE, NULL);
        assert_true(fabs((double)got - want) < 1e-6 * want);
    }
    nvl_topo_free(t);
}

/* NVLS allgather and reduce-scatter compete only where NCCL's rating puts
 * them first.  By hand on gb200-nvl72 at 16 ranks (maxBw = 900 GB/s x
 * 370.8/478.116 = 698 GB/s): NVLS 698 x 0.74 x 15/16 x 15/16 = 454 GB/s at
 * 25 us; ring LL 282 x 16/15 at 6.6 + 15 x 0.6 us, LL128 642 x 16/15 at 14
 * + 15 x 1.9, Simple 698 x 16/15 at 8.4 + 15 x 3.4.  At 16 MB NVLS 62.0 us
 * against 71.4 / 67.0 / 81.9; at 1 MB ring LL (19.1 us) and at 256 MB ring
 * Simple (420 us) win.  On hgx-h200 at 8 ranks (0.85, 7/8 x 7/8: 241 GB/s)
 * a ring protocol rates faster at every size; NCCL_ALGO=NVLS leaves no ring
 * to prefer. */
static void test_nccl_declines_nvls_gather(void **state)
{
    (void)state;
    nvl_topo_t *rack = load("gb200-nvl72.topo"), *h200 = load("hgx-h200.topo");
    nvl_comm_t *c = NULL;
    assert_int_equal(nvl_comm_create_virtual(rack, 16, NULL, &c), NVL_OK);
    const struct { size_t bytes; bool declined; } rows[] = {
        {.bytes = 1 << 20, .declined = true},
        {.bytes = 16 << 20, .declined = false},
        {.bytes = 256 << 20, .declined = true},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++)
        assert_int_equal(nvl_coll_nccl_declines(c, NVL_COLL_ALLGATHER,
                                                rows[k].bytes, NVL_ALGO_NVLS),
                         rows[k].declined);
    assert_false(nvl_coll_nccl_declines(c, NVL_COLL_ALLREDUCE, 1 << 20,
                                        NVL_ALGO_NVLS));
    nvl_comm_destroy(c);
    assert_int_equal(nvl_comm_create_virtual(h200, 8, NULL, &c), NVL_OK);
    for (size_t b = 1024; b <= ((size_t)16 << 30); b *= 4) {
        nvl_coll_info_t i;
        assert_true(nvl_coll_nccl_declines(c, NVL_COLL_REDUCESCATTER, b,
                                           NVL_ALGO_NVLS));
        assert_int_equal(nvl_coll_choose(c, NVL_COLL_ALLGATHER, b, &i), NVL_OK);
        assert_int_equal(i.algo, NVL_ALGO_RING);
    }
    nvl_comm_destroy(c);
    setenv("NCCL_ALGO", "NVLS", 1);
    assert_int_equal(nvl_comm_create_virtual(h200, 8, NULL, &c), NVL_OK);
    unsetenv("NCCL_ALGO");
    assert_false(nvl_coll_nccl_declines(c, NVL_COLL_ALLGATHER, 1 << 26,
                                        NVL_ALGO_NVLS));
    nvl_comm_destroy(c);
    nvl_topo_free(rack);
    nvl_topo_free(h200);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_default_enables_all),   T(test_algo_list_and_case),
        T(test_algo_exclusion),        T(test_collnet_accepted_never_used),
        T(test_unknown_names_reported), T(test_nvls_pat_and_channels),
        T(test_forced_pair_is_used),
        T(test_unsupported_pairs),     T(test_latency_follows_steps),
        T(test_chain_pipeline_fill),   T(test_nvls_channels_and_chunks),
        T(test_die_pairs_two_levels),  T(test_nvls_port_heads_arity),
        T(test_ring_end_steps),        T(test_nccl_declines_nvls_gather),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
