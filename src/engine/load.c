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

#include "engine_impl.h"
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

nvl_status_t nvl_engine_load_weights(nvl_engine_t *e)
{
    source_t src = {NULL, e->opts.weights_dir, e->opts.seed};
    nvl_status_t st = NVL_OK;
    if (e->opts.weights_dir != NULL)
        st = nvl_weights_open(e->opts.weights_dir, &src.ckpt);
    const nvl_model_config_t *c = &e->cfg;
    const nvl_shard_t *s = &e->shard;
    uint64_t hd = c->head_dim, hid = c->hidden;
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
    uint64_t qh = c->q_heads * hd, kvh = c->kv_heads * hd;
    uint64_t q0 = s->q_heads.first * hd, qn = s->q_heads.count * hd;
    uint64_t k0 = s->kv_heads.first * hd, kn = s->kv_heads.count * hd;
    uint64_t i0 = s->intermediate.first, in = s->intermediate.count;
    for (uint32_t i = 0; st == NVL_OK && i < e->layers; i++) {
        nvl_layer_weights_t *l = &e->lw[i];
        uint32_t g = e->layer0 + i; /* the checkpoint's layer */
        char n[160];
#define P(suffix) (snprintf(n, sizeof n, "model.layers.%u.%s", g, suffix), n)
        l->in_norm = slice(&src, P("input_layernorm.weight"), hid, 0, 0, hid,
                           0, 0, &st);
        l->post_norm = slice(&src, P("post_attention_layernorm.weight"), hid,
                             0, 0, hid, 0, 0, &st);
        l->wq = slice(&src, P("self_attn.q_proj.weight"), qh, hid, q0, qn, 0,
                      hid, &st);
        l->wk = slice(&src, P("self_attn.k_proj.weight"), kvh, hid, k0, kn, 0,
                      hid, &st);
        l->wv = slice(&src, P("self_attn.v_proj.weight"), kvh, hid, k0, kn, 0,
                      hid, &st);
        if (c->qkv_bias) {
            l->bq = slice(&src, P("self_attn.q_proj.bias"), qh, 0, q0, qn, 0,
                          0, &st);
            l->bk = slice(&src, P("self_attn.k_proj.bias"), kvh, 0, k0, kn, 0,
                          0, &st);
            l->bv = slice(&src, P("self_attn.v_proj.bias"), kvh, 0, k0, kn, 0,
                          0, &st);
        }
        if (c->qk_norm) {
            l->q_norm = slice(&src, P("self_attn.q_norm.weight"), hd, 0, 0,
                              hd, 0, 0, &st);
            l->k_norm = slice(&src, P("self_attn.k_norm.weight"), hd, 0, 0,
                              hd, 0, 0, &st);
        }
        l->wo = slice(&src, P("self_attn.o_proj.weight"), hid, qh, 0, hid, q0,
                      qn, &st);
        if (nvl_model_layer_is_moe(c, g)) {
            l->router = slice(&src, P("mlp.gate.weight"), c->num_experts,
                              hid, 0, c->num_experts, 0, hid, &st);
            st = load_experts(&src, c, s, g, l, st);
            continue;
        }
        l->wg = slice(&src, P("mlp.gate_proj.weight"), c->intermediate, hid,
                      i0, in, 0, hid, &st);
        l->wu = slice(&src, P("mlp.up_proj.weight"), c->intermediate, hid, i0,
                      in, 0, hid, &st);
        l->wd = slice(&src, P("mlp.down_proj.weight"), hid, c->intermediate, 0,
                      hid, i0, in, &st);
#undef P
    }
    if (st == NVL_OK)
        st = nvl_engine_load_quant(e, src.ckpt, src.dir);
    if (src.ckpt != NULL)
        nvl_weights_close(src.ckpt);
    return st;
}
