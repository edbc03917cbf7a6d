/* Unit tests of the compute cost model (include/nvlemu/cost.h): its
 * regimes, its inputs, and the host launch model.  How close it comes to
 * measured kernels is bench/validate_compute's job. */
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cost_fixture.h"
#include "reports.h"

static double us(nvl_kernel_cost_t c) { return (double)c.time_ps / 1e6; }

/* A decode matmul streams its weights: time ~ bytes; a large one is
 * compute-bound at matmul_efficiency of peak. */
static void test_matmul_regimes(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    nvl_kernel_cost_t small = nvl_cost_matmul(&c, 1, 37888, 3584);
    assert_true(small.bytes > 37888.0 * 3584 * 2);
    /* measured 68.5 us (gemm_qwen2.5-7b.csv): within 10 % */
    assert_in_range((int64_t)us(small), 62, 75);
    /* the same weights at m = 64: still memory-bound, barely slower */
    nvl_kernel_cost_t m64 = nvl_cost_matmul(&c, 64, 37888, 3584);
    assert_true(us(m64) < 1.1 * us(small));
    /* 8192^3 is compute-bound: 0.70 x 8192/8256 of 989 TFLOP/s = 687 */
    nvl_kernel_cost_t big = nvl_cost_matmul(&c, 8192, 8192, 8192);
    double tflops = big.flops / ((double)big.time_ps * 1e-12) / 1e12;
    assert_in_range((int64_t)tflops, 680, 690);
    /* nothing to do costs nothing */
    assert_int_equal(nvl_cost_matmul(&c, 0, 10, 10).time_ps, 0);
    assert_int_equal(nvl_cost_matmul(&c, 4, 0, 10).time_ps, 0);
}

/* Beside another kernel (async TP's allreduce, nvl_cost_matmul_shared): a
 * compute-bound matmul runs on the SMs left, S / (S - s) slower; a decode
 * matmul streams at the HBM bandwidth left, B / (B - b) slower; nothing
 * taken changes nothing.  By hand from the topology's constants. */
static void test_matmul_shared(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    const nvl_gpu_spec_t *g = &topo->gpu;
    double S = g->sm_count, s = 32;
    nvl_kernel_cost_t big = nvl_cost_matmul(&c, 8192, 8192, 8192);
    assert_int_equal(nvl_cost_matmul_shared(&c, 8192, 8192, 8192, 0, 0).time_ps,
                     big.time_ps);
    nvl_kernel_cost_t sh = nvl_cost_matmul_shared(&c, 8192, 8192, 8192, 32, 0);
    double t_c = big.flops / (g->bf16_flops_per_s * g->matmul_efficiency *
                              8192.0 / (8192.0 + g->matmul_k_pad));
    double extra_ps = t_c * (S / (S - s) - 1) * 1e12;
    assert_true(fabs((double)(sh.time_ps - big.time_ps) - extra_ps) < 2);
    /* decode: 1 x 37888 x 3584 streams its weights; a quarter of the HBM
     * rate taken */
    double rate = g->hbm_bw_bytes_per_s * g->hbm_efficiency;
    nvl_kernel_cost_t dec = nvl_cost_matmul(&c, 1, 37888, 3584);
    nvl_kernel_cost_t dsh =
        nvl_cost_matmul_shared(&c, 1, 37888, 3584, 0, 0.25 * rate);
    double width = 37888.0 / (S * g->matmul_cols_per_sm);
    double t_m = dec.bytes / (rate * pow(fmin(1.0, width), g->matmul_width_exp));
    extra_ps = t_m * (1 / 0.75 - 1) * 1e12;
    assert_true(fabs((double)(dsh.time_ps - dec.time_ps) - extra_ps) < 2);
}

/* A narrow dense GEMM with a long K loop splits it (docs/cost-model.md,
 * "Split-K"): Qwen2.5-72B's TP 8 qkv shard (n = 1280, k = 8192) at m = 1
 * fills a third of the columns the SMs stream (width 0.32), so four parts
 * fill them all, each writing fp32 partials that a reduction kernel sums.
 * By hand from the topology's constants; a short K (k = 1536, 3 KB of a
 * weight row: one pipeline of 2 KB) is not split; rows up to a dense
 * tile's 128 add no weight streams. */
static void test_matmul_split_k(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    const nvl_gpu_spec_t *g = &topo->gpu;
    double rate = g->hbm_bw_bytes_per_s * g->hbm_efficiency;
    double width = 1280.0 / (g->sm_count * g->matmul_cols_per_sm);
    double w_bytes = 1280.0 * 8192 * 2, x_bytes = 8192.0 * 2;
    double out = 1280.0 * 2;
    double fixed =
        ((double)g->kernel_floor_ps + (double)g->mem_latency_ps) * 1e-12;
    double s = ceil(1.0 / width);
    assert_true(s == 4);
    double t_split = (w_bytes + x_bytes + 2 * s * out) / rate + fixed +
                     (2 * s * out + out) / rate;
    double t_plain = (w_bytes + x_bytes + out) /
                     (rate * pow(width, g->matmul_width_exp));
    nvl_kernel_cost_t q = nvl_cost_matmul(&c, 1, 1280, 8192);
    double body = (double)(q.time_ps - g->kernel_overhead_ps) * 1e-12;
    assert_true(fabs(body - t_split) < 2e-12);
    assert_true(t_split < t_plain);
    assert_int_equal(nvl_cost_matmul_split_k(&c, 1, 1280, 8192), 4);
    assert_int_equal(nvl_cost_matmul_split_k(&c, 1, 1280, 1536), 1);
    /* k = 1536: one part, the plain formula */
    q = nvl_cost_matmul(&c, 1, 1280, 1536);
    body = (double)(q.time_ps - g->kernel_overhead_ps) * 1e-12;
    t_plain = (1280.0 * 1536 * 2 + 1536.0 * 2 + out) /
              (rate * pow(width, g->matmul_width_exp));
    assert_true(fabs(body - t_plain) < 2e-12);
    /* m = 128 streams the same weights as m = 1: at most its extra rows'
     * bytes slower */
    nvl_kernel_cost_t m1 = nvl_cost_matmul(&c, 1, 37888, 3584);
    nvl_kernel_cost_t m128 = nvl_cost_matmul(&c, 128, 37888, 3584);
    assert_true(us(m128) < 1.05 * us(m1));
}

/* FP8 halves the weight bytes; FP4 on a GPU without FP4 units runs as
 * weight-only quantization at the BF16 rate with MX scales counted. */
static void test_matmul_dtypes(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    nvl_kernel_cost_t bf = nvl_cost_matmul(&c, 1, 29568, 8192);
    c.weight_dtype = NVL_WDT_FP8;
    nvl_kernel_cost_t f8 = nvl_cost_matmul(&c, 1, 29568, 8192);
    c.weight_dtype = NVL_WDT_FP4;
    nvl_kernel_cost_t f4 = nvl_cost_matmul(&c, 1, 29568, 8192);
    assert_true(f8.bytes < 0.51 * bf.bytes);
    assert_true(f4.bytes < 0.28 * bf.bytes && f4.bytes > 0.26 * bf.bytes);
    assert_true(us(f4) < us(f8) && us(f8) < us(bf));
    assert_float_equal(nvl_wdtype_bytes(NVL_WDT_FP4), 0.53125, 1e-12);
    /* a block scale's share from the format's row, in the checkpoint's
     * width where the layout lets the writer choose it */
    assert_float_equal(nvl_wdtype_bytes(NVL_WDT_NVFP4), 0.5625, 1e-12);
    assert_float_equal(nvl_wdtype_bytes(NVL_WDT_INT4), 0.5 + 4.0 / 128, 1e-12);
    assert_float_equal(nvl_wdtype_stored_bytes(NVL_WDT_INT4, 2),
                       0.5 + 2.0 / 128, 1e-12);
    assert_float_equal(nvl_wdtype_stored_bytes(NVL_WDT_NVFP4, 2), 0.5625,
                       1e-12);
    assert_float_equal(nvl_wdtype_bytes(NVL_WDT_FP8_BLOCK),
                       1.0 + 4.0 / (128.0 * 128.0), 1e-12);
    assert_float_equal(nvl_wdtype_bytes(NVL_WDT_BF16), 2.0, 1e-12);
    /* compute-bound: FP4 on Hopper is no faster than BF16 */
    c.weight_dtype = NVL_WDT_FP4;
    int64_t t4 = nvl_cost_matmul(&c, 8192, 8192, 8192).time_ps;
    c.weight_dtype = NVL_WDT_BF16;
    int64_t tb = nvl_cost_matmul(&c, 8192, 8192, 8192).time_ps;
    assert_true(t4 >= tb * 99 / 100);
}

/* An FP8 tile's fixed work is the topology's fp8_matmul_k_pad steps of k
 * (h200-nvl2.topo: 220, fit to per-tensor FP8 cuBLASLt on an H200), BF16's
 * stays matmul_k_pad; 0 falls back to matmul_k_pad.  A compute-bound
 * 32768 x 4096 x K GEMM takes (K + pad) / K of its peak-rate time, by
 * hand. */
static void test_matmul_fp8_k_pad(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    nvl_gpu_spec_t *g = &topo->gpu;
    assert_int_equal(g->fp8_matmul_k_pad, 220);
    double over_s = (double)g->kernel_overhead_ps * 1e-12;
    c.weight_dtype = NVL_WDT_FP8;
    for (uint64_t k = 1024; k <= 8192; k *= 8) {
        double flops = 2.0 * 32768 * 4096 * (double)k;
        double t_s = flops / (g->fp8_flops_per_s * g->matmul_efficiency) *
                         ((double)k + 220) / (double)k + over_s;
        double got_s =
            (double)nvl_cost_matmul(&c, 32768, 4096, k).time_ps * 1e-12;
        assert_true(fabs(got_s / t_s - 1) < 1e-6);
    }
    uint32_t saved = g->fp8_matmul_k_pad;
    int64_t with_pad = nvl_cost_matmul(&c, 32768, 4096, 1024).time_ps;
    g->fp8_matmul_k_pad = 0; /* unset: the shared matmul_k_pad */
    int64_t shared = nvl_cost_matmul(&c, 32768, 4096, 1024).time_ps;
    g->fp8_matmul_k_pad = saved;
    double flops = 2.0 * 32768 * 4096 * 1024;
    double t_s = flops / (g->fp8_flops_per_s * g->matmul_efficiency) *
                     (1024.0 + g->matmul_k_pad) / 1024.0 + over_s;
    assert_true(fabs((double)shared * 1e-12 / t_s - 1) < 1e-6);
    assert_true(with_pad > shared);
    /* BF16 keeps matmul_k_pad */
    c.weight_dtype = NVL_WDT_BF16;
    t_s = flops / (g->bf16_flops_per_s * g->matmul_efficiency) *
              (1024.0 + g->matmul_k_pad) / 1024.0 + over_s;
    assert_true(fabs((double)nvl_cost_matmul(&c, 32768, 4096, 1024).time_ps *
                         1e-12 / t_s - 1) < 1e-6);
}

/* Eager: a kernel shorter than its launch leaves the GPU waiting; graph:
 * one launch per pass; persistent: no launch, less fixed time per kernel. */
static void test_launch_modes(void **state)
{
    (void)state;
    int64_t launch = topo->gpu.launch_overhead_ps;
    int64_t tiny = launch / 4;
    int64_t end[NVL_LAUNCH_COUNT], wait[NVL_LAUNCH_COUNT];
    for (int l = 0; l < NVL_LAUNCH_COUNT; l++) {
        nvl_cost_cfg_t c = cfg_of((nvl_launch_t)l);
        nvl_vclock_t gpu = {0};
        nvl_stream_t s;
        nvl_stream_init(&s, &c, &gpu);
        nvl_stream_begin_pass(&s, &gpu);
        for (int k = 0; k < 10; k++)
            nvl_stream_kernel(&s, &gpu, tiny);
        end[l] = gpu.now_ps;
        wait[l] = s.launch_wait_ps;
    }
    assert_int_equal(end[NVL_LAUNCH_EAGER], 10 * launch + tiny);
    assert_int_equal(end[NVL_LAUNCH_GRAPH], launch + 10 * tiny);
    assert_int_equal(end[NVL_LAUNCH_PERSISTENT], 10 * tiny);
    assert_int_equal(wait[NVL_LAUNCH_PERSISTENT], 0);
    assert_true(wait[NVL_LAUNCH_EAGER] > wait[NVL_LAUNCH_GRAPH]);
    /* a persistent kernel saves the empty-kernel floor */
    nvl_cost_cfg_t g = cfg_of(NVL_LAUNCH_GRAPH);
    nvl_cost_cfg_t p = cfg_of(NVL_LAUNCH_PERSISTENT);
    assert_int_equal(nvl_cost_memory(&g, 1e6).time_ps -
                         nvl_cost_memory(&p, 1e6).time_ps,
                     topo->gpu.kernel_floor_ps);
}

/* What-if overrides reach the model: half the HBM bandwidth, twice the
 * time of a streaming kernel's data part. */
static void test_overrides(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_PERSISTENT);
    int64_t base = nvl_cost_memory(&c, 1e9).time_ps;
    assert_int_equal(nvl_topo_set(topo, "gpu.0.hbm_bw_scale=0.5"), NVL_OK);
    int64_t slow = nvl_cost_memory(&c, 1e9).time_ps;
    assert_int_equal(nvl_topo_set(topo, "gpu.0.hbm_bw_scale=1"), NVL_OK);
    /* inside a persistent kernel a memory-bound step keeps only its
     * memory latency as fixed part: the data part doubles */
    int64_t lat = topo->gpu.mem_latency_ps;
    assert_in_range(slow - lat, 2 * (base - lat) - 2, 2 * (base - lat) + 2);
}

/* Strided element-wise kernels stream at strided_efficiency of the rate;
 * indexed ones also wait for their index (one more mem_latency). */
static void test_memory_access(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    const nvl_gpu_spec_t *g = &topo->gpu;
    int64_t fixed = g->kernel_floor_ps + g->mem_latency_ps;
    double bytes = 1e9;
    int64_t cont = nvl_cost_memory(&c, bytes).time_ps;
    int64_t str = nvl_cost_memory_access(&c, bytes, NVL_ACCESS_STRIDED).time_ps;
    int64_t idx = nvl_cost_memory_access(&c, bytes, NVL_ACCESS_INDEXED).time_ps;
    double ratio = (double)(str - fixed) / (double)(cont - fixed);
    /* contiguous kernels stream at stream_efficiency where it is given,
     * strided ones at a share of hbm_efficiency's rate */
    double stream = g->stream_efficiency > 0 ? g->stream_efficiency
                                             : g->hbm_efficiency;
    assert_true(fabs(ratio * g->strided_efficiency * g->hbm_efficiency /
                     stream - 1.0) < 1e-6);
    assert_int_equal(idx - str, g->mem_latency_ps);
    /* a tiny kernel costs its fixed part */
    assert_in_range(nvl_cost_memory(&c, 2).time_ps, fixed, fixed + 10);
}

/* A pointwise kernel of one element a thread: up to sms x 2048 elements
 * it costs its bytes; each further wave of them adds one mem_latency
 * (Qwen2.5-7B's SiLU x up at TP 2, batch 256: 9 waves on 132 SMs). */
static void test_pointwise_waves(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    const nvl_gpu_spec_t *g = &topo->gpu;
    double wave = (double)g->sm_count * 2048.0, el = 256.0 * 9472.0;
    double bytes = el * 6.0;
    int64_t mem = nvl_cost_memory(&c, bytes).time_ps;
    assert_int_equal(nvl_cost_pointwise_waves(&c, bytes, wave, 1).time_ps,
                     nvl_cost_memory(&c, bytes).time_ps);
    assert_int_equal(nvl_cost_pointwise_waves(&c, bytes, el, 0).time_ps, mem);
    int64_t w = nvl_cost_pointwise_waves(&c, bytes, el, 1).time_ps;
    double waves = ceil(el / wave);
    assert_true(waves >= 2);
    assert_in_range(w - mem, (int64_t)(waves - 1) * g->mem_latency_ps - 2,
                    (int64_t)(waves - 1) * g->mem_latency_ps + 2);
    /* 8 elements a thread: 8 x fewer waves */
    int64_t w8 = nvl_cost_pointwise_waves(&c, bytes, el, 8).time_ps;
    assert_in_range(w8 - mem, (int64_t)(ceil(el / (8 * wave)) - 1) *
                                  g->mem_latency_ps - 2,
                    (int64_t)(ceil(el / (8 * wave)) - 1) *
                            g->mem_latency_ps + 2);
}

/* A norm kernel with one CTA per row: below one wave of resident CTAs the
 * row's steps set the time (not the row count); past it, waves add up. */
static void test_norm_waves(void **state)
{
    (void)state;
    nvl_cost_cfg_t c = cfg_of(NVL_LAUNCH_GRAPH);
    const nvl_gpu_spec_t *g = &topo->gpu;
    int64_t fixed = g->kernel_floor_ps + g->mem_latency_ps;
    double per_cta = 2048.0 / 128.0;
    double resident = g->sm_count * per_cta;
    /* 8192 elements, 128 threads x 4: 16 steps a pass, 2 passes */
    int64_t one = nvl_cost_norm(&c, 1, 8192, 8192 * 4.0, 128, 4, 2).time_ps;
    assert_int_equal(one - fixed, 32 * g->norm_step_ps);
    int64_t full = nvl_cost_norm(&c, resident, 8192, 16, 128, 4, 2).time_ps;
    assert_int_equal(full, one);
    int64_t two = nvl_cost_norm(&c, resident + 1, 8192, 16, 128, 4, 2).time_ps;
    assert_int_equal(two - fixed, 2 * (one - fixed));
    /* a serving engine's norm (1024 threads x 8) takes 1 step a pass */
    int64_t fused = nvl_cost_norm(&c, 1, 8192, 16, 1024, 8, 2).time_ps;
    assert_int_equal(fused - fixed, 2 * g->norm_step_ps);
    /* many rows: bandwidth-bound */
    double big = 1e10;
    int64_t bw = nvl_cost_norm(&c, 8192, 8192, big, 1024, 8, 2).time_ps;
    assert_true(bw > nvl_cost_memory(&c, big).time_ps - 10);
    assert_int_equal(nvl_cost_norm(&c, 0, 8192, 16, 128, 4, 2).time_ps, 0);
}

/* --attn auto: the torch stack and its compiled form call SDPA; a
 * serving engine FA4 on GPUs with FP4 tensor cores, FA3 elsewhere. */
static void test_attn_auto(void **state)
{
    (void)state;
    assert_int_equal(nvl_stack_attn(topo, NVL_STACK_TORCH), NVL_ATTN_SDPA);
    assert_int_equal(nvl_stack_attn(topo, NVL_STACK_COMPILED), NVL_ATTN_SDPA);
    nvl_attn_impl_t want = topo->gpu.fp4_flops_per_s > 0 ? NVL_ATTN_FA4
                                                          : NVL_ATTN_FA3;
    assert_int_equal(nvl_stack_attn(topo, NVL_STACK_FUSED), want);
    assert_int_equal(nvl_attn_flash(topo), want);
    int st;
    assert_int_equal(nvl_family_parse(&nvl_stack_family, "torch", &st),
                     NVL_OK);
    assert_int_equal(st, NVL_STACK_TORCH);
    assert_int_equal(nvl_family_parse(&nvl_stack_family, "compiled", &st),
                     NVL_OK);
    assert_int_equal(st, NVL_STACK_COMPILED);
    assert_int_equal(nvl_family_parse(&nvl_stack_family, "vllm", &st),
                     NVL_ERR_INVALID);
    /* SDPA's prefill runs at sdpa_efficiency instead of attn_efficiency
     * (the tiles' fixed round trips, mem_latency, left out) */
    nvl_cost_cfg_t fa = cfg_of(NVL_LAUNCH_GRAPH), sd = fa;
    sd.attn = NVL_ATTN_SDPA;
    uint64_t t = 4096, past = 0;
    int64_t lat = topo->gpu.mem_latency_ps;
    topo->gpu.mem_latency_ps = 0;
    nvl_kernel_cost_t a = nvl_cost_attention(&fa, 1, &t, &past, 64, 8, 128);
    nvl_kernel_cost_t b = nvl_cost_attention(&sd, 1, &t, &past, 64, 8, 128);
    topo->gpu.mem_latency_ps = lat;
    int64_t over = topo->gpu.attn_overhead_ps;
    double r = (double)(b.time_ps - over) / (double)(a.time_ps - over);
    assert_true(fabs(r - topo->gpu.attn_efficiency / topo->gpu.sdpa_efficiency) <
                1e-3);
}

static void test_names(void **state)
{
    (void)state;
    nvl_wdtype_t dt;
    nvl_launch_t l;
    assert_int_equal(nvl_wdtype_parse("--dtype", "fp8", &dt), NVL_OK);
    assert_int_equal(dt, NVL_WDT_FP8);
    assert_int_equal(nvl_launch_parse("--launch", "persistent", &l), NVL_OK);
    assert_int_equal(l, NVL_LAUNCH_PERSISTENT);
    assert_int_equal(nvl_wdtype_parse("--dtype", "int3", &dt),
                     NVL_ERR_INVALID);
    assert_string_equal(reports.last, "--dtype: unknown value 'int3' "
                                      "(expected one of: bf16, fp8, fp4, nvfp4, fp8-block, "
                                      "fp8-channel, int8, int4)");
}

/* --rank-plays die: a die of a GB200 package (half the SMs, FLOP rates and
 * HBM bandwidth) given half the package's work takes what the package
 * takes for all of it: a large matmul over half the rows; a decode matmul
 * the same plus the half of its input x that both dies read; a memory
 * kernel by hand: floor + mem_latency + bytes / (4 TB/s x
 * hbm_efficiency). */
static void test_die_half_work(void **state)
{
    (void)state;
    nvl_topo_t *pkg = NULL, *die = NULL;
    assert_int_equal(nvl_topo_load(NVL_TOPOLOGY_DIR "/gb200-nvl72.topo", &pkg),
                     NVL_OK);
    assert_int_equal(nvl_topo_load(NVL_TOPOLOGY_DIR "/gb200-nvl72.topo", &die),
                     NVL_OK);
    assert_int_equal(nvl_topo_split_dies(die), NVL_OK);
    nvl_cost_cfg_t cp = cfg_of(NVL_LAUNCH_GRAPH), cd = cp;
    cp.topo = pkg;
    cd.topo = die;
    cd.gpu = 1; /* die 1 of package 0 */
    /* memory-bound: each die streams half the weights but all of x
     * (8 x 8192 bf16), so it pays half of x's read once more */
    double x_half_ps = 8.0 * 8192 * 2 / 2 / (4e12 * 0.80) * 1e12;
    double gap = (double)(nvl_cost_matmul(&cd, 8, 4096, 8192).time_ps -
                          nvl_cost_matmul(&cp, 8, 8192, 8192).time_ps);
    assert_true(fabs(gap - x_half_ps) < 2);
    /* compute-bound: half the FLOPs at half the rate */
    assert_int_equal(nvl_cost_matmul(&cd, 8192, 4096, 8192).time_ps,
                     nvl_cost_matmul(&cp, 8192, 8192, 8192).time_ps);
    double bytes = 1e9;
    double hand_ps = 0.9e6 + 0.9e6 + bytes / (4e12 * 0.80) * 1e12;
    assert_true(fabs((double)nvl_cost_memory(&cd, bytes).time_ps - hand_ps) <
                2);
    assert_int_equal(nvl_cost_memory(&cd, bytes / 2).time_ps,
                     nvl_cost_memory(&cp, bytes).time_ps);
    nvl_topo_free(pkg);
    nvl_topo_free(die);
}

/* The shipped GB200 NVL72 topology (a Blackwell GPU with FP4 tensor
 * cores). */
static nvl_topo_t *load_gb200(void)
{
    nvl_topo_t *gb = NULL;
    assert_int_equal(nvl_topo_load(NVL_TOPOLOGY_DIR "/gb200-nvl72.topo", &gb),
                     NVL_OK);
    return gb;
}

/* The GEMM library: each stack's per type, and a library's share of
 * cuBLASLt's rate (src/cost/gemm_lib.c). */
static void test_gemm_library(void **state)
{
    (void)state;
    nvl_topo_t *gb = load_gb200();
    nvl_cost_cfg_t c = {.topo = gb, .weight_dtype = NVL_WDT_FP4};
    nvl_stack_cost(NVL_STACK_FUSED, &c);
    double rel;
    /* TensorRT-LLM's NVFP4 linear runs CUTLASS, torch cuBLASLt */
    assert_int_equal(nvl_gemm_lib_choose(&c, NVL_WDT_FP4, &rel),
                     NVL_GEMM_CUTLASS);
    assert_true(rel > 0.5 && rel < 0.8);
    double t_fused = us(nvl_cost_matmul(&c, 16384, 16384, 16384));
    nvl_stack_cost(NVL_STACK_TORCH, &c);
    assert_int_equal(nvl_gemm_lib_choose(&c, NVL_WDT_FP4, &rel),
                     NVL_GEMM_CUBLASLT);
    assert_true(rel == 1.0);
    double t_torch = us(nvl_cost_matmul(&c, 16384, 16384, 16384));
    assert_true(fabs(t_fused / t_torch - 1.0 / 0.622) < 0.02);
    /* a named library overrides the stack's; DeepGEMM has no FP4 kernel */
    c.gemm_lib = NVL_GEMM_CUTLASS;
    assert_true(fabs(us(nvl_cost_matmul(&c, 16384, 16384, 16384)) - t_fused) <
                1e-6);
    c.gemm_lib = NVL_GEMM_DEEPGEMM;
    assert_int_equal(nvl_gemm_lib_choose(&c, NVL_WDT_FP4, &rel),
                     NVL_GEMM_DEEPGEMM);
    assert_true(rel == 0);
    /* on Hopper FP4 runs dequantised: the BF16 cell, cuBLASLt's for both
     * stacks, so H200's times do not depend on the stack's library */
    nvl_cost_cfg_t h = cfg_of(NVL_LAUNCH_GRAPH);
    h.weight_dtype = NVL_WDT_FP4;
    nvl_stack_cost(NVL_STACK_FUSED, &h);
    assert_int_equal(nvl_gemm_lib_choose(&h, NVL_WDT_FP4, &rel),
                     NVL_GEMM_CUBLASLT);
    double a = us(nvl_cost_matmul(&h, 512, 8192, 8192));
    nvl_stack_cost(NVL_STACK_TORCH, &h);
    assert_true(fabs(us(nvl_cost_matmul(&h, 512, 8192, 8192)) - a) < 1e-9);
    /* cuBLASLt's per-row-scaled FP8 on Hopper: one 128 x 128 tile, no
     * split-K: Qwen2.5-72B's TP 8 qkv (n = 1280) at m = 64 has 10 CTAs
     * streaming, slower than the per-tensor kernel, and its body is the
     * plain formula at 10 CTAs' share of the SMs */
    const nvl_gpu_spec_t *g = &topo->gpu;
    assert_true(nvl_gemm_lib_fixed_tile_n(&h, NVL_WDT_FP8_CHANNEL) == 128);
    assert_true(nvl_gemm_lib_fixed_tile_n(&h, NVL_WDT_FP8) == 0);
    assert_true(nvl_gemm_lib_fixed_tile_n(&c, NVL_WDT_FP8_CHANNEL) == 0);
    h.weight_dtype = NVL_WDT_FP8_CHANNEL;
    double t_row = us(nvl_cost_matmul(&h, 64, 1280, 8192));
    assert_int_equal(nvl_cost_matmul_split_k(&h, 64, 1280, 8192), 1);
    assert_true(g->matmul_cols_per_sm <= 128);
    double width = 10.0 * (double)g->matmul_cols_per_sm /
            (g->sm_count * g->matmul_cols_per_sm);
    nvl_gemm_bytes_t wb =
        nvl_cost_weight_bytes(NVL_WDT_FP8_CHANNEL, 1280, 8192,
                              h.weight_scale_bytes);
    nvl_gemm_bytes_t ib = nvl_cost_input_bytes(NVL_WDT_FP8_CHANNEL, 64, 8192);
    double bytes = wb.data_bytes + wb.scale_bytes + ib.data_bytes +
                   ib.scale_bytes + 64.0 * 1280 * 2;
    double body = bytes / (g->hbm_bw_bytes_per_s * g->hbm_efficiency *
                           pow(width, g->matmul_width_exp));
    assert_true(fabs(t_row - (body * 1e6 + g->kernel_overhead_ps * 1e-6)) <
                1e-3);
    h.weight_dtype = NVL_WDT_FP8;
    assert_true(t_row > 1.5 * us(nvl_cost_matmul(&h, 64, 1280, 8192)));
    nvl_topo_free(gb);
}

/* cuBLASLt's block-scaled FP4 on Blackwell: 128 x 128 CTAs in waves, and
 * once its call cost ([gpu] fp4_call_overhead); CUTLASS's kernel picks its
 * tile by shape.  By hand at 2048 x 2048 x 8192 on GB200: 256 CTAs, a full
 * wave at the GPU's FP4 efficiency, then 108 CTAs at an SM's boost share
 * (0.94). */
static void test_block_scaled_fp4(void **state)
{
    (void)state;
    nvl_topo_t *gb = load_gb200();
    nvl_cost_cfg_t c = {.topo = gb, .weight_dtype = NVL_WDT_FP4};
    nvl_stack_cost(NVL_STACK_TORCH, &c);
    const nvl_gpu_spec_t *b = &gb->gpu;
    assert_true(b->fp4_call_overhead_ps > 1000000);
    assert_true(nvl_gemm_lib_fixed_tile_n(&c, NVL_WDT_FP4) == 128);
    assert_true(nvl_gemm_lib_fixed_s(&c, NVL_WDT_FP4) ==
                b->fp4_call_overhead_ps * 1e-12);
    double ks = 8192.0 / (8192.0 + (double)b->matmul_k_pad);
    double tile = 2.0 * 128 * 128 * 8192;
    double sm_peak = b->fp4_flops_per_s / b->sm_count;
    double waves = tile / (sm_peak * b->fp4_matmul_efficiency * ks) +
                   tile / (sm_peak * 0.94 * ks);
    assert_true(fabs(us(nvl_cost_matmul(&c, 2048, 2048, 8192)) -
                     (b->kernel_overhead_ps + b->fp4_call_overhead_ps) *
                         1e-6 -
                     waves * 1e6) < 1e-3);
    c.gemm_lib = NVL_GEMM_CUTLASS;
    assert_true(nvl_gemm_lib_fixed_tile_n(&c, NVL_WDT_FP4) == 0);
    assert_true(nvl_gemm_lib_fixed_s(&c, NVL_WDT_FP4) == 0);
    nvl_topo_free(gb);
}

/* cuBLASLt's per-row-scaled FP8 tile on Hopper runs in waves of one CTA
 * an SM: Qwen2.5-7B's TP 1 qkv (n = 4608, k = 3584) has 72 CTAs at
 * m = 256, one short wave at an SM's boost rate (0.94 of its share of the
 * peak after k_pad), and 144 at m = 512: a full wave at the GPU's matmul
 * efficiency, then 12 CTAs at the boost rate (measured 13.1 and 23.3 us,
 * tests/data/calibration/h200-fp8-scaled-mm).  By hand. */
static void test_fixed_tile_waves(void **state)
{
    (void)state;
    nvl_cost_cfg_t h = cfg_of(NVL_LAUNCH_GRAPH);
    const nvl_gpu_spec_t *g = &topo->gpu;
    h.weight_dtype = NVL_WDT_FP8_CHANNEL;
    double k_share = 3584.0 / (3584.0 + (double)g->fp8_matmul_k_pad);
    double sm_peak = g->fp8_flops_per_s / g->sm_count;
    double tile = 2.0 * 128 * 128 * 3584;
    double t_boost = tile / (sm_peak * 0.94 * k_share) * 1e6;
    double t_full = tile / (sm_peak * g->matmul_efficiency * k_share) * 1e6;
    double ovh = g->kernel_overhead_ps * 1e-6;
    assert_true(fabs(us(nvl_cost_matmul(&h, 256, 4608, 3584)) -
                     (ovh + t_boost)) < 1e-3);
    assert_true(fabs(us(nvl_cost_matmul(&h, 512, 4608, 3584)) -
                     (ovh + t_full + t_boost)) < 1e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_regimes),
        cmocka_unit_test(test_matmul_shared),
        cmocka_unit_test(test_matmul_split_k),
        cmocka_unit_test(test_matmul_dtypes),
        cmocka_unit_test(test_matmul_fp8_k_pad),
        cmocka_unit_test(test_gemm_library),
        cmocka_unit_test(test_block_scaled_fp4),
        cmocka_unit_test(test_fixed_tile_waves),
        cmocka_unit_test(test_launch_modes),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_memory_access),
        cmocka_unit_test(test_pointwise_waves),
        cmocka_unit_test(test_norm_waves),
        cmocka_unit_test(test_attn_auto),
        cmocka_unit_test(test_die_half_work),
        cmocka_unit_test_setup_teardown(test_names, capture_reports,
                                        release_reports),
    };
    int rc = load(NULL);
    if (rc != 0)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    unload(NULL);
    return rc;
}
