/* Issuing recorded work (deferred agreement, timing mode): once the
 * group has agreed on a pass's collectives (nvl_engine_settle: one
 * exchange over the stage, src/coll/defer.c) or the job on a pipeline's
 * step (pipe_agree.c), the tape issue.c recorded runs through the very
 * functions that run live, each call's outcome now known: the same
 * clock, statistics and events in the same order, bit for bit. */
#include "engine_impl.h"
#include "nvlemu/runtime.h"

nvl_status_t nvl_engine_settle(nvl_engine_t *e)
{
    if (!e->defer || e->rec.on) /* a step recorded whole: pipe_agree.c */
        return NVL_OK;
    e->defer = false;
    nvl_engine_record_end(e);
    nvl_status_t st = nvl_comm_settle(e->tp, &e->settled_end_ps);
    if (st != NVL_OK)
        e->n_tape = 0;
    return st == NVL_OK ? nvl_engine_replay(e) : st;
}

/* A recorded step's pass opened on replay: the statistics counted while
 * recording, the issued work's added to them. */
static void replay_pass_open(nvl_engine_t *e, size_t k)
{
    nvl_step_pass_t *p = &e->rec.pass[k];
    e->cur = p->cur;
    e->cur.start_ps = nvl_engine_clock(e)->now_ps;
    e->pass = p->pass;
    e->pass_wall_start = MPI_Wtime();
    nvl_stream_begin_pass(&e->stream, nvl_engine_clock(e));
}

nvl_status_t nvl_engine_replay(nvl_engine_t *e)
{
    e->defer = false;
    e->rec.on = false;
    nvl_status_t st = NVL_OK;
    int64_t entry = 0;
    for (size_t i = 0; i < e->n_tape && st == NVL_OK; i++) {
        const nvl_tape_op_t *op = &e->tape[i];
        nvl_coll_info_t info;
        switch (op->kind) {
        case NVL_TAPE_KERNEL:
            nvl_engine_kernel(e, op->name, op->part, op->layer, op->cost);
            break;
        case NVL_TAPE_COLL_BEGIN:
            entry = nvl_engine_coll_begin(e, op->layer);
            break;
        case NVL_TAPE_COLL_DONE:
            st = nvl_comm_settled_call(op->comm, op->call, &info);
            if (st == NVL_OK)
                nvl_engine_coll_done_ep(e, op->name, op->layer, entry, &info,
                                        op->ep);
            break;
        case NVL_TAPE_LINK_DONE:
            st = nvl_comm_settled_call(op->comm, op->call, &info);
            if (st == NVL_OK)
                nvl_engine_link_done(e, op->send, op->n, entry, &info);
            break;
        case NVL_TAPE_EPILOGUE: /* not recording: issued */
            nvl_engine_epilogue(e, op->name, op->layer, op->cost);
            break;
        case NVL_TAPE_PASS_BEGIN:
            replay_pass_open(e, op->call);
            break;
        case NVL_TAPE_PASS_END:
            nvl_engine_pass_close(e, op->n);
            e->rec.pass[op->call].end_ps = nvl_engine_clock(e)->now_ps;
            break;
        case NVL_TAPE_WAIT_TOKENS:
            nvl_engine_wait_tokens_at(e, op->value_ps);
            break;
        }
    }
    e->n_tape = 0;
    return st;
}

void nvl_engine_wait_tokens_at(nvl_engine_t *e, int64_t ready_ps)
{
    nvl_vclock_t *clk = nvl_engine_clock(e);
    int64_t before = clk->now_ps;
    if (ready_ps <= before || e->time_overflow)
        return;
    nvl_vclock_wait_until(clk, ready_ps);
    nvl_stream_sync(&e->stream, clk);
    nvl_engine_account(e, "pp_wait_tokens", NVL_PART_WAIT, -1, before,
                       ready_ps - before, 0, 0);
    e->cur.pp_bubble_ps += ready_ps - before;
}

void nvl_engine_link_done(nvl_engine_t *e, bool send, uint64_t n,
                          int64_t entry_ps, const nvl_coll_info_t *info)
{
    nvl_engine_coll_done(e, send ? "pp_send" : "pp_recv", -1, entry_ps, info);
    if (info->start_ps > entry_ps)
        e->cur.pp_bubble_ps += info->start_ps - entry_ps;
    e->cur.pp_xfer_ps += info->time_ps;
    e->cur.pp_bytes += 2.0 * (double)n * 2; /* bf16 */
}

