/* Unit tests of the engine's layer tensor tables (src/engine/
 * layer_tensors.h): every row well formed, and what the tables give a
 * rank of every preset at several TP degrees is what the shard plan
 * (src/model/shard.c, timing mode's accounting) says it holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "layer_tensors.h"

static const int tps[] = {1, 2, 3, 5, 7};

static bool in_layer(const nvl_layer_tensor_t *t, const nvl_model_config_t *c,
                     uint32_t layer)
{
    return t->in_layer == NULL || t->in_layer(c, layer);
}

/* Elements of t that shard s holds; checks the part lies in the tensor. */
static double held_elems(const nvl_layer_tensor_t *t,
                         const nvl_model_config_t *c, const nvl_shard_t *s)
{
    nvl_tensor_part_t p = nvl_layer_tensor_part(t, c, s);
    assert_true(p.rows > 0);
    assert_true(p.row0 + p.n_rows <= p.rows);
    assert_true(p.col0 + p.n_cols <= p.cols);
    assert_int_equal(p.cols == 0, t->cols == NULL);
    return (double)p.n_rows * (double)(p.cols ? p.n_cols : 1);
}

/* The i-th built-in preset into *c. */
static void preset(size_t i, nvl_model_config_t *c)
{
    const nvl_member_t *m = nvl_family_member(&nvl_model_preset_family,
                                              (int)i);
    assert_int_equal(nvl_model_preset(m->name, c), NVL_OK);
}

static void check_rows(const nvl_layer_tensor_t *rows, size_t n)
{
    static const char weight[] = ".weight";
    for (size_t i = 0; i < n; i++) {
        const nvl_layer_tensor_t *t = &rows[i];
        assert_non_null(t->suffix);
        assert_non_null(t->rows);
        if (t->gemm_in == NVL_GEMM_IN_NONE)
            continue;
        /* a GEMM's weight: a matrix whose module gives the input_scale */
        size_t len = strlen(t->suffix);
        assert_non_null(t->cols);
        assert_true(len > sizeof weight - 1);
        assert_string_equal(t->suffix + len - (sizeof weight - 1), weight);
    }
}

static void test_rows_well_formed(void **state)
{
    (void)state;
    check_rows(nvl_layer_tensors, NVL_LAYER_COUNT);
    for (size_t i = 0; i < nvl_model_preset_family.n_rows; i++) {
        nvl_model_config_t c;
        preset(i, &c);
        const nvl_attn_variant_t *v = nvl_attn_variant_of(&c);
        assert_non_null(v);
        assert_true(v->n_tensors <= NVL_ATTN_TENSORS_MAX);
        check_rows(v->tensors, v->n_tensors);
    }
}

/* Layer 0's attention of every preset on every rank of each TP degree:
 * the variant's matrices are the shard's attn_matrix_elems, and its
 * vectors (biases and norms) the rest. */
static void test_attention_matches_shard(void **state)
{
    (void)state;
    for (size_t i = 0; i < nvl_model_preset_family.n_rows; i++) {
        nvl_model_config_t c;
        preset(i, &c);
        const nvl_attn_variant_t *v = nvl_attn_variant_of(&c);
        for (size_t k = 0; k < sizeof tps / sizeof tps[0]; k++)
            for (int r = 0; r < tps[k]; r++) {
                nvl_shard_t s;
                assert_int_equal(nvl_shard_plan(&c, tps[k], r, &s), NVL_OK);
                double mat = 0, vec = 0;
                for (size_t j = 0; j < v->n_tensors; j++) {
                    const nvl_layer_tensor_t *t = &v->tensors[j];
                    if (!in_layer(t, &c, 0))
                        continue;
                    *(t->cols != NULL ? &mat : &vec) += held_elems(t, &c, &s);
                }
                assert_true(mat == s.attn_matrix_elems);
                assert_true(vec == s.attn_bias_elems + s.attn_norm_elems);
            }
    }
}

/* The shared rows: a dense layer's MLP is the rank's intermediate slice
 * of gate, up and down; a mixture of experts' layer has the whole router
 * instead; both have the two norms whole. */
static void test_shared_rows_match_shard(void **state)
{
    (void)state;
    for (size_t i = 0; i < nvl_model_preset_family.n_rows; i++) {
        nvl_model_config_t c;
        preset(i, &c);
        bool moe = nvl_model_layer_is_moe(&c, 0);
        nvl_shard_t s;
        assert_int_equal(nvl_shard_plan(&c, 3, 1, &s), NVL_OK);
        double got = 0;
        for (size_t j = 0; j < NVL_LAYER_COUNT; j++)
            if (in_layer(&nvl_layer_tensors[j], &c, 0))
                got += held_elems(&nvl_layer_tensors[j], &c, &s);
        /* gpt-oss's router has a bias too */
        double mlp = moe ? (double)c.num_experts *
                               (c.hidden + (c.experts_fused ? 1 : 0))
                         : 3.0 * s.intermediate.count * c.hidden;
        assert_true(got == 2.0 * c.hidden + mlp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_well_formed),
        cmocka_unit_test(test_attention_matches_shard),
        cmocka_unit_test(test_shared_rows_match_shard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
