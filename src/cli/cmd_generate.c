/* nvlemu generate: greedy generation with real weights on a TP group of
 * every rank (data mode), as Hugging Face transformers would produce it. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "nvlemu/engine.h"
#include "nvlemu/runtime.h"

enum {
    OPT_MODEL = 1, OPT_IDS, OPT_NEW, OPT_LOGITS, OPT_TOPO, OPT_EP,
    OPT_ATTN_PAR, OPT_HELP
};

static const nvl_cli_opt_t gen_opts[] = {
    {"model", required_argument, OPT_MODEL, "DIR",
     "Hugging Face model directory (config.json and *.safetensors)"},
    {"input-ids", required_argument, OPT_IDS, "IDS",
     "prompts as token ids: \"1,2,3;4,5,6\" (';' separates prompts)"},
    {"max-new-tokens", required_argument, OPT_NEW, "N",
     "tokens to generate per prompt (default 16)"},
    {"logits-out", required_argument, OPT_LOGITS, "FILE.json",
     "write {\"new_tokens\": [[...]], \"last_logits\": [[...]]}"},
    {"topo", required_argument, OPT_TOPO, "FILE",
     "topology (default topology/gb200-nvl72.topo)"},
    NVL_CLI_PLACEMENT_OPTS(OPT_EP, OPT_ATTN_PAR),
    {"help", no_argument, OPT_HELP, NULL, "this help"},
};
#define N_OPTS (sizeof gen_opts / sizeof gen_opts[0])
#define USAGE "mpirun -np N nvlemu generate --model DIR --input-ids " \
              "\"1,2,3;4,5\" [--max-new-tokens N] [--logits-out FILE.json] " \
              "[--ep N] [--attn-parallel tp|dp]"

typedef struct {
    const char *model, *ids, *logits_out, *topo;
    long max_new, ep;
    bool attn_dp;
    int help;
    int32_t *tokens; /* all prompts, one after another */
    int *lens;
    int batch;
} gen_args_t;

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

static nvl_status_t on_opt(int id, const char *arg, void *ctx)
{
    gen_args_t *a = ctx;
    switch (id) {
    case OPT_MODEL: a->model = arg; break;
    case OPT_IDS: a->ids = arg; break;
    case OPT_NEW:
        a->max_new = nvl_cli_positive("--max-new-tokens", arg, 1 << 20);
        return a->max_new < 0 ? NVL_ERR_INVALID : NVL_OK;
    case OPT_LOGITS: a->logits_out = arg; break;
    case OPT_TOPO: a->topo = arg; break;
    case OPT_EP:
        a->ep = nvl_cli_positive("--ep", arg, 1 << 20);
        return a->ep < 0 ? NVL_ERR_INVALID : NVL_OK;
    case OPT_ATTN_PAR: return nvl_cli_attn_parallel_parse(arg, &a->attn_dp);
    case OPT_HELP: a->help = 1; break;
    }
    return NVL_OK;
}

static nvl_status_t parse_args(int argc, char **argv, gen_args_t *a)
{
    a->max_new = 16;
    a->ep = 1;
    a->topo = "topology/gb200-nvl72.topo";
    int first;
    nvl_status_t st = nvl_cli_parse("generate", argc, argv, gen_opts, N_OPTS,
                                    on_opt, a, &first);
    if (st != NVL_OK || a->help)
        return st;
    if (a->model == NULL || a->ids == NULL || first != argc) {
        nvl_report("generate: --model and --input-ids are required (usage: "
                   "%s)", USAGE);
        return NVL_ERR_INVALID;
    }
    return parse_ids(a->ids, a);
}

static nvl_status_t write_json(const char *path, const gen_args_t *a,
                               const int32_t *out, const float *logits,
                               uint32_t vocab)
{
    json_t *root = json_object(), *toks = json_array(), *lg = json_array();
    for (int b = 0; b < a->batch; b++) {
        json_t *row = json_array(), *lrow = json_array();
        for (long s = 0; s < a->max_new; s++)
            json_array_append_new(row, json_integer(out[b * a->max_new + s]));
        for (uint32_t i = 0; i < vocab; i++)
            json_array_append_new(lrow,
                                  json_real(logits[(size_t)b * vocab + i]));
        json_array_append_new(toks, row);
        json_array_append_new(lg, lrow);
    }
    json_object_set_new(root, "new_tokens", toks);
    json_object_set_new(root, "last_logits", lg);
    int rc = json_dump_file(root, path, JSON_COMPACT);
    json_decref(root);
    if (rc != 0) {
        nvl_report("--logits-out %s: cannot write", path);
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

int nvl_cmd_generate(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    gen_args_t args = {0};
    nvl_topo_t *topo = NULL;
    nvl_model_config_t cfg;
    int code = 1;
    nvl_runtime_capture_begin();
    nvl_status_t st = parse_args(argc, argv, &args);
    if (st == NVL_OK && !args.help)
        st = nvl_topo_load(args.topo, &topo);
    if (st == NVL_OK && !args.help)
        st = nvl_model_config_load(args.model, &cfg);
    if (nvl_runtime_capture_end(st) != NVL_OK)
        goto out;
    if (args.help) {
        if (rt.rank == 0)
            nvl_cli_help(stdout, USAGE, gen_opts, N_OPTS);
        code = 0;
        goto out;
    }
    if (nvl_runtime_check_topo(topo) != NVL_OK)
        goto out;
    nvl_vclock_t clock = {0};
    nvl_comm_t *tp = NULL;
    nvl_engine_t *e = NULL;
    if (nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &tp) != NVL_OK)
        goto out;
    nvl_engine_opts_t o;
    nvl_engine_opts_default(&o, topo);
    o.weights_dir = args.model;
    o.place.ep = (int)args.ep;
    o.place.attn_dp = args.attn_dp;
    if (nvl_engine_create(&cfg, &o, tp, &e) == NVL_OK) {
        int32_t *out = malloc((size_t)args.batch * args.max_new * sizeof *out);
        float *logits = malloc((size_t)args.batch * cfg.vocab * sizeof *logits);
        if (out == NULL || logits == NULL) {
            nvl_report("out of memory for the outputs");
            nvl_runtime_abort(1);
        }
        st = nvl_engine_generate(e, args.tokens, args.lens, args.batch,
                                 (int)args.max_new, out, logits);
        if (st == NVL_OK && rt.rank == 0) {
            nvl_runtime_print_header(stdout);
            char place[128];
            nvl_cli_placement_name(place, sizeof place, rt.size, args.ep,
                                   args.attn_dp);
            printf("# nvlemu generate: %s, %s on %s, greedy, %ld new "
                   "token(s) per prompt\n", args.model, place, topo->name,
                   args.max_new);
            for (int b = 0; b < args.batch; b++) {
                printf("prompt %d:", b);
                for (long s = 0; s < args.max_new; s++)
                    printf(" %d", out[b * args.max_new + s]);
                printf("\n");
            }
            printf("# emulated time of the collectives: %.1f us\n",
                   (double)clock.now_ps / 1e6);
            if (args.logits_out != NULL)
                st = write_json(args.logits_out, &args, out, logits,
                                cfg.vocab);
        }
        int ok = st == NVL_OK, all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        code = all ? 0 : 1;
        free(out);
        free(logits);
        nvl_engine_free(e);
    }
    nvl_comm_destroy(tp);
out:
    free(args.tokens);
    free(args.lens);
    nvl_topo_free(topo);
    nvl_runtime_finalize();
    return code;
}
