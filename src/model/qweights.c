/* The checkpoint's tensors as the engine reads them: a weight stored in
 * the quantized format the checkpoint's config declares (include/nvlemu/
 * quant.h) is checked and dequantized here, slice by slice; any other
 * tensor goes to the plain reader (weights.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weights_impl.h"

/* A quantized weight: its parts and its logical shape. */
typedef struct {
    nvl_quant_format_t f;
    const nvl_quant_row_t *row;
    char dname[256], sname[256];
    nvl_st_ref_t data, scale;
    nvl_qcode_t scale_code; /* as stored (a part's dtype or dtype_alt) */
    uint64_t rows, cols;
    float scale2; /* 1 where the format has none */
} qt_t;

static uint64_t elems(const nvl_st_ref_t *r)
{
    uint64_t n = 1;
    for (int d = 0; d < r->ndim; d++)
        n *= r->shape[d];
    return n;
}

static void shape_text(const nvl_st_ref_t *r, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int d = 0; d < r->ndim; d++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%llu", d ? ", " : "",
                 (unsigned long long)r->shape[d]);
}

/* A stored part: present and of its dtype (or its other dtype: *code). */
static nvl_status_t get_part(const nvl_weights_t *w, const qt_t *q,
                             const nvl_quant_part_t *p, const char *name,
                             nvl_st_ref_t *ref, nvl_qcode_t *code)
{
    if (!nvl_st_find(w, name, ref)) {
        nvl_report("%s: no tensor '%s' for the %s weight '%s' (%s)",
                   q->data.file, name, q->row->m.name, q->dname,
                   nvl_st_quant(w)->file);
        return NVL_ERR_INVALID;
    }
    *code = p->code;
    if (p->dtype_alt != NULL && strcmp(ref->dtype, p->dtype_alt) == 0)
        *code = p->code_alt;
    else if (p->dtype_alt2 != NULL && strcmp(ref->dtype, p->dtype_alt2) == 0)
        *code = p->code_alt2;
    else if (strcmp(ref->dtype, p->dtype) != 0) {
        nvl_report("%s: tensor '%s' has dtype %s; %s stores it as %s%s%s%s%s",
                   ref->file, name, ref->dtype, q->row->m.name, p->dtype,
                   p->dtype_alt ? ", " : "", p->dtype_alt ? p->dtype_alt : "",
                   p->dtype_alt2 ? " or " : "",
                   p->dtype_alt2 ? p->dtype_alt2 : "");
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* MX-FP4's blocks: [R, C/32, 16] bytes, or with an expert dimension in
 * front, [E, R, C/32, 16] (gpt-oss's experts), read as [E x R, C]. */
static bool mx_blocks(const qt_t *q)
{
    return q->row == nvl_quant_row(NVL_QUANT_MXFP4);
}

/* The logical shape from the codes: E2M1 packs two a byte (MX-FP4's
 * blocks); a block must divide the columns. */
static nvl_status_t logical_shape(qt_t *q)
{
    const nvl_st_ref_t *d = &q->data;
    uint32_t per = nvl_quant_codes_per_elem(q->row);
    bool blocks3 = mx_blocks(q);
    char s[64];
    shape_text(d, s, sizeof s);
    if (blocks3 ? (d->ndim != 3 && d->ndim != 4) ||
                      d->shape[d->ndim - 1] != 16
                : d->ndim != 2) {
        nvl_report("%s: tensor '%s' [%s]: %s codes are stored as %s", d->file,
                   q->dname, s, q->row->m.name,
                   blocks3 ? "[rows, columns / 32, 16] bytes (or [experts, "
                             "rows, columns / 32, 16])"
                           : per == 2 ? "[rows, columns / 2] bytes"
                           : per == 8 ? "[rows, columns / 8] int32"
                                      : "[rows, columns]");
        return NVL_ERR_INVALID;
    }
    q->rows = d->shape[0] * (d->ndim == 4 ? d->shape[1] : 1);
    if (d->ndim == 4) {
        q->cols = d->shape[2] * 32;
        return NVL_OK;
    }
    q->cols = blocks3 ? d->shape[1] * 32 : d->shape[1] * per;
    uint32_t bc = q->row->block_cols;
    if (bc != 0 && !q->row->partial_blocks && q->cols % bc != 0) {
        nvl_report("%s: tensor '%s' [%s]: its %llu columns do not divide into "
                   "%s's blocks of %u", d->file, q->dname, s,
                   (unsigned long long)q->cols, q->row->m.name, bc);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* The scale's shape is the grid of blocks; the second scale one finite,
 * positive float. */
static nvl_status_t check_scales(const nvl_weights_t *w, const char *prefix,
                                 qt_t *q)
{
    uint32_t br = q->row->block_rows, bc = q->row->block_cols;
    uint64_t g[2] = {br ? (q->rows + br - 1) / br : 1,
                     bc ? (q->cols + bc - 1) / bc : 1};
    bool per_tensor = bc == 0 && br == 0;
    const nvl_st_ref_t *s = &q->scale, *d = &q->data;
    bool experts = mx_blocks(q) && d->ndim == 4;
    bool ok = per_tensor ? elems(s) == 1 && s->ndim <= 1
              : experts  ? s->ndim == 3 && s->shape[0] == d->shape[0] &&
                              s->shape[1] == d->shape[1] &&
                              s->shape[2] == d->shape[2]
                         : s->ndim == 2 && s->shape[0] == g[0] &&
                              s->shape[1] == g[1];
    if (!ok) {
        char got[64], codes[64], need[64];
        shape_text(s, got, sizeof got);
        shape_text(d, codes, sizeof codes);
        if (per_tensor) /* a scalar; vLLM's PerTensorScaleParameter
                           also loads [1] */
            snprintf(need, sizeof need, "] or [1");
        else if (experts)
            snprintf(need, sizeof need, "%llu, %llu, %llu",
                     (unsigned long long)d->shape[0],
                     (unsigned long long)d->shape[1],
                     (unsigned long long)g[1]);
        else
            snprintf(need, sizeof need, "%llu, %llu",
                     (unsigned long long)g[0], (unsigned long long)g[1]);
        nvl_report("%s: scale '%s' has shape [%s], but the codes '%s' [%s] "
                   "(%llu x %llu values) need [%s] (%s)", s->file, q->sname,
                   got, q->dname, codes, (unsigned long long)q->rows,
                   (unsigned long long)q->cols, need,
                   per_tensor ? "one per tensor"
                   : experts  ? "one per block of each expert's rows"
                   : bc == 0  ? "one per row"
                              : "one per block");
        return NVL_ERR_INVALID;
    }
    q->scale2 = 1.0f;
    if (q->row->scale2.suffix == NULL)
        return NVL_OK;
    char n2[256];
    nvl_st_ref_t r2;
    nvl_qcode_t c2;
    unsigned char b[4];
    snprintf(n2, sizeof n2, "%s%s", prefix, q->row->scale2.suffix);
    nvl_status_t st = get_part(w, q, &q->row->scale2, n2, &r2, &c2);
    if (st == NVL_OK && (elems(&r2) != 1 || r2.ndim > 1)) {
        nvl_report("%s: tensor '%s' must hold one float (the per-tensor "
                   "scale)", r2.file, n2);
        st = NVL_ERR_INVALID;
    }
    if (st == NVL_OK)
        st = nvl_st_pread(&r2, n2, 0, 4, b);
    if (st != NVL_OK)
        return st;
    q->scale2 = nvl_quant_scale_value(c2, b);
    if (!isfinite(q->scale2) || q->scale2 <= 0.0f) {
        nvl_report("%s: scale '%s' is %g (a per-tensor scale must be finite "
                   "and positive)", r2.file, n2, (double)q->scale2);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* Whether `name` is a weight stored in the declared format (*is), and if
 * so its parts, checked. */
static nvl_status_t quantized(const nvl_weights_t *w, const char *name,
                              qt_t *q, bool *is)
{
    const nvl_quant_config_t *qc = nvl_st_quant(w);
    size_t n = strlen(name);
    *is = false;
    if (!qc->quantized)
        return NVL_OK;
    q->f = qc->format;
    q->row = qc->stored != NULL ? qc->stored : nvl_quant_row(q->f);
    /* compressed-tensors' groups of several schemes: the module's own
     * group's format and layout (a module no group targets is stored
     * plainly, which the dtype check below finds) */
    char module[256];
    int other, g = -1;
    if (qc->n_group > 1 && n > 7 && strcmp(name + n - 7, ".weight") == 0) {
        snprintf(module, sizeof module, "%.*s", (int)(n - 7), name);
        g = nvl_quant_config_group(qc, module, &other);
    }
    if (g >= 0) {
        q->f = qc->group[g].format;
        q->row = qc->group[g].stored != NULL ? qc->group[g].stored
                                             : nvl_quant_row(q->f);
    }
    /* a parameter P is stored as P + the parts' suffixes past "weight"
     * ("P.weight" -> "P.weight_blocks"; gpt-oss's "P.gate_up_proj" ->
     * "P.gate_up_proj_blocks"); a format whose codes keep the name
     * ("weight") quantizes only weights */
    bool weight = n >= 6 && strcmp(name + n - 6, "weight") == 0;
    if (!weight && strcmp(q->row->data.suffix, "weight") == 0)
        return NVL_OK;
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%.*s", (int)(weight ? n - 6 : n), name);
    const char *own = weight ? "" : "weight";
    snprintf(q->dname, sizeof q->dname, "%s%s", prefix,
             q->row->data.suffix + strlen(own));
    snprintf(q->sname, sizeof q->sname, "%s%s", prefix,
             q->row->scale.suffix + strlen(own));
    /* stored plainly: a module the writer left out (lm_head ...) */
    if (!nvl_st_find(w, q->dname, &q->data) ||
        strcmp(q->data.dtype, q->row->data.dtype) != 0)
        return NVL_OK;
    *is = true;
    nvl_status_t st = logical_shape(q);
    if (st == NVL_OK)
        st = get_part(w, q, &q->row->scale, q->sname, &q->scale,
                      &q->scale_code);
    /* each weight its own second scale, also where the parts of one
     * fused GEMM (q/k/v, gate/up) differ (docs/quantization.md, *Parts
     * with their own weight_scale_2*) */
    if (st == NVL_OK)
        st = check_scales(w, prefix, q);
    return st;
}

nvl_status_t nvl_weights_info(const nvl_weights_t *w, const char *name,
                              nvl_tensor_info_t *info_out)
{
    qt_t q;
    bool is;
    nvl_status_t st = quantized(w, name, &q, &is);
    if (st != NVL_OK || !is)
        return st != NVL_OK ? st : nvl_st_plain_info(w, name, info_out);
    nvl_tensor_info_t info = {.dtype = NVL_DT_F32, .ndim = 2,
                              .shape = {q.rows, q.cols}, .quantized = true};
    *info_out = info;
    return NVL_OK;
}

/* The slice holds whole blocks along a dimension of n with blocks of b
 * (0: the whole dimension, 1: any). */
static bool whole_blocks(uint64_t at, uint64_t count, uint64_t n, uint32_t b)
{
    if (b == 0)
        return at == 0 && count == n;
    return at % b == 0 && (at + count == n || (at + count) % b == 0);
}

/* Scales [c0, c0 + n) of scale row sr, decoded and checked. */
static nvl_status_t read_scales(const qt_t *q, uint64_t sr, uint64_t c0,
                                uint64_t n, float *out)
{
    uint64_t esz = nvl_quant_code_bytes(q->scale_code);
    uint64_t gcols = q->scale.ndim >= 2 ? q->scale.shape[q->scale.ndim - 1]
                                         : 1;
    unsigned char b[4 * 64];
    for (uint64_t k = 0; k < n; k += 64) {
        uint64_t m = n - k < 64 ? n - k : 64;
        nvl_status_t st = nvl_st_pread(&q->scale, q->sname,
                                       (sr * gcols + c0 + k) * esz, m * esz, b);
        if (st != NVL_OK)
            return st;
        for (uint64_t i = 0; i < m; i++) {
            float v = nvl_quant_scale_value(q->scale_code, b + i * esz);
            if (!isfinite(v) || signbit(v)) {
                nvl_report("%s: scale '%s' holds %g at [%llu, %llu] (a scale "
                           "must be finite and not negative)", q->scale.file,
                           q->sname, (double)v, (unsigned long long)sr,
                           (unsigned long long)(c0 + k + i));
                return NVL_ERR_INVALID;
            }
            out[k + i] = v;
        }
    }
    return NVL_OK;
}

/* FP8 E4M3 codes hold no infinity and one NaN, S.1111.111 (OCP 8-bit
 * floating point v1.0): a weight code 0x7F / 0xFF is refused, naming the
 * element, where a reader (torch's float8_e4m3fn, the engines' GEMMs)
 * would compute with NaN.  n codes of row `row` from column col0. */
static nvl_status_t check_codes(const qt_t *q, const unsigned char *data,
                                uint64_t row, uint64_t col0, uint64_t n)
{
    if (q->row->data.code != NVL_QCODE_E4M3)
        return NVL_OK;
    for (uint64_t k = 0; k < n; k++)
        if ((data[k] & 0x7F) == 0x7F) {
            nvl_report("%s: tensor '%s' holds the FP8 E4M3 NaN code 0x%02X "
                       "at element %llu ([%llu, %llu] of [%llu, %llu]); a "
                       "weight code must be a number", q->data.file,
                       q->dname, data[k],
                       (unsigned long long)(row * q->cols + col0 + k),
                       (unsigned long long)row,
                       (unsigned long long)(col0 + k),
                       (unsigned long long)q->rows,
                       (unsigned long long)q->cols);
            return NVL_ERR_INVALID;
        }
    return NVL_OK;
}

static nvl_status_t read_rows(const qt_t *q, uint64_t row0, uint64_t rows,
                              uint64_t col0, uint64_t cols, float *out)
{
    uint32_t br = q->row->block_rows, bc = q->row->block_cols;
    uint64_t sc0 = bc ? col0 / bc : 0;
    uint64_t nsc = bc ? (col0 + cols + bc - 1) / bc - sc0 : 1;
    uint64_t stride = nvl_quant_data_bytes(q->f, q->cols);
    uint64_t nb = nvl_quant_data_bytes(q->f, cols);
    float *scales = malloc((nsc + 1) * sizeof *scales);
    unsigned char *data = malloc(nb + 1);
    nvl_status_t st = scales && data ? NVL_OK : NVL_ERR_NOMEM;
    if (st != NVL_OK)
        nvl_report("out of memory reading tensor '%s'", q->dname);
    uint64_t have = UINT64_MAX;
    for (uint64_t r = 0; r < rows && st == NVL_OK; r++) {
        uint64_t sr = br ? (row0 + r) / br : 0;
        if (sr != have)
            st = read_scales(q, sr, sc0, nsc, scales);
        have = sr;
        if (st == NVL_OK)
            st = nvl_st_pread(&q->data, q->dname,
                              (row0 + r) * stride +
                                  nvl_quant_data_bytes(q->f, col0),
                              nb, data);
        if (st == NVL_OK)
            st = check_codes(q, data, row0 + r, col0, cols);
        if (st == NVL_OK)
            nvl_quant_dequant_row(q->row, data, col0, cols, scales, q->scale2,
                                  out + r * cols);
    }
    free(scales);
    free(data);
    return st;
}

nvl_status_t nvl_weights_read_f32(const nvl_weights_t *w, const char *name,
                                  uint64_t row0, uint64_t rows, uint64_t col0,
                                  uint64_t cols, float *data_out)
{
    qt_t q;
    bool is;
    nvl_status_t st = quantized(w, name, &q, &is);
    if (st != NVL_OK || !is)
        return st != NVL_OK ? st
                            : nvl_st_plain_read_f32(w, name, row0, rows, col0,
                                                    cols, data_out);
    if (row0 + rows > q.rows || col0 + cols > q.cols) {
        nvl_report("tensor '%s' [%llu x %llu]: slice rows %llu+%llu, columns "
                   "%llu+%llu is outside it", name, (unsigned long long)q.rows,
                   (unsigned long long)q.cols, (unsigned long long)row0,
                   (unsigned long long)rows, (unsigned long long)col0,
                   (unsigned long long)cols);
        return NVL_ERR_INVALID;
    }
    uint32_t br = q.row->block_rows, bc = q.row->block_cols;
    if (!whole_blocks(row0, rows, q.rows, br ? br : 1) ||
        !whole_blocks(col0, cols, q.cols, bc ? bc : 1)) {
        nvl_report("%s: tensor '%s' [%llu x %llu]: this rank's part, rows "
                   "%llu..%llu and columns %llu..%llu, cuts %s's blocks of "
                   "%u x %u; vLLM and TensorRT-LLM refuse a tensor-parallel "
                   "part that is not whole blocks (choose a TP degree that "
                   "splits the dimension into whole blocks)", q.data.file,
                   q.dname, (unsigned long long)q.rows,
                   (unsigned long long)q.cols, (unsigned long long)row0,
                   (unsigned long long)(row0 + rows),
                   (unsigned long long)col0, (unsigned long long)(col0 + cols),
                   q.row->m.name, br ? br : 1, bc);
        return NVL_ERR_INVALID;
    }
    return read_rows(&q, row0, rows, col0, cols, data_out);
}

nvl_status_t nvl_weights_read_raw(const nvl_weights_t *w, const char *name,
                                  unsigned char **bytes_out,
                                  uint64_t *n_bytes_out,
                                  const char **dtype_out)
{
    nvl_st_ref_t r;
    if (!nvl_st_find(w, name, &r)) {
        nvl_tensor_info_t info; /* reports, naming the file */
        return nvl_st_plain_info(w, name, &info);
    }
    unsigned char *b = malloc(r.n_bytes + 1);
    if (b == NULL) {
        nvl_report("out of memory for tensor '%s'", name);
        return NVL_ERR_NOMEM;
    }
    nvl_status_t st = nvl_st_pread(&r, name, 0, r.n_bytes, b);
    if (st != NVL_OK) {
        free(b);
        return st;
    }
    *bytes_out = b;
    *n_bytes_out = r.n_bytes;
    *dtype_out = r.dtype;
    return NVL_OK;
}

nvl_status_t nvl_weights_stored_dtype(const nvl_weights_t *w,
                                      const char *name,
                                      const char **dtype_out)
{
    nvl_st_ref_t r;
    if (!nvl_st_find(w, name, &r)) {
        nvl_tensor_info_t info; /* reports, naming the file */
        return nvl_st_plain_info(w, name, &info);
    }
    *dtype_out = r.dtype;
    return NVL_OK;
}

const nvl_quant_config_t *nvl_weights_quant(const nvl_weights_t *w)
{
    return nvl_st_quant(w);
}
