/* Private to src/topo: the one table of topology keys.  Parsing, export,
 * validation of ranges and `nvlemu topo --keys` all read it. */
#ifndef NVLEMU_TOPO_KEYS_H
#define NVLEMU_TOPO_KEYS_H

#include <stddef.h>

#include "nvlemu/topo.h"
#include "nvlemu/units.h"

typedef enum {
    NVL_FIELD_U32,
    NVL_FIELD_U64,
    NVL_FIELD_I64, /* picoseconds */
    NVL_FIELD_F64,
    NVL_FIELD_BOOL,
    NVL_FIELD_STR
} nvl_field_t;

typedef struct {
    const char *section; /* "gpu", "nvlink", ... */
    const char *key;
    nvl_qty_kind_t kind; /* ignored for NVL_FIELD_STR */
    nvl_field_t field;
    size_t offset;       /* into nvl_topo_t (or nvl_gpu_override_t) */
    size_t size;         /* of the field, for strings */
    const char *dflt;    /* NULL: required */
    double min, max;     /* allowed range, in base units */
    const char *example;
    const char *doc;
} nvl_topo_key_t;

#define NVL_TOPO_MAX_KEYS 256

extern const nvl_topo_key_t nvl_topo_keys[];
extern const size_t nvl_topo_key_count;

/* Keys of [gpu.N] / [gpu.A-B] override sections (offsets into
 * nvl_gpu_override_t). */
extern const nvl_topo_key_t nvl_topo_gpu_keys[];
extern const size_t nvl_topo_gpu_key_count;

/* Section names in table order, NULL-terminated. */
extern const char *const nvl_topo_sections[];

/* Parses text into the field at base + k->offset.  On error sets *why_out
 * (static or written to why_buf) and returns NVL_ERR_INVALID; reports
 * nothing. */
nvl_status_t nvl_topo_key_parse(const nvl_topo_key_t *k, const char *text,
                                void *base, char *why_buf, size_t why_len);

/* Formats the field at base + k->offset as it is written in a file. */
void nvl_topo_key_format(const nvl_topo_key_t *k, const void *base,
                         char *buf, size_t len);

/* The default override (nothing changed). */
extern const nvl_gpu_override_t nvl_topo_override_none;

/* Validates the cross-key rules of a fully parsed topology; reports the
 * first broken rule naming origin, and the line of the key it blames when
 * key_lines (per row of nvl_topo_keys: the line that set it, 0 if
 * defaulted) and links_down_lines (per GPU: the line of the override that
 * set its links_down, 0 if none) are given; both may be NULL.  Returns
 * NVL_ERR_INVALID then. */
nvl_status_t nvl_topo_validate(const nvl_topo_t *topo, const char *origin,
                               const int *key_lines,
                               const int *links_down_lines);

/* One what-if assignment (origin names it in reports) applied to topo in
 * place, without validating: a main key, or a [gpu.N] / gpu[N] override
 * of GPUs that exist (the GPU count cannot change).  Reports and returns
 * non-OK on a bad key or value; topo may then be partly changed (--set
 * applies it to a copy). */
nvl_status_t nvl_topo_assign(nvl_topo_t *topo, const char *origin,
                             const char *section, const char *key,
                             const char *value);

#endif
