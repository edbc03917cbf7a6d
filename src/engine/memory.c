/* Where a run's bytes live: HBM, and with memory tiers the host CPU's
 * memory behind NVLink-C2C (docs/cost-model.md, "Memory tiers").
 *
 *   HBM need  = weights - w x layer weights + KV x (1 - k)
 *               + activations + reserve + staging
 *   staging   = 2 x (w x the largest layer's weights + k x KV / layers)
 *               (double-buffered: one layer lands while the next is used)
 *   host need = w x layer weights + k x KV
 *
 * with k, w the KV and weight shares in host memory (--kv-host,
 * --weights-host).  A run fits when HBM need <= [gpu] hbm and host need <=
 * [host_memory] size (the GPU's share of its superchip's memory).
 * Activations: one layer's working set (bf16) of the largest pass, at most
 * NVL_ACT_CHUNK_TOKENS rows, plus the float32 logits of its sequences
 * (serving under a rule with a sampler pass: the larger of the two,
 * profile_act_bytes), and under TensorRT-LLM's rule a MoE layer's runner
 * workspace at the whole step (nvl_engine_moe_runner_bytes).
 * Reserve: NVL_HBM_RESERVE of HBM. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine_impl.h"
#include "moe_agrs.h"

/* vLLM's default max_num_batched_tokens under chunked prefill: a serving
 * engine holds a long prefill's activations a chunk at a time. */
#define NVL_ACT_CHUNK_TOKENS 8192.0
/* HBM left to the CUDA context, cuBLAS and NCCL workspaces, CUDA graphs
 * and fragmentation: vLLM's gpu_memory_utilization 0.95, the value its
 * tuning guide raises the 0.9 default to for more KV room (a published
 * Qwen2.5-72B TP 2 run on 80 GB H100s, 72.7 GB of weights each, fits
 * under 0.95 and not under 0.9: docs/cost-model.md). */
#define NVL_HBM_RESERVE 0.05

const nvl_mem_plan_t *nvl_engine_memory(const nvl_engine_t *e)
{
    return &e->mem;
}

/* This rank's activations for a pass of `rows` rows over `seqs`
 * sequences (see the top). */
static double act_bytes(const nvl_engine_t *e, double rows, double seqs)
{
    const nvl_model_config_t *c = &e->cfg;
    const nvl_shard_t *s = &e->shard;
    const nvl_attn_geom_t *g = &s->attn;
    double mlp = fmax((double)s->intermediate.count,
                      c->num_experts ? (double)c->top_k *
                                           s->moe_intermediate.count
                                     : 0);
    /* the layer's input and its norm, q and the attention's output, the
     * new k and v, the MLP's two halves (bf16) */
    double per_row =
        2.0 * (2.0 * c->hidden + (double)g->q_heads * ((double)g->qk_dim + g->v_dim) +
               (double)g->kv_heads * ((double)g->k_elems + g->v_elems) + 2.0 * mlp);
    return fmin(rows, NVL_ACT_CHUNK_TOKENS) * per_row +
           seqs * s->vocab.count * 4.0;
}

static void plan_needs(nvl_mem_plan_t *p, double layer_max, uint32_t layers)
{
    double k = p->kv_host_share, w = p->weights_host_share;
    p->staging_bytes = 2.0 * (w * layer_max + k * p->kv_bytes / layers);
    p->hbm_need_bytes = p->weights_bytes - w * p->layer_weights_bytes +
                        p->kv_bytes * (1 - k) + p->act_bytes +
                        p->reserve_bytes + p->staging_bytes;
    p->host_need_bytes = w * p->layer_weights_bytes + k * p->kv_bytes;
}

/* The share of `moved` bytes (each costing 1 - 2 / per staged on the
 * way) that must leave HBM for the need to fit: 0 .. 1, or above 1 when
 * even all of it is not enough. */
static double share_needed(double over, double moved, double staged_frac)
{
    if (over <= 0)
        return 0;
    double gain = moved * (1 - staged_frac);
    return gain > 0 ? over / gain * (1 + 1e-12) : 2;
}

static void plan_auto(nvl_mem_plan_t *p, const nvl_engine_opts_t *o,
                      double layer_max, uint32_t layers)
{
    bool kv_auto = o->kv_host == NVL_HOST_AUTO;
    bool w_auto = o->weights_host == NVL_HOST_AUTO;
    p->kv_host_share = kv_auto ? 0 : o->kv_host;
    p->weights_host_share = w_auto ? 0 : o->weights_host;
    plan_needs(p, layer_max, layers);
    if (kv_auto) { /* the KV cache first */
        double k = share_needed(p->hbm_need_bytes - p->hbm_bytes,
                                p->kv_bytes, 2.0 / layers);
        p->kv_host_share = fmin(1, k);
        plan_needs(p, layer_max, layers);
    }
    if (w_auto && p->layer_weights_bytes > 0) {
        double w = share_needed(p->hbm_need_bytes - p->hbm_bytes,
                                p->layer_weights_bytes,
                                2.0 * layer_max / p->layer_weights_bytes);
        p->weights_host_share = fmin(1, w);
        plan_needs(p, layer_max, layers);
    }
}

static void report_unfit(const nvl_engine_t *e, const nvl_mem_plan_t *p)
{
    const nvl_engine_opts_t *o = &e->opts;
    const char *gpu = o->cost.topo->die_view ? "die" : "GPU"; /* --rank-plays */
    char host[256] = "";
    if (p->kv_host_share > 0 || p->weights_host_share > 0)
        snprintf(host, sizeof host, " + C2C staging %.2f GB, less what is "
                 "in host memory), and %.2f GB of host memory (KV %.0f%%, "
                 "layer weights %.0f%%", p->staging_bytes / 1e9,
                 p->host_need_bytes / 1e9, 100 * p->kv_host_share,
                 100 * p->weights_host_share);
    char tiers[192] = "";
    if (!p->tiers)
        snprintf(tiers, sizeof tiers, " (this topology has no host tier)");
    else if (o->kv_host == 0 && o->weights_host == 0)
        snprintf(tiers, sizeof tiers, ", --kv-host auto or --weights-host "
                 "auto (%.0f GB of host memory per %s over NVLink-C2C)",
                 p->host_bytes / 1e9, gpu);
    else if (p->host_need_bytes <= p->host_bytes)
        snprintf(tiers, sizeof tiers, ", a larger --kv-host or "
                 "--weights-host share");
    char tp[48];
    snprintf(tp, sizeof tp, e->stages > 1 ? "TP %d x PP %d" : "TP %d",
             nvl_comm_size(e->tp), e->stages);
    nvl_report("does not fit: %s at %s needs %.2f GB of HBM per %s "
               "(weights %.2f GB + KV cache %.2f GB + activations %.2f GB + "
               "reserve %.2f GB%s); the %s has %.0f GB of HBM and %.0f GB "
               "of host memory; ways out: more GPUs (TP), "
               "--dtype fp8|fp4, --kv-dtype fp8%s, a smaller --batch or "
               "context", e->cfg.name, tp,
               p->hbm_need_bytes / 1e9, gpu, p->weights_bytes / 1e9,
               p->kv_bytes / 1e9, p->act_bytes / 1e9, p->reserve_bytes / 1e9,
               host, gpu, p->hbm_bytes / 1e9, p->host_bytes / 1e9, tiers);
}

nvl_status_t nvl_engine_plan_memory(nvl_engine_t *e, uint64_t seqs,
                                    uint64_t positions, uint64_t rows)
{
    const nvl_engine_opts_t *o = &e->opts;
    const nvl_topo_t *t = o->cost.topo;
    nvl_mem_plan_t *p = &e->mem;
    memset(p, 0, sizeof *p);
    uint32_t layers = e->layers ? e->layers : 1;
    double layer_max = 0;
    double mine[5] = {nvl_engine_weight_bytes(e), 0, 0,
                      nvl_engine_kv_bytes(e, seqs, positions), 0};
    for (uint32_t i = 0; i < e->layers; i++) {
        double b = nvl_engine_layer_bytes(e, i, false);
        mine[1] += b;
        mine[2] = fmax(mine[2], b);
    }
    double share = e->shard.attn_dp
                       ? nvl_range_split((uint32_t)seqs,
                                         nvl_comm_size(e->tp), 0).count
                       : (double)seqs;
    mine[4] = act_bytes(e, e->shard.attn_dp && seqs ? (double)rows / seqs *
                                                          share
                                                    : (double)rows, share);
    /* the largest shard of the job (a pipeline's stages hold different
     * layers, the embedding, the lm_head): the same plan on every rank */
    double most[5];
    MPI_Allreduce(mine, most, 5, MPI_DOUBLE, MPI_MAX, nvl_comm_mpi(e->job));
    p->weights_bytes = most[0];
    p->layer_weights_bytes = most[1];
    layer_max = most[2];
    p->kv_bytes = most[3];
    p->act_bytes = most[4];
    p->hbm_bytes = (double)t->gpu.hbm_bytes;
    p->reserve_bytes = NVL_HBM_RESERVE * p->hbm_bytes;
    char why[160] = "";
    p->tiers = nvl_copy_path_usable(&o->cost, NVL_COPY_C2C_H2D, 0, why,
                                    sizeof why) &&
               nvl_copy_path_usable(&o->cost, NVL_COPY_HOST, 0, why,
                                    sizeof why) &&
               t->host_memory.bytes > 0;
    if (p->tiers)
        p->host_bytes = (double)t->host_memory.bytes;
    else if (why[0] == '\0')
        snprintf(why, sizeof why, "no host memory modeled ([host_memory] "
                 "size = 0)");
    if ((o->kv_host != 0 || o->weights_host != 0) && !p->tiers) {
        nvl_report("%s: topology '%s' has no host memory tier: %s",
                   o->kv_host != 0 ? "--kv-host" : "--weights-host", t->name,
                   why);
        return NVL_ERR_INVALID;
    }
    plan_auto(p, o, layer_max, layers);
    p->window_host_share = p->kv_host_share; /* the windows alike */
    p->planned = true;
    /* the GPUs of this superchip in the job read its memory together */
    uint32_t per = t->node.gpus_per_superchip, sharers = 0;
    for (int r = 0; r < nvl_comm_size(e->job); r++)
        sharers += nvl_comm_gpu(e->job, r) / per == o->cost.gpu / per;
    e->opts.cost.host_sharers =
        p->kv_host_share > 0 || p->weights_host_share > 0 ? sharers : 1;
    p->fits = p->hbm_need_bytes <= p->hbm_bytes &&
              p->host_need_bytes <= p->host_bytes;
    if (p->fits)
        return NVL_OK;
    report_unfit(e, p);
    return NVL_ERR_NOMEM;
}

/* Serving (nvlemu serve): the room left for the KV cache once the
 * weights and the largest step's activations are in HBM, in positions of
 * every layer's KV on the largest shard:
 *
 *   free  = HBM - weights + w x layer weights - activations
 *   avail = free - (1 - f) HBM        rule of the whole (vLLM)
 *           f free                    rule of the free (TensorRT-LLM)
 *           - S x window bytes        sliding-window layers (gpt-oss)
 *   N     = avail / (b (1 - k + 2 k / layers))   HBM, with staging
 *   N    <= host / (k b)                          host memory (k > 0)
 *
 * b the bytes of one position's KV on this GPU (every layer of full
 * attention: a sliding-window layer keeps each of the S = max_seqs
 * sequences' last `window` positions alone, as vLLM's hybrid KV cache
 * manager, SlidingWindowSpec, and TensorRT-LLM's per-layer
 * max_attention_window hold it), k the KV's
 * share in host memory: --kv-host's, or under auto the share that fills
 * both (k = host / (avail + host (1 - 2 / layers))). */
/* What serving does not support: --weights-host auto (the KV cache
 * takes whatever HBM is left). */
static nvl_status_t serve_supported(const nvl_engine_t *e)
{
    if (e->opts.weights_host == NVL_HOST_AUTO) {
        nvl_report("serve: --weights-host takes a share (0..1), not auto: "
                   "the KV cache takes whatever HBM is left");
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* The memory profile's activations under `rule` (nvl_engine_kv_rule_t):
 * the sampler's pass over the whole vocabulary, when the rule has one,
 * runs after the forward's tensors are freed, so the peak is the larger. */
static double profile_act_bytes(const nvl_engine_t *e, uint64_t max_rows,
                                uint64_t max_seqs,
                                const nvl_engine_kv_rule_t *rule)
{
    double moe = rule->moe_runner
                     ? nvl_engine_moe_runner_bytes(e, (double)max_rows)
                     : 0;
    if (rule->sampler_logit_bytes <= 0)
        return act_bytes(e, (double)max_rows, (double)max_seqs) + moe;
    /* a step samples at most one row a token (vLLM: min(max_num_seqs,
     * max_num_batched_tokens) rows) */
    double rows = (double)(max_seqs < max_rows ? max_seqs : max_rows);
    return fmax(act_bytes(e, (double)max_rows, 0) + moe,
                rows * e->cfg.vocab * rule->sampler_logit_bytes);
}

/* One position's KV on this rank in the layers that keep every position
 * (*b_out), and one sequence's in the sliding-window layers, which keep
 * their window alone (the return).  Without a layer of full attention
 * every layer counts in *b_out (each sequence's KV then bounded anyway). */
static double kv_split(const nvl_engine_t *e, double *b_out)
{
    double pos = nvl_attn_kv_pos_bytes(&e->shard.attn, e->opts.cost.kv_dtype);
    uint32_t full;
    double window = nvl_engine_kv_window_positions(e, UINT64_MAX, &full);
    *b_out = pos * (full > 0 || e->layers == 0 ? full : e->layers);
    return full > 0 ? pos * window : 0;
}

/* The plan's weights, activations and HBM (the largest over the group)
 * and its host tier; returns b, the bytes of one position's KV in the
 * full-attention layers, and the bytes of one sequence's sliding
 * windows. */
static nvl_status_t serve_sizes(nvl_engine_t *e, uint64_t max_rows,
                                uint64_t max_seqs,
                                const nvl_engine_kv_rule_t *rule,
                                double *b_out, double *window_out)
{
    const nvl_engine_opts_t *o = &e->opts;
    const nvl_topo_t *t = o->cost.topo;
    nvl_mem_plan_t *p = &e->mem;
    memset(p, 0, sizeof *p);
    double mine[5] = {nvl_engine_weight_bytes(e), 0, 0,
                      profile_act_bytes(e, max_rows, max_seqs, rule), 0};
    mine[4] = kv_split(e, &mine[2]);
    for (uint32_t i = 0; i < e->layers; i++)
        mine[1] += nvl_engine_layer_bytes(e, i, false);
    double most[5];
    MPI_Allreduce(mine, most, 5, MPI_DOUBLE, MPI_MAX, nvl_comm_mpi(e->tp));
    p->weights_bytes = most[0];
    p->layer_weights_bytes = most[1];
    p->act_bytes = most[3];
    p->hbm_bytes = (double)t->gpu.hbm_bytes;
    char why[160];
    p->tiers = nvl_copy_path_usable(&o->cost, NVL_COPY_C2C_H2D, 0, why,
                                    sizeof why) &&
               t->host_memory.bytes > 0;
    p->host_bytes = p->tiers ? (double)t->host_memory.bytes : 0;
    if ((o->kv_host != 0 || o->weights_host != 0) && !p->tiers) {
        nvl_report("%s: topology '%s' has no host memory tier",
                   o->kv_host != 0 ? "--kv-host" : "--weights-host",
                   t->name);
        return NVL_ERR_INVALID;
    }
    *b_out = most[2];
    *window_out = most[4];
    return NVL_OK;
}

static void report_no_kv_room(const nvl_engine_t *e, const nvl_mem_plan_t *p,
                              double w, uint64_t max_rows, double outside)
{
    nvl_report("does not fit: %s at TP %d leaves no HBM for the KV "
               "cache: weights %.2f GB + activations %.2f GB (a step of "
               "%llu tokens) + the engine's own %.2f GB + reserve %.2f GB "
               "of %.1f GB per GPU; ways "
               "out: more GPUs (TP), --dtype fp8|fp4, a smaller "
               "--max-tokens-per-step, --weights-host", e->cfg.name,
               nvl_comm_size(e->tp),
               (p->weights_bytes - w * p->layer_weights_bytes) / 1e9,
               p->act_bytes / 1e9, (unsigned long long)max_rows,
               outside / 1e9, p->reserve_bytes / 1e9, p->hbm_bytes / 1e9);
}

nvl_status_t nvl_engine_serve_memory(nvl_engine_t *e, uint64_t max_rows,
                                     uint64_t max_seqs,
                                     const nvl_engine_kv_rule_t *rule,
                                     nvl_engine_kv_room_t *room_out)
{
    const nvl_engine_opts_t *o = &e->opts;
    const nvl_topo_t *t = o->cost.topo;
    double b, window;
    nvl_status_t st = serve_supported(e);
    if (st != NVL_OK ||
        (st = serve_sizes(e, max_rows, max_seqs, rule, &b, &window)) !=
            NVL_OK)
        return st;
    nvl_mem_plan_t *p = &e->mem;
    uint32_t layers = e->layers ? e->layers : 1;
    double w = o->weights_host > 0 ? o->weights_host : 0;
    double free_bytes = p->hbm_bytes - p->weights_bytes +
                        w * p->layer_weights_bytes - p->act_bytes -
                        rule->outside_bytes;
    p->reserve_bytes = rule->of_free
                           ? (free_bytes > 0 ? (1 - rule->fraction) *
                                                   free_bytes
                                             : 0)
                           : (1 - rule->fraction) * p->hbm_bytes;
    /* the sliding-window layers' blocks: every running sequence's window
     * (vLLM's SlidingWindowManager frees the blocks behind it; under
     * attention DP this rank's share of the sequences) */
    double seqs = e->shard.attn_dp
                      ? nvl_range_split((uint32_t)max_seqs,
                                        nvl_comm_size(e->tp), 0).count
                      : (double)max_seqs;
    double windows = seqs * window;
    double avail = free_bytes - p->reserve_bytes - windows;
    double host = p->host_bytes - w * p->layer_weights_bytes;
    double k = o->kv_host == NVL_HOST_AUTO
                   ? (avail > 0 && host > 0
                          ? host / (avail + host * (1 - 2.0 / layers))
                          : 0)
                   : o->kv_host;
    double n = avail > 0 ? avail / (b * (1 - k + 2 * k / layers)) : 0;
    if (k > 0 && host / (k * b) < n)
        n = host > 0 ? host / (k * b) : 0;
    double host_free = host - k * n * b > 0 ? host - k * n * b : 0;
    double b_most = b, k_most = k, windows_most = windows;
    if (e->stages > 1) {
        /* a pipeline's replica: one scheduler for every stage, so the
         * positions its fullest stage holds, the bytes of its heaviest
         * stage's position and host share, the host room its fullest
         * stage leaves: the same on every rank */
        double v[5] = {-n, b, -host_free, k, windows};
        MPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_DOUBLE, MPI_MAX,
                      nvl_comm_mpi(e->job));
        n = -v[0];
        b_most = v[1];
        host_free = -v[2];
        k_most = v[3];
        windows_most = v[4];
    }
    p->kv_host_share = k;
    p->weights_host_share = w;
    p->kv_bytes = n * b + windows;
    plan_needs(p, 0, layers);
    p->planned = true;
    uint32_t per = t->node.gpus_per_superchip, sharers = 0;
    for (int r = 0; r < nvl_comm_size(e->tp); r++)
        sharers += nvl_comm_gpu(e->tp, r) / per == o->cost.gpu / per;
    e->opts.cost.host_sharers = k > 0 || w > 0 ? sharers : 1;
    p->fits = n >= 1 && host >= 0;
    if (!p->fits) {
        report_no_kv_room(e, p, w, max_rows, rule->outside_bytes);
        return NVL_ERR_NOMEM;
    }
    *room_out = (nvl_engine_kv_room_t){
        .kv_position_bytes = b_most, .positions = n,
        .kv_host_share = k_most, .host_free_bytes = host_free,
        .window_bytes = windows_most};
    return NVL_OK;
}
