/* The serving policy's defaults: the scheduler's row, and for a
 * scheduler without fixed batch and token limits its engine's rule
 * (trtllm-bench's, src/serve/trtllm_bench.c) from the model, the GPUs'
 * memory and the workload. */
#include "nvlemu/serving.h"
#include "nvlemu/shard.h"

/* The workload's mean input and output lengths and its longest prompt. */
static void workload_lengths(const nvl_serve_workload_t *w, double *isl_out,
                             double *osl_out, uint32_t *max_isl_out)
{
    double isl = 0, osl = 0;
    uint32_t max_isl = 0;
    for (size_t i = 0; i < w->n; i++) {
        isl += w->reqs[i].input_tokens;
        osl += w->reqs[i].output_tokens;
        if (w->reqs[i].input_tokens > max_isl)
            max_isl = w->reqs[i].input_tokens;
    }
    *isl_out = isl / (double)w->n;
    *osl_out = osl / (double)w->n;
    *max_isl_out = max_isl;
}

/* The batch and token limits by the scheduler's rule. */
static nvl_status_t bench_limits(nvl_serving_config_t *c,
                                 const nvl_serve_scheduler_t *row,
                                 const nvl_model_config_t *m,
                                 const nvl_serve_workload_t *w, int ranks)
{
    const nvl_cost_cfg_t *cost = &c->engine.cost;
    const nvl_serving_layout_opts_t *l = &c->layout;
    /* the whole model's attention on one GPU (its geometry's owner,
     * src/model/shard.c): the KV heads and what each caches */
    nvl_shard_t whole;
    nvl_status_t st = nvl_shard_plan(m, 1, 0, &whole);
    if (st != NVL_OK)
        return st;
    /* trtllm-bench's BYTES_PER_ELEM (nvfp4 0.5: its scales are counted
     * in the element count), not nvl_wdtype_bytes's */
    nvl_wdtype_t core = nvl_wdtype_core(cost->weight_dtype);
    double per = core == NVL_WDT_FP4   ? 0.5
                 : core == NVL_WDT_FP8 ? 1.0
                                       : 2.0;
    double embed = (double)m->vocab * m->hidden *
                   (m->tied_embeddings ? 1 : 2);
    /* aggregated: the replica's TP; disaggregated: the decode pool's,
     * whose KV lives longest */
    long tp = l->tp ? l->tp
              : l->decode_gpus ? (l->decode_tp ? l->decode_tp
                                               : l->decode_gpus)
                               : 0;
    nvl_serve_trtllm_bench_in_t in = {
        .checkpoint_params = nvl_serve_checkpoint_params(
            (double)nvl_model_param_count(m), embed, per),
        .bytes_per_param = per,
        .kv_bytes_per_elem = nvl_wdtype_bytes(cost->kv_dtype),
        .layers = m->layers, .kv_heads = whole.attn.kv_heads,
        .kv_head_elems = whole.attn.k_elems + whole.attn.v_elems,
        .tp = (uint32_t)(tp ? tp : ranks / (l->pp > 1 ? l->pp : 1)),
        .pp = (uint32_t)(l->pp > 1 ? l->pp : 1),
        .gpu_mem_gib = (double)cost->topo->gpu.hbm_bytes / 1073741824.0,
        .kv_fraction = row->mem_fraction,
        .chunked = !c->policy.whole_prompts};
    workload_lengths(w, &in.mean_isl, &in.mean_osl, &in.max_isl);
    uint32_t bs, tok;
    st = row->bench_limits(&in, &bs, &tok);
    if (st != NVL_OK)
        return st;
    if (c->policy.max_batch == 0)
        c->policy.max_batch = bs;
    if (c->policy.max_tokens_per_step == 0)
        c->policy.max_tokens_per_step = tok;
    return NVL_OK;
}

nvl_status_t nvl_serving_policy_resolve(nvl_serving_config_t *c,
                                        const nvl_model_config_t *m,
                                        const nvl_serve_workload_t *w,
                                        int ranks)
{
    nvl_serve_policy_t *p = &c->policy;
    const nvl_serve_scheduler_t *row = nvl_serve_scheduler(p->sched);
    if (p->block_tokens == 0)
        p->block_tokens = row->block_tokens;
    if (c->mem_fraction == 0)
        c->mem_fraction = row->mem_fraction;
    p->whole_prompts = p->chunk == 0 && !row->chunked;
    if (p->max_batch == 0)
        p->max_batch = row->max_batch;
    if (p->max_tokens_per_step == 0)
        p->max_tokens_per_step = row->max_tokens_per_step;
    if ((p->max_batch == 0 || p->max_tokens_per_step == 0) &&
        row->bench_limits != NULL) {
        nvl_status_t st = bench_limits(c, row, m, w, ranks);
        if (st != NVL_OK)
            return st;
    }
    if (p->chunk == 0)
        p->chunk = p->max_tokens_per_step;
    return NVL_OK;
}
