/* Unit tests of src/quant and of quantized checkpoints (src/model/
 * qweights.c, quantize.c): every E2M1, E4M3 and E8M0 code point against
 * the specifications' tables (and torch's E4M3 cast, recorded on the
 * device in tests/data/quant/quant-reference.json), block edges, the
 * writers' quantizers against torch references of the same formulas
 * (every stored byte of qwen3-quant-tiny's 14 weights, FNV-1a 64), the
 * dequantized weights as read back, and every bad input's one message. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../unit/reports.h"
#include "nvlemu/hash.h"
#include "nvlemu/quant.h"
#include "nvlemu/weights.h"

#define QDATA NVL_TEST_DATA "/quant"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float from_hex_le(const char *hex)
{
    uint32_t u = 0;
    for (int k = 0; k < 4; k++) {
        unsigned b;
        sscanf(hex + 2 * k, "%2x", &b);
        u |= (uint32_t)b << (8 * k);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* OCP MX v1.0's E2M1: bias 1, S.EE.M; subnormal 0.M x 2^0 */
static float e2m1_spec(int c)
{
    int s = c >> 3, e = (c >> 1) & 3, m = c & 1;
    float v = e == 0 ? 0.5f * (float)m : ldexpf(1.0f + 0.5f * (float)m, e - 1);
    return s ? -v : v;
}

static void e2m1_codes(void **state)
{
    (void)state;
    for (int c = 0; c < 16; c++) {
        assert_int_equal(bits(nvl_e2m1_decode((uint8_t)c)), bits(e2m1_spec(c)));
        /* every value encodes to its code (-0.0 to +0: sign is x < 0) */
        assert_int_equal(nvl_e2m1_encode(e2m1_spec(c)), c == 8 ? 0 : c);
    }
    /* midpoints between neighbours: ties to the even code, and one ulp
     * off a tie goes to the nearer neighbour */
    for (int c = 0; c < 7; c++) {
        float lo = e2m1_spec(c), hi = e2m1_spec(c + 1), mid = (lo + hi) / 2;
        int even = (c & 1) ? c + 1 : c;
        assert_int_equal(nvl_e2m1_encode(mid), even);
        assert_int_equal(nvl_e2m1_encode(nextafterf(mid, 0.0f)), c);
        assert_int_equal(nvl_e2m1_encode(nextafterf(mid, 10.0f)), c + 1);
        assert_int_equal(nvl_e2m1_encode(-mid), 8 | even);
    }
    /* saturation at +-6 */
    assert_int_equal(nvl_e2m1_encode(6.5f), 7);
    assert_int_equal(nvl_e2m1_encode(1e30f), 7);
    assert_int_equal(nvl_e2m1_encode(-INFINITY), 15);
}

/* OCP 8-bit floating point v1.0, E4M3: bias 7, subnormal 0.MMM x 2^-6,
 * S.1111.111 NaN, no infinities */
static float e4m3_spec(int c)
{
    int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7)
        return NAN;
    float v = e == 0 ? ldexpf((float)m / 8.0f, -6)
                     : ldexpf(1.0f + (float)m / 8.0f, e - 7);
    return s ? -v : v;
}

static json_t *reference(void)
{
    json_error_t err;
    json_t *r = json_load_file(QDATA "/quant-reference.json", 0, &err);
    assert_non_null(r);
    return r;
}

static void e4m3_codes(void **state)
{
    (void)state;
    json_t *r = reference();
    json_t *e = json_object_get(r, "e4m3");
    json_t *dec = json_object_get(e, "decode"),
           *enc = json_object_get(e, "encode");
    assert_int_equal(json_array_size(dec), 256);
    for (int c = 0; c < 256; c++) {
        float torch =
            from_hex_le(json_string_value(json_array_get(dec, (size_t)c)));
        float spec = e4m3_spec(c), got = nvl_e4m3_decode((uint8_t)c);
        if (isnan(spec)) {
            assert_true(isnan(got) && isnan(torch));
            continue;
        }
        assert_int_equal(bits(got), bits(spec));
        assert_int_equal(bits(got), bits(torch));
        if (c != 0x80) /* -0 encodes to 0x80, checked by the probes */
            assert_int_equal(nvl_e4m3_encode(spec), c);
    }
    /* torch's float32 -> float8_e4m3fn of every midpoint, one ulp on
     * either side, the top of the range and beyond */
    assert_true(json_array_size(enc) > 400);
    for (size_t i = 0; i < json_array_size(enc); i++) {
        json_t *p = json_array_get(enc, i);
        float x = from_hex_le(json_string_value(json_array_get(p, 0)));
        int want = (int)json_integer_value(json_array_get(p, 1));
        if (nvl_e4m3_encode(x) != want)
            fail_msg("e4m3(%a): got 0x%02x, torch 0x%02x", (double)x,
                     nvl_e4m3_encode(x), want);
    }
    json_decref(r);
}

static void e8m0_codes(void **state)
{
    (void)state;
    for (int c = 0; c < 255; c++)
        assert_int_equal(bits(nvl_e8m0_decode((uint8_t)c)),
                         bits(ldexpf(1.0f, c - 127)));
    assert_true(isnan(nvl_e8m0_decode(0xFF)));
    assert_true(nvl_e8m0_decode(0) > 0.0f); /* 2^-127, a float32 subnormal */
}

/* One row of 32 values in format f: codes and scales back. */
static void quantize_row(nvl_quant_format_t f, const float *w,
                         nvl_quant_tensor_t *t)
{
    assert_int_equal(nvl_quant_tensor(f, "t.weight", w, 1, 32, 0.0f, t), NVL_OK);
}

static void block_edges(void **state)
{
    (void)state;
    float w[32] = {0};
    nvl_quant_tensor_t t;
    /* MX as compressed-tensors rounds the max to a power of two (up from
     * 1.75 x 2^e): 4, 4 - ulp, 3.5 X = 2^0 (-> 4), 3, 3.5 - ulp 2^-1 (6) */
    const float max[5] = {4.0f, 0x1.fffffep1f, 3.5f, 3.0f, 0x1.bffffep1f};
    for (int i = 0; i < 5; i++) {
        w[0] = max[i];
        quantize_row(NVL_QUANT_MXFP4, w, &t);
        assert_string_equal(t.part[0].suffix, "weight_packed");
        assert_int_equal(t.part[1].bytes[0], i < 3 ? 127 : 126);
        assert_int_equal(t.part[0].bytes[0], i < 3 ? 6 : 7);
        nvl_quant_tensor_free(&t);
    }
    /* MX: an all-zero block takes code 0 (2^-127), codes 0 */
    memset(w, 0, sizeof w);
    quantize_row(NVL_QUANT_MXFP4, w, &t);
    assert_int_equal(t.part[1].bytes[0], 0);
    nvl_quant_tensor_free(&t);
    /* NVFP4: a zero block's scale is 1.0 (E4M3 0x38), the other block's
     * max maps to 6 x its scale */
    for (int k = 16; k < 32; k++)
        w[k] = (float)(k - 16) / 4.0f;
    quantize_row(NVL_QUANT_NVFP4, w, &t);
    assert_int_equal(t.part[1].bytes[0], 0x38);
    assert_int_equal(t.part[0].bytes[15] >> 4, 7); /* w[31] = amax -> 6 */
    float s2 = nvl_quant_scale_value(NVL_QCODE_F32, t.part[2].bytes);
    assert_int_equal(bits(s2), bits(3.75f / 2688.0f));
    nvl_quant_tensor_free(&t);
}

static void writers_refuse(void **state)
{
    (void)state;
    float w[48 * 2] = {1.0f};
    nvl_quant_tensor_t t;
    assert_int_equal(
        nvl_quant_tensor(NVL_QUANT_NVFP4, "a.weight", w, 2, 40, 0.0f, &t),
        NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "tensor 'a.weight': columns 40"));
    assert_int_equal(
        nvl_quant_tensor(NVL_QUANT_MXFP4, "b.weight", w, 2, 48, 0.0f, &t),
        NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "mxfp4's block of 32"));
    assert_int_equal(
        nvl_quant_tensor(NVL_QUANT_FP8_BLOCK, "c.weight", w, 1, 96, 0.0f, &t),
        NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "rows 1 is not a multiple"));
    memset(w, 0, sizeof w);
    assert_int_equal(nvl_quant_tensor(NVL_QUANT_FP8, "d.weight", w, 2, 48, 0.0f, &t),
                     NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "'d.weight': max |w| is 0"));
}

static char tmp[64];

static void fnv_hex(const void *p, size_t n, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)nvl_fnv1a64(p, n));
}

/* nvlemu quantize's output of the checkpoint `in` in format f: every
 * stored part's bytes and every dequantized weight equal torch's
 * references. */
static void check_format(const char *in, nvl_quant_format_t f, json_t *rows)
{
    snprintf(tmp, sizeof tmp, "/tmp/nvl-quant-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    nvl_weights_quant_opts_t qo = {.format = f};
    assert_int_equal(nvl_weights_quantize(in, tmp, &qo), NVL_OK);
    nvl_weights_t *w;
    assert_int_equal(nvl_weights_open(tmp, &w), NVL_OK);
    const char *name;
    json_t *row;
    json_object_foreach(rows, name, row)
    {
        const char *part;
        json_t *ref;
        json_object_foreach(json_object_get(row, "stored"), part, ref)
        {
            unsigned char *b;
            uint64_t n;
            const char *dt;
            char h[17];
            assert_int_equal(nvl_weights_read_raw(w, part, &b, &n, &dt),
                             NVL_OK);
            fnv_hex(b, n, h);
            free(b);
            if (strcmp(h, json_string_value(json_array_get(ref, 2))) != 0)
                fail_msg("%s %s: bytes differ from torch's", tmp, part);
        }
        nvl_tensor_info_t info;
        assert_int_equal(nvl_weights_info(w, name, &info), NVL_OK);
        assert_true(info.quantized);
        uint64_t n = info.shape[0] * info.shape[1];
        float *v = malloc(n * sizeof *v);
        assert_int_equal(nvl_weights_read_f32(w, name, 0, info.shape[0], 0,
                                              info.shape[1], v),
                         NVL_OK);
        /* E2M1 code 8 is -0 in the OCP table, +0 in ModelOpt's
         * e2m1_values (which the reference used): the same value */
        for (uint64_t i = 0;
             nvl_quant_row(f)->data.code == NVL_QCODE_E2M1 && i < n; i++)
            v[i] = v[i] == 0.0f ? 0.0f : v[i];
        char h[17];
        fnv_hex(v, n * sizeof *v, h);
        free(v);
        if (strcmp(h, json_string_value(json_object_get(row, "deq_fnv"))) != 0)
            fail_msg(
                "%s %s: dequantized values differ from torch's (%s, want %s)",
                tmp, name, h,
                json_string_value(json_object_get(row, "deq_fnv")));
    }
    nvl_weights_close(w);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    assert_int_equal(system(cmd), 0);
}

static void writers_match_torch(void **state)
{
    (void)state;
    json_t *r = reference();
    json_t *formats = json_object_get(r, "formats");
    /* the ModelOpt, FP8-block and compressed-tensors MX-FP4 writers'
     * torch references (int8, int4: tests/quant/check_int.py) */
    const nvl_quant_format_t fs[4] = {NVL_QUANT_NVFP4, NVL_QUANT_FP8,
                                      NVL_QUANT_FP8_BLOCK, NVL_QUANT_MXFP4};
    for (int i = 0; i < 4; i++) {
        json_t *rows = json_object_get(formats, nvl_quant_row(fs[i])->m.name);
        assert_int_equal(json_object_size(rows), 14);
        check_format(QDATA "/qwen3-quant-tiny", fs[i], rows);
    }
    json_decref(r);
}

/* The tiny mixture of experts (tests/data/hf/qwen3-moe-tiny16, bf16,
 * widths of whole NVFP4 blocks) in NVFP4: its 32 weights, each expert's
 * gate/up under their shared amax, against torch's ModelOpt rounding
 * (scripts/device/make-moe-nvfp4-fixture.py). */
static void moe_writer_matches_torch(void **state)
{
    (void)state;
    json_error_t err;
    json_t *r = json_load_file(QDATA "/moe-quant-reference.json", 0, &err);
    assert_non_null(r);
    json_t *rows = json_object_get(json_object_get(r, "formats"), "nvfp4");
    assert_int_equal(json_object_size(rows), 32);
    check_format(NVL_TEST_DATA "/hf/qwen3-moe-tiny16", NVL_QUANT_NVFP4, rows);
    json_decref(r);
}

/* The parts of a fused GEMM: q/k/v and gate/up under one prefix (an
 * expert's too), a whole module name only; anything else alone.  And
 * nvfp4 alone shares the per-tensor amax (ModelOpt leaves FP8 per tensor
 * out of its fusion). */
static void fused_parts(void **state)
{
    (void)state;
    char p[3][256];
    assert_int_equal(nvl_quant_fused_parts("model.layers.2.self_attn.k_proj"
                                           ".weight", p), 3);
    assert_string_equal(p[0], "model.layers.2.self_attn.q_proj.weight");
    assert_string_equal(p[2], "model.layers.2.self_attn.v_proj.weight");
    assert_int_equal(nvl_quant_fused_parts("model.layers.0.mlp.experts.7."
                                           "up_proj.weight", p), 2);
    assert_string_equal(p[0], "model.layers.0.mlp.experts.7.gate_proj.weight");
    assert_string_equal(p[1], "model.layers.0.mlp.experts.7.up_proj.weight");
    assert_int_equal(nvl_quant_fused_parts("model.layers.0.mlp.down_proj"
                                           ".weight", p), 1);
    assert_string_equal(p[0], "model.layers.0.mlp.down_proj.weight");
    assert_int_equal(nvl_quant_fused_parts("a.xq_proj.weight", p), 1);
    assert_int_equal(nvl_quant_fused_parts("q_proj.weight", p), 3);
    for (int f = 0; f < NVL_QUANT_COUNT; f++)
        assert_int_equal(nvl_quant_row(f)->fused_amax, f == NVL_QUANT_NVFP4);
}

/* ---- bad checkpoints: one message naming the tensor and the file ---- */

static const char *cfg_nvfp4 =
    "{\"quantization_config\": {\"quant_method\": \"modelopt\", "
    "\"quant_algo\": \"NVFP4\", \"group_size\": 16}}";

/* A checkpoint in tmp of one weight "m.weight" (2 x 32 unless the
 * entries are changed by `edit`) in format fmt, config.json cfg. */
static void write_bad_as(nvl_quant_format_t fmt, const char *cfg,
                         void (*edit)(nvl_st_entry_t *e, unsigned char *buf))
{
    snprintf(tmp, sizeof tmp, "/tmp/nvl-quant-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    float w[64];
    for (int k = 0; k < 64; k++)
        w[k] = (float)(k % 7) - 3.0f;
    nvl_quant_tensor_t t;
    assert_int_equal(nvl_quant_tensor(fmt, "m.weight", w, 2, 32, 0.0f, &t),
                     NVL_OK);
    static unsigned char buf[64];
    static char names[3][64];
    nvl_st_entry_t e[3];
    for (int i = 0; i < t.n_parts; i++) {
        snprintf(names[i], sizeof names[i], "m.%s", t.part[i].suffix);
        e[i] = (nvl_st_entry_t){
            names[i],        t.part[i].dtype,
            t.part[i].ndim,  {t.part[i].shape[0], t.part[i].shape[1],
                              t.part[i].shape[2]},
            t.part[i].bytes, t.part[i].n_bytes};
    }
    if (edit != NULL)
        edit(e, buf);
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    assert_int_equal(nvl_st_write(path, e, (size_t)t.n_parts), NVL_OK);
    snprintf(path, sizeof path, "%s/config.json", tmp);
    FILE *f = fopen(path, "w");
    fputs(cfg, f);
    fclose(f);
    nvl_quant_tensor_free(&t);
}

#define write_bad(cfg, edit) write_bad_as(NVL_QUANT_NVFP4, cfg, edit)

static void remove_tmp(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    assert_int_equal(system(cmd), 0);
}

/* Reads m.weight (all of it, or columns col0.. of 16); the one report must
 * hold `want`, the file and the tensor. */
static void expect_bad(uint64_t col0, const char *want, const char *tensor)
{
    nvl_weights_t *w;
    reports.count = 0;
    nvl_status_t st = nvl_weights_open(tmp, &w);
    float v[64];
    if (st == NVL_OK) {
        st = col0 ? nvl_weights_read_f32(w, "m.weight", 0, 2, col0, 16, v)
                  : nvl_weights_read_f32(w, "m.weight", 0, 2, 0, 32, v);
        nvl_weights_close(w);
    }
    assert_int_equal(st, NVL_ERR_INVALID);
    assert_int_equal(reports.count, 1);
    if (strstr(reports.last, want) == NULL ||
        strstr(reports.last, tmp) == NULL ||
        strstr(reports.last, tensor) == NULL)
        fail_msg("report '%s' lacks '%s', '%s' or the file", reports.last, want,
                 tensor);
    remove_tmp();
}

static void scale_f32(nvl_st_entry_t *e, unsigned char *buf)
{
    memset(buf, 0, 16);
    e[1].dtype = "F32";
    e[1].bytes = buf;
    e[1].n_bytes = 16;
}

static void scale_shape(nvl_st_entry_t *e, unsigned char *buf)
{
    (void)buf;
    e[1].shape[0] = 1;
    e[1].shape[1] = 4;
}

static void scale_nan(nvl_st_entry_t *e, unsigned char *buf)
{
    memcpy(buf, e[1].bytes, 4);
    buf[3] = 0x7F; /* E4M3 NaN in block (1, 1) */
    e[1].bytes = buf;
}

static void scale2_inf(nvl_st_entry_t *e, unsigned char *buf)
{
    float inf = INFINITY;
    memcpy(buf, &inf, 4);
    e[2].bytes = buf;
}

static void packed_24(nvl_st_entry_t *e, unsigned char *buf)
{
    (void)buf;
    e[0].shape[0] = 2;
    e[0].shape[1] = 12; /* 24 values a row: not whole blocks of 16 */
    e[0].n_bytes = 24;
    e[1].shape[1] = 2;
}

static void no_scale(nvl_st_entry_t *e, unsigned char *buf)
{
    (void)buf;
    e[1].name = "m.weight_scalez";
}

static void e8m0_nan(nvl_st_entry_t *e, unsigned char *buf)
{
    buf[0] = 0x7F; /* 1.0 */
    buf[1] = 0xFF; /* E8M0 NaN: row 1's block 0 */
    e[1].bytes = buf;
}

static void fp8_scale_nan(nvl_st_entry_t *e, unsigned char *buf)
{
    float nan = NAN;
    memcpy(buf, &nan, 4);
    e[1].bytes = buf;
}

static void fp8_scale_2d(nvl_st_entry_t *e, unsigned char *buf)
{
    (void)buf;
    e[1].ndim = 2;
    e[1].shape[0] = e[1].shape[1] = 1;
}

/* MX-FP4 and FP8 per tensor: their scales' NaN and shape */
static void bad_scales_other_formats(void **state)
{
    (void)state;
    write_bad_as(NVL_QUANT_MXFP4,
                 "{\"quantization_config\": {\"quant_method\": "
                 "\"compressed-tensors\", \"config_groups\": {\"g\": "
                 "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4, "
                 "\"type\": \"float\", \"strategy\": \"group\", "
                 "\"group_size\": 32}}}}}", e8m0_nan);
    expect_bad(0, "holds nan at [1, 0]", "m.weight_scale");
    const char *fp8 = "{\"quantization_config\": {\"quant_method\": "
                      "\"modelopt\", \"quant_algo\": \"FP8\"}}";
    write_bad_as(NVL_QUANT_FP8, fp8, fp8_scale_nan);
    expect_bad(0, "holds nan at [0, 0]", "m.weight_scale");
    write_bad_as(NVL_QUANT_FP8, fp8, fp8_scale_2d);
    expect_bad(0, "has shape [1, 1], but the codes 'm.weight' [2, 32] "
                  "(2 x 32 values) need [] or [1] (one per tensor)",
               "m.weight_scale");
}

static void bad_checkpoints(void **state)
{
    (void)state;
    write_bad(cfg_nvfp4, scale_f32);
    expect_bad(0, "has dtype F32; nvfp4 stores it as F8_E4M3",
               "m.weight_scale");
    write_bad(cfg_nvfp4, scale_shape);
    expect_bad(0,
               "has shape [1, 4], but the codes 'm.weight' [2, 16] "
               "(2 x 32 values) need [2, 2]",
               "m.weight_scale");
    write_bad(cfg_nvfp4, scale_nan);
    expect_bad(0, "holds nan at [1, 1]", "m.weight_scale");
    write_bad(cfg_nvfp4, scale2_inf);
    expect_bad(0, "is inf (a per-tensor scale must be finite and positive)",
               "m.weight_scale_2");
    write_bad(cfg_nvfp4, packed_24);
    expect_bad(0, "its 24 columns do not divide into nvfp4's blocks of 16",
               "m.weight");
    write_bad(cfg_nvfp4, no_scale);
    expect_bad(0, "no tensor 'm.weight_scale' for the nvfp4 weight",
               "m.weight");
    write_bad(cfg_nvfp4, NULL);
    expect_bad(8, "columns 8..24, cuts nvfp4's blocks of 1 x 16", "m.weight");
    write_bad("{\"quantization_config\": {\"quant_method\": \"modelopt\", "
              "\"quant_algo\": \"W4A8_AWQ\"}}",
              NULL);
    expect_bad(0, "quant_algo 'W4A8_AWQ' is not one nvlemu reads",
               "config.json");
    write_bad("{\"quantization_config\": {\"quant_method\": \"gptq\"}}", NULL);
    expect_bad(0, "quant_method 'gptq' is not one nvlemu reads", "config.json");
    write_bad("{\"quantization_config\": {\"quant_method\": \"modelopt\", "
              "\"quant_algo\": \"NVFP4\", \"group_size\": 32}}",
              NULL);
    expect_bad(0, "group_size must be 16", "config.json");
    write_bad("{\"quantization_config\": {\"quant_method\": \"fp8\", "
              "\"weight_block_size\": [64, 64]}}",
              NULL);
    expect_bad(0, "weight_block_size must be [128, 128]", "config.json");
    write_bad("{\"quantization_config\": {\"quant_method\": \"modelopt\", "
              "\"quant_algo\": \"NVFP4\", \"kv_cache_quant_algo\": "
              "\"NVFP4\"}}",
              NULL);
    expect_bad(0, "kv_cache_quant_algo 'NVFP4' is not one nvlemu reads",
               "config.json");
    write_bad("{\"quantization_config\": {\"quant_method\": \"fp8\", "
              "\"activation_scheme\": 3}}",
              NULL);
    expect_bad(0, "activation_scheme must be \"dynamic\" or \"static\"",
               "config.json");
}

/* FP8 blocks: a last, short block is read (vLLM's ceil grid); a slice
 * ending inside a block is refused. */
static void fp8_block_partial(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/nvl-quant-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    enum { R = 130, C = 136 };
    static unsigned char q[R * C];
    float sinv[4] = {0.5f, 0.25f, 2.0f, 4.0f}; /* [2, 2] */
    for (int i = 0; i < R * C; i++)
        q[i] = 0x38; /* 1.0 */
    nvl_st_entry_t e[2] = {
        {"m.weight", "F8_E4M3", 2, {R, C}, q, sizeof q},
        {"m.weight_scale_inv", "F32", 2, {2, 2}, (unsigned char *)sinv, 16}};
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    assert_int_equal(nvl_st_write(path, e, 2), NVL_OK);
    snprintf(path, sizeof path, "%s/config.json", tmp);
    FILE *f = fopen(path, "w");
    fputs("{\"quantization_config\": {\"quant_method\": \"fp8\", "
          "\"weight_block_size\": [128, 128]}}", f);
    fclose(f);
    nvl_weights_t *w;
    assert_int_equal(nvl_weights_open(tmp, &w), NVL_OK);
    float v[2 * 8];
    /* rows 128..130, columns 128..136: the short corner block, x 4 */
    assert_int_equal(nvl_weights_read_f32(w, "m.weight", 128, 2, 128, 8, v),
                     NVL_OK);
    for (int i = 0; i < 16; i++)
        assert_true(v[i] == 4.0f);
    assert_int_equal(nvl_weights_read_f32(w, "m.weight", 0, 1, 0, 8, v),
                     NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "cuts fp8-block's blocks of 128"));
    nvl_weights_close(w);
    remove_tmp();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(e2m1_codes),
        cmocka_unit_test(e4m3_codes),
        cmocka_unit_test(e8m0_codes),
        cmocka_unit_test(block_edges),
        cmocka_unit_test(fused_parts),
        cmocka_unit_test_setup_teardown(writers_refuse, capture_reports,
                                        release_reports),
        cmocka_unit_test(writers_match_torch),
        cmocka_unit_test(moe_writer_matches_torch),
        cmocka_unit_test_setup_teardown(bad_checkpoints, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(bad_scales_other_formats,
                                        capture_reports, release_reports),
        cmocka_unit_test_setup_teardown(fp8_block_partial, capture_reports,
                                        release_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
