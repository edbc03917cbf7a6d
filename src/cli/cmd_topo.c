/* nvlemu topo FILE: validate a topology on every rank, check that all ranks
 * agree, and describe it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct {
    nvl_cli_common_t common;
    long ranks;
    int export_file, keys;
} topo_args_t;

#define USAGE "[mpirun -np N] nvlemu topo FILE|--topo FILE [--ranks N] " \
              "[--json FILE] [--set K=V]... [--rank-plays WHAT] "       \
              "[--export] [--keys]"

static const nvl_opt_t topo_opts[] = {
    NVL_CLI_OPT_TOPO(topo_args_t, NULL, false),
    NVL_CLI_OPT_RANKS(topo_args_t,
                      "describe a job of N ranks (default: the MPI world "
                      "size, or every GPU when run as one process)"),
    NVL_CLI_OPT_JSON(topo_args_t, "write the description as JSON to FILE "
                                  "('-': standard output)"),
    NVL_CLI_OPT_SET(topo_args_t),
    NVL_CLI_OPT_SET_FILE(topo_args_t),
    NVL_CLI_OPT_RANK_PLAYS(topo_args_t),
    {.name = "export", .kind = NVL_OPT_FLAG,
     .offset = offsetof(topo_args_t, export_file),
     .doc = "print the canonical topology file (after --set) instead"},
    {.name = "keys", .kind = NVL_OPT_FLAG,
     .offset = offsetof(topo_args_t, keys),
     .doc = "print the reference of every topology key (Markdown) and exit"},
    NVL_CLI_OPT_HELP(topo_args_t),
};

/* The topology: FILE or --topo FILE, once; --keys needs none. */
static nvl_status_t check(void *args, int argc, char **argv, int first)
{
    topo_args_t *a = args;
    if (a->keys) {
        a->common.topo = NULL; /* --keys describes no file */
        return NVL_OK;
    }
    if (first < argc && a->common.topo != NULL) {
        nvl_report("topo: topology given twice ('%s' and --topo %s; usage: "
                   "%s)", argv[first], a->common.topo, USAGE);
        return NVL_ERR_INVALID;
    }
    if (first < argc)
        a->common.topo = argv[first];
    if (a->common.topo == NULL) {
        nvl_report("topo: expected one topology FILE (usage: %s)", USAGE);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

static nvl_status_t prepare(void *args, const nvl_cli_ctx_t *ctx)
{
    const topo_args_t *a = args;
    if (ctx->topo != NULL && a->ranks > (long)ctx->topo->gpus) {
        nvl_report("--ranks %ld: topology '%s' has only %u GPUs", a->ranks,
                   ctx->topo->name, ctx->topo->gpus);
        return NVL_ERR_INVALID;
    }
    /* --rank-plays die: the described job fills whole packages */
    if (ctx->topo != NULL && a->ranks > 0)
        return nvl_topo_check_die_ranks(ctx->topo, (uint32_t)a->ranks);
    if (ctx->topo != NULL && ctx->rt->size > 1)
        return nvl_topo_check_die_ranks(ctx->topo, (uint32_t)ctx->rt->size);
    return NVL_OK;
}

static nvl_status_t describe_json(const topo_args_t *a, const nvl_topo_t *topo,
                                  uint32_t ranks)
{
    FILE *out = nvl_cli_open_out("--json", a->common.json);
    if (out == NULL)
        return NVL_ERR_IO;
    nvl_status_t st = nvl_topo_describe_json(topo, ranks, a->common.topo, out);
    nvl_status_t cst = nvl_cli_close_out("--json", a->common.json, out);
    return st != NVL_OK ? st : cst;
}

/* Rank 0 speaks for the job. */
static nvl_status_t body(void *args, const nvl_cli_ctx_t *ctx)
{
    const topo_args_t *a = args;
    const nvl_runtime_t *rt = ctx->rt;
    if (rt->rank != 0)
        return NVL_OK;
    if (a->keys) {
        nvl_topo_keys_markdown(stdout);
        return NVL_OK;
    }
    const nvl_topo_t *topo = ctx->topo;
    uint32_t ranks = a->ranks > 0  ? (uint32_t)a->ranks
                     : rt->size > 1 ? (uint32_t)rt->size
                                    : topo->gpus;
    nvl_status_t st = NVL_OK;
    if (a->export_file) {
        st = nvl_topo_export(topo, stdout);
    } else if (a->common.json != NULL) {
        st = describe_json(a, topo, ranks);
    } else {
        nvl_runtime_print_header(stdout);
        nvl_topo_describe(topo, ranks, a->common.topo, stdout);
        printf("# all %d rank(s) loaded the same model\n", rt->size);
    }
    fflush(stdout);
    return st;
}

const nvl_cli_command_t nvl_cli_topo_command = {
    .args_size = sizeof(topo_args_t),
    .opts = NVL_CLI_OPTS("topo", topo_opts, USAGE, 1),
    .common_offset = offsetof(topo_args_t, common),
    .check_ranks = true,
    .check = check,
    .prepare = prepare,
    .body = body,
};

int nvl_cmd_topo(int argc, char **argv)
{
    topo_args_t args = {0};
    return nvl_cli_command_run(&nvl_cli_topo_command, &args, argc, argv);
}
