/* Unit tests of the model module: presets, config.json reading (the
 * Hugging Face fixtures in tests/data/hf and hand-made variants), errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <math.h>

#include "reports.h"

#include "nvlemu/model.h"

/* Writes text to a fresh temporary config.json; returns its path. */
static const char *write_config(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/nvl_test_config_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_presets_match_their_config(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(nvl_model_preset("qwen2.5-72b", &c), NVL_OK);
    assert_int_equal(c.hidden, 8192);
    assert_int_equal(c.intermediate, 29568);
    assert_int_equal(c.layers, 80);
    assert_int_equal(c.q_heads, 64);
    assert_int_equal(c.kv_heads, 8);
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(c.vocab, 152064);
    assert_false(c.tied_embeddings);
    assert_true(c.qkv_bias);
    assert_false(c.qk_norm);
    assert_true(c.rope_theta == 1e6 && c.rms_eps == 1e-6);

    assert_int_equal(nvl_model_preset("qwen2.5-0.5b", &c), NVL_OK);
    assert_int_equal(c.hidden, 896);
    assert_int_equal(c.q_heads, 14);
    assert_int_equal(c.head_dim, 64);
    assert_true(c.tied_embeddings);

    assert_int_equal(nvl_model_preset("qwen3-32b", &c), NVL_OK);
    assert_int_equal(c.family, NVL_QWEN3);
    assert_int_equal(c.hidden, 5120);
    assert_int_equal(c.intermediate, 25600);
    assert_int_equal(c.q_heads * c.head_dim, 8192); /* not hidden */
    assert_false(c.qkv_bias);
    assert_true(c.qk_norm);

    /* meta-llama/Llama-3.3-70B-Instruct and Llama-3.1-405B's config.json */
    assert_int_equal(nvl_model_preset("llama3.3-70b", &c), NVL_OK);
    assert_int_equal(c.family, NVL_LLAMA);
    assert_int_equal(c.hidden, 8192);
    assert_int_equal(c.intermediate, 28672);
    assert_int_equal(c.layers, 80);
    assert_int_equal(c.q_heads, 64);
    assert_int_equal(c.kv_heads, 8);
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(c.vocab, 128256);
    assert_int_equal(c.max_positions, 131072);
    assert_false(c.tied_embeddings || c.qkv_bias || c.qk_norm);
    assert_true(c.rope_theta == 500000 && c.rms_eps == 1e-5);
    assert_true(c.rope_llama3_factor == 8 && c.rope_low_freq_factor == 1 &&
                c.rope_high_freq_factor == 4);
    assert_int_equal(c.rope_original_positions, 8192);
    assert_true(c.rope_yarn_factor == 0);
    assert_int_equal(nvl_model_max_context(&c), 131072);
    /* YaRN is not stacked on llama3 scaling: refused, cfg unchanged */
    assert_int_equal(nvl_model_set_yarn(&c, 4), NVL_ERR_INVALID);
    assert_int_equal(reports.count, 1);
    assert_non_null(strstr(reports.last, "already has llama3 rope scaling"));
    assert_true(c.rope_yarn_factor == 0 && c.rope_original_positions == 8192);
    reports.count = 0;
    assert_int_equal(nvl_model_preset("llama3.1-405b", &c), NVL_OK);
    assert_int_equal(c.family, NVL_LLAMA);
    assert_int_equal(c.hidden, 16384);
    assert_int_equal(c.intermediate, 53248);
    assert_int_equal(c.layers, 126);
    assert_int_equal(c.q_heads, 128);
    assert_int_equal(c.kv_heads, 8);
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(c.vocab, 128256);
    assert_true(c.rope_llama3_factor == 8 && c.rope_theta == 500000);
    assert_int_equal(reports.count, 0);
}

/* Published sizes: 72.7B, 7.61B, 0.49B, 32.8B parameters; Llama 3.x 70B
 * 70.6B and 405B 405.9B (Meta's model cards); gpt-oss-20b 20.9B and
 * gpt-oss-120b 116.8B (OpenAI's gpt-oss model card, table 1). */
static void test_param_counts(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        double billions;
    } want[] = {{"qwen2.5-72b", 72.7},
                {"qwen2.5-7b", 7.61},
                {"qwen2.5-0.5b", 0.494},
                {"qwen3-32b", 32.8},
                {"qwen3-30b-a3b", 30.5},
                {"qwen3-235b-a22b", 235.1},
                {"llama3.3-70b", 70.6},
                {"llama3.1-405b", 405.9},
                {"gpt-oss-20b", 20.9},
                {"gpt-oss-120b", 116.8}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        nvl_model_config_t c;
        assert_int_equal(nvl_model_preset(want[i].name, &c), NVL_OK);
        double b = (double)nvl_model_param_count(&c) / 1e9;
        assert_true(b > want[i].billions * 0.99 && b < want[i].billions * 1.01);
    }
    assert_int_equal(nvl_model_preset_count(), 10);
    assert_string_equal(nvl_model_preset_name(0), "qwen2.5-72b");
    assert_string_equal(nvl_model_preset_name(9), "gpt-oss-120b");
    assert_null(nvl_model_preset_name(10));
}

static void test_unknown_preset(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(nvl_model_preset("qwen2.5-70b", &c), NVL_ERR_INVALID);
    assert_int_equal(reports.count, 1);
    assert_non_null(strstr(reports.last, "'qwen2.5-70b'"));
    assert_non_null(strstr(reports.last, "qwen3-32b"));
}

static void test_hf_fixtures(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(nvl_model_config_load(NVL_TEST_DATA "/hf/qwen2-tiny", &c),
                     NVL_OK);
    assert_int_equal(c.family, NVL_QWEN2);
    assert_int_equal(c.hidden, 128);
    assert_int_equal(c.intermediate, 344);
    assert_int_equal(c.layers, 3);
    assert_int_equal(c.q_heads, 8);
    assert_int_equal(c.kv_heads, 2);
    assert_int_equal(c.head_dim, 16);
    assert_int_equal(c.vocab, 512);
    assert_false(c.tied_embeddings);
    assert_true(c.qkv_bias);
    assert_true(c.rope_theta == 1e6); /* under rope_parameters */
    assert_true(c.rms_eps == 1e-6);
    assert_int_equal(nvl_model_config_load(
                         NVL_TEST_DATA "/hf/qwen2-tiny-tied/config.json", &c),
                     NVL_OK);
    assert_int_equal(c.hidden, 96);
    assert_int_equal(c.q_heads, 6);
    assert_int_equal(c.head_dim, 16);
    assert_true(c.tied_embeddings);
    assert_int_equal(reports.count, 0);
}

static void test_rope_theta_top_level_and_qwen3(void **state)
{
    (void)state;
    nvl_model_config_t c;
    const char *p = write_config(
        "{\"model_type\": \"qwen3\", \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
        "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
        "\"head_dim\": 32, \"vocab_size\": 100, \"rope_theta\": 5000.0, "
        "\"rms_norm_eps\": 1e-5, \"attention_bias\": false}");
    assert_int_equal(nvl_model_config_load(p, &c), NVL_OK);
    unlink(p);
    assert_int_equal(c.family, NVL_QWEN3);
    assert_int_equal(c.head_dim, 32); /* not hidden / heads = 16 */
    assert_true(c.rope_theta == 5000.0);
    assert_true(c.rms_eps == 1e-5);
    assert_false(c.qkv_bias);
    assert_true(c.qk_norm);
    assert_int_equal(c.kv_heads, 2);
}

/* YaRN rope scaling: the context a model allows, from config.json (the
 * Qwen2.5 model cards' rope_scaling block) and from --rope-scaling. */
static void test_rope_scaling(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(nvl_model_preset("qwen2.5-72b", &c), NVL_OK);
    assert_int_equal(nvl_model_max_context(&c), 32768);
    double f = -1;
    assert_int_equal(nvl_model_rope_scaling_parse("--rope-scaling", "yarn:4",
                                                  &f), NVL_OK);
    assert_true(f == 4);
    assert_int_equal(nvl_model_set_yarn(&c, f), NVL_OK);
    assert_int_equal(nvl_model_max_context(&c), 131072);
    assert_int_equal(nvl_model_rope_scaling_parse("--rope-scaling", "none",
                                                  &f), NVL_OK);
    assert_true(f == 0);
    const char *bad[] = {"yarn", "yarn:", "yarn:0.5", "yarn:4x", "linear:2",
                         "yarn:100"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        reports.count = 0;
        assert_int_equal(nvl_model_rope_scaling_parse("--rope-scaling", bad[i],
                                                      &f), NVL_ERR_INVALID);
        assert_int_equal(reports.count, 1);
        assert_non_null(strstr(reports.last, "expected none or yarn:FACTOR"));
    }
    const char *p = write_config(
        "{\"model_type\": \"qwen2\", \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
        "\"num_attention_heads\": 4, \"vocab_size\": 100, "
        "\"max_position_embeddings\": 32768, \"rope_scaling\": "
        "{\"factor\": 4.0, \"original_max_position_embeddings\": 32768, "
        "\"type\": \"yarn\"}}");
    assert_int_equal(nvl_model_config_load(p, &c), NVL_OK);
    unlink(p);
    assert_true(c.rope_yarn_factor == 4);
    assert_int_equal(c.rope_original_positions, 32768);
    assert_int_equal(nvl_model_max_context(&c), 131072);
    /* transformers 5 spelling, the original positions defaulting */
    p = write_config(
        "{\"model_type\": \"qwen2\", \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
        "\"num_attention_heads\": 4, \"vocab_size\": 100, "
        "\"max_position_embeddings\": 4096, \"rope_parameters\": "
        "{\"rope_theta\": 10000.0, \"rope_type\": \"yarn\", "
        "\"factor\": 2.0}}");
    assert_int_equal(nvl_model_config_load(p, &c), NVL_OK);
    unlink(p);
    assert_int_equal(nvl_model_max_context(&c), 8192);
    /* the frequencies transformers 5.17 computes for tests/data/hf/qwen2-yarn
     * (head_dim 16, theta 1e4, factor 4 over 32 positions) */
    assert_int_equal(nvl_model_config_load(NVL_TEST_DATA "/hf/qwen2-yarn", &c),
                     NVL_OK);
    const double want[8] = {1.0, 0.19764235615730286, 0.02500000037252903,
                            0.007905694656074047, 0.0024999999441206455,
                            0.0007905694656074047, 0.0002500000118743628,
                            7.905694656074047e-05};
    for (uint32_t i = 0; i < 8; i++)
        assert_float_equal(nvl_model_rope_inv_freq(&c, i, 16), want[i],
                           1e-7 * want[i]);
    assert_float_equal(nvl_model_rope_scale(&c), 1.138629436111989, 1e-12);
}

/* Llama 3.1's rope scaling by hand: pair i of d has f = theta^(-2i/d) and
 * wavelength w = 2 pi / f; w < P / high keeps f, w > P / low gives f /
 * factor, and between them s = (P / w - low) / (high - low) blends the two
 * as (1 - s) f / factor + s f (transformers' _compute_llama3_parameters). */
static double llama3_by_hand(double theta, double d, double i, double P,
                             double factor, double low, double high)
{
    double f = 1.0 / pow(theta, 2 * i / d);
    double w = 2 * 3.14159265358979323846 / f;
    if (w < P / high)
        return f;
    if (w > P / low)
        return f / factor;
    double s = (P / w - low) / (high - low);
    return (1 - s) * f / factor + s * f;
}

/* Llama: the fixture transformers wrote (rope_parameters of type llama3,
 * head_dim given), the hub's spelling (rope_scaling, rope_theta at the top
 * level), and the llama3 frequencies against the formula and against
 * transformers. */
static void test_llama(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(nvl_model_config_load(NVL_TEST_DATA "/hf/llama-tiny", &c),
                     NVL_OK);
    assert_int_equal(c.family, NVL_LLAMA);
    assert_int_equal(c.hidden, 96);
    assert_int_equal(c.intermediate, 211);
    assert_int_equal(c.q_heads, 6);
    assert_int_equal(c.kv_heads, 3);
    assert_int_equal(c.head_dim, 32); /* not hidden / heads (16) */
    assert_int_equal(c.vocab, 509);
    assert_false(c.qkv_bias || c.qk_norm || c.tied_embeddings);
    assert_true(c.rope_theta == 500000 && c.rms_eps == 1e-5);
    assert_true(c.rope_llama3_factor == 8 && c.rope_low_freq_factor == 1 &&
                c.rope_high_freq_factor == 4);
    assert_int_equal(c.rope_original_positions, 256);
    assert_int_equal(nvl_model_max_context(&c), 2048);
    assert_true(nvl_model_rope_scale(&c) == 1.0);
    /* transformers 5.17's model.rotary_emb.inv_freq for it (reference.json's
     * rope_inv_freq; float32): pairs 0-2 kept, 3-4 blended, 5-15 / 8 */
    const double hf[16] = {
        1.0, 0.44036662578582764, 0.193922758102417, 0.07243003696203232,
        0.010538230650126934, 0.0020700551103800535, 0.0009115831344388425,
        0.00040143076330423355, 0.00017677668074611574, 7.784655463183299e-05,
        3.428102354519069e-05, 1.5096217794052791e-05, 6.647869668086059e-06,
        2.927499735960737e-06, 1.289173155782919e-06, 5.677088097399974e-07};
    for (uint32_t i = 0; i < 16; i++) {
        double got = nvl_model_rope_inv_freq(&c, i, 32);
        assert_float_equal(got, llama3_by_hand(500000, 32, i, 256, 8, 1, 4),
                           1e-15 * got);
        assert_float_equal(got, hf[i], 3e-7 * hf[i]);
    }
    assert_true(nvl_model_rope_inv_freq(&c, 2, 32) ==
                1.0 / pow(500000, 4.0 / 32));                  /* kept */
    assert_true(nvl_model_rope_inv_freq(&c, 9, 32) ==
                1.0 / pow(500000, 18.0 / 32) / 8);             /* / 8 */
    /* the presets: d 128 over 8192 positions; pairs 29-34 are blended */
    assert_int_equal(nvl_model_preset("llama3.3-70b", &c), NVL_OK);
    for (uint32_t i = 0; i < 64; i++) {
        double want = llama3_by_hand(500000, 128, i, 8192, 8, 1, 4);
        assert_float_equal(nvl_model_rope_inv_freq(&c, i, 128), want,
                           1e-15 * want);
    }
    double f30 = 1.0 / pow(500000, 60.0 / 128), w30 = 2 * 3.14159265358979323846 / f30;
    double s30 = (8192 / w30 - 1) / 3;
    assert_true(s30 > 0 && s30 < 1);
    assert_float_equal(nvl_model_rope_inv_freq(&c, 30, 128),
                       (1 - s30) * f30 / 8 + s30 * f30, 1e-15 * f30);
    /* the hub's spelling: rope_scaling, rope_theta at the top level */
    const char *p = write_config(
        "{\"model_type\": \"llama\", \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
        "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
        "\"vocab_size\": 100, \"attention_bias\": false, "
        "\"mlp_bias\": false, \"rope_theta\": 500000.0, "
        "\"max_position_embeddings\": 131072, \"rope_scaling\": "
        "{\"factor\": 8.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": "
        "1.0, \"original_max_position_embeddings\": 8192, \"rope_type\": "
        "\"llama3\"}}");
    assert_int_equal(nvl_model_config_load(p, &c), NVL_OK);
    unlink(p);
    assert_int_equal(c.head_dim, 16);
    assert_true(c.rope_theta == 500000 && c.rope_llama3_factor == 8);
    assert_int_equal(c.rope_original_positions, 8192);
    assert_int_equal(nvl_model_max_context(&c), 131072);
    /* Llama 2 style: no rope scaling, transformers' defaults */
    p = write_config(
        "{\"model_type\": \"llama\", \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
        "\"num_attention_heads\": 4, \"vocab_size\": 100, "
        "\"rope_scaling\": null}");
    assert_int_equal(nvl_model_config_load(p, &c), NVL_OK);
    unlink(p);
    assert_true(c.rope_llama3_factor == 0 && c.rope_theta == 10000);
    assert_int_equal(c.max_positions, 2048);
    assert_true(nvl_model_rope_inv_freq(&c, 3, 16) ==
                1.0 / pow(10000, 6.0 / 16));
    assert_int_equal(reports.count, 0);
}

/* Qwen3-MoE: the presets, the fixtures transformers 5 wrote
 * (num_local_experts, mlp_only_layers) and which layers are sparse. */
static void test_moe(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(nvl_model_preset("qwen3-30b-a3b", &c), NVL_OK);
    assert_int_equal(c.family, NVL_QWEN3_MOE);
    assert_int_equal(c.num_experts, 128);
    assert_int_equal(c.top_k, 8);
    assert_int_equal(c.moe_intermediate, 768);
    assert_true(c.norm_topk_prob);
    assert_true(c.qk_norm);
    assert_true(nvl_model_layer_is_moe(&c, 0));
    assert_true(nvl_model_layer_is_moe(&c, 47));
    assert_int_equal(nvl_model_preset("qwen3-32b", &c), NVL_OK);
    assert_false(nvl_model_layer_is_moe(&c, 0));
    assert_int_equal(nvl_model_config_load(
                         NVL_TEST_DATA "/hf/qwen3-moe-tiny-mlp-only", &c),
                     NVL_OK);
    assert_int_equal(c.family, NVL_QWEN3_MOE);
    assert_int_equal(c.num_experts, 8);
    assert_int_equal(c.top_k, 2);
    assert_int_equal(c.moe_intermediate, 24);
    assert_int_equal(c.intermediate, 64);
    assert_int_equal(c.head_dim, 16);
    assert_int_equal(c.n_mlp_only, 1);
    assert_true(nvl_model_layer_is_moe(&c, 0));
    assert_false(nvl_model_layer_is_moe(&c, 1));
    assert_true(nvl_model_layer_is_moe(&c, 2));
    c.decoder_sparse_step = 2; /* layers 1, 3, 5, ... (minus mlp_only) */
    assert_false(nvl_model_layer_is_moe(&c, 0));
    assert_false(nvl_model_layer_is_moe(&c, 1));
    assert_true(nvl_model_layer_is_moe(&c, 3));
    const char *p = write_config(
        "{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
        "\"num_attention_heads\": 4, \"vocab_size\": 100, "
        "\"num_experts\": 16, \"num_experts_per_tok\": 4, "
        "\"moe_intermediate_size\": 32}");
    assert_int_equal(nvl_model_config_load(p, &c), NVL_OK);
    unlink(p);
    assert_int_equal(c.num_experts, 16);
    assert_false(c.norm_topk_prob); /* transformers' default */
    assert_int_equal(c.decoder_sparse_step, 1);
    assert_int_equal(c.n_mlp_only, 0);
    assert_int_equal(reports.count, 0);
}

static void expect_error(const char *json, nvl_status_t want,
                         const char *text)
{
    nvl_model_config_t c;
    reports.count = 0;
    const char *p = write_config(json);
    assert_int_equal(nvl_model_config_load(p, &c), want);
    unlink(p);
    expect_one_report(text);
}

/* config.json texts nvl_model_config_load refuses, each with one report
 * containing the text. */
#define LLAMA                                                          \
    "{\"model_type\": \"llama\", \"hidden_size\": 64, "                 \
    "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "            \
    "\"num_attention_heads\": 4, \"vocab_size\": 100, "
static const struct {
    const char *json, *text;
} bad_configs[] = {
    {"{\"model_type\": \"qwen2\", \"hidden_size\": 64,\n"
     " \"intermediate_size\": }",
     ":2:"},
    {"{\"model_type\": \"gemma2\"}",
     "model_type 'gemma2' is not supported (expected qwen2, "
     "qwen3, qwen3_moe, llama or gpt_oss)"},
    {"{\"model_type\": \"qwen2\", \"hidden_size\": 64}",
     "missing 'intermediate_size'"},
    {"{\"model_type\": \"qwen2\", \"hidden_size\": \"64\"}",
     "'hidden_size' must be a positive integer"},
    {"{\"model_type\": \"qwen2\", \"hidden_size\": 96, "
     "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
     "\"num_attention_heads\": 6, \"num_key_value_heads\": 4, "
     "\"vocab_size\": 100}",
     "is not a multiple of num_key_value_heads"},
    {"{\"model_type\": \"qwen2\", \"hidden_size\": 64, "
     "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
     "\"num_attention_heads\": 4, \"vocab_size\": 100, "
     "\"rope_theta\": -1}",
     "'rope_theta' must be a positive number"},
    {"{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, "
     "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
     "\"num_attention_heads\": 4, \"vocab_size\": 100, "
     "\"num_experts\": 4, \"num_experts_per_tok\": 8, "
     "\"moe_intermediate_size\": 32}",
     "num_experts_per_tok 8 is more than num_experts 4"},
    {"{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, "
     "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
     "\"num_attention_heads\": 4, \"vocab_size\": 100, "
     "\"num_experts\": 4, \"num_experts_per_tok\": 2}",
     "missing 'moe_intermediate_size'"},
    {"{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, "
     "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
     "\"num_attention_heads\": 4, \"vocab_size\": 100, "
     "\"num_experts\": 4, \"num_experts_per_tok\": 2, "
     "\"moe_intermediate_size\": 32, \"mlp_only_layers\": [5]}",
     "'mlp_only_layers' entry 0"},
    {"{\"model_type\": \"qwen2\", \"hidden_size\": 64, "
     "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
     "\"num_attention_heads\": 4, \"vocab_size\": 100, "
     "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}}",
     "rope scaling type 'linear' is not supported (default, yarn, "
     "llama3)"},
    {"{\"model_type\": \"qwen2\", \"hidden_size\": 64, "
     "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
     "\"num_attention_heads\": 4, \"vocab_size\": 100, "
     "\"rope_scaling\": {\"type\": \"yarn\"}}",
     "rope scaling 'yarn' needs a 'factor'"},
    {LLAMA "\"rope_scaling\": {\"rope_type\": \"dynamic\", "
     "\"factor\": 2}}",
     "rope scaling type 'dynamic' is not supported"},
    {LLAMA "\"rope_scaling\": {\"rope_type\": \"llama3\", "
     "\"factor\": 8, \"high_freq_factor\": 4, "
     "\"original_max_position_embeddings\": 8192}}",
     "rope scaling 'llama3' needs a 'low_freq_factor'"},
    {LLAMA "\"rope_scaling\": {\"rope_type\": \"llama3\", "
     "\"factor\": 8, \"low_freq_factor\": 1, "
     "\"high_freq_factor\": 4}}",
     "rope scaling 'llama3' needs an "
     "'original_max_position_embeddings'"},
    {LLAMA "\"rope_scaling\": {\"rope_type\": \"llama3\", "
     "\"factor\": 0, \"low_freq_factor\": 1, "
     "\"high_freq_factor\": 4, "
     "\"original_max_position_embeddings\": 8192}}",
     "'factor' must be a positive number"},
    {LLAMA "\"rope_scaling\": {\"rope_type\": \"llama3\", "
     "\"factor\": 8, \"low_freq_factor\": 4, "
     "\"high_freq_factor\": 4, "
     "\"original_max_position_embeddings\": 8192}}",
     "high_freq_factor 4 must be more than "
     "low_freq_factor 4"},
    {LLAMA "\"attention_bias\": true}",
     "'attention_bias' true is not supported for model_type llama"},
    {LLAMA "\"mlp_bias\": true}",
     "'mlp_bias' true is not supported for model_type llama"},
    {LLAMA "\"mlp_bias\": 1}",
     "'mlp_bias' must be true or false"},
};
#undef LLAMA

/* gpt-oss: the tiny fixture's keys (tests/data/hf/gptoss-tiny, with
 * transformers 5.17's inv_freq for its YaRN with truncate false), and
 * openai/gpt-oss-20b's config.json as the hub has it read as its preset. */
static void test_gpt_oss(void **state)
{
    (void)state;
    nvl_model_config_t c, p;
    assert_int_equal(nvl_model_config_load(NVL_TEST_DATA "/hf/gptoss-tiny", &c),
                     NVL_OK);
    assert_int_equal(c.family, NVL_GPT_OSS);
    assert_true(c.qkv_bias && c.o_bias && c.attn_sinks && !c.qk_norm);
    assert_true(c.experts_fused && c.norm_topk_prob && c.swiglu_limit == 7 &&
                c.swiglu_alpha == 1.702);
    assert_true(c.num_experts == 8 && c.top_k == 2 && c.moe_intermediate == 96);
    assert_true(nvl_model_layer_window(&c, 0) == 5 &&
                nvl_model_layer_window(&c, 1) == 0 &&
                nvl_model_layer_window(&c, 2) == 5);
    assert_true(c.rope_yarn_no_truncate && c.rope_yarn_factor == 4);
    const double hf[4] = {1.0, 0.056354500353336334, 0.012703318148851395,
                          0.0028635566122829914};
    for (uint32_t i = 0; i < 4; i++)
        assert_float_equal(nvl_model_rope_inv_freq(&c, i, 16), hf[i],
                           3e-7 * hf[i]);
    assert_float_equal(nvl_model_rope_scale(&c), 1.138629436111989, 1e-12);
    char text[4096], types[1024] = "";
    for (int i = 0; i < 24; i++)
        snprintf(types + strlen(types), sizeof types - strlen(types),
                 "%s\"%s\"", i ? ", " : "",
                 i % 2 ? "full_attention" : "sliding_attention");
    snprintf(text, sizeof text,
             "{\"model_type\": \"gpt_oss\", \"attention_bias\": true, "
             "\"head_dim\": 64, \"hidden_size\": 2880, "
             "\"intermediate_size\": 2880, \"layer_types\": [%s], "
             "\"max_position_embeddings\": 131072, \"num_attention_heads\": "
             "64, \"num_experts_per_tok\": 4, \"num_hidden_layers\": 24, "
             "\"num_key_value_heads\": 8, \"num_local_experts\": 32, "
             "\"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"beta_fast\": "
             "32.0, \"beta_slow\": 1.0, \"factor\": 32.0, "
             "\"original_max_position_embeddings\": 4096, \"rope_type\": "
             "\"yarn\", \"truncate\": false}, \"rope_theta\": 150000, "
             "\"sliding_window\": 128, \"swiglu_limit\": 7.0, "
             "\"tie_word_embeddings\": false, \"vocab_size\": 201088}",
             types);
    assert_int_equal(nvl_model_config_load(write_config(text), &c), NVL_OK);
    assert_int_equal(nvl_model_preset("gpt-oss-20b", &p), NVL_OK);
    memcpy(c.name, p.name, sizeof c.name);
    /* the released formats are the checkpoint's quantization_config's,
     * not the architecture's: config.json read alone has none */
    assert_false(c.release.any);
    assert_true(p.release.any && p.release.quantized[NVL_QCLASS_EXPERTS] &&
                !p.release.quantized[NVL_QCLASS_ATTN]);
    c.release = p.release;
    assert_memory_equal(&c, &p, sizeof c);
    assert_int_equal(nvl_model_max_context(&p), 131072);
    assert_int_equal(reports.count, 0);
}

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_configs / sizeof bad_configs[0]; i++)
        expect_error(bad_configs[i].json, NVL_ERR_INVALID, bad_configs[i].text);
    nvl_model_config_t c;
    reports.count = 0;
    assert_int_equal(nvl_model_config_load("/nonexistent/model", &c),
                     NVL_ERR_IO);
    assert_int_equal(reports.count, 1);
    assert_non_null(strstr(reports.last, "/nonexistent/model"));
}

#define TEST(f)                                                            \
    cmocka_unit_test_setup_teardown(f, capture_reports, release_reports)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(test_presets_match_their_config),
        TEST(test_param_counts),
        TEST(test_unknown_preset),
        TEST(test_hf_fixtures),
        TEST(test_rope_theta_top_level_and_qwen3),
        TEST(test_moe),
        TEST(test_rope_scaling),
        TEST(test_llama),
        TEST(test_gpt_oss),
        TEST(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
