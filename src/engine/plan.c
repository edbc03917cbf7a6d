/* The stack table: which kernels each step of a layer issues under each
 * software stack (docs/cost-model.md, "Software stacks", lists them with
 * their sources).
 *
 * torch: PyTorch 2.x with CUDA graphs, one F.* call per operation, as the
 *   kernels of a profiled step show them (tests/data/calibration/
 *   h200-torch/): F.rms_norm is one kernel (PyTorch's vectorized layer-norm
 *   kernel: one CTA of 128 threads x 4 elements per row, a statistics pass
 *   and a normalise pass); F.linear puts the bias in the GEMM epilogue;
 *   RoPE as q * cos + cat(-x2, x1) * sin is five kernels per tensor on
 *   strided views of the qkv output; index_copy_ writes k and v into the
 *   cache; residual adds are kernels of their own; F.silu(g) * u is two
 *   strided kernels.
 * fused: a serving engine (TensorRT-LLM's kernel list: one kernel for the
 *   QKV bias, RoPE and the KV-cache write; fused residual add + RMSNorm
 *   with one CTA of up to 1024 threads x 8 elements per row; fused SwiGLU;
 *   Qwen3's q and k norms in one kernel).
 * compiled: the torch layer under torch.compile, each layer's work between
 *   all-reduces one Inductor graph, as the kernels of the profiled
 *   serving-like steps show them (tests/data/calibration/hgx-h100-x4,
 *   traces-tp4.tar.gz): cuBLAS GEMMs (the bias in the epilogue), cuDNN's
 *   SDPA, and between them Triton kernels: residual add + RMSNorm in one
 *   looped reduction (`triton_red_fused__fused_rms_norm_add`, a program
 *   per row), RoPE and the KV-cache write in three pointwise kernels (q
 *   rotated; k rotated and written to the cache; v written to the cache;
 *   Qwen3's q/k norms fused into them, with one kernel more), SiLU x up
 *   in one.
 *
 * A kernel's size is a sum of the layer's widths times a coefficient:
 *   q  = this rank's query heads x head_dim    kv = its kv heads x head_dim
 *   i  = its MLP rows (an expert's, for the experts' step)   h = hidden
 *   d  = head_dim
 * A projection multiplies rows x h by h x (its widths); an element-wise or
 * norm kernel moves rows x (its widths) x `touch` bf16 values through HBM
 * (touch: reads + writes per element, e.g. add + RMSNorm reads x and the
 * residual and writes both: 4).  A per-head norm runs one row per head. */
#include "engine_impl.h"

typedef enum {
    NVL_K_MATMUL,
    NVL_K_GROUPED,
    NVL_K_ELEMENTWISE, /* contiguous, vectorised */
    NVL_K_STRIDED,     /* element-wise over strided views */
    NVL_K_INDEXED,     /* through an index tensor */
    NVL_K_NORM,        /* one CTA per row */
    NVL_K_POINTWISE,   /* Inductor's 1-D pointwise kernel: contiguous */
} kind_t;

typedef struct {
    const char *name;   /* NULL ends a plan */
    kind_t kind;
    uint8_t q, kv, i, h, d; /* coefficients of the widths */
    uint8_t touch;      /* element-wise and norms: values moved per element */
    uint8_t per_head;   /* norms: a row per head of q (1) or kv (2) */
    uint16_t threads;   /* norms: threads of the row's CTA */
    uint8_t vec;        /* norms: elements a thread loads per step */
    uint8_t passes;     /* norms: passes over the row */
} kernel_t;

#define NVL_PLAN_MAX 12

/* kernels */
#define MM(n, q, kv, i) {n, NVL_K_MATMUL, q, kv, i, 0, 0, 0, 0, 0, 0, 0}
#define GG(n, i) {n, NVL_K_GROUPED, 0, 0, i, 0, 0, 0, 0, 0, 0, 0}
#define EW(n, t, q, kv, i, h, d) \
    {n, NVL_K_ELEMENTWISE, q, kv, i, h, d, t, 0, 0, 0, 0}
#define ST(n, t, q, kv, i) {n, NVL_K_STRIDED, q, kv, i, 0, 0, t, 0, 0, 0, 0}
#define IX(n, t, kv, d) {n, NVL_K_INDEXED, 0, kv, 0, 0, d, t, 0, 0, 0, 0}
#define POI(n, t, i) {n, NVL_K_POINTWISE, 0, 0, i, 0, 0, t, 0, 0, 0, 0}
/* PyTorch's vectorized layer-norm kernel (aten/src/ATen/native/cuda/
 * layer_norm_kernel.cu): a CTA of 128 threads x 4 elements per row, a
 * statistics pass and a normalise pass */
#define TORCH_NORM(n, t, h, d, head) \
    {n, NVL_K_NORM, 0, 0, 0, h, d, t, head, 128, 4, 2}
/* vLLM's / TensorRT-LLM's RMSNorm (vLLM csrc/layernorm_kernels.cu): a CTA
 * of up to 1024 threads x 8 elements per row, two passes */
#define FUSED_NORM(n, t, h, d, head) \
    {n, NVL_K_NORM, 0, 0, 0, h, d, t, head, 1024, 8, 2}

/* Inductor's looped reduction for a norm (`triton_red_...`): one program
 * of 4 warps per row (128 threads), RBLOCK = 1024 elements a loop
 * iteration (8 bf16, one 16-byte load, per thread), a loop computing the
 * sum of squares (and the residual add) and a loop normalising: the
 * block that matches the norms of the H100 x4 trace (docs/cost-model.md,
 * "Software stacks") among Inductor's power-of-two blocks */
#define INDUCTOR_NORM(n, t, h, d, head) \
    {n, NVL_K_NORM, 0, 0, 0, h, d, t, head, 128, 8, 2}

/* torch's RoPE of one tensor (width coefficients q or kv): q * cos, -x2,
 * cat, rotated * sin, the sum */
#define TORCH_ROPE(n, q, kv)                                                  \
    ST(n "_mul_cos", 2, q, kv, 0), ST(n "_neg", 1, q, kv, 0),                 \
        ST(n "_cat", 2, q, kv, 0), ST(n "_mul_sin", 2, q, kv, 0),             \
        ST(n "_add", 3, q, kv, 0)

static const kernel_t plans[NVL_STEP_COUNT][NVL_STACK_COUNT][NVL_PLAN_MAX] = {
    [NVL_STEP_ROPE_TABLES] = {
        [NVL_STACK_TORCH] = {IX("rope_cos", 2, 0, 1), IX("rope_sin", 2, 0, 1)},
        /* the fused RoPE kernel computes its angles */
        [NVL_STACK_FUSED] = {{NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        [NVL_STACK_COMPILED] = {IX("rope_cos", 2, 0, 1),
                                IX("rope_sin", 2, 0, 1)},
    },
    [NVL_STEP_NORM] = {
        [NVL_STACK_TORCH] = {TORCH_NORM("rmsnorm", 2, 1, 0, 0)},
        [NVL_STACK_FUSED] = {FUSED_NORM("rmsnorm", 2, 1, 0, 0)},
        [NVL_STACK_COMPILED] = {INDUCTOR_NORM("rmsnorm", 2, 1, 0, 0)},
    },
    [NVL_STEP_ADD_NORM] = {
        [NVL_STACK_TORCH] = {EW("residual_add", 3, 0, 0, 0, 1, 0),
                             TORCH_NORM("rmsnorm", 2, 1, 0, 0)},
        [NVL_STACK_FUSED] = {FUSED_NORM("add_rmsnorm", 4, 1, 0, 0)},
        [NVL_STACK_COMPILED] = {INDUCTOR_NORM("add_rmsnorm", 4, 1, 0, 0)},
    },
    [NVL_STEP_QKV] = {
        [NVL_STACK_TORCH] = {MM("qkv_proj", 1, 2, 0)},
        [NVL_STACK_FUSED] = {MM("qkv_proj", 1, 2, 0)},
        [NVL_STACK_COMPILED] = {MM("qkv_proj", 1, 2, 0)},
    },
    [NVL_STEP_QK_NORM] = {
        /* F.rms_norm copies a strided view to a contiguous one first */
        [NVL_STACK_TORCH] = {ST("q_contiguous", 2, 1, 0, 0),
                             TORCH_NORM("q_norm", 2, 0, 1, 1),
                             ST("k_contiguous", 2, 0, 1, 0),
                             TORCH_NORM("k_norm", 2, 0, 1, 2)},
        [NVL_STACK_FUSED] = {FUSED_NORM("q_norm", 2, 0, 1, 1),
                             FUSED_NORM("k_norm", 2, 0, 1, 2)},
        /* fused into the RoPE kernels, which are then four: a
         * persistent reduction over each head's row more */
        [NVL_STACK_COMPILED] = {FUSED_NORM("qk_norm", 2, 0, 1, 1)},
    },
    [NVL_STEP_ROPE_KV] = {
        [NVL_STACK_TORCH] = {TORCH_ROPE("rope_q", 1, 0),
                             TORCH_ROPE("rope_k", 0, 1),
                             IX("kv_write_k", 2, 1, 0),
                             IX("kv_write_v", 2, 1, 0)},
        /* reads q, k, v; writes q and the cache's k, v */
        [NVL_STACK_FUSED] = {EW("rope_kv_write", 2, 1, 2, 0, 0, 0)},
        /* q rotated; k rotated into the cache; v into the cache (the
         * cache position a scalar per token: contiguous stores) */
        [NVL_STACK_COMPILED] = {EW("rope_q", 2, 1, 0, 0, 0, 0),
                                EW("rope_k_kv_write", 2, 0, 1, 0, 0, 0),
                                EW("v_kv_write", 2, 0, 1, 0, 0, 0)},
    },
    [NVL_STEP_GATE_UP] = {
        [NVL_STACK_TORCH] = {MM("gate_up_proj", 0, 0, 2),
                             ST("silu", 2, 0, 0, 1), ST("mul", 3, 0, 0, 1)},
        [NVL_STACK_FUSED] = {MM("gate_up_proj", 0, 0, 2),
                             EW("silu_mul", 3, 0, 0, 1, 0, 0)},
        [NVL_STACK_COMPILED] = {MM("gate_up_proj", 0, 0, 2),
                                POI("silu_mul", 3, 1)},
    },
    [NVL_STEP_EXPERTS_GATE_UP] = {
        [NVL_STACK_TORCH] = {GG("experts_gate_up", 2), ST("silu", 2, 0, 0, 1),
                             ST("mul", 3, 0, 0, 1)},
        [NVL_STACK_FUSED] = {GG("experts_gate_up", 2),
                             EW("silu_mul", 3, 0, 0, 1, 0, 0)},
        /* the experts' region is not compiled (SiLU and mul eager, as
         * the measured step ran them: h200-moe-compiled) */
        [NVL_STACK_COMPILED] = {GG("experts_gate_up", 2),
                                ST("silu", 2, 0, 0, 1), ST("mul", 3, 0, 0, 1)},
    },
};

/* Inductor's launch of a 1-D pointwise kernel (torch/_inductor/runtime/
 * triton_heuristics.py, pointwise(): XBLOCK bs = max(256, min(numel //
 * 128, 1024)), autotuned against bs / 2 at 64 elements a warp, at least
 * 4 warps from XBLOCK 128, both chosen at the size hint of the compile).
 * The decode step's graph is compiled for a dynamic batch, its configs
 * tuned at the small batch that made it dynamic: XBLOCK 128 of 4 warps,
 * one element a thread, at every batch (grid = elements / 128, block 128
 * in all 18 decode traces of tests/data/calibration/h200-x2-serve), so
 * the GPU holds sms x 2048 elements at once and a batch-256 SiLU x up
 * runs 9-14 waves of a memory round trip each. A prefill is tuned at its
 * own shape (XBLOCK 1024 of 4 warps, or 512 of 8: 8 or 2 elements a
 * thread, as its traces show), whose waves carry more bytes than HBM
 * holds in flight (mem_latency x its rate): its bytes bound it. */
#define NVL_INDUCTOR_DECODE_ELEMS_PER_THREAD 1

static const nvl_access_t access[] = {
    [NVL_K_ELEMENTWISE] = NVL_ACCESS_CONTIGUOUS,
    [NVL_K_STRIDED] = NVL_ACCESS_STRIDED,
    [NVL_K_INDEXED] = NVL_ACCESS_INDEXED,
};

/* A norm's CTA: the plan's threads, but never more than the row has
 * elements (vLLM csrc/layernorm_kernels.cu launches
 * block(std::min(hidden_size, max_block_size)); TensorRT-LLM's Qwen3 q/k
 * norm, fusedQKNormRopeKernel.cu, runs a warp per head). A per-head norm's
 * 128-element row thus runs 128 threads, and 16 of its CTAs share an SM,
 * not 2. */
static uint32_t norm_threads(const kernel_t *k, uint64_t width)
{
    return width < k->threads ? (uint32_t)width : k->threads;
}

void nvl_engine_step(nvl_engine_t *e, nvl_step_t step, int32_t layer,
                     double rows, const uint64_t *count)
{
    const nvl_shard_t *s = &e->shard;
    const nvl_cost_cfg_t *cost = &e->opts.cost;
    uint64_t hd = e->cfg.head_dim, hid = e->cfg.hidden;
    uint64_t q = s->q_heads.count * hd, kv = s->kv_heads.count * hd;
    uint64_t in = step == NVL_STEP_EXPERTS_GATE_UP
                      ? s->moe_intermediate.count
                      : s->intermediate.count;
    const kernel_t *plan = plans[step][e->opts.stack];
    if (step == NVL_STEP_ADD_NORM && e->norm_fused) {
        e->norm_fused = false; /* the allreduce's epilogue ran it */
        return;
    }
    for (const kernel_t *k = plan; k < plan + NVL_PLAN_MAX && k->name != NULL;
         k++) {
        /* integers below 2^53: every product below is exact */
        uint64_t width = k->q * q + k->kv * kv + k->i * in + k->h * hid +
                         k->d * hd;
        double r = rows;
        if (k->per_head)
            r *= (double)(k->per_head == 1 ? s->q_heads.count
                                           : s->kv_heads.count);
        double bytes = r * (double)width * k->touch * 2.0;
        switch (k->kind) {
        case NVL_K_MATMUL:
            nvl_engine_matmul(e, k->name, step == NVL_STEP_QKV
                                              ? NVL_QCLASS_ATTN
                                              : NVL_QCLASS_MLP,
                              layer, (uint64_t)rows, width, hid);
            break;
        case NVL_K_GROUPED: {
            /* only the experts' steps have grouped kernels: their cost
             * configuration (the layer's own format) is built for them
             * alone */
            nvl_cost_cfg_t experts =
                nvl_engine_layer_gemm_cost(e, NVL_QCLASS_EXPERTS, layer);
            uint64_t h = hid, i = in; /* as the kernel pads them */
            nvl_cost_moe_dims(&experts, &h, &i);
            nvl_engine_kernel(e, k->name, NVL_PART_GEMM, layer,
                              nvl_cost_grouped_matmul(
                                  &experts, s->experts.count, count,
                                  width + k->i * (i - in), h));
            break;
        }
        case NVL_K_ELEMENTWISE:
        case NVL_K_STRIDED:
        case NVL_K_INDEXED:
            if (bytes > 0)
                nvl_engine_kernel(e, k->name, NVL_PART_OTHER, layer,
                                  nvl_cost_memory_access(cost, bytes,
                                                         access[k->kind]));
            break;
        case NVL_K_POINTWISE:
            if (bytes > 0)
                nvl_engine_kernel(
                    e, k->name, NVL_PART_OTHER, layer,
                    nvl_cost_pointwise_waves(
                        cost, bytes, r * (double)width,
                        e->one_token_pass
                            ? NVL_INDUCTOR_DECODE_ELEMS_PER_THREAD
                            : 0));
            break;
        case NVL_K_NORM:
            nvl_engine_kernel(e, k->name, NVL_PART_OTHER, layer,
                              nvl_cost_norm(cost, r, width, bytes,
                                            norm_threads(k, width), k->vec,
                                            k->passes));
            break;
        }
    }
}

/* The allreduce's epilogue for `rows` rows: the serving engine's add +
 * RMSNorm reading the residual and writing it and the normed rows (3
 * values per element; the reduced rows stay on chip), without a kernel's
 * fixed time. */
static nvl_kernel_cost_t fused_norm_cost(const nvl_engine_t *e, double rows)
{
    /* TensorRT-LLM's fused kernel: a CTA per token row, as FUSED_NORM */
    const kernel_t k = FUSED_NORM("allreduce_add_rmsnorm", 3, 1, 0, 0);
    uint64_t width = e->cfg.hidden;
    return nvl_cost_norm_epilogue(&e->opts.cost, rows, width,
                                  rows * (double)width * k.touch * 2.0,
                                  k.threads, k.vec, k.passes);
}

nvl_status_t nvl_engine_allreduce_add_norm(nvl_engine_t *e, int32_t layer,
                                           float *buf, size_t n)
{
    /* torch's symmetric-memory kernels reduce a registered buffer: the
     * layer's output is copied into it first, a Memcpy DtoD node of the
     * step's graph (vLLM SymmMemCommunicator.all_reduce; measured in the
     * serving-like step, tests/data/calibration/h200-x2-serve: 1.1 us at
     * 114,688 B, 1.6 us at 1,835,008 B, each after a 0.4 us gap).
     * TensorRT-LLM's fused kernels read their input in place. */
    if (nvl_comm_size(e->dense) > 1 && !e->opts.fuse_allreduce_norm &&
        nvl_ar_impl_copies_input(nvl_comm_allreduce(e->dense)))
        nvl_engine_elementwise(e, "symm_copy_in", layer, 2.0 * (double)n);
    nvl_coll_info_t info;
    nvl_status_t st = nvl_engine_allreduce_info(e, layer, buf, n, &info);
    /* NCCL's allreduce is followed by a norm kernel of its own
     * (TensorRT-LLM allreducePlugin.cpp: ncclAllReduce, then
     * residualRmsNorm) */
    if (st != NVL_OK || !e->opts.fuse_allreduce_norm ||
        info.impl == NVL_AR_NCCL || e->time_overflow)
        return st;
    nvl_engine_epilogue(e, "allreduce_add_rmsnorm", layer,
                        fused_norm_cost(e, (double)n / (double)e->cfg.hidden));
    e->norm_fused = true; /* the next NVL_STEP_ADD_NORM issues nothing */
    return NVL_OK;
}

/* A projection's shape as coefficients of the widths above: n = q.q +
 * kv.kv + i.i + h.h (+ e.E, the router's experts) outputs, k the same of
 * its inputs; its GEMM class. */
typedef struct {
    const char *name;
    nvl_quant_class_t cls;
    uint8_t nq, nkv, ni, nh, ne; /* outputs */
    uint8_t kq, ki, kh;          /* inputs */
} proj_t;

/* Grouped-query attention's and the dense MLP's projections, as
 * checkpoints store them (QKV and ROPE_KV run q/k/v as one GEMM; its
 * weights are these three), then a mixture of experts' router and one
 * expert's (i: its rows on the shard; gpt-oss stores gate and up fused). */
#define ATTN_PROJS                                                          \
    {.name = "q_proj", .cls = NVL_QCLASS_ATTN, .nq = 1, .kh = 1},           \
        {.name = "k_proj", .cls = NVL_QCLASS_ATTN, .nkv = 1, .kh = 1},      \
        {.name = "v_proj", .cls = NVL_QCLASS_ATTN, .nkv = 1, .kh = 1},      \
        {.name = "o_proj", .cls = NVL_QCLASS_ATTN, .nh = 1, .kq = 1}
static const proj_t dense_projs[] = {
    ATTN_PROJS,
    {.name = "gate_proj", .cls = NVL_QCLASS_MLP, .ni = 1, .kh = 1},
    {.name = "up_proj", .cls = NVL_QCLASS_MLP, .ni = 1, .kh = 1},
    {.name = "down_proj", .cls = NVL_QCLASS_MLP, .nh = 1, .ki = 1},
};
static const proj_t moe_projs[] = {
    ATTN_PROJS,
    {.name = "router", .cls = NVL_QCLASS_ROUTER, .ne = 1, .kh = 1},
    {.name = "expert.gate_proj", .cls = NVL_QCLASS_EXPERTS, .ni = 1,
     .kh = 1},
    {.name = "expert.up_proj", .cls = NVL_QCLASS_EXPERTS, .ni = 1, .kh = 1},
    {.name = "expert.down_proj", .cls = NVL_QCLASS_EXPERTS, .nh = 1,
     .ki = 1},
};
static const proj_t fused_projs[] = {
    ATTN_PROJS,
    {.name = "router", .cls = NVL_QCLASS_ROUTER, .ne = 1, .kh = 1},
    {.name = "expert.gate_up_proj", .cls = NVL_QCLASS_EXPERTS, .ni = 2,
     .kh = 1},
    {.name = "expert.down_proj", .cls = NVL_QCLASS_EXPERTS, .nh = 1,
     .ki = 1},
};

int nvl_engine_layer_gemms(const nvl_model_config_t *cfg, bool moe,
                           uint64_t q_heads, uint64_t kv_heads,
                           uint64_t rows,
                           nvl_engine_gemm_t out[NVL_ENGINE_LAYER_GEMMS_MAX])
{
    const proj_t *projs = !moe                 ? dense_projs
                          : cfg->experts_fused ? fused_projs
                                               : moe_projs;
    int n = !moe ? (int)(sizeof dense_projs / sizeof dense_projs[0])
            : cfg->experts_fused
                ? (int)(sizeof fused_projs / sizeof fused_projs[0])
                : (int)(sizeof moe_projs / sizeof moe_projs[0]);
    uint64_t q = q_heads * cfg->head_dim, kv = kv_heads * cfg->head_dim;
    uint64_t h = cfg->hidden, in = rows, E = cfg->num_experts;
    for (int j = 0; j < n; j++) {
        const proj_t *p = &projs[j];
        out[j] = (nvl_engine_gemm_t){
            .name = p->name, .cls = p->cls,
            .n = p->nq * q + p->nkv * kv + p->ni * in + p->nh * h + p->ne * E,
            .k = p->kq * q + p->ki * in + p->kh * h};
    }
    return n;
}
