/* The MLP half of a layer: dense (gate/up, SiLU, down) or a mixture of
 * experts (moe.c), then the row-parallel sum. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

/* The MLP half of layer li: dense, or a mixture of experts (moe.c); one
 * allreduce either way (the dense one with its down_proj: overlap.c). */
nvl_status_t nvl_engine_mlp(nvl_engine_t *e, uint32_t li, uint64_t M,
                              nvl_acts_t *b)
{
    const nvl_model_config_t *c = &e->cfg;
    const nvl_layer_weights_t *l = e->data ? &e->lw[li] : NULL;
    uint64_t hid = c->hidden, in = e->shard.intermediate.count;
    int32_t L = (int32_t)li;

    nvl_engine_step(e, NVL_STEP_ADD_NORM, L, (double)M, NULL);
    if (e->data)
        nvl_engine_rmsnorm(b->x, l->post_norm, b->h, M, hid, c->rms_eps);
    nvl_status_t st = NVL_OK;
    bool dense = false;
    if (nvl_engine_moe_is_ep(e, li)) {
        /* data-parallel attention: this rank's rows, complete sums */
        st = nvl_engine_moe_ep(e, li, M, e->row0, e->data ? b->h : NULL);
    } else if (nvl_engine_layer_is_moe(e, li)) {
        nvl_engine_moe(e, li, M, e->data ? b->h : NULL);
    } else {
        dense = true; /* down_proj with its allreduce: nvl_engine_rowpar */
        if (e->data) {
            const float *x =
                nvl_engine_gemm_input(e, li, NVL_GEMM_IN_GATE_UP, b->h, M, hid);
            nvl_engine_linear(x, l->wg, NULL, b->g, M, in, hid);
            nvl_engine_linear(x, l->wu, NULL, b->u, M, in, hid);
            for (uint64_t i = 0; i < M * in; i++)
                b->g[i] = b->g[i] / (1.0f + expf(-b->g[i])) * b->u[i];
            x = nvl_engine_gemm_input(e, li, NVL_GEMM_IN_DOWN, b->g, M, in);
            nvl_engine_linear(x, l->wd, NULL, b->h, M, hid, in);
        }
        nvl_engine_step(e, NVL_STEP_GATE_UP, L, (double)M, NULL);
    }
    if (st == NVL_OK)
        st = dense ? nvl_engine_rowpar(e, "down_proj", NVL_QCLASS_MLP, L, M,
                                    hid, in, b->h)
                   : nvl_engine_allreduce_add_norm(e, L, b->h, M * hid);
    if (e->data)
        for (uint64_t i = 0; i < M * hid; i++)
            b->x[i] += b->h[i];
    return st;
}
