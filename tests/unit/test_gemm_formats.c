/* Unit tests of a checkpoint's weight format per GEMM class: the
 * exclusion lists' matching (nvl_quant_module_excluded), the classes a
 * format covers, the gpt-oss presets' release formats, the gpt-oss MX-FP4
 * fixture's modules_to_not_convert, and the lists refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "reports.h"

#include "nvlemu/cost.h"
#include "nvlemu/model.h"

static void test_matching(void **state)
{
    (void)state;
    static const struct {
        const char *pattern, *name;
        bool excluded;
    } cases[] = {
        /* gpt-oss's parent modules */
        {"model.layers.*.self_attn", "model.layers.3.self_attn.q_proj", true},
        {"model.layers.*.self_attn", "model.layers.3.mlp.experts.down_proj",
         false},
        {"model.layers.*.mlp.router", "model.layers.0.mlp.router", true},
        {"lm_head", "lm_head", true},
        /* a prefix must end at a dot */
        {"model.layers.1", "model.layers.10.self_attn.q_proj", false},
        {"model.layers.1*", "model.layers.10.self_attn.q_proj", true},
        /* ModelOpt's wildcards (fnmatch: '*' crosses dots) */
        {"*self_attn*", "model.layers.7.self_attn.o_proj", true},
        {"*mlp.gate", "model.layers.0.mlp.gate_proj", false},
        {"*mlp.gate", "model.layers.0.mlp.gate", true},
        {"model.embed_tokens", "model.layers.0.self_attn.q_proj", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(nvl_quant_module_excluded(cases[i].pattern,
                                                   cases[i].name),
                         cases[i].excluded);
}

static void test_covered(void **state)
{
    (void)state;
    assert_true(nvl_quant_class_covered(NVL_QUANT_MXFP4, NVL_QCLASS_EXPERTS));
    assert_false(nvl_quant_class_covered(NVL_QUANT_MXFP4, NVL_QCLASS_ATTN));
    for (int f = 0; f < NVL_QUANT_COUNT; f++) {
        assert_false(nvl_quant_class_covered(f, NVL_QCLASS_ROUTER));
        assert_false(nvl_quant_class_covered(f, NVL_QCLASS_LM_HEAD));
    }
    assert_true(nvl_quant_class_covered(NVL_QUANT_NVFP4, NVL_QCLASS_ATTN));
    assert_true(nvl_quant_class_covered(NVL_QUANT_FP8_BLOCK, NVL_QCLASS_MLP));
}

/* The presets carry their release: gpt-oss MX-FP4 experts alone; Qwen
 * none. */
static void test_presets(void **state)
{
    (void)state;
    nvl_model_config_t c;
    nvl_model_formats_t f;
    assert_int_equal(nvl_model_preset("gpt-oss-120b", &c), NVL_OK);
    assert_int_equal(nvl_model_gemm_formats(&c, NULL, &f), NVL_OK);
    assert_true(f.any);
    assert_int_equal(f.format, NVL_QUANT_MXFP4);
    for (int k = 0; k < NVL_QCLASS_COUNT; k++)
        assert_int_equal(f.quantized[k], k == NVL_QCLASS_EXPERTS);
    assert_int_equal(nvl_model_preset("qwen2.5-72b", &c), NVL_OK);
    assert_int_equal(nvl_model_gemm_formats(&c, NULL, &f), NVL_OK);
    assert_false(f.any);
}

/* The MX-FP4 fixture's config.json: gpt-oss's modules_to_not_convert
 * (its "model.embed_tokens" names no GEMM: ignored). */
static void test_gptoss_fixture(void **state)
{
    (void)state;
    const char *dir = NVL_TEST_DATA "/hf/gptoss-tiny-mxfp4";
    nvl_quant_config_t q;
    nvl_model_config_t c;
    nvl_model_formats_t f;
    assert_int_equal(nvl_quant_config_read(dir, &q), NVL_OK);
    assert_int_equal(q.n_exclude, 4);
    assert_string_equal(q.exclude_key, "modules_to_not_convert");
    assert_string_equal(q.exclude[0], "model.layers.*.self_attn");
    assert_int_equal(nvl_model_config_load(dir, &c), NVL_OK);
    assert_int_equal(nvl_model_gemm_formats(&c, &q, &f), NVL_OK);
    for (int k = 0; k < NVL_QCLASS_COUNT; k++)
        assert_int_equal(f.quantized[k], k == NVL_QCLASS_EXPERTS);
    assert_int_equal(reports.count, 0);
}

/* An NVFP4 checkpoint of a dense model with the list `entries`. */
static nvl_status_t dense_formats(const char *const *entries, int n,
                                  nvl_model_formats_t *f)
{
    nvl_model_config_t c;
    assert_int_equal(nvl_model_preset("qwen2.5-7b", &c), NVL_OK);
    nvl_quant_config_t q = {.quantized = true, .format = NVL_QUANT_NVFP4,
                            .exclude_key = "exclude_modules", .n_exclude = n};
    snprintf(q.file, sizeof q.file, "DIR/hf_quant_config.json");
    for (int i = 0; i < n; i++)
        snprintf(q.exclude[i], sizeof q.exclude[i], "%s", entries[i]);
    return nvl_model_gemm_formats(&c, &q, f);
}

static void test_exclusions(void **state)
{
    (void)state;
    nvl_model_formats_t f;
    /* names of no module change nothing */
    static const char *const none[] = {"lm_head", "model.embed_tokens",
                                       "vision_tower*"};
    assert_int_equal(dense_formats(none, 3, &f), NVL_OK);
    assert_true(f.quantized[NVL_QCLASS_ATTN] && f.quantized[NVL_QCLASS_MLP]);
    /* every layer's attention: attention bf16, the MLP in the format */
    static const char *const attn[] = {"lm_head", "*self_attn*"};
    assert_int_equal(dense_formats(attn, 2, &f), NVL_OK);
    assert_false(f.quantized[NVL_QCLASS_ATTN]);
    assert_true(f.quantized[NVL_QCLASS_MLP]);
    assert_int_equal(reports.count, 0);
    /* whole layers' attention or MLP: the class quantized but in those
     * layers (0 and 27; the layers' bits, nothing else) */
    static const char *const one[] = {"model.layers.0.self_attn",
                                      "model.layers.27.mlp*"};
    assert_int_equal(dense_formats(one, 2, &f), NVL_OK);
    assert_true(f.quantized[NVL_QCLASS_ATTN] && f.quantized[NVL_QCLASS_MLP]);
    for (int64_t l = -1; l < 30; l++) {
        assert_int_equal(nvl_model_layer_bf16(f.bf16_layers[NVL_QCLASS_ATTN], l),
                         l == 0);
        assert_int_equal(nvl_model_layer_bf16(f.bf16_layers[NVL_QCLASS_MLP], l),
                         l == 27);
    }
    assert_int_equal(reports.count, 0);
    /* one projection of one layer, or of every layer: refused, naming the
     * file, the key and the entry */
    static const char *const q0[] = {"model.layers.0.self_attn.q_proj"};
    assert_int_equal(dense_formats(q0, 1, &f), NVL_ERR_INVALID);
    assert_int_equal(reports.count, 1);
    assert_non_null(strstr(reports.last, "DIR/hf_quant_config.json"));
    assert_non_null(strstr(reports.last, "exclude_modules"));
    assert_non_null(strstr(reports.last, "'model.layers.0.self_attn.q_proj'"));
    assert_non_null(strstr(reports.last, "1 of the 112 attention"));
    static const char *const proj[] = {"*.q_proj"};
    assert_int_equal(dense_formats(proj, 1, &f), NVL_ERR_INVALID);
    assert_int_equal(reports.count, 2);
}

/* A list that is not an array of strings: refused naming file and key. */
static void test_bad_lists(void **state)
{
    (void)state;
    static const char *const lists[] = {"\"lm_head\"", "[\"lm_head\", 3]"};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        char dir[] = "/tmp/nvl_test_formats_XXXXXX", path[96], text[256];
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/config.json", dir);
        snprintf(text, sizeof text, "{\"quantization_config\": "
                 "{\"quant_method\": \"mxfp4\", \"modules_to_not_convert\": "
                 "%s}}", lists[i]);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
        nvl_quant_config_t q;
        reports.count = 0;
        assert_int_equal(nvl_quant_config_read(dir, &q), NVL_ERR_INVALID);
        assert_int_equal(reports.count, 1);
        assert_non_null(strstr(reports.last, path));
        assert_non_null(strstr(reports.last, "modules_to_not_convert"));
        unlink(path);
        rmdir(dir);
    }
}

/* Reads a compressed-tensors quantization_config (the JSON text `qc`)
 * from a config.json of its own; *q_out when it reads. */
static nvl_status_t ct_read(const char *qc, nvl_quant_config_t *q_out)
{
    char dir[] = "/tmp/nvl_test_ct_XXXXXX", path[96];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "{\"quantization_config\": {\"quant_method\": "
            "\"compressed-tensors\", %s}}", qc);
    fclose(fp);
    nvl_status_t st = nvl_quant_config_read(dir, q_out);
    unlink(path);
    rmdir(dir);
    return st;
}

#define CT_NVFP4                                                          \
    "\"config_groups\": {\"group_0\": {\"targets\": [%s], "              \
    "\"weights\": {\"num_bits\": 4, \"type\": \"float\", "              \
    "\"strategy\": \"tensor_group\", \"group_size\": 16}, "              \
    "\"input_activations\": {\"num_bits\": 4, \"type\": \"float\", "    \
    "\"strategy\": \"tensor_group\", \"group_size\": 16, "               \
    "\"dynamic\": \"local\"}}}, \"ignore\": [%s]"

/* compressed-tensors' targets and ignore lists on the tiny MoE (vLLM's
 * rules: whole names, "re:" from the start, "Linear" every GEMM): the
 * classes they leave in the format, a class split refused naming the
 * file, the key and the entry, a scheme nvlemu does not read refused. */
static void test_compressed_tensors(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(
        nvl_model_config_load(NVL_TEST_DATA "/hf/qwen3-moe-tiny16", &c),
        NVL_OK);
    static const struct {
        const char *targets, *ignore;
        bool attn, experts; /* quantized */
    } ok[] = {
        {.targets = "\"Linear\"", .ignore = "\"lm_head\", "
         "\"re:.*mlp[.]gate$\"", .attn = true, .experts = true},
        {.targets = "\"Linear\"", .ignore = "\"lm_head\", "
         "\"re:.*self_attn.*\"", .attn = false, .experts = true},
        {.targets = "\"re:model[.]layers[.][0-9]+[.]mlp[.]experts.*\"",
         .ignore = "", .attn = false, .experts = true},
    };
    char text[1024];
    nvl_quant_config_t q;
    nvl_model_formats_t f;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        snprintf(text, sizeof text, CT_NVFP4, ok[i].targets, ok[i].ignore);
        assert_int_equal(ct_read(text, &q), NVL_OK);
        assert_true(q.compressed_tensors && q.quantized);
        assert_int_equal(q.format, NVL_QUANT_NVFP4);
        assert_int_equal(nvl_model_gemm_formats(&c, &q, &f), NVL_OK);
        assert_int_equal(f.quantized[NVL_QCLASS_ATTN], ok[i].attn);
        assert_int_equal(f.quantized[NVL_QCLASS_EXPERTS], ok[i].experts);
        assert_false(f.quantized[NVL_QCLASS_ROUTER]);
    }
    assert_int_equal(reports.count, 0);
    /* one layer's q_proj: refused, naming the entry */
    snprintf(text, sizeof text, CT_NVFP4, "\"Linear\"",
             "\"model.layers.0.self_attn.q_proj\"");
    assert_int_equal(ct_read(text, &q), NVL_OK);
    assert_int_equal(nvl_model_gemm_formats(&c, &q, &f), NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "ignore entry "
                                         "'model.layers.0.self_attn.q_proj' "
                                         "leaves 1 of the 8 attention"));
    /* a scheme nvlemu does not read (int4 in groups of 64), a Python-only
     * expression: refused naming the key */
    assert_int_equal(
        ct_read("\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], "
                "\"weights\": {\"num_bits\": 4, \"type\": \"int\", "
                "\"strategy\": \"group\", \"group_size\": 64}}}",
                &q),
        NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "config_groups.g.weights"));
    snprintf(text, sizeof text, CT_NVFP4, "\"Linear\"",
             "\"re:.*layers[.]\\\\d+[.]mlp\"");
    assert_int_equal(ct_read(text, &q), NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "quantization_config.ignore[0]"));
    assert_int_equal(reports.count, 3);
}

/* compressed-tensors on the tiny MoE: layer 0's experts ignored whole
 * (the class stays NVFP4, layer 0 in bf16, priced per layer), and two
 * groups of two schemes (each class its group's). */
static void test_ct_layers_and_groups(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(
        nvl_model_config_load(NVL_TEST_DATA "/hf/qwen3-moe-tiny16", &c),
        NVL_OK);
    char text[1024];
    nvl_quant_config_t q;
    nvl_model_formats_t f;
    snprintf(text, sizeof text, CT_NVFP4, "\"Linear\"",
             "\"lm_head\", \"re:model[.]layers[.]0[.]mlp[.]experts.*\"");
    assert_int_equal(ct_read(text, &q), NVL_OK);
    assert_int_equal(nvl_model_gemm_formats(&c, &q, &f), NVL_OK);
    assert_true(f.quantized[NVL_QCLASS_EXPERTS]);
    assert_true(nvl_model_layer_bf16(f.bf16_layers[NVL_QCLASS_EXPERTS], 0));
    assert_false(nvl_model_layer_bf16(f.bf16_layers[NVL_QCLASS_EXPERTS], 1));
    assert_int_equal(
        ct_read("\"format\": \"mixed-precision\", \"config_groups\": "
                "{\"attn\": {\"targets\": [\"re:.*self_attn.*\"], "
                "\"weights\": {\"num_bits\": 8, \"type\": \"float\", "
                "\"strategy\": \"channel\"}, \"input_activations\": "
                "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": "
                "\"token\", \"dynamic\": true}}, \"moe\": {\"targets\": "
                "[\"re:.*experts.*\"], \"weights\": {\"num_bits\": 4, "
                "\"type\": \"float\", \"strategy\": \"tensor_group\", "
                "\"group_size\": 16}, \"input_activations\": null}}",
                &q),
        NVL_OK);
    assert_true(nvl_quant_config_mixed(&q));
    assert_int_equal(nvl_model_gemm_formats(&c, &q, &f), NVL_OK);
    assert_int_equal(f.group[NVL_QCLASS_ATTN], 0);
    assert_int_equal(f.group[NVL_QCLASS_EXPERTS], 1);
    assert_int_equal(q.group[1].format, NVL_QUANT_NVFP4);
    assert_int_equal(reports.count, 0);
}

/* compressed-tensors' integer schemes and FP8 per channel: the format,
 * the activations and the weight type timing mode charges; the schemes
 * vLLM runs otherwise (static int8 inputs, int4 with activations)
 * refused naming the group's key */
#define CT_GROUP(w, a)                                                     \
    "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], "          \
    "\"weights\": {" w "}, \"input_activations\": " a "}}"
static void test_ct_int(void **state)
{
    (void)state;
    nvl_quant_config_t q;
    static const struct {
        const char *text;
        nvl_quant_format_t f;
        bool weight_only;
        nvl_wdtype_t dt;
    } ok[] = {
        {.text = CT_GROUP("\"num_bits\": 8, \"type\": \"int\", "
                          "\"strategy\": \"channel\", \"symmetric\": true",
                          "{\"num_bits\": 8, \"type\": \"int\", "
                          "\"strategy\": \"token\", \"dynamic\": true}"),
         .f = NVL_QUANT_INT8, .weight_only = false, .dt = NVL_WDT_INT8},
        {.text = CT_GROUP("\"num_bits\": 8, \"type\": \"int\", "
                          "\"strategy\": \"channel\"", "null"),
         .f = NVL_QUANT_INT8, .weight_only = true, .dt = NVL_WDT_INT8},
        {.text = CT_GROUP("\"num_bits\": 4, \"type\": \"int\", "
                          "\"strategy\": \"group\", \"group_size\": 128",
                          "null"),
         .f = NVL_QUANT_INT4, .weight_only = true, .dt = NVL_WDT_INT4},
        {.text = CT_GROUP("\"num_bits\": 8, \"type\": \"float\", "
                          "\"strategy\": \"channel\"", "null"),
         .f = NVL_QUANT_FP8, .weight_only = true, .dt = NVL_WDT_FP8_CHANNEL},
        {.text = CT_GROUP("\"num_bits\": 8, \"type\": \"float\", "
                          "\"strategy\": \"tensor\"", "null"),
         .f = NVL_QUANT_FP8, .weight_only = true, .dt = NVL_WDT_FP8},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_int_equal(ct_read(ok[i].text, &q), NVL_OK);
        assert_int_equal(q.format, ok[i].f);
        assert_int_equal(q.weight_only, ok[i].weight_only);
        assert_int_equal(nvl_wdtype_of_quant(q.format, q.stored), ok[i].dt);
    }
    assert_int_equal(reports.count, 0);
    assert_int_equal(
        ct_read(CT_GROUP("\"num_bits\": 8, \"type\": \"int\", "
                         "\"strategy\": \"channel\"",
                         "{\"num_bits\": 8, \"type\": \"int\", "
                         "\"strategy\": \"tensor\", \"dynamic\": false}"),
                &q),
        NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "config_groups.g.input_activations "
                                         "is not one nvlemu runs with int8"));
    assert_int_equal(
        ct_read(CT_GROUP("\"num_bits\": 4, \"type\": \"int\", "
                         "\"strategy\": \"group\", \"group_size\": 128",
                         "{\"num_bits\": 8, \"type\": \"int\", "
                         "\"strategy\": \"token\", \"dynamic\": true}"),
                &q),
        NVL_ERR_INVALID);
    assert_non_null(strstr(reports.last, "W4A16, weight-only"));
    assert_int_equal(reports.count, 2);
}

#define TEST(f)                                                            \
    cmocka_unit_test_setup_teardown(f, capture_reports, release_reports)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(test_matching), TEST(test_covered),   TEST(test_presets),
        TEST(test_ct_int),
        TEST(test_gptoss_fixture), TEST(test_exclusions),
        TEST(test_bad_lists), TEST(test_compressed_tensors),
        TEST(test_ct_layers_and_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
