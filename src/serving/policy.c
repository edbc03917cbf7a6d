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

/* trtllm-bench's weights: param_count, the checkpoint's safetensors
 * element count, each GEMM class's matrices counted as the class's weight
 * type stores them (nvl_serve_checkpoint_params: FP4 codes two a byte and
 * their scales) and every other parameter (embedding, norms, biases) one
 * each; and *per_out, BYTES_PER_ELEM of the checkpoint's quantization
 * (tensorrt_llm/bench/build/tuning.py: NO_QUANT 2, FP8 and
 * FP8_BLOCK_SCALES 1, NVFP4 0.5), one factor for the whole count as
 * trtllm-bench takes it (nvfp4 0.5: the scales are in the count), from
 * the type of the weights the checkpoint quantizes (cost.weight_dtype). */
static double bench_weight_params(const nvl_serving_config_t *c,
                                  const nvl_model_config_t *m,
                                  const nvl_shard_t *whole, double *per_out)
{
    double moe = 0;
    for (uint32_t li = 0; li < m->layers; li++)
        moe += nvl_model_layer_is_moe(m, li);
    double hid = m->hidden, dense = m->layers - moe;
    double cls[NVL_QCLASS_COUNT] = {
        [NVL_QCLASS_ATTN] = m->layers * whole->attn_matrix_elems,
        [NVL_QCLASS_MLP] = dense * 3 * whole->intermediate.count * hid,
        [NVL_QCLASS_EXPERTS] = moe * m->num_experts * 3 *
                               whole->moe_intermediate.count * hid,
        [NVL_QCLASS_ROUTER] = moe * m->num_experts * hid,
        [NVL_QCLASS_LM_HEAD] = m->tied_embeddings ? 0 : m->vocab * hid};
    double params = (double)nvl_model_param_count(m);
    for (int k = 0; k < NVL_QCLASS_COUNT; k++) {
        nvl_wdtype_t core = nvl_wdtype_core(nvl_engine_opts_gemm_dtype(
            &c->engine, (nvl_quant_class_t)k));
        double per = core == NVL_WDT_FP4 ? 0.5 : 1.0; /* bf16, fp8 1 */
        params += nvl_serve_checkpoint_params(cls[k], 0, per) - cls[k];
    }
    nvl_wdtype_t core = nvl_wdtype_core(c->engine.cost.weight_dtype);
    *per_out = core == NVL_WDT_FP4   ? 0.5
               : core == NVL_WDT_FP8 ? 1.0
                                     : 2.0;
    return params;
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
    double per, params = bench_weight_params(c, m, &whole, &per);
    /* aggregated: the replica's TP; disaggregated: the decode pool's,
     * whose KV lives longest */
    long tp = l->tp ? l->tp
              : l->decode_gpus ? (l->decode_tp ? l->decode_tp
                                               : l->decode_gpus)
                               : 0;
    nvl_serve_trtllm_bench_in_t in = {
        .checkpoint_params = params,
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
    c->engine.cost.moe_marlin = row->moe_marlin;
    c->engine.cost.moe_triton = row->moe_triton;
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
