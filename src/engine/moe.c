/* The mixture-of-experts MLP of a Qwen3-MoE or gpt-oss layer:
 *
 *   p = softmax(h W_router^T)              [M, experts], float32; the
 *                                          router is replicated
 *   S = the top_k experts of p per token;  w = p_S (/ sum p_S when
 *                                          norm_topk_prob)
 *   y = sum_{x in S} w_x (silu(h W_g,x^T) * h W_u,x^T) W_d,x^T
 *
 * as transformers' Qwen3MoeSparseMoeBlock computes it (experts in index
 * order, each adding its weighted output).  gpt-oss (GptOssMLP): the
 * router's logits and every expert's gate, up and down have a bias, and
 * silu(g) x u is (clamp(u, -7, 7) + 1) x g' sigmoid(1.702 g'), g' =
 * min(g, 7) (swiglu); down's bias is added by the rank holding the
 * expert's rows from 0.
 *
 * Experts tensor-parallel (nvl_engine_moe): a rank holds rows [moe
 * intermediate shard] of each expert's gate and up and those columns of
 * its down, so its y is a partial sum that the MLP's one allreduce
 * completes, as for the dense MLP.
 *
 * Kernels, as fused-MoE serving kernels issue them:
 *   router           matmul (M, experts, hidden), bf16 weights
 *   topk_softmax     reads the M x experts logits, writes ids and weights
 *   sort_pairs       the (token, expert) pairs ordered by expert
 *                    (TensorRT-LLM's expert-map build, torch's argsort;
 *                    vLLM's moe_align_block_size): ids read, positions
 *                    written, through an index
 *   expand_rows      each pair's row gathered into its expert's block
 *                    (TensorRT-LLM's expandInputRows, torch's
 *                    index_select): rows read, pairs x hidden written in
 *                    the experts' input format: expandInputRowsKernel
 *                    quantizes bf16 rows as it copies them, or copies rows
 *                    quantized before an exchange (moe_agrs.c) with their
 *                    scale factors
 *   experts_gate_up  grouped GEMM: expert x with t_x tokens costs
 *                    matmul(t_x, 2 x shard, hidden); the kernel's overhead
 *                    once (nvl_cost_grouped_matmul: rows padded to the CTA
 *                    tile, a latency floor per weight panel); idle
 *                    experts' weights are not read
 *   silu_mul         over the (token, expert) pairs' rows of the shard
 *   experts_down     grouped GEMM: matmul(t_x, hidden, shard) per expert
 *   moe_sum          the weighted sum of each row's pairs
 *   combine_sum      (expert parallelism) the returned rows added up
 * (--stack torch: silu and mul apart, on strided views; top-k, the sort
 * and counts, and the unpermute as torch's eager ops launch them,
 * moe_torch.c; --stack compiled the same with the top-k's kernels as
 * Inductor fuses them); the routing is moe_route.c's, expert parallelism
 * moe_ep.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "moe_torch.h"
#include "nvlemu/runtime.h"

/* Timing mode, experts tensor-parallel: above this many (row, expert)
 * draws in a pass's layers the ranks share the drawing. */
#define NVL_MOE_SHARED_DRAWS 65536

/* g = silu(g) x u, or gpt-oss's clamped form (GptOssExperts: g clamped
 * above at the limit, u to +-limit, (u + 1) x g sigmoid(alpha g)), over n
 * values. */
static void swiglu(const nvl_model_config_t *c, float *g, const float *u,
                   uint64_t n)
{
    float lim = (float)c->swiglu_limit, alpha = (float)c->swiglu_alpha;
    for (uint64_t r = 0; r < n; r++) {
        if (lim <= 0.0f) {
            g[r] = g[r] / (1.0f + expf(-g[r])) * u[r];
            continue;
        }
        float gr = fminf(g[r], lim), ur = fminf(fmaxf(u[r], -lim), lim);
        g[r] = (ur + 1.0f) * (gr / (1.0f + expf(-alpha * gr)));
    }
}

/* Data mode: out = the sum over the experts this rank holds that each row
 * chose, in expert order, of w_x (silu(in W_g,x^T) * in W_u,x^T) W_d,x^T
 * with this rank's slice of each (in and out may be the same). */
void nvl_engine_moe_compute(const nvl_engine_t *e, uint32_t li,
                            const float *in, float *out, uint64_t M,
                            const uint32_t *ids, const float *w)
{
    const nvl_layer_weights_t *l = &e->lw[li];
    uint32_t k = e->cfg.top_k;
    nvl_range_t held = e->shard.experts;
    uint64_t hid = e->cfg.hidden, sn = e->shard.moe_intermediate.count;
    float *xs = nvl_engine_moe_alloc(M * hid, sizeof *xs);
    float *g = nvl_engine_moe_alloc(M * sn, sizeof *g);
    float *u = nvl_engine_moe_alloc(M * sn, sizeof *u);
    float *d = nvl_engine_moe_alloc(M * hid, sizeof *d);
    float *y = nvl_engine_moe_alloc(M * hid, sizeof *y);
    uint64_t *row = nvl_engine_moe_alloc(M, sizeof *row);
    float *wt = nvl_engine_moe_alloc(M, sizeof *wt);
    for (uint32_t i = 0; i < held.count; i++) {
        uint32_t x = held.first + i;
        uint64_t n = 0;
        for (uint64_t t = 0; t < M; t++)
            for (uint32_t j = 0; j < k; j++)
                if (ids[t * k + j] == x) {
                    memcpy(xs + n * hid, in + t * hid, hid * sizeof *xs);
                    row[n] = t;
                    wt[n++] = w[t * k + j];
                }
        if (n == 0 || sn == 0)
            continue;
        nvl_engine_gemm_input_inplace(e, li, NVL_GEMM_IN_GATE_UP, xs, n, hid);
        nvl_engine_linear(xs, l->eg + i * sn * hid,
                          l->egb ? l->egb + i * sn : NULL, g, n, sn, hid);
        nvl_engine_linear(xs, l->eu + i * sn * hid,
                          l->eub ? l->eub + i * sn : NULL, u, n, sn, hid);
        swiglu(&e->cfg, g, u, n * sn);
        nvl_engine_gemm_input_inplace(e, li, NVL_GEMM_IN_DOWN, g, n, sn);
        nvl_engine_linear(g, l->ed + i * hid * sn,
                          l->edb ? l->edb + i * hid : NULL, d, n, hid, sn);
        for (uint64_t r = 0; r < n; r++)
            for (uint64_t c = 0; c < hid; c++)
                y[row[r] * hid + c] += d[r * hid + c] * wt[r];
    }
    memcpy(out, y, M * hid * sizeof *out);
    free(wt);
    free(row);
    free(y);
    free(d);
    free(u);
    free(g);
    free(xs);
}

double nvl_engine_moe_act_bits(const nvl_engine_t *e, int32_t L)
{
    /* NVFP4: 4 bits and an E4M3 scale per 16 values (TensorRT-LLM's
     * fp4_quantize, scaling_vector_size 16); MX-FP4: an E8M0 per 32; FP8:
     * 8 bits under one per-tensor scale; FP8 blocks: an fp32 per 128
     * (per-token groups of 128) */
    static const double act_bits[NVL_WDT_COUNT] = {
        [NVL_WDT_BF16] = 16.0, [NVL_WDT_FP8] = 8.0, [NVL_WDT_FP4] = 4.25,
        [NVL_WDT_NVFP4] = 4.5, [NVL_WDT_FP8_BLOCK] = 8.25,
        [NVL_WDT_FP8_CHANNEL] = 8.0, [NVL_WDT_INT8] = 8.0};
    nvl_cost_cfg_t c = nvl_engine_layer_gemm_cost(e, NVL_QCLASS_EXPERTS, L);
    nvl_wdtype_t dt = c.weight_dtype < NVL_WDT_COUNT ? c.weight_dtype
                                                     : NVL_WDT_BF16;
    if (c.weight_only || act_bits[dt] <= 0 ||
        nvl_wdtype_peak_flops_per_s(&c.topo->gpu, dt) <= 0)
        return 16.0;
    return act_bits[dt];
}

/* The router and top-k kernels over M rows. */
void nvl_engine_moe_router_kernels(nvl_engine_t *e, int32_t L, uint64_t M)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    if (M == 0)
        return;
    nvl_cost_cfg_t router = nvl_engine_gemm_cost(e, NVL_QCLASS_ROUTER);
    nvl_engine_kernel(e, "router", NVL_PART_GEMM, L,
                      nvl_cost_matmul(&router, M, E, e->cfg.hidden));
    if (nvl_engine_moe_torch_stack(e)) {
        nvl_engine_moe_torch_route(e, L, M);
        return;
    }
    nvl_engine_elementwise(e, "topk_softmax", L,
                           (double)M * E + 2.0 * (double)M * k);
}

/* The expert kernels of this rank: count[i] tokens for its i-th expert,
 * over `rows` distinct rows. */
void nvl_engine_moe_expert_kernels(nvl_engine_t *e, int32_t L, const uint64_t *count,
                           uint64_t rows, bool quantized_rows)
{
    uint32_t ne = e->shard.experts.count;
    uint64_t hid = e->cfg.hidden, sn = e->shard.moe_intermediate.count;
    double pairs = 0;
    for (uint32_t i = 0; i < ne; i++)
        pairs += (double)count[i];
    /* the layer's own: a checkpoint may keep some layers' experts bf16 */
    nvl_cost_cfg_t experts =
        nvl_engine_layer_gemm_cost(e, NVL_QCLASS_EXPERTS, L);
    const nvl_cost_cfg_t *cc = &experts;
    bool torch = nvl_engine_moe_torch_stack(e);
    if (pairs > 0 && torch)
        nvl_engine_moe_torch_sort(e, L, pairs);
    if (pairs > 0) {
        /* each pair's expert id read, its sorted position and source row
         * written (int32) */
        if (!torch)
            nvl_engine_kernel(e, "sort_pairs", NVL_PART_OTHER, L,
                              nvl_cost_memory_access(cc, pairs * 12.0,
                                                     NVL_ACCESS_INDEXED));
        /* each pair's row gathered into its expert's block in the
         * experts' input format: one index a row, whole rows loaded and
         * stored vectorised; vLLM's Marlin and Triton GEMMs read
         * the rows through the sorted pair ids themselves
         * (fused_marlin_moe, fused_moe: no gather) */
        double bits = nvl_engine_moe_act_bits(e, L);
        double in_bytes = quantized_rows ? bits / 8.0 : 2.0;
        if (!nvl_cost_moe_marlin(cc) && !nvl_cost_moe_triton(cc))
            nvl_engine_kernel(e, "expand_rows", NVL_PART_OTHER, L,
                              nvl_cost_memory(cc, ((double)rows * in_bytes +
                                                   pairs * bits / 8.0) *
                                                      (double)hid));
    }
    if (torch && pairs > 0)
        nvl_engine_moe_torch_prepare(e, L, false);
    nvl_engine_step(e, NVL_STEP_EXPERTS_GATE_UP, L, pairs, count);
    if (torch && pairs > 0)
        nvl_engine_moe_torch_prepare(e, L, true);
    uint64_t h = hid, i = sn; /* as the kernel pads them */
    nvl_cost_moe_dims(cc, &h, &i);
    nvl_engine_kernel(e, "experts_down", NVL_PART_GEMM, L,
                      nvl_cost_grouped_matmul(cc, ne, count, h, i));
    if (torch && pairs > 0)
        nvl_engine_moe_torch_unpermute(e, L, pairs, rows);
    else
        nvl_engine_elementwise(e, "moe_sum", L,
                               pairs * (double)hid + (double)rows * (double)hid);
}

/* Adds what layer li added to the pass's MoE numbers since `before` to
 * the layer's decode totals (decode passes only; the exchanges' times
 * are added as they are agreed, nvl_engine_account_ep). */
void nvl_engine_moe_layer_done(nvl_engine_t *e, uint32_t li,
                       const nvl_pass_stats_t *before)
{
    if (e->pass < 1)
        return;
    const nvl_pass_stats_t *c = &e->cur;
    nvl_moe_layer_stats_t *l = &e->moe_decode[li];
    l->dispatch_bytes += c->dispatch_bytes - before->dispatch_bytes;
    l->combine_bytes += c->combine_bytes - before->combine_bytes;
    l->expert_pairs_max += c->expert_pairs_max - before->expert_pairs_max;
    l->expert_pairs_mean += c->expert_pairs_mean - before->expert_pairs_mean;
    l->dispatch_alt_ps +=
        (double)(c->dispatch_alt_ps - before->dispatch_alt_ps);
    l->combine_alt_ps += (double)(c->combine_alt_ps - before->combine_alt_ps);
}

/* Timing mode: the seeded routing's token counts of every tensor-parallel
 * MoE layer of this pass over M rows, drawn once per pass into
 * e->moe_counts.  A routing is a function of the seed, the pass, the layer
 * and each row's index alone (moe_route.c), so when the pass draws more
 * than NVL_MOE_SHARED_DRAWS (row, expert) pairs over its layers every rank
 * draws its share of each layer's rows and one allreduce sums them: the
 * counts every rank would draw alone, one exchange a pass rather than one
 * a layer. */
static const uint64_t *seeded_counts(nvl_engine_t *e, uint32_t li, uint64_t M)
{
    uint32_t E = e->cfg.num_experts, k = e->cfg.top_k;
    size_t n_counts = (size_t)e->layers * E;
    if (e->moe_counts == NULL)
        e->moe_counts = nvl_engine_moe_alloc(n_counts, sizeof *e->moe_counts);
    else if (e->moe_counts_pass == e->pass && e->moe_counts_rows == M)
        return e->moe_counts + (size_t)li * E;
    memset(e->moe_counts, 0, n_counts * sizeof *e->moe_counts);
    uint32_t moe_layers = 0;
    for (uint32_t l = 0; l < e->layers; l++)
        moe_layers += nvl_engine_layer_is_moe(e, l) &&
                      !nvl_engine_moe_is_ep(e, l);
    int n = nvl_comm_size(e->tp);
    bool share = n > 1 && (double)moe_layers * (double)M * k >
                              NVL_MOE_SHARED_DRAWS;
    nvl_range_t rows = share ? nvl_range_split((uint32_t)M, n,
                                               nvl_comm_rank(e->tp))
                             : (nvl_range_t){0, (uint32_t)M};
    uint32_t *ids = nvl_engine_moe_alloc((uint64_t)rows.count * k, sizeof *ids);
    for (uint32_t l = 0; l < e->layers; l++) {
        if (!nvl_engine_layer_is_moe(e, l) || nvl_engine_moe_is_ep(e, l))
            continue;
        uint64_t *count = e->moe_counts + (size_t)l * E;
        nvl_engine_moe_route(e, l, rows.first, rows.count, NULL, ids, NULL);
        for (uint64_t i = 0; i < (uint64_t)rows.count * k; i++)
            count[ids[i]]++;
    }
    free(ids);
    if (share)
        MPI_Allreduce(MPI_IN_PLACE, e->moe_counts, (int)n_counts,
                      MPI_UINT64_T, MPI_SUM, nvl_comm_mpi(e->tp));
    e->moe_counts_pass = e->pass;
    e->moe_counts_rows = M;
    return e->moe_counts + (size_t)li * E;
}

/* Data mode: the real routing of the M rows, their counts per expert in
 * count, and the experts' partial sums into h. */
static void routed_compute(nvl_engine_t *e, uint32_t li, uint64_t M, float *h,
                           uint64_t *count)
{
    uint32_t k = e->cfg.top_k;
    uint32_t *ids = nvl_engine_moe_alloc(M * k, sizeof *ids);
    float *w = nvl_engine_moe_alloc(M * k, sizeof *w);
    nvl_engine_moe_route(e, li, 0, M, h, ids, w);
    for (uint64_t i = 0; i < M * k; i++)
        count[ids[i]]++;
    nvl_engine_moe_compute(e, li, h, h, M, ids, w);
    free(w);
    free(ids);
}

void nvl_engine_moe(nvl_engine_t *e, uint32_t li, uint64_t M, float *h)
{
    const nvl_model_config_t *c = &e->cfg;
    uint32_t E = c->num_experts, k = c->top_k;
    int32_t L = (int32_t)li;
    nvl_pass_stats_t before = e->cur;
    uint64_t *count = nvl_engine_moe_alloc(E, sizeof *count);
    if (e->data)
        routed_compute(e, li, M, h, count);
    else
        memcpy(count, seeded_counts(e, li, M), E * sizeof *count);
    nvl_engine_moe_router_kernels(e, L, M);
    nvl_engine_moe_expert_kernels(e, L, count, M, false);
    /* every rank computes a slice of every pair */
    e->cur.moe_layers++;
    e->cur.expert_pairs += (double)M * k;
    e->cur.expert_pairs_max += (double)M * k;
    e->cur.expert_pairs_mean += (double)M * k;
    nvl_engine_moe_layer_done(e, li, &before);
    free(count);
}
