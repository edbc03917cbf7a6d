/* Writing a safetensors file (include/nvlemu/weights.h): the layout
 * weights.c reads, as the safetensors library writes it (an 8-byte
 * little-endian header length, a JSON header padded with spaces to a
 * multiple of 8, the tensors' bytes in header order). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/weights.h"

static json_t *header(const nvl_st_entry_t *t, size_t n)
{
    json_t *h = json_object();
    json_object_set_new(h, "__metadata__", json_pack("{s:s}", "format", "pt"));
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *shape = json_array();
        for (int d = 0; d < t[i].ndim; d++)
            json_array_append_new(shape,
                                  json_integer((json_int_t)t[i].shape[d]));
        json_object_set_new(h, t[i].name,
                            json_pack("{s:s, s:o, s:[I, I]}", "dtype",
                                      t[i].dtype, "shape", shape,
                                      "data_offsets", (json_int_t)at,
                                      (json_int_t)(at + t[i].n_bytes)));
        at += t[i].n_bytes;
    }
    return h;
}

nvl_status_t nvl_st_write(const char *path, const nvl_st_entry_t *t, size_t n)
{
    json_t *h = header(t, n);
    char *text = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    FILE *f = text ? fopen(path, "wb") : NULL;
    if (f == NULL) {
        nvl_report("%s: cannot write: %s", path,
                   text ? strerror(errno) : "out of memory");
        free(text);
        return NVL_ERR_IO;
    }
    size_t len = strlen(text), padded = (len + 7) / 8 * 8;
    unsigned char len8[8];
    for (int k = 0; k < 8; k++)
        len8[k] = (unsigned char)((uint64_t)padded >> (8 * k));
    bool ok = fwrite(len8, 1, 8, f) == 8 && fwrite(text, 1, len, f) == len;
    for (size_t k = len; ok && k < padded; k++)
        ok = fputc(' ', f) != EOF;
    for (size_t i = 0; ok && i < n; i++)
        ok = fwrite(t[i].bytes, 1, t[i].n_bytes, f) == t[i].n_bytes;
    free(text);
    if (fclose(f) != 0 || !ok) {
        nvl_report("%s: write failed: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    return NVL_OK;
}
