/* Pipeline parallelism: the job's ranks as stages of tensor-parallel
 * groups, the activations sent from one stage to the next, and each
 * microbatch's logits handed from the last stage back to every rank.
 *
 * Stage k holds ranks k*TP .. k*TP + TP - 1 (TP = ranks / stages) and
 * consecutive layers; rank t of stage k sends its rows to rank t of stage
 * k + 1 (vLLM's PP groups pair the same TP rank of neighbouring stages:
 * vllm/distributed/parallel_state.py, initialize_model_parallel), over a
 * two-member communicator of the coll module, whose send/recv groups move
 * the data (MPI) and time it on the topology's point-to-point path
 * (NVLink inside an NVLink domain, the NIC and the scale-out network
 * between domains: src/coll/p2p.c).  What crosses is vLLM's
 * IntermediateTensors: hidden_states and residual, two [M, hidden] bf16
 * tensors (vllm/model_executor/models/llama.py, LlamaModel.forward). */
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
}

/* One send/recv group on a link: the pass's rows (x, h) to or from the
 * partner; the wait for the partner counted as the bubble. */
static nvl_status_t transfer(nvl_engine_t *e, nvl_comm_t *link, bool send,
                             uint64_t M, nvl_acts_t *b)
{
    size_t n = (size_t)M * e->cfg.hidden;
    int peer = send ? 1 : 0; /* the lower stage is member 0 */
    float *x = e->data ? b->x : NULL, *h = e->data ? b->h : NULL;
    int64_t entry = nvl_engine_coll_begin(e, -1);
    nvl_status_t st = nvl_group_start(link);
    for (int i = 0; i < 2 && st == NVL_OK; i++)
        st = send ? nvl_send(link, i ? h : x, n, NVL_DT_F32, peer)
                  : nvl_recv(link, i ? h : x, n, NVL_DT_F32, peer);
    nvl_coll_info_t info;
    if (st == NVL_OK)
        st = nvl_group_end(link, &info);
    if (st != NVL_OK)
        return st;
    nvl_engine_coll_done(e, send ? "pp_send" : "pp_recv", -1, entry, &info);
    if (info.start_ps > entry)
        e->cur.pp_bubble_ps += info.start_ps - entry;
    e->cur.pp_xfer_ps += info.time_ps;
    e->cur.pp_bytes += 2.0 * (double)n * 2; /* bf16 */
    return NVL_OK;
}

nvl_status_t nvl_engine_pipe_recv(nvl_engine_t *e, uint64_t M, nvl_acts_t *b)
{
    return e->link_prev != NULL ? transfer(e, e->link_prev, false, M, b)
                                : NVL_OK;
}

nvl_status_t nvl_engine_pipe_send(nvl_engine_t *e, uint64_t M, nvl_acts_t *b)
{
    return e->link_next != NULL ? transfer(e, e->link_next, true, M, b)
                                : NVL_OK;
}

void nvl_engine_pipe_deliver(nvl_engine_t *e, int n, float *logits,
                             int64_t end_ps)
{
    if (e->stages == 1)
        return;
    MPI_Comm job = nvl_comm_mpi(e->job);
    int root = nvl_comm_size(e->job) - nvl_comm_size(e->tp);
    MPI_Bcast(&end_ps, 1, MPI_INT64_T, root, job);
    if (e->data)
        MPI_Bcast(logits, n * (int)e->cfg.vocab, MPI_FLOAT, root, job);
    if (e->stage == 0)
        e->pp_ready_ps = end_ps;
}

void nvl_engine_pipe_wait_tokens(nvl_engine_t *e)
{
    nvl_vclock_t *clk = nvl_engine_clock(e);
    int64_t before = clk->now_ps;
    if (e->stage != 0 || e->pp_ready_ps <= before || e->time_overflow)
        return;
    nvl_vclock_wait_until(clk, e->pp_ready_ps);
    nvl_stream_sync(&e->stream, clk);
    nvl_engine_account(e, "pp_wait_tokens", NVL_PART_WAIT, -1, before,
                       e->pp_ready_ps - before, 0, 0);
    e->cur.pp_bubble_ps += e->pp_ready_ps - before;
}
