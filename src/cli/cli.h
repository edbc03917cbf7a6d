/* Private to src/cli: the subcommands and their shared option table type. */
#ifndef NVLEMU_CLI_H
#define NVLEMU_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "nvlemu/status.h"

/* One option of a command: parsing (getopt_long) and --help read the same
 * row. */
typedef struct {
    const char *name;    /* long name, without "--" */
    int has_arg;         /* no_argument / required_argument */
    int id;              /* returned by getopt_long */
    const char *arg;     /* name of the argument in --help, or NULL */
    const char *doc;
} nvl_cli_opt_t;

/* Builds the getopt_long table for opts (n rows) into longopts (n + 1
 * entries). */
void nvl_cli_longopts(const nvl_cli_opt_t *opts, size_t n,
                      struct option *longopts);

/* Prints "usage" and the option table. */
void nvl_cli_help(FILE *out, const char *usage, const nvl_cli_opt_t *opts,
                  size_t n);

/* Receives one parsed option (arg is NULL for flags); returns non-OK,
 * having reported, to stop parsing. */
typedef nvl_status_t (*nvl_cli_on_opt_t)(int id, const char *arg, void *ctx);

/* Parses argv[1..] with the option table: calls on_opt for each option,
 * reports an unknown option or a missing value naming the command, and sets
 * *first_arg_out to the index of the first argument that is not an option.
 * Returns the first error. */
nvl_status_t nvl_cli_parse(const char *command, int argc, char **argv,
                           const nvl_cli_opt_t *opts, size_t n,
                           nvl_cli_on_opt_t on_opt, void *ctx,
                           int *first_arg_out);

/* Parses a positive integer option value; reports and returns -1 if bad. */
long nvl_cli_positive(const char *option, const char *text, long max);

/* The placement options of `run` and `generate` (a mixture of experts),
 * with their ids in the command's table. */
#define NVL_CLI_PLACEMENT_OPTS(ep_id, attn_par_id)                          \
    {"ep", required_argument, (ep_id), "N",                                 \
     "mixture of experts: spread the experts over N groups of ranks "       \
     "(expert parallelism; N divides the rank count; default 1: experts "   \
     "tensor-parallel)"},                                                   \
    {"attn-parallel", required_argument, (attn_par_id), "tp|dp",            \
     "mixture of experts: attention tensor-parallel over all ranks, or "    \
     "data-parallel (each rank its own sequences, at least one each; "      \
     "default tp)"}

/* "TP N", or "EP e x expert-TP N/e, attention TP|DP N": how `ranks`
 * ranks hold the model, for report headers. */
void nvl_cli_placement_name(char *buf, size_t len, int ranks, long ep,
                            bool attn_dp);

/* Parses --attn-parallel's value: "tp" (false) or "dp" (true); reports
 * anything else. */
nvl_status_t nvl_cli_attn_parallel_parse(const char *text, bool *dp_out);

typedef int (*nvl_cli_cmd_fn)(int argc, char **argv);

int nvl_cmd_topo(int argc, char **argv);
int nvl_cmd_generate(int argc, char **argv);
int nvl_cmd_coll_table(int argc, char **argv);
int nvl_cmd_run(int argc, char **argv);
int nvl_cmd_sweep(int argc, char **argv);

#endif
