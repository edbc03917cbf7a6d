/* Private to src/serve: one replica's scheduler state, shared by the
 * step's building (sched.c: queues, prefix cache, preemption, the three
 * passes of a step) and the loop around it (run.c: arrivals, the step,
 * sampling, the invariants).  run.c calls sched.c, never the reverse. */
#ifndef NVLEMU_SERVE_SCHED_IMPL_H
#define NVLEMU_SERVE_SCHED_IMPL_H

#include "nvlemu/serve.h"

enum { R_FUTURE, R_WAITING, R_RUNNING, R_SWAPPED, R_DONE };
enum { P_NONE, P_COMPUTING, P_HBM, P_HOST };

typedef struct {
    int state;
    uint64_t computed;   /* positions whose KV exists (cached ones too) */
    uint32_t generated;  /* outputs made */
    uint64_t priv;       /* KV blocks of its own (in HBM) */
    uint64_t swapped;    /* blocks in host memory (swapped out) */
    uint32_t shared;     /* blocks taken from its prefix entry */
    int32_t ref;         /* the prefix entry it holds (-1: none) */
    bool owner;          /* computing that entry */
    uint64_t admitted;   /* admission order (running list's order) */
    uint64_t flight;     /* tokens in steps in flight (computed when
                            their step ends) */
} rstate_t;

typedef struct {
    int state;
    uint32_t owner;      /* k of the request computing it */
    uint64_t blocks, refs, last_use;
} pentry_t;

typedef struct {
    const nvl_serve_workload_t *w;
    const uint32_t *which;
    size_t n;
    const nvl_serve_policy_t *p;
    const nvl_serve_capacity_t *cap;
    rstate_t *rs;
    pentry_t *pe;
    size_t n_pe;
    uint32_t *running;   /* k, admission order */
    size_t n_running;
    uint32_t *waitq;     /* ring buffer of k */
    size_t wq_head, wq_len;
    uint32_t *swapq;
    size_t sq_head, sq_len;
    uint64_t used;       /* blocks in HBM: every priv + HBM entries */
    double host_used;    /* bytes in host memory: swapped + HOST entries */
    uint64_t step_no;
    nvl_serve_outcome_t *out;
    nvl_serve_replica_stats_t st;
    /* the step being built */
    uint64_t *past, *newt;
    uint32_t *sreq, *sk;
    int nb;
    uint32_t budget;
    double h2d, d2h;
    bool broke;          /* a scheduler that never preempts had to */
    const nvl_serve_scheduler_t *row; /* p->sched's */
} sched_t;

static inline const nvl_serve_req_t *req(const sched_t *s, uint32_t k)
{
    return &s->w->reqs[s->which[k]];
}

static inline uint64_t blocks_for(const sched_t *s, uint64_t positions)
{
    uint64_t b = s->p->block_tokens;
    return (positions + b - 1) / b;
}

static inline uint64_t known(const sched_t *s, uint32_t k)
{
    return (uint64_t)req(s, k)->input_tokens + s->rs[k].generated;
}

/* Blocks request k still needs to finish: its prompt and every output,
 * less those it holds (TensorRT-LLM's remaining blocks to completion). */
static inline uint64_t to_completion(const sched_t *s, uint32_t k)
{
    const rstate_t *r = &s->rs[k];
    uint64_t all = blocks_for(s, (uint64_t)req(s, k)->input_tokens +
                                     req(s, k)->output_tokens);
    uint64_t have = r->priv + r->shared;
    return all > have ? all - have : 0;
}

static inline double block_bytes(const sched_t *s, uint64_t blocks)
{
    return (double)blocks * s->cap->kv_block_bytes;
}

/* sched.c: a step's three passes (sched.c's header comment); each fills
 * the step being built (past, newt, sreq, sk, nb, budget, h2d, d2h). */
bool nvl_sched_running(sched_t *s); /* whether one was preempted */
void nvl_sched_swapped(sched_t *s);
void nvl_sched_waiting(sched_t *s);
void nvl_sched_wq_push_back(sched_t *s, uint32_t k);

#endif
