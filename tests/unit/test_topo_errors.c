/* Unit tests of the topology module (src/topo): every kind of bad input is
 * refused with one report that names file:line and what was expected. */
#include "topo_test.h"

static void test_error_bad_unit(void **state)
{
    (void)state;
    expect_load_error("bad-unit.topo", 20, "[nvlink] link_bw = 50GBs",
                      "unknown unit 'GBs'", "expected a bandwidth", "GB/s",
                      "e.g. 50GB/s", NULL);
}

static void test_error_unknown_key(void **state)
{
    (void)state;
    expect_load_error("bad-unknown-key.topo", 21,
                      "unknown key 'link_speed' in [nvlink]",
                      "expected one of: links, link_bw, hop_lat", NULL);
}

static void test_error_unknown_section(void **state)
{
    (void)state;
    expect_load_error("bad-unknown-section.topo", 18,
                      "unknown section [nvlnk]",
                      "expected system, gpu, nvlink, c2c", "gpu.N", NULL);
}

static void test_error_unknown_empty_section(void **state)
{
    (void)state;
    expect_load_error("bad-unknown-section-empty.topo", 29,
                      "unknown section [scaleot]", "scaleout", NULL);
}

static void test_error_missing_section(void **state)
{
    (void)state;
    expect_load_error("bad-missing-section.topo", 0,
                      "missing section [nvlink]", "links, link_bw", NULL);
}

static void test_error_missing_required_key(void **state)
{
    (void)state;
    /* reported at the section's header */
    expect_load_error("bad-missing-key.topo", 7,
                      "section [gpu] lacks required key 'hbm'",
                      "e.g. hbm = 186GB", NULL);
}

static void test_error_out_of_range_gpus(void **state)
{
    (void)state;
    expect_load_error("bad-range-gpus.topo", 5, "[system] gpus = 0",
                      "out of range (expected 1 to 4096)", NULL);
}

static void test_error_out_of_range_oversubscription(void **state)
{
    (void)state;
    expect_load_error("bad-range-oversubscription.topo", 29,
                      "[scaleout] oversubscription = 0.5",
                      "out of range (expected 1 to 1000)", NULL);
}

static void test_error_duplicate_key(void **state)
{
    (void)state;
    expect_load_error("bad-duplicate-key.topo", 22,
                      "duplicate key 'links' in [nvlink]",
                      "first set on line 19", NULL);
}

static void test_error_key_before_section(void **state)
{
    (void)state;
    expect_load_error("bad-key-before-section.topo", 3,
                      "key 'gpus' before any [section] header", NULL);
}

static void test_error_empty_value(void **state)
{
    (void)state;
    expect_load_error("bad-empty-value.topo", 20,
                      "[nvlink] link_bw has no value",
                      NULL);
}

static void test_error_malformed_line(void **state)
{
    (void)state;
    expect_load_error("bad-malformed-line.topo", 19, "malformed line",
                      "expected '[section]', 'key = value'", NULL);
}

static void test_error_unclosed_section_header(void **state)
{
    (void)state;
    expect_load_error("bad-unclosed-section.topo", 18,
                      "unclosed section header '[nvlink'",
                      "expected '[section]'",
                      NULL);
}

static void test_error_indented_line(void **state)
{
    (void)state;
    expect_load_error("bad-indented-line.topo", 19, "indented line",
                      "start keys and sections at column 1", NULL);
}

static void test_error_long_line(void **state)
{
    (void)state;
    expect_load_error("bad-long-line.topo", 8,
                      "line is 200 characters long (at most 199)", NULL);
}

/* A line of exactly 199 characters is allowed and must not shift the line
 * numbers of later reports (inih's 200-byte buffer once split it). */
static void test_line_of_199_chars_keeps_line_numbers(void **state)
{
    (void)state;
    expect_load_error("bad-after-199-char-line.topo", 14,
                      "[gpu] sms = 100 SMs", "a count takes no unit", NULL);
}

static void test_error_truncated_in_section(void **state)
{
    (void)state;
    expect_load_error("bad-truncated-section.topo", 18,
                      "section [nvlink] lacks required key 'hop_lat'", NULL);
}

static void test_error_truncated_in_value(void **state)
{
    (void)state;
    expect_load_error("bad-truncated-value.topo", 21,
                      "[nvlink] hop_lat = 0.5u", "unknown unit 'u'",
                      "expected a time", NULL);
}

static void test_error_truncated_in_key(void **state)
{
    (void)state;
    expect_load_error("bad-truncated-key.topo", 21, "malformed line", NULL);
}

static void test_error_truncated_in_header(void **state)
{
    (void)state;
    expect_load_error("bad-truncated-header.topo", 18,
                      "unclosed section header '[nvl'", NULL);
}

static void test_error_override_beyond_gpu_count(void **state)
{
    (void)state;
    expect_load_error("bad-override-beyond.topo", 30,
                      "GPU override for GPU 8 but the system has 8 GPUs (0..7)",
                      NULL);
}

static void test_error_malformed_override_section(void **state)
{
    (void)state;
    expect_load_error("bad-override-malformed.topo", 29,
                      "malformed GPU override section [gpu.x]",
                      "expected [gpu.N] or [gpu.A-B]", NULL);
}

static void test_error_reversed_override_range(void **state)
{
    (void)state;
    expect_load_error("bad-override-reversed.topo", 29,
                      "malformed GPU override section [gpu.5-3]",
                      "0 <= A <= B", NULL);
}

static void test_error_unknown_override_key(void **state)
{
    (void)state;
    expect_load_error("bad-override-unknown-key.topo", 30,
                      "unknown key 'clock' in GPU override section [gpu.3]",
                      "expected one of: clock_scale, hbm_bw_scale, links_down",
                      NULL);
}

static void test_error_domain_size_must_divide_gpus(void **state)
{
    (void)state;
    expect_load_error("bad-domain-size.topo", 24,
                      "[nvlink] domain_size = 3 must divide [system] gpus = 8",
                      NULL);
}

static void test_error_nvls_needs_switches(void **state)
{
    (void)state;
    expect_load_error("bad-nvls-without-switches.topo", 23,
                      "nvls and switch_trays_down need NVLink switches", NULL);
}

static void test_error_switch_trays_down_leaves_none(void **state)
{
    (void)state;
    expect_load_error("bad-switch-trays-down.topo", 24,
                      "switch_trays_down = 1 leaves no tray up "
                      "(switch_trays = 1)",
                      NULL);
}

static void test_error_domains_need_scaleout(void **state)
{
    (void)state;
    expect_load_error("bad-no-scaleout.topo", 24,
                      "16 GPUs in NVLink domains of 8 need a scale-out "
                      "network: set [scaleout] nic_bw",
                      NULL);
}

static void test_error_all_links_down(void **state)
{
    (void)state;
    expect_load_error("bad-all-links-down.topo", 31,
                      "GPU 2 has no NVLink link up "
                      "(links = 18, links_down = 18",
                      NULL);
}

/* The line of the first line of text that is exactly `line`, 0 if none. */
static int line_of(const char *text, const char *line)
{
    size_t n = strlen(line);
    int number = 1;
    for (const char *p = text; *p != '\0'; number++) {
        if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
            return number;
        p = strchr(p, '\n');
        if (p == NULL)
            break;
        p++;
    }
    return 0;
}

/* The other cross-key rules, on the key table test's base: each report
 * names the line of the key that breaks the rule. */
static void test_error_cross_key_rules_name_the_key_line(void **state)
{
    (void)state;
    static const struct {
        kv_t change, also; /* the rule's key, then another if needed */
        const char *expect;
    } cases[] = {
        {{"node", "gpus_per_tray", "3"}, {NULL, NULL, NULL},
         "[node] gpus_per_tray = 3 must divide [nvlink] domain_size = 16"},
        {{"node", "gpus_per_superchip", "3"}, {NULL, NULL, NULL},
         "[node] gpus_per_superchip = 3 must divide gpus_per_tray = 4"},
        {{"nvlink", "switch_trays", "0"}, {NULL, NULL, NULL},
         "switch_trays = 0 (GPUs linked directly) allows domain_size 1 or 2, "
         "not 16"},
        {{"nvlink", "switch_chips_per_tray", "0"}, {NULL, NULL, NULL},
         "switch_chips_per_tray must be at least 1 when switch_trays = 2"},
        {{"nvlink", "links", "13"}, {NULL, NULL, NULL},
         "links = 13 must be a multiple of switch_trays = 2"},
        {{"nvlink", "nvls_bw", "0B/s"}, {"nvlink", "nvls", "yes"},
         "nvls = yes needs nvls_bw > 0"},
        {{"scaleout", "nic_bw", "0B/s"}, {"system", "gpus", "32"},
         "32 GPUs in NVLink domains of 16 need a scale-out network"},
    };
    for (size_t i = 0; i < N_ELEMS(cases); i++) {
        capture_reports(NULL);
        kv_t changes[2] = {cases[i].change, cases[i].also};
        char *text = base_text_changed(changes, changes[1].key ? 2 : 1, NULL);
        char line[160];
        snprintf(line, sizeof line, "%s = %s", changes[0].key,
                 changes[0].value);
        int number = line_of(text, line);
        assert_true(number > 0);
        nvl_topo_t *t = NULL;
        assert_int_equal(nvl_topo_load_string(text, "rules", &t),
                         NVL_ERR_INVALID);
        assert_null(t);
        expect_report("rules", number, cases[i].expect, NULL);
        free(text);
    }
}

static void test_error_missing_file(void **state)
{
    (void)state;
    nvl_topo_t *t = NULL;
    const char *path = DATA_DIR "/no-such-file.topo";
    assert_int_equal(nvl_topo_load(path, &t), NVL_ERR_IO);
    assert_null(t);
    expect_report(path, 0, "cannot open topology file", NULL);
}

static void test_error_nul_byte(void **state)
{
    (void)state;
    char path[] = "/tmp/nvlemu-test-topo-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char text[] = "[system]\nname = x\0y\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (int)sizeof text - 1);
    close(fd);
    nvl_topo_t *t = NULL;
    assert_int_equal(nvl_topo_load(path, &t), NVL_ERR_INVALID);
    assert_null(t);
    expect_report(path, 0, "NUL byte", NULL);
    unlink(path);
}

/* ---- (d) overrides, --set and derived quantities ----------------------- */

#define T(f)                                                                   \
    cmocka_unit_test_setup_teardown(f, capture_reports, release_reports)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_error_bad_unit),
        T(test_error_unknown_key),
        T(test_error_unknown_section),
        T(test_error_unknown_empty_section),
        T(test_error_missing_section),
        T(test_error_missing_required_key),
        T(test_error_out_of_range_gpus),
        T(test_error_out_of_range_oversubscription),
        T(test_error_duplicate_key),
        T(test_error_key_before_section),
        T(test_error_empty_value),
        T(test_error_malformed_line),
        T(test_error_unclosed_section_header),
        T(test_error_indented_line),
        T(test_error_long_line),
        T(test_line_of_199_chars_keeps_line_numbers),
        T(test_error_truncated_in_section),
        T(test_error_truncated_in_value),
        T(test_error_truncated_in_key),
        T(test_error_truncated_in_header),
        T(test_error_override_beyond_gpu_count),
        T(test_error_malformed_override_section),
        T(test_error_reversed_override_range),
        T(test_error_unknown_override_key),
        T(test_error_domain_size_must_divide_gpus),
        T(test_error_nvls_needs_switches),
        T(test_error_switch_trays_down_leaves_none),
        T(test_error_domains_need_scaleout),
        T(test_error_all_links_down),
        T(test_error_cross_key_rules_name_the_key_line),
        T(test_error_missing_file),
        T(test_error_nul_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
