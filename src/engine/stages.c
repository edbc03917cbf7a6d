/* Pipeline parallelism, its set-up: the layers of each stage and the
 * communicators of a stage (its tensor-parallel group) and of its links to
 * the neighbouring stages (pipe.c moves the activations over them).
 *
 * Stage k holds ranks k*TP .. k*TP + TP - 1 (TP = ranks / stages) and
 * consecutive layers; rank t of stage k is paired with rank t of stage
 * k + 1 (vLLM's PP groups pair the same TP rank of neighbouring stages:
 * vllm/distributed/parallel_state.py, initialize_model_parallel). */
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

/* The layers per stage: --pp-layers, or an even split; checks them. */
static nvl_status_t stage_layers(const nvl_engine_t *e, uint32_t total,
                                 int ranks, uint32_t *count_out)
{
    const nvl_engine_opts_t *o = &e->opts;
    int pp = (int)o->pp;
    if (ranks % pp != 0) {
        nvl_report("--pp %d: the job's %d ranks do not split into %d "
                   "stages of equal TP (ranks = PP x TP)", pp, ranks, pp);
        return NVL_ERR_INVALID;
    }
    if ((uint32_t)pp > total) {
        nvl_report("--pp %d: more stages than the %u layers run (each stage "
                   "needs at least one)", pp, total);
        return NVL_ERR_INVALID;
    }
    uint32_t sum = 0;
    bool given = false;
    for (int k = 0; k < pp; k++) {
        given |= o->pp_layers[k] != 0;
        sum += o->pp_layers[k];
    }
    for (int k = 0; k < pp; k++)
        count_out[k] = given ? o->pp_layers[k]
                             : nvl_range_split(total, pp, k).count;
    if (given && sum != total) {
        nvl_report("--pp-layers: the stages' layers sum to %u, the run has "
                   "%u layers", sum, total);
        return NVL_ERR_INVALID;
    }
    for (int k = 0; k < pp; k++)
        if (count_out[k] == 0) {
            nvl_report("--pp-layers: stage %d has no layer", k);
            return NVL_ERR_INVALID;
        }
    return NVL_OK;
}

/* A communicator split of the job in the engine's mode, bf16 time. */
static nvl_status_t split(nvl_engine_t *e, int color, nvl_comm_t **out)
{
    nvl_status_t st = nvl_comm_split(e->job, color, nvl_comm_rank(e->job),
                                     out);
    if (st == NVL_OK) {
        nvl_comm_set_mode(*out, e->opts.mode);
        nvl_comm_set_time_dtype(*out, NVL_DT_BF16);
    }
    return st;
}

/* The links: split A pairs stages (0,1), (2,3) ..., split B (1,2),
 * (3,4) ...; a rank left out of a pair is a group of its own. */
static nvl_status_t links(nvl_engine_t *e, int tp)
{
    int r = nvl_comm_rank(e->job), n = nvl_comm_size(e->job);
    int k = e->stage, t = r % tp;
    nvl_comm_t *c[2] = {NULL, NULL};
    nvl_status_t st = NVL_OK;
    for (int parity = 0; parity < 2 && st == NVL_OK; parity++) {
        /* the lower stage of this rank's pair under this split */
        int low = (k % 2 == parity) ? k : k - 1;
        bool paired = low >= 0 && low + 1 < e->stages;
        st = split(e, paired ? low * tp + t : n + r, &c[parity]);
    }
    if (st != NVL_OK) {
        nvl_comm_destroy(c[0]);
        nvl_comm_destroy(c[1]);
        return st;
    }
    /* the pair whose lower stage is this one leads to the next stage */
    nvl_comm_t *next = c[k % 2], *prev = c[1 - k % 2];
    if (k + 1 < e->stages)
        e->link_next = next;
    else
        nvl_comm_destroy(next);
    if (k > 0)
        e->link_prev = prev;
    else
        nvl_comm_destroy(prev);
    return NVL_OK;
}

nvl_status_t nvl_engine_pipe_create(nvl_engine_t *e)
{
    uint32_t total = e->opts.layers ? e->opts.layers : e->cfg.layers;
    int ranks = nvl_comm_size(e->job);
    e->stages = e->opts.pp > 1 ? (int)e->opts.pp : 1;
    e->microbatches = 1;
    e->layers_total = total;
    e->layers = total;
    e->tp = e->job;
    if (e->stages == 1 && e->opts.pp_layers[0] == 0)
        return NVL_OK;
    uint32_t *count = calloc((size_t)e->stages, sizeof *count);
    if (count == NULL) {
        nvl_report("out of memory for %d stages", e->stages);
        nvl_runtime_abort(1);
    }
    /* the same on every rank: the lowest reports */
    nvl_runtime_capture_begin();
    nvl_status_t st = total > e->cfg.layers ? NVL_ERR_INVALID : NVL_OK;
    if (st != NVL_OK)
        nvl_report("--layers %u: model '%s' has %u layers", total,
                   e->cfg.name, e->cfg.layers);
    else
        st = stage_layers(e, total, ranks, count);
    st = nvl_runtime_capture_end_on(nvl_comm_mpi(e->job), st);
    int tp = ranks / e->stages;
    if (st == NVL_OK && e->stages > 1) {
        e->stage = nvl_comm_rank(e->job) / tp;
        for (int k = 0; k < e->stage; k++)
            e->layer0 += count[k];
        e->layers = count[e->stage];
        e->tp = NULL;
        st = split(e, e->stage, &e->tp);
    }
    if (st == NVL_OK && e->stages > 1)
        st = links(e, tp);
    if (e->tp == NULL)
        e->tp = e->job;
    free(count);
    return st;
}

void nvl_engine_pipe_free(nvl_engine_t *e)
{
    if (e->tp != e->job)
        nvl_comm_destroy(e->tp);
    nvl_comm_destroy(e->link_prev);
    nvl_comm_destroy(e->link_next);
    e->tp = e->job;
    e->link_prev = e->link_next = NULL;
    free(e->rec.ev);
    free(e->rec.pass);
    e->rec.ev = NULL;
    e->rec.pass = NULL;
    e->rec.n_ev = e->rec.cap_ev = e->rec.n_pass = e->rec.cap_pass = 0;
}

