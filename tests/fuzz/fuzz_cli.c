/* The command lines of every nvlemu command (run, topo, coll-table,
 * generate) and of the benchmarks, through their own option tables: the
 * first byte picks the command, the remaining lines are its arguments.  A
 * command line is parsed and checked as the program does before MPI work
 * (nvl_opts_parse, the command's check hook; the benchmarks'
 * nvl_bench_check_args at 3 ranks); it either fails with a report or
 * leaves the arguments within their contract: the common options hold a
 * topology path, and --set / --set-file lists hold only command-line
 * strings.  Nothing leaks (LeakSanitizer) once the command's cleanup and
 * nvl_opts_free have run. */
#include "perf.h"
#include "cli.h"
#include "fuzz.h"

static const nvl_cli_command_t *const commands[] = {
    &nvl_cli_run_command, &nvl_cli_topo_command, &nvl_cli_table_command,
    &nvl_cli_gen_command};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void check_list(const nvl_opt_list_t *l, char **argv, int argc)
{
    FUZZ_REQUIRE(l->n >= 0 && l->n <= argc, "a list holds at most argc items");
    for (int i = 0; i < l->n; i++) {
        bool from_argv = false;
        for (int j = 0; j < argc && !from_argv; j++)
            from_argv = l->items[i] >= argv[j] &&
                        l->items[i] <= argv[j] + strlen(argv[j]);
        FUZZ_REQUIRE(from_argv, "list items point into the command line");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (size == 0)
        return 0;
    size_t pick = data[0] % (N_COMMANDS + 1);
    char *text = fuzz_string(data + 1, size - 1);
    char *argv[66];
    int argc = fuzz_argv(text, pick < N_COMMANDS ? "nvlemu" : "all_reduce_perf",
                         argv, 66);
    char *typed[66];
    memcpy(typed, argv, sizeof typed); /* getopt_long reorders argv */
    int first = 0;
    if (pick < N_COMMANDS) {
        const nvl_cli_command_t *cmd = commands[pick];
        void *args = calloc(1, cmd->args_size);
        FUZZ_REQUIRE(args != NULL, "memory");
        nvl_status_t st = nvl_opts_parse(&cmd->opts, argc, argv, args, &first);
        const nvl_cli_common_t *common =
            (const nvl_cli_common_t *)((const char *)args + cmd->common_offset);
        if (st == NVL_OK && !common->help) {
            FUZZ_REQUIRE(first >= 1 && first <= argc,
                         "the first argument is within argv");
            check_list(&common->sets, typed, argc);
            check_list(&common->set_files, typed, argc);
            if (cmd->check != NULL)
                st = cmd->check(args, argc, argv, first);
        }
        if (cmd->cleanup != NULL)
            cmd->cleanup(args);
        nvl_opts_free(&cmd->opts, args);
        free(args);
    } else {
        static const nvl_bench_coll_t *row;
        if (row == NULL)
            row = nvl_bench_coll_find("broadcast");
        nvl_bench_args_t args;
        memset(&args, 0, sizeof args);
        if (nvl_opts_parse(&nvl_bench_opts, argc, argv, &args, &first) ==
                NVL_OK &&
            !args.help) {
            FUZZ_REQUIRE(args.topo != NULL, "--topo is required");
            check_list(&args.sets, typed, argc);
            check_list(&args.set_files, typed, argc);
            if (nvl_bench_check_args(&args, row, 3) == NVL_OK)
                FUZZ_REQUIRE(args.min_bytes <= args.max_bytes &&
                                 args.root < 3 && args.iters >= 1,
                             "checked benchmark arguments are consistent");
        }
        nvl_opts_free(&nvl_bench_opts, &args);
    }
    free(text);
    return 0;
}
