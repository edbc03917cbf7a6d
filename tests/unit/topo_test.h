/* Shared by the topology module's unit tests (test_topo*.c): loading
 * files and texts, exporting, and checking the one report a bad input
 * gives (captured with reports.h).  Header-only, as reports.h, whose
 * captured reports these helpers read. */
#ifndef NVLEMU_TEST_TOPO_TEST_H
#define NVLEMU_TEST_TOPO_TEST_H

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

static inline void expect_no_reports(void)
{
    if (reports.count != 0) {
        print_error("unexpected report(s):\n%s\n", reports.text);
        fail();
    }
}

/* Expects exactly one report, starting with "origin:line: " ("origin: "
 * when line is 0) and containing each of the NULL-terminated strings. */
static inline void expect_report_v(const char *origin, int line, va_list ap)
{
    if (reports.count != 1) {
        print_error("expected 1 report, got %d:\n%s\n", reports.count,
                    reports.text);
        fail();
    }
    char prefix[512 + 16]; /* an origin path of up to 511 bytes, ":line: " */
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

static inline void expect_report(const char *origin, int line, ...)
{
    va_list ap;
    va_start(ap, line);
    expect_report_v(origin, line, ap);
    va_end(ap);
}

/* ---- helpers ----------------------------------------------------------- */

static inline nvl_topo_t *load_file(const char *path)
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

static inline nvl_topo_t *load_data(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", DATA_DIR, name);
    return load_file(path);
}

static inline nvl_topo_t *load_shipped(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NVL_TOPOLOGY_DIR, name);
    return load_file(path);
}

static inline nvl_topo_t *load_text(const char *text, const char *origin)
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
static inline char *export_text(const nvl_topo_t *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    assert_int_equal(nvl_topo_export(t, mem), NVL_OK);
    assert_int_equal(fclose(mem), 0);
    return text;
}

static inline char *read_data(const char *name)
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
static inline void expect_load_error(const char *name, int line, ...)
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

static inline int field_equal(const nvl_topo_key_t *k, const void *a, const void *b)
{
    const char *fa = (const char *)a + k->offset;
    const char *fb = (const char *)b + k->offset;
    return k->field == NVL_FIELD_STR ? strcmp(fa, fb) == 0
                                     : memcmp(fa, fb, k->size) == 0;
}

/* Field by field, so that padding bytes do not count. */
static inline int override_equal(const nvl_gpu_override_t *a,
                          const nvl_gpu_override_t *b)
{
    for (size_t i = 0; i < nvl_topo_gpu_key_count; i++)
        if (!field_equal(&nvl_topo_gpu_keys[i], a, b))
            return 0;
    return 1;
}

/* ---- (a) the shipped topologies --------------------------------------- */

static inline int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* load -> export -> load gives an equal model with an equal hash, and the
 * export is deterministic and a fixed point. */
static inline void check_round_trip(const char *path)
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

/* ---- a base topology with every key (the key table tests) ---------------- */

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

/* The base topology as text, with n changes replacing or adding keys and
 * `extra` appended; the caller frees it. */
static inline char *base_text_changed(const kv_t *changes, size_t n,
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
static inline char *base_text(const kv_t *change, const char *extra)
{
    return base_text_changed(change, change != NULL, extra);
}

static inline nvl_topo_t *load_base(void)
{
    char *text = base_text(NULL, NULL);
    nvl_topo_t *t = load_text(text, "base");
    free(text);
    return t;
}

#endif
