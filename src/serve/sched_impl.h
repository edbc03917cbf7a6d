/* Private to src/serve: one replica's scheduler state, shared by the
 * step's building (sched.c: queues, prefix cache, preemption, the three
 * passes of a step) and the loop around it (run.c: arrivals, the step,
 * sampling, the invariants), and attention-DP's ranks (adp.c: one loop per
 * rank, stepped together).  run.c calls sched.c, adp.c both; never the
 * reverse. */
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
    uint64_t kept;       /* preempted by recompute: its full blocks still
                            cached in HBM (counted in used) until evicted */
    uint64_t kept_at;    /* the step it was preempted in (LRU order) */
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
    uint64_t used;       /* blocks in HBM: every priv + kept + HBM entries */
    uint64_t kept;       /* sum of every request's kept */
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

/* ---- run.c: the loop around a scheduler (adp.c runs one per rank) ------ */

/* The scheduler and the loop's own state: arrivals, progress, records. */
typedef struct {
    sched_t s;
    int64_t *arrive;     /* by k: open loop in which's order; closed loop
                            the first conc, the others when a slot frees
                            (-1 until then) */
    uint32_t conc;
    bool prefilled;
    size_t next, done;
    int64_t now;
    nvl_serve_step_rec_t *recs;
    size_t n_recs, cap_recs;
    /* the steps in flight, oldest first (a ring of `depth`): when each
     * one's tokens are sampled, its sequences and their tokens */
    struct flight {
        int64_t ready_ps;
        int nb;
        uint32_t *sk;
        uint64_t *newt;
    } *fl;
    size_t depth, fl_head, fl_len, fl_cap;
    int64_t last_ps; /* the latest end of a step sampled */
    int64_t stream_ps; /* the output path busy until (policy's
                          stream_token_ps) */
} loop_t;

/* Reports an internal error (a broken invariant); returns its status. */
nvl_status_t nvl_sched_broken(const char *what);
/* Allocates L's arrays for n_which requests (L->s.n_pe set); reports. */
nvl_status_t nvl_loop_alloc(loop_t *L, size_t n_which);
void nvl_sched_free(sched_t *s);
/* The prefix entries which[0..n_which)'s requests name (ids 0..n-1). */
size_t nvl_sched_prefixes(const nvl_serve_workload_t *w,
                          const uint32_t *which, size_t n_which);
/* Each request's arrival, state and outcome before the first step. */
void nvl_loop_init(loop_t *L, uint32_t replica, int64_t start_ps);
/* Builds the next step (sched.c's three passes) into L->s. */
void nvl_loop_build(loop_t *L);
/* The built step's tokens and prefill tokens; marks first schedules and
 * checks the invariants (an internal error when broken). */
nvl_status_t nvl_loop_check(loop_t *L, uint64_t *tokens_out,
                            uint64_t *pre_out);
/* Appends a step record starting at L->now. */
nvl_status_t nvl_loop_record(loop_t *L, int64_t dur, uint64_t tokens,
                             uint64_t pre, uint32_t seqs, uint64_t blocks);
/* Counts the built step in L->s.st (its first stage busy for busy_ps). */
void nvl_loop_account(loop_t *L, int64_t busy_ps, uint64_t tokens,
                      uint64_t pre);
/* The built step joins the steps in flight (its sequences and tokens kept
 * until it ends dur_ps after L->now); L->now moves on by free_ps, when the
 * first stage can take the next. */
void nvl_loop_flight(loop_t *L, int64_t dur_ps, int64_t free_ps);
/* The oldest step in flight ends: its sequences sample their next tokens;
 * finished requests leave (L->done counts). */
void nvl_loop_sample(loop_t *L);

#endif
