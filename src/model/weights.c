/* Safetensors: an 8-byte little-endian header length, a JSON header
 * {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...}, then the
 * data; offsets count from the end of the header. */
#include "nvlemu/weights.h"

#include "weights_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    char *path;
    int fd;
    uint64_t data_start, size;
    json_t *header; /* tensor name -> description */
} st_file_t;

struct nvl_weights {
    st_file_t *files;
    int n_files;
    json_t *weight_map; /* sharded: tensor -> file name; NULL: one file */
    char index_path[2048]; /* sharded: the index file; else "" */
    nvl_quant_config_t quant; /* the format its config declares */
};

/* the dtypes a header may name: read as float32 where dtype is one
 * (NVL_DT_COUNT: only the quantized formats' codes read them, qweights.c) */
static const struct {
    const char *name;
    nvl_dtype_t dtype;
    uint64_t size;
} st_dtypes[] = {{"F32", NVL_DT_F32, 4},        {"BF16", NVL_DT_BF16, 2},
                 {"F16", NVL_DT_F16, 2},        {"U8", NVL_DT_COUNT, 1},
                 {"F8_E4M3", NVL_DT_COUNT, 1},  {"I8", NVL_DT_COUNT, 1},
                 {"I32", NVL_DT_COUNT, 4},      {"I64", NVL_DT_COUNT, 8}};
#define N_READABLE 3 /* the first rows */

static nvl_status_t check_tensors(st_file_t *f, const char *path);

static nvl_status_t open_file(const char *path, st_file_t *f)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->path = strdup(path);
    f->fd = open(path, O_RDONLY);
    struct stat st;
    if (f->fd < 0 || fstat(f->fd, &st) != 0) {
        nvl_report("%s: cannot open: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    f->size = (uint64_t)st.st_size;
    unsigned char len8[8];
    if (f->size < 8 || pread(f->fd, len8, 8, 0) != 8) {
        nvl_report("%s: truncated (no safetensors header length)", path);
        return NVL_ERR_INVALID;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | len8[i];
    if (n > f->size - 8 || n > (uint64_t)1 << 30) {
        nvl_report("%s: header length %llu runs past the end of the file "
                   "(%llu bytes)", path, (unsigned long long)n,
                   (unsigned long long)f->size);
        return NVL_ERR_INVALID;
    }
    char *text = malloc(n + 1);
    if (text == NULL || pread(f->fd, text, n, 8) != (ssize_t)n) {
        free(text);
        nvl_report("%s: cannot read the %llu-byte header", path,
                   (unsigned long long)n);
        return NVL_ERR_IO;
    }
    json_error_t err;
    f->header = json_loadb(text, n, 0, &err);
    free(text);
    if (f->header == NULL || !json_is_object(f->header)) {
        nvl_report("%s: safetensors header is not a JSON object (%s at "
                   "column %d)", path, f->header ? "not an object" : err.text,
                   err.column);
        return NVL_ERR_INVALID;
    }
    f->data_start = 8 + n;
    return check_tensors(f, path);
}

/* A non-negative JSON integer into *v; false for anything else. */
static bool get_u64(const json_t *j, uint64_t *v)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return false;
    *v = (uint64_t)json_integer_value(j);
    return true;
}

static int by_begin(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* One tensor of the header, checked as the safetensors format requires:
 * a known layout (dtype, shape, data_offsets), non-negative integers,
 * begin <= end inside the data section, and end - begin == the shape's
 * element count x the dtype's size, computed without overflow.  Writes
 * its [begin, end) to range_out. */
static nvl_status_t check_tensor(const st_file_t *f, const char *path,
                                 const char *name, const json_t *t,
                                 uint64_t range_out[2])
{
    const json_t *off = json_object_get(t, "data_offsets");
    const json_t *shape = json_object_get(t, "shape");
    const char *dt = json_string_value(json_object_get(t, "dtype"));
    if (!json_is_object(t) || !json_is_array(off) ||
        json_array_size(off) != 2 || !json_is_array(shape) || dt == NULL) {
        nvl_report("%s: tensor '%s': missing dtype, shape or data_offsets",
                   path, name);
        return NVL_ERR_INVALID;
    }
    uint64_t b, e, data = f->size - f->data_start;
    if (!get_u64(json_array_get(off, 0), &b) ||
        !get_u64(json_array_get(off, 1), &e)) {
        nvl_report("%s: tensor '%s': data_offsets must be two non-negative "
                   "integers", path, name);
        return NVL_ERR_INVALID;
    }
    if (e < b || e > data) {
        nvl_report("%s: tensor '%s': bytes %llu..%llu lie outside the "
                   "%llu-byte data section", path, name, (unsigned long long)b,
                   (unsigned long long)e, (unsigned long long)data);
        return NVL_ERR_INVALID;
    }
    uint64_t elems = 1;
    bool overflow = false;
    for (size_t d = 0; d < json_array_size(shape); d++) {
        uint64_t n;
        if (!get_u64(json_array_get(shape, d), &n)) {
            nvl_report("%s: tensor '%s': shape[%zu] is not a non-negative "
                       "integer", path, name, d);
            return NVL_ERR_INVALID;
        }
        if (n != 0 && elems > UINT64_MAX / n)
            overflow = true;
        elems *= n;
    }
    for (size_t k = 0; k < sizeof st_dtypes / sizeof st_dtypes[0]; k++) {
        if (strcmp(dt, st_dtypes[k].name) != 0)
            continue;
        uint64_t esz = st_dtypes[k].size;
        if (overflow || elems > UINT64_MAX / esz) {
            nvl_report("%s: tensor '%s': its shape holds more than 2^64 "
                       "bytes of %s", path, name, dt);
            return NVL_ERR_INVALID;
        }
        if (elems * esz != e - b) {
            nvl_report("%s: tensor '%s': shape holds %llu %s elements but "
                       "its data is %llu bytes", path, name,
                       (unsigned long long)elems, dt,
                       (unsigned long long)(e - b));
            return NVL_ERR_INVALID;
        }
    }
    range_out[0] = b;
    range_out[1] = e;
    return NVL_OK;
}

/* Every tensor of f checked, and no two sharing a byte. */
static nvl_status_t check_tensors(st_file_t *f, const char *path)
{
    size_t n = json_object_size(f->header), k = 0;
    uint64_t *ranges = malloc((n + 1) * 2 * sizeof *ranges);
    if (ranges == NULL) {
        nvl_report("%s: out of memory", path);
        return NVL_ERR_NOMEM;
    }
    const char *name;
    json_t *t;
    nvl_status_t st = NVL_OK;
    json_object_foreach(f->header, name, t) {
        if (strcmp(name, "__metadata__") == 0)
            continue;
        st = check_tensor(f, path, name, t, ranges + 2 * k);
        if (st != NVL_OK)
            break;
        k++;
    }
    if (st == NVL_OK) {
        qsort(ranges, k, 2 * sizeof *ranges, by_begin);
        for (size_t i = 1; i < k; i++)
            if (ranges[2 * i] < ranges[2 * i - 1]) {
                nvl_report("%s: tensors overlap: bytes %llu..%llu and "
                           "%llu..%llu", path,
                           (unsigned long long)ranges[2 * i - 2],
                           (unsigned long long)ranges[2 * i - 1],
                           (unsigned long long)ranges[2 * i],
                           (unsigned long long)ranges[2 * i + 1]);
                st = NVL_ERR_INVALID;
                break;
            }
    }
    free(ranges);
    return st;
}

static void close_file(st_file_t *f)
{
    if (f->fd >= 0)
        close(f->fd);
    json_decref(f->header);
    free(f->path);
}

void nvl_weights_close(nvl_weights_t *w)
{
    if (w == NULL)
        return;
    for (int i = 0; i < w->n_files; i++)
        close_file(&w->files[i]);
    free(w->files);
    json_decref(w->weight_map);
    free(w);
}

nvl_status_t nvl_weights_open(const char *dir, nvl_weights_t **weights_out)
{
    nvl_weights_t *w = calloc(1, sizeof *w);
    if (w == NULL) {
        nvl_report("%s: out of memory", dir);
        return NVL_ERR_NOMEM;
    }
    char path[2048];
    nvl_status_t st = NVL_OK;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (access(path, F_OK) == 0) {
        json_error_t err;
        json_t *index = json_load_file(path, 0, &err);
        json_t *map = index ? json_object_get(index, "weight_map") : NULL;
        if (!json_is_object(map)) {
            nvl_report("%s:%d:%d: %s", path, err.line, err.column,
                       index ? "no \"weight_map\" object" : err.text);
            json_decref(index);
            nvl_weights_close(w);
            return NVL_ERR_INVALID;
        }
        w->weight_map = json_incref(map);
        json_decref(index);
        snprintf(w->index_path, sizeof w->index_path, "%s", path);
        /* the distinct shard files, in order of first mention */
        json_t *seen = json_object();
        const char *tensor;
        json_t *file;
        json_object_foreach(w->weight_map, tensor, file) {
            const char *fn = json_string_value(file);
            if (fn == NULL || strchr(fn, '/') != NULL) {
                nvl_report("%s: tensor '%s' maps to a bad file name", path,
                           tensor);
                st = NVL_ERR_INVALID;
                break;
            }
            if (json_object_get(seen, fn) != NULL)
                continue;
            json_object_set_new(seen, fn, json_integer(w->n_files));
            st_file_t *nf = realloc(w->files, (size_t)(w->n_files + 1) *
                                                  sizeof *nf);
            if (nf == NULL) {
                st = NVL_ERR_NOMEM;
                nvl_report("%s: out of memory", path);
                break;
            }
            w->files = nf;
            snprintf(path, sizeof path, "%s/%s", dir, fn);
            st = open_file(path, &w->files[w->n_files++]);
            if (st != NVL_OK)
                break;
        }
        /* keep the shard index in the map: tensor -> file number */
        if (st == NVL_OK) {
            json_object_foreach(w->weight_map, tensor, file)
                json_object_set(w->weight_map, tensor,
                                json_object_get(seen,
                                                json_string_value(file)));
        }
        json_decref(seen);
    } else {
        w->files = calloc(1, sizeof *w->files);
        if (w->files == NULL) {
            nvl_weights_close(w);
            return NVL_ERR_NOMEM;
        }
        w->n_files = 1;
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        st = open_file(path, &w->files[0]);
    }
    if (st == NVL_OK)
        st = nvl_quant_config_read(dir, &w->quant);
    if (st != NVL_OK) {
        nvl_weights_close(w);
        return st;
    }
    *weights_out = w;
    return NVL_OK;
}

static json_t *find(const nvl_weights_t *w, const char *name,
                    const st_file_t **file_out)
{
    int fi = 0;
    if (w->weight_map != NULL) {
        json_t *idx = json_object_get(w->weight_map, name);
        if (!json_is_integer(idx))
            return NULL;
        fi = (int)json_integer_value(idx);
    }
    if (strcmp(name, "__metadata__") == 0)
        return NULL; /* the header's metadata, not a tensor */
    json_t *t = json_object_get(w->files[fi].header, name);
    if (t != NULL)
        *file_out = &w->files[fi];
    return t;
}

bool nvl_weights_has(const nvl_weights_t *w, const char *name)
{
    const st_file_t *f = NULL;
    return find(w, name, &f) != NULL;
}

nvl_status_t nvl_st_plain_info(const nvl_weights_t *w, const char *name,
                               nvl_tensor_info_t *info_out)
{
    const st_file_t *f = NULL;
    json_t *t = find(w, name, &f);
    if (t == NULL) {
        /* say which file should have held it */
        json_t *idx = w->weight_map != NULL
                          ? json_object_get(w->weight_map, name)
                          : NULL;
        if (w->weight_map != NULL && !json_is_integer(idx))
            nvl_report("%s: no tensor '%s' in its weight_map", w->index_path,
                       name);
        else if (w->weight_map != NULL)
            nvl_report("%s: no tensor '%s' (the index %s names this file "
                       "for it)",
                       w->files[json_integer_value(idx)].path, name,
                       w->index_path);
        else
            nvl_report("%s: no tensor '%s'", w->files[0].path, name);
        return NVL_ERR_INVALID;
    }
    const char *dt = json_string_value(json_object_get(t, "dtype"));
    nvl_tensor_info_t info = {0};
    size_t k = 0;
    while (k < N_READABLE && strcmp(dt, st_dtypes[k].name) != 0)
        k++;
    if (k == N_READABLE) {
        nvl_report("%s: tensor '%s' has dtype %s (supported: F32, BF16, F16)",
                   f->path, name, dt);
        return NVL_ERR_INVALID;
    }
    info.dtype = st_dtypes[k].dtype;
    json_t *shape = json_object_get(t, "shape");
    if (json_array_size(shape) > NVL_TENSOR_MAX_DIMS) {
        nvl_report("%s: tensor '%s' has %zu dimensions (at most %d)", f->path,
                   name, json_array_size(shape), NVL_TENSOR_MAX_DIMS);
        return NVL_ERR_INVALID;
    }
    info.ndim = (int)json_array_size(shape);
    for (int d = 0; d < info.ndim; d++)
        info.shape[d] = (uint64_t)json_integer_value(json_array_get(shape, d));
    *info_out = info;
    return NVL_OK;
}

nvl_status_t nvl_st_plain_read_f32(const nvl_weights_t *w, const char *name,
                                   uint64_t row0, uint64_t rows, uint64_t col0,
                                   uint64_t cols, float *data_out)
{
    nvl_tensor_info_t info;
    nvl_status_t st = nvl_st_plain_info(w, name, &info);
    if (st != NVL_OK)
        return st;
    const st_file_t *f = NULL;
    json_t *t = find(w, name, &f);
    /* the leading dimensions flattened into rows (an expert dimension) */
    uint64_t n_rows = 1;
    for (int d = 0; d + 1 < info.ndim; d++)
        n_rows *= info.shape[d];
    uint64_t n_cols = info.ndim >= 1 ? info.shape[info.ndim - 1] : 1;
    if (row0 + rows > n_rows || col0 + cols > n_cols ||
        row0 + rows < row0 || col0 + cols < col0) {
        nvl_report("tensor '%s' [%llu x %llu]: slice rows %llu+%llu, columns "
                   "%llu+%llu is outside it", name,
                   (unsigned long long)n_rows, (unsigned long long)n_cols,
                   (unsigned long long)row0, (unsigned long long)rows,
                   (unsigned long long)col0, (unsigned long long)cols);
        return NVL_ERR_INVALID;
    }
    size_t esz = nvl_dtype_size(info.dtype);
    uint64_t base = f->data_start + (uint64_t)json_integer_value(
                        json_array_get(json_object_get(t, "data_offsets"), 0));
    char *row = malloc(cols * esz + 1);
    if (row == NULL) {
        nvl_report("out of memory reading tensor '%s'", name);
        return NVL_ERR_NOMEM;
    }
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t at = base + ((row0 + r) * n_cols + col0) * esz;
        ssize_t got = pread(f->fd, row, cols * esz, (off_t)at);
        if (got != (ssize_t)(cols * esz)) {
            free(row);
            nvl_report("%s: short read of tensor '%s' at byte %llu", f->path,
                       name, (unsigned long long)at);
            return NVL_ERR_IO;
        }
        for (uint64_t c = 0; c < cols; c++)
            data_out[r * cols + c] = nvl_dtype_to_float(info.dtype, row + c * esz);
    }
    free(row);
    return NVL_OK;
}

const nvl_quant_config_t *nvl_st_quant(const nvl_weights_t *w)
{
    return &w->quant;
}

bool nvl_st_find(const nvl_weights_t *w, const char *name, nvl_st_ref_t *ref)
{
    const st_file_t *f = NULL;
    const json_t *t = find(w, name, &f);
    if (t == NULL)
        return false;
    const json_t *shape = json_object_get(t, "shape");
    const json_t *off = json_object_get(t, "data_offsets");
    memset(ref, 0, sizeof *ref);
    ref->file = f->path;
    ref->fd = f->fd;
    ref->dtype = json_string_value(json_object_get(t, "dtype"));
    ref->ndim = (int)json_array_size(shape);
    for (int d = 0; d < ref->ndim && d < NVL_TENSOR_MAX_DIMS; d++)
        ref->shape[d] = (uint64_t)json_integer_value(json_array_get(shape, d));
    ref->base = f->data_start +
                (uint64_t)json_integer_value(json_array_get(off, 0));
    ref->n_bytes = (uint64_t)json_integer_value(json_array_get(off, 1)) -
                   (uint64_t)json_integer_value(json_array_get(off, 0));
    return true;
}

nvl_status_t nvl_st_pread(const nvl_st_ref_t *ref, const char *name,
                          uint64_t at, uint64_t n, void *buf)
{
    if (at + n > ref->n_bytes ||
        pread(ref->fd, buf, n, (off_t)(ref->base + at)) != (ssize_t)n) {
        nvl_report("%s: short read of tensor '%s' at byte %llu", ref->file,
                   name, (unsigned long long)(ref->base + at));
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

nvl_status_t nvl_weights_foreach(const nvl_weights_t *w,
                                 nvl_status_t (*fn)(const char *name,
                                                    void *ctx),
                                 void *ctx)
{
    for (int i = 0; i < w->n_files; i++) {
        const char *name;
        json_t *t;
        json_object_foreach(w->files[i].header, name, t) {
            if (strcmp(name, "__metadata__") == 0)
                continue;
            nvl_status_t st = fn(name, ctx);
            if (st != NVL_OK)
                return st;
        }
    }
    return NVL_OK;
}
