/* nvlemu generate: greedy generation with real weights on a TP group of
 * every rank (data mode), as Hugging Face transformers would produce it. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "model_opts.h"
#include "quality.h"
#include "nvlemu/engine.h"
#include "nvlemu/json.h"
#include "nvlemu/runtime.h"

typedef struct {
    nvl_cli_common_t common;
    const char *model, *ids, *logits_out;
    const char *compare_to, *eval; /* --compare-to DIR, --eval FILE */
    nvl_model_config_t ref_cfg;    /* --compare-to's */
    int32_t *eval_tok;             /* --eval's sequences (quality.h) */
    int *eval_len, *eval_from, eval_n;
    uint64_t *eval_off;
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
              "[--compare-to DIR] [--eval FILE.jsonl] ..."

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
    {.name = "compare-to", .kind = NVL_OPT_STRING,
     .offset = offsetof(gen_args_t, compare_to), .arg = "DIR",
     .doc = "quality against this unquantized checkpoint: both models "
            "teacher-forced over the prompts and the new tokens, top-1 "
            "agreement, logit error and KL divergence per token "
            "(docs/quantization.md)"},
    {.name = "eval", .kind = NVL_OPT_STRING,
     .offset = offsetof(gen_args_t, eval), .arg = "FILE.jsonl",
     .doc = "perplexity over these token-id lists (one JSON array a line), "
            "and the reference's with --compare-to"},
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
    if (nvl_cli_model_opts_resolve(&a->engine, a->model) != NVL_OK ||
        nvl_cli_model_opts_engine(&a->engine, ctx->topo, &a->engine_opts) !=
            NVL_OK)
        return NVL_ERR_INVALID;
    a->engine_opts.weights_dir = a->model; /* data mode, the checkpoint */
    if (ctx->rt->rank == 0)
        st = nvl_cli_check_writable("--logits-out", a->logits_out);
    if (st == NVL_OK)
        st = nvl_model_config_load(a->model, &a->cfg);
    if (st == NVL_OK && a->compare_to != NULL) {
        st = nvl_model_config_load(a->compare_to, &a->ref_cfg);
        if (st == NVL_OK && a->ref_cfg.vocab != a->cfg.vocab) {
            nvl_report("--compare-to %s: vocabulary %u, but %s has %u",
                       a->compare_to, a->ref_cfg.vocab, a->model,
                       a->cfg.vocab);
            st = NVL_ERR_INVALID;
        }
    }
    if (st == NVL_OK && a->eval != NULL)
        st = nvl_cli_read_token_file(a->eval, a->cfg.vocab, &a->eval_tok,
                                     &a->eval_len, &a->eval_off, &a->eval_n);
    if (st == NVL_OK && a->eval != NULL) {
        a->eval_from = malloc(((size_t)a->eval_n + 1) * sizeof *a->eval_from);
        if (a->eval_from == NULL)
            return NVL_ERR_NOMEM;
        for (int s = 0; s < a->eval_n; s++)
            a->eval_from[s] = 1;
    }
    return st;
}

/* n x V logits as a JSON array of rows. */
static json_t *logits_json(const float *l, uint64_t n, uint32_t V)
{
    json_t *rows = json_array();
    for (uint64_t p = 0; p < n; p++) {
        json_t *row = json_array();
        for (uint32_t i = 0; i < V; i++)
            json_array_append_new(row, json_real(l[p * V + i]));
        json_array_append_new(rows, row);
    }
    return rows;
}

/* seqs scored by this model and (--compare-to) the reference: the
 * quality object ("quality": the comparison, or "eval": perplexities,
 * each with the logits compared) added to q. */
static nvl_status_t scored(const gen_args_t *a, nvl_comm_t *tp,
                           const nvl_engine_opts_t *ro,
                           const nvl_quality_seqs_t *seqs, bool eval,
                           json_t *q, nvl_status_t st)
{
    uint32_t V = a->cfg.vocab;
    float *lq = NULL, *lr = NULL;
    uint64_t n = 0, nr = 0;
    if (st == NVL_OK)
        st = nvl_cli_score(&a->cfg, &a->engine_opts, tp, seqs, &lq, &n);
    if (st == NVL_OK && a->compare_to != NULL)
        st = nvl_cli_score(&a->ref_cfg, ro, tp, seqs, &lr, &nr);
    if (st == NVL_OK) {
        json_t *o = eval ? nvl_cli_perplexity_json(lq, seqs, V)
                         : nvl_cli_quality_json(lq, lr, n, V);
        if (eval && lr != NULL)
            json_object_set_new(o, "reference",
                                nvl_cli_perplexity_json(lr, seqs, V));
        if (eval)
            json_object_set_new(o, "file", json_string(a->eval));
        json_object_set_new(o, "logits", logits_json(lq, n, V));
        if (lr != NULL)
            json_object_set_new(o, "reference_logits", logits_json(lr, nr, V));
        json_object_set_new(q, eval ? "eval" : "quality", o);
    }
    free(lq);
    free(lr);
    return st;
}

/* --compare-to: this model and the reference (its checkpoint unquantized:
 * no activation quantization, a bf16 KV cache) scored over each prompt
 * and its new tokens; --eval: perplexities.  Collective; every rank
 * returns the same object (NULL when neither option is given). */
static nvl_status_t quality(const gen_args_t *a, nvl_comm_t *tp,
                            const int32_t *out, json_t **q_out)
{
    *q_out = NULL;
    if (a->compare_to == NULL && a->eval == NULL)
        return NVL_OK;
    int n = a->batch;
    size_t total = 0;
    for (int b = 0; b < n; b++)
        total += (size_t)a->lens[b] + (size_t)a->gen_len;
    int32_t *tok = malloc((total + 1) * sizeof *tok);
    int *len = malloc(((size_t)n + 1) * 2 * sizeof *len);
    uint64_t *off = malloc(((size_t)n + 1) * sizeof *off);
    if (tok == NULL || len == NULL || off == NULL) {
        nvl_report("out of memory for the scored sequences");
        nvl_runtime_abort(1);
    }
    size_t at = 0, src = 0;
    for (int b = 0; b < n; b++) {
        off[b] = at;
        memcpy(tok + at, a->tokens + src, (size_t)a->lens[b] * sizeof *tok);
        memcpy(tok + at + a->lens[b], out + (size_t)b * a->gen_len,
               (size_t)a->gen_len * sizeof *tok);
        src += (size_t)a->lens[b];
        at += (size_t)a->lens[b] + (size_t)a->gen_len;
        len[b] = a->lens[b] + (int)a->gen_len;
        len[n + b] = a->lens[b];
    }
    nvl_quality_seqs_t gen = {n, tok, off, len, len + n};
    nvl_engine_opts_t ro = a->engine_opts;
    ro.weights_dir = a->compare_to;
    ro.act_quant_none = true;
    ro.cost.kv_dtype = NVL_WDT_BF16;
    nvl_quality_seqs_t ev = {a->eval_n, a->eval_tok, a->eval_off,
                             a->eval_len, a->eval_from};
    json_t *q = json_object();
    nvl_status_t st = NVL_OK;
    if (a->compare_to != NULL)
        st = scored(a, tp, &ro, &gen, false, q, st);
    if (a->eval != NULL)
        st = scored(a, tp, &ro, &ev, true, q, st);
    free(tok);
    free(len);
    free(off);
    if (st != NVL_OK)
        json_decref(q);
    else
        *q_out = q;
    return st;
}

static nvl_status_t write_json(const char *path, const gen_args_t *a,
                               const int32_t *out, const float *logits,
                               uint32_t vocab, json_t *quality)
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
    if (quality != NULL)
        json_object_update(root, quality);
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

/* Rank 0: the quality lines of q (quality()'s object). */
static void print_quality(const gen_args_t *a, const json_t *q)
{
    const json_t *c = json_object_get(q, "quality");
    if (c != NULL)
        printf("# quality against %s (teacher-forced over the prompts and "
               "these new tokens, %lld positions): top-1 agreement %.4f, "
               "logit error mean %.6g max %.6g, KL per token mean %.6g max "
               "%.6g nats\n", a->compare_to,
               (long long)json_integer_value(json_object_get(c, "positions")),
               json_real_value(json_object_get(c, "top1_agreement")),
               json_real_value(json_object_get(c, "mean_abs_logit_error")),
               json_real_value(json_object_get(c, "max_abs_logit_error")),
               json_real_value(json_object_get(c, "mean_kl")),
               json_real_value(json_object_get(c, "max_kl")));
    const json_t *ev = json_object_get(q, "eval"), *r;
    if (ev == NULL)
        return;
    printf("# perplexity over %s (%lld tokens predicted): %.6g", a->eval,
           (long long)json_integer_value(json_object_get(ev, "tokens")),
           json_real_value(json_object_get(ev, "perplexity")));
    if ((r = json_object_get(ev, "reference")) != NULL)
        printf(" (reference %s: %.6g)", a->compare_to,
               json_real_value(json_object_get(r, "perplexity")));
    printf("\n");
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
    int32_t *out = malloc((size_t)a->batch * a->gen_len * sizeof *out);
    float *logits = malloc((size_t)a->batch * a->cfg.vocab * sizeof *logits);
    if (out == NULL || logits == NULL) {
        nvl_report("out of memory for the outputs");
        nvl_runtime_abort(1);
    }
    st = nvl_engine_create(&a->cfg, &a->engine_opts, tp, &e);
    if (st == NVL_OK) {
        st = nvl_engine_generate(e, a->tokens, a->lens, a->batch,
                                 (int)a->gen_len, out, logits);
        if (st == NVL_OK && ctx->rt->rank == 0)
            print_tokens(a, ctx, out, &clock, nvl_engine_memory(e));
        nvl_engine_free(e);
    }
    json_t *q = NULL;
    if (st == NVL_OK)
        st = quality(a, tp, out, &q);
    if (st == NVL_OK && ctx->rt->rank == 0) {
        if (q != NULL)
            print_quality(a, q);
        if (a->logits_out != NULL)
            st = write_json(a->logits_out, a, out, logits, a->cfg.vocab, q);
    }
    json_decref(q);
    free(out);
    free(logits);
    nvl_comm_destroy(tp);
    return st;
}

static void cleanup(void *args)
{
    gen_args_t *a = args;
    free(a->tokens);
    free(a->lens);
    free(a->eval_tok);
    free(a->eval_len);
    free(a->eval_from);
    free(a->eval_off);
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
