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

/* One send/recv group on a link: the pass's n rows of x and of h to or
 * from the partner (NULL in timing mode). */
static nvl_status_t link_group(nvl_comm_t *link, bool send, size_t n,
                               float *x, float *h, nvl_coll_info_t *info)
{
    int peer = send ? 1 : 0; /* the lower stage is member 0 */
    nvl_status_t st = nvl_group_start(link);
    for (int i = 0; i < 2 && st == NVL_OK; i++)
        st = send ? nvl_send(link, i ? h : x, n, NVL_DT_F32, peer)
                  : nvl_recv(link, i ? h : x, n, NVL_DT_F32, peer);
    if (st == NVL_OK)
        st = nvl_group_end(link, info);
    return st;
}

/* The pass's rows (x, h) sent to or received from the partner, timed; the
 * wait for the partner counted as the bubble.  While a step is recorded
 * whole (pipe_agree.c) the transfer is recorded on the link like a
 * collective, its entry stated as the rank's others are. */
static nvl_status_t transfer(nvl_engine_t *e, nvl_comm_t *link, bool send,
                             uint64_t M, nvl_acts_t *b)
{
    size_t n = (size_t)M * e->cfg.hidden;
    float *x = e->data ? b->x : NULL, *h = e->data ? b->h : NULL;
    e->rec.comm = link;
    int64_t entry = nvl_engine_coll_begin(e, -1);
    e->rec.comm = NULL;
    nvl_coll_info_t info;
    nvl_status_t st = link_group(link, send, n, x, h, &info);
    if (st != NVL_OK)
        return st;
    if (e->rec.on)
        nvl_engine_record_link(e, link, send, n);
    else
        nvl_engine_link_done(e, send, n, entry, &info);
    return NVL_OK;
}

/* The tag of a pass's status on a link, apart from coll's own
 * (coll_impl.h's NVL_TAG_*, 90..150). */
enum { PIPE_TAG_STATUS = 200 };

/* The previous stage's status on e->link_prev, first: a failure upstream
 * skips this stage's work and is passed on (never a wait for rows that
 * will not come); the stage's ranks agree on it, the worst (lowest)
 * winning, as their partners upstream need not have failed alike.  The
 * sending stage agreed on it when it settled (every partner sends the
 * same, and says so alike: deferral is stage-wide), else it is agreed
 * here over e->tp. */
static int recv_status(nvl_engine_t *e)
{
    int up[2] = {0, 0}, worst; /* the status, whether stage-wide */
    MPI_Recv(up, 2, MPI_INT, 0, PIPE_TAG_STATUS, nvl_comm_mpi(e->link_prev),
             MPI_STATUS_IGNORE);
    worst = up[0];
    if (!up[1])
        MPI_Allreduce(&up[0], &worst, 1, MPI_INT, MPI_MIN,
                      nvl_comm_mpi(e->tp));
    return worst;
}

/* A deferred pass settled (nvl_engine_settle), its exchange carrying the
 * stage's worst status (the lowest: its negation's maximum): returns that
 * worst (with the settlement's own failure) when the pass was recorded
 * (*stage_wide), else st; *settled, the settlement's status (NVL_OK when
 * nothing was recorded). */
static int settle_status(nvl_engine_t *e, nvl_status_t st, bool *stage_wide,
                         nvl_status_t *settled)
{
    *stage_wide = e->defer;
    if (*stage_wide)
        nvl_comm_defer_ride(e->tp, -(int64_t)st);
    *settled = nvl_engine_settle(e);
    if (!*stage_wide)
        return (int)st;
    int worst = (int)-nvl_comm_settled_ride(e->tp);
    return *settled != NVL_OK && (int)*settled < worst ? (int)*settled
                                                        : worst;
}

nvl_status_t nvl_engine_pipe_recv(nvl_engine_t *e, uint64_t M, nvl_acts_t *b)
{
    if (e->link_prev == NULL)
        return NVL_OK;
    if (e->rec.on) /* statuses meet at the step's end */
        return transfer(e, e->link_prev, false, M, b);
    int worst = recv_status(e);
    if (worst != NVL_OK)
        return (nvl_status_t)worst;
    return transfer(e, e->link_prev, false, M, b);
}

nvl_status_t nvl_engine_pipe_send(nvl_engine_t *e, uint64_t M, nvl_acts_t *b,
                                  nvl_status_t st)
{
    if (e->link_next == NULL)
        return st;
    if (e->rec.on) /* statuses meet at the step's end */
        return st != NVL_OK ? st : transfer(e, e->link_next, true, M, b);
    /* a deferred pass settles here */
    bool stage_wide;
    nvl_status_t settled;
    int out[2] = {settle_status(e, st, &stage_wide, &settled), 0};
    out[1] = stage_wide;
    if (st == NVL_OK)
        st = settled;
    MPI_Send(out, 2, MPI_INT, 1, PIPE_TAG_STATUS, nvl_comm_mpi(e->link_next));
    /* rows only where the receiver waits for them (its worst is out[0]
     * when stage-wide, else this rank's st at the least) */
    if (st != NVL_OK || out[0] != NVL_OK)
        return st;
    return transfer(e, e->link_next, true, M, b);
}

nvl_status_t nvl_engine_pipe_settle_last(nvl_engine_t *e, nvl_status_t st)
{
    if (e->rec.on) /* settled at the step's end */
        return st;
    bool stage_wide;
    nvl_status_t settled;
    return (nvl_status_t)settle_status(e, st, &stage_wide, &settled);
}

nvl_status_t nvl_engine_pipe_skip(nvl_engine_t *e, uint64_t M,
                                  nvl_status_t st)
{
    if (e->link_prev != NULL) {
        /* as nvl_engine_pipe_recv: the partner's status, then its rows
         * where the stage's worst lets them come */
        nvl_coll_info_t info;
        if (recv_status(e) == NVL_OK &&
            link_group(e->link_prev, false, (size_t)M * e->cfg.hidden, NULL,
                       NULL, &info) != NVL_OK)
            nvl_runtime_abort(1); /* the partner sent these very rows */
    }
    if (e->link_next != NULL) { /* the same on every rank of the stage */
        int out[2] = {(int)st, 1};
        MPI_Send(out, 2, MPI_INT, 1, PIPE_TAG_STATUS,
                 nvl_comm_mpi(e->link_next));
    }
    return st;
}

void nvl_engine_pipe_deliver(nvl_engine_t *e, int n, float *logits,
                             int64_t end_ps)
{
    if (e->stages == 1)
        return;
    MPI_Comm job = nvl_comm_mpi(e->job);
    int root = nvl_comm_size(e->job) - nvl_comm_size(e->tp);
    if (e->data)
        MPI_Bcast(logits, n * (int)e->cfg.vocab, MPI_FLOAT, root, job);
    if (e->stage == 0)
        e->pp_ready_ps = end_ps;
}

void nvl_engine_pipe_wait_tokens(nvl_engine_t *e)
{
    if (e->stage != 0)
        return;
    if (e->rec.on)
        nvl_engine_record_wait_tokens(e, e->pp_ready_ps);
    else
        nvl_engine_wait_tokens_at(e, e->pp_ready_ps);
}

nvl_status_t nvl_engine_pipe_step_end(nvl_engine_t *e, nvl_status_t st,
                                      int64_t *free_ps_out,
                                      int64_t *ready_ps_out)
{
    /* one reduction: each stage's end (its ranks' latest) and the worst
     * status, so a failure on any stage fails every rank */
    int64_t v[NVL_ENGINE_PP_MAX + 1];
    int n = e->stages;
    for (int k = 0; k < n; k++)
        v[k] = INT64_MIN;
    v[e->stage] = nvl_engine_clock(e)->now_ps;
    v[n] = -(int64_t)st;
    MPI_Allreduce(MPI_IN_PLACE, v, n + 1, MPI_INT64_T, MPI_MAX,
                  nvl_comm_mpi(e->job));
    nvl_vclock_wait_until(nvl_engine_clock(e), v[e->stage]);
    *free_ps_out = v[0];
    *ready_ps_out = v[n - 1];
    return (nvl_status_t)-v[n];
}
