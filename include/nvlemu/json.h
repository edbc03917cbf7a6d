/* nvlemu: writing JSON (jansson trees) with numbers a reader can trust.
 * jansson prints a real with a fixed number of significant digits (17 by
 * default: 0.8 comes out as 0.80000000000000004; fewer loses bits).  These
 * print each real in the shortest form that reads back to the same double,
 * laid out as Python's repr does (positional from 1e-4 to 1e16, 0.8, 2.0,
 * 8000000000000.0; exponent outside, 1e+16, 1.5e-05), and everything else
 * as jansson does for the given flags. */
#ifndef NVLEMU_JSON_H
#define NVLEMU_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* The shortest text of a finite double v that strtod reads back as v, in
 * Python's repr layout (always with a '.' or an exponent).  buf must hold
 * at least 32 bytes. */
void nvl_json_format_real(double v, char *buf, size_t len);

/* json_dumpf / json_dump_file with shortest reals.  flags are jansson's
 * (JSON_REAL_PRECISION is ignored).  Return 0, or -1 when jansson cannot
 * encode root or the file cannot be written (errno tells why). */
int nvl_json_dumpf(const json_t *root, FILE *out, size_t flags);
int nvl_json_dump_file(const json_t *root, const char *path, size_t flags);

#endif
