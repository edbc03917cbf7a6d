/* Unit tests of the topology module (src/topo): the [gpu N] override
 * sections and --set what-ifs. */
#include "topo_test.h"

static void test_override_sections(void **state)
{
    (void)state;
    nvl_topo_t *t = load_data("overrides.topo");
    /* 2 trays, 1 down: every GPU keeps 9 of its 18 links */
    static const uint32_t links_up[8] = {9, 9, 7, 7, 7, 9, 9, 9};
    static const double hbm_scale[8] = {0.5, 0.5, 0.5, 0.25,
                                        0.5, 0.5, 0.5, 0.5};
    for (uint32_t g = 0; g < 8; g++) {
        assert_int_equal(nvl_topo_links_up(t, g), links_up[g]);
        assert_true(nvl_topo_hbm_bw(t, g) == 3e12 * hbm_scale[g]);
        double link_scale = g >= 2 && g <= 4 ? 0.5 : 1.0;
        assert_true(nvl_topo_nvlink_bw(t, g) ==
                    links_up[g] * 50e9 * link_scale);
        assert_true(nvl_topo_nic_bw(t, g) == (g == 3 ? 25e9 : 50e9));
        assert_true(nvl_topo_gpu_flops(t, g, 1e15) ==
                    (g == 5 ? 0.8e15 : 1e15));
    }
    nvl_topo_free(t);
}

static void test_set_section_key(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
    assert_int_equal(nvl_topo_set(t, "nvlink.link_bw=100GB/s"), NVL_OK);
    expect_no_reports();
    assert_true(t->nvlink.link_bw_bytes_per_s == 100e9);
    assert_true(nvl_topo_nvlink_bw(t, 0) == 1800e9);
    nvl_topo_free(t);
}

static void test_set_one_gpu(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
    assert_int_equal(nvl_topo_set(t, "gpu[17].clock_scale=0.8"), NVL_OK);
    expect_no_reports();
    assert_true(t->overrides[17].clock_scale == 0.8);
    assert_true(nvl_topo_gpu_flops(t, 17, 2.5e15) == 0.8 * 2.5e15);
    assert_true(nvl_topo_gpu_flops(t, 16, 2.5e15) == 2.5e15);
    assert_true(nvl_topo_gpu_flops(t, 18, 2.5e15) == 2.5e15);
    nvl_topo_free(t);
}

static void test_set_gpu_range(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
    assert_int_equal(nvl_topo_set(t, "gpu.0-3.links_down=2"), NVL_OK);
    expect_no_reports();
    for (uint32_t g = 0; g < 4; g++) {
        assert_int_equal(nvl_topo_links_up(t, g), 16);
        assert_true(nvl_topo_nvlink_bw(t, g) == 16 * 50e9);
    }
    assert_int_equal(nvl_topo_links_up(t, 4), 18);
    assert_true(nvl_topo_nvlink_bw(t, 4) == 900e9);
    /* the slower end of a pair sets its bandwidth */
    assert_true(nvl_topo_p2p_bw(t, 3, 4) == 800e9);
    nvl_topo_free(t);
}

static void test_set_bare_unique_key(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
    assert_int_equal(nvl_topo_set(t, "switch_trays_down=1"), NVL_OK);
    expect_no_reports();
    assert_int_equal(t->nvlink.switch_trays_down, 1);
    /* each of the 9 trays carries 2 of every GPU's 18 links */
    for (uint32_t g = 0; g < t->gpus; g++)
        assert_int_equal(nvl_topo_links_up(t, g), 16);
    nvl_topo_free(t);
}

static void test_set_dotted_nccl_keys(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
    assert_int_equal(nvl_topo_set(t, "nccl.ring.ll.base_lat=1us"), NVL_OK);
    assert_int_equal(nvl_topo_set(t, "tree.simple.net_lat=20us"), NVL_OK);
    expect_no_reports();
    assert_int_equal(t->nccl.base_lat_ps[NVL_ALGO_RING][NVL_PROTO_LL],
                     1000000);
    assert_int_equal(t->nccl.net_lat_ps[NVL_ALGO_TREE][NVL_PROTO_SIMPLE],
                     20000000);
    nvl_topo_free(t);
}

/* Every text value --set accepts exports and reloads to an equal
 * topology; the others are refused and change nothing. */
static void test_set_text_round_trips(void **state)
{
    (void)state;
    char long_text[200];
    memset(long_text, 'x', sizeof long_text);
    const char *values[] = {"what ;f", "a;b", "a #b", "a#b", "\t", "x\ty",
                            " lead", "mid dle", "caf\xc3\xa9",
                            "; small-overrides", "#1", NULL, NULL, NULL};
    size_t nv = 11;
    for (size_t len = 127; len <= 160; len += 16) {
        char *v = malloc(len + 1);
        memcpy(v, long_text, len);
        v[len] = '\0';
        values[nv++] = v;
    }
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        if (k->field != NVL_FIELD_STR)
            continue;
        for (size_t j = 0; j < nv; j++) {
            nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
            char *before = export_text(t);
            char assignment[512];
            snprintf(assignment, sizeof assignment, "%s.%s=%s", k->section,
                     k->key, values[j]);
            reports.count = 0;
            if (nvl_topo_set(t, assignment) != NVL_OK) {
                assert_int_equal(reports.count, 1); /* refused, once */
                reports.count = 0;
                reports.text[0] = '\0';
                char *after = export_text(t);
                assert_string_equal(before, after);
                free(after);
            } else {
                char *text = export_text(t);
                nvl_topo_t *back = NULL;
                assert_int_equal(nvl_topo_load_string(text, "export", &back),
                                 NVL_OK);
                if (!nvl_topo_equal(t, back))
                    fail_msg("--set %s does not survive export and reload",
                             assignment);
                assert_true(nvl_topo_hash(t) == nvl_topo_hash(back));
                nvl_topo_free(back);
                free(text);
            }
            free(before);
            nvl_topo_free(t);
        }
    }
    for (size_t j = 11; j < nv; j++) /* the long ones were allocated */
        free((char *)values[j]);
}

static void test_set_value_with_trailing_blank(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
    assert_int_equal(nvl_topo_set(t, "nvlink.nvls=no "), NVL_OK);
    assert_int_equal(nvl_topo_set(t, "nvlink.hop_lat= 1us "), NVL_OK);
    expect_no_reports();
    assert_false(t->nvlink.nvls);
    assert_int_equal(t->nvlink.hop_lat_ps, 1000000);
    nvl_topo_free(t);
}

/* Applies a failing --set and checks that nothing changed and that the
 * one report contains the NULL-terminated strings. */
static void expect_set_error(const char *assignment, ...)
{
    nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
    char *before = export_text(t);
    uint64_t hash = nvl_topo_hash(t);
    assert_int_equal(nvl_topo_set(t, assignment), NVL_ERR_INVALID);
    char *after = export_text(t);
    assert_string_equal(before, after);
    assert_true(nvl_topo_hash(t) == hash);
    char origin[256];
    snprintf(origin, sizeof origin, "--set %s", assignment);
    va_list ap;
    va_start(ap, assignment);
    expect_report_v(origin, 0, ap);
    va_end(ap);
    free(after);
    free(before);
    nvl_topo_free(t);
}

static void test_set_ambiguous_bare_key(void **state)
{
    (void)state;
    expect_set_error("bw=1GB/s", "key 'bw' is in several sections",
                     "write section.bw", NULL);
}

static void test_set_bad_value_changes_nothing(void **state)
{
    (void)state;
    expect_set_error("nvlink.link_bw=fast", "[nvlink] link_bw = fast",
                     "does not start with a number", "e.g. 50GB/s", NULL);
}

static void test_set_invalid_model_changes_nothing(void **state)
{
    (void)state;
    expect_set_error("nvlink.switch_trays_down=9", "leaves no tray up", NULL);
    capture_reports(NULL);
    expect_set_error("gpu.0-3.links_down=18", "GPU 0 has no NVLink link up",
                     NULL);
    capture_reports(NULL);
    expect_set_error("nvlink.domain_size=7", "must divide", NULL);
}

static void test_set_unknown_names(void **state)
{
    (void)state;
    expect_set_error("nvlink.bogus=1", "unknown key 'bogus' in [nvlink]",
                     "expected one of: links, link_bw", NULL);
    capture_reports(NULL);
    expect_set_error("bogus.key=1", "unknown section [bogus]", NULL);
    capture_reports(NULL);
    expect_set_error("bogus=1", "unknown key 'bogus'",
                     "expected section.key", NULL);
    capture_reports(NULL);
    expect_set_error("gpu[3].clock=0.8",
                     "unknown key 'clock' in GPU override section", NULL);
    capture_reports(NULL);
    expect_set_error("gpu.x.clock_scale=0.8",
                     "malformed GPU override section [gpu.x]", NULL);
}

static void test_set_needs_equals(void **state)
{
    (void)state;
    expect_set_error("nvlink.link_bw", "expected section.key=value", NULL);
    capture_reports(NULL);
    expect_set_error("=1", "expected section.key=value", NULL);
}

static void test_set_gpu_beyond_count(void **state)
{
    (void)state;
    expect_set_error("gpu[72].clock_scale=0.8",
                     "GPU 72 does not exist (the system has 72 GPUs)", NULL);
}

static void test_set_cannot_change_gpu_count(void **state)
{
    (void)state;
    expect_set_error("system.gpus=8", "the GPU count cannot be changed",
                     NULL);
}

#define T(f)                                                                   \
    cmocka_unit_test_setup_teardown(f, capture_reports, release_reports)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_override_sections),
        T(test_set_section_key),
        T(test_set_one_gpu),
        T(test_set_gpu_range),
        T(test_set_bare_unique_key),
        T(test_set_dotted_nccl_keys),
        T(test_set_value_with_trailing_blank),
        T(test_set_text_round_trips),
        T(test_set_ambiguous_bare_key),
        T(test_set_bad_value_changes_nothing),
        T(test_set_invalid_model_changes_nothing),
        T(test_set_unknown_names),
        T(test_set_needs_equals),
        T(test_set_gpu_beyond_count),
        T(test_set_cannot_change_gpu_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
