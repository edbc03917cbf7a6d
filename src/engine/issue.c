/* Issuing kernels and collectives: each kernel's modeled time (include/
 * nvlemu/cost.h) advances the rank's clock through its stream (launches,
 * src/cost/stream.c), each collective's through the collective model, and
 * both are accounted to the pass (record.c).  Every other room of the
 * engine issues work only through here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

/* After every advance: a clock past NVL_PS_MAX_CLOCK (or a duration that
 * saturated) is held at the limit and remembered, so that the run fails
 * (nvl_engine_generate) instead of wrapping; afterwards nothing more is
 * issued. */
static bool clock_in_range(nvl_engine_t *e, const char *name, int32_t layer,
                           int64_t dur_ps)
{
    nvl_vclock_t *clk = nvl_engine_clock(e);
    if (clk->now_ps <= NVL_PS_MAX_CLOCK && dur_ps < NVL_PS_MAX_DURATION)
        return true;
    if (clk->now_ps > NVL_PS_MAX_CLOCK)
        clk->now_ps = NVL_PS_MAX_CLOCK;
    if (!e->time_overflow) {
        e->time_overflow = true;
        e->overflow_name = name;
        e->overflow_layer = layer;
        e->overflow_pass = e->pass;
    }
    return false;
}

static void launch_wait(nvl_engine_t *e, int32_t layer, int64_t before)
{
    int64_t now = nvl_engine_clock(e)->now_ps;
    if (now > before)
        nvl_engine_account(e, "launch", NVL_PART_LAUNCH, layer, before,
                           now - before, 0, 0);
}

/* ---- deferred agreement ----------------------------------------------
 * While recording, the clock stands still; each operation is appended to
 * the tape and run on two shadow clocks, each with a copy of the stream
 * (whose host side never depends on the GPU's clock within a pass), so
 * that at each collective the rank knows its entry as max(x + a, b), x
 * the previous collective's end: shadow 0 starts at SHADOW_HI + x... with
 * x = SHADOW_HI, above any launch time, so it is x + a; shadow 1 at
 * SHADOW_LO, below every launch time, so it ends above SHADOW_LO + a only
 * when a launch held it: then it is b.  (Before the pass's first
 * collective shadow 0 starts at the clock itself and gives the entry.)
 * nvl_engine_settle then has the group agree (src/coll/defer.c) and runs
 * the tape through the very functions that run live, each collective's
 * end now known: the same clock, statistics and events in the same
 * order, bit for bit. */
#define SHADOW_HI (INT64_C(1) << 59)
#define SHADOW_LO (-(INT64_C(1) << 59))
/* A shadow past this (or a clock or launch time at or past SHADOW_REL
 * when recording starts) no longer states entries exactly: the batch is
 * agreed call by call on replay instead.  On shadow 0 a value at or past
 * SHADOW_REL is a function of x (a bounded host may sit below SHADOW_HI,
 * shadow_bound_host), one below it a constant. */
#define SHADOW_RANGE (INT64_C(1) << 61)
#define SHADOW_REL (INT64_C(1) << 58)

static void tape_push(nvl_engine_t *e, nvl_tape_op_t op)
{
    e->tape = nvl_engine_grow(e->tape, &e->cap_tape, e->n_tape,
                              sizeof *e->tape);
    e->tape[e->n_tape++] = op;
}

static void shadow_check(nvl_engine_t *e)
{
    for (int i = 0; i < 2; i++)
        if (e->shadow[i].now_ps > SHADOW_RANGE)
            e->shadow_exact = false;
}

/* A shadow's launch waits are not the rank's (shadow 1 starts each
 * stretch at SHADOW_LO, 2^59 ps before any launch): the replay counts the
 * real ones, and summing the shadows' would overflow after 16 stretches.
 * While the host clock is only bounded (host_stale), a wait on it is not
 * known exactly: the batch is then agreed call by call. */
static void shadow_forget_waits(nvl_engine_t *e, int i)
{
    if (e->rec.host_stale && e->shadow_stream[i].launch_wait_ps > 0)
        e->shadow_exact = false;
    e->shadow_stream[i].launch_wait_ps = 0;
}

/* The shadows' clock as an entry max(x + a, b) (b NVL_DEFER_NO_BOUND:
 * none). */
static void shadow_values(const nvl_engine_t *e, int64_t *a_out,
                          int64_t *b_out)
{
    int64_t a = e->shadow[0].now_ps, b = NVL_DEFER_NO_BOUND;
    if (!e->shadow_first) {
        a -= SHADOW_HI;
        if (e->shadow[1].now_ps - SHADOW_LO > a)
            b = e->shadow[1].now_ps;
    }
    *a_out = a;
    *b_out = b;
}

/* States the shadows' clock as the next entry of comm's
 * (nvl_comm_defer_entry). */
static void shadow_entry(nvl_engine_t *e, nvl_comm_t *comm)
{
    int64_t a, b;
    shadow_values(e, &a, &b);
    nvl_comm_defer_entry(comm, a, b, e->shadow_exact);
}

/* From a call's end on, x is that end.  A host clock that followed the
 * GPU's (a synchronization since the call before: host = max(x_old +
 * a_h, b_h)) is no function of the new x; it is at most the call's
 * start (the call waited for its launch), the new x less the call's
 * time, which is no shorter than this member's (shadow_bound_host):
 * that bounds it from here on. */
static void shadow_rebase(nvl_engine_t *e)
{
    e->shadow_first = false;
    e->shadow[0].now_ps = SHADOW_HI;
    e->shadow[1].now_ps = SHADOW_LO;
    if (e->shadow_stream[0].host_ps >= SHADOW_REL) {
        e->shadow_stream[0].host_ps = SHADOW_HI;
        e->shadow_stream[1].host_ps = SHADOW_LO;
        e->rec.host_stale = e->rec.host_fresh = true;
    } else { /* a constant, the same on both */
        e->shadow_stream[1].host_ps = e->shadow_stream[0].host_ps;
    }
}

/* The call just recorded lasts own_ps on this member, so at least that
 * long: a host bounded by its end is bounded by its start. */
static void shadow_bound_host(nvl_engine_t *e, int64_t own_ps)
{
    if (!e->rec.host_fresh)
        return;
    e->rec.host_fresh = false;
    for (int i = 0; i < 2 && own_ps > 0 && own_ps < SHADOW_REL / 2; i++)
        e->shadow_stream[i].host_ps -= own_ps;
}

/* The host synchronized with the GPU on both shadows; a bounded host at
 * or below the GPU's clock on both becomes exact again. */
static void shadow_sync(nvl_engine_t *e)
{
    bool exact = true;
    for (int i = 0; i < 2; i++) {
        exact &= e->shadow_stream[i].host_ps <= e->shadow[i].now_ps;
        nvl_stream_sync(&e->shadow_stream[i], &e->shadow[i]);
    }
    if (exact)
        e->rec.host_stale = false;
}

bool nvl_engine_records(const nvl_engine_t *e)
{
    return !e->data && !(e->dense != e->tp && nvl_comm_size(e->dense) > 1) &&
           e->ovl == NULL && nvl_comm_size(e->tp) >= 2 &&
           e->mem.kv_host_share <= 0 && e->mem.weights_host_share <= 0;
}

void nvl_engine_defer(nvl_engine_t *e)
{
    /* the same answer on every rank of the stage (e->tp, the whole job
     * without a pipeline): recording is collective over it */
    if (e->defer || !nvl_engine_records(e))
        return; /* a step recorded whole goes on */
    if (nvl_comm_defer(e->tp) != NVL_OK)
        return;
    nvl_vclock_t *clk = nvl_engine_clock(e);
    e->defer = true;
    e->n_tape = 0;
    e->shadow_stream[0] = e->shadow_stream[1] = e->stream;
    e->shadow[0].now_ps = clk->now_ps;
    e->shadow[1].now_ps = SHADOW_LO;
    e->shadow_first = true;
    e->rec.host_stale = false;
    e->shadow_exact = clk->now_ps < SHADOW_REL &&
                      e->stream.host_ps < SHADOW_REL && !e->time_overflow;
}

void nvl_engine_record_end(nvl_engine_t *e) { shadow_entry(e, e->tp); }

void nvl_engine_step_record(nvl_engine_t *e)
{
    nvl_engine_defer(e);
    e->rec.on = e->defer;
    if (!e->rec.on)
        return;
    nvl_comm_t *links[2] = {e->link_prev, e->link_next};
    for (int i = 0; i < 2; i++)
        if (links[i] != NULL && nvl_comm_defer(links[i]) != NVL_OK)
            nvl_runtime_abort(1); /* reported: a link in data mode */
    e->rec.after_coll = false;
    e->rec.n_ev = 0;
    e->rec.n_pass = 0;
}

static void step_ev_push(nvl_engine_t *e, nvl_step_ev_t ev)
{
    e->rec.ev = nvl_engine_grow(e->rec.ev, &e->rec.cap_ev, e->rec.n_ev,
                                 sizeof *e->rec.ev);
    e->rec.ev[e->rec.n_ev++] = ev;
}

/* A call of comm about to be recorded in a step: its place in the
 * step's order. */
static void step_call(nvl_engine_t *e, nvl_comm_t *comm)
{
    nvl_step_kind_t k = comm == e->tp          ? NVL_STEP_COLL
                        : comm == e->link_prev ? NVL_STEP_RECV
                                               : NVL_STEP_SEND;
    bool own = k != NVL_STEP_COLL || !e->rec.after_coll;
    step_ev_push(e, (nvl_step_ev_t){.kind = k, .own = own,
                                    .pos = nvl_comm_deferred_calls(e->tp),
                                    .call = nvl_comm_deferred_calls(comm)});
    e->rec.after_coll = k == NVL_STEP_COLL;
}

void nvl_engine_pass_open(nvl_engine_t *e, uint64_t tokens)
{
    if (!e->rec.on) {
        nvl_engine_pass_begin(e, tokens);
        nvl_stream_begin_pass(&e->stream, nvl_engine_clock(e));
        return;
    }
    /* the statistics counted while recording, kept for the replay */
    memset(&e->cur, 0, sizeof e->cur);
    e->cur.tokens = tokens;
    e->rec.pass = nvl_engine_grow(e->rec.pass, &e->rec.cap_pass,
                                   e->rec.n_pass, sizeof *e->rec.pass);
    e->rec.pass[e->rec.n_pass] = (nvl_step_pass_t){.pass = e->pass};
    tape_push(e, (nvl_tape_op_t){.kind = NVL_TAPE_PASS_BEGIN,
                                 .call = e->rec.n_pass++});
    for (int i = 0; i < 2; i++)
        nvl_stream_begin_pass(&e->shadow_stream[i], &e->shadow[i]);
}

void nvl_engine_pass_close(nvl_engine_t *e, uint64_t context)
{
    if (!e->rec.on) {
        nvl_stream_sync(&e->stream, nvl_engine_clock(e));
        nvl_engine_pass_end(e, context);
        return;
    }
    shadow_sync(e);
    int64_t a, b;
    shadow_values(e, &a, &b);
    step_ev_push(e, (nvl_step_ev_t){.kind = NVL_STEP_END, .own = true,
                                    .pos = nvl_comm_deferred_calls(e->tp),
                                    .a_ps = a, .b_ps = b});
    size_t k = e->rec.n_pass - 1;
    e->rec.pass[k].cur = e->cur;
    tape_push(e, (nvl_tape_op_t){.kind = NVL_TAPE_PASS_END, .call = k,
                                 .n = context});
    e->pass++; /* the next pass's draws (moe.c) are its own */
}

void nvl_engine_record_wait_tokens(nvl_engine_t *e, int64_t ready_ps)
{
    tape_push(e, (nvl_tape_op_t){.kind = NVL_TAPE_WAIT_TOKENS,
                                 .value_ps = ready_ps});
    if (e->shadow_first) {
        /* before the step's first call shadow 0 is the clock itself:
         * the wait happens or not as it will on replay, on both */
        if (ready_ps <= e->shadow[0].now_ps)
            return;
        for (int i = 0; i < 2; i++) {
            nvl_vclock_wait_until(&e->shadow[i], ready_ps);
            if (e->shadow_stream[i].host_ps < ready_ps)
                e->shadow_stream[i].host_ps = ready_ps;
        }
        return;
    }
    /* max-plus on both shadows: a later pass's start follows its
     * synchronization (host >= GPU), so waiting or not, the host ends at
     * max(host, ready) */
    for (int i = 0; i < 2; i++) {
        if (e->shadow_stream[i].host_ps < e->shadow[i].now_ps)
            e->shadow_exact = false;
        nvl_vclock_wait_until(&e->shadow[i], ready_ps);
    }
    shadow_sync(e);
}

void nvl_engine_record_link(nvl_engine_t *e, nvl_comm_t *link, bool send,
                            uint64_t n)
{
    nvl_defer_view_t d;
    nvl_comm_deferred_get(link, nvl_comm_deferred_calls(link) - 1, &d);
    shadow_bound_host(e, d.time_ps);
    tape_push(e, (nvl_tape_op_t){.kind = NVL_TAPE_LINK_DONE, .comm = link,
                                 .call = nvl_comm_deferred_calls(link) - 1,
                                 .send = send, .n = n});
}

/* Runs one kernel (nothing when it has no work). */
void nvl_engine_kernel(nvl_engine_t *e, const char *name, nvl_part_t part,
                   int32_t layer, nvl_kernel_cost_t c)
{
    if (c.time_ps <= 0 || e->time_overflow)
        return;
    if (e->defer) {
        tape_push(e, (nvl_tape_op_t){.kind = NVL_TAPE_KERNEL, .name = name,
                                     .part = part, .layer = layer,
                                     .cost = c});
        for (int i = 0; i < 2 && e->shadow_exact; i++) {
            nvl_stream_kernel(&e->shadow_stream[i], &e->shadow[i],
                              c.time_ps);
            shadow_forget_waits(e, i);
        }
        shadow_check(e);
        return;
    }
    e->cur.kernels++;
    int64_t before = nvl_engine_clock(e)->now_ps;
    int64_t start = nvl_stream_kernel(&e->stream, nvl_engine_clock(e), c.time_ps);
    if (!clock_in_range(e, name, layer, c.time_ps))
        return;
    if (start > before)
        nvl_engine_account(e, "launch", NVL_PART_LAUNCH, layer, before,
                           start - before, 0, 0);
    nvl_engine_account(e, name, part, layer, start, c.time_ps, c.flops,
                       c.bytes);
}

nvl_cost_cfg_t nvl_engine_layer_gemm_cost(const nvl_engine_t *e,
                                          nvl_quant_class_t c, int32_t layer)
{
    nvl_cost_cfg_t cfg = e->opts.cost;
    cfg.weight_dtype = nvl_engine_opts_layer_dtype(
        &e->opts, c, layer < 0 ? -1 : (int64_t)e->layer0 + layer);
    cfg.weight_only = cfg.weight_only && cfg.weight_dtype != NVL_WDT_BF16;
    if (c == NVL_QCLASS_EXPERTS) { /* vLLM's fused_moe picks its config by
                                      these (nvl_cost_moe_triton) */
        cfg.moe_top_k = e->cfg.top_k;
        cfg.moe_inter = e->shard.moe_intermediate.count;
    }
    return cfg;
}

nvl_cost_cfg_t nvl_engine_gemm_cost(const nvl_engine_t *e,
                                    nvl_quant_class_t c)
{
    return nvl_engine_layer_gemm_cost(e, c, -1);
}

void nvl_engine_matmul(nvl_engine_t *e, const char *name,
                       nvl_quant_class_t c, int32_t layer, uint64_t m,
                       uint64_t n, uint64_t k)
{
    nvl_cost_cfg_t cfg = nvl_engine_layer_gemm_cost(e, c, layer);
    nvl_engine_kernel(e, name, NVL_PART_GEMM, layer,
                      nvl_cost_matmul(&cfg, m, n, k));
}

/* A memory-bound kernel moving `elems` bf16 elements through HBM. */
void nvl_engine_elementwise(nvl_engine_t *e, const char *name, int32_t layer,
                        double elems)
{
    if (elems > 0)
        nvl_engine_kernel(e, name, NVL_PART_OTHER, layer,
               nvl_cost_memory(&e->opts.cost, elems * 2.0));
}

int64_t nvl_engine_coll_begin(nvl_engine_t *e, int32_t layer)
{
    if (e->defer) {
        nvl_comm_t *c = e->rec.comm != NULL ? e->rec.comm : e->tp;
        tape_push(e, (nvl_tape_op_t){.kind = NVL_TAPE_COLL_BEGIN,
                                     .layer = layer});
        for (int i = 0; i < 2 && e->shadow_exact; i++) {
            nvl_stream_collective(&e->shadow_stream[i], &e->shadow[i]);
            shadow_forget_waits(e, i);
        }
        shadow_check(e);
        shadow_entry(e, c);
        if (e->rec.on)
            step_call(e, c);
        shadow_rebase(e); /* from here x is the collective's end */
        return -1;
    }
    int64_t before = nvl_engine_clock(e)->now_ps;
    nvl_stream_collective(&e->stream, nvl_engine_clock(e));
    launch_wait(e, layer, before);
    return nvl_engine_clock(e)->now_ps;
}

void nvl_engine_coll_done(nvl_engine_t *e, const char *name, int32_t layer,
                          int64_t entry_ps, const nvl_coll_info_t *info)
{
    nvl_engine_coll_done_ep(e, name, layer, entry_ps, info,
                            NVL_EP_XCHG_NONE);
}

void nvl_engine_coll_done_ep(nvl_engine_t *e, const char *name,
                             int32_t layer, int64_t entry_ps,
                             const nvl_coll_info_t *info, nvl_ep_xchg_t x)
{
    if (e->defer) {
        tape_push(e, (nvl_tape_op_t){
            .kind = NVL_TAPE_COLL_DONE, .name = name, .layer = layer,
            .call = nvl_comm_deferred_calls(e->tp) - 1, .ep = x,
            .comm = e->tp});
        shadow_bound_host(e, info->time_ps);
        return;
    }
    if (x != NVL_EP_XCHG_NONE)
        nvl_engine_account_ep(e, x, layer, entry_ps, info);
    if (e->time_overflow || !clock_in_range(e, name, layer, info->time_ps))
        return;
    if (info->start_ps > entry_ps)
        nvl_engine_account(e, "wait", NVL_PART_WAIT, layer, entry_ps,
                           info->start_ps - entry_ps, 0, 0);
    nvl_engine_account(e, name, NVL_PART_COLL, layer, info->start_ps,
                       info->time_ps, 0, (double)info->bytes);
    nvl_op_event_t *ev = nvl_engine_last_event(e);
    if (ev != NULL && ev->part == NVL_PART_COLL) {
        bool own = info->impl != NVL_AR_NCCL; /* a serving engine's kernel */
        ev->algo = own ? nvl_ar_impl_name((nvl_ar_impl_t)info->impl)
                       : nvl_algo_name(info->algo);
        ev->proto = own ? "" : nvl_proto_name(info->proto);
    }
}

nvl_status_t nvl_engine_allreduce_info(nvl_engine_t *e, int32_t layer,
                                       float *buf, size_t n,
                                       nvl_coll_info_t *info_out)
{
    *info_out = (nvl_coll_info_t){.impl = NVL_AR_NCCL};
    if (nvl_comm_size(e->dense) == 1)
        return NVL_OK;
    int64_t entry = nvl_engine_coll_begin(e, layer);
    void *b = e->data ? buf : NULL;
    nvl_status_t st = nvl_allreduce(e->dense, b, b, n, NVL_DT_F32,
                                    NVL_OP_SUM, info_out);
    if (st == NVL_OK)
        nvl_engine_coll_done(e, "allreduce", layer, entry, info_out);
    return st;
}

nvl_status_t nvl_engine_allreduce(nvl_engine_t *e, int32_t layer, float *buf,
                                  size_t n)
{
    nvl_coll_info_t info;
    return nvl_engine_allreduce_info(e, layer, buf, n, &info);
}

/* A kernel run as the epilogue of the collective before it: no launch of
 * its own. */
static void epilogue(nvl_engine_t *e, const char *name, int32_t layer,
                     nvl_kernel_cost_t c)
{
    int64_t start = nvl_engine_clock(e)->now_ps;
    nvl_vclock_advance(nvl_engine_clock(e), c.time_ps);
    if (clock_in_range(e, name, layer, c.time_ps))
        nvl_engine_account(e, name, NVL_PART_OTHER, layer, start, c.time_ps,
                           0, c.bytes);
}

void nvl_engine_epilogue(nvl_engine_t *e, const char *name, int32_t layer,
                         nvl_kernel_cost_t c)
{
    if (e->time_overflow)
        return;
    if (e->defer) {
        tape_push(e, (nvl_tape_op_t){.kind = NVL_TAPE_EPILOGUE, .name = name,
                                     .part = NVL_PART_OTHER, .layer = layer,
                                     .cost = c});
        for (int i = 0; i < 2; i++)
            nvl_vclock_advance(&e->shadow[i], c.time_ps);
        shadow_check(e);
    } else {
        epilogue(e, name, layer, c);
    }
}

/* One transfer on a C2C queue that is free at *free_ps: it starts at the
 * later of now and that, lasts nvl_cost_copy's time; returns its end. */
static int64_t c2c_queue(nvl_engine_t *e, const char *name,
                         nvl_copy_path_t path, int32_t layer, double bytes,
                         int64_t *free_ps)
{
    nvl_kernel_cost_t c = nvl_cost_copy(&e->opts.cost, path, 0, bytes);
    if (e->defer) { /* nvl_engine_defer records no pass with copies */
        nvl_report("internal error: a C2C copy while recording");
        nvl_runtime_abort(1);
    }
    int64_t now = nvl_engine_clock(e)->now_ps;
    int64_t start = *free_ps > now ? *free_ps : now;
    if (c.time_ps <= 0 || e->time_overflow)
        return start;
    if (c.time_ps >= NVL_PS_MAX_DURATION ||
        start > NVL_PS_MAX_CLOCK - c.time_ps) {
        clock_in_range(e, name, layer, NVL_PS_MAX_DURATION);
        return start;
    }
    *free_ps = start + c.time_ps;
    nvl_engine_account_c2c(e, name, path, layer, start, c.time_ps, bytes);
    return *free_ps;
}

/* The GPU idles until t_ps (a C2C transfer it needs), accounted as c2c. */
static void c2c_idle_until(nvl_engine_t *e, const char *name, int32_t layer,
                           int64_t t_ps)
{
    nvl_vclock_t *clk = nvl_engine_clock(e);
    int64_t before = clk->now_ps;
    if (e->time_overflow || t_ps <= before)
        return;
    if (e->defer) { /* nvl_engine_defer records no pass with copies */
        nvl_report("internal error: a C2C wait while recording");
        nvl_runtime_abort(1);
    }
    nvl_vclock_wait_until(clk, t_ps);
    nvl_stream_sync(&e->stream, clk); /* the host cannot run ahead of it */
    nvl_engine_account(e, name, NVL_PART_C2C, layer, before, t_ps - before,
                       0, 0);
}

void nvl_engine_c2c_prefetch(nvl_engine_t *e, int32_t layer, double bytes)
{
    if (bytes > 0)
        e->c2c_ready_ps = c2c_queue(e, "c2c_prefetch", NVL_COPY_C2C_H2D,
                                    layer, bytes, &e->c2c_h2d_free_ps);
}

void nvl_engine_c2c_wait(nvl_engine_t *e, int32_t layer)
{
    c2c_idle_until(e, "c2c_wait", layer, e->c2c_ready_ps);
}

void nvl_engine_c2c_writeback(nvl_engine_t *e, int32_t layer, double bytes)
{
    if (bytes > 0)
        c2c_queue(e, "c2c_writeback", NVL_COPY_C2C_D2H, layer, bytes,
                  &e->c2c_d2h_free_ps);
}

void nvl_engine_c2c_drain(nvl_engine_t *e)
{
    c2c_idle_until(e, "c2c_drain", -1, e->c2c_d2h_free_ps);
}

void nvl_engine_c2c_sync_copy(nvl_engine_t *e, const char *name,
                              nvl_copy_path_t path, double bytes)
{
    char why[128];
    if (!nvl_copy_path_usable(&e->opts.cost, path, 0, why, sizeof why))
        return; /* no NVLink-C2C: the host link is not modeled */
    nvl_kernel_cost_t c = nvl_cost_copy(&e->opts.cost, path, 0, bytes);
    nvl_engine_kernel(e, name, NVL_PART_C2C, -1, c);
    if (path == NVL_COPY_C2C_H2D)
        e->cur.c2c_h2d_bytes += c.bytes;
    else
        e->cur.c2c_d2h_bytes += c.bytes;
}
