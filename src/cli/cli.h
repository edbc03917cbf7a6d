/* Private to src/cli: the subcommands, the option rows they share and the
 * skeleton every MPI command runs in (command.c). */
#ifndef NVLEMU_CLI_H
#define NVLEMU_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "nvlemu/cost.h"
#include "nvlemu/engine.h"
#include "nvlemu/model.h"
#include "nvlemu/opts.h"
#include "nvlemu/runtime.h"
#include "nvlemu/status.h"
#include "nvlemu/topo.h"
#include "nvlemu/validation.h"

/* What every command's arguments hold, as a member named `common`: the
 * topology, its what-ifs, JSON output and help. */
typedef struct {
    const char *topo;     /* --topo FILE (topo: or its FILE argument) */
    nvl_opt_list_t sets;  /* --set SECTION.KEY=VALUE, in order */
    nvl_opt_list_t set_files; /* --set-file FILE, applied before --set */
    const char *json;     /* --json FILE ('-': standard output), or NULL */
    int help;             /* --help */
    int rank_plays;       /* --rank-plays (nvl_rank_plays_t): the skeleton
                             loads the die view for NVL_PLAYS_DIE */
    const char *points;   /* --points FILE (commands with .points): set
                             only when a point's own line names it */
} nvl_cli_common_t;

#define NVL_CLI_DEFAULT_TOPO "topology/gb200-nvl72.topo"

/* ---- option rows shared by the commands ----------------------------------
 * For an arguments struct `type` with an nvl_cli_common_t named common
 * (and, for the rows that say so, the fields named there). */

#define NVL_CLI_OPT_TOPO(type, default_, required_)                         \
    {.name = "topo", .kind = NVL_OPT_STRING,                                \
     .offset = offsetof(type, common.topo), .arg = "FILE",                  \
     .doc = "the topology file to emulate", .def = (default_),              \
     .required = (required_)}

#define NVL_CLI_OPT_SET(type)                                               \
    {.name = "set", .kind = NVL_OPT_LIST,                                   \
     .offset = offsetof(type, common.sets), .arg = "SECTION.KEY=VALUE",     \
     .doc = "topology what-if, repeatable (nvlink.link_bw=100GB/s, "        \
            "gpu[17].clock_scale=0.8)"}

#define NVL_CLI_OPT_SET_FILE(type)                                          \
    {.name = "set-file", .kind = NVL_OPT_LIST,                              \
     .offset = offsetof(type, common.set_files), .arg = "FILE",             \
     .doc = "topology what-ifs from a file, one SECTION.KEY=VALUE a line "  \
            "('#' comments), repeatable; applied before --set"}

#define NVL_CLI_OPT_JSON(type, doc_)                                        \
    {.name = "json", .kind = NVL_OPT_STRING,                                \
     .offset = offsetof(type, common.json), .arg = "FILE", .doc = (doc_)}

#define NVL_CLI_OPT_HELP(type)                                              \
    {.name = "help", .kind = NVL_OPT_HELP,                                  \
     .offset = offsetof(type, common.help), .doc = "this help"}

/* --points FILE: the command once per line of FILE, in one MPI job (the
 * skeleton takes it off the command line before parsing; the row documents
 * it and catches a point's line that names it again). */
#define NVL_CLI_OPT_POINTS(type)                                            \
    {.name = "points", .kind = NVL_OPT_STRING,                              \
     .offset = offsetof(type, common.points), .arg = "FILE",                \
     .doc = "run once per line of FILE, each line's options added to the "  \
            "others (split as the shell splits words; '#' comments), in "   \
            "one MPI job: the job's start-up paid once"}

/* --rank-plays gpu|die (the benches' table has the same row). */
#define NVL_CLI_OPT_RANK_PLAYS(type)                                        \
    NVL_TOPO_OPT_RANK_PLAYS(type, common.rank_plays)

/* --ranks N into `long ranks` (0 when not given). */
#define NVL_CLI_OPT_RANKS(type, doc_)                                       \
    {.name = "ranks", .kind = NVL_OPT_LONG, .offset = offsetof(type, ranks), \
     .arg = "N", .doc = (doc_), .min = 1, .max = NVL_TOPO_MAX_GPUS}

/* ---- provenance ------------------------------------------------------------
 * A run's or a serving job's queries for its validation families
 * (provenance.c): its decode steps (when it has any) and prefill at its
 * batch and stack, the layers' allreduce at TP > 1 (class all_reduce for
 * NCCL's, allreduce-NAME for an engine's kernel) from a decode step's
 * activations to the prefill's, and the GEMMs in the stack's library. */
typedef struct {
    const nvl_topo_t *topo;
    const nvl_model_config_t *cfg;
    int tp, allreduce;
    nvl_stack_t stack;
    nvl_wdtype_t dtype;
    long batch;
    uint64_t prompt_len;
    bool decode;
} nvl_cli_step_t;

#define NVL_CLI_QUERIES 8
typedef struct {
    nvl_vquery_t q[NVL_CLI_QUERIES];
    char cls[NVL_CLI_QUERIES][48], what[NVL_CLI_QUERIES][96];
    size_t n;
} nvl_cli_queries_t;

void nvl_cli_step_queries(const nvl_cli_step_t *s, nvl_cli_queries_t *qs_out);

/* ---- the command skeleton -------------------------------------------------
 * nvl_cli_command_run starts MPI (nvl_runtime_init) and, with every rank's
 * reports captured (each error printed once): parses the options, runs
 * .check, loads common.topo and applies common.sets (and, with
 * --rank-plays die, takes its die view and checks that the ranks fill
 * whole packages when .world_is_job), loads the validation families on
 * rank 0 (.provenance), runs .prepare; agrees
 * on the status; prints --help on rank 0 and stops there; checks that the
 * ranks fit and agree on the topology (.check_ranks); runs .body on every
 * rank and agrees on its status; runs .cleanup and finalizes.  Returns the
 * exit code: 0, or 1 on every rank when any rank failed. */

/* What the hooks get besides the command's arguments. */
typedef struct {
    const nvl_runtime_t *rt;
    nvl_topo_t *topo; /* NULL when the command was given none */
    /* the validation families (.provenance, rank 0 only: the rank that
     * reports; else NULL) */
    nvl_validation_t *validation;
} nvl_cli_ctx_t;

/* The nvl_opts_t of subcommand name_ (a string literal) with option table
 * table_ (an array) and max_args_ arguments besides the options. */
#define NVL_CLI_OPTS(name_, table_, usage_, max_args_)                     \
    {.prefix = name_, .help_hint = "nvlemu " name_ " --help",               \
     .usage = usage_, .opts = table_,                                       \
     .n_opts = sizeof table_ / sizeof table_[0], .max_args = max_args_}

typedef struct {
    nvl_opts_t opts;
    size_t args_size;     /* of the command's arguments struct */
    size_t common_offset; /* of the nvl_cli_common_t in the arguments */
    bool check_ranks;     /* nvl_runtime_check_topo before .body */
    bool provenance;      /* loads the validation families into
                             ctx.validation with the topology (its report
                             ends with the families covering it) */
    bool world_is_job;    /* the MPI ranks are the job (run, generate):
                             under --rank-plays die they must fill whole
                             packages (nvl_topo_check_die_ranks) */
    bool points;          /* takes --points FILE (NVL_CLI_OPT_POINTS) */
    /* After parsing, before the topology: the arguments that are not
     * options (argv[first..argc-1]) and what no single row checks.  May be
     * NULL. */
    nvl_status_t (*check)(void *args, int argc, char **argv, int first);
    /* After the topology is loaded, reports still captured: inputs that
     * need it (a model, an output file).  May be NULL. */
    nvl_status_t (*prepare)(void *args, const nvl_cli_ctx_t *ctx);
    /* The command; returns this rank's status, the skeleton agrees. */
    nvl_status_t (*body)(void *args, const nvl_cli_ctx_t *ctx);
    /* Frees what check, prepare and body left in args.  May be NULL. */
    void (*cleanup)(void *args);
} nvl_cli_command_t;

/* The MPI commands, for tools that parse their command lines
 * (tests/fuzz/fuzz_cli.c). */
extern const nvl_cli_command_t nvl_cli_run_command, nvl_cli_topo_command,
    nvl_cli_table_command, nvl_cli_gen_command, nvl_cli_cost_command,
    nvl_cli_serve_command;

/* args: the command's arguments struct (zeroed here before each run;
 * fields without a row default keep that zero).  With --points FILE (a
 * command with .points) the command runs once per line of FILE, in order,
 * inside the one MPI job: the line's words follow the other arguments; the
 * job stops at the first point that fails, rank 0 naming FILE:LINE, and
 * exits non-zero on every rank. */
int nvl_cli_command_run(const nvl_cli_command_t *cmd, void *args, int argc,
                        char **argv);

/* Opens path for writing ('-': standard output) for --json and the like;
 * reports "OPTION PATH: cannot open for writing: REASON" and returns
 * NULL. */
FILE *nvl_cli_open_out(const char *option, const char *path);

/* Checks, before a run, that path ('-': standard output) can be written
 * at its end: opens it for appending and closes it again, removing it if
 * it did not exist.  Reports "OPTION PATH: cannot write: REASON" and
 * returns NVL_ERR_IO if not. */
nvl_status_t nvl_cli_check_writable(const char *option, const char *path);

/* Closes what nvl_cli_open_out opened (not standard output); reports
 * "OPTION PATH: write failed" and returns NVL_ERR_IO if writing failed. */
nvl_status_t nvl_cli_close_out(const char *option, const char *path,
                               FILE *stream);

typedef int (*nvl_cli_cmd_fn)(int argc, char **argv);

/* The program as the user typed it (main's argv[0]), for messages. */
extern const char *nvl_cli_argv0;

int nvl_cmd_topo(int argc, char **argv);
int nvl_cmd_generate(int argc, char **argv);
int nvl_cmd_coll_table(int argc, char **argv);
int nvl_cmd_cost(int argc, char **argv);
int nvl_cmd_run(int argc, char **argv);
int nvl_cmd_sweep(int argc, char **argv);
int nvl_cmd_serve(int argc, char **argv);
int nvl_cmd_quantize(int argc, char **argv);
/* `nvlemu --list [FAMILY] [--json]` (argv[0] is "--list"): the members of
 * every registered family, or of one; 0, or 2 on a bad argument. */
int nvl_cmd_list(int argc, char **argv);

#endif
