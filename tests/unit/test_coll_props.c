/* Invariants of the collective model, over every shipped topology, rank
 * counts that are and are not powers of two, the five NCCL collectives,
 * every algorithm and protocol that can run them, and sizes from 1 byte to
 * 8 GB (powers of two and the 1.5x between them):
 *
 *   - time never falls as the size grows, under one algorithm and protocol
 *     (and so under the tuner's choice, but where NCCL's own rating admits
 *     or declines NVLS between two sizes);
 *   - the bus bandwidth (nccl-tests' busbw: algbw x 2(n-1)/n for
 *     allreduce, (n-1)/n for allgather and reduce-scatter, 1 for broadcast
 *     and reduce) never exceeds the GPU's NVLink line rate per direction;
 *     NVLS allreduce, whose switch reduces in the network, is bounded by
 *     algbw <= line rate instead (each GPU sends and receives S once);
 *   - the tuner's choice is never slower than an enabled alternative that
 *     NCCL's rating does not decline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/coll.h"
#include "nvlemu/topo.h"
#include "reports.h"

static const char *const topologies[] = {
    "gb200-nvl72.topo", "nvl72-nvlink6.topo", "gb200-nvl72x2-ib.topo",
    "hgx-b200.topo",    "hgx-h200.topo",      "h200-nvl2.topo"};
static const int rank_counts[] = {2, 3, 4, 5, 7, 8, 16, 36, 72, 144};
static const nvl_coll_t colls[] = {NVL_COLL_BROADCAST, NVL_COLL_REDUCE,
                                   NVL_COLL_ALLGATHER, NVL_COLL_REDUCESCATTER,
                                   NVL_COLL_ALLREDUCE};

#define MAX_SIZES 80

/* 1 B .. 8 GB: 2^k and 3 x 2^(k-1) */
static int sizes(size_t *out)
{
    int n = 0;
    for (int k = 0; k <= 33; k++) {
        out[n++] = (size_t)1 << k;
        if (k >= 1 && k < 33)
            out[n++] = (size_t)3 << (k - 1);
    }
    return n;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static double bus_factor(nvl_coll_t coll, int n)
{
    if (coll == NVL_COLL_ALLREDUCE)
        return 2.0 * (n - 1) / n;
    if (coll == NVL_COLL_ALLGATHER || coll == NVL_COLL_REDUCESCATTER)
        return (double)(n - 1) / n;
    return 1.0;
}

typedef struct {
    long checked;   /* (size, algo, proto) predictions compared */
    int violations; /* printed, up to a few */
} tally_t;

static void violation(tally_t *t, const char *fmt, ...)
{
    if (t->violations++ < 12) {
        va_list ap;
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
    }
}

/* Whether NCCL's rating admits or declines NVLS between sizes a and b:
 * there its choice may make the larger call faster (the edge of its NVLS
 * allgather window, docs/collectives.md). */
static bool nvls_edge(const nvl_comm_t *c, nvl_coll_t coll, size_t a,
                      size_t b)
{
    return nvl_coll_nccl_declines(c, coll, a, NVL_ALGO_NVLS) !=
           nvl_coll_nccl_declines(c, coll, b, NVL_ALGO_NVLS);
}

/* The protocol NCCL's own rating puts first for algo (every protocol
 * enabled) and its rating in *rating, -1 where the model carries no rating
 * for algo: then the tuner takes the protocol it times fastest. */
static int rated_pick(const nvl_comm_t *c, nvl_coll_t coll, size_t bytes,
                      nvl_algo_t algo, double *rating)
{
    int pick = -1;
    for (int p = 0; p < NVL_PROTO_COUNT; p++) {
        double r = nvl_coll_nccl_rating_s(c, coll, bytes, algo, (nvl_proto_t)p);
        if (r >= 0 && (pick < 0 || r < *rating)) {
            pick = p;
            *rating = r;
        }
    }
    return pick;
}

/* Whether the tuner may leave (algo, proto) although the model times it
 * faster: NCCL's rating picks another protocol of algo, or another rated
 * algorithm (tuner.c). */
static bool rating_leaves(const nvl_comm_t *c, nvl_coll_t coll, size_t bytes,
                          nvl_algo_t algo, int proto)
{
    double mine = -1, other = -1;
    int pick = rated_pick(c, coll, bytes, algo, &mine);
    if (pick < 0)
        return false;
    if (pick != proto)
        return true;
    for (int a = 0; a < NVL_ALGO_COUNT; a++)
        if (a != (int)algo && !nvl_coll_nccl_declines(c, coll, bytes,
                                                      (nvl_algo_t)a) &&
            rated_pick(c, coll, bytes, (nvl_algo_t)a, &other) >= 0 &&
            other < mine)
            return true;
    return false;
}

/* The tuner's choices over the sizes: no faster at a larger size (but
 * where NCCL's rating or NVLS's edge moves to another pair) and no enabled
 * pair the tuner may not leave timed faster. */
static void check_choices(const char *topo_name, const nvl_comm_t *c, int n,
                          nvl_coll_t coll, const size_t *sz, int ns,
                          tally_t *t)
{
    int64_t prev_choice = 0;
    nvl_coll_info_t prev = {0};
    for (int i = 0; i < ns; i++) {
        nvl_coll_info_t best;
        assert_int_equal(nvl_coll_choose(c, coll, sz[i], &best), NVL_OK);
        /* where NCCL's rating moves to another pair, the model may time
         * the new one faster than the old one at the smaller size */
        bool rated_switch = i > 0 &&
                            (best.algo != prev.algo ||
                             best.proto != prev.proto) &&
                            nvl_coll_nccl_rating_s(c, coll, sz[i], best.algo,
                                                   best.proto) >= 0;
        prev = best;
        if (best.time_ps < prev_choice && !rated_switch &&
            !nvls_edge(c, coll, sz[i - 1], sz[i]))
            violation(t, "%s n=%d %s: the tuner's %zu B is faster than "
                         "%zu B", topo_name, n, nvl_coll_name(coll),
                      sz[i], sz[i - 1]);
        prev_choice = best.time_ps;
        for (int a = 0; a < NVL_ALGO_COUNT; a++)
            for (int p = 0; p < NVL_PROTO_COUNT; p++) {
                nvl_coll_info_t alt;
                if (!rating_leaves(c, coll, sz[i], (nvl_algo_t)a, p) &&
                    !nvl_coll_nccl_declines(c, coll, sz[i], (nvl_algo_t)a) &&
                    nvl_coll_predict(c, coll, sz[i], (nvl_algo_t)a,
                                     (nvl_proto_t)p, &alt) == NVL_OK &&
                    alt.time_ps < best.time_ps)
                    violation(t,
                              "%s n=%d %s %zu B: the tuner chose %s/%s "
                              "(%.3f us), %s/%s takes %.3f us",
                              topo_name, n, nvl_coll_name(coll), sz[i],
                              nvl_algo_name(best.algo),
                              nvl_proto_name(best.proto), best.time_ps * 1e-6,
                              nvl_algo_name((nvl_algo_t)a),
                              nvl_proto_name((nvl_proto_t)p),
                              alt.time_ps * 1e-6);
            }
    }
}

static void check_comm(const char *topo_name, const nvl_topo_t *topo,
                       const nvl_comm_t *c, int n, tally_t *t)
{
    size_t sz[MAX_SIZES];
    int ns = sizes(sz);
    qsort(sz, (size_t)ns, sizeof sz[0], cmp_size);
    double line = nvl_topo_nvlink_bw(topo, 0);
    for (size_t k = 0; k < sizeof colls / sizeof colls[0]; k++) {
        nvl_coll_t coll = colls[k];
        for (int a = 0; a < NVL_ALGO_COUNT; a++)
            for (int p = 0; p < NVL_PROTO_COUNT; p++) {
                int64_t prev = 0;
                for (int i = 0; i < ns; i++) {
                    nvl_coll_info_t info;
                    if (nvl_coll_predict(c, coll, sz[i], (nvl_algo_t)a,
                                         (nvl_proto_t)p, &info) != NVL_OK)
                        break;
                    t->checked++;
                    if (info.time_ps < prev)
                        violation(t,
                                  "%s n=%d %s %s/%s: %zu B takes %.3f us, "
                                  "less than %zu B (%.3f us)",
                                  topo_name, n, nvl_coll_name(coll),
                                  nvl_algo_name((nvl_algo_t)a),
                                  nvl_proto_name((nvl_proto_t)p), sz[i],
                                  info.time_ps * 1e-6, sz[i - 1],
                                  prev * 1e-6);
                    prev = info.time_ps;
                    bool in_switch = coll == NVL_COLL_ALLREDUCE &&
                                     (a == NVL_ALGO_NVLS ||
                                      a == NVL_ALGO_NVLS_TREE);
                    double algbw = (double)sz[i] / (info.time_ps * 1e-12);
                    double bw = in_switch ? algbw
                                          : algbw * bus_factor(coll, n);
                    if (bw > line * (1 + 1e-9))
                        violation(t,
                                  "%s n=%d %s %s/%s %zu B: %s %.1f GB/s "
                                  "above the NVLink line rate %.1f GB/s",
                                  topo_name, n, nvl_coll_name(coll),
                                  nvl_algo_name((nvl_algo_t)a),
                                  nvl_proto_name((nvl_proto_t)p), sz[i],
                                  in_switch ? "algbw" : "busbw", bw / 1e9,
                                  line / 1e9);
                }
            }
        check_choices(topo_name, c, n, coll, sz, ns, t);
    }
}

static void test_invariants(void **state)
{
    (void)state;
    tally_t t = {0, 0};
    for (size_t i = 0; i < sizeof topologies / sizeof topologies[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", NVL_TOPOLOGY_DIR, topologies[i]);
        nvl_topo_t *topo = NULL;
        assert_int_equal(nvl_topo_load(path, &topo), NVL_OK);
        for (size_t r = 0; r < sizeof rank_counts / sizeof rank_counts[0];
             r++) {
            int n = rank_counts[r];
            if ((uint32_t)n > topo->gpus)
                continue;
            nvl_comm_t *c = NULL;
            assert_int_equal(nvl_comm_create_virtual(topo, n, NULL, &c),
                             NVL_OK);
            check_comm(topologies[i], topo, c, n, &t);
            nvl_comm_destroy(c);
        }
        nvl_topo_free(topo);
    }
    printf("%ld predictions checked, %d violation(s)\n", t.checked,
           t.violations);
    assert_true(t.checked > 10000);
    assert_int_equal(t.violations, 0);
}

/* The one-sided all-to-all (src/coll/onesided.c) by hand: a member of 8
 * on GB200 NVL72 writing 1 MB to each of its 7 peers and receiving 0.5 MB
 * from each: 7 MB over 18 x 50 GB/s at NCCL's payload efficiency, plus
 * one kernel (3.3 us) and 3 hops of 0.2 us (low-latency), or two kernels
 * and 6 hops (high-throughput); its own entry is ignored.  Across two
 * NVLink domains only NCCL's path runs. */
static void test_onesided(void **state)
{
    (void)state;
    nvl_topo_t *topo = NULL;
    assert_int_equal(nvl_topo_load(NVL_TOPOLOGY_DIR "/gb200-nvl72.topo", &topo),
                     NVL_OK);
    nvl_comm_t *c = NULL;
    assert_int_equal(nvl_comm_create_virtual(topo, 8, NULL, &c), NVL_OK);
    double out[8], in[8];
    for (int p = 0; p < 8; p++)
        out[p] = 1e6, in[p] = 0.5e6;
    out[0] = in[0] = 1e12; /* member 0 itself */
    double wire_s = 7e6 / (18 * 50e9 * 370.8 / 478.116);
    int64_t ll = nvl_a2a_predict_ps(c, NVL_A2A_ONESIDED_LL, out, in);
    int64_t ht = nvl_a2a_predict_ps(c, NVL_A2A_ONESIDED_HT, out, in);
    assert_true(llabs(ll - (3300000 + 3 * 200000 +
                            (int64_t)(wire_s * 1e12 + 0.5))) <= 1);
    assert_true(llabs(ht - (2 * 3300000 + 6 * 200000 +
                            (int64_t)(wire_s * 1e12 + 0.5))) <= 1);
    assert_true(nvl_a2a_predict_ps(c, NVL_A2A_NCCL, out, in) > 0);
    char why[256];
    assert_true(nvl_a2a_usable(c, NVL_A2A_ONESIDED_LL, why, sizeof why));
    assert_string_equal(nvl_a2a_name(NVL_A2A_ONESIDED_HT), "onesided-ht");
    nvl_comm_destroy(c);
    nvl_topo_free(topo);
    assert_int_equal(nvl_topo_load(NVL_TOPOLOGY_DIR "/gb200-nvl72x2-ib.topo",
                                   &topo), NVL_OK);
    assert_int_equal(nvl_comm_create_virtual(topo, 74, NULL, &c), NVL_OK);
    assert_true(nvl_a2a_usable(c, NVL_A2A_NCCL, why, sizeof why));
    assert_false(nvl_a2a_usable(c, NVL_A2A_ONESIDED_LL, why, sizeof why));
    assert_non_null(strstr(why, "these 74 GPUs span 2"));
    nvl_comm_destroy(c);
    nvl_topo_free(topo);
}

/* DeepEP's published check (its README: intranode EP 8 on H800, "~160
 * GB/s NVLink maximum bandwidth", normal kernels 153 GB/s dispatch and
 * 158 GB/s combine for 4096 tokens of 7168 hidden, top-8): an HGX H200
 * cut to H800's 8 NVLink-4 links per GPU, 8 members each writing 16 MB to
 * each of its 7 peers in high-throughput mode, moves 150-170 GB/s. */
static void test_onesided_deepep(void **state)
{
    (void)state;
    nvl_topo_t *topo = NULL;
    assert_int_equal(nvl_topo_load(NVL_TOPOLOGY_DIR "/hgx-h200.topo", &topo),
                     NVL_OK);
    assert_int_equal(nvl_topo_set(topo, "nvlink.links=8"), NVL_OK);
    nvl_comm_t *c = NULL;
    assert_int_equal(nvl_comm_create_virtual(topo, 8, NULL, &c), NVL_OK);
    double b[8];
    for (int p = 0; p < 8; p++)
        b[p] = 16e6;
    int64_t t = nvl_a2a_predict_ps(c, NVL_A2A_ONESIDED_HT, b, b);
    double gb_per_s = 7 * 16e6 / ((double)t * 1e-12) / 1e9;
    printf("one-sided HT on H800-like NVLink: %.1f GB/s (DeepEP: 153, 158)\n",
           gb_per_s);
    assert_in_range((int64_t)gb_per_s, 150, 170);
    nvl_comm_destroy(c);
    nvl_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_invariants, capture_reports,
                                        release_reports),
        cmocka_unit_test(test_onesided),
        cmocka_unit_test(test_onesided_deepep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
