/* The fusion table: which kernels each step of a layer issues under
 * --fusion typical (as serving engines fuse them: vLLM's and TensorRT-
 * LLM's fused add + RMSNorm, merged QKV and gate/up projections, fused
 * SiLU-and-mul, Qwen3's q/k norms in one kernel) and none (unfused
 * PyTorch: one kernel per operation).
 *
 * A kernel's size is a sum of the layer's widths times a coefficient:
 *   q  = this rank's query heads x head_dim    kv = its kv heads x head_dim
 *   i  = its MLP rows (an expert's, for the experts' step)   h = hidden
 * A projection multiplies rows x h by h x (its widths); an element-wise
 * kernel moves rows x (its widths) x `touch` bf16 values through HBM
 * (touch: reads + writes per element, e.g. add + RMSNorm reads x and the
 * residual and writes both: 4). */
#include "engine_impl.h"

typedef enum { NVL_K_MATMUL, NVL_K_GROUPED, NVL_K_ELEMENTWISE } kind_t;

typedef struct {
    const char *name;   /* NULL ends a plan */
    kind_t kind;
    uint8_t q, kv, i, h; /* coefficients of the widths */
    uint8_t touch;      /* element-wise: values moved per element */
    bool if_qkv_bias;   /* only for models with q/k/v biases */
} kernel_t;

#define MM(n, ...) {n, NVL_K_MATMUL, __VA_ARGS__, 0, false}
#define GG(n, ...) {n, NVL_K_GROUPED, __VA_ARGS__, 0, false}
#define EW(n, t, ...) {n, NVL_K_ELEMENTWISE, __VA_ARGS__, t, false}

/*                   name            q  kv i  h  */
static const kernel_t plans[NVL_STEP_COUNT][NVL_FUSION_COUNT][5] = {
    [NVL_STEP_NORM] = {
        [NVL_FUSION_TYPICAL] = {EW("rmsnorm", 2, 0, 0, 0, 1)},
        [NVL_FUSION_NONE] = {EW("rmsnorm", 2, 0, 0, 0, 1)},
    },
    [NVL_STEP_ADD_NORM] = {
        [NVL_FUSION_TYPICAL] = {EW("add_rmsnorm", 4, 0, 0, 0, 1)},
        [NVL_FUSION_NONE] = {EW("residual_add", 3, 0, 0, 0, 1),
                             EW("rmsnorm", 2, 0, 0, 0, 1)},
    },
    [NVL_STEP_QKV] = {
        [NVL_FUSION_TYPICAL] = {MM("qkv_proj", 1, 2, 0, 0)},
        [NVL_FUSION_NONE] = {MM("q_proj", 1, 0, 0, 0),
                             MM("k_proj", 0, 1, 0, 0),
                             MM("v_proj", 0, 1, 0, 0),
                             {"qkv_bias", NVL_K_ELEMENTWISE, 1, 2, 0, 0, 2,
                              true}},
    },
    [NVL_STEP_QK_NORM] = {
        [NVL_FUSION_TYPICAL] = {EW("qk_norm", 2, 1, 1, 0, 0)},
        [NVL_FUSION_NONE] = {EW("q_norm", 2, 1, 0, 0, 0),
                             EW("k_norm", 2, 0, 1, 0, 0)},
    },
    [NVL_STEP_GATE_UP] = {
        [NVL_FUSION_TYPICAL] = {MM("gate_up_proj", 0, 0, 2, 0),
                                EW("silu_mul", 3, 0, 0, 1, 0)},
        [NVL_FUSION_NONE] = {MM("gate_proj", 0, 0, 1, 0),
                             MM("up_proj", 0, 0, 1, 0),
                             EW("silu", 2, 0, 0, 1, 0),
                             EW("mul", 3, 0, 0, 1, 0)},
    },
    [NVL_STEP_EXPERTS_GATE_UP] = {
        [NVL_FUSION_TYPICAL] = {GG("experts_gate_up", 0, 0, 2, 0),
                                EW("silu_mul", 3, 0, 0, 1, 0)},
        [NVL_FUSION_NONE] = {GG("experts_gate", 0, 0, 1, 0),
                             GG("experts_up", 0, 0, 1, 0),
                             EW("silu", 2, 0, 0, 1, 0),
                             EW("mul", 3, 0, 0, 1, 0)},
    },
};

void nvl_engine_step(nvl_engine_t *e, nvl_step_t step, int32_t layer,
                     double rows, const uint64_t *count)
{
    const nvl_shard_t *s = &e->shard;
    uint64_t hd = e->cfg.head_dim, hid = e->cfg.hidden;
    uint64_t q = s->q_heads.count * hd, kv = s->kv_heads.count * hd;
    uint64_t in = step == NVL_STEP_EXPERTS_GATE_UP
                      ? s->moe_intermediate.count
                      : s->intermediate.count;
    const kernel_t *k = plans[step][e->opts.cost.fusion];
    for (; k < plans[step][e->opts.cost.fusion] + 5 && k->name != NULL; k++) {
        if (k->if_qkv_bias && !e->cfg.qkv_bias)
            continue;
        /* integers below 2^53: every product below is exact */
        uint64_t width = k->q * q + k->kv * kv + k->i * in + k->h * hid;
        switch (k->kind) {
        case NVL_K_MATMUL:
            nvl_engine_matmul(e, k->name, layer, (uint64_t)rows, width, hid);
            break;
        case NVL_K_GROUPED:
            nvl_engine_kernel(e, k->name, NVL_PART_GEMM, layer,
                              nvl_cost_grouped_matmul(
                                  &e->opts.cost, s->experts.count, count,
                                  width, hid));
            break;
        case NVL_K_ELEMENTWISE:
            nvl_engine_elementwise(e, k->name, layer,
                                   rows * (double)width * k->touch);
            break;
        }
    }
}
