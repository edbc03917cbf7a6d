/* Unit tests of the topology module (src/topo): the shipped files load and
 * round-trip through the canonical export, and every key of the key table
 * reaches its field. */
#include "topo_test.h"

static void test_shipped_files_load_and_round_trip(void **state)
{
    (void)state;
    DIR *dir = opendir(NVL_TOPOLOGY_DIR);
    assert_non_null(dir);
    char *names[64];
    size_t n = 0;
    for (struct dirent *e = readdir(dir); e != NULL; e = readdir(dir)) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".topo") == 0) {
            assert_true(n < N_ELEMS(names));
            names[n++] = strdup(e->d_name);
        }
    }
    closedir(dir);
    qsort(names, n, sizeof names[0], compare_names);
    assert_true(n >= 6); /* gb200-nvl72, its x2, nvlink6, hgx-*, h200-nvl2 */
    for (size_t i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", NVL_TOPOLOGY_DIR, names[i]);
        check_round_trip(path);
        free(names[i]);
    }
}

static void test_overrides_round_trip(void **state)
{
    (void)state;
    check_round_trip(DATA_DIR "/overrides.topo");
}

static void test_export_groups_equal_overrides(void **state)
{
    (void)state;
    nvl_topo_t *t = load_data("overrides.topo");
    char *text = export_text(t);
    /* GPUs 0-1 and 6-7 only have the half HBM bandwidth of [gpu.0-7] */
    assert_non_null(strstr(text, "\n[gpu.0-1]\nhbm_bw_scale = 0.5\n\n"));
    assert_non_null(strstr(text, "\n[gpu.6-7]\nhbm_bw_scale = 0.5\n"));
    assert_non_null(strstr(text, "\n[gpu.2]\nhbm_bw_scale = 0.5\n"
                                 "links_down = 2\nlink_bw_scale = 0.5\n"));
    assert_non_null(strstr(text, "\n[gpu.3]\nhbm_bw_scale = 0.25\n"
                                 "links_down = 2\nlink_bw_scale = 0.5\n"
                                 "nic_bw_scale = 0.5\n"));
    assert_non_null(strstr(text, "\n[gpu.5]\nclock_scale = 0.8\n"
                                 "hbm_bw_scale = 0.5\n"));
    free(text);
    nvl_topo_free(t);
}

static void test_gb200_nvl72_values(void **state)
{
    (void)state;
    nvl_topo_t *t = load_shipped("gb200-nvl72.topo");
    assert_string_equal(t->name, "gb200-nvl72");
    assert_int_equal(t->gpus, 72);
    assert_int_equal(t->gpu.hbm_bytes, 186000000000ull);
    assert_true(t->gpu.hbm_bw_bytes_per_s == 8e12);
    assert_true(t->gpu.bf16_flops_per_s == 2.5e15);
    assert_int_equal(t->gpu.sm_count, 148);
    assert_int_equal(t->gpu.kernel_overhead_ps, 3300000);
    assert_int_equal(t->gpu.dies, 2);
    assert_int_equal(t->nvlink.links_per_gpu, 18);
    assert_true(t->nvlink.link_bw_bytes_per_s == 50e9);
    assert_int_equal(t->nvlink.hop_lat_ps, 200000);
    assert_int_equal(t->nvlink.switch_trays, 9);
    assert_true(t->nvlink.nvls);
    assert_int_equal(t->nvlink.domain_gpus, 72);
    assert_true(t->scaleout.nic_bw_bytes_per_s == 50e9); /* 400Gb/s */
    assert_int_equal(t->node.gpus_per_superchip, 2);
    double exp_rate;
    char why[128];
    assert_int_equal(nvl_qty_parse(NVL_QTY_RATE, "4.99648Top/s", &exp_rate,
                                   why, sizeof why),
                     NVL_OK);
    assert_true(t->gpu.exp_ops_per_s == exp_rate);
    nvl_topo_free(t);
}

static void test_equal_and_hash_see_one_change(void **state)
{
    (void)state;
    nvl_topo_t *a = load_shipped("gb200-nvl72.topo");
    nvl_topo_t *b = load_shipped("gb200-nvl72.topo");
    assert_true(nvl_topo_equal(a, b));
    assert_true(nvl_topo_hash(a) == nvl_topo_hash(b));
    assert_int_equal(nvl_topo_set(b, "gpu[40].nic_bw_scale=0.5"), NVL_OK);
    assert_false(nvl_topo_equal(a, b));
    assert_true(nvl_topo_hash(a) != nvl_topo_hash(b));
    nvl_topo_t *c = load_shipped("nvl72-nvlink6.topo");
    assert_false(nvl_topo_equal(a, c));
    assert_true(nvl_topo_hash(a) != nvl_topo_hash(c));
    nvl_topo_free(c);
    nvl_topo_free(b);
    nvl_topo_free(a);
}

/* Windows line ends read as Unix ones, with the same line numbers. */
static void test_crlf_line_ends(void **state)
{
    (void)state;
    const char *names[] = {"small.topo", "bad-after-199-char-line.topo"};
    nvl_topo_t *lf = load_data("small.topo");
    for (size_t i = 0; i < N_ELEMS(names); i++) {
        char *text = read_data(names[i]);
        char *crlf = calloc(2, strlen(text) + 1);
        assert_non_null(crlf);
        char *o = crlf;
        for (const char *p = text; *p != '\0'; p++) {
            if (*p == '\n')
                *o++ = '\r';
            *o++ = *p;
        }
        nvl_topo_t *t = NULL;
        nvl_status_t st = nvl_topo_load_string(crlf, "crlf", &t);
        if (i == 0) {
            assert_int_equal(st, NVL_OK);
            expect_no_reports();
            assert_true(nvl_topo_equal(lf, t));
            nvl_topo_free(t);
        } else {
            assert_int_equal(st, NVL_ERR_INVALID);
            expect_report("crlf", 14, "sms = 100 SMs", NULL);
        }
        free(crlf);
        free(text);
    }
    nvl_topo_free(lf);
}

/* ---- (b) the key table ------------------------------------------------- */

/* New values for keys that cross-key rules tie to others (the base + 1
 * would break a rule) and for text. */
static const kv_t tied_values[] = {
    {"system", "name", "renamed"},
    {"system", "description", "another description"},
    {"system", "gpus", "32"},            /* two domains of 16, with a NIC */
    {"nvlink", "links", "24"},           /* a multiple of 2 trays */
    {"nvlink", "domain_size", "8"},      /* divides 16, holds 2 trays of 4 */
    {"node", "gpus_per_tray", "8"},      /* divides 16, 4 superchips of 2 */
    {"node", "gpus_per_superchip", "4"}, /* divides 4 */
};

static double field_value(const nvl_topo_key_t *k, const void *base)
{
    const char *f = (const char *)base + k->offset;
    switch (k->field) {
    case NVL_FIELD_U32: return *(const uint32_t *)f;
    case NVL_FIELD_U64: return (double)*(const uint64_t *)f;
    case NVL_FIELD_I64: return (double)*(const int64_t *)f;
    case NVL_FIELD_F64: return *(const double *)f;
    case NVL_FIELD_BOOL: return *(const bool *)f ? 1.0 : 0.0;
    case NVL_FIELD_STR: break;
    }
    return 0.0;
}

/* A valid value for key k that differs from what `base` holds: from
 * tied_values, else the opposite yes/no, the count + 1, or 1.5 times the
 * quantity (its example when it is 0), kept inside the key's range. */
static void new_value(const nvl_topo_key_t *k, const void *base, char *buf,
                      size_t len)
{
    for (size_t i = 0; i < N_ELEMS(tied_values); i++) {
        if (strcmp(tied_values[i].section, k->section) == 0 &&
            strcmp(tied_values[i].key, k->key) == 0) {
            snprintf(buf, len, "%s", tied_values[i].value);
            return;
        }
    }
    if (k->field == NVL_FIELD_STR) {
        print_error("text key %s.%s needs a value in tied_values\n",
                    k->section, k->key);
        fail();
    }
    double v = field_value(k, base), c;
    if (k->kind == NVL_QTY_BOOL) {
        snprintf(buf, len, "%s", v != 0.0 ? "no" : "yes");
        return;
    }
    if (k->kind == NVL_QTY_COUNT) {
        c = v + 1 <= k->max ? v + 1 : v - 1;
    } else if (v > 0) {
        c = v * 1.5 <= k->max ? v * 1.5 : v / 2;
    } else {
        char why[256];
        assert_int_equal(nvl_qty_parse(k->kind, k->example, &c, why,
                                       sizeof why),
                         NVL_OK);
    }
    assert_true(c >= k->min && c <= k->max);
    nvl_qty_format(k->kind, c, buf, len);
}

static void test_every_key_is_honoured(void **state)
{
    (void)state;
    nvl_topo_t *base = load_base();
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        char value[128], origin[160];
        new_value(k, base, value, sizeof value);
        kv_t change = {k->section, k->key, value};
        snprintf(origin, sizeof origin, "[%s] %s = %s", k->section, k->key,
                 value);
        char *text = base_text(&change, NULL);
        nvl_topo_t *t = load_text(text, origin);

        nvl_topo_t want = *base; /* the base with only this field parsed */
        char why[256];
        assert_int_equal(nvl_topo_key_parse(k, value, &want, why, sizeof why),
                         NVL_OK);
        if (!field_equal(k, t, &want) || field_equal(k, t, base)) {
            print_error("%s did not reach its field\n", origin);
            fail();
        }
        for (size_t j = 0; j < nvl_topo_key_count; j++) {
            if (j != i && !field_equal(&nvl_topo_keys[j], t, base)) {
                print_error("%s also changed [%s] %s\n", origin,
                            nvl_topo_keys[j].section, nvl_topo_keys[j].key);
                fail();
            }
        }
        nvl_topo_free(t);
        free(text);
    }
    nvl_topo_free(base);
}

/* --set section.key=value gives what the same value in the file gives. */
static void test_set_honours_every_key(void **state)
{
    (void)state;
    nvl_topo_t *base = load_base();
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        if (k->offset == offsetof(nvl_topo_t, gpus))
            continue; /* cannot change: test_set_cannot_change_gpu_count */
        char value[128], assignment[256];
        new_value(k, base, value, sizeof value);
        kv_t change = {k->section, k->key, value};
        snprintf(assignment, sizeof assignment, "%s.%s=%s", k->section,
                 k->key, value);
        char *text = base_text(&change, NULL);
        nvl_topo_t *from_file = load_text(text, assignment);
        nvl_topo_t *t = load_base();
        nvl_status_t st = nvl_topo_set(t, assignment);
        if (st != NVL_OK)
            print_error("nvl_topo_set(\"%s\") failed:\n%s\n", assignment,
                        reports.text);
        assert_int_equal(st, NVL_OK);
        if (!nvl_topo_equal(t, from_file)) {
            print_error("--set %s differs from the file\n", assignment);
            fail();
        }
        nvl_topo_free(t);
        nvl_topo_free(from_file);
        free(text);
    }
    nvl_topo_free(base);
}

static void test_every_override_key_is_honoured(void **state)
{
    (void)state;
    nvl_topo_t *base = load_base();
    for (size_t i = 0; i < nvl_topo_gpu_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_gpu_keys[i];
        char value[64], extra[160];
        new_value(k, &nvl_topo_override_none, value, sizeof value);
        snprintf(extra, sizeof extra, "[gpu.3]\n%s = %s\n", k->key, value);
        char *text = base_text(NULL, extra);
        nvl_topo_t *t = load_text(text, extra);

        nvl_gpu_override_t want = nvl_topo_override_none;
        char why[256];
        assert_int_equal(nvl_topo_key_parse(k, value, &want, why, sizeof why),
                         NVL_OK);
        assert_true(override_equal(&t->overrides[3], &want));
        assert_false(override_equal(&want, &nvl_topo_override_none));
        for (uint32_t g = 0; g < t->gpus; g++)
            if (g != 3)
                assert_true(override_equal(&t->overrides[g],
                                           &nvl_topo_override_none));
        for (size_t j = 0; j < nvl_topo_key_count; j++)
            assert_true(field_equal(&nvl_topo_keys[j], t, base));
        nvl_topo_free(t);
        free(text);
    }
    nvl_topo_free(base);
}

/* Only the required keys: everything else takes the table's default. */
static void test_defaults_from_key_table(void **state)
{
    (void)state;
    static const char minimal[] =
        "[system]\nname = minimal\ngpus = 2\n"
        "[gpu]\nhbm = 80GB\nhbm_bw = 3TB/s\nbf16_flops = 1PFLOP/s\n"
        "fp8_flops = 2PFLOP/s\nsms = 100\nclock = 1.5GHz\n"
        "exp_rate = 2Top/s\nkernel_overhead = 3us\nlaunch_overhead = 4us\n"
        "[nvlink]\nlinks = 4\nlink_bw = 50GB/s\nhop_lat = 0.5us\n"
        "switch_trays = 0\ndomain_size = 2\n"
        "[node]\ngpus_per_tray = 2\n";
    nvl_topo_t *t = load_text(minimal, "minimal");
    size_t defaulted = 0;
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        if (k->dflt == NULL)
            continue;
        nvl_topo_t want = *t;
        char why[256];
        if (k->field == NVL_FIELD_STR)
            assert_string_equal((const char *)t + k->offset, k->dflt);
        else
            assert_int_equal(nvl_topo_key_parse(k, k->dflt, &want, why,
                                                sizeof why),
                             NVL_OK);
        if (!field_equal(k, t, &want)) {
            print_error("[%s] %s is not its default %s\n", k->section,
                        k->key, k->dflt);
            fail();
        }
        defaulted++;
    }
    assert_true(defaulted > 0);
    for (uint32_t g = 0; g < t->gpus; g++)
        assert_true(override_equal(&t->overrides[g], &nvl_topo_override_none));
    /* a few by name, against NCCL's tuning.cc */
    assert_true(t->nccl.base_lat_ps[NVL_ALGO_RING][NVL_PROTO_LL] == 6600000);
    assert_true(t->scaleout.oversubscription == 1.0);
    assert_int_equal(t->gpu.dies, 1);
    assert_false(t->nvlink.nvls);
    nvl_topo_free(t);
}

static void test_key_reference_lists_every_key(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    nvl_topo_keys_markdown(out);
    fclose(out);
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        char cell[96];
        snprintf(cell, sizeof cell, "| %s | `%s` |", nvl_topo_keys[i].section,
                 nvl_topo_keys[i].key);
        assert_non_null(strstr(text, cell));
    }
    for (size_t i = 0; i < nvl_topo_gpu_key_count; i++) {
        char cell[96];
        snprintf(cell, sizeof cell, "`%s`", nvl_topo_gpu_keys[i].key);
        assert_non_null(strstr(text, cell));
    }
    free(text);
}

/* ---- (c) bad input: one report naming file:line and what was expected */

#define T(f)                                                                   \
    cmocka_unit_test_setup_teardown(f, capture_reports, release_reports)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_shipped_files_load_and_round_trip),
        T(test_overrides_round_trip),
        T(test_export_groups_equal_overrides),
        T(test_gb200_nvl72_values),
        T(test_equal_and_hash_see_one_change),
        T(test_crlf_line_ends),
        T(test_every_key_is_honoured),
        T(test_set_honours_every_key),
        T(test_every_override_key_is_honoured),
        T(test_defaults_from_key_table),
        T(test_key_reference_lists_every_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
