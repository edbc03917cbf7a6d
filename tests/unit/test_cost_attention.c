/* Unit tests of the attention kernel's cost (include/nvlemu/cost.h,
 * nvl_cost_attention_geom): its FLOPs, bytes and regimes, sliding
 * windows, and the tile schedule of short prefills. */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cost_fixture.h"

static void test_attention(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    uint64_t one = 1, past = 32767, T = 16384, zero = 0;
    nvl_kernel_cost_t d = nvl_cost_attention(&c, 1, &one, &past, 8, 1, 128);
    assert_true(d.bytes >= 2.0 * 32768 * 128 * 2);
    nvl_kernel_cost_t idle = nvl_cost_attention(&c, 1, &one, &past, 0, 0, 128);
    assert_int_equal(idle.time_ps, 0);
    c.kv_dtype = NVL_WDT_FP8;
    nvl_kernel_cost_t d8 = nvl_cost_attention(&c, 1, &one, &past, 8, 1, 128);
    assert_true(d8.bytes < 0.51 * d.bytes + 8 * 128 * 4);
    assert_true(d8.time_ps < d.time_ps);
    /* prefill: exps bound the FA3 kernel when the SFUs are slow */
    c.kv_dtype = NVL_WDT_BF16;
    topo->gpu.exp_ops_per_s /= 10;
    int64_t fa3 = nvl_cost_attention(&c, 1, &T, &zero, 64, 8, 128).time_ps;
    c.attn = NVL_ATTN_FA4;
    int64_t fa4 = nvl_cost_attention(&c, 1, &T, &zero, 64, 8, 128).time_ps;
    topo->gpu.exp_ops_per_s *= 10;
    assert_true(fa4 < fa3);
    double share = 1 - topo->gpu.fa4_exp_fma_share;
    assert_in_range(fa4 * 1000 / fa3, (int64_t)(share * 1000) - 20,
                    (int64_t)(share * 1000) + 20);
    /* a sliding window (gpt-oss's 128): decode after 32767 positions
     * scores and reads as decode after 127; a window past every position
     * changes nothing; a prefill of T scores T x 128 - 127 x 128 / 2 */
    nvl_attn_geom_t g = nvl_attn_geom_gqa(8, 1, 128), w = g;
    w.window = 128;
    uint64_t p127 = 127, T4 = 4096;
    nvl_kernel_cost_t a = nvl_cost_attention_geom(&c, 1, &one, &past, &w);
    nvl_kernel_cost_t b = nvl_cost_attention_geom(&c, 1, &one, &p127, &g);
    assert_true(a.flops == b.flops && a.bytes == b.bytes &&
                a.time_ps == b.time_ps);
    w.window = 60000;
    a = nvl_cost_attention_geom(&c, 1, &T, &past, &w);
    b = nvl_cost_attention_geom(&c, 1, &T, &past, &g);
    assert_true(a.flops == b.flops && a.time_ps == b.time_ps);
    w.window = 128;
    a = nvl_cost_attention_geom(&c, 1, &T4, &zero, &w);
    assert_true(a.flops == 2.0 * 256 * 8 * (4096.0 * 128 - 127 * 128 / 2.0));
}

/* A short causal prefill is as long as its longest tile: one sequence,
 * 8 heads of 512 tokens (32 tiles, fewer than the SMs) lasts the last
 * query block's 4 key blocks plus its two round trips; 64 heads (256
 * tiles on 132 SMs) last longer than the same work spread evenly. */
static void test_attention_tiles(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    const nvl_gpu_spec_t *g = &topo->gpu;
    uint64_t T = 512, zero = 0;
    double sm_rate = g->bf16_flops_per_s * g->attn_efficiency / g->sm_count;
    double tile_s = 2.0 * 256 * 128 * 512 / sm_rate +
                    2.0 * (double)g->mem_latency_ps * 1e-12;
    int64_t want = g->attn_overhead_ps + nvl_ps_from_s(tile_s);
    int64_t got = nvl_cost_attention(&c, 1, &T, &zero, 8, 1, 128).time_ps;
    assert_in_range(got, want - 2, want + 2);
    int64_t wide = nvl_cost_attention(&c, 1, &T, &zero, 64, 8, 128).time_ps;
    double even_s = 64.0 * (1 + 2 + 3 + 4) * 2.0 * 256 * 128 * 128 / sm_rate /
                    g->sm_count;
    assert_true(wide > g->attn_overhead_ps + nvl_ps_from_s(even_s));
    assert_true(wide > got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_tiles),
    };
    return cmocka_run_group_tests(tests, load, unload);
}
