/* nvlemu topo FILE: validate a topology on every rank, check that all ranks
 * agree, and describe it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "nvlemu/runtime.h"
#include "nvlemu/topo.h"

enum { OPT_RANKS = 1, OPT_JSON, OPT_SET, OPT_EXPORT, OPT_KEYS, OPT_HELP };

static const nvl_cli_opt_t topo_opts[] = {
    {"ranks", required_argument, OPT_RANKS, "N",
     "describe a job of N ranks (default: the MPI world size, or every GPU "
     "when run as one process)"},
    {"json", required_argument, OPT_JSON, "FILE",
     "write the description as JSON to FILE ('-': standard output)"},
    {"set", required_argument, OPT_SET, "SECTION.KEY=VALUE",
     "what-if override, repeatable (nvlink.link_bw=100GB/s, "
     "gpu[17].clock_scale=0.8)"},
    {"export", no_argument, OPT_EXPORT, NULL,
     "print the canonical topology file (after --set) instead"},
    {"keys", no_argument, OPT_KEYS, NULL,
     "print the reference of every topology key (Markdown) and exit"},
    {"help", no_argument, OPT_HELP, NULL, "this help"},
};
#define N_OPTS (sizeof topo_opts / sizeof topo_opts[0])
#define USAGE "[mpirun -np N] nvlemu topo FILE [--ranks N] [--json FILE] " \
              "[--set K=V]... [--export] [--keys]"

typedef struct {
    const char *file;
    long ranks;
    const char *json;
    const char **sets;
    int n_sets;
    int export_file, keys, help;
} topo_args_t;

static nvl_status_t on_opt(int id, const char *arg, void *ctx)
{
    topo_args_t *a = ctx;
    switch (id) {
    case OPT_RANKS:
        a->ranks = nvl_cli_positive("--ranks", arg, NVL_TOPO_MAX_GPUS);
        return a->ranks < 0 ? NVL_ERR_INVALID : NVL_OK;
    case OPT_JSON: a->json = arg; break;
    case OPT_SET: a->sets[a->n_sets++] = arg; break;
    case OPT_EXPORT: a->export_file = 1; break;
    case OPT_KEYS: a->keys = 1; break;
    case OPT_HELP: a->help = 1; break;
    }
    return NVL_OK;
}

static nvl_status_t parse_args(int argc, char **argv, topo_args_t *a)
{
    a->sets = calloc((size_t)argc, sizeof *a->sets);
    if (a->sets == NULL)
        return NVL_ERR_NOMEM;
    int first;
    nvl_status_t st = nvl_cli_parse("topo", argc, argv, topo_opts, N_OPTS,
                                    on_opt, a, &first);
    if (st != NVL_OK || a->help || a->keys)
        return st;
    if (first != argc - 1) {
        nvl_report("topo: expected one topology FILE (usage: %s)", USAGE);
        return NVL_ERR_INVALID;
    }
    a->file = argv[first];
    return NVL_OK;
}

int nvl_cmd_topo(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    topo_args_t args = {0};
    nvl_topo_t *topo = NULL;
    int code = 1;

    nvl_runtime_capture_begin();
    nvl_status_t st = parse_args(argc, argv, &args);
    if (st == NVL_OK && args.file != NULL)
        st = nvl_topo_load(args.file, &topo);
    for (int i = 0; st == NVL_OK && i < args.n_sets; i++)
        st = nvl_topo_set(topo, args.sets[i]);
    if (st == NVL_OK && topo != NULL && args.ranks > (long)topo->gpus) {
        nvl_report("--ranks %ld: topology '%s' has only %u GPUs", args.ranks,
                   topo->name, topo->gpus);
        st = NVL_ERR_INVALID;
    }
    if (nvl_runtime_capture_end(st) != NVL_OK)
        goto out;
    if (args.help || args.keys) {
        if (rt.rank == 0 && args.help)
            nvl_cli_help(stdout, USAGE, topo_opts, N_OPTS);
        if (rt.rank == 0 && args.keys)
            nvl_topo_keys_markdown(stdout);
        code = 0;
        goto out;
    }
    if (nvl_runtime_check_topo(topo) != NVL_OK)
        goto out;

    uint32_t ranks = args.ranks > 0 ? (uint32_t)args.ranks
                     : rt.size > 1  ? (uint32_t)rt.size
                                    : topo->gpus;
    st = NVL_OK;
    if (rt.rank == 0) {
        if (args.export_file) {
            st = nvl_topo_export(topo, stdout);
        } else if (args.json != NULL) {
            FILE *out = strcmp(args.json, "-") == 0 ? stdout
                                                    : fopen(args.json, "w");
            if (out == NULL) {
                nvl_report("--json %s: cannot open for writing", args.json);
                st = NVL_ERR_IO;
            } else {
                st = nvl_topo_describe_json(topo, ranks, args.file, out);
                if (out != stdout && fclose(out) != 0) {
                    nvl_report("--json %s: write failed", args.json);
                    st = NVL_ERR_IO;
                }
            }
        } else {
            nvl_runtime_print_header(stdout);
            nvl_topo_describe(topo, ranks, args.file, stdout);
            printf("# all %d rank(s) loaded the same model\n", rt.size);
        }
        fflush(stdout);
    }
    int ok = st == NVL_OK, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    code = all_ok ? 0 : 1;
out:
    nvl_topo_free(topo);
    free(args.sets);
    nvl_runtime_finalize();
    return code;
}
