/* Unit tests of the topology module (src/topo): the shipped files load and
 * round-trip through the canonical export, every key of the key table
 * reaches its field, every kind of bad input is refused with one report
 * that names file:line and what was expected, --set what-ifs, and the
 * derived quantities (fabrics, per-GPU and bisection bandwidth).
 *
 * Reports are captured with nvl_report_set_sink() and their text checked. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "keys.h" /* src/topo: the key table */
#include "nvlemu/topo.h"
#include "nvlemu/units.h"
#include "reports.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define DATA_DIR NVL_TEST_DATA "/topo"

/* ---- captured reports ------------------------------------------------- */

static void expect_no_reports(void)
{
    if (reports.count != 0) {
        print_error("unexpected report(s):\n%s\n", reports.text);
        fail();
    }
}

/* Expects exactly one report, starting with "origin:line: " ("origin: "
 * when line is 0) and containing each of the NULL-terminated strings. */
static void expect_report_v(const char *origin, int line, va_list ap)
{
    if (reports.count != 1) {
        print_error("expected 1 report, got %d:\n%s\n", reports.count,
                    reports.text);
        fail();
    }
    char prefix[512];
    if (line > 0)
        snprintf(prefix, sizeof prefix, "%s:%d: ", origin, line);
    else
        snprintf(prefix, sizeof prefix, "%s: ", origin);
    if (strncmp(reports.text, prefix, strlen(prefix)) != 0) {
        print_error("report \"%s\"\ndoes not start with \"%s\"\n",
                    reports.text, prefix);
        fail();
    }
    for (const char *s = va_arg(ap, const char *); s != NULL;
         s = va_arg(ap, const char *)) {
        if (strstr(reports.text, s) == NULL) {
            print_error("report \"%s\"\ndoes not contain \"%s\"\n",
                        reports.text, s);
            fail();
        }
    }
}

static void expect_report(const char *origin, int line, ...)
{
    va_list ap;
    va_start(ap, line);
    expect_report_v(origin, line, ap);
    va_end(ap);
}

/* ---- helpers ----------------------------------------------------------- */

static nvl_topo_t *load_file(const char *path)
{
    nvl_topo_t *t = NULL;
    nvl_status_t st = nvl_topo_load(path, &t);
    if (st != NVL_OK)
        print_error("%s did not load:\n%s\n", path, reports.text);
    assert_int_equal(st, NVL_OK);
    assert_non_null(t);
    expect_no_reports();
    return t;
}

static nvl_topo_t *load_data(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", DATA_DIR, name);
    return load_file(path);
}

static nvl_topo_t *load_shipped(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NVL_TOPOLOGY_DIR, name);
    return load_file(path);
}

static nvl_topo_t *load_text(const char *text, const char *origin)
{
    nvl_topo_t *t = NULL;
    nvl_status_t st = nvl_topo_load_string(text, origin, &t);
    if (st != NVL_OK)
        print_error("%s did not load:\n%s\n--- text:\n%s\n", origin,
                    reports.text, text);
    assert_int_equal(st, NVL_OK);
    expect_no_reports();
    return t;
}

/* The canonical export as a string the caller frees. */
static char *export_text(const nvl_topo_t *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    assert_int_equal(nvl_topo_export(t, mem), NVL_OK);
    assert_int_equal(fclose(mem), 0);
    return text;
}

static char *read_data(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", DATA_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *text = calloc(1, 1 << 16);
    assert_non_null(text);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    assert_true(n > 0 && n < (1 << 16) - 1);
    fclose(f);
    return text;
}

/* Loads the file tests/data/topo/<name>, which must fail with one report at line
 * (0: no line) containing the NULL-terminated strings. */
static void expect_load_error(const char *name, int line, ...)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", DATA_DIR, name);
    nvl_topo_t *t = NULL;
    nvl_status_t st = nvl_topo_load(path, &t);
    if (st == NVL_OK)
        print_error("%s loaded without error\n", path);
    assert_int_equal(st, NVL_ERR_INVALID);
    assert_null(t);
    va_list ap;
    va_start(ap, line);
    expect_report_v(path, line, ap);
    va_end(ap);
}

static int field_equal(const nvl_topo_key_t *k, const void *a, const void *b)
{
    const char *fa = (const char *)a + k->offset;
    const char *fb = (const char *)b + k->offset;
    return k->field == NVL_FIELD_STR ? strcmp(fa, fb) == 0
                                     : memcmp(fa, fb, k->size) == 0;
}

/* Field by field, so that padding bytes do not count. */
static int override_equal(const nvl_gpu_override_t *a,
                          const nvl_gpu_override_t *b)
{
    for (size_t i = 0; i < nvl_topo_gpu_key_count; i++)
        if (!field_equal(&nvl_topo_gpu_keys[i], a, b))
            return 0;
    return 1;
}

/* ---- (a) the shipped topologies --------------------------------------- */

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* load -> export -> load gives an equal model with an equal hash, and the
 * export is deterministic and a fixed point. */
static void check_round_trip(const char *path)
{
    nvl_topo_t *t = load_file(path);
    char *text = export_text(t);
    char *again = export_text(t);
    assert_string_equal(text, again);

    nvl_topo_t *back = load_text(text, "exported");
    assert_true(nvl_topo_equal(t, back));
    assert_true(nvl_topo_equal(back, t));
    assert_true(nvl_topo_hash(t) == nvl_topo_hash(back));
    char *text_back = export_text(back);
    assert_string_equal(text, text_back);

    free(text_back);
    free(again);
    free(text);
    nvl_topo_free(back);
    nvl_topo_free(t);
}

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

typedef struct {
    const char *section, *key, *value;
} kv_t;

/* A valid base with room to change every key on its own: 16 GPUs in one
 * NVLink domain, 2 switch trays, NVLS off but with a bandwidth, a NIC. The
 * keys it leaves out take their defaults. */
static const kv_t base_kv[] = {
    {"system", "name", "keytest"},
    {"system", "description", "key table test"},
    {"system", "gpus", "16"},
    {"gpu", "hbm", "80GB"},
    {"gpu", "hbm_bw", "3TB/s"},
    {"gpu", "bf16_flops", "1PFLOP/s"},
    {"gpu", "fp8_flops", "2PFLOP/s"},
    {"gpu", "sms", "100"},
    {"gpu", "clock", "1.5GHz"},
    {"gpu", "exp_rate", "2Top/s"},
    {"gpu", "kernel_overhead", "3us"},
    {"gpu", "launch_overhead", "4us"},
    {"nvlink", "links", "12"},
    {"nvlink", "link_bw", "50GB/s"},
    {"nvlink", "hop_lat", "0.5us"},
    {"nvlink", "switch_trays", "2"},
    {"nvlink", "switch_chips_per_tray", "2"},
    {"nvlink", "nvls_bw", "900GB/s"},
    {"nvlink", "domain_size", "16"},
    {"scaleout", "nic_bw", "400Gb/s"},
    {"node", "gpus_per_tray", "4"},
    {"node", "gpus_per_superchip", "2"},
};

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

/* The base topology as text, with n changes replacing or adding keys and
 * `extra` appended; the caller frees it. */
static char *base_text_changed(const kv_t *changes, size_t n,
                               const char *extra)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    for (size_t s = 0; nvl_topo_sections[s] != NULL; s++) {
        const char *section = nvl_topo_sections[s];
        fprintf(out, "[%s]\n", section);
        for (size_t i = 0; i < N_ELEMS(base_kv); i++) {
            const kv_t *kv = &base_kv[i];
            int changed = 0;
            for (size_t c = 0; c < n; c++)
                changed |= strcmp(changes[c].section, kv->section) == 0 &&
                           strcmp(changes[c].key, kv->key) == 0;
            if (strcmp(kv->section, section) == 0 && !changed)
                fprintf(out, "%s = %s\n", kv->key, kv->value);
        }
        for (size_t c = 0; c < n; c++)
            if (strcmp(changes[c].section, section) == 0)
                fprintf(out, "%s = %s\n", changes[c].key, changes[c].value);
        fprintf(out, "\n");
    }
    if (extra != NULL)
        fputs(extra, out);
    assert_int_equal(fclose(out), 0);
    return text;
}

/* The base with at most one change (NULL: none). */
static char *base_text(const kv_t *change, const char *extra)
{
    return base_text_changed(change, change != NULL, extra);
}

static nvl_topo_t *load_base(void)
{
    char *text = base_text(NULL, NULL);
    nvl_topo_t *t = load_text(text, "base");
    free(text);
    return t;
}

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
        /* (a) shipped files, round trips */
        T(test_shipped_files_load_and_round_trip),
        T(test_overrides_round_trip),
        T(test_export_groups_equal_overrides),
        T(test_gb200_nvl72_values),
        T(test_equal_and_hash_see_one_change),
        T(test_crlf_line_ends),
        /* (b) the key table */
        T(test_every_key_is_honoured),
        T(test_set_honours_every_key),
        T(test_every_override_key_is_honoured),
        T(test_defaults_from_key_table),
        T(test_key_reference_lists_every_key),
        /* (c) bad input */
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
        /* (d) overrides, --set, derived quantities */
        T(test_override_sections),
        T(test_set_section_key),
        T(test_set_one_gpu),
        T(test_set_gpu_range),
        T(test_set_bare_unique_key),
        T(test_set_dotted_nccl_keys),
        T(test_set_value_with_trailing_blank),
        T(test_set_text_round_trips),
        T(test_set_ambiguous_bare_key),
        T(test_die_view),
        T(test_set_bad_value_changes_nothing),
        T(test_set_invalid_model_changes_nothing),
        T(test_set_unknown_names),
        T(test_set_needs_equals),
        T(test_set_gpu_beyond_count),
        T(test_set_cannot_change_gpu_count),
        T(test_fabric_across_domains),
        T(test_bisection_nvl72),
        T(test_bisection_two_racks),
        T(test_names),
        T(test_describe_json),
        T(test_describe_names_fabrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
