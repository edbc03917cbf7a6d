/* The key/value cache of each sequence and the activations of a pass
 * (data mode; timing mode holds neither). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

void nvl_engine_kv_free(nvl_kv_cache_t *c, uint32_t layers)
{
    for (uint32_t i = 0; c->k != NULL && i < layers; i++) {
        free(c->k[i]);
        free(c->v[i]);
    }
    free(c->k);
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* Makes room for `more` positions (data mode); aborts the job when memory
 * runs out (the other ranks would wait in the next collective). */
void nvl_engine_kv_reserve(nvl_engine_t *e, nvl_kv_cache_t *c, uint64_t more)
{
    const nvl_attn_geom_t *g = &e->shard.attn;
    uint64_t krow = (uint64_t)g->kv_heads * g->k_elems;
    uint64_t vrow = (uint64_t)g->kv_heads * g->v_elems;
    if (c->len + more <= c->cap)
        return;
    if (c->k == NULL) {
        c->k = calloc(e->layers, sizeof *c->k);
        c->v = calloc(e->layers, sizeof *c->v);
        if (c->k == NULL || c->v == NULL)
            goto oom;
    }
    uint64_t cap = c->cap ? c->cap : 16;
    while (cap < c->len + more)
        cap *= 2;
    for (uint32_t i = 0; i < e->layers; i++) {
        float *k = realloc(c->k[i], (cap * krow + 1) * sizeof *k);
        if (k == NULL)
            goto oom;
        c->k[i] = k;
        float *v = realloc(c->v[i], (cap * vrow + 1) * sizeof *v);
        if (v == NULL)
            goto oom;
        c->v[i] = v;
    }
    c->cap = cap;
    return;
oom:
    nvl_report("out of memory for the KV cache of %llu positions",
               (unsigned long long)(c->len + more));
    nvl_runtime_abort(1);
}


void nvl_engine_acts_free(nvl_acts_t *b)
{
    float **p = (float **)b;
    for (size_t i = 0; i < sizeof *b / sizeof(float *); i++)
        free(p[i]);
}

void nvl_engine_acts_alloc(nvl_engine_t *e, nvl_acts_t *b, uint64_t M, int n,
                       uint64_t ctx)
{
    const nvl_shard_t *s = &e->shard;
    const nvl_attn_geom_t *g = &s->attn;
    uint64_t hid = e->cfg.hidden;
    uint64_t sizes[] = {M * hid, M * hid, M * g->q_heads * g->qk_dim,
                        M * g->q_heads * g->v_dim, M * g->kv_heads * g->k_elems,
                        M * g->kv_heads * g->v_elems, M * s->intermediate.count,
                        M * s->intermediate.count, ctx,
                        (uint64_t)n * s->vocab.count};
    float **p = (float **)b;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if ((p[i] = calloc(sizes[i] + 1, sizeof(float))) == NULL) {
            nvl_report("out of memory for a %llu-token forward pass",
                       (unsigned long long)M);
            nvl_runtime_abort(1);
        }
}
