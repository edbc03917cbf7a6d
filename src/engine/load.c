/* Weights of a data-mode engine: this rank's slices of a Hugging Face
 * checkpoint (read with pread, nothing else), or deterministic synthetic
 * values for a preset.
 *
 * Synthetic element (r, c) of tensor `name` is a function of (seed, name,
 * r, c) only, so a shard holds exactly the values the whole tensor would
 * have at those positions and every TP degree computes the same model:
 * matrices uniform with standard deviation 0.02 (the initializer range
 * of Qwen's config.json), biases likewise, RMSNorm weights 1 as
 * transformers initializes them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_tensors.h"
#include "nvlemu/hash.h"
#include "nvlemu/runtime.h"
#include "nvlemu/weights.h"

typedef struct {
    nvl_weights_t *ckpt; /* NULL: synthetic */
    const char *dir;     /* the checkpoint's directory */
    uint64_t seed;
} source_t;

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t name_hash(const char *s)
{
    return nvl_fnv1a64(s, strlen(s));
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* rows x cols slice of synthetic tensor `name` whose full width is
 * full_cols (1-D tensors: one row of full_cols). */
static void synthesize(const source_t *src, const char *name,
                       uint64_t full_cols, uint64_t r0, uint64_t nr,
                       uint64_t c0, uint64_t nc, float *out)
{
    if (ends_with(name, "norm.weight")) {
        for (uint64_t i = 0; i < nr * nc; i++)
            out[i] = 1.0f;
        return;
    }
    uint64_t key = splitmix64(src->seed ^ name_hash(name));
    /* uniform on [-a, a] has standard deviation a / sqrt(3) */
    const double a = 0.02 * 1.7320508075688772;
    for (uint64_t r = 0; r < nr; r++)
        for (uint64_t c = 0; c < nc; c++) {
            uint64_t h = splitmix64(key + (r0 + r) * full_cols + (c0 + c));
            double u = (double)(h >> 11) * (1.0 / 9007199254740992.0);
            out[r * nc + c] = (float)((2.0 * u - 1.0) * a);
        }
}

/* Rows [r0, r0+nr) x columns [c0, c0+nc) of a tensor of shape [rows, cols]
 * (cols 0: 1-D of rows elements; then r0/nr select elements). */
static float *slice(const source_t *src, const char *name, uint64_t rows,
                    uint64_t cols, uint64_t r0, uint64_t nr, uint64_t c0,
                    uint64_t nc, nvl_status_t *st)
{
    if (*st != NVL_OK)
        return NULL;
    uint64_t n = cols ? nr * nc : nr;
    float *out = malloc((n + 1) * sizeof *out);
    if (out == NULL) {
        nvl_report("out of memory for tensor '%s'", name);
        *st = NVL_ERR_NOMEM;
        return NULL;
    }
    if (src->ckpt == NULL) {
        if (cols)
            synthesize(src, name, cols, r0, nr, c0, nc, out);
        else
            synthesize(src, name, rows, 0, 1, r0, nr, out);
        return out;
    }
    nvl_tensor_info_t info;
    if ((*st = nvl_weights_info(src->ckpt, name, &info)) != NVL_OK) {
        free(out);
        return NULL;
    }
    bool ok = cols == 0 ? info.ndim == 1 && info.shape[0] == rows
                        : info.ndim == 2 && info.shape[0] == rows &&
                              info.shape[1] == cols;
    if (!ok) {
        char got[96] = "";
        for (int i = 0; i < info.ndim && i < NVL_TENSOR_MAX_DIMS; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu",
                     i ? ", " : "", (unsigned long long)info.shape[i]);
        nvl_report("%s: tensor '%s' has shape [%s], but config.json makes "
                   "it [%llu%s%llu]",
                   src->dir, name, got, (unsigned long long)rows,
                   cols ? ", " : "", (unsigned long long)cols);
        *st = NVL_ERR_INVALID;
        free(out);
        return NULL;
    }
    *st = cols ? nvl_weights_read_f32(src->ckpt, name, r0, nr, c0, nc, out)
               : nvl_weights_read_f32(src->ckpt, name, 0, 1, r0, nr, out);
    if (*st != NVL_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* The slices of layer li's experts this rank holds (rows [moe_intermediate
 * shard] of gate/up, those columns of down, of experts [experts range]),
 * one after another in l->eg, l->eu, l->ed. */
static nvl_status_t load_experts(const source_t *src,
                                 const nvl_model_config_t *c,
                                 const nvl_shard_t *s, uint32_t li,
                                 nvl_layer_weights_t *l, nvl_status_t st)
{
    if (st != NVL_OK)
        return st;
    uint64_t hid = c->hidden, mi = c->moe_intermediate;
    uint64_t m0 = s->moe_intermediate.first, mn = s->moe_intermediate.count;
    uint64_t per = mn * hid, ne = s->experts.count;
    l->eg = malloc((ne * per + 1) * sizeof *l->eg);
    l->eu = malloc((ne * per + 1) * sizeof *l->eu);
    l->ed = malloc((ne * per + 1) * sizeof *l->ed);
    if (l->eg == NULL || l->eu == NULL || l->ed == NULL) {
        nvl_report("out of memory for the %llu experts of layer %u",
                   (unsigned long long)ne, li);
        return NVL_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < ne && st == NVL_OK; i++) {
        char n[192];
        float *dst[3] = {l->eg + i * per, l->eu + i * per, l->ed + i * per};
        const char *part[3] = {"gate_proj", "up_proj", "down_proj"};
        for (int j = 0; j < 3 && st == NVL_OK; j++) {
            snprintf(n, sizeof n, "model.layers.%u.mlp.experts.%u.%s.weight",
                     li, s->experts.first + i, part[j]);
            float *w = j < 2 ? slice(src, n, mi, hid, m0, mn, 0, hid, &st)
                             : slice(src, n, hid, mi, 0, hid, m0, mn, &st);
            if (w != NULL)
                memcpy(dst[j], w, per * sizeof *w);
            free(w);
        }
    }
    return st;
}

/* Rows [r0, r0 + nr) x all cols of checkpoint tensor `name` (any number
 * of dimensions, its leading ones flattened into rows: nvl_weights_read_f32)
 * of a tensor of rows x cols elements in all; NULL and *st set on error. */
static float *rows_of(const source_t *src, const char *name, uint64_t rows,
                      uint64_t cols, uint64_t r0, uint64_t nr,
                      nvl_status_t *st)
{
    float *out = malloc((nr * cols + 1) * sizeof *out);
    if (out == NULL) {
        nvl_report("out of memory for tensor '%s'", name);
        *st = NVL_ERR_NOMEM;
        return NULL;
    }
    if (src->ckpt == NULL) {
        synthesize(src, name, cols, r0, nr, 0, cols, out);
        return out;
    }
    nvl_tensor_info_t info;
    uint64_t have = 1;
    *st = nvl_weights_info(src->ckpt, name, &info);
    for (int d = 0; *st == NVL_OK && d < info.ndim; d++)
        have *= info.shape[d];
    if (*st == NVL_OK && (have != rows * cols ||
                          info.shape[info.ndim - 1] != cols)) {
        nvl_report("%s: tensor '%s' holds %llu values in rows of %llu, but "
                   "config.json makes it %llu x %llu", src->dir, name,
                   (unsigned long long)have,
                   (unsigned long long)info.shape[info.ndim - 1],
                   (unsigned long long)rows, (unsigned long long)cols);
        *st = NVL_ERR_INVALID;
    }
    if (*st == NVL_OK)
        *st = nvl_weights_read_f32(src->ckpt, name, r0, nr, 0, cols, out);
    if (*st != NVL_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* Whether the checkpoint stores `name` quantized (*q; gpt-oss's MX-FP4
 * experts: [E x out, in], where bf16 stores [E, in, out]); a missing or
 * faulty tensor reported. */
static nvl_status_t stored_quantized(const source_t *src, const char *name,
                                     bool *q)
{
    nvl_tensor_info_t info;
    *q = false;
    if (src->ckpt == NULL)
        return NVL_OK;
    nvl_status_t st = nvl_weights_info(src->ckpt, name, &info);
    *q = st == NVL_OK && info.quantized;
    return st;
}

/* Expert x's gate and up rows [m0, m0 + mn) of a fused gate_up tensor
 * (gate interleaved with up: output 2i is gate row i, 2i + 1 up row i):
 * stored [E, hidden, 2I] (bf16; transposed on reading) or, quantized,
 * [E x 2I, hidden] (only this rank's 2 mn rows read). */
static nvl_status_t fused_gate_up(const source_t *src, const char *name,
                                  uint64_t E, uint64_t I, uint64_t hid,
                                  uint32_t x, uint64_t m0, uint64_t mn,
                                  float *g, float *u)
{
    bool q;
    nvl_status_t st = stored_quantized(src, name, &q);
    if (st != NVL_OK)
        return st;
    float *w = q ? rows_of(src, name, E * 2 * I, hid, x * 2 * I + 2 * m0,
                           2 * mn, &st)
                 : rows_of(src, name, E * hid, 2 * I, x * hid, hid, &st);
    for (uint64_t i = 0; w != NULL && i < mn; i++)
        for (uint64_t c = 0; c < hid; c++) {
            uint64_t go = 2 * (m0 + i), uo = go + 1;
            g[i * hid + c] = q ? w[2 * i * hid + c] : w[c * 2 * I + go];
            u[i * hid + c] = q ? w[(2 * i + 1) * hid + c] : w[c * 2 * I + uo];
        }
    free(w);
    return st;
}

/* Expert x's down columns [m0, m0 + mn) as [hidden, mn]: stored [E, I,
 * hidden] (bf16) or, quantized, [E x hidden, I]. */
static nvl_status_t fused_down(const source_t *src, const char *name,
                               uint64_t E, uint64_t I, uint64_t hid,
                               uint32_t x, uint64_t m0, uint64_t mn, float *d)
{
    bool q;
    nvl_status_t st = stored_quantized(src, name, &q);
    if (st != NVL_OK || q)
        return st != NVL_OK ? st
                            : nvl_weights_read_f32(src->ckpt, name, x * hid,
                                                   hid, m0, mn, d);
    float *w = rows_of(src, name, E * I, hid, x * I + m0, mn, &st);
    for (uint64_t i = 0; w != NULL && i < mn; i++)
        for (uint64_t c = 0; c < hid; c++)
            d[c * mn + i] = w[i * hid + c];
    free(w);
    return st;
}

/* Expert x's biases: gate's and up's [mn] (interleaved in [E, 2I]) and,
 * on the rank whose rows start at 0, down's [hidden]. */
static nvl_status_t fused_biases(const source_t *src, const char *pre,
                                 const nvl_model_config_t *c, uint32_t x,
                                 uint64_t m0, uint64_t mn, float *gb,
                                 float *ub, float *db)
{
    uint64_t E = c->num_experts, I = c->moe_intermediate, hid = c->hidden;
    char n[192];
    nvl_status_t st = NVL_OK;
    snprintf(n, sizeof n, "%sgate_up_proj_bias", pre);
    float *b = rows_of(src, n, E, 2 * I, x, 1, &st);
    for (uint64_t i = 0; b != NULL && i < mn; i++) {
        gb[i] = b[2 * (m0 + i)];
        ub[i] = b[2 * (m0 + i) + 1];
    }
    free(b);
    if (st != NVL_OK || db == NULL)
        return st;
    snprintf(n, sizeof n, "%sdown_proj_bias", pre);
    b = rows_of(src, n, E, hid, x, 1, &st);
    if (b != NULL)
        memcpy(db, b, hid * sizeof *db);
    free(b);
    return st;
}

/* gpt-oss's experts of layer li (model.layers.L.mlp.experts.gate_up_proj
 * and down_proj, fused over the experts, with their biases), this rank's
 * slices into l->eg, l->eu, l->ed and the biases. */
static nvl_status_t load_experts_fused(const source_t *src,
                                       const nvl_model_config_t *c,
                                       const nvl_shard_t *s, uint32_t li,
                                       nvl_layer_weights_t *l,
                                       nvl_status_t st)
{
    if (st != NVL_OK)
        return st;
    uint64_t hid = c->hidden, E = c->num_experts, I = c->moe_intermediate;
    uint64_t m0 = s->moe_intermediate.first, mn = s->moe_intermediate.count;
    uint64_t per = mn * hid, ne = s->experts.count;
    l->eg = malloc((ne * per + 1) * sizeof *l->eg);
    l->eu = malloc((ne * per + 1) * sizeof *l->eu);
    l->ed = malloc((ne * per + 1) * sizeof *l->ed);
    l->egb = malloc((ne * mn + 1) * sizeof *l->egb);
    l->eub = malloc((ne * mn + 1) * sizeof *l->eub);
    l->edb = m0 == 0 ? malloc((ne * hid + 1) * sizeof *l->edb) : NULL;
    if (l->eg == NULL || l->eu == NULL || l->ed == NULL || l->egb == NULL ||
        l->eub == NULL || (m0 == 0 && l->edb == NULL)) {
        nvl_report("out of memory for the %llu experts of layer %u",
                   (unsigned long long)ne, li);
        return NVL_ERR_NOMEM;
    }
    char pre[128], gu[192], dn[192];
    snprintf(pre, sizeof pre, "model.layers.%u.mlp.experts.", li);
    snprintf(gu, sizeof gu, "%sgate_up_proj", pre);
    snprintf(dn, sizeof dn, "%sdown_proj", pre);
    for (uint32_t i = 0; i < ne && st == NVL_OK; i++) {
        uint32_t x = s->experts.first + i;
        st = fused_gate_up(src, gu, E, I, hid, x, m0, mn, l->eg + i * per,
                           l->eu + i * per);
        if (st == NVL_OK)
            st = fused_down(src, dn, E, I, hid, x, m0, mn, l->ed + i * per);
        if (st == NVL_OK)
            st = fused_biases(src, pre, c, x, m0, mn, l->egb + i * mn,
                              l->eub + i * mn,
                              l->edb ? l->edb + i * hid : NULL);
    }
    return st;
}

void nvl_engine_free_weights(nvl_engine_t *e)
{
    for (uint32_t i = 0; e->lw != NULL && i < e->layers; i++) {
        float **p = (float **)&e->lw[i];
        for (size_t j = 0; j < sizeof e->lw[i] / sizeof(float *); j++)
            free(p[j]);
    }
    free(e->lw);
    if (e->lm_head != e->embed)
        free(e->lm_head);
    free(e->embed);
    free(e->norm);
    free(e->in_scale);
    free(e->kv_scale);
    free(e->actq_buf);
    free(e->calib_amax);
    e->in_scale = e->kv_scale = e->actq_buf = e->calib_amax = NULL;
    e->lw = NULL;
    e->lm_head = e->embed = e->norm = NULL;
}

/* Table row t of checkpoint layer g: the rank's part of it (NULL, and
 * st unchanged, when the layer has none). */
static float *load_row(const source_t *src, const nvl_engine_t *e,
                       const nvl_layer_tensor_t *t, uint32_t g,
                       nvl_status_t *st)
{
    if (*st != NVL_OK || (t->in_layer != NULL && !t->in_layer(&e->cfg, g)))
        return NULL;
    nvl_tensor_part_t p = nvl_layer_tensor_part(t, &e->cfg, &e->shard);
    char n[160];
    snprintf(n, sizeof n, "model.layers.%u.%s", g, t->suffix);
    return slice(src, n, p.rows, p.cols, p.row0, p.n_rows, p.col0,
                 p.n_cols, st);
}

/* Rows [from, to) of a table into slots[from ..] of checkpoint layer g. */
static void load_rows(const source_t *src, const nvl_engine_t *e,
                      const nvl_layer_tensor_t *rows, size_t from, size_t to,
                      uint32_t g, float **slots, nvl_status_t *st)
{
    for (size_t i = from; i < to && *st == NVL_OK; i++)
        slots[i] = load_row(src, e, &rows[i], g, st);
}

/* Layer li of this stage (the checkpoint's layer layer0 + li): its norms,
 * its attention variant's tensors, its MLP's (dense, or a router and
 * experts), in that order. */
static nvl_status_t load_layer(const source_t *src, nvl_engine_t *e,
                               uint32_t li, nvl_status_t st)
{
    nvl_layer_weights_t *l = &e->lw[li];
    uint32_t g = e->layer0 + li;
    float *t[NVL_LAYER_COUNT] = {0};
    load_rows(src, e, nvl_layer_tensors, 0, NVL_LAYER_ROUTER, g, t, &st);
    const nvl_attn_variant_t *v = nvl_attn_variant_of(&e->cfg);
    load_rows(src, e, v->tensors, 0, v->n_tensors, g, l->attn, &st);
    load_rows(src, e, nvl_layer_tensors, NVL_LAYER_ROUTER, NVL_LAYER_COUNT,
              g, t, &st);
    l->in_norm = t[NVL_LAYER_IN_NORM];
    l->post_norm = t[NVL_LAYER_POST_NORM];
    l->router = t[NVL_LAYER_ROUTER] ? t[NVL_LAYER_ROUTER]
                                    : t[NVL_LAYER_ROUTER_OSS];
    l->router_bias = t[NVL_LAYER_ROUTER_BIAS];
    l->wg = t[NVL_LAYER_GATE];
    l->wu = t[NVL_LAYER_UP];
    l->wd = t[NVL_LAYER_DOWN];
    if (nvl_model_layer_is_moe(&e->cfg, g))
        st = e->cfg.experts_fused
                 ? load_experts_fused(src, &e->cfg, &e->shard, g, l, st)
                 : load_experts(src, &e->cfg, &e->shard, g, l, st);
    return st;
}

nvl_status_t nvl_engine_load_weights(nvl_engine_t *e)
{
    source_t src = {NULL, e->opts.weights_dir, e->opts.seed};
    nvl_status_t st = NVL_OK;
    if (e->opts.weights_dir != NULL)
        st = nvl_weights_open(e->opts.weights_dir, &src.ckpt);
    const nvl_model_config_t *c = &e->cfg;
    const nvl_shard_t *s = &e->shard;
    uint64_t hid = c->hidden;
    if (st == NVL_OK) {
        e->lw = calloc(e->layers, sizeof *e->lw);
        if (e->lw == NULL) {
            nvl_report("out of memory for %u layers", e->layers);
            st = NVL_ERR_NOMEM;
        }
    }
    e->embed = slice(&src, "model.embed_tokens.weight", c->vocab, hid,
                     s->vocab.first, s->vocab.count, 0, hid, &st);
    if (st == NVL_OK && !c->tied_embeddings)
        e->lm_head = slice(&src, "lm_head.weight", c->vocab, hid,
                           s->vocab.first, s->vocab.count, 0, hid, &st);
    else
        e->lm_head = e->embed;
    e->norm = slice(&src, "model.norm.weight", hid, 0, 0, hid, 0, 0, &st);
    for (uint32_t i = 0; st == NVL_OK && i < e->layers; i++)
        st = load_layer(&src, e, i, st);
    if (st == NVL_OK)
        st = nvl_engine_load_quant(e, src.ckpt, src.dir);
    if (src.ckpt != NULL)
        nvl_weights_close(src.ckpt);
    return st;
}
