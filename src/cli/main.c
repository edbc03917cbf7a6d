/* nvlemu: the command-line entry point; one row per subcommand. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct {
    const char *name;
    nvl_cli_cmd_fn run;
    const char *summary;
} command_t;

static const command_t commands[] = {
    {"run", nvl_cmd_run,
     "serve a Qwen or Llama model with tensor parallelism over the job's ranks: "
     "TTFT, TPOT, tokens/s and where the time goes"},
    {"topo", nvl_cmd_topo,
     "validate a topology file and describe the emulated system"},
    {"coll-table", nvl_cmd_coll_table,
     "NCCL's tuning table (latency / bandwidth per collective, algorithm "
     "and protocol) as the model predicts it"},
    {"cost", nvl_cmd_cost,
     "the cost model of one operation (gemm, attention, elementwise, copy) "
     "on one GPU: time, rate and what limits it"},
    {"sweep", nvl_cmd_sweep,
     "a grid of runs (TP, batch, context, dtypes, what-ifs) with CSV, JSON, "
     "Markdown and plots (bench/sweep; run it without mpirun)"},
    {"serve", nvl_cmd_serve,
     "a workload served with continuous batching: TTFT, TPOT, throughput, "
     "goodput under SLOs, disaggregated prefill/decode (docs/serve.md)"},
    {"generate", nvl_cmd_generate,
     "greedy generation with a Hugging Face model over a TP group"},
    {"quantize", nvl_cmd_quantize,
     "write a checkpoint in NVFP4, MX-FP4, FP8 or FP8 blocks as their "
     "writers do, calibrated with --calib (one process; mpirun optional)"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: mpirun -np N nvlemu COMMAND [options]\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'nvlemu COMMAND --help' describes a command's options; "
                 "'nvlemu --version' prints the version; 'nvlemu --list [FAMILY] "
                 "[--json]' the choices of the options that pick from a "
                 "family.\n");
}

/* This process's rank as the launcher numbers it (Open MPI, PMIx, MPICH
 * and Slurm set one of these), 0 outside a launcher: a mistake made before
 * MPI starts is reported by the first rank alone, as every other. */
static int launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                       "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && *v != '\0')
            return atoi(v);
    }
    return 0;
}

const char *nvl_cli_argv0 = "nvlemu";

int main(int argc, char **argv)
{
    if (argc > 0)
        nvl_cli_argv0 = argv[0];
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("nvlemu %s (commit %s)\n", NVL_VERSION, NVL_GIT_COMMIT);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--list") == 0)
        return nvl_cmd_list(argc - 1, argv + 1);
    if (argc >= 2 &&
        (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; argc >= 2 && i < sizeof commands / sizeof commands[0];
         i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    /* The report is printed inside an MPI job that every rank finalizes,
     * so no rank exits before it is out: a rank's early non-zero exit
     * makes the launcher end the job at once (scripts/nvlrun sets Open
     * MPI's kill delay to 0), which could take the report with it. */
    nvl_runtime_t rt;
    bool up = nvl_runtime_init(&argc, &argv, &rt) == NVL_OK;
    if (up ? rt.rank == 0 : launcher_rank() == 0) {
        usage(stderr);
        char names[128] = "";
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names),
                     "%s%s", i ? ", " : "", commands[i].name);
        if (argc < 2)
            fprintf(stderr, "nvlemu: no command given: one of %s "
                            "(nvlemu --help)\n", names);
        else
            fprintf(stderr, "nvlemu: unknown command '%s': one of %s "
                            "(nvlemu --help)\n", argv[1], names);
        fflush(stderr);
    }
    if (up)
        nvl_runtime_finalize();
    return 2;
}
