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
 *            (sortKeyValueInplace, unstable, k <= 32: SmallBitonicSort, a
 *            bitonic sort of 32 slots), sum, divide
 *   sort     ids.argsort(stable=True) (aten/src/ATen/native/cuda/Sort.cpp):
 *            at most 4,096 ids (should_use_small_sort) the indices filled
 *            by arange and a copy, the ids copied, one CTA sorts them in
 *            place (Sort.cu, MediumRadixSort: radixSortKVInPlace, cub's
 *            BlockRadixSort of 4-bit digits; this PyTorch runs it at every
 *            size, the profiled step's kernel from 8 ids); more, aten's
 *            segmented_sort_large_segments (SortStable.cu): the indices
 *            filled, cub's DeviceRadixSort::SortPairs of the 64-bit ids by
 *            onesweep (a histogram, its exclusive sum, then per 8-bit digit
 *            a memset of the look-back state and a onesweep kernel); then
 *            each pair's token (the order // k)
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
/* radixSortKVInPlace (aten Sort.cu, MediumRadixSort::fixed_size_sort):
 * one CTA of cub's BlockRadixSort over the ids padded to a power of two,
 * ITEMS a thread (2 to 32 ids, 4 to 128, 32 beyond: the profiled kernel's
 * template, tests/data/calibration/h200-moe-compiled/kernels.csv), 4-bit
 * digits (cub's default RADIX_BITS), so 16 passes over the 64-bit ids.
 * A pass ranks the block's keys (counter resets, the block-wide scan of
 * the digit counts) and exchanges keys and values through shared memory:
 * one block-synchronous stage, TORCH_BLOCK_STAGE_CYCLES, then each
 * thread's items one after another (the digit's counter read and
 * incremented, the key and value stored and read back at their ranks:
 * dependent shared-memory accesses), TORCH_RADIX_ITEM_CYCLES an item, at
 * the SM clock.  The same stage prices gatherTopK's and SmallBitonicSort's
 * __syncthreads-delimited stages below.  Both fit by
 * scripts/calibration/fit-torch-radix-sort.py to the argsort rows of
 * tests/data/calibration/h100-moe/route.csv at batch 1 and 64 (8 and 512
 * ids: 2 and 32 items a thread); its batch 8 and 256 rows (4 and 32
 * items) are held out (docs/cost-model.md, "Routing under --stack
 * torch"). */
#define TORCH_BLOCK_RADIX_PASSES 16.0
#define TORCH_BLOCK_STAGE_CYCLES 334.0
#define TORCH_RADIX_ITEM_CYCLES 81.0
/* cub's onesweep radix sort of 64-bit keys (DispatchRadixSort::
 * InvokeOnesweep): 8-bit digits, 8 passes, each a cudaMemsetAsync of the
 * decoupled look-back state, then the onesweep kernel: its keys read and
 * ranked (TORCH_ONESWEEP_RANK_STEPS block steps: the 256 digits' counts,
 * their block scan, the exchange), its digit counts published and its
 * predecessors' read (the look-back: TORCH_ONESWEEP_LOOKBACK_TRIPS
 * memory round trips more than an indexed kernel's one) before its
 * scatter. */
#define TORCH_ONESWEEP_PASSES 8.0
#define TORCH_ONESWEEP_RANK_STEPS 4.0
#define TORCH_ONESWEEP_LOOKBACK_TRIPS 2.0
/* gatherTopK's radix select (SortingRadixSelect.cuh, radixSelect): 2 bits
 * a pass from the top of the score's 32 bits.  A row of softmax
 * probabilities between 2^-15 and 1 shares its sign and its exponent's
 * top four bits (0111: fields 112-126), so the first two passes single
 * out nothing; about log4(E) more single the k-th score out (the
 * unique-count exit, then findPattern) -- when it is unique.  A k-th
 * score equal to a neighbour's (the k-1-th or k+1-th) is never singled
 * out: the select walks all 16 passes and returns the pattern it
 * narrowed to.  A pass is countRadixUsingMask: two block stages
 * (TORCH_BLOCK_STAGE_CYCLES), the warps' counts added in shared memory
 * and read back; its third __syncthreads, after the counts are cleared,
 * orders no exchange.  findPattern is 2 stages, the two gather loops'
 * exclusive prefix scans 2 each.  On one H200
 * (tests/data/calibration/h200-topk-passes) rows that walk all 16 passes
 * take 8.2-8.8 us from 1 to 64 rows (this: 8.2 us at 1.98 GHz with the
 * simple kernel's 1.8 us); one row's k-th score singled out 2 bits later
 * costs 0.51 us more there against this 0.34: the later passes cost more
 * than the first, which this does not split. */
#define TORCH_SELECT_BITS 2.0
#define TORCH_SELECT_SCORE_BITS 32.0
#define TORCH_SELECT_SHARED_PASSES 2.0
#define TORCH_SELECT_PASS_STEPS 2.0
#define TORCH_SELECT_TAIL_STEPS 6.0
/* Ties come from the router's bf16 logits (softmax is monotone, so equal
 * logits give equal probabilities): bf16 keeps 8 significant bits, so
 * neighbouring values of a logit x lie x 2^-8 to x 2^-7 apart, about x
 * 2^-7.5.  Over E logits of one spread (normal, mean 0: the spread
 * cancels), the k-th sits at z = the normal quantile of 1 - k/E and its
 * neighbours about 1 / (E phi(z)) away, so it rounds onto one of them
 * with a chance of z 2^-7.5 E phi(z): 0.133 a row at E = 128, k = 8 (a
 * draw of 20,000 rows of 128 rounded normals: 0.132 at spread 45, 0.108
 * at spread 1).  A batch of rows that fits the GPU at once waits for its
 * slowest: all 16 passes unless no row ties, (1 - p)^M; a batch of many
 * rows an SM is issue-bound and takes its rows' mean passes. */
#define TORCH_BF16_SIGNIFICANT_BITS 8.0
/* The SM's issue: a pass of a 128-thread CTA is about 145 warp
 * instructions a warp (countRadixUsingMask's load, the float's sortable
 * bits, the mask test and digit, 4 digits x (compare, ballot, popc, add),
 * lane 0's shared atomics, the counts read back, radixSelect's digit
 * tests), issued by the SM's 4 warp schedulers, one instruction a cycle
 * each (NVIDIA H100 and Blackwell architecture whitepapers: 4 SM
 * sub-partitions), findPattern and the gathers (6 stages) as 3 passes.
 * Measured, not counted: on one H200 (h200-topk-passes) 3,072 more rows
 * that walk all 16 passes take 31.7 us (2,697 cycles a CTA an SM), rows
 * singled out about 6.5 passes earlier 20.6 us (1,756): 145 cycles a
 * pass of 4 warps, 2.6 passes more (scripts/calibration/
 * fit-topk-select.py). */
#define TORCH_SELECT_PASS_WARP_INSTR 145.0
#define TORCH_SM_ISSUE_PER_CYCLE 4.0
/* SmallBitonicSort (aten Sort.cu: unstable sorts of at most 32): a
 * bitonic sort of 32 slots, log2 32 x (log2 32 + 1) / 2 = 15
 * compare-exchange stages, a __syncthreads each. */
#define TORCH_SMALL_SORT_SLOTS 32.0
#define TORCH_BITONIC_STEPS 15.0

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
    /* SM cycles of its block-synchronous stages and serial work */
    double (*cycles)(const nvl_cost_cfg_t *cfg, const shape_t *s);
    double trips; /* memory round trips beyond its access's */
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
/* the look-back state: a tile's 256 digit counts (int64), a tile of
 * about 4,096 keys (cub's onesweep policy) */
static double b_lookback(const shape_t *s)
{
    return ceil(s->P / 4096.0) * 256.0 * 8.0;
}
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

/* The inverse of the normal upper tail: z with P(Z > z) = q (0 < q < 1),
 * by bisection over erfc. */
static double normal_upper_quantile(double q)
{
    double lo = -10.0, hi = 10.0;
    for (int i = 0; i < 80; i++) {
        double z = 0.5 * (lo + hi);
        if (0.5 * erfc(z / sqrt(2.0)) > q)
            lo = z;
        else
            hi = z;
    }
    return 0.5 * (lo + hi);
}

/* The chance p that a row's k-th score ties with a neighbour (above). */
static double select_tie_share(const shape_t *s)
{
    if (s->k < 1.0 || s->E <= s->k)
        return 0.0;
    double z = normal_upper_quantile(s->k / s->E);
    double phi = exp(-0.5 * z * z) / sqrt(2.0 * acos(-1.0));
    double spacing = fabs(z) * pow(2.0, 0.5 - TORCH_BF16_SIGNIFICANT_BITS);
    return fmin(1.0, spacing * s->E * phi);
}

/* gatherTopK: one CTA of E threads (rounded to warps) a row.  Its block
 * stages (above) over the slowest row's expected passes, once; each
 * further CTA an SM (rows beyond one an SM) adds the warp instructions of
 * a row's mean passes at the SM's issue rate, its latency hidden behind
 * the others' (h200-topk-passes' rows of known passes, 1 to 4,096 rows:
 * -17 % to +13 %, scripts/calibration/fit-topk-select.py). */
static double cy_select(const nvl_cost_cfg_t *cfg, const shape_t *s)
{
    double threads = fmax(32.0, ceil(s->E / 32.0) * 32.0);
    double sms = fmax(1.0, (double)cfg->topo->gpu.sm_count);
    double early = TORCH_SELECT_SHARED_PASSES +
                   ceil(log(s->E) / log(pow(2.0, TORCH_SELECT_BITS)));
    double more =
        fmax(0.0, TORCH_SELECT_SCORE_BITS / TORCH_SELECT_BITS - early);
    double p = select_tie_share(s);
    double slowest = early + (1.0 - pow(1.0 - p, fmax(1.0, s->M))) * more;
    double mean = early + p * more;
    double latency =
        TORCH_BLOCK_STAGE_CYCLES *
        (slowest * TORCH_SELECT_PASS_STEPS + TORCH_SELECT_TAIL_STEPS);
    double issue = (threads / 32.0) *
                   (mean + TORCH_SELECT_TAIL_STEPS / TORCH_SELECT_PASS_STEPS) *
                   TORCH_SELECT_PASS_WARP_INSTR / TORCH_SM_ISSUE_PER_CYCLE;
    return latency + fmax(0.0, s->M / sms - 1.0) * issue;
}

/* sortKeyValueInplace of each row's k results: SmallBitonicSort's stages
 * (k <= 32; Qwen3's and gpt-oss's k are 8 and 4). */
static double cy_topk_sort(const nvl_cost_cfg_t *cfg, const shape_t *s)
{
    (void)cfg;
    return s->k > 1 && s->k <= TORCH_SMALL_SORT_SLOTS
               ? TORCH_BITONIC_STEPS * TORCH_BLOCK_STAGE_CYCLES
               : 0.0;
}

/* radixSortKVInPlace over P ids: its items a thread (above) over its 16
 * passes, each pass's block stage and its items one after another. */
static double cy_block_sort(const nvl_cost_cfg_t *cfg, const shape_t *s)
{
    (void)cfg;
    double items = s->P <= 32.0 ? 2.0 : s->P <= 128.0 ? 4.0 : 32.0;
    return TORCH_BLOCK_RADIX_PASSES *
           (TORCH_BLOCK_STAGE_CYCLES + items * TORCH_RADIX_ITEM_CYCLES);
}

static double st_onesweep(const nvl_cost_cfg_t *cfg, const shape_t *s)
{
    (void)cfg, (void)s;
    return TORCH_ONESWEEP_RANK_STEPS;
}

static const torch_kernel_t kernels[] = {
    {.name = "topk_float", .op = OP_ROUTE, .stacks = EAGER, .bytes = b_cast},
    {.name = "topk_softmax", .op = OP_ROUTE, .stacks = EAGER,
     .bytes = b_softmax},
    {.name = "topk_softmax", .op = OP_ROUTE, .stacks = COMPILED,
     .bytes = b_softmax_cast},
    {.name = "topk_select", .op = OP_ROUTE, .bytes = b_select,
     .cycles = cy_select},
    {.name = "topk_sort", .op = OP_ROUTE, .bytes = b_topk_sort,
     .cycles = cy_topk_sort},
    {.name = "topk_sum", .op = OP_ROUTE, .stacks = EAGER, .bytes = b_sum},
    {.name = "topk_div", .op = OP_ROUTE, .stacks = EAGER, .bytes = b_div},
    {.name = "topk_renorm", .op = OP_ROUTE, .stacks = COMPILED,
     .bytes = b_renorm},
    {.name = "sort_arange", .op = OP_SORT, .bytes = b_fill_p},
    {.name = "sort_index_copy", .op = OP_SORT, .bytes = b_copy_p, .small = 1},
    {.name = "sort_ids_copy", .op = OP_SORT, .bytes = b_copy_p, .small = 1},
    {.name = "sort_block", .op = OP_SORT, .bytes = b_sort_p,
     .cycles = cy_block_sort, .small = 1},
    {.name = "sort_histogram", .op = OP_SORT, .bytes = b_hist, .small = -1},
    {.name = "sort_digit_offsets", .op = OP_SORT, .bytes = b_small,
     .small = -1},
    {.name = "sort_lookback_reset", .op = OP_SORT, .bytes = b_lookback,
     .small = -1, .passes = TORCH_ONESWEEP_PASSES},
    {.name = "sort_onesweep", .op = OP_SORT, .access = NVL_ACCESS_INDEXED,
     .bytes = b_sort_p, .steps = st_onesweep,
     .trips = TORCH_ONESWEEP_LOOKBACK_TRIPS, .small = -1,
     .passes = TORCH_ONESWEEP_PASSES},
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
 * kernel's fixed cost, its block steps (one step of a one-CTA-per-row
 * kernel over its row, norm_step_time: loads and a block-wide exchange),
 * its serial SM cycles at the clock and its further memory round trips
 * (mem_latency). */
static nvl_kernel_cost_t kernel_cost(const nvl_cost_cfg_t *cfg,
                                     const torch_kernel_t *k,
                                     const shape_t *s)
{
    const nvl_gpu_spec_t *g = &cfg->topo->gpu;
    nvl_kernel_cost_t c = nvl_cost_memory_access(cfg, k->bytes(s), k->access);
    double t_s = k->trips * (double)g->mem_latency_ps * 1e-12;
    if (k->steps != NULL)
        t_s += k->steps(cfg, s) * (double)g->norm_step_ps * 1e-12;
    if (k->cycles != NULL && g->clock_hz > 0)
        t_s += k->cycles(cfg, s) / g->clock_hz;
    c.time_ps += nvl_ps_from_s(t_s);
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
