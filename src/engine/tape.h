/* The engine's deferred agreement (timing mode), private to the engine:
 * the tape of a pass's recorded work (issue.c records it, replay.c
 * issues it once the group has agreed), and a pipeline's step recorded
 * whole, every pass and link transfer of it, agreed in one exchange over
 * the job (pipe_agree.c).  Included by engine_impl.h. */
#ifndef NVL_ENGINE_TAPE_H
#define NVL_ENGINE_TAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "nvlemu/coll.h"
#include "nvlemu/cost.h"
#include "nvlemu/engine.h"

/* A collective that is an expert-parallel layer's exchange, whose agreed
 * time the pass's and the layer's MoE numbers count (moe_ep.c). */
typedef enum {
    NVL_EP_XCHG_NONE,
    NVL_EP_XCHG_DISPATCH,
    NVL_EP_XCHG_COMBINE
} nvl_ep_xchg_t;

/* One operation recorded under deferred agreement (issue.c). */
typedef enum {
    NVL_TAPE_KERNEL,     /* nvl_engine_kernel */
    NVL_TAPE_COLL_BEGIN, /* nvl_engine_coll_begin */
    NVL_TAPE_COLL_DONE,  /* nvl_engine_coll_done of recorded call `call` */
    NVL_TAPE_EPILOGUE,   /* an allreduce's fused add + RMSNorm */
    NVL_TAPE_PASS_BEGIN, /* a recorded step's pass `call` opens ... */
    NVL_TAPE_PASS_END,   /* ... and closes (context n) */
    NVL_TAPE_WAIT_TOKENS, /* stage 0 waits for its tokens (until value) */
    NVL_TAPE_LINK_DONE   /* a link transfer (send; n elements) done */
} nvl_tape_kind_t;

typedef struct nvl_tape_op {
    nvl_tape_kind_t kind;
    const char *name;
    nvl_part_t part;
    int32_t layer;
    nvl_kernel_cost_t cost;
    size_t call;
    nvl_ep_xchg_t ep;    /* COLL_DONE: an expert-parallel exchange's */
    nvl_comm_t *comm;    /* COLL_DONE, LINK_DONE: the call's (NULL: tp) */
    int64_t value_ps;
    uint64_t n;
    bool send;
} nvl_tape_op_t;

/* One entry of a recorded pipeline step's order (issue.c): a call of
 * e->tp (a stage collective), of link_prev (a receive) or link_next (a
 * send), the call's index on its communicator, the stage collectives
 * recorded before it, and whether its entry is the rank's own (the call
 * before it was not a stage collective, whose end the stage shares); or
 * the end of a pass, its clock max(x + a, b). */
typedef enum {
    NVL_STEP_COLL = 1,
    NVL_STEP_RECV,
    NVL_STEP_SEND,
    NVL_STEP_END
} nvl_step_kind_t;

typedef struct nvl_step_ev {
    nvl_step_kind_t kind;
    bool own;
    size_t pos, call;
    int64_t a_ps, b_ps; /* NVL_STEP_END */
} nvl_step_ev_t;

/* A pass of a recorded step: its number, the statistics counted while
 * recording (the replay adds the issued work's), and its end on replay. */
typedef struct nvl_step_pass {
    int32_t pass;
    nvl_pass_stats_t cur;
    int64_t end_ps;
} nvl_step_pass_t;

/* The engine's state for a step recorded whole: whether one is, the
 * communicator of the next recorded call (NULL: e->tp; the shadows' x is
 * the end of the rank's last call on any of them), whether that call was
 * a stage collective, whether the shadows' host clock is an upper bound
 * (exact while nothing waits on it; fresh: the last call's end, not yet
 * lowered by its duration), the step's order and passes, the
 * exchange's room per stage and per rank (the last step's counts), and
 * whether serving steps are recorded so (0: not agreed yet, 1 no, 2 yes;
 * step.c). */
typedef struct {
    bool on;
    nvl_comm_t *comm;
    bool after_coll, host_stale, host_fresh;
    nvl_step_ev_t *ev;          /* owned */
    size_t n_ev, cap_ev;
    nvl_step_pass_t *pass;      /* owned */
    size_t n_pass, cap_pass;
    size_t cap[NVL_ENGINE_PP_MAX], cap_own;
    int serve;
} nvl_step_rec_t;

/* issue.c, deferred agreement: nvl_engine_defer starts recording the
 * pass's kernels and collectives when nvl_engine_records (timing mode,
 * one group, no communication stream, nothing in host memory; else
 * settled_end_ps is left alone); collective over the group,
 * nvl_engine_settle agrees on the recorded collectives and on the latest
 * clock the group's work ends at (settled_end_ps, -1 when the batch is
 * agreed call by call), and issues everything recorded, as if issued one
 * by one (a no-op when not recording). */
void nvl_engine_defer(nvl_engine_t *e);
nvl_status_t nvl_engine_settle(nvl_engine_t *e);
bool nvl_engine_records(const nvl_engine_t *e);
/* issue.c: a pass opened (its statistics begun, the graph launched) and
 * closed (the host synchronized, the statistics kept), or recorded so
 * while a step is (rec.on). */
void nvl_engine_pass_open(nvl_engine_t *e, uint64_t tokens);
void nvl_engine_pass_close(nvl_engine_t *e, uint64_t context);
/* issue.c, a pipeline's step recorded whole (pipe_agree.c): _step_record
 * starts recording on e->tp and the links (a no-op where
 * nvl_engine_records is false); _wait_tokens and _link record stage 0's
 * wait for its tokens and a link transfer's end. */
void nvl_engine_step_record(nvl_engine_t *e);
/* issue.c: where the recorded work ends, stated as e->tp's last entry
 * (nvl_comm_settle's end). */
void nvl_engine_record_end(nvl_engine_t *e);
void nvl_engine_record_wait_tokens(nvl_engine_t *e, int64_t ready_ps);
void nvl_engine_record_link(nvl_engine_t *e, nvl_comm_t *link, bool send,
                            uint64_t n);
/* replay.c: issues the tape once every recorded call is resolved or left
 * to be agreed call by call (nvl_comm_defer_close; collective then), as
 * if issued one by one; returns the first failure. */
nvl_status_t nvl_engine_replay(nvl_engine_t *e);
/* replay.c: stage 0 idles until ready_ps, when its tokens are back (the
 * bubble), and the accounting of a link transfer of n elements per
 * tensor (entered at entry_ps, agreed as info; its wait the bubble);
 * live (pipe.c) and on replay alike. */
void nvl_engine_wait_tokens_at(nvl_engine_t *e, int64_t ready_ps);
void nvl_engine_link_done(nvl_engine_t *e, bool send, uint64_t n,
                          int64_t entry_ps, const nvl_coll_info_t *info);
/* pipe_agree.c: whether this rank can record a pipeline's step whole
 * (timing mode, its stage recording: nvl_engine_records); the job's
 * ranks agree on it (a step is recorded whole on all or on none). */
bool nvl_engine_pipe_can_record_step(const nvl_engine_t *e);
/* pipe_agree.c: collective over e->job, inside a capture begun before
 * the step (ends it): the recorded step's calls and pass ends agreed in
 * one exchange (a second when it outgrew the room the last step's
 * counted), its tape issued; st this rank's status.  A failure on any
 * rank fails every one, reported once (a wrong or differing call as the
 * per-call agreement reports it, the first in stage order).  ends_ps
 * [stages x passes] gets each stage's latest end of each pass. */
nvl_status_t nvl_engine_pipe_settle_step(nvl_engine_t *e, nvl_status_t st,
                                         int64_t *ends_ps, int passes);

#endif
