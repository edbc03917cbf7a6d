/* The loop around one replica's scheduler (sched.c builds each step):
 * arrivals (open or closed loop; a disaggregated decode pool's requests
 * arrive prefilled), the step's time from the caller, sampling, the
 * statistics and the trace's records, and the invariants checked at each
 * step (KV blocks never above capacity, the budget and batch limits, no
 * preemption by a scheduler that never preempts); and the check that
 * every request can be served at all. */
#include <stdlib.h>
#include <string.h>

#include "sched_impl.h"

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

nvl_status_t nvl_sched_broken(const char *what)
{
    nvl_report("internal error: the serve scheduler broke its invariant: "
               "%s", what);
    return NVL_ERR_RANGE;
}

/* Request r can be served: it fits the context, a step (whole prompts)
 * and the KV blocks. */
static nvl_status_t check_request(const nvl_serve_req_t *r,
                                  const nvl_serve_policy_t *p,
                                  const nvl_serve_capacity_t *cap)
{
    uint64_t pos = (uint64_t)r->input_tokens + r->output_tokens - 1;
    /* admission to completion reserves the prompt and every output */
    uint64_t kv_pos =
        nvl_serve_scheduler(p->sched)->admit_to_completion ? pos + 1 : pos;
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
    return NVL_OK;
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
        nvl_status_t st = check_request(&w->reqs[i], p, cap);
        if (st != NVL_OK)
            return st;
    }
    return NVL_OK;
}

size_t nvl_sched_prefixes(const nvl_serve_workload_t *w,
                          const uint32_t *which, size_t n_which)
{
    int32_t n_pe = 0;
    for (size_t k = 0; k < n_which; k++)
        if (w->reqs[which[k]].prefix + 1 > n_pe)
            n_pe = w->reqs[which[k]].prefix + 1;
    return (size_t)n_pe;
}

void nvl_sched_free(sched_t *s)
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

/* ---- the loop ------------------------------------------------------------ */

static void flights_free(loop_t *L)
{
    for (size_t i = 0; L->fl != NULL && i < L->depth; i++) {
        free(L->fl[i].sk);
        free(L->fl[i].newt);
    }
    free(L->fl);
}

/* The ring of steps in flight: `depth` steps of up to fl_cap sequences. */
static nvl_status_t flights_alloc(loop_t *L, size_t n_which)
{
    uint32_t d = L->s.p->in_flight;
    L->depth = d > 1 ? d : 1;
    L->fl_cap = n_which < L->s.p->max_batch ? n_which : L->s.p->max_batch;
    L->fl = calloc(L->depth, sizeof *L->fl);
    bool ok = L->fl != NULL;
    for (size_t i = 0; ok && i < L->depth; i++) {
        L->fl[i].sk = malloc((L->fl_cap + 1) * sizeof *L->fl[i].sk);
        L->fl[i].newt = malloc((L->fl_cap + 1) * sizeof *L->fl[i].newt);
        ok = L->fl[i].sk != NULL && L->fl[i].newt != NULL;
    }
    if (!ok) {
        flights_free(L);
        L->fl = NULL;
        nvl_report("out of memory for %zu steps in flight", L->depth);
        return NVL_ERR_NOMEM;
    }
    return NVL_OK;
}

nvl_status_t nvl_loop_alloc(loop_t *L, size_t n_which)
{
    sched_t *s = &L->s;
    size_t n1 = n_which + 1;
    s->rs = calloc(n1, sizeof *s->rs);
    s->pe = calloc(s->n_pe + 1, sizeof *s->pe);
    s->running = malloc(n1 * sizeof *s->running);
    s->waitq = malloc(n1 * sizeof *s->waitq);
    s->swapq = malloc(n1 * sizeof *s->swapq);
    s->past = malloc(n1 * sizeof *s->past);
    s->newt = malloc(n1 * sizeof *s->newt);
    s->sreq = malloc(n1 * sizeof *s->sreq);
    s->sk = malloc(n1 * sizeof *s->sk);
    L->arrive = malloc(n1 * sizeof *L->arrive);
    if (!s->rs || !s->pe || !s->running || !s->waitq || !s->swapq ||
        !s->past || !s->newt || !s->sreq || !s->sk || !L->arrive) {
        nvl_sched_free(s);
        free(L->arrive);
        nvl_report("out of memory scheduling %zu requests", n_which);
        return NVL_ERR_NOMEM;
    }
    nvl_status_t st = flights_alloc(L, n_which);
    if (st != NVL_OK) {
        nvl_sched_free(s);
        free(L->arrive);
    }
    return st;
}

/* Each request's arrival, state and outcome before the first step. */
void nvl_loop_init(loop_t *L, uint32_t replica, int64_t start_ps)
{
    sched_t *s = &L->s;
    for (size_t k = 0; k < s->n; k++) {
        const nvl_serve_req_t *q = &s->w->reqs[s->which[k]];
        /* an open arrival joins the queue once the front end is done
         * with it (a prefilled pool's requests come from a prefill pool) */
        L->arrive[k] = L->conc > 0 ? (k < L->conc ? start_ps : -1)
                       : q->arrival_ps + (L->prefilled ? 0 : q->frontend_ps);
        s->rs[k].ref = -1;
        nvl_serve_outcome_t *o = &s->out[s->which[k]];
        if (!L->prefilled)
            memset(o, 0, sizeof *o);
        o->replica = replica;
        o->scheduled_ps = L->prefilled ? o->scheduled_ps : -1;
        if (L->prefilled) {
            s->rs[k].computed = q->input_tokens;
            s->rs[k].generated = 1;
        }
    }
    L->now = start_ps;
}

/* The requests arrived by now join the waiting queue (a prefilled one
 * with nothing left to make finishes at once). */
static void loop_arrivals(loop_t *L)
{
    sched_t *s = &L->s;
    while (L->next < s->n && L->arrive[L->next] >= 0 &&
           L->arrive[L->next] <= L->now) {
        uint32_t k = (uint32_t)L->next++;
        nvl_serve_outcome_t *o = &s->out[s->which[k]];
        o->arrival_ps = L->prefilled ? o->arrival_ps
                        : L->arrive[k] - s->w->reqs[s->which[k]].frontend_ps;
        if (L->prefilled &&
            s->rs[k].generated >= s->w->reqs[s->which[k]].output_tokens) {
            finish(s, k, L->arrive[k]);
            L->done++;
            continue;
        }
        s->rs[k].state = R_WAITING;
        nvl_sched_wq_push_back(s, k);
    }
}

void nvl_loop_build(loop_t *L)
{
    sched_t *s = &L->s;
    s->nb = 0;
    s->budget = s->p->max_tokens_per_step;
    s->h2d = s->d2h = 0;
    bool preempted = nvl_sched_running(s);
    if (!preempted)
        nvl_sched_swapped(s);
    if (!preempted && s->sq_len == 0)
        nvl_sched_waiting(s);
}

/* The built step's tokens and prefill tokens, each sequence's first
 * schedule marked, the invariants checked. */
nvl_status_t nvl_loop_check(loop_t *L, uint64_t *tokens_out,
                               uint64_t *pre_out)
{
    sched_t *s = &L->s;
    nvl_status_t st = NVL_OK;
    if (s->used > s->cap->kv_blocks)
        st = nvl_sched_broken("KV blocks in use above the capacity");
    if (s->broke)
        st = nvl_sched_broken("a no-evict scheduler preempted a request");
    uint64_t tokens = 0, pre = 0;
    for (int i = 0; i < s->nb; i++) {
        tokens += s->newt[i];
        uint32_t k = s->sk[i];
        /* a decode: one token after all the others were computed */
        bool decode = s->rs[k].generated >= 1 && s->newt[i] == 1 &&
                      s->past[i] + 1 == known(s, k);
        if (!decode)
            pre += s->newt[i];
        if (s->out[s->which[k]].scheduled_ps < 0)
            s->out[s->which[k]].scheduled_ps = L->now;
    }
    if (tokens > s->p->max_tokens_per_step ||
        (uint32_t)s->nb > s->p->max_batch)
        st = nvl_sched_broken("a step above the token budget or the batch limit");
    *tokens_out = tokens;
    *pre_out = pre;
    return st;
}

nvl_status_t nvl_loop_record(loop_t *L, int64_t dur, uint64_t tokens,
                             uint64_t pre, uint32_t seqs, uint64_t blocks)
{
    if (L->n_recs == L->cap_recs) {
        L->cap_recs = L->cap_recs ? 2 * L->cap_recs : 1024;
        nvl_serve_step_rec_t *nr =
            realloc(L->recs, L->cap_recs * sizeof *nr);
        if (nr == NULL) {
            nvl_report("out of memory recording the steps");
            return NVL_ERR_NOMEM;
        }
        L->recs = nr;
    }
    L->recs[L->n_recs++] = (nvl_serve_step_rec_t){
        .start_ps = L->now, .dur_ps = dur, .seqs = seqs,
        .tokens = (uint32_t)tokens, .prefill_tokens = (uint32_t)pre,
        .blocks_used = (uint32_t)blocks};
    return NVL_OK;
}

/* The step run (its first stage busy for `busy`) in the statistics. */
void nvl_loop_account(loop_t *L, int64_t busy, uint64_t tokens,
                         uint64_t pre)
{
    sched_t *s = &L->s;
    s->st.steps++;
    s->st.busy_ps += busy;
    s->st.tokens += tokens;
    s->st.prefill_tokens += pre;
    s->st.decode_tokens += tokens - pre;
    s->st.seqs += (uint64_t)s->nb;
    s->st.h2d_bytes += s->h2d;
    s->st.d2h_bytes += s->d2h;
    if (s->used > s->st.peak_blocks)
        s->st.peak_blocks = s->used;
    s->step_no++;
}

/* When a token sampled at ready_ps reaches the client: the output path
 * takes the tokens in the order they come, stream_token_ps each, after
 * the one before it (at ready_ps itself when it has none). */
static int64_t delivered(loop_t *L, int64_t ready_ps)
{
    int64_t per = L->s.p->stream_token_ps;
    if (per <= 0)
        return ready_ps;
    L->stream_ps = (L->stream_ps > ready_ps ? L->stream_ps : ready_ps) + per;
    return L->stream_ps;
}

/* The oldest step in flight ends (at its ready_ps): its tokens are computed,
 * each sequence whose known tokens are all computed samples its next
 * token; the finished ones leave (a closed loop lets the next request
 * arrive) and the running list closes up. */
void nvl_loop_sample(loop_t *L)
{
    sched_t *s = &L->s;
    const struct flight *f = &L->fl[L->fl_head];
    L->fl_head = (L->fl_head + 1) % L->depth;
    L->fl_len--;
    if (f->ready_ps > L->last_ps)
        L->last_ps = f->ready_ps;
    for (int i = 0; i < f->nb; i++) {
        uint32_t k = f->sk[i];
        rstate_t *r = &s->rs[k];
        r->flight -= f->newt[i];
        if (r->state != R_RUNNING)
            continue;
        r->computed += f->newt[i];
        if (r->owner)
            prefix_ready(s, k);
        if (r->computed < known(s, k))
            continue;
        r->generated++;
        int64_t at = delivered(L, f->ready_ps);
        nvl_serve_outcome_t *o = &s->out[s->which[k]];
        if (r->generated == 1)
            o->first_token_ps = at;
        if (r->generated < req(s, k)->output_tokens)
            continue;
        finish(s, k, at);
        L->done++;
        for (size_t j = L->next; L->conc > 0 && j < s->n; j++)
            if (L->arrive[j] < 0) {
                L->arrive[j] = at;
                break;
            }
    }
    size_t m = 0;
    for (size_t i = 0; i < s->n_running; i++)
        if (s->rs[s->running[i]].state == R_RUNNING)
            s->running[m++] = s->running[i];
    s->n_running = m;
}

void nvl_loop_flight(loop_t *L, int64_t dur_ps, int64_t free_ps)
{
    sched_t *s = &L->s;
    struct flight *f = &L->fl[(L->fl_head + L->fl_len++) % L->depth];
    f->ready_ps = L->now + dur_ps;
    f->nb = s->nb;
    memcpy(f->sk, s->sk, (size_t)s->nb * sizeof *f->sk);
    memcpy(f->newt, s->newt, (size_t)s->nb * sizeof *f->newt);
    L->now += free_ps;
}

/* The step built runs from L->now: it joins the steps in flight (its
 * sequences and tokens kept until it ends), and the next may start when
 * its first stage is free. */
static nvl_status_t loop_run(loop_t *L, nvl_serve_step_fn step, void *ctx,
                             bool keep)
{
    sched_t *s = &L->s;
    uint64_t tokens, pre;
    nvl_status_t st = nvl_loop_check(L, &tokens, &pre);
    if (st != NVL_OK)
        return st;
    nvl_serve_batch_t b = {.n = s->nb, .past = s->past,
                           .new_tokens = s->newt, .req = s->sreq,
                           .tokens = tokens, .prefill_tokens = pre,
                           .h2d_bytes = s->h2d, .d2h_bytes = s->d2h,
                           .start_ps = L->now};
    nvl_serve_step_time_t t = {0, 0};
    if ((st = step(ctx, &b, &t)) != NVL_OK)
        return st;
    if (keep && (st = nvl_loop_record(L, t.dur_ps, tokens, pre,
                                         (uint32_t)s->nb, s->used)) != NVL_OK)
        return st;
    nvl_loop_account(L, t.free_ps, tokens, pre);
    nvl_loop_flight(L, t.dur_ps, t.free_ps);
    return NVL_OK;
}

/* One turn of the loop: the steps in flight whose tokens are back are
 * sampled; then a step is built and run when fewer than `depth` are in
 * flight and one can run; else the time moves to the oldest step's end
 * (sampled then), or, with none in flight, to the next arrival (vLLM V1's
 * EngineCore.step_with_batch_queue: schedule while the batch queue has
 * room, else block on its oldest batch). */
static nvl_status_t loop_step(loop_t *L, nvl_serve_step_fn step, void *ctx,
                              bool keep)
{
    sched_t *s = &L->s;
    while (L->fl_len > 0 && L->fl[L->fl_head].ready_ps <= L->now)
        nvl_loop_sample(L);
    if (L->done == s->n)
        return NVL_OK;
    loop_arrivals(L);
    s->nb = 0;
    if (L->fl_len < L->depth)
        nvl_loop_build(L);
    if (s->nb > 0)
        return loop_run(L, step, ctx, keep);
    if (L->fl_len > 0) {
        L->now = L->fl[L->fl_head].ready_ps;
        nvl_loop_sample(L);
        return NVL_OK;
    }
    if (L->next < s->n && L->arrive[L->next] >= 0) {
        L->now = L->arrive[L->next] > L->now ? L->arrive[L->next] : L->now;
        return NVL_OK;
    }
    return nvl_sched_broken("nothing can run and nothing will arrive");
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
    loop_t L = {.s = {.w = w, .which = which, .n = n_which, .p = p,
                      .cap = cap, .out = out,
                      .row = nvl_serve_scheduler(p->sched)},
                .conc = w->concurrency, .prefilled = prefilled};
    L.s.st.kv_blocks = cap->kv_blocks;
    L.s.n_pe = nvl_sched_prefixes(w, which, n_which);
    nvl_status_t st = nvl_loop_alloc(&L, n_which);
    if (st != NVL_OK)
        return st;
    nvl_loop_init(&L, replica, start_ps);
    while (L.done < n_which && st == NVL_OK)
        st = loop_step(&L, step, ctx, steps_out != NULL);
    L.s.st.end_ps = L.now > L.last_ps ? L.now : L.last_ps;
    free(L.arrive);
    flights_free(&L);
    nvl_sched_free(&L.s);
    if (st != NVL_OK) {
        free(L.recs);
        return st;
    }
    *stats_out = L.s.st;
    if (steps_out != NULL) {
        *steps_out = L.recs;
        *n_steps_out = L.n_recs;
    }
    return NVL_OK;
}
