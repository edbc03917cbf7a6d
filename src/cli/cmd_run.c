/* nvlemu run: a Qwen model served with tensor parallelism over every rank
 * of the job (TP = the MPI world size): prefill of a batch of prompts, then
 * greedy decode, in data mode (real or synthetic weights, real numerics) or
 * timing mode (no weights); reports TTFT, TPOT, throughput and where the
 * time went, as text, JSON and a Chrome trace. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "nvlemu/runtime.h"
#include "nvlemu/shard.h"
#include "run.h"

enum {
    OPT_TOPO = 1, OPT_MODEL, OPT_BATCH, OPT_PROMPT, OPT_GEN, OPT_CTX,
    OPT_DTYPE, OPT_KV, OPT_LAUNCH, OPT_ATTN, OPT_FUSION, OPT_LAYERS,
    OPT_MODE, OPT_SEED, OPT_ROUTE_SKEW, OPT_EP, OPT_ATTN_PAR, OPT_SET,
    OPT_JSON, OPT_TRACE, OPT_TRACE_STEPS, OPT_HELP
};

static const nvl_cli_opt_t run_opts[] = {
    {"topo", required_argument, OPT_TOPO, "FILE",
     "topology (default topology/gb200-nvl72.topo)"},
    {"model", required_argument, OPT_MODEL, "NAME|DIR",
     "a preset (qwen2.5-72b, qwen2.5-7b, qwen2.5-0.5b, qwen3-32b, "
     "qwen3-30b-a3b, qwen3-235b-a22b) or a Hugging Face model directory "
     "(default qwen2.5-72b)"},
    {"batch", required_argument, OPT_BATCH, "B",
     "sequences decoded together (default 1)"},
    {"prompt-len", required_argument, OPT_PROMPT, "P",
     "prompt tokens per sequence (default 1024)"},
    {"gen-len", required_argument, OPT_GEN, "G",
     "new tokens per sequence, the first from prefill (default 128)"},
    {"ctx", required_argument, OPT_CTX, "C",
     "instead of --prompt-len/--gen-len: one steady-state decode step at "
     "context C (prefill C - 1 tokens, then one step)"},
    {"dtype", required_argument, OPT_DTYPE, "bf16|fp8|fp4",
     "weight type of the projections (default bf16)"},
    {"kv-dtype", required_argument, OPT_KV, "bf16|fp8",
     "KV cache type (default bf16)"},
    {"launch", required_argument, OPT_LAUNCH, "eager|graph|persistent",
     "how the host launches kernels (default graph)"},
    {"attn", required_argument, OPT_ATTN, "fa3|fa4",
     "attention kernel (default fa4 on GPUs with FP4 units, else fa3)"},
    {"fusion", required_argument, OPT_FUSION, "none|typical",
     "which element-wise steps share kernels (default typical)"},
    {"layers", required_argument, OPT_LAYERS, "N",
     "run only the first N layers"},
    {"mode", required_argument, OPT_MODE, "data|timing",
     "data: weights and numerics (synthetic for presets); timing: none "
     "(default: data for a directory with safetensors, else timing)"},
    {"seed", required_argument, OPT_SEED, "S",
     "synthetic weights and prompts, timing mode's expert routing "
     "(default 1)"},
    {"route-skew", required_argument, OPT_ROUTE_SKEW, "S",
     "timing mode, mixture of experts: tokens pick experts Zipf-distributed "
     "with exponent S (default 0: uniform)"},
    NVL_CLI_PLACEMENT_OPTS(OPT_EP, OPT_ATTN_PAR),
    {"set", required_argument, OPT_SET, "SECTION.KEY=VALUE",
     "topology what-if, repeatable (nvlink.link_bw=100GB/s)"},
    {"json", required_argument, OPT_JSON, "FILE",
     "write the results as JSON ('-': standard output)"},
    {"trace", required_argument, OPT_TRACE, "FILE",
     "write a Chrome trace (Perfetto): one track per rank"},
    {"trace-steps", required_argument, OPT_TRACE_STEPS, "N",
     "decode steps in the trace after the prefill (default 2)"},
    {"help", no_argument, OPT_HELP, NULL, "this help"},
};
#define N_OPTS (sizeof run_opts / sizeof run_opts[0])
#define USAGE "mpirun -np TP nvlemu run [--model NAME|DIR] [--topo FILE] " \
              "[--batch B] [--prompt-len P --gen-len G | --ctx C] ..."

static nvl_status_t on_opt(int id, const char *arg, void *ctx)
{
    nvl_run_args_t *a = ctx;
    long *num = NULL, max = 1L << 30;
    const char *name = NULL;
    switch (id) {
    case OPT_TOPO: a->topo_path = arg; break;
    case OPT_MODEL: a->model = arg; break;
    case OPT_BATCH: num = &a->batch, name = "--batch", max = 1 << 20; break;
    case OPT_PROMPT: num = &a->prompt_len, name = "--prompt-len"; break;
    case OPT_GEN: num = &a->gen_len, name = "--gen-len"; break;
    case OPT_CTX: num = &a->ctx, name = "--ctx"; break;
    case OPT_LAYERS: num = &a->layers, name = "--layers", max = 100000; break;
    case OPT_SEED: num = &a->seed, name = "--seed"; break;
    case OPT_TRACE_STEPS:
        num = &a->trace_steps, name = "--trace-steps", max = 1 << 20;
        break;
    case OPT_DTYPE: return nvl_wdtype_parse("--dtype", arg, &a->dtype);
    case OPT_KV:
        if (nvl_wdtype_parse("--kv-dtype", arg, &a->kv_dtype) != NVL_OK)
            return NVL_ERR_INVALID;
        if (a->kv_dtype == NVL_WDT_FP4) {
            nvl_report("--kv-dtype: fp4 is not a KV cache type (bf16, fp8)");
            return NVL_ERR_INVALID;
        }
        return NVL_OK;
    case OPT_LAUNCH: return nvl_launch_parse("--launch", arg, &a->launch);
    case OPT_ATTN:
        a->attn_set = 1;
        return nvl_attn_parse("--attn", arg, &a->attn);
    case OPT_FUSION: return nvl_fusion_parse("--fusion", arg, &a->fusion);
    case OPT_MODE:
        if (strcmp(arg, "data") == 0 || strcmp(arg, "timing") == 0) {
            a->mode = strcmp(arg, "data") == 0 ? NVL_MODE_DATA
                                               : NVL_MODE_TIMING;
            return NVL_OK;
        }
        nvl_report("--mode: unknown value '%s' (expected data or timing)",
                   arg);
        return NVL_ERR_INVALID;
    case OPT_ROUTE_SKEW: {
        char *end;
        a->route_skew = strtod(arg, &end);
        if (end == arg || *end != '\0' || !(a->route_skew >= 0) ||
            a->route_skew > 100) {
            nvl_report("--route-skew: expected a number from 0 to 100, got "
                       "'%s'", arg);
            return NVL_ERR_INVALID;
        }
        return NVL_OK;
    }
    case OPT_EP: num = &a->ep, name = "--ep", max = 1 << 20; break;
    case OPT_ATTN_PAR:
        return nvl_cli_attn_parallel_parse(arg, &a->attn_dp);
    case OPT_SET: a->sets[a->n_sets++] = arg; break;
    case OPT_JSON: a->json = arg; break;
    case OPT_TRACE: a->trace = arg; break;
    case OPT_HELP: a->help = 1; break;
    }
    if (num != NULL) {
        *num = nvl_cli_positive(name, arg, max);
        return *num < 0 ? NVL_ERR_INVALID : NVL_OK;
    }
    return NVL_OK;
}

static nvl_status_t parse_args(int argc, char **argv, nvl_run_args_t *a)
{
    *a = (nvl_run_args_t){
        .topo_path = "topology/gb200-nvl72.topo", .model = "qwen2.5-72b",
        .batch = 1, .prompt_len = 1024, .gen_len = 128, .trace_steps = 2,
        .seed = 1, .ep = 1, .dtype = NVL_WDT_BF16, .kv_dtype = NVL_WDT_BF16,
        .fusion = NVL_FUSION_TYPICAL, .launch = NVL_LAUNCH_GRAPH, .mode = -1};
    a->sets = calloc((size_t)argc + 1, sizeof *a->sets);
    if (a->sets == NULL)
        return NVL_ERR_NOMEM;
    int first;
    nvl_status_t st = nvl_cli_parse("run", argc, argv, run_opts, N_OPTS,
                                    on_opt, a, &first);
    if (st != NVL_OK || a->help)
        return st;
    if (first != argc) {
        nvl_report("run: unexpected argument '%s' (usage: %s)", argv[first],
                   USAGE);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

static bool is_preset(const char *name)
{
    for (size_t i = 0; i < nvl_model_preset_count(); i++)
        if (strcmp(name, nvl_model_preset_name(i)) == 0)
            return true;
    return false;
}

/* Whether a model directory holds safetensors weights. */
static bool has_weights(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    if (access(p, R_OK) == 0)
        return true;
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    return access(p, R_OK) == 0;
}

/* Synthetic prompt ids, the same on every rank. */
static int32_t *prompt_ids(const nvl_run_args_t *a, uint64_t len,
                           uint32_t vocab)
{
    int32_t *ids = malloc(((size_t)a->batch * len + 1) * sizeof *ids);
    if (ids == NULL)
        return NULL;
    uint64_t x = (uint64_t)a->seed * 2654435761u + 12345u;
    for (size_t i = 0; i < (size_t)a->batch * len; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((x >> 33) % vocab);
    }
    return ids;
}

/* Runs the generation and gathers everything rank 0 reports. */
static int run(nvl_run_args_t *a, nvl_topo_t *topo,
               const nvl_model_config_t *cfg, nvl_mode_t mode,
               const char *weights_dir, FILE *trace)
{
    const nvl_runtime_t *rt = nvl_runtime();
    nvl_vclock_t clock = {0};
    nvl_comm_t *tp = NULL;
    if (nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &tp) != NVL_OK)
        return 1;
    nvl_engine_opts_t o;
    nvl_engine_opts_default(&o, topo);
    o.mode = mode;
    o.weights_dir = weights_dir;
    o.seed = (uint64_t)a->seed;
    o.route_skew = a->route_skew;
    o.place.ep = (int)a->ep;
    o.place.attn_dp = a->attn_dp;
    o.layers = (uint32_t)a->layers;
    o.cost.weight_dtype = a->dtype;
    o.cost.kv_dtype = a->kv_dtype;
    if (a->attn_set)
        o.cost.attn = a->attn;
    a->attn = o.cost.attn;
    o.cost.fusion = a->fusion;
    o.cost.launch = a->launch;
    nvl_engine_t *e = NULL;
    if (nvl_engine_create(cfg, &o, tp, &e) != NVL_OK) {
        nvl_comm_destroy(tp);
        return 1;
    }
    uint64_t plen = a->ctx ? (uint64_t)a->ctx - 1 : (uint64_t)a->prompt_len;
    uint64_t glen = a->ctx ? 2 : (uint64_t)a->gen_len;
    if (plen == 0)
        plen = 1; /* --ctx 1: a one-token prompt */
    int *lens = malloc((size_t)a->batch * sizeof *lens);
    int32_t *out = malloc((size_t)a->batch * glen * sizeof *out);
    int32_t *ids = mode == NVL_MODE_DATA ? prompt_ids(a, plen, cfg->vocab)
                                         : NULL;
    if (lens == NULL || out == NULL || (mode == NVL_MODE_DATA && !ids)) {
        nvl_report("out of memory for a batch of %ld", a->batch);
        nvl_runtime_abort(1);
    }
    for (long b = 0; b < a->batch; b++)
        lens[b] = (int)plen;
    if (trace != NULL || a->trace != NULL)
        nvl_engine_record_events(e, (int32_t)a->trace_steps + 1);
    double t0 = MPI_Wtime();
    nvl_status_t st = nvl_engine_generate(e, ids, lens, (int)a->batch,
                                          (int)glen, out, NULL);
    double wall = MPI_Wtime() - t0;
    int code = st == NVL_OK ? 0 : 1;
    if (st == NVL_OK) {
        size_t n;
        const nvl_pass_stats_t *p = nvl_engine_passes(e, &n);
        int64_t *end = malloc((n + 1) * sizeof *end);
        int64_t *end_max = malloc((n + 1) * sizeof *end_max);
        double *pw = malloc((n + 1) * sizeof *pw);
        if (!end || !end_max || !pw) {
            nvl_report("out of memory for the report");
            nvl_runtime_abort(1);
        }
        for (size_t i = 0; i < n; i++) {
            end[i] = p[i].end_ps;
            pw[i] = p[i].wall_s;
        }
        MPI_Reduce(end, end_max, (int)n, MPI_INT64_T, MPI_MAX, 0,
                   MPI_COMM_WORLD);
        nvl_run_totals_t totals;
        if (nvl_run_stats_reduce(e, MPI_COMM_WORLD, &totals) != NVL_OK)
            nvl_runtime_abort(1);
        /* the largest shard sets the memory need: rank 0 has it */
        nvl_run_result_t r = {
            .args = a, .cfg = cfg, .topo = topo, .mode = mode,
            .weights = mode == NVL_MODE_TIMING ? "none (timing mode)"
                       : weights_dir != NULL   ? weights_dir
                                               : "synthetic",
            .tp = rt->size, .layers = nvl_engine_layers(e),
            .prompt_len = plen, .gen_len = glen, .pass_end_ps = end_max,
            .pass_wall_s = pw, .n_passes = n, .totals = &totals,
            .tuner = nvl_comm_tuner(tp),
            .weight_bytes = nvl_engine_weight_bytes(e),
            .kv_bytes = nvl_engine_kv_bytes(e, (uint64_t)a->batch,
                                            plen + glen - 1),
            .wall_s = wall, .tokens = mode == NVL_MODE_DATA ? out : NULL};
        nvl_status_t wst = NVL_OK;
        if (rt->rank == 0) {
            nvl_run_report_text(&r, stdout);
            if (a->json != NULL)
                wst = nvl_run_report_json(&r, a->json);
        }
        if (a->trace != NULL &&
            nvl_run_trace_write(e, MPI_COMM_WORLD, topo, trace) != NVL_OK)
            wst = NVL_ERR_IO;
        int ok = wst == NVL_OK, every = 0;
        MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        code = every ? 0 : 1;
        nvl_run_totals_free(&totals);
        free(end);
        free(end_max);
        free(pw);
    }
    free(lens);
    free(out);
    free(ids);
    nvl_engine_free(e);
    nvl_comm_destroy(tp);
    return code;
}

int nvl_cmd_run(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    nvl_run_args_t args;
    nvl_topo_t *topo = NULL;
    nvl_model_config_t cfg;
    FILE *trace = NULL;
    int code = 1;
    nvl_runtime_capture_begin();
    nvl_status_t st = parse_args(argc, argv, &args);
    if (st == NVL_OK && !args.help)
        st = nvl_topo_load(args.topo_path, &topo);
    for (int i = 0; st == NVL_OK && !args.help && i < args.n_sets; i++)
        st = nvl_topo_set(topo, args.sets[i]);
    bool preset = !args.help && is_preset(args.model);
    if (st == NVL_OK && !args.help)
        st = preset ? nvl_model_preset(args.model, &cfg)
                    : nvl_model_config_load(args.model, &cfg);
    nvl_mode_t mode = NVL_MODE_TIMING;
    const char *weights_dir = NULL;
    if (st == NVL_OK && !args.help) {
        bool weights = !preset && has_weights(args.model);
        mode = args.mode >= 0 ? (nvl_mode_t)args.mode
               : weights      ? NVL_MODE_DATA
                              : NVL_MODE_TIMING;
        weights_dir = mode == NVL_MODE_DATA && weights ? args.model : NULL;
    }
    if (st == NVL_OK && args.trace != NULL && rt.rank == 0 &&
        (trace = fopen(args.trace, "w")) == NULL) {
        nvl_report("--trace %s: cannot open for writing", args.trace);
        st = NVL_ERR_IO;
    }
    if (nvl_runtime_capture_end(st) != NVL_OK)
        goto out;
    if (args.help) {
        if (rt.rank == 0)
            nvl_cli_help(stdout, USAGE, run_opts, N_OPTS);
        code = 0;
        goto out;
    }
    if (nvl_runtime_check_topo(topo) != NVL_OK)
        goto out;
    code = run(&args, topo, &cfg, mode, weights_dir, trace);
out:
    if (trace != NULL)
        fclose(trace);
    free(args.sets);
    nvl_topo_free(topo);
    nvl_runtime_finalize();
    return code;
}
