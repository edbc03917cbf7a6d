/* nvlemu: the compute cost model.  How long one kernel takes on one emulated
 * GPU, from that GPU's entry in the topology (after its what-if overrides):
 *
 *   matmul     t = overhead + max(FLOPs / (peak(dtype) x e_c(k)),
 *                                 bytes / (HBM bw x e_m(m, n)))
 *              e_c(k)    = matmul_efficiency x rel(library, type)
 *                          x k / (k + matmul_k_pad)
 *                          (fp8_/fp4_matmul_efficiency for FP8 / FP4 on
 *                          their own tensor cores, when the topology sets
 *                          them: cuBLASLt's; rel from the GEMM library
 *                          table, 1 for cuBLASLt)
 *              e_m(m, n) = hbm_efficiency x
 *                          min(1, n ceil(m/128) / (sms x matmul_cols_per_sm))
 *                              ^ matmul_width_exp
 *              a narrow n with a long k: the best split of the K loop
 *              into s parts (s x the width, fp32 partials, a reduction
 *              kernel after; docs/cost-model.md "Split-K")
 *   grouped matmul (experts): the matmul formula over the groups' summed
 *              FLOPs and bytes, e_m over all their n ceil(m_i/64) tiles
 *   attention  t = overhead + max(FLOPs / (bf16 peak x attn_efficiency),
 *                                 exps on the SFUs / exp_rate,
 *                                 KV and Q/O bytes / (HBM bw x hbm_efficiency))
 *              FA3: every exp on the SFUs; FA4: a share fa4_exp_fma_share of
 *              them as polynomials on the FMA units
 *   memory-bound element-wise kernels
 *              t = overhead + bytes / (HBM bw x hbm_efficiency)
 *
 * where overhead is the GPU's kernel_overhead, or kernel_overhead -
 * kernel_floor inside a persistent kernel.  docs/cost-model.md gives each
 * formula's reasoning and the source of every constant.
 *
 * Host launch (nvl_stream_t): in eager mode the host spends launch_overhead
 * per kernel and [nccl] launch_overhead per collective, and a kernel cannot
 * start before the host has launched it; a CUDA graph costs one
 * launch_overhead per forward pass; a persistent kernel costs nothing. */
#ifndef NVLEMU_COST_H
#define NVLEMU_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvlemu/family.h"
#include "nvlemu/quant.h"
#include "nvlemu/status.h"
#include "nvlemu/topo.h"
#include "nvlemu/vclock.h"

/* Weight (and matmul input) element types, each a tensor-core type and,
 * for the quantized ones, a stored format (src/quant's rows: the scales'
 * blocks):  fp8 is ModelOpt FP8 (one FP32 scale per tensor), fp4 MX-FP4
 * (an E8M0 scale per 32: 0.53125 bytes per element), nvfp4 NVFP4 (an E4M3
 * scale per 16 and an FP32 per tensor), fp8-block FP8 with an FP32 scale
 * per 128 x 128 block. */
typedef enum {
    NVL_WDT_BF16,
    NVL_WDT_FP8,
    NVL_WDT_FP4,
    NVL_WDT_NVFP4,
    NVL_WDT_FP8_BLOCK,
    NVL_WDT_FP8_CHANNEL, /* FP8 with an FP32 scale per output channel */
    NVL_WDT_INT8,        /* int8 per channel, int8 inputs per token */
    NVL_WDT_INT4,        /* int4 per group of 128, weight-only (W4A16) */
    NVL_WDT_COUNT
} nvl_wdtype_t;

/* Whether dt is a weight-only format (int4, W4A16): its GEMMs read bf16
 * inputs whatever --act-quant says. */
bool nvl_wdtype_weight_only(nvl_wdtype_t dt);
/* The tensor-core type of dt: NVL_WDT_BF16, NVL_WDT_FP8 or NVL_WDT_FP4
 * (int8's is FP8's: the same 8-bit pipeline and peak, see families.c). */
nvl_wdtype_t nvl_wdtype_core(nvl_wdtype_t dt);
/* The dense peak FLOP rate of gpu's tensor cores for dt (its [gpu]
 * bf16/fp8/fp4_flops; int8 at fp8_flops; 0 where the GPU has none of
 * that type, and for int4, which no engine runs on integer tensor cores:
 * W4A16 dequantizes in the GEMM's mainloop and runs at BF16's rate). */
double nvl_wdtype_peak_flops_per_s(const nvl_gpu_spec_t *gpu,
                                   nvl_wdtype_t dt);

/* The bytes a GEMM reads of one weight W[n, k] stored in dt: its elements
 * (data_bytes) and its scales (scale_bytes: the format's block scales
 * from its src/quant row, each of scale_elem_bytes where the row lets
 * the checkpoint choose the scale's dtype (compressed-tensors' F32,
 * BF16 or F16 weight_scale; 0: the row's own, FP32), and its per-tensor
 * scales); and of an input
 * x[m, k] quantized as the format's activations are (the elements, and
 * the scales: one per 1 x 16 for nvfp4, 1 x 32 for fp4, 1 x 128 for
 * fp8-block, one per tensor for fp8).  bf16: no scales. */
typedef struct {
    double data_bytes, scale_bytes;
} nvl_gemm_bytes_t;
nvl_gemm_bytes_t nvl_cost_weight_bytes(nvl_wdtype_t dt, uint64_t n,
                                       uint64_t k, uint32_t scale_elem_bytes);
nvl_gemm_bytes_t nvl_cost_input_bytes(nvl_wdtype_t dt, uint64_t m,
                                      uint64_t k);

/* The stored format's name of dt (src/quant's family, or the
 * compressed-tensors layout it prices: "float-quantized/channel"), NULL
 * for bf16. */
const char *nvl_wdtype_format(nvl_wdtype_t dt);

/* The weight dtype timing mode charges for a checkpoint of format f
 * stored as `stored` lays it out (a compressed-tensors layout row, or
 * NULL: the format's own): the row that prices that layout (FP8 per
 * channel: fp8-channel), else the format's (MX-FP4: fp4). */
nvl_wdtype_t nvl_wdtype_of_quant(nvl_quant_format_t f,
                                 const nvl_quant_row_t *stored);

/* fa3, fa4: FlashAttention 3 / 4 (serving engines); sdpa: PyTorch's
 * scaled_dot_product_attention as the torch stack calls it (cuDNN's fused
 * attention, its own efficiency: [gpu] sdpa_efficiency). */
typedef enum {
    NVL_ATTN_FA3,
    NVL_ATTN_FA4,
    NVL_ATTN_SDPA,
    NVL_ATTN_COUNT
} nvl_attn_impl_t;

typedef enum {
    NVL_LAUNCH_EAGER,
    NVL_LAUNCH_GRAPH,
    NVL_LAUNCH_PERSISTENT,
    NVL_LAUNCH_COUNT
} nvl_launch_t;

/* The families (family.h), a row per enum value: their names as the
 * command line spells them, and a line each (`nvlemu --list`).  The
 * software stacks are the engine's (nvlemu/engine.h): what cost needs of
 * one comes through nvl_cost_cfg_t (its GEMM libraries) and the
 * attention kernel the caller picks. */
extern const nvl_family_t nvl_wdtype_family, nvl_attn_family,
    nvl_launch_family, nvl_gemm_lib_family,
    nvl_gemm_harness_family;
/* The KV cache's types (--kv-dtype: "bf16", "fp8"), a row each with its
 * nvl_wdtype_t, and whether dt is one of them. */
extern const nvl_family_t nvl_kv_dtype_family;
bool nvl_wdtype_is_kv(nvl_wdtype_t dt);

/* Names as the command line spells them ("bf16", "fp8", "fp4"; "fa3",
 * "fa4", "sdpa"; "eager", "graph", "persistent"), and their
 * parsers: an unknown name is reported with the accepted ones, naming
 * `what` (the option), and NVL_ERR_INVALID returned. */
const char *nvl_wdtype_name(nvl_wdtype_t dt);
const char *nvl_attn_name(nvl_attn_impl_t attn);
const char *nvl_launch_name(nvl_launch_t launch);
nvl_status_t nvl_wdtype_parse(const char *what, const char *name,
                              nvl_wdtype_t *dt_out);
nvl_status_t nvl_attn_parse(const char *what, const char *name,
                            nvl_attn_impl_t *attn_out);
nvl_status_t nvl_launch_parse(const char *what, const char *name,
                              nvl_launch_t *launch_out);

/* The FlashAttention a serving engine runs on topo's GPUs:
 * FlashAttention-4 on GPUs with FP4 tensor cores (Blackwell),
 * FlashAttention-3 elsewhere (and when topo is NULL). */
nvl_attn_impl_t nvl_attn_flash(const nvl_topo_t *topo);

/* Bytes a stored element of dt takes, its share of a block scale included
 * (a scale per row or per tensor, under 1/K of an element, is not), the
 * scale in the format's own width: bf16 2, fp8 1, nvfp4 0.5 + 1/16,
 * mxfp4 0.5 + 1/32, fp8-block 1 + 4/128^2, int4 0.5 + 4/128. */
double nvl_wdtype_bytes(nvl_wdtype_t dt);

/* The same with the checkpoint's scale width where the format lets the
 * writer choose it (compressed-tensors: scale_elem_bytes 2 for BF16 or
 * F16 scales, 4 for F32; 0: the format's own): int4 with BF16 scales
 * 0.5 + 2/128. */
double nvl_wdtype_stored_bytes(nvl_wdtype_t dt, uint32_t scale_elem_bytes);

/* The library a matrix product runs in (src/cost/gemm_lib.c,
 * docs/cost-model.md "GEMM libraries").  NVL_GEMM_STACK: the one the
 * software stack calls for the weight type (nvl_gemm_lib_choose, from
 * nvl_cost_cfg_t's stack_libs).  The
 * topology's [gpu] matmul_efficiency, fp8_ and fp4_matmul_efficiency are
 * cuBLASLt's on that GPU; every other library reaches a measured fraction
 * of cuBLASLt's rate per type (its row of the table). */
typedef enum {
    NVL_GEMM_STACK,
    NVL_GEMM_CUBLASLT,
    NVL_GEMM_CUTLASS,
    NVL_GEMM_DEEPGEMM,
    NVL_GEMM_TRTLLM_GEN,
    NVL_GEMM_COUNT
} nvl_gemm_lib_t;

/* "stack", "cublaslt", "cutlass", "deepgemm", "trtllm-gen", and the parser
 * (an unknown name is reported with the accepted ones, naming `what`). */
const char *nvl_gemm_lib_name(nvl_gemm_lib_t lib);
/* A set of libraries: one bit per nvl_gemm_lib_t. */
#define NVL_GEMM_LIB_SET(lib) (1u << (lib))
nvl_status_t nvl_gemm_lib_parse(const char *what, const char *name,
                                nvl_gemm_lib_t *lib_out);

/* How a benchmark timed the GEMM it published (src/cost/gemm_lib.c,
 * docs/cost-model.md "GEMM harnesses"): the model's kernel is the one a
 * step runs, its operands streamed from HBM; a harness that replays one
 * call on the same operands reads them from L2 where they fit. */
typedef enum {
    NVL_HARNESS_KERNEL,     /* a step's kernel (the default) */
    NVL_HARNESS_EVENTS_LOOP, /* events around back-to-back calls of a
                                native loop: the kernel's time */
    NVL_HARNESS_KINETO,     /* the profiler's kernel time, L2 flushed
                               before each call: the kernel's time */
    NVL_HARNESS_GRAPH_HOT,  /* one call replayed on the same operands
                               (triton's do_bench_cudagraph): hot L2 */
    NVL_HARNESS_COUNT
} nvl_gemm_harness_t;

/* "kernel", "events-loop", "kineto-flush-l2", "graph-hot-l2", and the
 * parser (an unknown name is reported with the accepted ones). */
const char *nvl_gemm_harness_name(nvl_gemm_harness_t h);
nvl_status_t nvl_gemm_harness_parse(const char *what, const char *name,
                                    nvl_gemm_harness_t *h_out);

/* How kernels run on one GPU. */
typedef struct {
    const nvl_topo_t *topo;
    uint32_t gpu;              /* topology index (what-if overrides apply) */
    nvl_wdtype_t weight_dtype; /* matmul weights and inputs */
    uint32_t weight_scale_bytes; /* a stored block scale's bytes where the
                                    checkpoint sets them (BF16 scales: 2);
                                    0: the format's own */
    bool weight_only;          /* quantized weights, bf16 inputs: the GEMM
                                  dequantizes to BF16 and runs at BF16's
                                  rate (--act-quant none) */
    nvl_wdtype_t kv_dtype;     /* the KV cache (bf16 or fp8) */
    nvl_attn_impl_t attn;
    /* the libraries the software stack calls, per tensor-core type
     * (NVL_GEMM_LIB_SET bits; its autotuner runs the fastest; none:
     * cuBLASLt); the engine's stack row gives them (nvl_stack_cost) */
    unsigned stack_libs[NVL_WDT_COUNT];
    nvl_launch_t launch;
    nvl_gemm_lib_t gemm_lib;   /* NVL_GEMM_STACK (0): the stack's library */
    nvl_gemm_harness_t gemm_harness; /* NVL_HARNESS_KERNEL (0): a step's */
    bool torch_grouped;        /* grouped GEMMs are PyTorch's
                                  (torch._grouped_mm, _scaled_grouped_mm:
                                  the tile chosen by shape); false: a
                                  serving engine's MoE GEMMs */
    bool moe_marlin;           /* 4-bit experts the GPU has no tensor
                                  cores for run vLLM's Marlin MoE GEMM
                                  (nvl_cost_moe_marlin); false: a CUTLASS
                                  grouped GEMM at BF16's rate */
    bool moe_triton;           /* BF16 and block-FP8 experts on Hopper run
                                  vLLM's Triton fused_moe
                                  (nvl_cost_moe_triton) */
    uint32_t moe_top_k;        /* the experts' GEMMs: experts a token picks
                                  and the intermediate width of this GPU's
                                  shard of an expert (vLLM's config key);
                                  0 elsewhere */
    uint64_t moe_inter;
    uint32_t host_sharers;     /* GPUs of this GPU's superchip reading host
                                  memory at once (0 or 1: this one alone) */
} nvl_cost_cfg_t;

/* The library a matmul of tensor-core type `dt` runs in under cfg
 * (cfg->gemm_lib, or for NVL_GEMM_STACK the fastest of cfg->stack_libs's
 * for the type: the libraries the stack calls, its autotuner picking
 * among several), and that library's efficiency relative to
 * cuBLASLt's
 * in *rel_out; 0 when the library has no kernel of that type.  `dt` is the
 * weight type; on a GPU without FP4 units FP4 weights run dequantised, at
 * the BF16 cell. */
nvl_gemm_lib_t nvl_gemm_lib_choose(const nvl_cost_cfg_t *cfg, nvl_wdtype_t dt,
                                   double *rel_out);

/* The output columns of the one CTA tile the library's kernel for weight
 * type `dt` takes whatever the shape (its rows: NVL_DENSE_TILE_M), with no
 * split of its K loop; 0 where the library picks its tile and split by
 * shape.  One such kernel: cuBLASLt's outer-vector-scaled FP8 GEMM on
 * Hopper (per-channel weight and per-token input scales, fp8-channel:
 * nvjet_sm90_qqtst_128x128_128x6_1x1_h_bz_coopA_algo2_ovscale_TNT at every
 * shape of tests/data/calibration/h200-fp8-scaled-mm): 128; and
 * cuBLASLt's block-scaled FP4 GEMM on Blackwell (CUTLASS's NVFP4 per-SM
 * tile 128 x 128 x 256): 128. */
double nvl_gemm_lib_fixed_tile_n(const nvl_cost_cfg_t *cfg, nvl_wdtype_t dt);
/* The library kernel's time per call beyond kernel_overhead and its body,
 * in seconds (0 for most): cuBLASLt's block-scaled FP4 GEMM on Blackwell
 * pays its first tile's prologue and last tile's epilogue once: the
 * topology's [gpu] fp4_call_overhead (docs/cost-model.md, "GEMM
 * libraries"). */
double nvl_gemm_lib_fixed_s(const nvl_cost_cfg_t *cfg, nvl_wdtype_t dt);

/* The factor on the HBM rate of a dense GEMM that moves `bytes` (operands
 * and output) under cfg's harness: 1, except under a hot-L2 harness for a
 * GEMM whose bytes fit in the smallest L2 of the GPUs modelled
 * (NVL_HOT_L2_BYTES): the topology's [gpu] hot_l2_speedup. */
double nvl_gemm_harness_mem_factor(const nvl_cost_cfg_t *cfg, double bytes);

/* NVL_OK when cfg's library has a kernel for its weight type on cfg's GPU;
 * else reports "what LIB: no TYPE GEMM kernel (...)" and returns
 * NVL_ERR_INVALID. */
nvl_status_t nvl_gemm_lib_check(const char *what, const nvl_cost_cfg_t *cfg);

/* The cost of one kernel: its duration and the work it did. */
typedef struct {
    int64_t time_ps;
    double flops;
    double bytes; /* HBM bytes read and written */
} nvl_kernel_cost_t;

/* y[m, n] = x[m, k] W[n, k]^T with W in the weight dtype, x in it too
 * (bf16 for bf16 weights), y in bf16.  m, n or k == 0 costs nothing. */
nvl_kernel_cost_t nvl_cost_matmul(const nvl_cost_cfg_t *cfg, uint64_t m,
                                  uint64_t n, uint64_t k);

/* The parts nvl_cost_matmul splits the GEMM's K loop into (1: not split;
 * docs/cost-model.md "Split-K"): the split cuBLAS's heuristics would take
 * as the model sees it, for a narrow n with a long k. */
uint32_t nvl_cost_matmul_split_k(const nvl_cost_cfg_t *cfg, uint64_t m,
                                 uint64_t n, uint64_t k);

/* nvl_cost_matmul while another kernel shares the GPU (async tensor
 * parallelism's communication, docs/cost-model.md "Overlap"): that kernel
 * holds `sms` SMs and uses hbm_bytes_per_s of the HBM bandwidth; the
 * matmul gets the tensor cores of the other SMs, at most their share of
 * the output columns in flight, and the HBM bandwidth left (never below a
 * tenth of it).  sms = 0 and hbm_bytes_per_s = 0: nvl_cost_matmul's
 * time. */
nvl_kernel_cost_t nvl_cost_matmul_shared(const nvl_cost_cfg_t *cfg,
                                         uint64_t m, uint64_t n, uint64_t k,
                                         uint32_t sms,
                                         double hbm_bytes_per_s);

/* A grouped matmul (a mixture of experts' expert GEMM): group i computes
 * y_i[m[i], n] = x_i[m[i], k] W_i[n, k]^T with its own weights, all in one
 * kernel: the matmul formula over the groups' summed FLOPs and bytes, the
 * width term over all their output tiles (they fill the GPU together),
 * the overhead once.  Groups with m[i] == 0 cost nothing (their weights
 * are not read).  As a CUTLASS grouped GEMM runs (64 x 128 CTA tiles):
 * the compute term counts each group's rows padded to 64, and the body
 * takes at least ceil(panels / sm_count) x (3.0 + panel_bytes / 20,000)
 * x mem_latency, panels = sum over the groups with rows of ceil(n / 128),
 * panel_bytes one panel's weights (128 columns x k): a weight panel
 * starts with an empty pipeline and streams at about 20,000 bytes a
 * round trip on its SM (docs/cost-model.md "Mixture of experts").
 * torch's bf16 kernel on SM90 (cfg->torch_grouped, bf16 weights, rows /
 * groups or n at most 128: aten's Pingpong 64 x 128 kernel in 2 x 1
 * clusters) takes its own floor in place of that one: (6.0 +
 * ceil(ctas / sm_count) x (1.5 + panel_bytes / 2 / 25,000)) x
 * mem_latency, ctas = sum over the groups with rows of 2 ceil(ceil(m /
 * 64) / 2) x ceil(n / 128).
 * vLLM's Marlin MoE GEMM (nvl_cost_moe_marlin(cfg)) pads each group's
 * rows to its moe block (8, 16, 32, 48 or 64 rows, by the rows a group
 * on average) and computes at NVL_MMA_SYNC_SM90_SHARE x
 * NVL_MARLIN_MMA_EFFICIENCY of the BF16 rate (docs/cost-model.md,
 * "MX-FP4 experts under vLLM on Hopper").
 * torch's FP8 kernel on SM90 (FP8 weights,
 * the same rows): 2 x 2 clusters, so ctas counts 2 ceil(ceil(n / 128) /
 * 2) column tiles a group, and the floor is (13.5 + ceil(ctas /
 * sm_count) x (2.5 + panel_bytes / 2 / 25,000)) x mem_latency; its
 * compute term (aten ScaledGroupMM.cu's tiles) pads each group's rows to
 * a cluster's (128 for the 64-row tile, else 256), its columns to pairs
 * of 128- or 256-column tiles and its K to whole k blocks, the spilling
 * 128 x 256 x 64 tile at 0.35 of the rate. */
nvl_kernel_cost_t nvl_cost_grouped_matmul(const nvl_cost_cfg_t *cfg,
                                          size_t groups, const uint64_t *m,
                                          uint64_t n, uint64_t k);

/* Whether cfg's expert GEMMs run vLLM's Marlin MoE kernel
 * (csrc/moe/marlin_moe_wna16, vLLM v0.10.2 and v0.11.0): cfg->moe_marlin,
 * 4-bit weights (MX-FP4, NVFP4, int4) and a GPU without FP4 tensor
 * cores (Hopper), so the kernel dequantises them in its main loop onto
 * BF16 mma.sync.  Such a layer reads its rows through
 * the sorted pair ids in the GEMM: no gather kernel before it. */
bool nvl_cost_moe_marlin(const nvl_cost_cfg_t *cfg);

/* Whether cfg's expert GEMMs run vLLM's Triton fused_moe (v0.11.0 on
 * Hopper): cfg->moe_triton, BF16 or block-FP8 weights, a GPU without FP4
 * tensor cores.  nvl_cost_grouped_matmul then pads each group's rows to
 * the BLOCK_SIZE_M vLLM's config gives (its H100 file for 128 experts of
 * intermediate shard 192 at the key nearest cfg->moe_top_k's tokens, else
 * get_default_config's: block FP8 64; BF16 16 up to as many tokens as
 * experts, else 64) and computes at NVL_TRITON_*_REL of the dense BF16
 * rate after NVL_TRITON_*_TILE_K_PAD of k a tile (docs/cost-model.md,
 * "vLLM's Triton fused_moe"), with no CUTLASS weight-panel floor (its
 * loads take no TMA descriptors).  The kernel gathers its rows through
 * the sorted pair ids: no gather kernel before it. */
bool nvl_cost_moe_triton(const nvl_cost_cfg_t *cfg);

/* The expert GEMMs' hidden and intermediate widths as the kernel runs
 * them: unchanged, or under Marlin (nvl_cost_moe_marlin) padded at load
 * to multiples of 256 and 128 (its n % 256 and k % 128 in both GEMMs). */
void nvl_cost_moe_dims(const nvl_cost_cfg_t *cfg, uint64_t *hidden,
                       uint64_t *inter);

/* ---- attention geometry ----------------------------------------------
 * What one GPU's attention holds and computes, as its kernels see it: the
 * one description of the KV cache's size that the engine, the memory
 * plan, serving and this cost model read.  The model fills it for a
 * shard (nvl_shard_t's attn, src/model/shard.c: the head map); this
 * header says what a position costs in bytes.
 *
 *   one position of one layer caches kv_heads x (k_elems + v_elems)
 *   elements; each of q_heads query heads scores it with a qk_dim dot
 *   product and adds v_dim values of it to its output.
 *
 * Grouped-query attention (GQA, MHA and MQA alike): k_elems = v_elems =
 * qk_dim = v_dim = head_dim over the kv heads the shard's query heads
 * read.  A compressed-latent attention (DeepSeek's MLA, absorbed for
 * decode) caches one latent per position, the same on every shard:
 * kv_heads 1, k_elems = qk_dim = kv_lora_rank + rope dims, v_elems 0 (the
 * values are read from the same latent), v_dim = kv_lora_rank. */
typedef struct {
    uint32_t q_heads;  /* query heads on this GPU (0: idle in attention) */
    uint32_t kv_heads; /* KV heads cached on this GPU: the attention
                          kernel's independent (sequence, head) streams */
    uint32_t k_elems;  /* elements one position caches per KV head for
                          the keys */
    uint32_t v_elems;  /* the same for the values (0: read from the keys'
                          cache) */
    uint32_t qk_dim;   /* elements of one query-key dot product */
    uint32_t v_dim;    /* elements of one query head's output */
    uint32_t window;   /* positions a query sees, itself included, in a
                          sliding-window layer (gpt-oss's
                          sliding_attention); 0: every earlier one */
} nvl_attn_geom_t;

/* The geometry of grouped-query attention: q_heads query and kv_heads
 * key/value heads of head_dim on this GPU. */
nvl_attn_geom_t nvl_attn_geom_gqa(uint32_t q_heads, uint32_t kv_heads,
                                  uint32_t head_dim);

/* The element type the KV cache is stored in under kv_dtype: fp8, or
 * bf16 for every other (no fp4 KV cache), and its bytes per element. */
double nvl_attn_kv_elem_bytes(nvl_wdtype_t kv_dtype);

/* Bytes one position of one layer takes in g's KV cache with elements of
 * kv_dtype (nvl_attn_kv_elem_bytes): all of g's KV heads, or one of them
 * (what moves when KV heads are sent apart: disaggregated serving). */
double nvl_attn_kv_pos_bytes(const nvl_attn_geom_t *g, nvl_wdtype_t kv_dtype);
double nvl_attn_kv_head_bytes(const nvl_attn_geom_t *g,
                              nvl_wdtype_t kv_dtype);

/* Attention of one kernel launch over n_seqs sequences: sequence i runs
 * new_tokens[i] query positions against past[i] cached positions plus its
 * own (causal), with g's heads on this GPU.  Decode is new_tokens[i] ==
 * 1.  Reads the whole KV (past + new positions, nvl_attn_kv_pos_bytes in
 * cfg->kv_dtype; under g->window, the positions some query's window
 * holds, and each query scores at most window keys), writes the new KV, reads Q (qk_dim per head) and writes
 * O (v_dim per head) in bf16.  The tensor-core time is the list schedule
 * of its tiles (128 query rows of one sequence and query head, the keys
 * they see in whole blocks of 128) over the SMs, each tile with two memory
 * round trips of fixed work (docs/cost-model.md, "Attention").
 * g->q_heads == 0 (a rank idle in attention) costs nothing. */
nvl_kernel_cost_t nvl_cost_attention_geom(const nvl_cost_cfg_t *cfg,
                                          size_t n_seqs,
                                          const uint64_t *new_tokens,
                                          const uint64_t *past,
                                          const nvl_attn_geom_t *g);
/* The same for grouped-query attention given as numbers (nvlemu cost
 * --heads --kv-heads --head-dim, the benches): the geometry of
 * nvl_attn_geom_gqa(q_heads, kv_heads, head_dim). */
nvl_kernel_cost_t nvl_cost_attention(const nvl_cost_cfg_t *cfg, size_t n_seqs,
                                     const uint64_t *new_tokens,
                                     const uint64_t *past, uint32_t q_heads,
                                     uint32_t kv_heads, uint32_t head_dim);

/* How a memory-bound kernel reaches its bytes. */
typedef enum {
    NVL_ACCESS_CONTIGUOUS, /* vectorised loads and stores */
    NVL_ACCESS_STRIDED,    /* element-wise over non-contiguous views, which
                              PyTorch's TensorIterator cannot vectorise */
    NVL_ACCESS_INDEXED,    /* through an index tensor (index_select,
                              index_copy_): the index is loaded first */
} nvl_access_t;

/* A memory-bound kernel moving `bytes` through HBM (read + written):
 *   kernel_floor + L x mem_latency + bytes / (hbm_bw x e x s)
 * with L = 1 dependent round trip (2 when indexed: the index, then the
 * data), e = stream_efficiency for contiguous access where the topology
 * gives it, else hbm_efficiency, and s = strided_efficiency for strided
 * and indexed access, 1 for contiguous (the floor only under persistent
 * launch). */
nvl_kernel_cost_t nvl_cost_memory_access(const nvl_cost_cfg_t *cfg,
                                         double bytes, nvl_access_t access);
/* The contiguous case. */
nvl_kernel_cost_t nvl_cost_memory(const nvl_cost_cfg_t *cfg, double bytes);
/* A contiguous element-wise kernel over `elements` elements, each thread
 * loading `per_thread` of them once and exiting (a Triton pointwise
 * kernel: XBLOCK elements a program of num_warps x 32 threads), so the
 * GPU holds sms x 2048 x per_thread elements at once and runs the rest in
 * waves, each wave one more dependent memory round trip:
 *   nvl_cost_memory(bytes) + (waves - 1) x mem_latency,
 *   waves = ceil(elements / (sms x 2048 x per_thread))
 * per_thread == 0 or elements <= 0 is nvl_cost_memory(bytes). */
nvl_kernel_cost_t nvl_cost_pointwise_waves(const nvl_cost_cfg_t *cfg,
                                           double bytes, double elements,
                                           uint32_t per_thread);

/* A normalisation kernel with one CTA of `threads` threads per row
 * (RMSNorm, fused add + RMSNorm): `rows` rows of `width` elements, `bytes`
 * moved in all; each CTA walks its row in steps of threads x vec elements
 * in `passes` passes (statistics, then normalise), one norm_step_time a
 * step, and the GPU holds sms x (2048 / threads) CTAs at once (2048
 * resident threads per SM on Hopper and Blackwell, CUDA C++ Programming
 * Guide, "Compute capabilities"), so rows run in waves:
 *   kernel_floor + mem_latency
 *     + max(bytes / (hbm_bw x hbm_efficiency),
 *           waves x passes x ceil(width / (threads x vec)) x norm_step_time)
 * rows == 0 or width == 0 costs nothing. */
nvl_kernel_cost_t nvl_cost_norm(const nvl_cost_cfg_t *cfg, double rows,
                                uint64_t width, double bytes,
                                uint32_t threads, uint32_t vec,
                                uint32_t passes);
/* The same norm run as the epilogue of the kernel before it (a fused
 * allreduce + residual add + RMSNorm): its body alone, without a kernel's
 * fixed time. */
nvl_kernel_cost_t nvl_cost_norm_epilogue(const nvl_cost_cfg_t *cfg,
                                         double rows, uint64_t width,
                                         double bytes, uint32_t threads,
                                         uint32_t vec, uint32_t passes);

/* ---- copies ----------------------------------------------------------- */

/* Where one copy goes.  hbm: device to device on one GPU, a copy kernel
 * reading and writing HBM; nvlink: to a peer GPU of the same NVLink domain
 * on a copy engine (in the die view, to the other die of the package: over
 * the die link, nvl_topo_p2p_bw); c2c-h2d / c2c-d2h: host memory to the GPU and back over
 * NVLink-C2C on a copy engine; host: host memory to host memory (the CPU's
 * memcpy). */
typedef enum {
    NVL_COPY_HBM,
    NVL_COPY_NVLINK,
    NVL_COPY_C2C_H2D,
    NVL_COPY_C2C_D2H,
    NVL_COPY_HOST,
    NVL_COPY_COUNT
} nvl_copy_path_t;

/* The paths as a family (`nvlemu --list copy-path`); names as the command
 * line spells them ("hbm", "nvlink", "c2c-h2d", "c2c-d2h", "host") and
 * their parser, as nvl_wdtype_parse's. */
extern const nvl_family_t nvl_copy_path_family;
const char *nvl_copy_path_name(nvl_copy_path_t path);
nvl_status_t nvl_copy_path_parse(const char *what, const char *name,
                                 nvl_copy_path_t *path_out);

/* Whether cfg's topology can carry `path` from GPU cfg->gpu (to GPU peer:
 * nvlink only; other paths ignore it).  When it cannot, writes why (at
 * most why_len bytes, a clause: "no NVLink-C2C link ([c2c] bw = 0)", "GPU 9
 * does not exist (8 GPUs)") and returns false; reports nothing: the caller
 * names the topology file. */
bool nvl_copy_path_usable(const nvl_cost_cfg_t *cfg, nvl_copy_path_t path,
                          uint32_t peer, char *why, size_t why_len);

/* One copy of size_bytes over a usable path:
 *   hbm      nvl_cost_memory over the bytes read and written (2 x size)
 *   nvlink   copy_overhead + nvl_topo_p2p_lat_ps + size / nvl_topo_p2p_bw
 *   c2c-*    copy_overhead + [c2c] lat + size / bw, bw = the smaller of
 *            [c2c] bw and the superchip's host memory bandwidth
 *            ([host_memory] bw x [node] gpus_per_superchip) over the
 *            cfg->host_sharers GPUs reading it at once (when modeled)
 *   host     2 x size / [host_memory] bw (read and written; no fixed cost)
 * .bytes: what crosses the limiting memory or link (2 x size through a
 * memory, size over a link); .flops 0.  size_bytes <= 0 costs nothing. */
nvl_kernel_cost_t nvl_cost_copy(const nvl_cost_cfg_t *cfg,
                                nvl_copy_path_t path, uint32_t peer,
                                double size_bytes);

/* ---- host launch ------------------------------------------------------ */

/* One rank's host thread issuing work to its GPU (whose clock is the
 * rank's virtual clock). */
typedef struct {
    const nvl_cost_cfg_t *cfg;
    int64_t host_ps;       /* when the host is free to launch the next */
    int64_t launch_wait_ps; /* GPU time spent waiting for launches, total */
} nvl_stream_t;

/* A stream whose host is ready at the GPU clock's current time. */
void nvl_stream_init(nvl_stream_t *s, const nvl_cost_cfg_t *cfg,
                     const nvl_vclock_t *gpu);

/* Starts a forward pass: a CUDA graph's one launch (graph mode). */
void nvl_stream_begin_pass(nvl_stream_t *s, const nvl_vclock_t *gpu);

/* Issues one kernel of duration dur_ps: the GPU clock moves to the later
 * of itself and the kernel's launch, then by dur_ps.  Returns the kernel's
 * start time. */
int64_t nvl_stream_kernel(nvl_stream_t *s, nvl_vclock_t *gpu, int64_t dur_ps);

/* Before a collective: the host launches it (eager: [nccl]
 * launch_overhead); the GPU clock moves to the launch if that is later. */
void nvl_stream_collective(nvl_stream_t *s, nvl_vclock_t *gpu);

/* The host waits for the GPU (reading the sampled tokens). */
void nvl_stream_sync(nvl_stream_t *s, const nvl_vclock_t *gpu);

#endif
