/* nvlemu: quantities with units, as written in topology files and on the
 * command line ("50GB/s", "0.8us", "186GB", "2.5PFLOP/s", "400Gb/s").
 *
 * Values are held in base units: bytes, bytes per second, picoseconds,
 * FLOP per second, operations per second, hertz.  Decimal prefixes (K, M, G,
 * T, P) before a unit are powers of 1000, binary ones (Ki, Mi, Gi, Ti)
 * powers of 1024; lower-case b in a bandwidth means bits.  A size may also
 * end in nccl-tests' bare suffixes K, M, G, T (either case: powers of 1024,
 * as nccl-tests' -b/-e read them), so 1G is 1GiB while 1GB is 10^9 bytes.
 * docs/units.md states the grammar for users. */
#ifndef NVLEMU_UNITS_H
#define NVLEMU_UNITS_H

#include <stddef.h>

#include "nvlemu/status.h"

typedef enum {
    NVL_QTY_COUNT, /* a non-negative integer, no unit: "18" */
    NVL_QTY_RATIO, /* a plain number or a percentage: "0.8", "80%" */
    NVL_QTY_BOOL,  /* yes/no, true/false, on/off, 1/0 */
    NVL_QTY_BYTES, /* "186GB", "80GiB" -> bytes */
    NVL_QTY_BW,    /* "50GB/s", "400Gb/s" -> bytes per second */
    NVL_QTY_TIME,  /* "0.8us", "120ns" -> picoseconds */
    NVL_QTY_FLOPS, /* "2.5PFLOP/s", "989TFLOPS" -> FLOP per second */
    NVL_QTY_RATE,  /* "4.6Top/s" -> operations per second */
    NVL_QTY_FREQ,  /* "1.965GHz" -> hertz */
    NVL_QTY_KIND_COUNT
} nvl_qty_kind_t;

/* Parses text as a quantity of the given kind into its base unit.
 * On error returns NVL_ERR_INVALID and writes to why (why_len bytes) what
 * was wrong, naming the offending unit; reports nothing (the caller knows
 * the file and line).  *value_out is set only on success. */
nvl_status_t nvl_qty_parse(nvl_qty_kind_t kind, const char *text,
                           double *value_out, char *why, size_t why_len);

/* As nvl_qty_parse, but a number written without a unit is read in
 * bare_unit (a suffix of kind's table: "B" for a size typed as nccl-tests
 * does, "ms" for a latency bound); bare_unit NULL requires a unit. */
nvl_status_t nvl_qty_parse_in(nvl_qty_kind_t kind, const char *text,
                              const char *bare_unit, double *value_out,
                              char *why, size_t why_len);

/* Base units per one suffix of kind (1e9 for "ms" of a time), or 0 when
 * kind has no such unit. */
double nvl_qty_unit_scale(nvl_qty_kind_t kind, const char *suffix);

/* Writes value (base unit) as text that nvl_qty_parse reads back to the
 * same double, bit for bit, with the most readable prefix that allows it.
 * Returns the number of characters written (as snprintf). */
int nvl_qty_format(nvl_qty_kind_t kind, double value, char *buf, size_t len);

/* The units accepted for a kind, as a human-readable list ("" if none). */
const char *nvl_qty_units(nvl_qty_kind_t kind);

/* A short name of the kind ("bandwidth", "time", ...). */
const char *nvl_qty_kind_name(nvl_qty_kind_t kind);

#endif
