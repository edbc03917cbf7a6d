/* Private to src/cli: the subcommands and their shared option table type. */
#ifndef NVLEMU_CLI_H
#define NVLEMU_CLI_H

#include <getopt.h>
#include <stdio.h>

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

/* Parses a positive integer option value; reports and returns -1 if bad. */
long nvl_cli_positive(const char *option, const char *text, long max);

typedef int (*nvl_cli_cmd_fn)(int argc, char **argv);

int nvl_cmd_topo(int argc, char **argv);
int nvl_cmd_generate(int argc, char **argv);
int nvl_cmd_coll_table(int argc, char **argv);

#endif
