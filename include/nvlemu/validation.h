/* nvlemu: the provenance of an answer.  scripts/validation-report writes
 * tests/data/validation/families.json beside docs/validation.md: each
 * comparison family (its error against measured or published figures)
 * with the regions its rows lie in (class: a collective, a kernel class,
 * a step, serving; hardware: a topology's name; a rank range; a size
 * range in the class's unit) and the attributes an answer must share
 * (stack, GEMM library, dtype).  A command asks which families cover what
 * it answered and prints them at the end of its report, or says the
 * answer is extrapolated (docs/validation.md, "Provenance"). */
#ifndef NVLEMU_VALIDATION_H
#define NVLEMU_VALIDATION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nvlemu/status.h"

/* The file, relative to the source tree; $NVLEMU_VALIDATION names
 * another. */
#define NVL_VALIDATION_FILE "tests/data/validation/families.json"
#define NVL_VALIDATION_ENV "NVLEMU_VALIDATION"

typedef struct nvl_validation nvl_validation_t;

/* Reads the families of `path`: NULL means $NVLEMU_VALIDATION when set,
 * else root/NVL_VALIDATION_FILE (root: the source tree the binary was
 * built from).  A file that cannot be read or parsed, or an entry that is
 * malformed, is reported once naming the file and the line (parse errors)
 * or the entry and key ("families[3].regions[0].ranks: ..."), and
 * NVL_ERR_IO / NVL_ERR_INVALID returned; *out is set only on success. */
nvl_status_t nvl_validation_load(const char *path, const char *root,
                                 nvl_validation_t **out);
void nvl_validation_free(nvl_validation_t *v);

#define NVL_VQUERY_ATTRS 4

/* What an answer was about.  size_lo..size_hi (sized) in the class's
 * unit (bytes for collectives and copies, FLOP for gemm, sequences for
 * decode and prefill steps). */
typedef struct {
    const char *what;     /* for the report: "decode step, batch 8" */
    const char *cls;      /* "all_reduce", "gemm", "decode", ... */
    const char *hardware; /* the topology's name */
    uint32_t ranks;
    bool sized;
    double size_lo, size_hi;
    struct {
        const char *key, *value; /* key NULL: unused */
    } attrs[NVL_VQUERY_ATTRS];
} nvl_vquery_t;

/* One family covering (part of) a query, or none (family NULL). */
typedef struct {
    const nvl_vquery_t *query;
    const char *family;   /* NULL: no family covers the query */
    double geomean_error; /* NAN when unknown */
    double worst_error;
    bool held_out;
    bool extrapolated;    /* the query reaches outside the family's region,
                             or no family covers it */
    char covers[200];     /* the region: "decode on hgx-h200, 1 rank, 1 - 64
                             sequences"; the query's when none covers it */
    /* When none covers it: the family of the query's class and attributes
     * whose region lies closest (the same hardware first, then hardware
     * whose name shares the longest beginning, then the nearest rank
     * count, then the nearest sizes), for the reader to judge
     * how far the answer reaches; nearest NULL when the class has none. */
    const char *nearest;
    double nearest_geomean_error, nearest_worst_error;
    bool nearest_held_out;
    char nearest_covers[200];
} nvl_vmatch_t;

/* The families covering q, at most cap of them, into out; when none
 * covers it, one entry with family NULL, extrapolated and the nearest
 * family (see nvl_vmatch_t).  Returns the count.  A family covers q when one of its regions has q's class and
 * hardware, q's rank count lies in its rank range and, when both are
 * sized, the size ranges overlap, and each of its attributes is one of
 * q's.  extrapolated: q's size range is not inside the region's. */
size_t nvl_validation_match(const nvl_validation_t *v, const nvl_vquery_t *q,
                            nvl_vmatch_t *out, size_t cap);

/* The families of n queries: "# validation:" lines on out (text), or a
 * JSON array of objects {query, family, geomean_error, worst_error,
 * held_out, covers, extrapolated}, where family is null, with `nearest`:
 * {family, geomean_error, worst_error, held_out, covers} or null (NULL
 * when out of memory). */
void nvl_validation_print(const nvl_validation_t *v, const nvl_vquery_t *qs,
                          size_t n, FILE *out);
json_t *nvl_validation_json(const nvl_validation_t *v, const nvl_vquery_t *qs,
                            size_t n);

/* The file the families came from. */
const char *nvl_validation_path(const nvl_validation_t *v);

#endif
