/* The serving engines' allreduces on prediction-only communicators (no
 * MPI): auto's rules (TensorRT-LLM's AUTO, src/coll/ar_auto.c) on both
 * sides of every threshold, where each implementation may run, and costs
 * that follow the mechanisms (bytes per port, syncs). */
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

static nvl_topo_t *load(const char *name, const char *set)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NVL_TOPOLOGY_DIR, name);
    nvl_topo_t *t = NULL;
    assert_int_equal(nvl_topo_load(path, &t), NVL_OK);
    if (set != NULL)
        assert_int_equal(nvl_topo_set(t, set), NVL_OK);
    return t;
}

/* The implementation called name (the table's row). */
static nvl_ar_impl_t ar(const char *name)
{
    nvl_ar_impl_t impl = NVL_AR_NCCL;
    assert_int_equal(nvl_ar_impl_parse(name, &impl), NVL_OK);
    return impl;
}

/* What auto runs for `bytes` on the first n GPUs of topology `name`. */
static nvl_ar_impl_t auto_runs(const char *name, const char *set, int n,
                               size_t bytes)
{
    nvl_topo_t *t = load(name, set);
    nvl_comm_t *c = NULL;
    assert_int_equal(nvl_comm_create_virtual(t, n, NULL, &c), NVL_OK);
    nvl_coll_info_t info;
    assert_int_equal(nvl_ar_predict(c, ar("auto"), bytes, &info), NVL_OK);
    nvl_comm_destroy(c);
    nvl_topo_free(t);
    return (nvl_ar_impl_t)info.impl;
}

/* Within one node (hgx-b200: one baseboard of 8): allreducePlugin.cpp's
 * thresholds. */
static void test_auto_one_node(void **state)
{
    (void)state;
    const char *b = "hgx-b200.topo";
    assert_int_equal(auto_runs(b, NULL, 2, 16000000), ar("oneshot"));
    assert_int_equal(auto_runs(b, NULL, 2, 16000001), NVL_AR_NCCL);
    assert_int_equal(auto_runs(b, NULL, 4, 999999), ar("oneshot"));
    assert_int_equal(auto_runs(b, NULL, 4, 1000000), NVL_AR_NCCL);
    assert_int_equal(auto_runs(b, NULL, 6, 499999), ar("oneshot"));
    assert_int_equal(auto_runs(b, NULL, 6, 500000), NVL_AR_NCCL);
    assert_int_equal(auto_runs(b, NULL, 8, 499999), ar("oneshot"));
    assert_int_equal(auto_runs(b, NULL, 8, 500000), NVL_AR_NCCL);
    /* odd rank counts: no custom kernel (isCustomAllReduceSupported) */
    assert_int_equal(auto_runs(b, NULL, 3, 1024), NVL_AR_NCCL);
    assert_int_equal(auto_runs(b, NULL, 5, 1024), NVL_AR_NCCL);
    assert_int_equal(auto_runs(b, NULL, 7, 1024), NVL_AR_NCCL);
    /* more than MAX_RANKS_PER_NODE = 16 in one node */
    const char *big = "node.gpus_per_tray=36";
    assert_int_equal(auto_runs("gb200-nvl72.topo", big, 16, 1024),
                     ar("oneshot"));
    assert_int_equal(auto_runs("gb200-nvl72.topo", big, 18, 1024),
                     NVL_AR_NCCL);
}

/* Across trays on multicast NVLink (gb200-nvl72: 4 GPUs a tray): the
 * MNNVL kernels, one-shot while bytes x n <= 512 KiB. */
static void test_auto_across_trays(void **state)
{
    (void)state;
    const char *g = "gb200-nvl72.topo";
    assert_int_equal(auto_runs(g, NULL, 4, 1024), ar("oneshot")); /* a tray */
    assert_int_equal(auto_runs(g, NULL, 5, 104857), ar("nvls-oneshot"));
    assert_int_equal(auto_runs(g, NULL, 5, 104858), ar("nvls-twoshot"));
    assert_int_equal(auto_runs(g, NULL, 6, 87381), ar("nvls-oneshot"));
    assert_int_equal(auto_runs(g, NULL, 6, 87382), ar("nvls-twoshot"));
    assert_int_equal(auto_runs(g, NULL, 72, 7281), ar("nvls-oneshot"));
    assert_int_equal(auto_runs(g, NULL, 72, 7282), ar("nvls-twoshot"));
    /* no multicast: NCCL (MNNVL needs it; P2P kernels stay in a node) */
    assert_int_equal(auto_runs(g, "nvlink.nvls=no", 8, 1024), NVL_AR_NCCL);
    /* two NVLink domains: NCCL */
    assert_int_equal(auto_runs("gb200-nvl72x2-ib.topo", NULL, 144, 1024),
                     NVL_AR_NCCL);
}

/* Where each implementation may run: the NVLS forms need NVLink SHARP,
 * all of them one NVLink domain; setting one that cannot run is refused
 * with one report. */
static void test_where(void **state)
{
    (void)state;
    nvl_topo_t *t = load("hgx-b200.topo", "nvlink.nvls=no");
    nvl_comm_t *c = NULL;
    assert_int_equal(nvl_comm_create_virtual(t, 6, NULL, &c), NVL_OK);
    assert_null(nvl_ar_impl_unsupported(c, ar("oneshot")));
    assert_null(nvl_ar_impl_unsupported(c, ar("auto")));
    assert_non_null(nvl_ar_impl_unsupported(c, ar("nvls-oneshot")));
    nvl_coll_info_t info;
    assert_int_equal(nvl_ar_predict(c, ar("nvls-twoshot"), 1024, &info),
                     NVL_ERR_RANGE);
    int before = reports.count;
    assert_int_equal(nvl_comm_set_allreduce(c, ar("nvls-twoshot")),
                     NVL_ERR_INVALID);
    assert_int_equal(reports.count, before + 1);
    assert_non_null(strstr(reports.last, "--allreduce nvls-twoshot"));
    assert_int_equal(nvl_comm_allreduce(c), NVL_AR_NCCL);
    nvl_comm_destroy(c);
    nvl_topo_free(t);
    t = load("gb200-nvl72x2-ib.topo", NULL);
    assert_int_equal(nvl_comm_create_virtual(t, 144, NULL, &c), NVL_OK);
    assert_non_null(nvl_ar_impl_unsupported(c, ar("twoshot")));
    nvl_comm_destroy(c);
    nvl_topo_free(t);
    nvl_ar_impl_t impl;
    assert_int_equal(nvl_ar_impl_parse("nvls-oneshot", &impl), NVL_OK);
    assert_int_equal(impl, ar("nvls-oneshot"));
    assert_int_equal(nvl_ar_impl_parse("threeshot", &impl), NVL_ERR_INVALID);
}

/* Which implementations take their input from a registered buffer, so the
 * engine copies it in first: torch's one-shot and two-shot only. */
static void test_copies_input(void **state)
{
    (void)state;
    assert_true(nvl_ar_impl_copies_input(ar("oneshot")));
    assert_true(nvl_ar_impl_copies_input(ar("twoshot")));
    assert_false(nvl_ar_impl_copies_input(NVL_AR_NCCL));
    assert_false(nvl_ar_impl_copies_input(ar("nvls-oneshot")));
    assert_false(nvl_ar_impl_copies_input(ar("nvls-twoshot")));
    assert_false(nvl_ar_impl_copies_input(ar("auto")));
    assert_false(nvl_ar_impl_copies_input(-1));
    assert_false(nvl_ar_impl_copies_input(
        (nvl_ar_impl_t)nvl_ar_impl_family.n_rows));
}

static int64_t time_ps(nvl_comm_t *c, nvl_ar_impl_t impl, size_t bytes)
{
    nvl_coll_info_t info;
    assert_int_equal(nvl_ar_predict(c, impl, bytes, &info), NVL_OK);
    return info.time_ps;
}

/* Time at `bytes` on the first n GPUs of topology `name` with `set`. */
static int64_t time_on(const char *name, const char *set, int n,
                       nvl_ar_impl_t impl, size_t bytes)
{
    nvl_topo_t *t = load(name, set);
    nvl_comm_t *c = NULL;
    assert_int_equal(nvl_comm_create_virtual(t, n, NULL, &c), NVL_OK);
    int64_t ps = time_ps(c, impl, bytes);
    nvl_comm_destroy(c);
    nvl_topo_free(t);
    return ps;
}

/* The costs follow the mechanisms (docs/collectives.md, "The cost"):
 * one-shot reads (n-1) S, so where both are port-bound its slope is
 * (n-1) / (2 (n-1) / n) = n / 2 times two-shot's; at 1 byte one-shot pays
 * two releasing barriers and a load, two-shot an acquiring barrier, a
 * load and a releasing one that waits for its stores; the loads of a rank
 * count the kernel is not compiled for go one after another; nothing
 * falls as S grows. */
static void test_costs(void **state)
{
    (void)state;
    nvl_topo_t *t = load("gb200-nvl72.topo", NULL);
    nvl_comm_t *c = NULL;
    assert_int_equal(nvl_comm_create_virtual(t, 8, NULL, &c), NVL_OK);
    size_t s = (size_t)64 << 20;
    double one = (double)(time_ps(c, ar("oneshot"), 2 * s) -
                          time_ps(c, ar("oneshot"), s));
    double two = (double)(time_ps(c, ar("twoshot"), 2 * s) -
                          time_ps(c, ar("twoshot"), s));
    assert_true(one / two > 3.99 && one / two < 4.01); /* n / 2 = 4 */
    const nvl_nvlink_spec_t *l = &t->nvlink;
    int64_t base = t->gpu.kernel_floor_ps + t->gpu.mem_latency_ps;
    int64_t h = l->flag_lat_ps, f = l->fence_lat_ps;
    assert_true(h > 0 && f > 0 && l->load_lat_ps > 0);
    int64_t want1 = base + 2 * (f + 2 * h) + l->load_lat_ps;
    int64_t want2 = base + 4 * h + l->load_lat_ps + (f > 2 * h ? f : 2 * h);
    /* within a nanosecond: the byte's own transfer */
    assert_true(llabs(time_ps(c, ar("oneshot"), 1) - want1) < 1000);
    assert_true(llabs(time_ps(c, ar("twoshot"), 1) - want2) < 1000);
    /* 9 ranks: the kernel's generic loop, 8 loads one after another per
     * iteration where 8 ranks wait for one */
    int64_t at8 = time_on("gb200-nvl72.topo", NULL, 8, ar("oneshot"), 1024);
    int64_t at9 = time_on("gb200-nvl72.topo", NULL, 9, ar("oneshot"), 1024);
    assert_true(at9 - at8 > 6 * l->load_lat_ps);
    /* flag_lat 0 stands for hop_lat; load_lat 0 for two flags */
    nvl_topo_t *u = load("gb200-nvl72.topo", "nvlink.flag_lat=0us");
    assert_int_equal(nvl_topo_set(u, "nvlink.load_lat=0us"), NVL_OK);
    nvl_comm_t *v = NULL;
    assert_int_equal(nvl_comm_create_virtual(u, 2, NULL, &v), NVL_OK);
    int64_t hop = u->nvlink.hop_lat_ps;
    assert_true(llabs(time_ps(v, ar("oneshot"), 1) -
                      (base + 2 * (f + 2 * hop) + 2 * hop)) < 1000);
    nvl_comm_destroy(v);
    nvl_topo_free(u);
    for (int i = NVL_AR_NCCL + 1; i < (int)nvl_ar_impl_family.n_rows; i++)
        for (size_t b = 1; b < s && i != ar("auto"); b *= 4)
            assert_true(time_ps(c, (nvl_ar_impl_t)i, 4 * b) >=
                        time_ps(c, (nvl_ar_impl_t)i, b));
    nvl_comm_destroy(c);
    nvl_topo_free(t);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, capture_reports, release_reports)
    const struct CMUnitTest tests[] = {
        T(test_auto_one_node), T(test_auto_across_trays), T(test_where),
        T(test_copies_input), T(test_costs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
