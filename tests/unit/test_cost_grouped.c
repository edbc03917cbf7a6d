/* Unit tests of the grouped GEMM's cost (include/nvlemu/cost.h,
 * nvl_cost_grouped_matmul): the experts' tiles and weight panels, the
 * low-precision kernels' rates and fixed work a tile, torch's FP8 tile and
 * its bf16 kernel at decode shapes, vLLM's Marlin and Triton MoE kernels. */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "cost_fixture.h"

/* Decode attention reads the KV cache; FA4 relieves the SFUs; an idle rank
 * costs nothing; fp8 KV halves the bytes. */
/* Low-precision grouped GEMMs: block-scaled FP4 on FP4 tensor cores pads
 * each expert's rows to 128 (no 64-row mxf4nvf4 MMA) and pays a fixed
 * work a tile (5,854 elements of k), so a compute-bound FP4 grouped
 * GEMM's time grows as K + 5,854, not as K + matmul_k_pad; without FP4 cores
 * the weights are dequantised to BF16 and the 64-row tile stays; a
 * compute-bound grouped FP8 GEMM runs at 0.70 of the dense FP8 rate on
 * the same rows, a BF16 one at the dense rate. */
static void test_grouped_matmul_lowp(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    double peak = topo->gpu.bf16_flops_per_s;
    uint64_t r1 = 1, r64 = 64, r65 = 65;
    double fp4_peak = topo->gpu.fp4_flops_per_s;
    topo->gpu.fp4_flops_per_s = peak / 1e5;
    c.weight_dtype = NVL_WDT_FP4;
    uint64_t r128 = 128, r129 = 129;
    int64_t t65 = nvl_cost_grouped_matmul(&c, 1, &r65, 4096, 4096).time_ps;
    assert_int_equal(t65, nvl_cost_grouped_matmul(&c, 1, &r1, 4096, 4096)
                              .time_ps);
    assert_int_equal(t65, nvl_cost_grouped_matmul(&c, 1, &r128, 4096, 4096)
                              .time_ps);
    assert_true(nvl_cost_grouped_matmul(&c, 1, &r129, 4096, 4096).time_ps >
                1.9 * (double)t65);
    double k4 = (double)nvl_cost_grouped_matmul(&c, 1, &r128, 4096, 4096)
                    .time_ps,
           k1 = (double)nvl_cost_grouped_matmul(&c, 1, &r128, 4096, 1024)
                    .time_ps;
    assert_true(fabs(k4 / k1 - (4096.0 + 5854.0) / (1024.0 + 5854.0)) <
                0.01);
    topo->gpu.fp4_flops_per_s = 0;
    topo->gpu.bf16_flops_per_s = peak / 1e5;
    assert_true(nvl_cost_grouped_matmul(&c, 1, &r65, 4096, 4096).time_ps >
                nvl_cost_grouped_matmul(&c, 1, &r64, 4096, 4096).time_ps);
    topo->gpu.bf16_flops_per_s = peak;
    topo->gpu.fp4_flops_per_s = fp4_peak;
    double fp8_peak = topo->gpu.fp8_flops_per_s;
    topo->gpu.fp8_flops_per_s = peak / 1e5;
    c.weight_dtype = NVL_WDT_FP8;
    uint64_t r4096 = 4096;
    double g8 = (double)nvl_cost_grouped_matmul(&c, 1, &r4096, 4096, 4096)
                    .time_ps,
           d8 = (double)nvl_cost_matmul(&c, 4096, 4096, 4096).time_ps;
    assert_true(fabs(g8 / d8 - 1.0 / 0.70) < 0.01);
    topo->gpu.fp8_flops_per_s = fp8_peak;
    topo->gpu.bf16_flops_per_s = peak / 1e5;
    c.weight_dtype = NVL_WDT_BF16;
    assert_true(llabs(nvl_cost_grouped_matmul(&c, 1, &r4096, 4096, 4096)
                          .time_ps -
                      nvl_cost_matmul(&c, 4096, 4096, 4096).time_ps) <= 2);
    topo->gpu.bf16_flops_per_s = peak;
}

/* torch's FP8 grouped GEMM on Hopper: the 64-row tile to 128 rows an
 * expert, beyond 128 rows, spilling (0.35 of the rate) unless two of M,
 * N, K reach 2,048; its 2 x 2 clusters round each group's row and column
 * tiles up to pairs and its tiles run whole k blocks (N 192 in two
 * 256-column tiles, K 96 in two 64-deep blocks); at decode shapes its
 * Pingpong kernel's floor is BF16's walk in 2 x 2 clusters, 13.5 round
 * trips at the start and one more a tile; on Blackwell and in a serving
 * engine no switch. */
static void test_grouped_matmul_torch_fp8(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    double fp8_peak = topo->gpu.fp8_flops_per_s;
    double fp4_peak = topo->gpu.fp4_flops_per_s;
    topo->gpu.fp8_flops_per_s = fp8_peak / 1e5; /* compute-bound */
    topo->gpu.fp4_flops_per_s = 0;
    c.weight_dtype = NVL_WDT_FP8;
    uint64_t m128[16], m192[16], m2048[16];
    for (int i = 0; i < 16; i++)
        m128[i] = 128, m192[i] = 192, m2048[i] = 2048;
    double t[2][3];
    for (int torch = 0; torch < 2; torch++) {
        c.torch_grouped = torch;
        t[torch][0] = (double)nvl_cost_grouped_matmul(&c, 16, m128, 4096, 1536)
                          .time_ps;
        t[torch][1] = (double)nvl_cost_grouped_matmul(&c, 16, m192, 4096, 1536)
                          .time_ps;
        t[torch][2] = (double)nvl_cost_grouped_matmul(&c, 16, m2048, 4096, 1536)
                          .time_ps;
    }
    assert_true(fabs(t[1][0] / t[0][0] - 1) < 1e-6);
    /* 192 rows padded to 256, at 0.35 of the rate */
    assert_true(fabs(t[1][1] / t[0][1] - 256.0 / 192.0 / 0.35) < 0.01);
    assert_true(fabs(t[1][2] / t[0][2] - 1) < 1e-6);
    double pad[2];
    for (int torch = 0; torch < 2; torch++) {
        c.torch_grouped = torch;
        pad[torch] =
            (double)nvl_cost_grouped_matmul(&c, 16, m192, 192, 96).time_ps;
    }
    assert_true(fabs(pad[1] / pad[0] - 256.0 / 192.0 * 512.0 / 192.0 *
                                           128.0 / 96.0 / 0.35) < 0.01);
    topo->gpu.fp8_flops_per_s = fp8_peak;
    uint64_t r1[128];
    for (int i = 0; i < 128; i++)
        r1[i] = 1;
    c.torch_grouped = true;
    c.weight_scale_bytes = 0;
    /* 128 experts x 2 row tiles x 2 column tiles (n 192, k 2,048) */
    double lat_s = (double)topo->gpu.mem_latency_ps * 1e-12;
    double floor_s = (13.5 + ceil(128 * 2 * 2 / (double)topo->gpu.sm_count) *
                                 (2.5 + 128.0 * 2048 / 2 / 25000.0)) * lat_s;
    /* (the weights' per-tensor scale adds its few bytes to the panel) */
    assert_true(fabs((double)nvl_cost_grouped_matmul(&c, 128, r1, 192, 2048)
                             .time_ps /
                         (double)(topo->gpu.kernel_overhead_ps +
                                  nvl_ps_from_s(floor_s)) -
                     1) < 1e-4);
    topo->gpu.fp8_flops_per_s = fp8_peak / 1e5;
    topo->gpu.fp4_flops_per_s = fp4_peak > 0 ? fp4_peak : fp8_peak;
    assert_true(fabs((double)nvl_cost_grouped_matmul(&c, 16, m192, 4096, 1536)
                         .time_ps /
                     t[0][1] - 1) < 1e-6);
    topo->gpu.fp8_flops_per_s = fp8_peak, topo->gpu.fp4_flops_per_s = fp4_peak;
}

/* One group is the plain matmul; idle groups cost nothing; a grouped
 * kernel pays its overhead once and fills the GPU with all groups' tiles,
 * so 8 one-token experts cost less than 8 separate matmuls. */
static void test_grouped_matmul(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    uint64_t one = 5;
    nvl_kernel_cost_t a = nvl_cost_grouped_matmul(&c, 1, &one, 1536, 2048);
    nvl_kernel_cost_t b = nvl_cost_matmul(&c, 5, 1536, 2048);
    /* one group: the matmul, or the panel floor where that is longer: a
     * panel of 128 bf16 columns takes 3.0 round trips and one a 20,000
     * bytes of it (src/cost/cost.c) */
    double lat_s = (double)topo->gpu.mem_latency_ps * 1e-12;
    double floor_s = (3.0 + 128.0 * 2048 * 2 / 20000.0) * lat_s;
    int64_t over_ps = topo->gpu.kernel_overhead_ps;
    assert_true(llabs(a.time_ps - (int64_t)fmax((double)b.time_ps,
                                                 (double)over_ps +
                                                     floor_s * 1e12)) <= 2);
    assert_true(a.flops == b.flops && a.bytes == b.bytes);
    /* 128 experts of one row, n = 2048, k = 96 (Qwen3-30B-A3B's TP 8 down
     * shard): 16 panels each, in ceil(2048 / sms) waves of the floor */
    uint64_t rows1[128];
    for (int i = 0; i < 128; i++)
        rows1[i] = 1;
    double waves = ceil(2048.0 / topo->gpu.sm_count);
    double floor96_s = (3.0 + 128.0 * 96 * 2 / 20000.0) * lat_s;
    assert_true(llabs(nvl_cost_grouped_matmul(&c, 128, rows1, 2048, 96)
                          .time_ps -
                      (over_ps + nvl_ps_from_s(waves * floor96_s))) <= 2);
    /* compute-bound, rows are padded to whole 64-row tiles */
    double peak = topo->gpu.bf16_flops_per_s;
    topo->gpu.bf16_flops_per_s = peak / 1e5;
    uint64_t r1 = 1, r64 = 64, r65 = 65;
    int64_t t1 = nvl_cost_grouped_matmul(&c, 1, &r1, 4096, 4096).time_ps;
    assert_int_equal(t1,
                     nvl_cost_grouped_matmul(&c, 1, &r64, 4096, 4096).time_ps);
    assert_true(nvl_cost_grouped_matmul(&c, 1, &r65, 4096, 4096).time_ps >
                1.9 * (double)t1);
    topo->gpu.bf16_flops_per_s = peak;
    uint64_t idle[4] = {0, 0, 0, 0};
    assert_int_equal(nvl_cost_grouped_matmul(&c, 4, idle, 1536, 2048).time_ps,
                     0);
    uint64_t m[8] = {1, 1, 1, 1, 1, 1, 1, 1}, with_idle[9] = {0};
    nvl_kernel_cost_t g = nvl_cost_grouped_matmul(&c, 8, m, 1536, 2048);
    nvl_kernel_cost_t s = nvl_cost_matmul(&c, 1, 1536, 2048);
    assert_true(g.time_ps < 8 * s.time_ps);
    assert_true(g.flops == 8 * s.flops && g.bytes == 8 * s.bytes);
    for (int i = 0; i < 8; i++)
        with_idle[i + 1] = 1;
    assert_int_equal(nvl_cost_grouped_matmul(&c, 9, with_idle, 1536, 2048)
                         .time_ps,
                     g.time_ps);
}

/* torch._grouped_mm (bf16) at decode shapes on SM90: aten's Pingpong
 * kernel in 2 x 1 clusters, so an expert of 1 row and one of 128 are the
 * same two CTA tiles a panel and 129 rows are four; each CTA streams half
 * of its panel's weights after 1.5 round trips a tile and 6.0 at the
 * start (src/cost/cost.c); rows / groups and n above 128 take the other
 * kernel (the panel floor); the fused stack keeps the panel floor. */
static void test_grouped_matmul_torch_bf16(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    c.torch_grouped = true;
    double lat_s = (double)topo->gpu.mem_latency_ps * 1e-12;
    double sms = (double)topo->gpu.sm_count;
    int64_t over_ps = topo->gpu.kernel_overhead_ps;
    uint64_t r1[128], r128[128], r129[128];
    for (int i = 0; i < 128; i++)
        r1[i] = 1, r128[i] = 128, r129[i] = 129;
    /* 128 experts x 2 CTAs x 12 panels (n 1,536, k 2,048) */
    double tile = 1.5 + 128.0 * 2048 * 2 / 2 / 25000.0;
    double floor_s = (6.0 + ceil(128 * 2 * 12 / sms) * tile) * lat_s;
    int64_t t1 = nvl_cost_grouped_matmul(&c, 128, r1, 1536, 2048).time_ps;
    assert_true(llabs(t1 - (over_ps + nvl_ps_from_s(floor_s))) <= 2);
    assert_int_equal(t1,
                     nvl_cost_grouped_matmul(&c, 128, r128, 1536, 2048).time_ps);
    /* 129 rows an expert: n 128 keeps the small kernel, four CTAs a panel */
    double tile128 = 1.5 + 128.0 * 2048 * 2 / 2 / 25000.0;
    double floor129_s = (6.0 + ceil(128 * 4 / sms) * tile128) * lat_s;
    int64_t t129 = nvl_cost_grouped_matmul(&c, 128, r129, 128, 2048).time_ps;
    assert_true(t129 >= over_ps + nvl_ps_from_s(floor129_s) - 2);
    /* above 128 rows and n: the panel floor, as under the fused stack */
    int64_t big = nvl_cost_grouped_matmul(&c, 128, r129, 1536, 2048).time_ps;
    c.torch_grouped = false;
    assert_int_equal(big,
                     nvl_cost_grouped_matmul(&c, 128, r129, 1536, 2048).time_ps);
    int64_t fused = nvl_cost_grouped_matmul(&c, 128, r1, 1536, 2048).time_ps;
    double panel_s = ceil(128 * 12 / sms) * (3.0 + 128.0 * 2048 * 2 / 20000.0) *
                     lat_s;
    assert_true(llabs(fused - (over_ps + nvl_ps_from_s(panel_s))) <= 2);
}

/* vLLM's Marlin MoE GEMM (cfg.moe_marlin): only 4-bit experts on a GPU
 * without FP4 tensor cores take it; each expert's rows are padded to the
 * moe block fused_marlin_moe picks (the first of 8, 16, 32, 48 rows with
 * rows / block < 0.9, else 64), the compute at 2/3 x 0.54 of the BF16
 * grouped kernel's rate, and the weights padded to a hidden size of a
 * multiple of 256 and an intermediate one of 128. */
static void test_grouped_matmul_marlin(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    double peak = topo->gpu.bf16_flops_per_s, fp4 = topo->gpu.fp4_flops_per_s;
    c.weight_dtype = NVL_WDT_FP4;
    c.moe_marlin = true;
    topo->gpu.fp4_flops_per_s = 0; /* Hopper: no FP4 MMA */
    assert_true(nvl_cost_moe_marlin(&c));
    uint64_t h = 2880, i = 2880;
    nvl_cost_moe_dims(&c, &h, &i);
    assert_int_equal(h, 3072);
    assert_int_equal(i, 2944);
    topo->gpu.bf16_flops_per_s = peak / 1e5; /* compute-bound */
    uint64_t r1 = 1, r7 = 7, r8 = 8, r1024 = 1024;
    double t1 = (double)nvl_cost_grouped_matmul(&c, 1, &r1, 4096, 4096)
                    .time_ps,
           t7 = (double)nvl_cost_grouped_matmul(&c, 1, &r7, 4096, 4096)
                    .time_ps,
           t8 = (double)nvl_cost_grouped_matmul(&c, 1, &r8, 4096, 4096)
                    .time_ps,
           m1024 = (double)nvl_cost_grouped_matmul(&c, 1, &r1024, 4096, 4096)
                       .time_ps;
    assert_true(fabs(t7 / t1 - 1.0) < 1e-3); /* 8-row blocks */
    assert_true(fabs(t8 / t1 - 2.0) < 0.01); /* 16-row blocks */
    c.moe_marlin = false;
    double g1024 = (double)nvl_cost_grouped_matmul(&c, 1, &r1024, 4096, 4096)
                       .time_ps;
    assert_true(fabs(m1024 / g1024 - 1.0 / (2.0 / 3.0 * 0.54)) < 0.02);
    assert_false(nvl_cost_moe_marlin(&c));
    c.moe_marlin = true;
    c.weight_dtype = NVL_WDT_BF16;
    assert_false(nvl_cost_moe_marlin(&c));
    c.weight_dtype = NVL_WDT_INT4;
    assert_true(nvl_cost_moe_marlin(&c));
    c.weight_dtype = NVL_WDT_FP4;
    topo->gpu.bf16_flops_per_s = peak;
    topo->gpu.fp4_flops_per_s = 1e15; /* FP4 tensor cores: not Marlin */
    assert_false(nvl_cost_moe_marlin(&c));
    c.weight_dtype = NVL_WDT_INT4;
    assert_false(nvl_cost_moe_marlin(&c));
    h = 2880;
    nvl_cost_moe_dims(&c, &h, &i);
    assert_int_equal(h, 2880);
    topo->gpu.fp4_flops_per_s = fp4;
}

/* vLLM's Triton fused_moe (cfg.moe_triton): BF16 and block-FP8 experts on
 * a GPU without FP4 tensor cores take it; each expert's rows are padded
 * to BLOCK_SIZE_M (vLLM's H100 file for 128 experts of shard 192: 128 rows
 * at 2,048 tokens; else the default config: 64 rows, block FP8 always 64),
 * and the compute runs at 0.670 (BF16) or 0.858 (block FP8) of the dense
 * BF16 rate after 182 or 311 of k a tile. */
static void test_grouped_matmul_triton(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    double peak = topo->gpu.bf16_flops_per_s, fp4 = topo->gpu.fp4_flops_per_s;
    double eff = topo->gpu.matmul_efficiency, K = 4096.0;
    double kpad = (double)topo->gpu.matmul_k_pad;
    topo->gpu.fp4_flops_per_s = 0; /* Hopper */
    c.moe_triton = true;
    c.moe_top_k = 8;
    c.moe_inter = 192;
    assert_true(nvl_cost_moe_triton(&c));
    c.weight_dtype = NVL_WDT_FP8; /* per-tensor FP8: not this kernel */
    assert_false(nvl_cost_moe_triton(&c));
    c.weight_dtype = NVL_WDT_FP8_BLOCK;
    assert_true(nvl_cost_moe_triton(&c));
    topo->gpu.bf16_flops_per_s = peak / 1e5; /* compute-bound */
    uint64_t m128[128], m129[128];
    for (int i = 0; i < 128; i++) {
        m128[i] = 128;
        m129[i] = 129;
    }
    double over = (double)topo->gpu.kernel_overhead_ps;
    double f8 = (double)nvl_cost_grouped_matmul(&c, 128, m128, 384, 4096)
                    .time_ps - over;
    c.weight_dtype = NVL_WDT_BF16;
    double b128 = (double)nvl_cost_grouped_matmul(&c, 128, m128, 384, 4096)
                      .time_ps - over,
           b129 = (double)nvl_cost_grouped_matmul(&c, 128, m129, 384, 4096)
                      .time_ps - over;
    double flops = 2.0 * 128 * 128 * 384 * K;
    assert_true(fabs(b128 / (flops / (peak / 1e5 * eff * 0.670 * K /
                                      (K + 182.0)) * 1e12) - 1.0) < 1e-3);
    assert_true(fabs(f8 / (flops / (peak / 1e5 * eff * 0.858 * K /
                                    (K + 311.0)) * 1e12) - 1.0) < 1e-3);
    assert_true(fabs(b129 / b128 - 2.0) < 1e-3); /* 128-row tiles */
    c.moe_inter = 384; /* no file: the default config's 64 rows */
    double d129 = (double)nvl_cost_grouped_matmul(&c, 128, m129, 384, 4096)
                      .time_ps - over;
    assert_true(fabs(d129 / b128 - 1.5) < 1e-3);
    c.moe_triton = false; /* the CUTLASS grouped GEMM at the dense rate */
    double g128 = (double)nvl_cost_grouped_matmul(&c, 128, m128, 384, 4096)
                      .time_ps - over;
    assert_true(fabs(b128 / g128 - (K + 182.0) / (K + kpad) / 0.670) < 1e-3);
    c.moe_triton = true;
    /* a row an expert: no CUTLASS weight-panel floor (no TMA descriptors
     * to rewrite), only the weights streamed */
    topo->gpu.bf16_flops_per_s = peak;
    uint64_t r1[128];
    for (int i = 0; i < 128; i++)
        r1[i] = 1;
    double t1 = (double)nvl_cost_grouped_matmul(&c, 128, r1, 384, 4096).time_ps;
    c.moe_triton = false;
    assert_true(t1 < 0.8 * (double)nvl_cost_grouped_matmul(&c, 128, r1, 384,
                                                           4096).time_ps);
    c.moe_triton = true;
    topo->gpu.fp4_flops_per_s = 1e15; /* Blackwell: not this kernel */
    assert_false(nvl_cost_moe_triton(&c));
    topo->gpu.bf16_flops_per_s = peak;
    topo->gpu.fp4_flops_per_s = fp4;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grouped_matmul_lowp),
        cmocka_unit_test(test_grouped_matmul_torch_fp8),
        cmocka_unit_test(test_grouped_matmul),
        cmocka_unit_test(test_grouped_matmul_torch_bf16),
        cmocka_unit_test(test_grouped_matmul_marlin),
        cmocka_unit_test(test_grouped_matmul_triton),
    };
    return cmocka_run_group_tests(tests, load, unload);
}
