/* nvlemu generate: greedy generation with real weights on a TP group of
 * every rank (data mode), as Hugging Face transformers would produce it. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "model_opts.h"
#include "nvlemu/engine.h"
#include "nvlemu/json.h"
#include "nvlemu/runtime.h"

typedef struct {
    nvl_cli_common_t common;
    const char *model, *ids, *logits_out;
    long gen_len;
    nvl_cli_model_opts_t engine; /* the engine's options (model_opts.h) */
    nvl_engine_opts_t engine_opts; /* made of them by prepare */
    int32_t *tokens; /* all prompts, one after another */
    int *lens;
    int batch;
    nvl_model_config_t cfg;
} gen_args_t;

#define USAGE "mpirun -np N nvlemu generate --model DIR --input-ids " \
              "\"1,2,3;4,5\" [--gen-len N] [--logits-out FILE.json] " \
              "..."

static const nvl_opt_t gen_opts[] = {
    {.name = "model", .kind = NVL_OPT_STRING,
     .offset = offsetof(gen_args_t, model), .arg = "DIR", .required = true,
     .doc = "Hugging Face model directory (config.json and *.safetensors)"},
    {.name = "input-ids", .kind = NVL_OPT_STRING,
     .offset = offsetof(gen_args_t, ids), .arg = "IDS", .required = true,
     .doc = "prompts as token ids: \"1,2,3;4,5,6\" (';' separates prompts)"},
    {.name = "gen-len", .alias = "max-new-tokens", .kind = NVL_OPT_LONG,
     .offset = offsetof(gen_args_t, gen_len), .arg = "N", .def = "16",
     .min = 1, .max = 1 << 20, .doc = "tokens to generate per prompt"},
    {.name = "logits-out", .alias = "json", .kind = NVL_OPT_STRING,
     .offset = offsetof(gen_args_t, logits_out), .arg = "FILE.json",
     .doc = "write {\"new_tokens\": [[...]], \"last_logits\": [[...]]}"},
    NVL_CLI_OPT_TOPO(gen_args_t, NVL_CLI_DEFAULT_TOPO, false),
    NVL_CLI_OPT_SET(gen_args_t),
    NVL_CLI_OPT_RANK_PLAYS(gen_args_t),
    NVL_CLI_OPT_SET_FILE(gen_args_t),
    NVL_CLI_MODEL_OPTS(gen_args_t, engine),
    NVL_CLI_OPT_HELP(gen_args_t),
};

/* "1,2,3;4,5" -> tokens and lengths; reports the first bad entry. */
static nvl_status_t parse_ids(const char *text, gen_args_t *a)
{
    size_t cap = strlen(text) + 2;
    a->tokens = malloc(cap * sizeof *a->tokens);
    a->lens = calloc(cap, sizeof *a->lens);
    if (a->tokens == NULL || a->lens == NULL)
        return NVL_ERR_NOMEM;
    size_t n = 0;
    const char *p = text;
    a->batch = 1;
    for (;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno != 0 || v < 0 || v > INT32_MAX) {
            nvl_report("--input-ids: expected a token id at '%s' (format "
                       "\"1,2,3;4,5\")", p);
            return NVL_ERR_INVALID;
        }
        a->tokens[n++] = (int32_t)v;
        a->lens[a->batch - 1]++;
        p = end;
        while (*p == ' ')
            p++;
        if (*p == '\0')
            return NVL_OK;
        if (*p == ';')
            a->batch++;
        else if (*p != ',') {
            nvl_report("--input-ids: unexpected '%c' (separate ids with ',' "
                       "and prompts with ';')", *p);
            return NVL_ERR_INVALID;
        }
        p++;
    }
}

static nvl_status_t check(void *args, int argc, char **argv, int first)
{
    (void)argc, (void)argv, (void)first;
    gen_args_t *a = args;
    return parse_ids(a->ids, a);
}

static nvl_status_t prepare(void *args, const nvl_cli_ctx_t *ctx)
{
    gen_args_t *a = args;
    nvl_status_t st = NVL_OK;
    if (nvl_model_is_preset(a->model)) {
        nvl_report("--model %s: a preset has no weights; generate needs a "
                   "Hugging Face checkpoint directory (config.json and "
                   "safetensors); 'nvlemu run --model %s --mode data' runs "
                   "the preset on synthetic weights",
                   a->model, a->model);
        return NVL_ERR_INVALID;
    }
    if (nvl_cli_model_opts_engine(&a->engine, ctx->topo, &a->engine_opts) !=
        NVL_OK)
        return NVL_ERR_INVALID;
    a->engine_opts.weights_dir = a->model; /* data mode, the checkpoint */
    if (ctx->rt->rank == 0)
        st = nvl_cli_check_writable("--logits-out", a->logits_out);
    return st != NVL_OK ? st : nvl_model_config_load(a->model, &a->cfg);
}

static nvl_status_t write_json(const char *path, const gen_args_t *a,
                               const int32_t *out, const float *logits,
                               uint32_t vocab)
{
    json_t *root = json_object(), *toks = json_array(), *lg = json_array();
    for (int b = 0; b < a->batch; b++) {
        json_t *row = json_array(), *lrow = json_array();
        for (long s = 0; s < a->gen_len; s++)
            json_array_append_new(row, json_integer(out[b * a->gen_len + s]));
        for (uint32_t i = 0; i < vocab; i++)
            json_array_append_new(lrow,
                                  json_real(logits[(size_t)b * vocab + i]));
        json_array_append_new(toks, row);
        json_array_append_new(lg, lrow);
    }
    json_object_set_new(root, "new_tokens", toks);
    json_object_set_new(root, "last_logits", lg);
    int rc = nvl_json_dump_file(root, path, JSON_COMPACT);
    json_decref(root);
    if (rc != 0) {
        nvl_report("--logits-out %s: cannot write: %s", path,
                   strerror(errno));
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

/* Rank 0 prints the tokens of every prompt. */
static void print_tokens(const gen_args_t *a, const nvl_cli_ctx_t *ctx,
                         const int32_t *out, const nvl_vclock_t *clock,
                         const nvl_mem_plan_t *m)
{
    nvl_runtime_print_header(stdout);
    char place[128];
    nvl_cli_placement_name(ctx->rt->size, a->engine.ep, a->engine.attn_dp,
                           sizeof place, place);
    printf("# nvlemu generate: %s, %s on %s, greedy, %ld new "
           "token(s) per prompt\n", a->model, place, ctx->topo->name,
           a->gen_len);
    for (int b = 0; b < a->batch; b++) {
        printf("prompt %d:", b);
        for (long s = 0; s < a->gen_len; s++)
            printf(" %d", out[b * a->gen_len + s]);
        printf("\n");
    }
    if (m->kv_host_share > 0 || m->weights_host_share > 0)
        printf("# memory tiers: %.0f%% of the KV cache and %.0f%% of the "
               "layer weights in host memory (%.4f GB per GPU), read over "
               "NVLink-C2C\n", 100 * m->kv_host_share,
               100 * m->weights_host_share,
               (m->kv_host_share * m->kv_bytes +
                m->weights_host_share * m->layer_weights_bytes) / 1e9);
    printf("# emulated time of the collectives: %.1f us\n",
           (double)clock->now_ps / 1e6);
}

static nvl_status_t body(void *args, const nvl_cli_ctx_t *ctx)
{
    const gen_args_t *a = args;
    nvl_vclock_t clock = {0};
    nvl_comm_t *tp = NULL;
    nvl_engine_t *e = NULL;
    nvl_status_t st = nvl_comm_create(MPI_COMM_WORLD, ctx->topo, &clock, &tp);
    if (st != NVL_OK)
        return st;
    st = nvl_engine_create(&a->cfg, &a->engine_opts, tp, &e);
    if (st == NVL_OK) {
        int32_t *out = malloc((size_t)a->batch * a->gen_len * sizeof *out);
        float *logits = malloc((size_t)a->batch * a->cfg.vocab * sizeof *logits);
        if (out == NULL || logits == NULL) {
            nvl_report("out of memory for the outputs");
            nvl_runtime_abort(1);
        }
        st = nvl_engine_generate(e, a->tokens, a->lens, a->batch,
                                 (int)a->gen_len, out, logits);
        if (st == NVL_OK && ctx->rt->rank == 0) {
            print_tokens(a, ctx, out, &clock, nvl_engine_memory(e));
            if (a->logits_out != NULL)
                st = write_json(a->logits_out, a, out, logits, a->cfg.vocab);
        }
        free(out);
        free(logits);
        nvl_engine_free(e);
    }
    nvl_comm_destroy(tp);
    return st;
}

static void cleanup(void *args)
{
    gen_args_t *a = args;
    free(a->tokens);
    free(a->lens);
}

const nvl_cli_command_t nvl_cli_gen_command = {
    .args_size = sizeof(gen_args_t),
    .opts = NVL_CLI_OPTS("generate", gen_opts, USAGE, 0),
    .common_offset = offsetof(gen_args_t, common),
    .check_ranks = true,
    .world_is_job = true,
    .check = check,
    .prepare = prepare,
    .body = body,
    .cleanup = cleanup,
};

int nvl_cmd_generate(int argc, char **argv)
{
    gen_args_t args = {0};
    return nvl_cli_command_run(&nvl_cli_gen_command, &args, argc, argv);
}
