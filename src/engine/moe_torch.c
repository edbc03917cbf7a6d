/* The routing kernels of a MoE layer under --stack torch and compiled:
 * the kernels PyTorch 2.x launches for the eager ops of a torch MoE layer
 * (scripts/device/measure-moe-step.py, measure-moe.py), one row per
 * kernel, priced from its bytes, its access and, for the one-CTA sort and
 * select kernels, its block-synchronous steps (docs/cost-model.md,
 * "Mixture of experts", "Routing under --stack torch").  --stack compiled
 * is the same layer with its router region under torch.compile, as the
 * measured step ran it (tests/data/calibration/h200-moe-compiled/: the
 * profiled kernels): Inductor fuses the float cast into the softmax and
 * the sum, division and bf16 cast of the k weights into one kernel each
 * (persistent reductions, a row per program); topk is not lowered (its
 * fallback is aten's, the same gatherTopK and sort); the sort, counts and
 * unpermute stay eager ops.  The fused stack's routing (TensorRT-LLM,
 * vLLM: one top-k kernel, one sort, one finalize) is moe.c's.
 *
 *   route    lg.float().softmax(-1).topk(k) and w / w.sum(-1): a cast, the
 *            softmax, gatherTopK (aten/src/ATen/native/cuda/TensorTopK.cu:
 *            one CTA a row, a radix select of 2 bits a pass,
 *            SortingRadixSelect.cuh), the sort of each row's k results
 *            (sortKeyValueInplace, k <= 32: a warp merge sort), sum, divide
 *   sort     ids.argsort(stable=True) (aten/src/ATen/native/cuda/Sort.cpp):
 *            at most 4,096 ids (should_use_small_sort) the indices filled
 *            by arange and a copy, the ids copied, one CTA sorts them in
 *            place (SortImpl.cuh: a warp merge sort to 32, a bitonic sort
 *            to 128, cub's BlockRadixSort of 4-bit digits beyond); more,
 *            cub's onesweep radix sort of the 64-bit ids (a histogram, its
 *            exclusive sum, one kernel per 8-bit digit), its values an
 *            arange; then each pair's token (the order // k)
 *   counts   zeros(E).scatter_add_(ids, ones_like(ids)).cumsum(0).int():
 *            two fills, the scatter's int64 atomics, cub's scan (an init
 *            and a scan kernel), the cast
 *   prepare  before each grouped GEMM, torch._grouped_mm's
 *            prepare_grouped_gemm_data kernel (aten GroupMM.cu,
 *            ScaledGroupMM.cu: one CTA, a thread per group) writes the
 *            groups' pointers, shapes and strides
 *   unpermute zeros for the output, each pair's weight gathered in expert
 *            order, the down rows times their weights, index_add_ into the
 *            token rows: one scalar bf16 atomicAdd an element
 *            (aten/src/ATen/native/cuda/Indexing.cu, gpuAtomicAdd), each a
 *            read-modify-write of its 2 bytes, priced at the strided rate
 *            (scalar, unvectorised) */
#include <math.h>

#include "engine_impl.h"
#include "moe_torch.h"

/* should_use_small_sort (aten/src/ATen/native/cuda/Sort.cpp): the
 * in-place one-CTA sort up to this many elements along the dimension. */
#define TORCH_SMALL_SORT_MAX 4096.0
/* cub's BlockRadixSort (the one-CTA sort above 128 ids): 4-bit digits
 * (cub's default RADIX_BITS), so 16 passes over 64-bit ids; a pass ranks
 * the keys (digit counts and their block-wide scan) and exchanges keys
 * and values through shared memory: 4 block steps. */
#define TORCH_BLOCK_RADIX_PASSES 16.0
#define TORCH_BLOCK_RADIX_STEPS 4.0
/* cub's onesweep radix sort of 64-bit keys: 8-bit digits, 8 passes. */
#define TORCH_ONESWEEP_PASSES 8.0
/* gatherTopK's radix select (SortingRadixSelect.cuh): 2 bits a pass; it
 * stops once the k-th value's digits single it out (findPattern), about
 * log4(E) passes of E distinct scores, then two scans gather the k. */
#define TORCH_SELECT_BITS 2.0
/* Threads a CTA can hold per SM (CUDA C++ Programming Guide, "Compute
 * capabilities": 2048 for 9.0 and 10.0). */
#define TORCH_THREADS_PER_SM 2048.0

typedef enum {
    OP_ROUTE,
    OP_SORT,
    OP_COUNTS,
    OP_PREPARE_GATE_UP,
    OP_PREPARE_DOWN,
    OP_UNPERMUTE
} op_t;

/* What a layer's routing works on: M rows, E experts, k a row, P pairs
 * (this rank's: all M k under tensor parallelism), hidden width h. */
typedef struct {
    double M, E, k, P, h;
} shape_t;

/* the stacks a row is issued under */
#define EAGER (1u << NVL_STACK_TORCH)
#define COMPILED (1u << NVL_STACK_COMPILED)
#define BOTH (EAGER | COMPILED)

typedef struct {
    const char *name;
    op_t op;
    unsigned stacks; /* 0: BOTH */
    nvl_access_t access;
    double (*bytes)(const shape_t *s);
    double (*steps)(const nvl_cost_cfg_t *cfg, const shape_t *s);
    int small;     /* 1: only at most TORCH_SMALL_SORT_MAX ids, -1: above */
    double passes; /* launches of it (0: one) */
} torch_kernel_t;

static double b_cast(const shape_t *s) { return s->M * s->E * (2.0 + 4.0); }
static double b_softmax(const shape_t *s) { return s->M * s->E * 8.0; }
/* Inductor's fused cast and softmax: bf16 logits read, fp32 written */
static double b_softmax_cast(const shape_t *s) { return s->M * s->E * 6.0; }
static double b_select(const shape_t *s)
{
    return s->M * s->E * 4.0 + s->M * s->k * 12.0;
}
static double b_topk_sort(const shape_t *s) { return s->M * s->k * 24.0; }
static double b_sum(const shape_t *s) { return s->M * (s->k + 1.0) * 4.0; }
static double b_div(const shape_t *s) { return s->M * (2.0 * s->k + 1.0) * 4.0; }
/* Inductor's fused sum, division and cast: fp32 weights read, bf16 out */
static double b_renorm(const shape_t *s) { return s->M * s->k * 6.0; }
/* int64 ids, indices */
static double b_fill_p(const shape_t *s) { return s->P * 8.0; }
static double b_copy_p(const shape_t *s) { return s->P * 16.0; }
static double b_sort_p(const shape_t *s) { return s->P * 32.0; }
static double b_hist(const shape_t *s) { return s->P * 8.0; }
static double b_small(const shape_t *s) { (void)s; return 64.0; }
static double b_fill_e(const shape_t *s) { return s->E * 8.0; }
static double b_scatter(const shape_t *s) { return s->P * 16.0 + s->E * 8.0; }
static double b_scan(const shape_t *s) { return s->E * 16.0; }
static double b_cast_e(const shape_t *s) { return s->E * 12.0; }
/* prepare_grouped_gemm_data: one CTA of a thread per group writes its
 * five pointers (a, b, out and two scales), problem shape (3 int32) and
 * three strides (int64) */
static double b_prepare(const shape_t *s) { return s->E * (5.0 * 8.0 + 12.0 + 24.0); }
static double b_zero_out(const shape_t *s) { return s->M * s->h * 2.0; }
static double b_gather_w(const shape_t *s) { return s->P * (8.0 + 4.0 + 2.0); }
static double b_scale(const shape_t *s) { return s->P * s->h * 4.0 + s->P * 2.0; }
/* the source row read, each element's read-modify-write, the index */
static double b_index_add(const shape_t *s)
{
    return s->P * s->h * 6.0 + s->P * 8.0;
}

/* gatherTopK: one CTA of E threads (rounded to warps) a row, in waves of
 * the CTAs the SMs hold; a step per radix pass, one for findPattern, two
 * for the gather's scans. */
static double st_select(const nvl_cost_cfg_t *cfg, const shape_t *s)
{
    double threads = fmax(32.0, ceil(s->E / 32.0) * 32.0);
    double resident = (double)cfg->topo->gpu.sm_count *
                      fmax(1.0, floor(TORCH_THREADS_PER_SM / threads));
    double passes = ceil(log(s->E) / log(pow(2.0, TORCH_SELECT_BITS)));
    return ceil(s->M / resident) * (passes + 3.0);
}

/* sortKeyValueInplace over P ids in one CTA: a warp merge sort to 32
 * (within a warp, no block step), a bitonic sort to 128 (log2 128 x
 * (log2 128 + 1) / 2 = 28 compare-exchange stages, a block step each),
 * cub's BlockRadixSort beyond. */
static double st_block_sort(const nvl_cost_cfg_t *cfg, const shape_t *s)
{
    (void)cfg;
    if (s->P <= 32.0)
        return 0.0;
    if (s->P <= 128.0)
        return 28.0;
    return TORCH_BLOCK_RADIX_PASSES * TORCH_BLOCK_RADIX_STEPS;
}

static const torch_kernel_t kernels[] = {
    {.name = "topk_float", .op = OP_ROUTE, .stacks = EAGER, .bytes = b_cast},
    {.name = "topk_softmax", .op = OP_ROUTE, .stacks = EAGER,
     .bytes = b_softmax},
    {.name = "topk_softmax", .op = OP_ROUTE, .stacks = COMPILED,
     .bytes = b_softmax_cast},
    {.name = "topk_select", .op = OP_ROUTE, .bytes = b_select,
     .steps = st_select},
    {.name = "topk_sort", .op = OP_ROUTE, .bytes = b_topk_sort},
    {.name = "topk_sum", .op = OP_ROUTE, .stacks = EAGER, .bytes = b_sum},
    {.name = "topk_div", .op = OP_ROUTE, .stacks = EAGER, .bytes = b_div},
    {.name = "topk_renorm", .op = OP_ROUTE, .stacks = COMPILED,
     .bytes = b_renorm},
    {.name = "sort_arange", .op = OP_SORT, .bytes = b_fill_p},
    {.name = "sort_index_copy", .op = OP_SORT, .bytes = b_copy_p, .small = 1},
    {.name = "sort_ids_copy", .op = OP_SORT, .bytes = b_copy_p, .small = 1},
    {.name = "sort_block", .op = OP_SORT, .bytes = b_sort_p,
     .steps = st_block_sort, .small = 1},
    {.name = "sort_histogram", .op = OP_SORT, .bytes = b_hist, .small = -1},
    {.name = "sort_digit_offsets", .op = OP_SORT, .bytes = b_small,
     .small = -1},
    {.name = "sort_onesweep", .op = OP_SORT, .access = NVL_ACCESS_INDEXED,
     .bytes = b_sort_p, .small = -1, .passes = TORCH_ONESWEEP_PASSES},
    {.name = "sort_token", .op = OP_SORT, .bytes = b_copy_p},
    {.name = "counts_zeros", .op = OP_COUNTS, .bytes = b_fill_e},
    {.name = "counts_ones", .op = OP_COUNTS, .bytes = b_fill_p},
    {.name = "counts_scatter_add", .op = OP_COUNTS,
     .access = NVL_ACCESS_INDEXED, .bytes = b_scatter},
    {.name = "counts_scan_init", .op = OP_COUNTS, .bytes = b_small},
    {.name = "counts_cumsum", .op = OP_COUNTS, .bytes = b_scan},
    {.name = "counts_int", .op = OP_COUNTS, .bytes = b_cast_e},
    {.name = "unpermute_zeros", .op = OP_UNPERMUTE, .bytes = b_zero_out},
    {.name = "unpermute_weights", .op = OP_UNPERMUTE,
     .access = NVL_ACCESS_INDEXED, .bytes = b_gather_w},
    {.name = "gate_up_prepare", .op = OP_PREPARE_GATE_UP, .bytes = b_prepare},
    {.name = "down_prepare", .op = OP_PREPARE_DOWN, .bytes = b_prepare},
    /* [P, h] x [P, 1]: a broadcast operand, so TensorIterator's
     * unvectorised loop (aten Loops.cuh vectorises contiguous operands
     * only; the profile's elementwise_kernel<128, 4>): the strided rate */
    {.name = "unpermute_scale", .op = OP_UNPERMUTE,
     .access = NVL_ACCESS_STRIDED, .bytes = b_scale},
    {.name = "unpermute_index_add", .op = OP_UNPERMUTE,
     .access = NVL_ACCESS_INDEXED, .bytes = b_index_add},
};

/* One kernel's cost: its bytes at its access's rate after a simple
 * kernel's fixed cost, and its block steps (one step of a one-CTA-per-row
 * kernel over its row, norm_step_time: loads and a block-wide exchange). */
static nvl_kernel_cost_t kernel_cost(const nvl_cost_cfg_t *cfg,
                                     const torch_kernel_t *k,
                                     const shape_t *s)
{
    nvl_kernel_cost_t c = nvl_cost_memory_access(cfg, k->bytes(s), k->access);
    if (k->steps != NULL)
        c.time_ps += nvl_ps_from_s(k->steps(cfg, s) *
                                   (double)cfg->topo->gpu.norm_step_ps * 1e-12);
    return c;
}

static void issue(nvl_engine_t *e, int32_t L, op_t op, const shape_t *s)
{
    const nvl_cost_cfg_t *cfg = &e->opts.cost;
    int small = s->P <= TORCH_SMALL_SORT_MAX ? 1 : -1;
    unsigned stack = 1u << e->opts.stack;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        const torch_kernel_t *k = &kernels[i];
        if (k->op != op || (k->small != 0 && k->small != small) ||
            ((k->stacks ? k->stacks : BOTH) & stack) == 0)
            continue;
        for (double j = 0; j < fmax(1.0, k->passes); j++)
            nvl_engine_kernel(e, k->name, NVL_PART_OTHER, L,
                              kernel_cost(cfg, k, s));
    }
}

bool nvl_engine_moe_torch_stack(const nvl_engine_t *e)
{
    return e->opts.stack == NVL_STACK_TORCH ||
           e->opts.stack == NVL_STACK_COMPILED;
}

void nvl_engine_moe_torch_route(nvl_engine_t *e, int32_t L, uint64_t M)
{
    shape_t s = {.M = (double)M, .E = e->cfg.num_experts, .k = e->cfg.top_k,
                 .P = (double)M * e->cfg.top_k, .h = e->cfg.hidden};
    issue(e, L, OP_ROUTE, &s);
}

void nvl_engine_moe_torch_sort(nvl_engine_t *e, int32_t L, double pairs)
{
    shape_t s = {.E = e->cfg.num_experts, .k = e->cfg.top_k, .P = pairs,
                 .h = e->cfg.hidden};
    issue(e, L, OP_SORT, &s);
    issue(e, L, OP_COUNTS, &s);
}

void nvl_engine_moe_torch_prepare(nvl_engine_t *e, int32_t L, bool down)
{
    shape_t s = {.E = e->shard.experts.count};
    issue(e, L, down ? OP_PREPARE_DOWN : OP_PREPARE_GATE_UP, &s);
}

void nvl_engine_moe_torch_unpermute(nvl_engine_t *e, int32_t L, double pairs,
                                    uint64_t rows)
{
    shape_t s = {.M = (double)rows, .E = e->cfg.num_experts,
                 .k = e->cfg.top_k, .P = pairs, .h = e->cfg.hidden};
    issue(e, L, OP_UNPERMUTE, &s);
}
