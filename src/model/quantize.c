/* `nvlemu quantize`: a float checkpoint rewritten in a quantized format as
 * its writer lays it out (include/nvlemu/weights.h,
 * nvl_weights_quantize; the numerics are src/quant's). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nvlemu/json.h"
#include "nvlemu/weights.h"

typedef struct {
    const nvl_weights_t *w;
    nvl_quant_format_t f;
    nvl_st_entry_t *e; /* the tensors to write */
    size_t n, cap;
    void **owned; /* what the entries point to */
    size_t n_owned, cap_owned;
} job_t;

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? 2 * *cap : 64;
    void *q = realloc(*p, c * size);
    if (q == NULL)
        return false;
    *p = q;
    *cap = c;
    return true;
}

/* Keeps p (freed with the job); false when memory runs out (p freed). */
static bool own(job_t *j, void *p)
{
    if (p == NULL || !grow((void **)&j->owned, &j->cap_owned, j->n_owned + 1,
                           sizeof *j->owned)) {
        free(p);
        nvl_report("out of memory quantizing a checkpoint");
        return false;
    }
    j->owned[j->n_owned++] = p;
    return true;
}

static nvl_status_t add(job_t *j, const nvl_st_entry_t *e)
{
    char *name = strdup(e->name);
    if (!own(j, name))
        return NVL_ERR_NOMEM;
    if (!grow((void **)&j->e, &j->cap, j->n + 1, sizeof *j->e)) {
        nvl_report("out of memory quantizing a checkpoint");
        return NVL_ERR_NOMEM;
    }
    j->e[j->n] = *e;
    j->e[j->n++].name = name;
    return NVL_OK;
}

/* The linear weights ModelOpt's default quantizes in a decoder layer:
 * the attention's, the MLP's and the experts' projections. */
static bool quantizable(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "model.layers.", 13) == 0 && n > 12 &&
           strcmp(name + n - 12, "_proj.weight") == 0;
}

static nvl_status_t quantize_one(job_t *j, const char *name,
                                 const nvl_tensor_info_t *info)
{
    uint64_t rows = info->shape[0], cols = info->shape[1];
    float *w = malloc((rows * cols + 1) * sizeof *w);
    if (!own(j, w))
        return NVL_ERR_NOMEM;
    nvl_status_t st = nvl_weights_read_f32(j->w, name, 0, rows, 0, cols, w);
    nvl_quant_tensor_t q;
    if (st == NVL_OK)
        st = nvl_quant_tensor(j->f, name, w, rows, cols, &q);
    if (st != NVL_OK)
        return st;
    size_t prefix = strlen(name) - strlen("weight");
    for (int i = 0; i < q.n_parts && st == NVL_OK; i++) {
        char full[512];
        snprintf(full, sizeof full, "%.*s%s", (int)prefix, name,
                 q.part[i].suffix);
        nvl_st_entry_t e = {full, q.part[i].dtype, q.part[i].ndim,
                            {0},  q.part[i].bytes, q.part[i].n_bytes};
        for (int d = 0; d < q.part[i].ndim; d++)
            e.shape[d] = q.part[i].shape[d];
        /* the job keeps the bytes */
        st = own(j, q.part[i].bytes) ? add(j, &e) : NVL_ERR_NOMEM;
        q.part[i].bytes = NULL;
    }
    nvl_quant_tensor_free(&q);
    return st;
}

static nvl_status_t one(const char *name, void *ctx)
{
    job_t *j = ctx;
    nvl_tensor_info_t info;
    nvl_status_t st = nvl_weights_info(j->w, name, &info);
    if (st != NVL_OK)
        return st;
    if (quantizable(name) && info.ndim == 2)
        return quantize_one(j, name, &info);
    unsigned char *b;
    uint64_t n;
    const char *dtype;
    if ((st = nvl_weights_read_raw(j->w, name, &b, &n, &dtype)) != NVL_OK)
        return st;
    if (!own(j, b))
        return NVL_ERR_NOMEM;
    nvl_st_entry_t e = {name, dtype, info.ndim, {0}, b, n};
    memcpy(e.shape, info.shape, sizeof e.shape);
    return add(j, &e);
}

static nvl_status_t write_json(const char *path, const json_t *j)
{
    FILE *f = fopen(path, "w");
    if (f == NULL || nvl_json_dumpf(j, f, JSON_INDENT(2)) != 0 ||
        fputc('\n', f) == EOF || fclose(f) != 0) {
        nvl_report("%s: cannot write: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

/* config.json with the writer's quantization_config, hf_quant_config.json
 * where the writer has one, generation_config.json copied. */
static nvl_status_t write_configs(const char *in, const char *out,
                                  nvl_quant_format_t f)
{
    char path[2048];
    json_error_t err;
    snprintf(path, sizeof path, "%s/config.json", in);
    json_t *cfg = json_load_file(path, JSON_PRESERVE_ORDER, &err);
    if (cfg == NULL) {
        nvl_report("%s:%d:%d: %s", path, err.line, err.column, err.text);
        return NVL_ERR_INVALID;
    }
    json_t *q = json_object(), *hf = NULL,
           *exclude = json_pack("[s]", "lm_head");
    nvl_quant_config_write(f, exclude, q, &hf);
    json_object_set_new(cfg, "quantization_config", q);
    snprintf(path, sizeof path, "%s/config.json", out);
    nvl_status_t st = write_json(path, cfg);
    snprintf(path, sizeof path, "%s/hf_quant_config.json", out);
    if (st == NVL_OK && hf != NULL)
        st = write_json(path, hf);
    json_decref(hf);
    json_decref(exclude);
    json_decref(cfg);
    snprintf(path, sizeof path, "%s/generation_config.json", in);
    json_t *gen = json_load_file(path, JSON_PRESERVE_ORDER, &err);
    snprintf(path, sizeof path, "%s/generation_config.json", out);
    if (st == NVL_OK && gen != NULL)
        st = write_json(path, gen);
    json_decref(gen);
    return st;
}

nvl_status_t nvl_weights_quantize(const char *in_dir, const char *out_dir,
                                  nvl_quant_format_t f)
{
    nvl_weights_t *w;
    nvl_status_t st = nvl_weights_open(in_dir, &w);
    if (st != NVL_OK)
        return st;
    nvl_quant_config_t qc;
    if ((st = nvl_quant_config_read(in_dir, &qc)) == NVL_OK && qc.quantized) {
        nvl_report("%s: the checkpoint is already quantized (%s); quantize "
                   "reads a float one",
                   in_dir, qc.file);
        st = NVL_ERR_INVALID;
    }
    if (st == NVL_OK && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        nvl_report("%s: cannot create: %s", out_dir, strerror(errno));
        st = NVL_ERR_IO;
    }
    job_t j = {.w = w, .f = f};
    if (st == NVL_OK)
        st = nvl_weights_foreach(w, one, &j);
    char path[2048];
    snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
    if (st == NVL_OK)
        st = nvl_st_write(path, j.e, j.n);
    if (st == NVL_OK)
        st = write_configs(in_dir, out_dir, f);
    for (size_t i = 0; i < j.n_owned; i++)
        free(j.owned[i]);
    free(j.owned);
    free(j.e);
    nvl_weights_close(w);
    return st;
}
