/* nvlemu run's JSON report with stable keys (docs/cost-model.md, "The
 * report", lists them): a statistic's key is its row's in run_stats.c;
 * no MPI here. */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "nvlemu/json.h"
#include "run_report.h"

#define KEY(id) nvl_run_stat_key(id)

/* Row id's range over the ranks as KEY_min and KEY_max. */
static void set_range(json_t *o, nvl_run_stat_id_t id, double lo, double hi)
{
    char k[64];
    snprintf(k, sizeof k, "%s_min", KEY(id));
    json_object_set_new(o, k, json_real(lo));
    snprintf(k, sizeof k, "%s_max", KEY(id));
    json_object_set_new(o, k, json_real(hi));
}

static json_t *parts_json(const double *parts, double total, double scale,
                          const char *unit)
{
    json_t *o = json_object();
    char k[64];
    for (int p = 0; p < NVL_PART_COUNT; p++) {
        snprintf(k, sizeof k, "%s_%s", nvl_part_name((nvl_part_t)p), unit);
        json_object_set_new(o, k, json_real(parts[p] * scale));
        snprintf(k, sizeof k, "%s_share", nvl_part_name((nvl_part_t)p));
        json_object_set_new(o, k, json_real(total > 0 ? parts[p] / total : 0));
    }
    double comp = parts[NVL_PART_GEMM] + parts[NVL_PART_ATTN] +
                  parts[NVL_PART_OTHER];
    snprintf(k, sizeof k, "total_%s", unit);
    json_object_set_new(o, k, json_real(total * scale));
    snprintf(k, sizeof k, "compute_%s", unit);
    json_object_set_new(o, k, json_real(comp * scale));
    snprintf(k, sizeof k, "communication_%s", unit);
    json_object_set_new(o, k, json_real(parts[NVL_PART_COLL] * scale));
    snprintf(k, sizeof k, "idle_%s", unit);
    json_object_set_new(o, k, json_real((parts[NVL_PART_LAUNCH] +
                                         parts[NVL_PART_WAIT] +
                                         parts[NVL_PART_C2C]) * scale));
    return o;
}

/* null for a dense model */
static json_t *moe_json(const nvl_run_result_t *r, const nvl_run_derived_t *d)
{
    const nvl_run_args_t *a = r->args;
    if (r->cfg->num_experts == 0)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "experts", json_integer(r->cfg->num_experts));
    json_object_set_new(o, "top_k", json_integer(r->cfg->top_k));
    json_object_set_new(o, "ep", json_integer(a->engine.ep));
    json_object_set_new(o, "expert_tp", json_integer(r->pipe.tp / a->engine.ep));
    json_object_set_new(o, "attn_parallel", json_string(nvl_family_name(
                            &nvl_attn_parallel_family, a->engine.attn_dp)));
    set_range(o, NVL_RS_EXPERTS, d->experts_min, d->experts_max);
    json_object_set_new(o, KEY(NVL_RS_MOE_LAYERS),
                        json_real(STAT(NVL_RS_MOE_LAYERS, 0)));
    json_object_set_new(o, KEY(NVL_RS_DISPATCH_MS), json_real(d->dispatch_ms));
    json_object_set_new(o, KEY(NVL_RS_DISPATCH_BYTES),
                        json_real(d->dispatch_bytes));
    json_object_set_new(o, KEY(NVL_RS_COMBINE_MS), json_real(d->combine_ms));
    json_object_set_new(o, KEY(NVL_RS_COMBINE_BYTES),
                        json_real(d->combine_bytes));
    json_t *impls = json_object();
    for (int i = 0; i < 2 && (a->engine.ep > 1 || a->engine.attn_dp); i++)
        json_object_set_new(impls, nvl_family_name(&nvl_engine_a2a_family, i),
                            d->a2a_dispatch_ms[i] < 0
                                ? json_null()
                                : json_pack("{s:f, s:f}",
                                            KEY(NVL_RS_DISPATCH_ALT_MS),
                                            d->a2a_dispatch_ms[i],
                                            KEY(NVL_RS_COMBINE_ALT_MS),
                                            d->a2a_combine_ms[i]));
    json_object_set_new(o, KEY(NVL_RS_A2A_ALT_USABLE), impls);
    json_object_set_new(o, KEY(NVL_RS_EXPERT_PAIRS_MAX),
                        json_real(d->pairs_max));
    json_object_set_new(o, KEY(NVL_RS_EXPERT_PAIRS_MEAN),
                        json_real(d->pairs_mean));
    json_object_set_new(o, "imbalance",
                        json_real(d->pairs_mean > 0
                                      ? d->pairs_max / d->pairs_mean : 1.0));
    json_object_set_new(o, KEY(NVL_RS_COMBINE_WAIT_MS),
                        json_real(d->wait_ms_step));
    json_object_set_new(o, "most_loaded_rank", json_integer(d->most_loaded));
    json_object_set_new(o, KEY(NVL_RS_EXPERT_PAIRS),
                        json_real(d->most_loaded_pairs));
    /* per MoE layer, per decode step, the mean rank's: the layer table */
    json_t *layers = json_array();
    double steps = d->steps ? (double)d->steps : 1;
    for (uint32_t i = 0; i < r->layers; i++) {
        if (!nvl_model_layer_is_moe(r->cfg, i))
            continue;
        json_t *l = json_pack("{s:i}", "layer", (int)i);
        for (size_t k = 0; k < nvl_run_n_layer_stats; k++)
            json_object_set_new(l, nvl_run_layer_stats[k].key,
                                json_real(nvl_run_layer_stat(r->totals, i, k) *
                                          nvl_run_layer_stats[k].scale /
                                          steps));
        json_array_append_new(layers, l);
    }
    json_object_set_new(o, "per_layer", layers);
    return o;
}

/* Writes root (and releases it) to path ('-': standard output). */
static nvl_status_t write_json(json_t *root, const char *path)
{
    int rc = strcmp(path, "-") == 0
                 ? nvl_json_dumpf(root, stdout, JSON_INDENT(2))
                 : nvl_json_dump_file(root, path, JSON_INDENT(2));
    if (strcmp(path, "-") == 0)
        fputc('\n', stdout);
    json_decref(root);
    if (rc != 0) {
        nvl_report("--json %s: cannot write: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

/* --kv-host / --weights-host as given: "auto" or the share. */
static json_t *host_share_json(double v)
{
    return v == NVL_HOST_AUTO ? json_string("auto") : json_real(v);
}

/* Every option the run was given, and its topology and NCCL settings. */
static json_t *inputs_json(const nvl_run_result_t *r)
{
    const nvl_run_args_t *a = r->args;
    json_t *in = json_object(), *sets = json_array();
    for (int i = 0; i < a->common.sets.n; i++)
        json_array_append_new(sets, json_string(a->common.sets.items[i]));
    json_object_set_new(in, "model", json_string(r->cfg->name));
    json_object_set_new(in, "topology", json_string(a->common.topo));
    json_object_set_new(in, "system", json_string(r->topo->name));
    json_object_set_new(in, "set", sets);
    json_object_set_new(in, "tp", json_integer(r->tp / r->pipe.stages));
    if (r->pipe.stages > 1)
        json_object_set_new(in, "pp", json_integer(r->pipe.stages));
    json_object_set_new(in, "batch", json_integer(a->batch));
    json_object_set_new(in, "prompt_len", json_integer((json_int_t)r->prompt_len));
    json_object_set_new(in, "gen_len", json_integer((json_int_t)r->gen_len));
    json_object_set_new(in, "ctx", a->ctx ? json_integer(a->ctx) : json_null());
    json_object_set_new(in, "layers", json_integer(r->layers));
    json_object_set_new(in, "dtype", json_string(nvl_wdtype_name(a->engine.dtype)));
    json_object_set_new(in, "kv_dtype", json_string(nvl_wdtype_name(a->engine.kv_dtype)));
    json_object_set_new(in, "attn", json_string(nvl_attn_name(r->engine->cost.attn)));
    json_object_set_new(in, "stack", json_string(nvl_stack_name(a->engine.stack)));
    json_object_set_new(in, "overlap",
                        json_string(nvl_overlap_name(a->engine.overlap)));
    json_object_set_new(
        in, "a2a", json_string(nvl_family_name(&nvl_engine_a2a_family, a->engine.a2a_onesided)));
    if (a->engine.attn_dp) /* the exchange auto resolves to (moe_ep.c) */
        json_object_set_new(
            in, "ep_comm",
            json_string(nvl_family_name(
                &nvl_engine_ep_comm_family,
                a->engine.ep_comm == NVL_EP_COMM_ALLTOALL
                    ? NVL_EP_COMM_ALLTOALL
                    : NVL_EP_COMM_ALLGATHER)));
    json_object_set_new(in, "launch", json_string(nvl_launch_name(a->engine.launch)));
    if (a->engine.allreduce != NVL_AR_NCCL || a->engine.fuse_ar_norm) { /* NCCL's: as before */
        json_object_set_new(in, "allreduce", json_string(nvl_ar_impl_name(
                                                 (nvl_ar_impl_t)a->engine.allreduce)));
        json_object_set_new(in, "fuse_allreduce_norm",
                            json_boolean(a->engine.fuse_ar_norm));
    }
    json_object_set_new(in, "mode", json_string(r->mode == NVL_MODE_DATA
                                                    ? "data" : "timing"));
    json_object_set_new(in, "weights", json_string(r->weights));
    json_object_set_new(in, "seed", json_integer(a->seed));
    json_object_set_new(in, "route_skew", json_real(a->engine.route_skew));
    json_object_set_new(in, "ep", json_integer(a->engine.ep));
    json_object_set_new(in, "attn_parallel", json_string(nvl_family_name(
                            &nvl_attn_parallel_family, a->engine.attn_dp)));
    const char *algo = r->tuner->algo_env, *proto = r->tuner->proto_env;
    json_object_set_new(in, "nccl_algo", *algo ? json_string(algo) : json_null());
    json_object_set_new(in, "nccl_proto", *proto ? json_string(proto) : json_null());

    if (r->topo->die_view) { /* absent in GPU mode: its reports unchanged */
        json_object_set_new(in, "rank_plays", json_string("die"));
        json_object_set_new(in, "gpus", json_integer(r->tp /
                                                     (int)r->topo->gpu.dies));
    }
    json_object_set_new(in, "kv_host", host_share_json(a->engine.kv_host));
    json_object_set_new(in, "weights_host", host_share_json(a->engine.weights_host));
    return in;
}

static json_t *memory_json(const nvl_run_result_t *r, const nvl_run_derived_t *d)
{
    const nvl_mem_plan_t *m = r->mem;
    json_t *o = json_object();
    json_object_set_new(o, "weights_gb", json_real(m->weights_bytes / 1e9));
    json_object_set_new(o, "kv_cache_gb", json_real(m->kv_bytes / 1e9));
    json_object_set_new(o, "activations_gb", json_real(m->act_bytes / 1e9));
    json_object_set_new(o, "reserve_gb", json_real(m->reserve_bytes / 1e9));
    json_object_set_new(o, "staging_gb", json_real(m->staging_bytes / 1e9));
    json_object_set_new(o, "hbm_need_gb", json_real(m->hbm_need_bytes / 1e9));
    json_object_set_new(o, "hbm_gb", json_real(m->hbm_bytes / 1e9));
    json_object_set_new(o, "kv_host_share", json_real(m->kv_host_share));
    json_object_set_new(o, "weights_host_share",
                        json_real(m->weights_host_share));
    json_object_set_new(o, "kv_host_gb",
                        json_real(m->kv_host_share * m->kv_bytes / 1e9));
    json_object_set_new(o, "weights_host_gb",
                        json_real(m->weights_host_share *
                                  m->layer_weights_bytes / 1e9));
    json_object_set_new(o, "host_gb", json_real(m->host_bytes / 1e9));
    json_object_set_new(o, "fits", json_boolean(m->fits));
    if (d != NULL) { /* the run's C2C traffic (none when it did not run) */
        json_object_set_new(o, KEY(NVL_RS_C2C_H2D_BYTES),
                            json_real(d->c2c_bytes));
        json_object_set_new(o, KEY(NVL_RS_C2C_H2D_MS), json_real(d->c2c_ms));
        json_object_set_new(o, "c2c_exposed_ms_per_step",
                            json_real(d->c2c_exposed_ms));
        json_object_set_new(o, "c2c_utilisation",
                            json_real(d->c2c_utilisation));
    }
    return o;
}

/* The slowest (j = 0) or fastest (1) rank's decode step. */
static json_t *rank_json(const nvl_run_derived_t *d, int j, int rank)
{
    return json_pack("{s:i, s:f, s:f}", "rank", rank,
                     KEY(NVL_RS_DECODE_BUSY_MS), d->busy_ms[j],
                     KEY(NVL_RS_DECODE_IDLE_MS), d->idle_ms[j]);
}

/* Data mode: every sequence's new tokens. */
static json_t *tokens_json(const nvl_run_result_t *r)
{
    json_t *toks = json_array();
    for (long b = 0; b < r->args->batch; b++) {
        json_t *row = json_array();
        for (uint64_t s = 0; s < r->gen_len; s++)
            json_array_append_new(row, json_integer(
                r->tokens[(uint64_t)b * r->gen_len + s]));
        json_array_append_new(toks, row);
    }
    return toks;
}

nvl_status_t nvl_run_report_json(const nvl_run_result_t *r, const char *path)
{
    nvl_run_derived_t d;
    nvl_run_derive(r, &d);
    const nvl_run_args_t *a = r->args;
    json_t *root = json_object(), *steps = json_array();
    for (size_t i = 1; i < r->n_passes; i++)
        json_array_append_new(steps, json_real(MS((double)(
                                         r->pass_end_ps[i] - r->pass_end_ps[i - 1]))));
    json_object_set_new(root, "inputs", inputs_json(r));
    json_t *gemms = nvl_run_gemm_json(r, &d);
    if (gemms != NULL)
        json_object_set_new(root, "gemm_weights", gemms);
    json_object_set_new(root, "ttft_ms", json_real(d.ttft_ms));
    json_object_set_new(root, "tpot_ms", d.steps ? json_real(d.tpot_ms) : json_null());
    json_object_set_new(root, "tpot_ms_steps", steps);
    json_object_set_new(root, "e2e_ms", json_real(d.e2e_ms));
    json_object_set_new(root, "tokens_per_s", json_real(d.tokens_per_s));
    json_object_set_new(root, "tokens_per_s_per_gpu", json_real(d.tokens_per_s_per_gpu));
    json_object_set_new(root, "tokens_per_s_rack", json_real(d.tokens_per_s_rack));
    json_object_set_new(root, "replicas_per_system", json_integer(d.replicas));
    if (r->replicas > 1) /* --tp: the job's copies, the figures the first's */
        json_object_set_new(root, "job_replicas", json_pack(
            "{s:i, s:f, s:f}", "count", r->replicas, "tokens_per_s",
            d.tokens_per_s * r->replicas, "pass_end_spread_us",
            (double)r->replica_spread_ps / 1e6));
    json_object_set_new(root, KEY(NVL_RS_DECODE_FLOPS),
                        json_real(d.decode_tflops_per_gpu));
    json_object_set_new(root, KEY(NVL_RS_DECODE_HBM_BYTES),
                        json_real(d.decode_hbm_tb_per_s));
    json_object_set_new(root, KEY(NVL_RS_DECODE_MS),
                        parts_json(d.dec, d.dec_total, 1.0, "ms"));
    double lt = 0;
    for (int p = 0; p < NVL_PART_COUNT; p++)
        lt += d.dec_layer[p];
    json_object_set_new(root, KEY(NVL_RS_DECODE_LAYER_MS),
                        parts_json(d.dec_layer, lt, 1e3, "us"));
    json_object_set_new(root, KEY(NVL_RS_PREFILL_MS),
                        parts_json(d.pre, d.pre_total, 1.0, "ms"));
    json_object_set_new(root, "slowest_rank", rank_json(&d, 0, d.slowest));
    json_object_set_new(root, "fastest_rank", rank_json(&d, 1, d.fastest));
    json_t *shards = json_object();
    set_range(shards, NVL_RS_Q_HEADS, d.q_min, d.q_max);
    set_range(shards, NVL_RS_INTERMEDIATE, d.i_min, d.i_max);
    set_range(shards, NVL_RS_VOCAB, d.v_min, d.v_max);
    json_object_set_new(shards, KEY(NVL_RS_ATTN_IDLE),
                        json_integer(d.attn_idle_ranks));
    json_object_set_new(root, "shards", shards);
    json_object_set_new(root, "memory_per_gpu", memory_json(r, &d));
    json_object_set_new(root, "emulation",
                        json_pack("{s:f, s:f, s:f}", "wall_s", r->wall_s,
                                  "wall_s_per_decode_step", d.wall_per_step_s,
                                  KEY(NVL_RS_PEAK_RSS_BYTES),
                                  d.rss_max / 1e6));
    json_object_set_new(root, "experts", moe_json(r, &d));
    json_t *pipe = nvl_run_pipe_json(r, &d);
    if (pipe != NULL)
        json_object_set_new(root, "pipeline", pipe);
    nvl_cli_queries_t qs;
    nvl_run_queries(r, &d, &qs);
    json_object_set_new(root, "validation",
                        nvl_validation_json(r->validation, qs.q, qs.n));
    json_object_set_new(root, "overlap",
                        json_pack("{s:s, s:f, s:f, s:f, s:f}", "mode",
                                  nvl_overlap_name(a->engine.overlap),
                                  KEY(NVL_RS_OVERLAP_COMM_MS), d.ovl_comm_ms,
                                  KEY(NVL_RS_OVERLAP_HIDDEN_MS),
                                  d.ovl_hidden_ms,
                                  "exposed_ms_per_step",
                                  d.ovl_comm_ms - d.ovl_hidden_ms,
                                  KEY(NVL_RS_PREFILL_HIDDEN_MS),
                                  d.ovl_prefill_hidden_ms));
    if (r->tokens != NULL)
        json_object_set_new(root, "new_tokens", tokens_json(r));
    return write_json(root, path);
}

nvl_status_t nvl_run_report_unfit_json(const nvl_run_result_t *r,
                                       const char *path)
{
    json_t *root = json_object();
    json_object_set_new(root, "inputs", inputs_json(r));
    json_object_set_new(root, "memory_per_gpu", memory_json(r, NULL));
    json_object_set_new(root, "error", json_string("does not fit"));
    return write_json(root, path);
}
