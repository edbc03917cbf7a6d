/* The skeleton every MPI command of nvlemu runs in (cli.h): start, capture,
 * parse, load, check, agree, run, agree, finalize. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* common.topo with common.set_files and then common.sets applied, in
 * order, then its die view under --rank-plays die (a job of `ranks` ranks
 * must fill whole packages; 0: no job to check).  The default topology
 * is relative to the repository root; run from elsewhere, the checkout's
 * copy is used (the binary knows where its sources are). */
static nvl_status_t load_topo(nvl_cli_common_t *common, int ranks,
                              nvl_topo_t **topo_out)
{
    if (common->topo != NULL &&
        strcmp(common->topo, NVL_CLI_DEFAULT_TOPO) == 0 &&
        access(common->topo, F_OK) != 0)
        common->topo = NVL_SOURCE_DIR "/" NVL_CLI_DEFAULT_TOPO;
    nvl_topo_t *topo = NULL;
    nvl_status_t st = nvl_topo_load(common->topo, &topo);
    for (int i = 0; st == NVL_OK && i < common->set_files.n; i++)
        st = nvl_topo_set_file(topo, common->set_files.items[i]);
    for (int i = 0; st == NVL_OK && i < common->sets.n; i++)
        st = nvl_topo_set(topo, common->sets.items[i]);
    if (st == NVL_OK && common->rank_plays == NVL_PLAYS_DIE)
        st = nvl_topo_split_dies(topo);
    if (st == NVL_OK && ranks > 0)
        st = nvl_topo_check_die_ranks(topo, (uint32_t)ranks);
    if (st != NVL_OK) {
        nvl_topo_free(topo);
        return st;
    }
    *topo_out = topo;
    return NVL_OK;
}

int nvl_cli_command_run(const nvl_cli_command_t *cmd, void *args, int argc,
                        char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    nvl_cli_common_t *common =
        (nvl_cli_common_t *)((char *)args + cmd->common_offset);
    nvl_cli_ctx_t ctx = {.rt = &rt, .topo = NULL, .validation = NULL};
    int code = 1, first;

    nvl_runtime_capture_begin();
    nvl_status_t st = nvl_opts_parse(&cmd->opts, argc, argv, args, &first);
    bool go = st == NVL_OK && !common->help;
    if (go && cmd->check != NULL)
        st = cmd->check(args, argc, argv, first);
    if (go && st == NVL_OK && common->topo != NULL)
        st = load_topo(common, cmd->world_is_job ? rt.size : 0, &ctx.topo);
    if (go && st == NVL_OK && cmd->provenance)
        st = nvl_validation_load(NULL, NVL_SOURCE_DIR, &ctx.validation);
    if (go && st == NVL_OK && cmd->prepare != NULL)
        st = cmd->prepare(args, &ctx);
    if (nvl_runtime_capture_end(st) != NVL_OK)
        goto out;
    if (common->help) {
        if (rt.rank == 0)
            nvl_opts_help(&cmd->opts, stdout);
        code = 0;
        goto out;
    }
    if (cmd->check_ranks && ctx.topo != NULL &&
        nvl_runtime_check_topo(ctx.topo) != NVL_OK)
        goto out;
    st = cmd->body(args, &ctx);
    int ok = st == NVL_OK, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    code = all_ok ? 0 : 1;
out:
    if (cmd->cleanup != NULL)
        cmd->cleanup(args);
    nvl_opts_free(&cmd->opts, args);
    nvl_topo_free(ctx.topo);
    nvl_validation_free(ctx.validation);
    nvl_runtime_finalize();
    return code;
}
