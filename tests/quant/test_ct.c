/* Unit tests of compressed-tensors checkpoints in data mode (src/quant/
 * ct_layout.c, ct_config.c; src/model/qweights.c): NVFP4's weight_packed
 * (nibble order, a group scale per 16, the global scale dividing), FP8 per
 * channel with bf16 scales (the model's dtype), the activation rule each
 * group's input_activations gives, the global-scale NVFP4 rule against
 * ModelOpt's where the reciprocal is exact, and groups of several schemes
 * (each module's group, read in its own layout), the scale width the
 * timing model prices from config.json's dtype, and ModelOpt's
 * quantization_config in config.json as its export converts it
 * (config_groups, ignore, kv_cache_scheme: the compressed-tensors-like
 * form, quant_method "modelopt") beside hf_quant_config.json; an E4M3
 * NaN weight code refused; what
 * nvlemu quantize writes for a mixture of experts' router and an FP8 KV
 * cache in compressed-tensors' formats. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "../unit/reports.h"
#include "nvlemu/cost.h"
#include "nvlemu/quant.h"
#include "nvlemu/weights.h"

static char tmp[64];

/* A checkpoint in tmp: the n tensors e, config.json's quantization_config
 * `qc` (JSON text). */
static void write_ckpt(const nvl_st_entry_t *e, int n, const char *qc)
{
    snprintf(tmp, sizeof tmp, "/tmp/nvl-ct-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    assert_int_equal(nvl_st_write(path, e, n), NVL_OK);
    snprintf(path, sizeof path, "%s/config.json", tmp);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"quantization_config\": {\"quant_method\": "
               "\"compressed-tensors\", %s}}", qc);
    fclose(f);
}

static void remove_tmp(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    assert_int_equal(system(cmd), 0);
}

#define NVFP4_GROUP                                                           \
    "\"format\": \"nvfp4-pack-quantized\", \"config_groups\": {\"g\": "       \
    "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4, \"type\": "   \
    "\"float\", \"strategy\": \"tensor_group\", \"group_size\": 16}, "

/* m.weight_packed U8 [2, 16] (2 x 32 values: element j of a row has code
 * (j + row) % 16, element 2i in the low nibble), weight_scale E4M3 [2, 2]
 * of 1, 2, 0.5, 4 (0x38, 0x40, 0x30, 0x48), weight_global_scale 3: each
 * value code x scale / 3, rounded once. */
static void nvfp4_packed(void **state)
{
    (void)state;
    static unsigned char packed[32];
    static const unsigned char sc[4] = {0x38, 0x40, 0x30, 0x48};
    const float s[4] = {1.0f, 2.0f, 0.5f, 4.0f}, gs = 3.0f;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 16; i++)
            packed[r * 16 + i] = (unsigned char)(((2 * i + r) % 16) |
                                                 ((2 * i + 1 + r) % 16) << 4);
    nvl_st_entry_t e[3] = {
        {.name = "m.weight_packed", .dtype = "U8", .ndim = 2,
         .shape = {2, 16}, .bytes = packed, .n_bytes = 32},
        {.name = "m.weight_scale", .dtype = "F8_E4M3", .ndim = 2,
         .shape = {2, 2}, .bytes = sc, .n_bytes = 4},
        {.name = "m.weight_global_scale", .dtype = "F32", .ndim = 1,
         .shape = {1}, .bytes = (const unsigned char *)&gs, .n_bytes = 4}};
    write_ckpt(e, 3, NVFP4_GROUP "\"input_activations\": null}}");
    nvl_weights_t *w;
    assert_int_equal(nvl_weights_open(tmp, &w), NVL_OK);
    assert_int_equal(nvl_act_quant_of(nvl_weights_quant(w)), NVL_ACT_NONE);
    float v[64];
    assert_int_equal(nvl_weights_read_f32(w, "m.weight", 0, 2, 0, 32, v),
                     NVL_OK);
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 32; j++) {
            float want = nvl_e2m1_decode((uint8_t)((j + r) % 16)) *
                         s[r * 2 + j / 16] / gs;
            if (v[r * 32 + j] != want)
                fail_msg("[%d, %d]: %g, want %g", r, j, (double)v[r * 32 + j],
                         (double)want);
        }
    nvl_weights_close(w);
    remove_tmp();
}

/* FP8 per channel: m.weight E4M3 [3, 4] all 1.5 (0x3C), weight_scale BF16
 * [3, 1] of 0.5, 0.25, 3 (0x3F00, 0x3E80, 0x4040); input_activations
 * dynamic per token: each row 1.5 x its scale, FP8 per token. */
static void fp8_channel_bf16(void **state)
{
    (void)state;
    static unsigned char q[12];
    static const unsigned char sc[6] = {0x00, 0x3F, 0x80, 0x3E, 0x40, 0x40};
    memset(q, 0x3C, sizeof q);
    nvl_st_entry_t e[2] = {
        {.name = "m.weight", .dtype = "F8_E4M3", .ndim = 2, .shape = {3, 4},
         .bytes = q, .n_bytes = 12},
        {.name = "m.weight_scale", .dtype = "BF16", .ndim = 2,
         .shape = {3, 1}, .bytes = sc, .n_bytes = 6}};
    const char *cfg =
        "\"format\": \"float-quantized\", \"config_groups\": {\"g\": "
        "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8, "
        "\"type\": \"float\", \"strategy\": \"channel\"}, "
        "\"input_activations\": {\"num_bits\": 8, \"type\": "
        "\"float\", \"strategy\": \"token\", \"dynamic\": true}}}";
    write_ckpt(e, 2, cfg);
    nvl_weights_t *w;
    assert_int_equal(nvl_weights_open(tmp, &w), NVL_OK);
    const nvl_quant_config_t *q8 = nvl_weights_quant(w);
    assert_int_equal(q8->format, NVL_QUANT_FP8);
    assert_int_equal(nvl_act_quant_of(q8), NVL_ACT_FP8_TOKEN);
    float v[12];
    assert_int_equal(nvl_weights_read_f32(w, "m.weight", 1, 2, 0, 4, v),
                     NVL_OK);
    for (int j = 0; j < 4; j++) {
        assert_true(v[j] == 0.375f);
        assert_true(v[4 + j] == 4.5f);
    }
    nvl_weights_close(w);
    remove_tmp();
    /* an E4M3 NaN code (S.1111.111) among the codes: refused, named */
    q[9] = 0xFF;
    write_ckpt(e, 2, cfg);
    assert_int_equal(nvl_weights_open(tmp, &w), NVL_OK);
    assert_int_equal(nvl_weights_read_f32(w, "m.weight", 0, 3, 0, 4, v),
                     NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "model.safetensors: tensor 'm.weight' "
                                         "holds the FP8 E4M3 NaN code 0xFF "
                                         "at element 9 ([2, 1] of [3, 4])"));
    nvl_weights_close(w);
    remove_tmp();
}

/* int4 pack-quantized: m.weight_packed I32 [2, 16] (2 x 128 values:
 * element j of row r stored as (j + r) % 16, i.e. q + 8, eight to a
 * little-endian int32, element 8w + k in bits 4k of word w), weight_scale
 * F16 [2, 1] of 0.5 and 3 (0x3800, 0x4200): each value (code - 8) x its
 * row's scale.  int8 naive-quantized: m.weight I8 [2, 4] of -128, -1, 0,
 * 127 (both rows), weight_scale F16 [2, 1] of 2^-10 and 2^-24 (0x1400,
 * 0x0001, a subnormal). */
static void int_f16_scales(void **state)
{
    (void)state;
    static unsigned char packed[128];
    static const unsigned char sc[4] = {0x00, 0x38, 0x00, 0x42};
    static const int64_t shape[2] = {2, 128};
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 64; i++)
            packed[r * 64 + i] = (unsigned char)(((2 * i + r) % 16) |
                                                 ((2 * i + 1 + r) % 16) << 4);
    nvl_st_entry_t e[3] = {
        {.name = "m.weight_packed", .dtype = "I32", .ndim = 2,
         .shape = {2, 16}, .bytes = packed, .n_bytes = 128},
        {.name = "m.weight_scale", .dtype = "F16", .ndim = 2,
         .shape = {2, 1}, .bytes = sc, .n_bytes = 4},
        {.name = "m.weight_shape", .dtype = "I64", .ndim = 1,
         .shape = {2}, .bytes = (const unsigned char *)shape, .n_bytes = 16}};
    write_ckpt(e, 3,
               "\"format\": \"pack-quantized\", \"config_groups\": {\"g\": "
               "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4, "
               "\"type\": \"int\", \"strategy\": \"group\", "
               "\"group_size\": 128}, \"input_activations\": null}}");
    nvl_weights_t *w;
    float v[256];
    assert_int_equal(nvl_weights_open(tmp, &w), NVL_OK);
    assert_int_equal(nvl_weights_quant(w)->format, NVL_QUANT_INT4);
    assert_int_equal(nvl_weights_read_f32(w, "m.weight", 0, 2, 0, 128, v),
                     NVL_OK);
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 128; j++)
            assert_true(v[r * 128 + j] ==
                        (float)((j + r) % 16 - 8) * (r ? 3.0f : 0.5f));
    nvl_weights_close(w);
    remove_tmp();
    static const unsigned char q8[8] = {0x80, 0xFF, 0x00, 0x7F,
                                        0x80, 0xFF, 0x00, 0x7F};
    static const unsigned char sc8[4] = {0x00, 0x14, 0x01, 0x00};
    nvl_st_entry_t e8[2] = {
        {.name = "m.weight", .dtype = "I8", .ndim = 2, .shape = {2, 4},
         .bytes = q8, .n_bytes = 8},
        {.name = "m.weight_scale", .dtype = "F16", .ndim = 2,
         .shape = {2, 1}, .bytes = sc8, .n_bytes = 4}};
    write_ckpt(e8, 2,
               "\"format\": \"naive-quantized\", \"config_groups\": {\"g\": "
               "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8, "
               "\"type\": \"int\", \"strategy\": \"channel\"}, "
               "\"input_activations\": null}}");
    assert_int_equal(nvl_weights_open(tmp, &w), NVL_OK);
    assert_int_equal(nvl_weights_read_f32(w, "m.weight", 0, 2, 0, 4, v),
                     NVL_OK);
    static const float code[4] = {-128.0f, -1.0f, 0.0f, 127.0f};
    for (int j = 0; j < 4; j++) {
        assert_true(v[j] == code[j] * 0x1p-10f);
        assert_true(v[4 + j] == code[j] * 0x1p-24f);
    }
    nvl_weights_close(w);
    remove_tmp();
}

/* NVFP4 with input activations: the global-scale rule; with gs a power of
 * two (an exact reciprocal) it is ModelOpt's rule with 1 / gs, bit for
 * bit. */
static void nvfp4_global_rule(void **state)
{
    (void)state;
    nvl_quant_config_t q = {.quantized = true, .format = NVL_QUANT_NVFP4};
    assert_int_equal(nvl_act_quant_of(&q), NVL_ACT_NVFP4);
    float x[40], a[40], b[40];
    for (int i = 0; i < 40; i++)
        x[i] = sinf((float)i * 0.7f) * (float)(i % 9 + 1);
    nvl_act_quant_nvfp4_gs(x, 40, 256.0f, a);
    nvl_act_quant_nvfp4(x, 40, 1.0f / 256.0f, b);
    assert_memory_equal(a, b, sizeof a);
}

/* Groups of several schemes (llm-compressor's recipes): the group each
 * module takes (compressed-tensors' order: whole names, then sorted
 * expressions, then "Linear"; vLLM's file order named where it differs),
 * ignore first, and each module read in its own group's layout: FP8 per
 * channel (E4M3 1.5 x 0.25 and x 3) and int8 per channel (-128, -1, 0,
 * 127 x 0.5 and x 2). */
static void mixed_groups(void **state)
{
    (void)state;
    static unsigned char f8[8];
    /* int8 codes -128, -1, 0, 127; F32 scales 0.25, 3 and 0.5, 2 */
    static const unsigned char i8[8] = {0x80, 0xFF, 0x00, 0x7F,
                                        0x80, 0xFF, 0x00, 0x7F};
    static const unsigned char s8[8] = {0, 0, 0x80, 0x3E, 0, 0, 0x40, 0x40};
    static const unsigned char si[8] = {0, 0, 0, 0x3F, 0, 0, 0, 0x40};
    memset(f8, 0x3C, sizeof f8);
    nvl_st_entry_t e[4] = {
        {.name = "a.self_attn.q_proj.weight", .dtype = "F8_E4M3", .ndim = 2,
         .shape = {2, 4}, .bytes = f8, .n_bytes = 8},
        {.name = "a.self_attn.q_proj.weight_scale", .dtype = "F32",
         .ndim = 2, .shape = {2, 1}, .bytes = s8, .n_bytes = 8},
        {.name = "a.mlp.up_proj.weight", .dtype = "I8", .ndim = 2,
         .shape = {2, 4}, .bytes = i8, .n_bytes = 8},
        {.name = "a.mlp.up_proj.weight_scale", .dtype = "F32", .ndim = 2,
         .shape = {2, 1}, .bytes = si, .n_bytes = 8}};
#define FP8_CH                                                                    "\"weights\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": "    \
    "\"channel\"}, \"input_activations\": {\"num_bits\": 8, \"type\": "    \
    "\"float\", \"strategy\": \"token\", \"dynamic\": true}"
    write_ckpt(e, 4,
               "\"format\": \"mixed-precision\", \"ignore\": [\"a.mlp.skip\"], "
               "\"config_groups\": {\"attn\": {\"targets\": "
               "[\"re:.*self_attn.*\"], \"format\": \"float-quantized\", "
               FP8_CH "}, \"mlp\": {\"targets\": [\"re:.*mlp.*\", "
               "\"a.self_attn.o_proj\"], \"format\": \"int-quantized\", "
               "\"weights\": {\"num_bits\": 8, \"type\": \"int\", "
               "\"strategy\": \"channel\"}, \"input_activations\": null}, "
               "\"rest\": {\"targets\": [\"Linear\"], " FP8_CH "}}");
#undef FP8_CH
    nvl_weights_t *w;
    assert_int_equal(nvl_weights_open(tmp, &w), NVL_OK);
    const nvl_quant_config_t *q = nvl_weights_quant(w);
    int other;
    assert_int_equal(q->n_group, 3);
    assert_true(nvl_quant_config_mixed(q));
    assert_int_equal(nvl_quant_config_group(q, "a.self_attn.q_proj", &other),
                     0);
    assert_int_equal(other, -1);
    /* a whole name before an expression; vLLM takes the file's first */
    assert_int_equal(nvl_quant_config_group(q, "a.self_attn.o_proj", &other),
                     1);
    assert_int_equal(other, 0);
    assert_int_equal(nvl_quant_config_group(q, "a.mlp.up_proj", &other), 1);
    assert_int_equal(nvl_quant_config_group(q, "b.dense", &other), 2);
    assert_int_equal(nvl_quant_config_group(q, "a.mlp.skip", &other), -1);
    float v[8];
    assert_int_equal(nvl_weights_read_f32(w, "a.self_attn.q_proj.weight", 0,
                                          2, 0, 4, v),
                     NVL_OK);
    for (int j = 0; j < 4; j++)
        assert_true(v[j] == 0.375f && v[4 + j] == 4.5f);
    assert_int_equal(
        nvl_weights_read_f32(w, "a.mlp.up_proj.weight", 0, 2, 0, 4, v),
        NVL_OK);
    static const float want[8] = {-64.0f, -0.5f, 0.0f, 63.5f,
                                   -256.0f, -2.0f, 0.0f, 254.0f};
    for (int j = 0; j < 8; j++)
        assert_true(v[j] == want[j]);
    nvl_weights_close(w);
    remove_tmp();
}

/* A scale's bytes: config.json's dtype (or torch_dtype) for the layouts
 * whose scale takes the model's dtype (int4's weight_scale: [384, 1] of
 * them for a [384 x 128] weight), the format's own elsewhere (NVFP4's
 * E4M3 group scales and FP32 per-tensor scale). */
static void scale_width(void **state)
{
    (void)state;
    static const char *const dtype[4] = {"\"dtype\": \"bfloat16\", ",
                                         "\"torch_dtype\": \"float16\", ",
                                         "\"dtype\": \"float32\", ", ""};
    static const uint32_t want[4] = {2, 2, 4, 0};
    for (int i = 0; i < 4; i++) {
        snprintf(tmp, sizeof tmp, "/tmp/nvl-ct-XXXXXX");
        assert_non_null(mkdtemp(tmp));
        char path[128];
        snprintf(path, sizeof path, "%s/config.json", tmp);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "{%s\"quantization_config\": {\"quant_method\": "
                   "\"compressed-tensors\", \"format\": \"pack-quantized\", "
                   "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], "
                   "\"weights\": {\"num_bits\": 4, \"type\": \"int\", "
                   "\"strategy\": \"group\", \"group_size\": 128}, "
                   "\"input_activations\": null}}}}",
                dtype[i]);
        fclose(f);
        nvl_quant_config_t q;
        assert_int_equal(nvl_quant_config_read(tmp, &q), NVL_OK);
        assert_int_equal(q.scale_bytes, want[i]);
        remove_tmp();
    }
    assert_true(nvl_cost_weight_bytes(NVL_WDT_INT4, 384, 128, 2).scale_bytes ==
                768.0);
    assert_true(nvl_cost_weight_bytes(NVL_WDT_INT4, 384, 128, 0).scale_bytes ==
                1536.0);
    assert_true(nvl_cost_weight_bytes(NVL_WDT_NVFP4, 384, 128, 2).scale_bytes ==
                384.0 * 8.0 + 4.0);
}

/* tmp/name holds text */
static void put_file(const char *name, const char *text)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* nvl_quant_config_read of tmp fails with one report holding want */
static void expect_config_bad(const char *want)
{
    nvl_quant_config_t q;
    reports.count = 0;
    assert_int_equal(nvl_quant_config_read(tmp, &q), NVL_ERR_INVALID);
    expect_one_report(want);
    remove_tmp();
}

/* ModelOpt's quantization_config in config.json as its export converts it
 * (convert_hf_quant_config_format: ignore, kv_cache_scheme, config_groups'
 * group_size), and a config.json that disagrees with hf_quant_config.json */
static void modelopt_config_forms(void **state)
{
    (void)state;
    static const char *group =
        "\"config_groups\": {\"group_0\": {\"weights\": {\"num_bits\": 4, "
        "\"type\": \"float\", \"group_size\": %d}, \"targets\": "
        "[\"Linear\"]}}";
    char cfg[1024], g[256];
    snprintf(g, sizeof g, group, 16);
    snprintf(cfg, sizeof cfg,
             "{\"quantization_config\": {%s, \"ignore\": [\"lm_head\", "
             "\"model.layers.1.mlp*\"], \"quant_algo\": \"NVFP4\", "
             "\"kv_cache_scheme\": {\"dynamic\": false, \"num_bits\": 8, "
             "\"type\": \"float\"}, \"quant_method\": \"modelopt\"}}", g);
    snprintf(tmp, sizeof tmp, "/tmp/nvl-ct-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    put_file("config.json", cfg);
    nvl_quant_config_t q;
    assert_int_equal(nvl_quant_config_read(tmp, &q), NVL_OK);
    assert_true(q.quantized && q.format == NVL_QUANT_NVFP4 && q.kv_fp8);
    assert_int_equal(q.n_exclude, 2);
    assert_string_equal(q.exclude_key, "ignore");
    assert_string_equal(q.exclude[1], "model.layers.1.mlp*");
    /* the same with hf_quant_config.json saying so: agreed */
    put_file("hf_quant_config.json",
             "{\"quantization\": {\"quant_algo\": \"NVFP4\", "
             "\"kv_cache_quant_algo\": \"FP8\", \"group_size\": 16, "
             "\"exclude_modules\": [\"lm_head\", \"model.layers.1.mlp*\"]}}");
    assert_int_equal(nvl_quant_config_read(tmp, &q), NVL_OK);
    /* hf_quant_config.json without the KV cache: they disagree */
    put_file("hf_quant_config.json",
             "{\"quantization\": {\"quant_algo\": \"NVFP4\", "
             "\"exclude_modules\": [\"lm_head\", \"model.layers.1.mlp*\"]}}");
    expect_config_bad("config.json: quantization_config and ");

    snprintf(tmp, sizeof tmp, "/tmp/nvl-ct-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    snprintf(g, sizeof g, group, 32);
    snprintf(cfg, sizeof cfg,
             "{\"quantization_config\": {%s, \"quant_algo\": \"NVFP4\", "
             "\"quant_method\": \"modelopt\"}}", g);
    put_file("config.json", cfg);
    expect_config_bad("config_groups.group_0.weights.group_size must be 16");

    snprintf(tmp, sizeof tmp, "/tmp/nvl-ct-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    put_file("config.json",
             "{\"quantization_config\": {\"quant_algo\": \"FP8\", "
             "\"kv_cache_scheme\": {\"num_bits\": 4, \"type\": \"float\"}, "
             "\"quant_method\": \"modelopt\"}}");
    expect_config_bad("kv_cache_scheme an object other than FP8's");

    snprintf(tmp, sizeof tmp, "/tmp/nvl-ct-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    put_file("config.json",
             "{\"quantization_config\": {\"quant_algo\": \"NVFP4_AWQ\", "
             "\"quant_method\": \"modelopt\"}}");
    put_file("hf_quant_config.json",
             "{\"quantization\": {\"quant_algo\": \"NVFP4\"}}");
    expect_config_bad("config.json: quant_algo 'NVFP4_AWQ' is not one");
}

/* compressed-tensors' writers (int8, mxfp4) on a mixture of experts: the
 * router stays float and is ignored by name as llm-compressor's MoE
 * examples write it ("re:.*mlp.gate$"), which the reader then skips, and
 * --kv-dtype fp8 writes its kv_cache_scheme, read back as an FP8 cache;
 * ModelOpt's FP8 writes neither (kv_cache_quant_algo instead). */
static void ct_router_and_kv(void **state)
{
    (void)state;
    const char *in = NVL_TEST_DATA "/hf/qwen3-moe-tiny16",
               *gate = "model.layers.1.mlp.gate.weight";
    const nvl_quant_format_t fs[3] = {NVL_QUANT_INT8, NVL_QUANT_MXFP4,
                                      NVL_QUANT_FP8};
    for (int i = 0; i < 3; i++) {
        bool ct = fs[i] != NVL_QUANT_FP8;
        snprintf(tmp, sizeof tmp, "/tmp/nvl-quant-XXXXXX");
        assert_non_null(mkdtemp(tmp));
        nvl_weights_quant_opts_t qo = {.format = fs[i], .kv_fp8 = true};
        assert_int_equal(nvl_weights_quantize(in, tmp, &qo), NVL_OK);
        char path[128];
        snprintf(path, sizeof path, "%s/config.json", tmp);
        json_error_t err;
        json_t *cfg = json_load_file(path, 0, &err);
        assert_non_null(cfg);
        json_t *q = json_object_get(cfg, "quantization_config");
        json_t *ig = json_object_get(q, "ignore");
        if (ct) {
            assert_int_equal(json_array_size(ig), 2);
            assert_string_equal(json_string_value(json_array_get(ig, 1)),
                                "re:.*mlp.gate$");
            json_t *kv = json_object_get(q, "kv_cache_scheme");
            assert_int_equal(json_integer_value(json_object_get(kv, "num_bits")),
                             8);
            assert_string_equal(json_string_value(json_object_get(kv, "type")),
                                "float");
            assert_string_equal(
                json_string_value(json_object_get(kv, "strategy")), "tensor");
            assert_true(json_is_false(json_object_get(kv, "dynamic")));
        }
        json_decref(cfg);
        nvl_quant_config_t qc;
        assert_int_equal(nvl_quant_config_read(tmp, &qc), NVL_OK);
        assert_true(qc.kv_fp8);
        int entry;
        assert_int_equal(nvl_quant_config_skips(&qc, "model.layers.1.mlp.gate",
                                                &entry),
                         ct);
        assert_false(nvl_quant_config_skips(
            &qc, "model.layers.1.mlp.experts.3.up_proj", &entry));
        nvl_weights_t *w, *f;
        const char *dt, *dt_in;
        assert_int_equal(nvl_weights_open(tmp, &w), NVL_OK);
        assert_int_equal(nvl_weights_open(in, &f), NVL_OK);
        assert_int_equal(nvl_weights_stored_dtype(w, gate, &dt), NVL_OK);
        assert_int_equal(nvl_weights_stored_dtype(f, gate, &dt_in), NVL_OK);
        assert_string_equal(dt, dt_in);
        nvl_weights_close(w);
        nvl_weights_close(f);
        remove_tmp();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nvfp4_packed),
        cmocka_unit_test(ct_router_and_kv),
        cmocka_unit_test_setup_teardown(fp8_channel_bf16, capture_reports,
                                        release_reports),
        cmocka_unit_test(int_f16_scales),
        cmocka_unit_test(nvfp4_global_rule),
        cmocka_unit_test(mixed_groups),
        cmocka_unit_test(scale_width),
        cmocka_unit_test_setup_teardown(modelopt_config_forms,
                                        capture_reports, release_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
