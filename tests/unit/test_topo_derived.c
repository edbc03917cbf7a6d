/* Unit tests of the topology module (src/topo): the derived quantities:
 * fabrics, per-GPU and bisection bandwidth, names, the JSON description,
 * the die view. */
#include "topo_test.h"

static void test_fabric_across_domains(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72x2-ib.topo");
    assert_int_equal(nvl_topo_domains(t), 2);
    assert_int_equal(nvl_topo_domain_of(t, 71), 0);
    assert_int_equal(nvl_topo_domain_of(t, 72), 1);
    assert_int_equal(nvl_topo_tray_of(t, 71), 17);
    assert_int_equal(nvl_topo_tray_of(t, 72), 18);
    assert_int_equal(nvl_topo_fabric(t, 5, 5), NVL_FABRIC_LOCAL);
    assert_int_equal(nvl_topo_fabric(t, 0, 71), NVL_FABRIC_NVLINK);
    assert_int_equal(nvl_topo_fabric(t, 71, 72), NVL_FABRIC_SCALEOUT);
    assert_int_equal(nvl_topo_fabric(t, 72, 71), NVL_FABRIC_SCALEOUT);
    assert_int_equal(nvl_topo_fabric(t, 72, 143), NVL_FABRIC_NVLINK);
    assert_int_equal(nvl_topo_fabric(t, 0, 143), NVL_FABRIC_SCALEOUT);

    assert_true(nvl_topo_p2p_bw(t, 5, 5) == 8e12);      /* HBM */
    assert_true(nvl_topo_p2p_bw(t, 0, 71) == 900e9);    /* 18 x 50GB/s */
    assert_true(nvl_topo_p2p_bw(t, 71, 72) == 50e9);    /* 400Gb/s NIC */
    assert_int_equal(nvl_topo_p2p_lat_ps(t, 5, 5), 0);
    assert_int_equal(nvl_topo_p2p_lat_ps(t, 0, 71), 200000);
    assert_int_equal(nvl_topo_p2p_lat_ps(t, 71, 72), 2000000);
    nvl_topo_free(t);
}

static void test_bisection_nvl72(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
    assert_true(nvl_topo_bisection_bw(t, 72, NVL_FABRIC_NVLINK) ==
                36 * 900e9);
    assert_true(nvl_topo_bisection_bw(t, 72, NVL_FABRIC_SCALEOUT) == 0.0);
    assert_true(nvl_topo_bisection_bw(t, 72, NVL_FABRIC_LOCAL) == 0.0);
    assert_true(nvl_topo_bisection_bw(t, 7, NVL_FABRIC_NVLINK) ==
                3 * 900e9);
    assert_true(nvl_topo_bisection_bw(t, 1, NVL_FABRIC_NVLINK) == 0.0);
    /* more ranks than GPUs count as all GPUs */
    assert_true(nvl_topo_bisection_bw(t, 1000, NVL_FABRIC_NVLINK) ==
                36 * 900e9);
    /* the weaker half limits the cut */
    assert_int_equal(nvl_topo_set(t, "gpu.0-3.links_down=2"), NVL_OK);
    assert_true(nvl_topo_bisection_bw(t, 8, NVL_FABRIC_NVLINK) ==
                4 * 800e9);
    nvl_topo_free(t);
}

static void test_bisection_two_racks(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72x2-ib.topo");
    /* NVLink: the sum over both domains; scale-out: 72 NICs per half */
    assert_true(nvl_topo_bisection_bw(t, 144, NVL_FABRIC_NVLINK) ==
                2 * 36 * 900e9);
    assert_true(nvl_topo_bisection_bw(t, 144, NVL_FABRIC_SCALEOUT) ==
                72 * 50e9);
    /* 100 ranks: 72 + 28 GPUs on NVLink, halves of 50 over scale-out */
    assert_true(nvl_topo_bisection_bw(t, 100, NVL_FABRIC_NVLINK) ==
                (36 + 14) * 900e9);
    assert_true(nvl_topo_bisection_bw(t, 100, NVL_FABRIC_SCALEOUT) ==
                50 * 50e9);
    /* a job inside one rack does not use the scale-out network */
    assert_true(nvl_topo_bisection_bw(t, 72, NVL_FABRIC_SCALEOUT) == 0.0);
    assert_int_equal(nvl_topo_set(t, "scaleout.oversubscription=2"), NVL_OK);
    assert_true(nvl_topo_bisection_bw(t, 144, NVL_FABRIC_SCALEOUT) ==
                36 * 50e9);
    nvl_topo_free(t);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(nvl_algo_key(NVL_ALGO_RING), "ring");
    assert_string_equal(nvl_algo_key(NVL_ALGO_NVLS_TREE), "nvlstree");
    assert_string_equal(nvl_algo_key(NVL_ALGO_COUNT), "?");
    assert_string_equal(nvl_proto_key(NVL_PROTO_LL128), "ll128");
    assert_string_equal(nvl_proto_key(NVL_PROTO_COUNT), "?");
    assert_string_equal(nvl_fabric_name(NVL_FABRIC_SCALEOUT), "scaleout");
    assert_string_equal(nvl_fabric_name(NVL_FABRIC_COUNT), "?");
}

static void test_describe_json(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72x2-ib.topo");
    assert_int_equal(nvl_topo_set(t, "gpu.100.links_down=2"), NVL_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(nvl_topo_describe_json(t, 100, "x2", out), NVL_OK);
    fclose(out);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    if (root == NULL)
        print_error("invalid JSON at line %d: %s\n", err.line, err.text);
    assert_non_null(root);
    json_t *job = json_object_get(root, "job");
    assert_int_equal(json_integer_value(json_object_get(job, "ranks")), 100);
    assert_int_equal(json_integer_value(json_object_get(job, "domains")), 2);
    json_t *pairs = json_object_get(job, "rank_pairs");
    /* 72*71/2 + 28*27/2 pairs inside the racks, 72*28 across */
    assert_int_equal(json_integer_value(json_object_get(pairs, "nvlink")),
                     2556 + 378);
    assert_int_equal(json_integer_value(json_object_get(pairs, "scaleout")),
                     72 * 28);
    json_t *ov = json_object_get(root, "overrides");
    assert_int_equal(json_array_size(ov), 1);
    json_t *o = json_array_get(ov, 0);
    assert_int_equal(json_integer_value(json_object_get(o, "gpu")), 100);
    assert_int_equal(json_integer_value(json_object_get(o, "links_up")), 16);
    json_t *nvlink = json_object_get(json_object_get(root, "spec"), "nvlink");
    assert_true(json_real_value(json_object_get(nvlink, "link_bw")) == 50e9);
    json_decref(root);
    free(text);
    nvl_topo_free(t);
}

static void test_describe_names_fabrics(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72x2-ib.topo");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    nvl_topo_describe(t, 144, "x2", out);
    fclose(out);
    assert_non_null(strstr(text, "144 in 2 NVLink domain(s) of 72"));
    assert_non_null(strstr(text, "domain 1: ranks 72-143"));
    assert_non_null(strstr(text, "bisection of the job over scale-out"));
    free(text);
    nvl_topo_free(t);
}

/* --rank-plays die: the die view of a B200 package topology halves each
 * entry's resources, doubles the entries of a domain, tray and superchip,
 * joins a package's two dies by the die link, and splits a package's
 * overrides; one-die GPUs, a missing die link and rank counts that leave
 * a package half-played are refused with one message each. */
static void test_die_view(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
    assert_int_equal(nvl_topo_set(t, "gpu[3].links_down=3"), NVL_OK);
    uint64_t pkg_hash = nvl_topo_hash(t);
    assert_int_equal(nvl_topo_split_dies(t), NVL_OK);
    assert_true(t->die_view);
    assert_int_equal(t->gpus, 144);
    assert_true(t->gpu.hbm_bytes == 93000000000ull);
    assert_true(t->gpu.hbm_bw_bytes_per_s == 4e12);
    assert_true(t->gpu.bf16_flops_per_s == 1.25e15);
    assert_true(t->gpu.fp8_flops_per_s == 2.5e15);
    assert_int_equal(t->gpu.sm_count, 74);
    assert_int_equal(t->nvlink.links_per_gpu, 9);
    assert_true(nvl_topo_nvlink_bw(t, 0) == 450e9);
    assert_true(t->nvlink.nvls_bw_bytes_per_s == 270e9);
    assert_int_equal(t->nvlink.domain_gpus, 144);
    assert_int_equal(t->node.gpus_per_tray, 8);
    assert_int_equal(t->node.gpus_per_superchip, 4);
    assert_true(t->c2c.bw_bytes_per_s == 112.5e9);
    assert_true(t->scaleout.nic_bw_bytes_per_s == 25e9);
    /* package 3 lost 3 links: 2 on its die 0 (entry 6), 1 on die 1 */
    assert_int_equal(nvl_topo_links_up(t, 6), 7);
    assert_int_equal(nvl_topo_links_up(t, 7), 8);
    assert_int_equal(nvl_topo_package_of(t, 7), 3);
    assert_int_equal(nvl_topo_fabric(t, 0, 1), NVL_FABRIC_DIE);
    assert_int_equal(nvl_topo_fabric(t, 1, 2), NVL_FABRIC_NVLINK);
    assert_true(nvl_topo_p2p_bw(t, 0, 1) == 5e12);
    assert_int_equal(nvl_topo_p2p_lat_ps(t, 0, 1), 50000);
    assert_int_equal(nvl_topo_p2p_lat_ps(t, 1, 2), t->nvlink.hop_lat_ps);
    assert_true(nvl_topo_hash(t) != pkg_hash);
    assert_int_equal(nvl_topo_check_die_ranks(t, 144), NVL_OK);
    assert_int_equal(nvl_topo_check_die_ranks(t, 3), NVL_ERR_INVALID);
    assert_string_equal(reports.last,
                        "--rank-plays die: 3 ranks do not fill whole packages "
                        "of 2 dies (topology 'gb200-nvl72'): a package's dies "
                        "are played together, so the rank count must be a "
                        "multiple of 2 (here 2 or 4)");
    reports.count = 0;
    nvl_topo_free(t);

    nvl_topo_t *h = load_shipped("hgx-h200.topo");
    assert_int_equal(nvl_topo_split_dies(h), NVL_ERR_INVALID);
    assert_string_equal(reports.last,
                        "--rank-plays die: topology 'hgx-h200' has one die per "
                        "GPU ([gpu] dies = 1); its ranks can only play whole "
                        "GPUs (--rank-plays gpu)");
    reports.count = 0;
    assert_false(h->die_view);
    assert_int_equal(h->gpus, 8);
    assert_int_equal(nvl_topo_check_die_ranks(h, 3), NVL_OK);
    nvl_topo_free(h);

    nvl_topo_t *b = load_shipped("hgx-b200.topo");
    assert_int_equal(nvl_topo_set(b, "gpu.die_link_bw=0B/s"), NVL_OK);
    assert_int_equal(nvl_topo_split_dies(b), NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "set [gpu] die_link_bw"));
    reports.count = 0;
    nvl_topo_free(b);
}

#define T(f)                                                                   \
    cmocka_unit_test_setup_teardown(f, capture_reports, release_reports)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_die_view),
        T(test_fabric_across_domains),
        T(test_bisection_nvl72),
        T(test_bisection_two_racks),
        T(test_names),
        T(test_describe_json),
        T(test_describe_names_fabrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
