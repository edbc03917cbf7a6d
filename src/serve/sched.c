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
 * TensorRT-LLM (its row admits to completion and never preempts;
 * batch_manager/capacityScheduler.cpp GuaranteedNoEvictScheduler,
 * microBatchScheduler.cpp): the same loop, but step 3 admits a waiting
 * request only when
 *     free blocks - sum over running r of blocks r needs to finish
 * holds blocks_for(input + output) of its own, and stops at the first
 * that does not fit; so step 1 never lacks a block and nothing is
 * preempted (a broken invariant if it were).  With whole_prompts (no
 * chunked context) a prompt whose rest exceeds the budget left stops
 * admission too.
 *
 * With a pipeline (policy in_flight > 1) steps overlap: a request in a
 * step in flight is skipped in step 1 (vLLM V1: its num_new_tokens is 0
 * once every known token is scheduled, "PP>1 and we have already
 * scheduled all prompt tokens but they are not finished yet", so its next
 * prefill chunk may run; TensorRT-LLM: every request of a micro batch in
 * flight is in inflight_req_ids and not scheduled,
 * tensorrt_llm/_torch/pyexecutor/py_executor.py _add_inflight_ids), and
 * is never the one preempted (its step holds its blocks).
 *
 * This file builds a step; run.c runs the loop around it. */
#include <string.h>

#include "sched_impl.h"

/* ---- queues ------------------------------------------------------------------- */

void nvl_sched_wq_push_back(sched_t *s, uint32_t k)
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

/* The least recently used HBM entry nobody holds (not `keep`), or -1. */
static int32_t lru_entry(const sched_t *s, int32_t keep)
{
    int32_t best = -1;
    for (size_t i = 0; i < s->n_pe; i++) {
        const pentry_t *e = &s->pe[i];
        if (e->state == P_HBM && e->refs == 0 && (int32_t)i != keep &&
            (best < 0 || e->last_use < s->pe[best].last_use))
            best = (int32_t)i;
    }
    return best;
}

/* The request preempted longest ago that keeps cached blocks (not
 * `keep`), or -1. */
static int64_t lru_kept(const sched_t *s, int64_t keep)
{
    int64_t best = -1;
    for (size_t k = 0; s->kept > 0 && k < s->n; k++)
        if (s->rs[k].kept > 0 && (int64_t)k != keep &&
            (best < 0 || s->rs[k].kept_at < s->rs[best].kept_at))
            best = (int64_t)k;
    return best;
}

/* Frees entry i: to host memory over NVLink-C2C when it has room, else
 * dropped. */
static void evict_entry(sched_t *s, int32_t i)
{
    pentry_t *e = &s->pe[i];
    s->used -= e->blocks;
    double bytes = block_bytes(s, e->blocks);
    if (s->host_used + bytes <= s->cap->host_bytes) {
        e->state = P_HOST;
        s->host_used += bytes;
        s->d2h += bytes;
    } else
        e->state = P_NONE;
}

/* Frees cached blocks when short_by (> 0) blocks are missing, the least
 * recently used first: a whole unused entry (not keep_entry), or up to
 * short_by of the blocks a recompute-preempted request keeps (not
 * keep_k's), its last ones first (vLLM's KVCacheManager.free returns a
 * request's blocks tail first, so its tail is reused first).  Returns
 * whether any were freed. */
static bool evict_cached(sched_t *s, int32_t keep_entry, int64_t keep_k,
                         uint64_t short_by)
{
    int32_t e = lru_entry(s, keep_entry);
    int64_t k = lru_kept(s, keep_k);
    if (e < 0 && k < 0)
        return false;
    if (k < 0 || (e >= 0 && s->pe[e].last_use <= s->rs[k].kept_at)) {
        evict_entry(s, e);
        return true;
    }
    rstate_t *r = &s->rs[k];
    uint64_t x = r->kept < short_by ? r->kept : short_by;
    r->kept -= x;
    s->kept -= x;
    s->used -= x;
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

/* Preempts the running request admitted last, from running[from] on,
 * that is in no step in flight; returns it, or -1 when there is none (a
 * pipeline's steps in flight hold the others' blocks until they end). */
static int64_t preempt_last(sched_t *s, size_t from)
{
    size_t j = s->n_running;
    while (j > from && s->rs[s->running[j - 1]].flight > 0)
        j--;
    if (j == from)
        return -1;
    uint32_t k = s->running[j - 1];
    memmove(&s->running[j - 1], &s->running[j],
            (s->n_running - j) * sizeof *s->running);
    s->n_running--;
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
        return k;
    }
    /* recompute: prompt and outputs prefilled again; with prefix caching
     * (a request with no prefix id) its full blocks stay cached until
     * evicted: vLLM V1's freed blocks keep their hashes, and the request's
     * lookup on readmission finds those still there */
    uint64_t keep = 0;
    if (s->p->prefix_caching && req(s, k)->prefix < 0) {
        keep = r->computed / s->p->block_tokens;
        keep = keep < r->priv ? keep : r->priv;
    }
    drop_ref(s, k);
    r->priv = 0;
    r->computed = 0;
    r->kept = keep;
    r->kept_at = s->step_no;
    s->kept += keep;
    s->used += keep;
    r->state = R_WAITING;
    wq_push_front(s, k);
    return k;
}

/* ---- building a step --------------------------------------------------------------- */

/* Tokens request k runs in this step if scheduled now. */
static uint32_t step_tokens(const sched_t *s, uint32_t k)
{
    uint64_t rest = known(s, k) - s->rs[k].computed - s->rs[k].flight;
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
    uint64_t total = blocks_for(s, r->computed + r->flight + t);
    uint64_t have = r->priv + r->shared;
    return total > have ? total - have : 0;
}

static void add_to_step(sched_t *s, uint32_t k, uint32_t t, uint64_t more)
{
    rstate_t *r = &s->rs[k];
    r->priv += more;
    s->used += more;
    s->past[s->nb] = r->computed + r->flight;
    r->flight += t;
    s->newt[s->nb] = t;
    s->sreq[s->nb] = s->which[k];
    s->sk[s->nb] = k;
    s->nb++;
    s->budget -= t;
}

/* Step 1: the running requests; returns whether one was preempted. */
bool nvl_sched_running(sched_t *s)
{
    bool preempted = false;
    for (size_t i = 0; i < s->n_running; i++) {
        if (s->budget == 0 || (uint32_t)s->nb >= s->p->max_batch)
            break;
        uint32_t k = s->running[i];
        const rstate_t *r = &s->rs[k];
        /* in a step in flight: nothing to run until it ends, or (vLLM)
         * its prefill's next chunk */
        if (r->flight > 0 && (!s->row->next_chunk_in_flight ||
                              r->computed + r->flight == known(s, k)))
            continue;
        uint32_t t = step_tokens(s, k);
        uint64_t more = blocks_needed(s, k, t);
        bool stop = false;
        while (more > s->cap->kv_blocks - s->used && !stop) {
            if (s->p->prefix_caching &&
                evict_cached(s, -1, -1,
                             more - (s->cap->kv_blocks - s->used)))
                continue;
            int64_t v = preempt_last(s, i);
            /* none free to preempt: it waits for the steps in flight */
            stop = v < 0 || v == k; /* or it preempted itself */
            if (v >= 0) {
                s->broke |= !s->row->preempts;
                preempted = true;
            }
        }
        if (stop)
            break;
        add_to_step(s, k, t, more);
    }
    return preempted;
}

/* Step 2: swapped requests back, oldest first, while their blocks fit. */
void nvl_sched_swapped(sched_t *s)
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

/* Of the blocks request k keeps from a recompute preemption, those it
 * can use: full blocks of its known tokens, at least one token computed
 * (vLLM's lookup stops before the last token). */
static uint64_t kept_usable(const sched_t *s, uint32_t k)
{
    uint64_t usable = (known(s, k) - 1) / s->p->block_tokens;
    return s->rs[k].kept < usable ? s->rs[k].kept : usable;
}

/* Admitted request k takes `own` of the blocks it kept (its KV there is
 * computed: a cache hit); the others are free again. */
static void take_kept(sched_t *s, uint32_t k, uint64_t own)
{
    rstate_t *r = &s->rs[k];
    if (r->kept == 0)
        return;
    uint64_t bt = s->p->block_tokens;
    s->used -= r->kept - own;
    s->kept -= r->kept;
    r->kept = 0;
    r->priv = own;
    r->computed = own * bt;
    if (own > 0) {
        s->out[s->which[k]].cached_tokens = (uint32_t)(own * bt);
        s->st.prefix_hits++;
        s->st.prefix_hit_tokens += own * bt;
    }
}

/* Step 3: waiting requests, first come first served. */
void nvl_sched_waiting(sched_t *s)
{
    bool no_evict = s->row->admit_to_completion;
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
        uint64_t own = kept_usable(s, k);
        uint64_t start = (shared + own) * s->p->block_tokens > r->computed
                             ? (shared + own) * s->p->block_tokens
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
        uint64_t need = blocks_for(s, upto) - shared - own + reload_blocks;
        while (need + reserved > s->cap->kv_blocks - s->used &&
               s->p->prefix_caching &&
               evict_cached(s, pid, k,
                            need + reserved -
                                (s->cap->kv_blocks - s->used)))
            ;
        if (need + reserved > s->cap->kv_blocks - s->used)
            break;
        wq_pop(s);
        prefix_take(s, k, reload);
        take_kept(s, k, own);
        r->state = R_RUNNING;
        r->admitted = s->step_no;
        s->running[s->n_running++] = k;
        add_to_step(s, k, step_tokens(s, k),
                    blocks_needed(s, k, step_tokens(s, k)));
        if (no_evict)
            reserved += to_completion(s, k);
    }
}
