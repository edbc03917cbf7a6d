/* Unit tests of safetensors reading: the Hugging Face fixtures, a
 * hand-written sharded checkpoint with F32/BF16/F16 tensors, slices, and
 * every kind of broken file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "reports.h"

#include "nvlemu/weights.h"

/* Writes a safetensors file: header text, then data bytes. */
static void write_st(const char *path, const char *header, const void *data,
                     size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint64_t len = strlen(header);
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(len >> (8 * i));
    fwrite(le, 1, 8, f);
    fwrite(header, 1, len, f);
    if (n > 0)
        fwrite(data, 1, n, f);
    fclose(f);
}

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/nvl_test_st_XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_fixture_slices(void **state)
{
    (void)state;
    nvl_weights_t *w;
    assert_int_equal(nvl_weights_open(NVL_TEST_DATA "/hf/qwen2-tiny", &w),
                     NVL_OK);
    nvl_tensor_info_t info;
    assert_int_equal(nvl_weights_info(w, "model.embed_tokens.weight", &info),
                     NVL_OK);
    assert_int_equal(info.dtype, NVL_DT_F32);
    assert_int_equal(info.ndim, 2);
    assert_int_equal(info.shape[0], 512);
    assert_int_equal(info.shape[1], 128);
    assert_true(nvl_weights_has(w, "lm_head.weight"));
    float *full = malloc(512 * 128 * sizeof(float));
    float part[10 * 32];
    assert_int_equal(nvl_weights_read_f32(w, "model.embed_tokens.weight", 0,
                                          512, 0, 128, full),
                     NVL_OK);
    assert_int_equal(nvl_weights_read_f32(w, "model.embed_tokens.weight", 10,
                                          10, 32, 32, part),
                     NVL_OK);
    for (int r = 0; r < 10; r++)
        for (int c = 0; c < 32; c++)
            assert_true(part[r * 32 + c] == full[(10 + r) * 128 + 32 + c]);
    /* a 1-D tensor is one row */
    float norm[128];
    assert_int_equal(nvl_weights_read_f32(
                         w, "model.layers.0.input_layernorm.weight", 0, 1, 0,
                         128, norm),
                     NVL_OK);
    free(full);
    nvl_weights_close(w);
    assert_int_equal(nvl_weights_open(NVL_TEST_DATA "/hf/qwen2-tiny-tied", &w),
                     NVL_OK);
    assert_false(nvl_weights_has(w, "lm_head.weight"));
    nvl_weights_close(w);
    assert_int_equal(reports.count, 0);
}

static void test_sharded_dtypes(void **state)
{
    (void)state;
    make_dir();
    char path[128];
    float a[6] = {1, 2, 3, 4, 5, 6};
    snprintf(path, sizeof path, "%s/s1.safetensors", dir);
    write_st(path,
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,"
             "24]}}",
             a, sizeof a);
    /* b: bf16 [1.0, -2.0, 0.5, 3.0]; c: f16 [[1, 2], [0.25, -1]] */
    uint16_t bc[8] = {0x3F80, 0xC000, 0x3F00, 0x4040,
                      0x3C00, 0x4000, 0x3400, 0xBC00};
    snprintf(path, sizeof path, "%s/s2.safetensors", dir);
    write_st(path,
             "{\"__metadata__\":{\"format\":\"pt\"},"
             "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]},"
             "\"c\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[8,16]}"
             "}",
             bc, sizeof bc);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"metadata\":{},\"weight_map\":{\"a\":\"s1.safetensors\","
               "\"b\":\"s2.safetensors\",\"c\":\"s2.safetensors\"}}");
    fclose(f);
    nvl_weights_t *w;
    assert_int_equal(nvl_weights_open(dir, &w), NVL_OK);
    float out[6];
    assert_int_equal(nvl_weights_read_f32(w, "a", 1, 1, 1, 2, out), NVL_OK);
    assert_true(out[0] == 5 && out[1] == 6);
    assert_int_equal(nvl_weights_read_f32(w, "b", 0, 1, 0, 4, out), NVL_OK);
    assert_true(out[0] == 1.0f && out[1] == -2.0f && out[2] == 0.5f &&
                out[3] == 3.0f);
    assert_int_equal(nvl_weights_read_f32(w, "c", 1, 1, 0, 2, out), NVL_OK);
    assert_true(out[0] == 0.25f && out[1] == -1.0f);
    /* the header's metadata is not a tensor */
    assert_false(nvl_weights_has(w, "__metadata__"));
    nvl_tensor_info_t info;
    assert_int_equal(nvl_weights_info(w, "__metadata__", &info),
                     NVL_ERR_INVALID);
    /* errors on an open checkpoint */
    assert_int_equal(nvl_weights_read_f32(w, "d", 0, 1, 0, 1, out),
                     NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "no tensor 'd'"));
    assert_int_equal(nvl_weights_read_f32(w, "a", 1, 2, 0, 3, out),
                     NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "outside"));
    nvl_weights_close(w);
    remove_dir();
}

static void expect_open_error(const char *header, const void *data, size_t n,
                              const char *text)
{
    make_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    write_st(path, header, data, n);
    nvl_weights_t *w = NULL;
    reports.count = 0;
    assert_int_not_equal(nvl_weights_open(dir, &w), NVL_OK);
    expect_one_report(text);
    remove_dir();
}

static void test_broken_files(void **state)
{
    (void)state;
    float x[4] = {0};
    expect_open_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],"
                      "\"data_offsets\":[0,64]}}",
                      x, sizeof x, "outside the 16-byte data section");
    /* what the safetensors format forbids, each once */
    expect_open_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],"
                      "\"data_offsets\":[-1000,-984]}}",
                      x, sizeof x, "two non-negative integers");
    expect_open_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[-4],"
                      "\"data_offsets\":[0,16]}}",
                      x, sizeof x, "shape[0] is not a non-negative integer");
    expect_open_error("{\"a\":{\"dtype\":\"F32\",\"shape\":"
                      "[4294967296,4294967296,16],\"data_offsets\":[0,16]}}",
                      x, sizeof x, "more than 2^64");
    expect_open_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                      "\"data_offsets\":[8,0]}}",
                      x, sizeof x, "bytes 8..0 lie outside");
    expect_open_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                      "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\","
                      "\"shape\":[2],\"data_offsets\":[4,12]}}",
                      x, sizeof x, "tensors overlap: bytes 0..8 and 4..12");
    expect_open_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],"
                      "\"data_offsets\":[0,16]}}",
                      x, sizeof x, "shape holds 3 F32 elements");
    expect_open_error("{\"a\": [1, 2", x, sizeof x, "not a JSON object");
    expect_open_error("{\"a\":{\"shape\":[4]}}", x, sizeof x,
                      "missing dtype, shape or data_offsets");
    /* header length larger than the file */
    make_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    unsigned char le[8] = {0xff, 0xff, 0, 0, 0, 0, 0, 0};
    fwrite(le, 1, 8, f);
    fclose(f);
    nvl_weights_t *w;
    reports.count = 0;
    assert_int_equal(nvl_weights_open(dir, &w), NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "runs past the end"));
    remove_dir();
    /* no checkpoint at all */
    reports.count = 0;
    assert_int_equal(nvl_weights_open("/nonexistent/ckpt", &w), NVL_ERR_IO);
    assert_int_equal(reports.count, 1);
    assert_non_null(strstr(reports.last, "/nonexistent/ckpt/model.safetensors"));
    /* an unsupported dtype is reported when read */
    make_dir();
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    write_st(path,
             "{\"q\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
             x, 4);
    assert_int_equal(nvl_weights_open(dir, &w), NVL_OK);
    float out[4];
    assert_int_equal(nvl_weights_read_f32(w, "q", 0, 1, 0, 4, out),
                     NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "dtype I8"));
    nvl_weights_close(w);
    remove_dir();
}

#define TEST(f)                                                            \
    cmocka_unit_test_setup_teardown(f, capture_reports, release_reports)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(test_fixture_slices),
        TEST(test_sharded_dtypes),
        TEST(test_broken_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
