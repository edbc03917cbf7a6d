/* nvlemu: table-driven command-line options.
 *
 * A program describes its options as one const table of nvl_opt_t rows
 * (UCX's config tables: name, default, doc, offset, parser).  The same rows
 * serve parsing (getopt_long), defaults (each row's .def, parsed like a
 * command-line value before argv, so a default lives in one place),
 * validation (ranges, name tables, required rows) and --help (which prints
 * each row's default and alias from the row).  Values land in the caller's
 * arguments struct at each row's offset. */
#ifndef NVLEMU_OPTS_H
#define NVLEMU_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "nvlemu/family.h"
#include "nvlemu/status.h"
#include "nvlemu/units.h"

/* How a row reads its value, and the type of its field. */
typedef enum {
    NVL_OPT_FLAG,   /* int: 1 when given; takes no value */
    NVL_OPT_HELP,   /* int: as FLAG, and parsing skips the required rows
                       and the argument count (the program prints help) */
    NVL_OPT_STRING, /* const char *: the value itself (argv's storage) */
    NVL_OPT_LONG,   /* long: a whole number in [min, max] */
    NVL_OPT_DOUBLE, /* double: a number in [min_d, max_d] */
    NVL_OPT_ENUM,   /* int: the .value of the row of .names matching, or
                       the row index of .family's member of that name */
    NVL_OPT_LIST,   /* nvl_opt_list_t: every occurrence, in order */
    NVL_OPT_QTY,    /* double: a quantity of kind .qty (util/units'
                       grammar) in the unit .unit, which a bare number is
                       read in; in [min_d, max_d] of that unit */
    NVL_OPT_SIZE,   /* size_t: a whole number of bytes in util/units'
                       grammar (8, 64K, 1GiB, 2GB); in [min_d, max_d] */
    NVL_OPT_CUSTOM  /* whatever .parse writes */
} nvl_opt_kind_t;

/* One accepted name of an NVL_OPT_ENUM row; a NULL name ends the table. */
typedef struct {
    const char *name;
    int value;
} nvl_opt_name_t;

/* A repeated option's values, in command-line order (pointers into argv);
 * nvl_opts_free frees the array. */
typedef struct {
    const char **items;
    int n;
} nvl_opt_list_t;

/* Parses text for the option spelled label ("--dtype"), writes the field
 * at *field_out; reports (naming label and text) and returns non-OK if
 * text is bad. */
typedef nvl_status_t (*nvl_opt_parse_fn)(const char *label, const char *text,
                                         void *field_out);

typedef struct {
    const char *name;   /* long name, without "--" */
    const char *alias;  /* an older spelling still accepted, or NULL */
    char short_name;    /* a one-letter spelling (-b), or 0 */
    nvl_opt_kind_t kind;
    size_t offset;      /* of the field in the arguments struct */
    const char *arg;    /* the value's name in --help (NULL: a flag) */
    const char *doc;
    const char *def;    /* default as command-line text, or NULL: the
                           field keeps what the caller put there */
    bool required;      /* must be given (unless help is) */
    long min, max;      /* NVL_OPT_LONG */
    double min_d, max_d;          /* NVL_OPT_DOUBLE, QTY, SIZE */
    nvl_qty_kind_t qty;           /* NVL_OPT_QTY */
    const char *unit;             /* NVL_OPT_QTY: "ms", "B", ... */
    const nvl_opt_name_t *names;  /* NVL_OPT_ENUM: a list of its own, */
    const nvl_family_t *family;   /* or an owner's family (family.h); */
    const char *also;             /* with .family: a name accepted besides
                                     its members' ("auto"), listed after
                                     them in --help */
    nvl_opt_parse_fn parse;       /* NVL_OPT_CUSTOM */
} nvl_opt_t;

/* A program's (or a subcommand's) option table. */
typedef struct {
    const char *prefix;    /* names the program in messages ("run: ..."),
                              or NULL */
    const char *help_hint; /* what to run for help: "nvlemu run --help" */
    const char *usage;     /* one line, after "usage: " */
    const char *intro;     /* printed between usage and options, or NULL */
    const nvl_opt_t *opts;
    size_t n_opts;
    int max_args;          /* arguments that are not options (0, 1, ...) */
} nvl_opts_t;

/* Parses argv[1..argc-1] into args: first every row's default, then each
 * option in order (a LIST row appends; any other row's last value wins).
 * Reports once, naming the option as the user spelled it and the value:
 * an unknown option, a missing value, a bad value, a missing required
 * option, or more than max_args arguments.  *first_arg_out: the index of
 * the first argument that is not an option (getopt_long moves them to the
 * end).  On error the fields may be partly set; nvl_opts_free still frees
 * them.  Not thread-safe (getopt_long). */
nvl_status_t nvl_opts_parse(const nvl_opts_t *set, int argc, char **argv,
                            void *args, int *first_arg_out);

/* Prints "usage: ...", the intro and one line per row: its spellings, its
 * doc, its default and its alias. */
void nvl_opts_help(const nvl_opts_t *set, FILE *out);

/* Frees what parsing allocated in args (the LIST rows' arrays). */
void nvl_opts_free(const nvl_opts_t *set, void *args);

#endif
