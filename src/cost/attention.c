/* The attention kernel's cost (include/nvlemu/cost.h: nvl_cost_attention,
 * nvl_cost_attention_geom) and the geometry of what a KV cache position
 * stores; reasoning and sources in docs/cost-model.md, "Attention". */
#include "nvlemu/cost.h"

#include <math.h>
#include <string.h>

#include "cost_impl.h"

nvl_attn_geom_t nvl_attn_geom_gqa(uint32_t q_heads, uint32_t kv_heads,
                                  uint32_t head_dim)
{
    return (nvl_attn_geom_t){.q_heads = q_heads, .kv_heads = kv_heads,
                             .k_elems = head_dim, .v_elems = head_dim,
                             .qk_dim = head_dim, .v_dim = head_dim};
}

double nvl_attn_kv_elem_bytes(nvl_wdtype_t kv_dtype)
{
    return nvl_wdtype_bytes(kv_dtype == NVL_WDT_FP8 ? NVL_WDT_FP8
                                                    : NVL_WDT_BF16);
}

double nvl_attn_kv_head_bytes(const nvl_attn_geom_t *g, nvl_wdtype_t kv_dtype)
{
    return ((double)g->k_elems + g->v_elems) * nvl_attn_kv_elem_bytes(kv_dtype);
}

double nvl_attn_kv_pos_bytes(const nvl_attn_geom_t *g, nvl_wdtype_t kv_dtype)
{
    /* integers below 2^53: exact in any order */
    return (double)g->kv_heads * nvl_attn_kv_head_bytes(g, kv_dtype);
}

nvl_kernel_cost_t nvl_cost_attention(const nvl_cost_cfg_t *cfg, size_t n_seqs,
                                     const uint64_t *new_tokens,
                                     const uint64_t *past, uint32_t q_heads,
                                     uint32_t kv_heads, uint32_t head_dim)
{
    nvl_attn_geom_t g = nvl_attn_geom_gqa(q_heads, kv_heads, head_dim);
    return nvl_cost_attention_geom(cfg, n_seqs, new_tokens, past, &g);
}

/* The rows and keys of a prefill attention tile: FlashAttention and
 * cuDNN give a CTA 128 query rows of one (sequence, query head) and walk
 * the keys they see in blocks of 128 (FlashAttention-2/3's kBlockM x
 * kBlockN; causal blocks on the diagonal are computed whole, masked). */
#define NVL_ATTN_TILE_ROWS 128.0
#define NVL_ATTN_TILE_KEYS 128.0

/* The tensor-core time of an attention kernel's tiles on the GPU's SMs,
 * one tile per SM at a time, handed out in order as SMs free up (a list
 * schedule): a tile of r rows over k keys (k rounded up to whole key
 * blocks) takes 2 (d_qk + d_v) r k FLOPs at one SM's share of the rate
 * (sm_flops_per_s) plus its fixed work, two memory round trips for a
 * full tile (loading its query block, storing its output block),
 * r / 128 of them for fewer rows.  With no more tiles than SMs the
 * kernel lasts its longest tile; with more, the work over the SMs plus
 * half the longest tile (the tail of the list schedule: the last tiles
 * to start end at various times; within -10 %/+6 % of the exact list
 * schedule of causal prefills of 1-128 heads and 128-16,384 tokens).
 * The summed tile time goes to work_s_out. */
static double attn_makespan_s(const nvl_cost_cfg_t *cfg, size_t n_seqs,
                              const uint64_t *new_tokens, const uint64_t *past,
                              const nvl_attn_geom_t *g, double sm_flops_per_s,
                              double *work_s_out)
{
    const nvl_gpu_spec_t *gpu = &cfg->topo->gpu;
    double dims = (double)g->qk_dim + g->v_dim, q_heads = g->q_heads;
    double fixed_s = 2.0 * (double)gpu->mem_latency_ps * 1e-12;
    double tiles = 0, work = 0, longest = 0;
    for (size_t i = 0; i < n_seqs; i++) {
        double T = (double)new_tokens[i], P = (double)past[i];
        for (double start = 0; start < T; start += NVL_ATTN_TILE_ROWS) {
            double rows = fmin(NVL_ATTN_TILE_ROWS, T - start);
            double keys = P + start + rows;
            if (g->window > 0) /* a row sees its last window keys */
                keys = fmin(keys, (double)g->window + rows - 1.0);
            keys = ceil(keys / NVL_ATTN_TILE_KEYS) * NVL_ATTN_TILE_KEYS;
            double t = 2.0 * dims * rows * keys / sm_flops_per_s +
                       fixed_s * rows / NVL_ATTN_TILE_ROWS;
            tiles += q_heads;
            work += q_heads * t;
            longest = fmax(longest, t);
        }
    }
    *work_s_out = work;
    double sms = gpu->sm_count ? (double)gpu->sm_count : 1.0;
    return tiles <= sms ? longest : fmax(longest, work / sms + 0.5 * longest);
}

nvl_kernel_cost_t nvl_cost_attention_geom(const nvl_cost_cfg_t *cfg,
                                          size_t n_seqs,
                                          const uint64_t *new_tokens,
                                          const uint64_t *past,
                                          const nvl_attn_geom_t *g)
{
    nvl_kernel_cost_t c = {0, 0, 0};
    const nvl_gpu_spec_t *gpu = &cfg->topo->gpu;
    double q_heads = g->q_heads, kv_heads = g->kv_heads;
    /* a score's query-key product, then its share of the output */
    double dims = (double)g->qk_dim + g->v_dim;
    double kv_row = nvl_attn_kv_pos_bytes(g, cfg->kv_dtype);
    double scores = 0, tokens = 0;
    for (size_t i = 0; i < n_seqs; i++) {
        double T = (double)new_tokens[i], P = (double)past[i];
        if (g->window > 0) {
            /* new token t sees min(past + t + 1, window) positions: the
             * first n below the window, the rest window each; only the
             * last window - 1 past positions are read */
            double W = g->window, n = fmin(fmax(W - P, 0.0), T);
            scores += q_heads * (n * P + n * (n + 1.0) / 2.0 + (T - n) * W);
            c.bytes += kv_row * (fmin(P, W - 1.0) + 2.0 * T);
            tokens += T;
            continue;
        }
        /* causal: new token t sees past + t + 1 positions */
        scores += q_heads * (T * P + T * (T + 1.0) / 2.0);
        /* the KV read once (past and new) and the new KV written */
        c.bytes += kv_row * (P + 2.0 * T);
        tokens += T;
    }
    if (g->q_heads == 0 || tokens == 0)
        return (nvl_kernel_cost_t){0, 0, 0};
    c.bytes += tokens * q_heads * dims * 2.0; /* q read, o written */
    c.flops = 2.0 * dims * scores; /* q k^T and p v: 2 FLOPs per MAC each */
    double exps = scores;
    if (cfg->attn == NVL_ATTN_FA4)
        exps *= 1.0 - gpu->fa4_exp_fma_share;
    /* independent (sequence, KV head) streams: one reaches half the rate */
    double units = (double)n_seqs * kv_heads;
    double eff = cfg->attn == NVL_ATTN_SDPA ? gpu->sdpa_efficiency
                                            : gpu->attn_efficiency;
    double sm_flops = nvl_topo_gpu_flops(cfg->topo, cfg->gpu,
                                         gpu->bf16_flops_per_s) * eff /
                      (double)(gpu->sm_count ? gpu->sm_count : 1);
    double work_s, t_mma = attn_makespan_s(cfg, n_seqs, new_tokens, past, g,
                                           sm_flops, &work_s);
    /* the exponentials share the tiles' schedule: the SMs the tiles keep
     * busy evaluate them */
    double t_exp = exps / nvl_topo_gpu_flops(cfg->topo, cfg->gpu,
                                             gpu->exp_ops_per_s) *
                   (work_s > 0 ? t_mma * (double)gpu->sm_count / work_s : 1.0);
    double t_mem = c.bytes / (nvl_topo_hbm_bw(cfg->topo, cfg->gpu) *
                              gpu->attn_hbm_efficiency * units / (units + 1.0));
    c.time_ps = nvl_ps_from_s(nvl_cost_overhead_s(cfg, gpu->attn_overhead_ps) +
                              fmax(t_mma, fmax(t_exp, t_mem)));
    return c;
}
