/* nvlemu: families of named members (allreduce implementations, stacks,
 * schedulers, protocols, model types ...), each kept as one table by the
 * module that uses it.
 *
 * A family is its owner's own row table: every row begins with an
 * nvl_member_t (the member's name and a one-line description) and goes on
 * with whatever the owner needs (costs, rules, function pointers); a
 * member's value is its row's index, so an owner's enum numbers its rows.
 * nvl_family_t views such a table by stride, so the option parser
 * (NVL_OPT_ENUM rows with .family), the error texts, --help and
 * `nvlemu --list FAMILY` read the names from the one table that also
 * carries the members' behaviour: adding a member is adding a row. */
#ifndef NVLEMU_FAMILY_H
#define NVLEMU_FAMILY_H

#include <stddef.h>

#include "nvlemu/status.h"

/* The head of every row of a family's table. */
typedef struct {
    const char *name; /* as typed on the command line: "twoshot" */
    const char *doc;  /* one line: what this member is, with its source */
} nvl_member_t;

typedef struct {
    const char *name;  /* the family, as `nvlemu --list` names it */
    const char *doc;   /* one line: what its members are */
    const void *rows;  /* the owner's table; each row starts with an
                          nvl_member_t */
    size_t n_rows;
    size_t stride;     /* sizeof one row */
} nvl_family_t;

/* Describes the table ROWS (an array of a row type whose first field is an
 * nvl_member_t) as family NAME. */
#define NVL_FAMILY(NAME, DOC, ROWS)                                         \
    {.name = (NAME), .doc = (DOC), .rows = (ROWS),                          \
     .n_rows = sizeof(ROWS) / sizeof((ROWS)[0]),                            \
     .stride = sizeof((ROWS)[0])}

/* The head of row value (0 <= value < n_rows), or NULL out of range. */
const nvl_member_t *nvl_family_member(const nvl_family_t *family, int value);

/* The name of row value, or "?" out of range. */
const char *nvl_family_name(const nvl_family_t *family, int value);

/* The value of the member called name (exact match).  Returns
 * NVL_ERR_INVALID, without reporting, if there is none: the caller knows
 * which option or file line to name (nvl_family_names lists the choices). */
nvl_status_t nvl_family_parse(const nvl_family_t *family, const char *name,
                              int *value_out);

/* As nvl_family_parse, and when there is no such member reports
 * "WHAT: unknown value 'NAME' (expected one of: a, b, c)" (what names the
 * option or key, as the user spelled it). */
nvl_status_t nvl_family_parse_report(const nvl_family_t *family,
                                     const char *what, const char *name,
                                     int *value_out);

/* Writes the members' names into buf, sep between them and last_sep
 * between the last two: (", ", " or ") gives "a, b or c", ("|", "|")
 * "a|b|c"; truncated to fit len (len >= 1). */
void nvl_family_names(const nvl_family_t *family, const char *sep,
                      const char *last_sep, char *buf, size_t len);

#endif
