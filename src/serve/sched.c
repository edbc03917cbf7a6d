/* The continuous-batching scheduler of one replica, as vLLM V1's
 * Scheduler.schedule() runs it (vllm/v1/core/sched/scheduler.py; docs/
 * serve.md "The scheduler"):
 *
 *   every step, with a budget of max_tokens_per_step tokens and max_batch
 *   sequences:
 *     1. running requests, in admission order: a decode takes 1 token, an
 *        unfinished prefill min(its rest, chunk, budget left); if its new
 *        KV block is not free: evict unused prefix-cache entries (least
 *        recently used first), else preempt the running request admitted
 *        last (possibly itself)
 *     2. unless step 1 preempted: swapped-out requests, oldest first,
 *        copied back over NVLink-C2C when their blocks are free
 *     3. unless step 1 preempted or a swapped request waits: waiting
 *        requests first come, first served (a preempted one at the front),
 *        each taking a chunk when its blocks are free
 *   the step runs (its time from the caller), then each sequence whose
 *   known tokens are all computed samples its next token.
 *
 * A request's known tokens are its prompt and the outputs made so far
 * (L = input + generated); a step computes some of them and samples the
 * next output when all are computed.  So a decode computes 1 token, and a
 * request preempted by recompute prefills its prompt and outputs again,
 * as vLLM's recompute does.  KV takes ceil(positions / block) blocks;
 * with prefix caching, a request whose prefix id is cached takes the
 * prefix's full blocks from the cache (vLLM caches full blocks only, and
 * always computes at least one prompt token).
 *
 * TensorRT-LLM (policy sched NVL_SCHED_TRTLLM; batch_manager/
 * capacityScheduler.cpp GuaranteedNoEvictScheduler, microBatchScheduler
 * .cpp): the same loop, but step 3 admits a waiting request only when
 *     free blocks - sum over running r of blocks r needs to finish
 * holds blocks_for(input + output) of its own, and stops at the first
 * that does not fit; so step 1 never lacks a block and nothing is
 * preempted (a broken invariant if it were).  With whole_prompts (no
 * chunked context) a prompt whose rest exceeds the budget left stops
 * admission too. */
#include <stdlib.h>
#include <string.h>

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
    bool broke;          /* a no-evict scheduler had to preempt */
} sched_t;

static const nvl_serve_req_t *req(const sched_t *s, uint32_t k)
{
    return &s->w->reqs[s->which[k]];
}

static uint64_t blocks_for(const sched_t *s, uint64_t positions)
{
    uint64_t b = s->p->block_tokens;
    return (positions + b - 1) / b;
}

static uint64_t known(const sched_t *s, uint32_t k)
{
    return (uint64_t)req(s, k)->input_tokens + s->rs[k].generated;
}

/* Blocks request k still needs to finish: its prompt and every output,
 * less those it holds (TensorRT-LLM's remaining blocks to completion). */
static uint64_t to_completion(const sched_t *s, uint32_t k)
{
    const rstate_t *r = &s->rs[k];
    uint64_t all = blocks_for(s, (uint64_t)req(s, k)->input_tokens +
                                     req(s, k)->output_tokens);
    uint64_t have = r->priv + r->shared;
    return all > have ? all - have : 0;
}

static double block_bytes(const sched_t *s, uint64_t blocks)
{
    return (double)blocks * s->cap->kv_block_bytes;
}

/* ---- queues ------------------------------------------------------------------- */

static void wq_push_back(sched_t *s, uint32_t k)
{
    s->waitq[(s->wq_head + s->wq_len++) % s->n] = k;
}

static void wq_push_front(sched_t *s, uint32_t k)
{
    s->wq_head = (s->wq_head + s->n - 1) % s->n;
    s->waitq[s->wq_head] = k;
    s->wq_len++;
}

static uint32_t wq_pop(sched_t *s)
{
    uint32_t k = s->waitq[s->wq_head];
    s->wq_head = (s->wq_head + 1) % s->n;
    s->wq_len--;
    return k;
}

static void sq_push(sched_t *s, uint32_t k)
{
    s->swapq[(s->sq_head + s->sq_len++) % s->n] = k;
}

/* ---- the prefix cache ---------------------------------------------------------- */

/* Frees an unused HBM entry (the least recently used, not `keep`):
 * to host memory over NVLink-C2C when it has room, else dropped. */
static bool evict_prefix(sched_t *s, int32_t keep)
{
    int32_t best = -1;
    for (size_t i = 0; i < s->n_pe; i++) {
        pentry_t *e = &s->pe[i];
        if (e->state == P_HBM && e->refs == 0 && (int32_t)i != keep &&
            (best < 0 || e->last_use < s->pe[best].last_use))
            best = (int32_t)i;
    }
    if (best < 0)
        return false;
    pentry_t *e = &s->pe[best];
    s->used -= e->blocks;
    double bytes = block_bytes(s, e->blocks);
    if (s->host_used + bytes <= s->cap->host_bytes) {
        e->state = P_HOST;
        s->host_used += bytes;
        s->d2h += bytes;
    } else
        e->state = P_NONE;
    return true;
}

/* ---- preemption ------------------------------------------------------------------ */

static void drop_ref(sched_t *s, uint32_t k)
{
    rstate_t *r = &s->rs[k];
    if (r->ref >= 0) {
        pentry_t *e = &s->pe[r->ref];
        if (r->owner)
            e->state = P_NONE; /* never finished: nothing cached */
        else if (e->refs > 0)
            e->refs--;
    }
    r->ref = -1;
    r->owner = false;
    r->shared = 0;
}

/* Preempts the running request admitted last (running[n_running - 1]). */
static void preempt_last(sched_t *s)
{
    uint32_t k = s->running[--s->n_running];
    rstate_t *r = &s->rs[k];
    double bytes = block_bytes(s, r->priv);
    s->out[s->which[k]].preemptions++;
    s->st.preemptions++;
    s->used -= r->priv;
    if (s->p->preempt == NVL_PREEMPT_SWAP &&
        s->host_used + bytes <= s->cap->host_bytes) {
        /* its KV to host memory; it keeps its place in the prefix cache */
        r->swapped = r->priv;
        r->priv = 0;
        s->host_used += bytes;
        s->d2h += bytes;
        r->state = R_SWAPPED;
        sq_push(s, k);
        return;
    }
    /* recompute: its KV dropped, prompt and outputs prefilled again */
    drop_ref(s, k);
    r->priv = 0;
    r->computed = 0;
    r->state = R_WAITING;
    wq_push_front(s, k);
}

/* ---- building a step --------------------------------------------------------------- */

/* Tokens request k runs in this step if scheduled now. */
static uint32_t step_tokens(const sched_t *s, uint32_t k)
{
    uint64_t rest = known(s, k) - s->rs[k].computed;
    uint64_t t = rest;
    if (t > s->p->chunk)
        t = s->p->chunk;
    if (t > s->budget)
        t = s->budget;
    return (uint32_t)t;
}

/* KV blocks request k must add to run t more tokens. */
static uint64_t blocks_needed(const sched_t *s, uint32_t k, uint32_t t)
{
    const rstate_t *r = &s->rs[k];
    uint64_t total = blocks_for(s, r->computed + t);
    uint64_t have = r->priv + r->shared;
    return total > have ? total - have : 0;
}

static void add_to_step(sched_t *s, uint32_t k, uint32_t t, uint64_t more)
{
    rstate_t *r = &s->rs[k];
    r->priv += more;
    s->used += more;
    s->past[s->nb] = r->computed;
    s->newt[s->nb] = t;
    s->sreq[s->nb] = s->which[k];
    s->sk[s->nb] = k;
    s->nb++;
    s->budget -= t;
}

/* Step 1: the running requests; returns whether one was preempted. */
static bool schedule_running(sched_t *s)
{
    bool preempted = false;
    for (size_t i = 0; i < s->n_running; i++) {
        if (s->budget == 0 || (uint32_t)s->nb >= s->p->max_batch)
            break;
        uint32_t k = s->running[i];
        uint32_t t = step_tokens(s, k);
        uint64_t more = blocks_needed(s, k, t);
        while (more > s->cap->kv_blocks - s->used) {
            if (s->p->prefix_caching && evict_prefix(s, -1))
                continue;
            if (s->p->sched == NVL_SCHED_TRTLLM)
                s->broke = true;
            preempt_last(s);
            preempted = true;
            if (i >= s->n_running)
                break; /* it preempted itself */
        }
        if (i >= s->n_running)
            break;
        add_to_step(s, k, t, more);
    }
    return preempted;
}

/* Step 2: swapped requests back, oldest first, while their blocks fit. */
static void schedule_swapped(sched_t *s)
{
    while (s->sq_len > 0 && s->budget > 0 &&
           (uint32_t)s->nb < s->p->max_batch) {
        uint32_t k = s->swapq[s->sq_head];
        rstate_t *r = &s->rs[k];
        uint32_t t = step_tokens(s, k);
        uint64_t back = r->swapped;
        uint64_t total = blocks_for(s, r->computed + t);
        uint64_t need = total > r->shared ? total - r->shared : 0;
        if (need > s->cap->kv_blocks - s->used)
            break;
        s->sq_head = (s->sq_head + 1) % s->n;
        s->sq_len--;
        double bytes = block_bytes(s, back);
        s->host_used -= bytes;
        s->h2d += bytes;
        r->swapped = 0;
        r->state = R_RUNNING;
        s->running[s->n_running++] = k;
        add_to_step(s, k, t, need);
    }
}

/* Request k's prefix: a hit sets its computed and shared blocks (and a
 * reload from host memory the blocks to bring back); a miss makes it the
 * entry's owner when nobody computes the entry.  Returns the blocks the
 * entry needs in HBM before k can use it (a host hit), else 0. */
static uint64_t prefix_lookup(sched_t *s, uint32_t k, bool *reload_out)
{
    const nvl_serve_req_t *q = req(s, k);
    rstate_t *r = &s->rs[k];
    *reload_out = false;
    if (!s->p->prefix_caching || q->prefix < 0 || r->computed > 0)
        return 0;
    pentry_t *e = &s->pe[q->prefix];
    uint64_t bt = s->p->block_tokens;
    /* full blocks only, and at least one prompt token computed */
    uint64_t usable = (q->input_tokens - 1) / bt;
    if (e->state == P_HBM || e->state == P_HOST) {
        uint64_t b = e->blocks < usable ? e->blocks : usable;
        if (b == 0)
            return 0;
        *reload_out = e->state == P_HOST;
        return *reload_out ? e->blocks : 0;
    }
    return 0;
}

/* Takes the prefix for k (after prefix_lookup and its room). */
static void prefix_take(sched_t *s, uint32_t k, bool reload)
{
    const nvl_serve_req_t *q = req(s, k);
    rstate_t *r = &s->rs[k];
    if (!s->p->prefix_caching || q->prefix < 0 || r->computed > 0)
        return;
    pentry_t *e = &s->pe[q->prefix];
    uint64_t bt = s->p->block_tokens;
    uint64_t usable = (q->input_tokens - 1) / bt;
    if (reload) {
        double bytes = block_bytes(s, e->blocks);
        s->host_used -= bytes;
        s->h2d += bytes;
        s->used += e->blocks;
        e->state = P_HBM;
    }
    if (e->state == P_HBM) {
        uint64_t b = e->blocks < usable ? e->blocks : usable;
        if (b > 0) {
            e->refs++;
            e->last_use = s->step_no;
            r->ref = q->prefix;
            r->shared = (uint32_t)b;
            r->computed = b * bt;
            s->out[s->which[k]].cached_tokens = (uint32_t)(b * bt);
            s->st.prefix_hits++;
            s->st.prefix_hit_tokens += b * bt;
        }
    } else if (e->state == P_NONE && q->prefix_tokens / bt > 0) {
        e->state = P_COMPUTING;
        e->owner = k;
        e->blocks = q->prefix_tokens / bt;
        e->refs = 0;
        r->ref = q->prefix;
        r->owner = true;
    }
}

/* Step 3: waiting requests, first come first served. */
static void schedule_waiting(sched_t *s)
{
    bool no_evict = s->p->sched == NVL_SCHED_TRTLLM;
    /* no-evict: blocks free after every running request's rest */
    uint64_t reserved = 0;
    if (no_evict)
        for (size_t i = 0; i < s->n_running; i++)
            reserved += to_completion(s, s->running[i]);
    while (s->wq_len > 0 && s->budget > 0 &&
           (uint32_t)s->nb < s->p->max_batch) {
        uint32_t k = s->waitq[s->wq_head];
        rstate_t *r = &s->rs[k];
        bool reload;
        uint64_t reload_blocks = prefix_lookup(s, k, &reload);
        int32_t pid = req(s, k)->prefix;
        /* blocks with the prefix taken (a hit shares its blocks) */
        uint64_t shared = 0;
        if (s->p->prefix_caching && pid >= 0 && r->computed == 0 &&
            (s->pe[pid].state == P_HBM || reload)) {
            uint64_t usable = (req(s, k)->input_tokens - 1) /
                              s->p->block_tokens;
            shared = s->pe[pid].blocks < usable ? s->pe[pid].blocks
                                                : usable;
        }
        uint64_t start = shared * s->p->block_tokens > r->computed
                             ? shared * s->p->block_tokens
                             : r->computed;
        uint64_t rest = known(s, k) - start, t = rest;
        if (s->p->whole_prompts && rest > s->budget)
            break;
        if (t > s->p->chunk)
            t = s->p->chunk;
        if (t > s->budget)
            t = s->budget;
        /* no-evict: its prompt and all its outputs; else its first chunk */
        uint64_t upto = no_evict ? (uint64_t)req(s, k)->input_tokens +
                                       req(s, k)->output_tokens
                                 : start + t;
        uint64_t need = blocks_for(s, upto) - shared + reload_blocks;
        while (need + reserved > s->cap->kv_blocks - s->used &&
               s->p->prefix_caching && evict_prefix(s, pid))
            ;
        if (need + reserved > s->cap->kv_blocks - s->used)
            break;
        wq_pop(s);
        prefix_take(s, k, reload);
        r->state = R_RUNNING;
        r->admitted = s->step_no;
        s->running[s->n_running++] = k;
        add_to_step(s, k, step_tokens(s, k),
                    blocks_needed(s, k, step_tokens(s, k)));
        if (no_evict)
            reserved += to_completion(s, k);
    }
}

/* ---- after a step ------------------------------------------------------------------ */

static void finish(sched_t *s, uint32_t k, int64_t now)
{
    rstate_t *r = &s->rs[k];
    s->used -= r->priv;
    r->priv = 0;
    if (r->ref >= 0 && !r->owner && s->pe[r->ref].refs > 0)
        s->pe[r->ref].refs--;
    if (r->owner)
        s->pe[r->ref].state = P_NONE;
    r->ref = -1;
    r->owner = false;
    r->state = R_DONE;
    s->out[s->which[k]].done_ps = now;
    s->out[s->which[k]].done = true;
}

/* The owner's prefix is computed: its first blocks become the entry's. */
static void prefix_ready(sched_t *s, uint32_t k)
{
    rstate_t *r = &s->rs[k];
    pentry_t *e = &s->pe[r->ref];
    if (!r->owner || r->computed < e->blocks * s->p->block_tokens)
        return;
    r->priv -= e->blocks;
    r->shared = (uint32_t)e->blocks;
    e->state = P_HBM;
    e->refs = 1;
    e->last_use = s->step_no;
    r->owner = false;
}

static nvl_status_t broken(const char *what)
{
    nvl_report("internal error: the serve scheduler broke its invariant: "
               "%s", what);
    return NVL_ERR_RANGE;
}

nvl_status_t nvl_serve_check(const nvl_serve_workload_t *w,
                             const nvl_serve_policy_t *p,
                             const nvl_serve_capacity_t *cap)
{
    if (p->max_batch < 1 || p->max_tokens_per_step < 1 || p->chunk < 1 ||
        p->block_tokens < 1) {
        nvl_report("serve: --max-batch, --max-tokens-per-step, --chunk and "
                   "--block must be at least 1");
        return NVL_ERR_INVALID;
    }
    if (cap->kv_blocks < 1) {
        nvl_report("serve: no HBM is left for the KV cache (not one block "
                   "of %u positions)", p->block_tokens);
        return NVL_ERR_NOMEM;
    }
    for (size_t i = 0; i < w->n; i++) {
        const nvl_serve_req_t *r = &w->reqs[i];
        uint64_t pos = (uint64_t)r->input_tokens + r->output_tokens - 1;
        /* no-evict reserves the prompt and every output */
        uint64_t kv_pos = p->sched == NVL_SCHED_TRTLLM ? pos + 1 : pos;
        char where[48] = "";
        if (r->line)
            snprintf(where, sizeof where, " (trace line %u)", r->line);
        if (pos > cap->max_context) {
            nvl_report("request %u%s: %u input + %u output tokens need %llu "
                       "positions, more than the model's context of %llu",
                       r->id, where, r->input_tokens, r->output_tokens,
                       (unsigned long long)pos,
                       (unsigned long long)cap->max_context);
            return NVL_ERR_INVALID;
        }
        if (p->whole_prompts && r->input_tokens > p->max_tokens_per_step) {
            nvl_report("request %u%s: its %u prompt tokens exceed the %u "
                       "tokens of a step and prompts run whole (no chunked "
                       "prefill): raise --max-tokens-per-step or set "
                       "--chunk", r->id, where, r->input_tokens,
                       p->max_tokens_per_step);
            return NVL_ERR_INVALID;
        }
        uint64_t b = (kv_pos + p->block_tokens - 1) / p->block_tokens;
        if (b > cap->kv_blocks) {
            nvl_report("request %u%s: %llu positions need %llu KV blocks of "
                       "%u; the replica's HBM holds %llu: it can never run "
                       "(more TP, --kv-dtype fp8, --dtype fp8|fp4 or "
                       "--kv-host make room)", r->id, where,
                       (unsigned long long)kv_pos, (unsigned long long)b,
                       p->block_tokens, (unsigned long long)cap->kv_blocks);
            return NVL_ERR_INVALID;
        }
    }
    return NVL_OK;
}

static void sched_free(sched_t *s)
{
    free(s->rs);
    free(s->pe);
    free(s->running);
    free(s->waitq);
    free(s->swapq);
    free(s->past);
    free(s->newt);
    free(s->sreq);
    free(s->sk);
}

nvl_status_t nvl_serve_run(const nvl_serve_workload_t *w,
                           const uint32_t *which, size_t n_which,
                           uint32_t replica, const nvl_serve_policy_t *p,
                           const nvl_serve_capacity_t *cap, bool prefilled,
                           int64_t start_ps, nvl_serve_step_fn step,
                           void *ctx, nvl_serve_outcome_t *out,
                           nvl_serve_replica_stats_t *stats_out,
                           nvl_serve_step_rec_t **steps_out,
                           size_t *n_steps_out)
{
    sched_t s = {.w = w, .which = which, .n = n_which, .p = p, .cap = cap,
                 .out = out};
    s.st.kv_blocks = cap->kv_blocks;
    int32_t n_pe = 0;
    for (size_t k = 0; k < n_which; k++)
        if (w->reqs[which[k]].prefix + 1 > n_pe)
            n_pe = w->reqs[which[k]].prefix + 1;
    s.n_pe = (size_t)n_pe;
    size_t n1 = n_which + 1;
    s.rs = calloc(n1, sizeof *s.rs);
    s.pe = calloc(s.n_pe + 1, sizeof *s.pe);
    s.running = malloc(n1 * sizeof *s.running);
    s.waitq = malloc(n1 * sizeof *s.waitq);
    s.swapq = malloc(n1 * sizeof *s.swapq);
    s.past = malloc(n1 * sizeof *s.past);
    s.newt = malloc(n1 * sizeof *s.newt);
    s.sreq = malloc(n1 * sizeof *s.sreq);
    s.sk = malloc(n1 * sizeof *s.sk);
    nvl_serve_step_rec_t *recs = NULL;
    size_t n_recs = 0, cap_recs = 0;
    if (!s.rs || !s.pe || !s.running || !s.waitq || !s.swapq || !s.past ||
        !s.newt || !s.sreq || !s.sk) {
        sched_free(&s);
        nvl_report("out of memory scheduling %zu requests", n_which);
        return NVL_ERR_NOMEM;
    }
    uint32_t conc = w->concurrency;
    /* arrivals: open loop in which's order; closed loop the first conc */
    int64_t *arrive = malloc(n1 * sizeof *arrive);
    if (arrive == NULL) {
        sched_free(&s);
        nvl_report("out of memory scheduling %zu requests", n_which);
        return NVL_ERR_NOMEM;
    }
    for (size_t k = 0; k < n_which; k++) {
        const nvl_serve_req_t *q = &w->reqs[which[k]];
        arrive[k] = conc > 0 ? (k < conc ? start_ps : -1)
                             : q->arrival_ps;
        s.rs[k].ref = -1;
        nvl_serve_outcome_t *o = &out[which[k]];
        if (!prefilled)
            memset(o, 0, sizeof *o);
        o->replica = replica;
        o->scheduled_ps = prefilled ? o->scheduled_ps : -1;
        if (prefilled) {
            s.rs[k].computed = q->input_tokens;
            s.rs[k].generated = 1;
        }
    }
    size_t next = 0, done = 0;
    int64_t now = start_ps;
    nvl_status_t st = NVL_OK;
    while (done < n_which && st == NVL_OK) {
        /* arrivals up to now */
        while (next < n_which && arrive[next] >= 0 && arrive[next] <= now) {
            uint32_t k = (uint32_t)next++;
            out[which[k]].arrival_ps = prefilled ? out[which[k]].arrival_ps
                                                 : arrive[k];
            if (prefilled &&
                s.rs[k].generated >= w->reqs[which[k]].output_tokens) {
                finish(&s, k, arrive[k]);
                done++;
                continue;
            }
            s.rs[k].state = R_WAITING;
            wq_push_back(&s, k);
        }
        s.nb = 0;
        s.budget = p->max_tokens_per_step;
        s.h2d = s.d2h = 0;
        bool preempted = schedule_running(&s);
        if (!preempted)
            schedule_swapped(&s);
        if (!preempted && s.sq_len == 0)
            schedule_waiting(&s);
        if (s.nb == 0) {
            if (next < n_which && arrive[next] >= 0) {
                now = arrive[next] > now ? arrive[next] : now;
                continue;
            }
            st = broken("nothing can run and nothing will arrive");
            break;
        }
        if (s.used > cap->kv_blocks)
            st = broken("KV blocks in use above the capacity");
        if (s.broke)
            st = broken("a no-evict scheduler preempted a request");
        uint64_t tokens = 0, pre = 0;
        for (int i = 0; i < s.nb; i++) {
            tokens += s.newt[i];
            uint32_t k = s.sk[i];
            /* a decode: one token after all the others were computed */
            bool decode = s.rs[k].generated >= 1 && s.newt[i] == 1 &&
                          s.rs[k].computed + 1 == known(&s, k);
            if (!decode)
                pre += s.newt[i];
            if (out[which[k]].scheduled_ps < 0)
                out[which[k]].scheduled_ps = now;
        }
        if (tokens > p->max_tokens_per_step || (uint32_t)s.nb > p->max_batch)
            st = broken("a step above the token budget or the batch limit");
        if (st != NVL_OK)
            break;
        nvl_serve_batch_t b = {.n = s.nb, .past = s.past,
                               .new_tokens = s.newt, .req = s.sreq,
                               .tokens = tokens, .prefill_tokens = pre,
                               .h2d_bytes = s.h2d, .d2h_bytes = s.d2h,
                               .start_ps = now};
        int64_t dur = 0;
        if ((st = step(ctx, &b, &dur)) != NVL_OK)
            break;
        if (steps_out != NULL) {
            if (n_recs == cap_recs) {
                cap_recs = cap_recs ? 2 * cap_recs : 1024;
                nvl_serve_step_rec_t *nr =
                    realloc(recs, cap_recs * sizeof *nr);
                if (nr == NULL) {
                    nvl_report("out of memory recording the steps");
                    st = NVL_ERR_NOMEM;
                    break;
                }
                recs = nr;
            }
            recs[n_recs++] = (nvl_serve_step_rec_t){
                .start_ps = now, .dur_ps = dur, .seqs = (uint32_t)s.nb,
                .tokens = (uint32_t)tokens, .prefill_tokens = (uint32_t)pre,
                .blocks_used = (uint32_t)s.used};
        }
        now += dur;
        s.st.steps++;
        s.st.busy_ps += dur;
        s.st.tokens += tokens;
        s.st.prefill_tokens += pre;
        s.st.decode_tokens += tokens - pre;
        s.st.seqs += (uint64_t)s.nb;
        s.st.h2d_bytes += s.h2d;
        s.st.d2h_bytes += s.d2h;
        if (s.used > s.st.peak_blocks)
            s.st.peak_blocks = s.used;
        s.step_no++;
        /* sampling */
        for (int i = 0; i < s.nb; i++) {
            uint32_t k = s.sk[i];
            rstate_t *r = &s.rs[k];
            if (r->state != R_RUNNING)
                continue;
            r->computed += s.newt[i];
            if (r->owner)
                prefix_ready(&s, k);
            if (r->computed < known(&s, k))
                continue;
            r->generated++;
            nvl_serve_outcome_t *o = &out[which[k]];
            if (r->generated == 1)
                o->first_token_ps = now;
            if (r->generated >= req(&s, k)->output_tokens) {
                finish(&s, k, now);
                done++;
                if (conc > 0) { /* the closed loop's next request */
                    for (size_t j = next; j < n_which; j++)
                        if (arrive[j] < 0) {
                            arrive[j] = now;
                            break;
                        }
                }
            }
        }
        /* the running list without the finished ones */
        size_t m = 0;
        for (size_t i = 0; i < s.n_running; i++)
            if (s.rs[s.running[i]].state == R_RUNNING)
                s.running[m++] = s.running[i];
        s.n_running = m;
    }
    s.st.end_ps = now;
    free(arrive);
    sched_free(&s);
    if (st != NVL_OK) {
        free(recs);
        return st;
    }
    *stats_out = s.st;
    if (steps_out != NULL) {
        *steps_out = recs;
        *n_steps_out = n_recs;
    }
    return NVL_OK;
}
