/* Unit tests of the tensor-parallel sharding rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/engine.h"
#include "nvlemu/shard.h"
#include "reports.h"

/* Every item of n lands in exactly one part, in order. */
static void test_split_covers_everything(void **state)
{
    (void)state;
    for (uint32_t n = 0; n < 200; n += 7)
        for (int parts = 1; parts <= 80; parts++) {
            uint32_t next = 0;
            for (int i = 0; i < parts; i++) {
                nvl_range_t r = nvl_range_split(n, parts, i);
                assert_int_equal(r.first, next);
                next += r.count;
            }
            assert_int_equal(next, n);
        }
}

static void test_qwen25_72b_tp8(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(nvl_model_preset("qwen2.5-72b", &c), NVL_OK);
    for (int r = 0; r < 8; r++) {
        nvl_shard_t s;
        assert_int_equal(nvl_shard_plan(&c, 8, r, &s), NVL_OK);
        assert_int_equal(s.q_heads.count, 8);
        assert_int_equal(s.kv_heads.first, (uint32_t)r);
        assert_int_equal(s.kv_heads.count, 1);
        assert_int_equal(s.intermediate.count, 3696);
        assert_int_equal(s.vocab.count, 19008);
    }
}

/* The engine's dense projections of a TP = 8 shard of Qwen2.5-72B (8
 * query heads, 1 KV head of 128, 3696 MLP rows), as a quantized run
 * reports them, each with its GEMM class; a mixture of experts' layer. */
static void test_layer_gemms(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(nvl_model_preset("qwen2.5-72b", &c), NVL_OK);
    nvl_engine_gemm_t g[NVL_ENGINE_LAYER_GEMMS_MAX];
    assert_int_equal(nvl_engine_layer_gemms(&c, false, 8, 1, 3696, g), 7);
    static const struct {
        const char *name;
        uint64_t n, k;
    } want[] = {{"q_proj", 1024, 8192},   {"k_proj", 128, 8192},
                {"v_proj", 128, 8192},    {"o_proj", 8192, 1024},
                {"gate_proj", 3696, 8192}, {"up_proj", 3696, 8192},
                {"down_proj", 8192, 3696}};
    for (int i = 0; i < 7; i++) {
        assert_string_equal(g[i].name, want[i].name);
        assert_int_equal(g[i].n, want[i].n);
        assert_int_equal(g[i].k, want[i].k);
        assert_int_equal(g[i].cls, i < 4 ? NVL_QCLASS_ATTN : NVL_QCLASS_MLP);
    }
    /* gpt-oss-20b at TP 1: the router [32 x 2880] and one expert's fused
     * gate/up [5760 x 2880] and down [2880 x 2880] after attention's */
    assert_int_equal(nvl_model_preset("gpt-oss-20b", &c), NVL_OK);
    assert_int_equal(nvl_engine_layer_gemms(&c, true, 64, 8, 2880, g), 7);
    assert_string_equal(g[4].name, "router");
    assert_int_equal(g[4].cls, NVL_QCLASS_ROUTER);
    assert_int_equal(g[4].n, 32);
    assert_string_equal(g[5].name, "expert.gate_up_proj");
    assert_int_equal(g[5].cls, NVL_QCLASS_EXPERTS);
    assert_int_equal(g[5].n, 5760);
    assert_int_equal(g[6].n, 2880);
    assert_int_equal(g[6].k, 2880);
}

/* TP = 72 on 64 heads and 29568 intermediate: 8 ranks idle in attention,
 * kv heads replicated 8 ways, uneven intermediate shards. */
static void test_qwen25_72b_tp72(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(nvl_model_preset("qwen2.5-72b", &c), NVL_OK);
    int idle = 0, wide = 0;
    for (int r = 0; r < 72; r++) {
        nvl_shard_t s;
        assert_int_equal(nvl_shard_plan(&c, 72, r, &s), NVL_OK);
        if (s.q_heads.count == 0) {
            idle++;
            assert_int_equal(s.kv_heads.count, 0);
        } else {
            assert_int_equal(s.q_heads.count, 1);
            assert_int_equal(s.kv_heads.first, s.q_heads.first / 8);
            assert_int_equal(s.kv_heads.count, 1);
        }
        wide += s.intermediate.count == 411;
        assert_true(s.intermediate.count == 411 || s.intermediate.count == 410);
        assert_int_equal(s.vocab.count, 2112);
    }
    assert_int_equal(idle, 8);
    assert_int_equal(wide, 48); /* 29568 = 72 x 410 + 48 */
}

/* TP = 3 on 8 query heads in 2 groups: 3, 3, 2 heads; the middle rank's
 * heads straddle both groups and need both kv heads. */
static void test_uneven_heads_straddle_groups(void **state)
{
    (void)state;
    nvl_model_config_t c = {.hidden = 128, .intermediate = 344, .layers = 3,
                            .q_heads = 8, .kv_heads = 2, .head_dim = 16,
                            .vocab = 512};
    nvl_shard_t s[3];
    for (int r = 0; r < 3; r++)
        assert_int_equal(nvl_shard_plan(&c, 3, r, &s[r]), NVL_OK);
    assert_int_equal(s[0].q_heads.count, 3);
    assert_int_equal(s[1].q_heads.count, 3);
    assert_int_equal(s[2].q_heads.count, 2);
    assert_int_equal(s[0].kv_heads.first, 0);
    assert_int_equal(s[0].kv_heads.count, 1);
    assert_int_equal(s[1].kv_heads.first, 0);
    assert_int_equal(s[1].kv_heads.count, 2);
    assert_int_equal(s[2].kv_heads.first, 1);
    assert_int_equal(s[2].kv_heads.count, 1);
    assert_int_equal(s[0].intermediate.count + s[1].intermediate.count +
                         s[2].intermediate.count,
                     344);
}

static void test_bad_degree(void **state)
{
    (void)state;
    nvl_model_config_t c;
    nvl_shard_t s;
    assert_int_equal(nvl_model_preset("qwen3-32b", &c), NVL_OK);
    capture_reports(NULL);
    assert_int_equal(nvl_shard_plan(&c, 0, 0, &s), NVL_ERR_INVALID);
    assert_int_equal(nvl_shard_plan(&c, 4, 4, &s), NVL_ERR_INVALID);
    release_reports(NULL);
    assert_int_equal(reports.count, 2);
    assert_non_null(strstr(reports.last, "rank 4"));
}

/* More ranks than MLP rows: some rank would hold no MLP at all. */
static void test_degree_beyond_model(void **state)
{
    (void)state;
    nvl_model_config_t c;
    nvl_shard_t s;
    assert_int_equal(nvl_model_preset("qwen2.5-0.5b", &c), NVL_OK);
    c.intermediate = 64;
    capture_reports(NULL);
    assert_int_equal(nvl_shard_plan(&c, 64, 0, &s), NVL_OK);
    assert_int_equal(nvl_shard_plan(&c, 65, 0, &s), NVL_ERR_INVALID);
    release_reports(NULL);
    assert_int_equal(reports.count, 1);
    assert_non_null(strstr(reports.last, "tensor parallelism 65 is more "
                                         "than model 'qwen2.5-0.5b' can use"));
}

/* Experts tensor-parallel: every rank a slice of each expert's
 * moe_intermediate, cut like the dense MLP; none for a dense model. */
static void test_moe_experts_split(void **state)
{
    (void)state;
    nvl_model_config_t c;
    nvl_shard_t s;
    assert_int_equal(nvl_model_preset("qwen3-30b-a3b", &c), NVL_OK);
    uint32_t next = 0;
    for (int r = 0; r < 5; r++) {
        assert_int_equal(nvl_shard_plan(&c, 5, r, &s), NVL_OK);
        assert_int_equal(s.moe_intermediate.first, next);
        assert_int_equal(s.moe_intermediate.count, r < 3 ? 154 : 153);
        next += s.moe_intermediate.count;
    }
    assert_int_equal(next, 768);
    assert_int_equal(nvl_model_preset("qwen3-32b", &c), NVL_OK);
    assert_int_equal(nvl_shard_plan(&c, 4, 1, &s), NVL_OK);
    assert_int_equal(s.moe_intermediate.count, 0);
    assert_int_equal(nvl_model_preset("qwen3-30b-a3b", &c), NVL_OK);
    c.moe_intermediate = 8;
    capture_reports(NULL);
    assert_int_equal(nvl_shard_plan(&c, 9, 0, &s), NVL_ERR_INVALID);
    release_reports(NULL);
    assert_non_null(strstr(reports.last, "rows of each expert (8)"));
    /* gpt-oss: whole 32-element blocks, ceil(90 / 4) = 23 a rank (736
     * rows), the last rank the other 21 (672), as vLLM's loader; EP 2 on 4
     * ranks cuts each expert over 2: 45 blocks each; 96 rows (3 blocks)
     * over 4 ranks leave the last none: refused */
    assert_int_equal(nvl_model_preset("gpt-oss-20b", &c), NVL_OK);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(nvl_shard_plan(&c, 4, r, &s), NVL_OK);
        assert_int_equal(s.moe_intermediate.first, 736u * (uint32_t)r);
        assert_int_equal(s.moe_intermediate.count, r < 3 ? 736 : 672);
    }
    nvl_placement_t pl = {.ep = 2};
    assert_int_equal(nvl_shard_place(&c, 4, 3, &pl, &s), NVL_OK);
    assert_true(s.moe_intermediate.first == 1440 &&
                s.moe_intermediate.count == 1440);
    c.moe_intermediate = 96;
    capture_reports(NULL);
    assert_int_equal(nvl_shard_plan(&c, 4, 0, &s), NVL_ERR_INVALID);
    release_reports(NULL);
    assert_non_null(strstr(reports.last, "which leaves rank 3 none"));
}

/* Expert parallelism: 128 experts over 72 ranks go 2 to the first 56 and
 * 1 to the other 16, each whole; EP 4 on 8 ranks cuts each expert over 2
 * ranks and gives each pair the same 32 experts; data-parallel attention
 * gives every rank the whole attention and vocabulary. */
static void test_expert_placement(void **state)
{
    (void)state;
    nvl_model_config_t c;
    nvl_shard_t s;
    assert_int_equal(nvl_model_preset("qwen3-235b-a22b", &c), NVL_OK);
    nvl_placement_t ep72 = {.ep = 72, .attn_dp = false};
    uint32_t next = 0;
    for (int r = 0; r < 72; r++) {
        assert_int_equal(nvl_shard_place(&c, 72, r, &ep72, &s), NVL_OK);
        assert_int_equal(s.experts.first, next);
        assert_int_equal(s.experts.count, r < 56 ? 2 : 1);
        assert_int_equal(s.moe_intermediate.count, c.moe_intermediate);
        assert_int_equal(s.etp, 1);
        assert_int_equal(s.ep_rank, r);
        /* attention still tensor-parallel over the 72 */
        assert_int_equal(s.q_heads.count, r < 64 ? 1 : 0);
        next += s.experts.count;
    }
    assert_int_equal(next, 128);
    nvl_placement_t ep4dp = {.ep = 4, .attn_dp = true};
    for (int r = 0; r < 8; r++) {
        assert_int_equal(nvl_shard_place(&c, 8, r, &ep4dp, &s), NVL_OK);
        assert_int_equal(s.ep_rank, r / 2);
        assert_int_equal(s.experts.first, (uint32_t)(r / 2) * 32);
        assert_int_equal(s.experts.count, 32);
        assert_int_equal(s.moe_intermediate.first, (uint32_t)(r % 2) * 768);
        assert_int_equal(s.moe_intermediate.count, 768);
        assert_int_equal(s.tp, 1);
        assert_int_equal(s.q_heads.count, c.q_heads);
        assert_int_equal(s.vocab.count, c.vocab);
    }
    /* ep 1, attention tensor-parallel: nvl_shard_plan's shard */
    nvl_placement_t tp = {.ep = 1, .attn_dp = false};
    nvl_shard_t want;
    assert_int_equal(nvl_shard_place(&c, 6, 4, &tp, &s), NVL_OK);
    assert_int_equal(nvl_shard_plan(&c, 6, 4, &want), NVL_OK);
    assert_memory_equal(&s, &want, sizeof s);
}

/* Placements that do not fit, each named. */
static void test_bad_placement(void **state)
{
    (void)state;
    nvl_model_config_t c;
    nvl_shard_t s;
    assert_int_equal(nvl_model_preset("qwen3-30b-a3b", &c), NVL_OK);
    struct {
        int world, ep;
        bool dp;
        const char *model, *msg;
    } bad[] = {
        {6, 4, false, "qwen3-30b-a3b", "--ep 4 does not fit 6 rank(s)"},
        {6, 0, false, "qwen3-30b-a3b", "--ep 0 does not fit 6 rank(s)"},
        {256, 256, false, "qwen3-30b-a3b", "has only 128 experts"},
        {4, 2, false, "qwen3-32b", "--ep: model 'qwen3-32b' has no experts"},
        {4, 1, true, "qwen3-32b",
         "--attn-parallel dp: model 'qwen3-32b' has no experts"},
        {1024, 1, false, "qwen3-30b-a3b", "cuts every expert over 1024"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(nvl_model_preset(bad[i].model, &c), NVL_OK);
        nvl_placement_t p = {.ep = bad[i].ep, .attn_dp = bad[i].dp};
        capture_reports(NULL);
        assert_int_equal(nvl_shard_place(&c, bad[i].world, 0, &p, &s),
                         NVL_ERR_INVALID);
        release_reports(NULL);
        assert_non_null(strstr(reports.last, bad[i].msg));
    }
}

/* The attention geometry each shard carries: the KV heads its query
 * heads read (replicated past 8 ranks), one position's KV bytes per dtype
 * (fp4 has no KV cache type: bf16's), the whole model's at TP 1. */
static void test_attention_geometry(void **state)
{
    (void)state;
    nvl_model_config_t c;
    assert_int_equal(nvl_model_preset("qwen2.5-72b", &c), NVL_OK);
    assert_int_equal(nvl_shard_kv_head_of(&c, 0), 0);
    assert_int_equal(nvl_shard_kv_head_of(&c, 63), 7);
    nvl_shard_t s;
    assert_int_equal(nvl_shard_plan(&c, 1, 0, &s), NVL_OK);
    assert_int_equal(s.attn.q_heads, 64);
    assert_int_equal(s.attn.kv_heads, 8);
    assert_true(nvl_attn_kv_pos_bytes(&s.attn, NVL_WDT_BF16) ==
                8.0 * 2 * 128 * 2);
    assert_true(nvl_attn_kv_pos_bytes(&s.attn, NVL_WDT_FP8) ==
                8.0 * 2 * 128);
    assert_true(nvl_attn_kv_pos_bytes(&s.attn, NVL_WDT_FP4) ==
                nvl_attn_kv_pos_bytes(&s.attn, NVL_WDT_BF16));
    assert_true(nvl_attn_kv_head_bytes(&s.attn, NVL_WDT_BF16) == 512.0);
    for (int r = 0; r < 16; r++) { /* 4 query heads, half a group */
        assert_int_equal(nvl_shard_plan(&c, 16, r, &s), NVL_OK);
        assert_int_equal(s.attn.q_heads, 4);
        assert_int_equal(s.attn.kv_heads, 1);
        assert_int_equal(s.kv_heads.first, (uint32_t)r / 2);
        assert_true(nvl_attn_kv_pos_bytes(&s.attn, NVL_WDT_BF16) == 512.0);
    }
    /* TP 6: rank 0's 11 query heads read kv heads 0 and 1 */
    assert_int_equal(nvl_shard_plan(&c, 6, 0, &s), NVL_OK);
    assert_int_equal(s.attn.kv_heads, 2);
    assert_int_equal(s.attn.k_elems, 128);
    assert_int_equal(s.attn.v_elems, 128);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_covers_everything),
        cmocka_unit_test(test_qwen25_72b_tp8),
        cmocka_unit_test(test_qwen25_72b_tp72),
        cmocka_unit_test(test_layer_gemms),
        cmocka_unit_test(test_uneven_heads_straddle_groups),
        cmocka_unit_test(test_bad_degree),
        cmocka_unit_test(test_degree_beyond_model),
        cmocka_unit_test(test_moe_experts_split),
        cmocka_unit_test(test_expert_placement),
        cmocka_unit_test(test_bad_placement),
        cmocka_unit_test(test_attention_geometry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
