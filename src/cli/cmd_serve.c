/* nvlemu serve (docs/serve.md): the options, the serving configuration and
 * the workload; src/serving/ serves it (include/nvlemu/serving.h) and
 * serve_report.c writes the report, JSON, CSV and trace. */
#include <errno.h>
#include <string.h>

#include "serve_report.h"

typedef struct {
    nvl_serve_args_t a;
    nvl_model_config_t cfg;
    nvl_serve_workload_t w;
    nvl_serving_config_t serving;
    FILE *trace;
} serve_cmd_t;

static const nvl_opt_name_t on_off_names[] = {{"on", 1}, {"off", 0},
                                              {NULL, 0}};

#define AT(field) offsetof(nvl_serve_args_t, field)
#define MAX_TOKENS (1L << 30)
static const nvl_opt_t serve_opts[] = {
    NVL_CLI_OPT_TOPO(nvl_serve_args_t, NVL_CLI_DEFAULT_TOPO, false),
    {.name = "model", .kind = NVL_OPT_STRING, .offset = AT(model),
     .arg = "NAME|DIR", .def = "qwen2.5-72b",
     .doc = "a preset (`nvlemu --list model` lists them) or a Hugging Face "
            "model directory (its config.json; served in timing mode)"},
    /* the workload */
    {.name = "workload", .kind = NVL_OPT_STRING, .offset = AT(workload),
     .arg = "FILE",
     .doc = "a JSONL request trace: {\"arrival_s\": S, \"input_tokens\": "
            "N, \"output_tokens\": M[, \"prefix_id\": ID, "
            "\"prefix_tokens\": P]} a line (instead of the generator)"},
    {.name = "requests", .kind = NVL_OPT_LONG, .offset = AT(requests),
     .arg = "N", .def = "1000", .min = 1, .max = 1 << 24,
     .doc = "generator: requests"},
    {.name = "rate", .kind = NVL_OPT_DOUBLE, .offset = AT(rate),
     .arg = "R", .def = "0", .min_d = 0, .max_d = 1e9,
     .doc = "generator: Poisson arrivals at R requests/s (0 with no "
            "--concurrency: every request at time 0, offline)"},
    {.name = "concurrency", .kind = NVL_OPT_LONG, .offset = AT(concurrency),
     .arg = "N", .def = "0", .min = 0, .max = 1 << 24,
     .doc = "generator: closed loop, N requests in flight (each finishing "
            "one lets the next arrive)"},
    {.name = "frontend-ms", .kind = NVL_OPT_DOUBLE, .offset = AT(frontend_ms),
     .arg = "T", .def = "0", .min_d = 0, .max_d = 1e6,
     .doc = "the front end (vLLM's API server, one asyncio loop) takes T ms "
            "per request, shared round-robin by the requests it holds; a "
            "request reaches the scheduler when its share is done (0: on "
            "arrival; open arrivals only)"},
    {.name = "stream-us", .kind = NVL_OPT_DOUBLE, .offset = AT(stream_us),
     .arg = "T", .def = "0", .min_d = 0, .max_d = 1e6,
     .doc = "the output path (vLLM's API server streaming each token) "
            "takes T us per output token, one token after another behind "
            "each replica's engine; a token reaches the client when its "
            "turn is done (0: at its step's end)"},
    {.name = "isl", .kind = NVL_OPT_CUSTOM, .offset = AT(isl),
     .arg = "N|uniform:LO:HI|normal:M:SD|lognormal:MED:S", .def = "1024",
     .parse = nvl_serve_len_parse, .doc = "generator: input tokens"},
    {.name = "osl", .kind = NVL_OPT_CUSTOM, .offset = AT(osl),
     .arg = "N|uniform:LO:HI|normal:M:SD|lognormal:MED:S", .def = "128",
     .parse = nvl_serve_len_parse, .doc = "generator: output tokens"},
    {.name = "prefix-groups", .kind = NVL_OPT_LONG,
     .offset = AT(prefix_groups), .arg = "G", .def = "0", .min = 0,
     .max = 1 << 24,
     .doc = "generator: each request starts with one of G shared prefixes "
            "(0: none)"},
    {.name = "prefix-len", .kind = NVL_OPT_LONG, .offset = AT(prefix_len),
     .arg = "P", .def = "0", .min = 0, .max = MAX_TOKENS,
     .doc = "generator: tokens of each shared prefix"},
    {.name = "seed", .kind = NVL_OPT_LONG, .offset = AT(seed), .arg = "S",
     .def = "1", .min = 1, .max = MAX_TOKENS,
     .doc = "generator and timing mode's expert routing"},
    /* the policy */
    {.name = "scheduler", .kind = NVL_OPT_ENUM, .offset = AT(scheduler),
     .def = "vllm", .family = &nvl_serve_sched_family,
     .doc = "whose scheduler and defaults: vLLM V1 (KV blocks on demand, "
            "preemption, chunked prefill) or TensorRT-LLM as trtllm-bench "
            "runs it (GUARANTEED_NO_EVICT, whole prompts, trtllm-bench's "
            "limits)"},
    {.name = "max-batch", .kind = NVL_OPT_LONG, .offset = AT(max_batch),
     .arg = "N", .def = "0", .min = 0, .max = 1 << 20,
     .doc = "sequences in one step (0: the scheduler's: vllm 1024, "
            "max_num_seqs; trtllm trtllm-bench's max_batch_size rule)"},
    {.name = "max-tokens-per-step", .kind = NVL_OPT_LONG,
     .offset = AT(max_tokens), .arg = "N", .def = "0", .min = 0,
     .max = MAX_TOKENS,
     .doc = "tokens in one step, prefill chunks and decodes together (0: "
            "the scheduler's: vllm 8192, max_num_batched_tokens; trtllm "
            "trtllm-bench's max_num_tokens rule)"},
    {.name = "chunk", .kind = NVL_OPT_LONG, .offset = AT(chunk),
     .arg = "N", .def = "0", .min = 0, .max = MAX_TOKENS,
     .doc = "a prefill's tokens in one step (0: vllm up to the step's "
            "budget, long_prefill_token_threshold; trtllm whole prompts, "
            "no chunked context)"},
    {.name = "block", .kind = NVL_OPT_LONG, .offset = AT(block),
     .arg = "N", .def = "0", .min = 0, .max = 1 << 16,
     .doc = "KV positions per cache block (0: vllm 16, block_size; "
            "trtllm 32, tokens_per_block)"},
    {.name = "mem-fraction", .kind = NVL_OPT_DOUBLE,
     .offset = AT(mem_fraction), .arg = "F", .def = "0", .min_d = 0,
     .max_d = 1,
     .doc = "memory for weights, activations and KV cache (0: vllm 0.90 "
            "of HBM, gpu_memory_utilization; trtllm 0.90 of what the "
            "weights and activations leave, free_gpu_memory_fraction)"},
    {.name = "preempt", .kind = NVL_OPT_ENUM, .offset = AT(preempt),
     .def = "recompute", .family = &nvl_serve_preempt_family,
     .doc = "when the KV cache is full: drop the last request's KV and "
            "prefill it again, or swap it to the host's memory over "
            "NVLink-C2C"},
    {.name = "prefix-caching", .kind = NVL_OPT_ENUM,
     .offset = AT(prefix_caching), .arg = "on|off", .def = "on",
     .names = on_off_names,
     .doc = "requests sharing a prefix id reuse its KV blocks (evicted "
            "ones kept in host memory when there is one)"},
    /* the layout */
    {.name = "tp", .kind = NVL_OPT_LONG, .offset = AT(layout.tp), .arg = "T",
     .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS,
     .doc = "aggregated: ranks per replica (0: all; the job runs "
            "ranks / T replicas)"},
    {.name = "replicas", .kind = NVL_OPT_LONG, .offset = AT(layout.replicas),
     .arg = "N", .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS,
     .doc = "aggregated: the system's replicas of --tp GPUs each, requests "
            "round-robin over them, of which the job emulates ranks / T "
            "(the others serve the same share; 0: ranks / T)"},
    {.name = "prefill-gpus", .kind = NVL_OPT_LONG,
     .offset = AT(layout.prefill_gpus), .arg = "N", .def = "0", .min = 0,
     .max = NVL_TOPO_MAX_GPUS,
     .doc = "disaggregated: the first N ranks prefill (with "
            "--decode-gpus; N + M = the ranks)"},
    {.name = "decode-gpus", .kind = NVL_OPT_LONG,
     .offset = AT(layout.decode_gpus), .arg = "M", .def = "0", .min = 0,
     .max = NVL_TOPO_MAX_GPUS,
     .doc = "disaggregated: the last M ranks decode"},
    {.name = "prefill-tp", .kind = NVL_OPT_LONG,
     .offset = AT(layout.prefill_tp), .arg = "T", .def = "0", .min = 0,
     .max = NVL_TOPO_MAX_GPUS,
     .doc = "disaggregated: ranks per prefill replica (0: all N)"},
    {.name = "decode-tp", .kind = NVL_OPT_LONG, .offset = AT(layout.decode_tp),
     .arg = "T", .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS,
     .doc = "disaggregated: ranks per decode replica (0: all M)"},
    /* the model and its kernels, as run */
    NVL_CLI_MODEL_OPTS(nvl_serve_args_t, engine),
    NVL_CLI_MODEL_OPT_ROUTE_SKEW(nvl_serve_args_t, engine),
    {.name = "rope-scaling", .kind = NVL_OPT_CUSTOM, .offset = AT(rope_yarn),
     .arg = "none|yarn:F", .def = "none",
     .parse = nvl_model_rope_scaling_parse,
     .doc = "YaRN rope scaling (as run)"},
    /* results */
    {.name = "slo-ttft", .kind = NVL_OPT_QTY, .offset = AT(slo_ttft_ms),
     .arg = "TIME", .def = "0", .min_d = 0, .max_d = 1e12,
     .qty = NVL_QTY_TIME, .unit = "ms",
     .doc = "goodput: a request meets its SLO with TTFT <= TIME (ms "
            "without a unit: 500, 500ms, 0.5s; 0: no bound)"},
    {.name = "slo-tpot", .kind = NVL_OPT_QTY, .offset = AT(slo_tpot_ms),
     .arg = "TIME", .def = "0", .min_d = 0, .max_d = 1e12,
     .qty = NVL_QTY_TIME, .unit = "ms",
     .doc = "goodput: and TPOT <= TIME (ms without a unit; 0: no bound)"},
    {.name = "gpu-hour-cost", .kind = NVL_OPT_DOUBLE,
     .offset = AT(gpu_hour_cost), .arg = "X", .def = "0", .min_d = 0,
     .max_d = 1e9, .doc = "price of one GPU hour: cost per million tokens"},
    NVL_CLI_OPT_SET(nvl_serve_args_t),
    NVL_CLI_OPT_RANK_PLAYS(nvl_serve_args_t),
    NVL_CLI_OPT_SET_FILE(nvl_serve_args_t),
    NVL_CLI_OPT_JSON(nvl_serve_args_t,
                     "write the summary as JSON ('-': standard output)"),
    {.name = "csv", .kind = NVL_OPT_STRING, .offset = AT(csv), .arg = "FILE",
     .doc = "write one row per request (latencies, cached tokens, "
            "preemptions)"},
    {.name = "trace", .kind = NVL_OPT_STRING, .offset = AT(trace),
     .arg = "FILE",
     .doc = "write a Chrome trace (Perfetto): each replica's steps and "
            "each request's queued / prefill / decode spans"},
    NVL_CLI_OPT_POINTS(nvl_serve_args_t),
    NVL_CLI_OPT_HELP(nvl_serve_args_t),
};
#undef AT
#define USAGE "mpirun -np N nvlemu serve [--model NAME|DIR] [--workload " \
              "FILE | --requests N --rate R|--concurrency C --isl L "      \
              "--osl L] [--tp T | --prefill-gpus N --decode-gpus M] ..."

/* The serving configuration: the engine's options (the model-options
 * block's, in timing mode), the layout and the policy as asked (0s: the
 * scheduler's defaults, resolved later).  Reports and fails on options
 * the engine refuses. */
static nvl_status_t serving_config(const nvl_serve_args_t *a,
                                   const nvl_topo_t *topo,
                                   nvl_serving_config_t *c)
{
    if (nvl_cli_model_opts_engine(&a->engine, topo, &c->engine) != NVL_OK)
        return NVL_ERR_INVALID;
    c->engine.mode = NVL_MODE_TIMING;
    c->engine.seed = (uint64_t)a->seed;
    c->layout = a->layout;
    c->layout.pp = c->engine.pp; /* a replica: TP x PP ranks */
    c->policy = (nvl_serve_policy_t){
        .sched = (nvl_serve_sched_t)a->scheduler,
        .max_batch = (uint32_t)a->max_batch,
        .max_tokens_per_step = (uint32_t)a->max_tokens,
        .chunk = (uint32_t)a->chunk, .block_tokens = (uint32_t)a->block,
        .preempt = (nvl_preempt_t)a->preempt,
        .prefix_caching = a->prefix_caching != 0,
        .in_flight = c->engine.pp > 1 ? c->engine.pp : 1,
        .stream_token_ps = nvl_ps_from_s(a->stream_us / 1e6)};
    c->mem_fraction = a->mem_fraction;
    c->keep_steps = a->trace != NULL;
    return NVL_OK;
}

/* The workload: the trace file's, or the generator's. */
static nvl_status_t load_workload(const nvl_serve_args_t *a,
                                  nvl_serve_workload_t *w)
{
    if (a->workload != NULL)
        return nvl_serve_trace_load(a->workload, w);
    nvl_serve_gen_t g = {.requests = (uint32_t)a->requests,
                         .rate_per_s = a->rate,
                         .concurrency = (uint32_t)a->concurrency,
                         .isl = a->isl, .osl = a->osl,
                         .prefix_groups = (uint32_t)a->prefix_groups,
                         .prefix_tokens = (uint32_t)a->prefix_len,
                         .seed = (uint64_t)a->seed};
    return nvl_serve_generate(&g, w);
}

/* The front end's hold on each request (--frontend-ms); --stream-us's
 * layouts checked. */
static nvl_status_t frontend(const nvl_serve_args_t *a,
                             nvl_serve_workload_t *w)
{
    if (a->frontend_ms > 0 && a->engine.attn_dp) {
        nvl_report("--frontend-ms with --attn-parallel dp: the attention-DP "
                   "ranks' loop (src/serve/adp.c) takes requests at arrival; "
                   "leave --frontend-ms at 0 there");
        return NVL_ERR_INVALID;
    }
    if (a->stream_us > 0 &&
        (a->engine.attn_dp || a->layout.prefill_gpus > 0)) {
        nvl_report("--stream-us with %s: the output path is modelled behind "
                   "one replica's own loop (src/serve/run.c), not the "
                   "attention-DP ranks' or a disaggregated prefill pool's; "
                   "leave --stream-us at 0 there",
                   a->engine.attn_dp ? "--attn-parallel dp"
                                     : "--prefill-gpus");
        return NVL_ERR_INVALID;
    }
    return nvl_serve_frontend(w, a->frontend_ms / 1e3);
}

/* Rank 0: the outputs can be written. */
static nvl_status_t open_outputs(serve_cmd_t *c)
{
    const nvl_serve_args_t *a = &c->a;
    if (nvl_cli_check_writable("--json", a->common.json) != NVL_OK ||
        nvl_cli_check_writable("--csv", a->csv) != NVL_OK)
        return NVL_ERR_IO;
    if (a->trace != NULL && (c->trace = fopen(a->trace, "w")) == NULL) {
        nvl_report("--trace %s: cannot open for writing: %s", a->trace,
                   strerror(errno));
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

static nvl_status_t prepare(void *args, const nvl_cli_ctx_t *ctx)
{
    serve_cmd_t *c = args;
    nvl_serve_args_t *a = &c->a;
    if (nvl_cli_model_opts_resolve(&a->engine, a->model) != NVL_OK ||
        serving_config(a, ctx->topo, &c->serving) != NVL_OK)
        return NVL_ERR_INVALID;
    if (a->rate > 0 && a->concurrency > 0) {
        nvl_report("--rate (open loop) and --concurrency (closed loop) "
                   "exclude each other");
        return NVL_ERR_INVALID;
    }
    if ((a->prefix_groups > 0) != (a->prefix_len > 0)) {
        nvl_report("--prefix-groups and --prefix-len go together");
        return NVL_ERR_INVALID;
    }
    nvl_serving_layout_t L;
    if (nvl_serving_layout_plan(&c->serving.layout, a->concurrency > 0,
                                ctx->rt->size, ctx->rt->rank,
                                &L) != NVL_OK)
        return NVL_ERR_INVALID;
    bool preset = nvl_model_is_preset(a->model);
    nvl_status_t st = preset ? nvl_model_preset(a->model, &c->cfg)
                             : nvl_model_config_load(a->model, &c->cfg);
    if (st != NVL_OK)
        return st;
    if (a->rope_yarn > 0 &&
        nvl_model_set_yarn(&c->cfg, a->rope_yarn) != NVL_OK)
        return NVL_ERR_INVALID;
    if ((st = load_workload(a, &c->w)) != NVL_OK ||
        (st = frontend(a, &c->w)) != NVL_OK)
        return st;
    st = nvl_serving_policy_resolve(&c->serving, &c->cfg, &c->w,
                                    ctx->rt->size);
    if (st != NVL_OK)
        return st;
    return ctx->rt->rank == 0 ? open_outputs(c) : NVL_OK;
}

/* Serves the workload; rank 0 writes the report and the files asked
 * for. */
static nvl_status_t body(void *args, const nvl_cli_ctx_t *ctx)
{
    serve_cmd_t *c = args;
    const nvl_serve_args_t *a = &c->a;
    nvl_serving_result_t res;
    nvl_status_t st = nvl_serving_run(&c->serving, &c->cfg, ctx->topo,
                                      &c->w, &res);
    if (st != NVL_OK)
        return st;
    if (ctx->rt->rank != 0) {
        nvl_serving_result_free(&res);
        return NVL_OK;
    }
    nvl_serve_report_t r = {.args = a, .serving = &c->serving,
                            .model = &c->cfg, .topo = ctx->topo,
                            .res = &res, .validation = ctx->validation};
    nvl_serve_summarize(&res.w, res.out, ctx->rt->size, a->slo_ttft_ms,
                        a->slo_tpot_ms, a->gpu_hour_cost, &r.sum);
    bool json_out = a->common.json != NULL &&
                    strcmp(a->common.json, "-") == 0;
    nvl_serve_report_text(&r, json_out ? stderr : stdout);
    if (a->common.json != NULL)
        st = nvl_serve_report_json(&r, a->common.json);
    if (st == NVL_OK && a->csv != NULL)
        st = nvl_serve_report_csv(&r, a->csv);
    if (st == NVL_OK && c->trace != NULL)
        st = nvl_serve_trace_write(&r, c->trace);
    nvl_serving_result_free(&res);
    return st;
}

static void cleanup(void *args)
{
    serve_cmd_t *c = args;
    if (c->trace != NULL)
        fclose(c->trace);
    nvl_serve_workload_free(&c->w);
}

const nvl_cli_command_t nvl_cli_serve_command = {
    .args_size = sizeof(serve_cmd_t),
    .opts = NVL_CLI_OPTS("serve", serve_opts, USAGE, 0),
    .common_offset = offsetof(serve_cmd_t, a.common),
    .check_ranks = true,
    .world_is_job = true,
    .points = true,
    .provenance = true,
    .prepare = prepare,
    .body = body,
    .cleanup = cleanup,
};

int nvl_cmd_serve(int argc, char **argv)
{
    serve_cmd_t cmd = {0};
    return nvl_cli_command_run(&nvl_cli_serve_command, &cmd, argc, argv);
}
