/* nvlemu cost against the library it prints: every operation's time, work
 * and rate in `--json` equal what the cost functions give for the same
 * inputs (nvl_cost_matmul, nvl_cost_attention, nvl_cost_memory,
 * nvl_cost_copy), the limiting term is the expected one in each regime,
 * copies stay below their link's rate and take longer when they move more.
 *
 *   test_cost_cmd LAUNCH...   LAUNCH: the nvlemu binary, or an mpiexec
 *                             command line ending with it */
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

#include "nvlemu/cost.h"
#include "nvlemu/engine.h"

#define H200 NVL_TOPOLOGY_DIR "/h200-nvl2.topo"
#define GB200 NVL_TOPOLOGY_DIR "/gb200-nvl72.topo"

static char launch[4096]; /* the LAUNCH words, each quoted for sh */

/* Runs `LAUNCH cost --topo TOPO ARGS --json FILE` and returns the document
 * (the caller json_decref's it); fails the test if the job fails. */
static json_t *cost_json(const char *topo, const char *args)
{
    char path[] = "/tmp/nvl-cost-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s cost --topo '%s' %s --json '%s'", launch,
             topo, args, path);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("'%s' exited with %d", cmd, rc);
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    unlink(path);
    if (doc == NULL)
        fail_msg("'%s': not one JSON document: %s", cmd, err.text);
    return doc;
}

static double num(const json_t *doc, const char *key)
{
    const json_t *v = json_object_get(doc, key);
    if (v == NULL)
        fail_msg("no '%s' in the document", key);
    return json_number_value(v);
}

static const char *str(const json_t *doc, const char *key)
{
    const char *s = json_string_value(json_object_get(doc, key));
    if (s == NULL)
        fail_msg("no string '%s' in the document", key);
    return s;
}

static nvl_topo_t *load(const char *path)
{
    nvl_topo_t *t = NULL;
    assert_int_equal(nvl_topo_load(path, &t), NVL_OK);
    return t;
}

static nvl_cost_cfg_t cfg_of(const nvl_topo_t *t, uint32_t gpu)
{
    nvl_cost_cfg_t c = {.topo = t, .gpu = gpu, .weight_dtype = NVL_WDT_BF16,
                        .kv_dtype = NVL_WDT_BF16, .attn = NVL_ATTN_FA3,
                        .launch = NVL_LAUNCH_GRAPH};
    nvl_stack_cost(NVL_STACK_FUSED, &c);
    return c;
}

/* The document's time, work and rates are the library's cost c. */
static void assert_cost(const json_t *doc, nvl_kernel_cost_t c)
{
    assert_true(c.time_ps > 0);
    assert_int_equal((int64_t)num(doc, "time_ps"), c.time_ps);
    assert_float_equal(num(doc, "time_us"), (double)c.time_ps / 1e6, 1e-9);
    assert_float_equal(num(doc, "flops"), c.flops, 0);
    assert_float_equal(num(doc, "bytes"), c.bytes, 0);
    double s = (double)c.time_ps * 1e-12;
    assert_float_equal(num(doc, "gb_per_s"), c.bytes / s / 1e9, 1e-6);
    if (c.flops > 0)
        assert_float_equal(num(doc, "tflops"), c.flops / s / 1e12, 1e-6);
}

/* GEMMs in three regimes on an H200, and FP8 / FP4 on a GB200. */
static void test_gemm(void **state)
{
    (void)state;
    nvl_topo_t *h = load(H200), *b = load(GB200);
    nvl_cost_cfg_t c = cfg_of(h, 0);
    static const struct {
        uint64_t m, n, k;
        const char *bound;
    } cases[] = {{8192, 8192, 8192, "compute"},
                 {1, 37888, 3584, "memory"},
                 {1, 1, 1, "overhead"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[128];
        snprintf(args, sizeof args, "gemm %llu %llu %llu",
                 (unsigned long long)cases[i].m,
                 (unsigned long long)cases[i].n,
                 (unsigned long long)cases[i].k);
        json_t *doc = cost_json(H200, args);
        assert_cost(doc, nvl_cost_matmul(&c, cases[i].m, cases[i].n,
                                         cases[i].k));
        assert_string_equal(str(doc, "bound"), cases[i].bound);
        assert_string_equal(str(doc, "op"), "gemm");
        const json_t *in = json_object_get(doc, "inputs");
        assert_int_equal(json_integer_value(json_object_get(in, "k")),
                         cases[i].k);
        json_decref(doc);
    }
    static const nvl_wdtype_t dts[] = {NVL_WDT_FP8, NVL_WDT_FP4};
    nvl_cost_cfg_t cb = cfg_of(b, 0);
    for (size_t i = 0; i < 2; i++) {
        char args[128];
        snprintf(args, sizeof args, "gemm 4096 8192 8192 --dtype %s",
                 nvl_wdtype_name(dts[i]));
        json_t *doc = cost_json(GB200, args);
        cb.weight_dtype = dts[i];
        assert_cost(doc, nvl_cost_matmul(&cb, 4096, 8192, 8192));
        json_decref(doc);
    }
    nvl_topo_free(h);
    nvl_topo_free(b);
}

/* Decode (memory or overhead) and prefill (compute) attention, FA3 and
 * FA4, an FP8 KV cache; the GPU's default kernel is nvlemu run's. */
static void test_attention(void **state)
{
    (void)state;
    nvl_topo_t *b = load(GB200);
    nvl_cost_cfg_t c = cfg_of(b, 0);
    uint64_t one[64], ctx[64], prompt[64], none[64];
    for (int i = 0; i < 64; i++) {
        one[i] = 1;
        ctx[i] = 8192;
        prompt[i] = 4096;
        none[i] = 0;
    }
    json_t *doc = cost_json(GB200, "attention --batch 64 --ctx 8192 "
                                   "--heads 8 --kv-heads 1 --head-dim 128 "
                                   "--kernel fa3 --kv-dtype fp8");
    c.kv_dtype = NVL_WDT_FP8;
    assert_cost(doc, nvl_cost_attention(&c, 64, one, ctx, 8, 1, 128));
    assert_string_equal(str(doc, "bound"), "memory");
    json_decref(doc);

    doc = cost_json(GB200, "attention --batch 4 --q-len 4096 --heads 32 "
                           "--kv-heads 8 --head-dim 128 --kernel fa4");
    c.kv_dtype = NVL_WDT_BF16;
    c.attn = NVL_ATTN_FA4;
    assert_cost(doc, nvl_cost_attention(&c, 4, prompt, none, 32, 8, 128));
    assert_string_equal(str(doc, "bound"), "compute");
    json_decref(doc);

    /* no --kernel: FA4 on a GPU with FP4 units, as nvlemu run */
    doc = cost_json(GB200, "attention --batch 1 --heads 8 --kv-heads 8 "
                           "--head-dim 128");
    const json_t *in = json_object_get(doc, "inputs");
    assert_string_equal(json_string_value(json_object_get(in, "kernel")),
                        "fa4");
    assert_int_equal(json_integer_value(json_object_get(in, "q_len")), 1);
    assert_cost(doc, nvl_cost_attention(&c, 1, one, none, 8, 8, 128));
    assert_string_equal(str(doc, "bound"), "overhead");
    json_decref(doc);
    nvl_topo_free(b);
}

/* Element-wise kernels: nvl_cost_memory, longer with more bytes. */
static void test_elementwise(void **state)
{
    (void)state;
    nvl_topo_t *h = load(H200);
    nvl_cost_cfg_t c = cfg_of(h, 0);
    static const char *const sizes[] = {"4096", "64MB", "1GiB"};
    static const double bytes[] = {4096, 64e6, 1073741824.0};
    double last_us = 0;
    for (size_t i = 0; i < 3; i++) {
        char args[64];
        snprintf(args, sizeof args, "elementwise %s", sizes[i]);
        json_t *doc = cost_json(H200, args);
        assert_cost(doc, nvl_cost_memory(&c, bytes[i]));
        assert_true(num(doc, "time_us") > last_us);
        assert_false(json_object_get(doc, "tflops") != NULL);
        last_us = num(doc, "time_us");
        json_decref(doc);
    }
    nvl_topo_free(h);
}

/* Copies over every path of a GB200: the library's time; below the
 * path's rate (host memory: at it, no fixed cost); longer with more bytes; the default NVLink peer is the
 * next GPU of the domain. */
static void test_copy(void **state)
{
    (void)state;
    nvl_topo_t *b = load(GB200);
    nvl_cost_cfg_t c = cfg_of(b, 5);
    const struct {
        nvl_copy_path_t path;
        double rate_bytes_per_s; /* what the copy may not exceed */
    } paths[] = {
        {NVL_COPY_HBM, b->gpu.hbm_bw_bytes_per_s},
        {NVL_COPY_NVLINK, nvl_topo_nvlink_bw(b, 5)},
        {NVL_COPY_C2C_H2D, b->c2c.bw_bytes_per_s},
        {NVL_COPY_C2C_D2H, b->c2c.bw_bytes_per_s},
        {NVL_COPY_HOST, b->host_memory.bw_bytes_per_s},
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        double last_us = 0;
        for (double size = 1 << 20; size <= (double)(1 << 30); size *= 32) {
            char args[128];
            snprintf(args, sizeof args, "--gpu 5 copy %.0f --path %s", size,
                     nvl_copy_path_name(paths[i].path));
            json_t *doc = cost_json(GB200, args);
            assert_cost(doc, nvl_cost_copy(&c, paths[i].path, 6, size));
            assert_true(num(doc, "gb_per_s") * 1e9 <=
                        paths[i].rate_bytes_per_s * (1 + 1e-9));
            assert_true(num(doc, "time_us") > last_us);
            last_us = num(doc, "time_us");
            if (paths[i].path == NVL_COPY_NVLINK) {
                const json_t *in = json_object_get(doc, "inputs");
                assert_int_equal(
                    json_integer_value(json_object_get(in, "peer")), 6);
            }
            json_decref(doc);
        }
    }
    /* a large copy over a link is limited by it; a small one by the copy
     * engine's fixed cost */
    json_t *doc = cost_json(GB200, "copy 1GiB --path c2c-h2d");
    assert_string_equal(str(doc, "bound"), "link");
    json_decref(doc);
    doc = cost_json(GB200, "copy 4KiB --path nvlink");
    assert_string_equal(str(doc, "bound"), "overhead");
    assert_float_equal(num(doc, "fixed_us"),
                       (double)(b->gpu.copy_overhead_ps +
                                b->nvlink.hop_lat_ps) / 1e6, 1e-6);
    json_decref(doc);
    nvl_topo_free(b);
}

/* What-ifs apply to the chosen GPU: half the clock, twice the time of a
 * compute-bound GEMM's body. */
static void test_gpu_and_set(void **state)
{
    (void)state;
    json_t *fast = cost_json(H200, "--set gpu[1].clock_scale=0.5 gemm 8192 "
                                   "8192 8192");
    json_t *slow = cost_json(H200, "--set gpu[1].clock_scale=0.5 --gpu 1 "
                                   "gemm 8192 8192 8192");
    double f = num(fast, "time_us") - num(fast, "fixed_us");
    double s = num(slow, "time_us") - num(slow, "fixed_us");
    assert_float_equal(s, 2 * f, 1e-3);
    assert_int_equal((int)num(slow, "gpu"), 1);
    json_decref(fast);
    json_decref(slow);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_cost_cmd LAUNCH...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++)
        snprintf(launch + strlen(launch), sizeof launch - strlen(launch),
                 "%s'%s'", i > 1 ? " " : "", argv[i]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_gpu_and_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
