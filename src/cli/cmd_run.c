/* nvlemu run: a Qwen or Llama model served with tensor parallelism over every rank
 * of the job (TP = the MPI world size): prefill of a batch of prompts, then
 * greedy decode, in data mode (real or synthetic weights, real numerics) or
 * timing mode (no weights); reports TTFT, TPOT, throughput and where the
 * time went, as text, JSON and a Chrome trace. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "nvlemu/runtime.h"
#include "nvlemu/shard.h"
#include "run.h"

/* What the command holds besides its options (the options first: the
 * table's offsets are nvl_run_args_t's). */
typedef struct {
    nvl_run_args_t a;
    nvl_engine_opts_t engine; /* made of a.engine by prepare */
    nvl_model_config_t cfg;
    nvl_mode_t mode;
    const char *weights_dir; /* data mode with a checkpoint */
    FILE *trace;             /* --trace, opened on rank 0 */
    MPI_Comm replica;        /* this rank's replica's ranks (--tp) */
    int replica_index, replicas;
} run_cmd_t;

static const nvl_opt_name_t mode_names[] = {
    {"auto", -1}, {"data", NVL_MODE_DATA}, {"timing", NVL_MODE_TIMING},
    {NULL, 0}};

#define DEFAULT_PROMPT_LEN 1024
#define DEFAULT_GEN_LEN 128
#define AT(field) offsetof(nvl_run_args_t, field)
#define MAX_TOKENS (1L << 30)
static const nvl_opt_t run_opts[] = {
    NVL_CLI_OPT_TOPO(nvl_run_args_t, NVL_CLI_DEFAULT_TOPO, false),
    {.name = "model", .kind = NVL_OPT_STRING, .offset = AT(model),
     .arg = "NAME|DIR", .def = "qwen2.5-72b",
     .doc = "a preset (`nvlemu --list model` lists them) or a Hugging "
            "Face model directory"},
    {.name = "batch", .kind = NVL_OPT_LONG, .offset = AT(batch), .arg = "B",
     .def = "1", .min = 1, .max = 1 << 20,
     .doc = "sequences decoded together"},
    /* no row defaults: --ctx excludes them, so run must see whether they
     * were given (DEFAULT_PROMPT_LEN / DEFAULT_GEN_LEN apply otherwise) */
    {.name = "prompt-len", .kind = NVL_OPT_LONG, .offset = AT(prompt_len),
     .arg = "P", .min = 1, .max = MAX_TOKENS,
     .doc = "prompt tokens per sequence (default 1024)"},
    {.name = "gen-len", .alias = "max-new-tokens", .kind = NVL_OPT_LONG,
     .offset = AT(gen_len), .arg = "G", .min = 1, .max = MAX_TOKENS,
     .doc = "new tokens per sequence, the first from prefill (default 128)"},
    {.name = "tp", .kind = NVL_OPT_LONG, .offset = AT(tp), .arg = "T",
     .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS,
     .doc = "tensor-parallel ranks per stage (0: the ranks / --pp); the "
            "job runs ranks / (T x --pp) replicas, data-parallel copies "
            "that never talk (one report: the first's, checked equal)"},
    {.name = "ctx", .kind = NVL_OPT_LONG, .offset = AT(ctx), .arg = "C",
     .min = 1, .max = MAX_TOKENS,
     .doc = "instead of --prompt-len/--gen-len: one steady-state decode "
            "step at context C (prefill C - 1 tokens, then one step)"},
    NVL_CLI_MODEL_OPTS(nvl_run_args_t, engine),
    {.name = "rope-scaling", .kind = NVL_OPT_CUSTOM, .offset = AT(rope_yarn),
     .arg = "none|yarn:F", .def = "none",
     .parse = nvl_model_rope_scaling_parse,
     .doc = "YaRN rope scaling: the context may reach F x the model's "
            "pretrained positions (yarn:4: Qwen2.5's 128K)"},
    {.name = "mode", .kind = NVL_OPT_ENUM, .offset = AT(mode),
     .arg = "data|timing|auto", .def = "auto", .names = mode_names,
     .doc = "data: weights and numerics (synthetic for presets); timing: "
            "none; auto: data for a directory with safetensors, else "
            "timing"},
    {.name = "seed", .kind = NVL_OPT_LONG, .offset = AT(seed), .arg = "S",
     .def = "1", .min = 1, .max = MAX_TOKENS,
     .doc = "synthetic weights and prompts, timing mode's expert routing"},
    NVL_CLI_MODEL_OPT_ROUTE_SKEW(nvl_run_args_t, engine),
    NVL_CLI_OPT_SET(nvl_run_args_t),
    NVL_CLI_OPT_RANK_PLAYS(nvl_run_args_t),
    NVL_CLI_OPT_SET_FILE(nvl_run_args_t),
    NVL_CLI_OPT_JSON(nvl_run_args_t,
                     "write the results as JSON ('-': standard output)"),
    {.name = "trace", .kind = NVL_OPT_STRING, .offset = AT(trace),
     .arg = "FILE",
     .doc = "write a Chrome trace (Perfetto): one track per rank"},
    {.name = "trace-steps", .kind = NVL_OPT_LONG, .offset = AT(trace_steps),
     .arg = "N", .def = "2", .min = 1, .max = 1 << 20,
     .doc = "decode steps in the trace after the prefill"},
    NVL_CLI_OPT_POINTS(nvl_run_args_t),
    NVL_CLI_OPT_HELP(nvl_run_args_t),
};
#undef AT
#define USAGE "mpirun -np N nvlemu run [--model NAME|DIR] [--topo FILE] " \
              "[--tp T] [--batch B] [--prompt-len P --gen-len G | --ctx C] ..."

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

/* Collective over the job: the largest difference, over the passes,
 * between the replicas' latest pass ends (end_max: n of them on each
 * replica's first rank), on rank 0; 0 with one replica. */
static int64_t replica_spread_ps(const run_cmd_t *c, const int64_t *end_max,
                                 size_t n)
{
    if (c->replicas == 1)
        return 0;
    int first;
    MPI_Comm_rank(c->replica, &first);
    first = first == 0;
    /* each pass's end and its negation: one MAX gives max and min */
    int64_t *mine = malloc(4 * (n + 1) * sizeof *mine);
    if (mine == NULL) {
        nvl_report("out of memory for the replicas' comparison");
        nvl_runtime_abort(1);
    }
    int64_t *all = mine + 2 * (n + 1);
    for (size_t i = 0; i < n; i++) {
        mine[2 * i] = first ? end_max[i] : INT64_MIN;
        mine[2 * i + 1] = first ? -end_max[i] : INT64_MIN;
    }
    MPI_Reduce(mine, all, (int)(2 * n), MPI_INT64_T, MPI_MAX, 0,
               MPI_COMM_WORLD);
    int64_t spread = 0;
    for (size_t i = 0; nvl_runtime()->rank == 0 && i < n; i++)
        if (all[2 * i] + all[2 * i + 1] > spread)
            spread = all[2 * i] + all[2 * i + 1];
    free(mine);
    return spread;
}

/* Collective: rank 0 prints and writes the report of the generation e
 * ran (r's inputs set), its replica's numbers gathered (every replica's
 * pass ends compared); the trace when asked. */
static nvl_status_t report(const run_cmd_t *c, nvl_engine_t *e,
                           nvl_run_result_t *r)
{
    const nvl_run_args_t *a = r->args;
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
    MPI_Reduce(end, end_max, (int)n, MPI_INT64_T, MPI_MAX, 0, c->replica);
    r->replica_spread_ps = replica_spread_ps(c, end_max, n);
    if (c->replica_index > 0) { /* the first replica reports */
        free(end);
        free(end_max);
        free(pw);
        return NVL_OK;
    }
    /* a pipeline's step: its microbatches' passes, ending with the last */
    nvl_engine_pipe_t pp;
    nvl_engine_pipeline(e, &pp);
    size_t g = pp.microbatches > 1 ? (size_t)pp.microbatches : 1;
    for (size_t k = 0; g > 1 && nvl_runtime()->rank == 0 && k < n / g;
         k++) {
        int64_t last = 0;
        double wall = 0;
        for (size_t m = 0; m < g; m++) {
            last = end_max[k * g + m] > last ? end_max[k * g + m] : last;
            wall += pw[k * g + m];
        }
        end_max[k] = last;
        pw[k] = wall;
    }
    n /= g;
    nvl_run_totals_t totals;
    if (nvl_run_stats_reduce(e, c->replica, &totals) != NVL_OK)
        nvl_runtime_abort(1);
    r->pass_end_ps = end_max;
    r->pass_wall_s = pw;
    r->n_passes = n;
    r->totals = &totals;
    nvl_status_t st = NVL_OK;
    if (nvl_runtime()->rank == 0) {
        /* --json -: standard output is the JSON alone, so that a pipe
         * reads it; the readable report goes to standard error */
        bool json_out = a->common.json != NULL &&
                        strcmp(a->common.json, "-") == 0;
        nvl_run_report_text(r, json_out ? stderr : stdout);
        if (a->common.json != NULL)
            st = nvl_run_report_json(r, a->common.json);
    }
    if (a->trace != NULL &&
        nvl_run_trace_write(e, c->replica, r->topo, c->trace) != NVL_OK)
        st = NVL_ERR_IO;
    nvl_run_totals_free(&totals);
    free(end);
    free(end_max);
    free(pw);
    return st;
}

/* Collective over the job: st on a replica's rank, failed on every rank
 * when any replica failed (a replica after the first is muted: when it
 * alone failed, rank 0 says so). */
static nvl_status_t replicas_agree(const run_cmd_t *c, nvl_status_t st)
{
    if (c->replicas == 1)
        return st;
    int ok[2] = {st == NVL_OK, c->replica_index > 0 || st == NVL_OK};
    int all[2];
    MPI_Allreduce(ok, all, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all[1] && !all[0] && nvl_runtime()->rank == 0)
        nvl_report("a replica after the first failed where the first did "
                   "not (their reports are muted: run its %d ranks alone "
                   "to see it)", nvl_runtime()->size / c->replicas);
    return all[0] ? st : st != NVL_OK ? st : NVL_ERR_MISMATCH;
}

/* Runs the generation on engine e and reports it; returns this rank's
 * status. */
static nvl_status_t generate(run_cmd_t *c, nvl_engine_t *e, nvl_comm_t *tp,
                             const nvl_cli_ctx_t *ctx)
{
    nvl_run_args_t *a = &c->a;
    uint64_t plen = a->ctx ? (uint64_t)a->ctx - 1 : (uint64_t)a->prompt_len;
    /* --ctx: one steady-state decode step; a pipeline's comes after one
     * that fills it (its statistics leave that one out) */
    nvl_engine_pipe_t stages;
    nvl_engine_pipeline(e, &stages);
    uint64_t glen = a->ctx ? (stages.stages > 1 ? 3 : 2)
                           : (uint64_t)a->gen_len;
    if (plen == 0)
        plen = 1; /* --ctx 1: a one-token prompt */
    bool data = c->mode == NVL_MODE_DATA;
    int *lens = malloc((size_t)a->batch * sizeof *lens);
    int32_t *out = malloc((size_t)a->batch * glen * sizeof *out);
    int32_t *ids = data ? prompt_ids(a, plen, c->cfg.vocab) : NULL;
    if (lens == NULL || out == NULL || (data && !ids)) {
        nvl_report("out of memory for a batch of %ld", a->batch);
        nvl_runtime_abort(1);
    }
    for (long b = 0; b < a->batch; b++)
        lens[b] = (int)plen;
    /* a pipeline's step is a pass per microbatch, at most one per stage */
    if (c->trace != NULL || a->trace != NULL)
        nvl_engine_record_events(e, ((int32_t)a->trace_steps + 1) *
                                        stages.stages);
    double t0 = MPI_Wtime();
    nvl_status_t st = nvl_engine_generate(e, ids, lens, (int)a->batch,
                                          (int)glen, out, NULL);
    st = replicas_agree(c, st);
    nvl_engine_pipe_t pipe;
    nvl_engine_pipeline(e, &pipe);
    nvl_run_result_t r = {
        .args = a, .engine = &c->engine, .cfg = &c->cfg, .topo = ctx->topo,
        .mode = c->mode,
        .weights = !data                 ? "none (timing mode)"
                   : c->weights_dir != NULL ? c->weights_dir
                                            : "synthetic",
        .tp = ctx->rt->size / c->replicas, .replicas = c->replicas,
        .layers = pipe.layers_total, .pipe = pipe,
        .prompt_len = plen, .gen_len = glen, .tuner = nvl_comm_tuner(tp),
        .mem = nvl_engine_memory(e), .wall_s = MPI_Wtime() - t0,
        .tokens = data ? out : NULL, .validation = ctx->validation};
    /* does not fit: the JSON still says so, for bench/sweep (the one
     * report is already out) */
    if (st != NVL_OK && r.mem->planned && !r.mem->fits &&
        ctx->rt->rank == 0 && a->common.json != NULL)
        nvl_run_report_unfit_json(&r, a->common.json);
    if (st == NVL_OK)
        st = report(c, e, &r);
    free(lens);
    free(out);
    free(ids);
    return st;
}

/* The model (a preset or a directory), the mode, and the trace file. */
static nvl_status_t prepare(void *args, const nvl_cli_ctx_t *ctx)
{
    run_cmd_t *c = args;
    nvl_run_args_t *a = &c->a;
    if (a->ctx && (a->prompt_len || a->gen_len)) {
        nvl_report("--ctx %ld sets the prompt and the new tokens (%ld and "
                   "one decode step): give --ctx or --prompt-len/--gen-len, "
                   "not both", a->ctx, a->ctx - 1);
        return NVL_ERR_INVALID;
    }
    long group = a->tp * a->engine.pp, ranks = ctx->rt->size;
    if (a->tp > 0 && (group > ranks || ranks % group != 0)) {
        nvl_report("--tp %ld x --pp %ld: %ld ranks are not a whole number "
                   "of replicas of %ld", a->tp, a->engine.pp, ranks, group);
        return NVL_ERR_INVALID;
    }
    c->replicas = a->tp > 0 ? (int)(ranks / group) : 1;
    if (nvl_cli_model_opts_resolve(&a->engine, a->model) != NVL_OK ||
        nvl_cli_model_opts_engine(&a->engine, ctx->topo, &c->engine) !=
            NVL_OK)
        return NVL_ERR_INVALID;
    if (!a->prompt_len)
        a->prompt_len = DEFAULT_PROMPT_LEN;
    if (!a->gen_len)
        a->gen_len = DEFAULT_GEN_LEN;
    bool preset = nvl_model_is_preset(a->model);
    nvl_status_t st = preset ? nvl_model_preset(a->model, &c->cfg)
                             : nvl_model_config_load(a->model, &c->cfg);
    if (st != NVL_OK)
        return st;
    if (a->rope_yarn > 0 &&
        nvl_model_set_yarn(&c->cfg, a->rope_yarn) != NVL_OK)
        return NVL_ERR_INVALID;
    bool weights = !preset && has_weights(a->model);
    c->mode = a->mode >= 0 ? (nvl_mode_t)a->mode
              : weights    ? NVL_MODE_DATA
                           : NVL_MODE_TIMING;
    c->weights_dir = c->mode == NVL_MODE_DATA && weights ? a->model : NULL;
    c->engine.mode = c->mode;
    c->engine.weights_dir = c->weights_dir;
    c->engine.seed = (uint64_t)a->seed;
    if (ctx->rt->rank == 0 &&
        nvl_cli_check_writable("--json", a->common.json) != NVL_OK)
        return NVL_ERR_IO;
    if (a->trace != NULL && ctx->rt->rank == 0 &&
        (c->trace = fopen(a->trace, "w")) == NULL) {
        nvl_report("--trace %s: cannot open for writing: %s", a->trace,
                   strerror(errno));
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

/* The job as replicas of --tp x --pp ranks, each its own engine on its
 * own communicator; the replicas after the first muted. */
static nvl_status_t body(void *args, const nvl_cli_ctx_t *ctx)
{
    run_cmd_t *c = args;
    nvl_vclock_t clock = {0};
    nvl_comm_t *tp = NULL;
    nvl_engine_t *e = NULL;
    int size = ctx->rt->size / c->replicas;
    c->replica_index = ctx->rt->rank / size;
    MPI_Comm_split(MPI_COMM_WORLD, c->replica_index, ctx->rt->rank,
                   &c->replica);
    nvl_runtime_set_quiet(c->replica_index > 0);
    nvl_status_t st = nvl_comm_create(c->replica, ctx->topo, &clock, &tp);
    if (st == NVL_OK)
        st = nvl_engine_create(&c->cfg, &c->engine, tp, &e);
    if (st == NVL_OK)
        st = generate(c, e, tp, ctx);
    else
        st = replicas_agree(c, st);
    nvl_engine_free(e);
    nvl_comm_destroy(tp);
    nvl_runtime_set_quiet(false);
    MPI_Comm_free(&c->replica);
    return st;
}

static void cleanup(void *args)
{
    run_cmd_t *c = args;
    if (c->trace != NULL)
        fclose(c->trace);
}

const nvl_cli_command_t nvl_cli_run_command = {
    .args_size = sizeof(run_cmd_t),
    .opts = NVL_CLI_OPTS("run", run_opts, USAGE, 0),
    .common_offset = offsetof(run_cmd_t, a.common),
    .check_ranks = true,
    .world_is_job = true,
    .points = true,
    .provenance = true,
    .prepare = prepare,
    .body = body,
    .cleanup = cleanup,
};

int nvl_cmd_run(int argc, char **argv)
{
    run_cmd_t cmd = {0};
    return nvl_cli_command_run(&nvl_cli_run_command, &cmd, argc, argv);
}
