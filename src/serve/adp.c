/* Attention data-parallel serving, as TensorRT-LLM runs a replica with
 * enable_attention_dp (docs/serve.md, "Attention data-parallel (DEP)"):
 * each of the replica's ranks is a scheduler of its own (its own
 * sequences, KV cache, max batch and token budget: one run.c loop per
 * rank), and every step all of them run together, since the mixture of
 * experts' layers join the ranks.
 *
 * The requests that arrived reach the ranks as TensorRT-LLM's executor
 * request queue hands them out each iteration
 * (tensorrt_llm/_torch/pyexecutor/executor_request_queue.py,
 * ExecutorRequestQueue._fetch_new_requests_attention_dp,
 * _schedule_attention_dp_requests and _balance_requests_across_ranks):
 *
 *   active[r]  requests rank r holds (waiting for its KV or running),
 *   tokens[r]  the sum of their prompt lengths;
 *   take       min(waiting, ranks x max_batch - sum active), first come
 *              first served (max_num_active_requests is max_batch a rank);
 *   expected   max(ceil((sum active + take) / ranks), max active);
 *   the taken requests, longest prompt first (ties in arrival order), each
 *   go to the rank with active[r] < expected of the fewest tokens, then
 *   the fewest requests, then the lowest rank (the heap's order).
 *
 * A rank's own scheduler (TensorRT-LLM's no-evict capacity scheduler)
 * then admits from what it holds; a request never moves between ranks. */
#include <stdlib.h>
#include <string.h>

#include "sched_impl.h"

typedef struct {
    uint32_t k, input;
} pick_t;

typedef struct {
    loop_t *L;                  /* [ranks] */
    int ranks;
    uint32_t max_active;        /* a rank's max_batch */
    uint32_t conc;              /* the closed loop's users; 0: open */
    uint32_t *gq;               /* arrived, no rank yet (FIFO of k) */
    size_t gq_head, gq_len;
    pick_t *pick;               /* the step's taken requests */
    uint64_t *active, *tokens;  /* [ranks] */
    uint64_t *step_tok, *step_pre;
    nvl_serve_batch_t *b;       /* [ranks] */
    size_t next, done, n;
    int64_t now;
    uint64_t steps, peak_blocks;
    int64_t busy_ps;
} dp_t;

/* Rank r's active requests and their prompt tokens. */
static void rank_load(const dp_t *D, int r, uint64_t *active,
                      uint64_t *tokens)
{
    const sched_t *s = &D->L[r].s;
    uint64_t t = 0;
    for (size_t i = 0; i < s->n_running; i++)
        t += req(s, s->running[i])->input_tokens;
    for (size_t i = 0; i < s->wq_len; i++)
        t += req(s, s->waitq[(s->wq_head + i) % s->n])->input_tokens;
    *active = s->n_running + s->wq_len + s->sq_len;
    *tokens = t;
}

static int by_prompt_desc(const void *a, const void *b)
{
    const pick_t *x = a, *y = b;
    if (x->input != y->input)
        return x->input > y->input ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* The rank below `expected` with the fewest tokens, requests, number. */
static int least_loaded(const dp_t *D, uint64_t expected)
{
    int best = -1;
    for (int r = 0; r < D->ranks; r++) {
        if (D->active[r] >= expected)
            continue;
        if (best < 0 || D->tokens[r] < D->tokens[best] ||
            (D->tokens[r] == D->tokens[best] &&
             D->active[r] < D->active[best]))
            best = r;
    }
    return best;
}

/* This iteration's requests to the ranks (the header's rule). */
static void assign(dp_t *D)
{
    uint64_t total = 0, most = 0;
    for (int r = 0; r < D->ranks; r++) {
        rank_load(D, r, &D->active[r], &D->tokens[r]);
        total += D->active[r];
        most = D->active[r] > most ? D->active[r] : most;
    }
    uint64_t cap = (uint64_t)D->ranks * D->max_active;
    size_t take = cap > total ? (size_t)(cap - total) : 0;
    take = take < D->gq_len ? take : D->gq_len;
    if (take == 0)
        return;
    uint64_t expected = (total + take + (uint64_t)D->ranks - 1) /
                        (uint64_t)D->ranks;
    expected = expected > most ? expected : most;
    const sched_t *s0 = &D->L[0].s;
    for (size_t i = 0; i < take; i++) {
        uint32_t k = D->gq[D->gq_head++];
        D->pick[i] = (pick_t){.k = k, .input = req(s0, k)->input_tokens};
    }
    D->gq_len -= take;
    qsort(D->pick, take, sizeof *D->pick, by_prompt_desc);
    for (size_t i = 0; i < take; i++) {
        int r = least_loaded(D, expected);
        sched_t *s = &D->L[r].s;
        s->rs[D->pick[i].k].state = R_WAITING;
        nvl_sched_wq_push_back(s, D->pick[i].k);
        D->active[r]++;
        D->tokens[r] += D->pick[i].input;
    }
}

/* The requests arrived by now join the queue of those without a rank. */
static void arrivals(dp_t *D)
{
    const int64_t *arrive = D->L[0].arrive;
    while (D->next < D->n && arrive[D->next] >= 0 &&
           arrive[D->next] <= D->now) {
        uint32_t k = (uint32_t)D->next++;
        D->L[0].s.out[D->L[0].s.which[k]].arrival_ps = arrive[k];
        D->gq[D->gq_head + D->gq_len++] = k;
    }
}

/* The ranks' finished requests since the last step; a closed loop lets
 * as many next requests arrive now. */
static void finished(dp_t *D)
{
    size_t done = 0;
    for (int r = 0; r < D->ranks; r++)
        done += D->L[r].done;
    size_t fresh = done - D->done;
    int64_t *arrive = D->L[0].arrive;
    for (size_t j = D->next; D->conc > 0 && fresh > 0 && j < D->n; j++)
        if (arrive[j] < 0) {
            arrive[j] = D->now;
            fresh--;
        }
    D->done = done;
}

/* Every rank's step, built, checked, run together, accounted, sampled;
 * when no rank has anything to run, the time moves to the next arrival. */
static nvl_status_t dp_step(dp_t *D, nvl_serve_dp_step_fn step, void *ctx,
                            bool keep)
{
    arrivals(D);
    assign(D);
    int busy = 0;
    for (int r = 0; r < D->ranks; r++) {
        D->L[r].now = D->now;
        nvl_loop_build(&D->L[r]);
        busy += D->L[r].s.nb > 0;
    }
    if (busy == 0) {
        const int64_t *arrive = D->L[0].arrive;
        if (D->next < D->n && arrive[D->next] >= 0) {
            D->now = arrive[D->next] > D->now ? arrive[D->next] : D->now;
            return NVL_OK;
        }
        return nvl_sched_broken("nothing can run and nothing will arrive");
    }
    uint64_t tok = 0, pre = 0, seqs = 0, blocks = 0;
    for (int r = 0; r < D->ranks; r++) {
        sched_t *s = &D->L[r].s;
        nvl_status_t st = nvl_loop_check(&D->L[r], &D->step_tok[r],
                                         &D->step_pre[r]);
        if (st != NVL_OK)
            return st;
        D->b[r] = (nvl_serve_batch_t){
            .n = s->nb, .past = s->past, .new_tokens = s->newt,
            .req = s->sreq, .tokens = D->step_tok[r],
            .prefill_tokens = D->step_pre[r], .h2d_bytes = s->h2d,
            .d2h_bytes = s->d2h, .start_ps = D->now};
        tok += D->step_tok[r];
        pre += D->step_pre[r];
        seqs += (uint64_t)s->nb;
        blocks += s->used;
    }
    int64_t dur = 0;
    nvl_status_t st = step(ctx, D->b, D->ranks, &dur);
    if (st == NVL_OK && keep)
        st = nvl_loop_record(&D->L[0], dur, tok, pre, (uint32_t)seqs,
                             blocks);
    if (st != NVL_OK)
        return st;
    for (int r = 0; r < D->ranks; r++) {
        nvl_loop_account(&D->L[r], dur, D->step_tok[r], D->step_pre[r]);
        nvl_loop_flight(&D->L[r], dur, dur);
        nvl_loop_sample(&D->L[r]);
    }
    D->now += dur;
    D->steps++;
    D->busy_ps += dur;
    D->peak_blocks = blocks > D->peak_blocks ? blocks : D->peak_blocks;
    finished(D);
    return NVL_OK;
}

static void dp_free(dp_t *D)
{
    for (int r = 0; D->L != NULL && r < D->ranks; r++) {
        nvl_sched_free(&D->L[r].s);
        free(D->L[r].arrive);
    }
    free(D->L);
    free(D->gq);
    free(D->pick);
    free(D->active);
    free(D->tokens);
    free(D->step_tok);
    free(D->step_pre);
    free(D->b);
}

/* D's arrays and every rank's loop, initialised as nvl_serve_run's. */
static nvl_status_t dp_alloc(dp_t *D, const loop_t *proto, uint32_t replica)
{
    size_t R = (size_t)D->ranks, n1 = D->n + 1;
    D->L = calloc(R, sizeof *D->L);
    D->gq = malloc(n1 * sizeof *D->gq);
    D->pick = malloc(n1 * sizeof *D->pick);
    D->active = malloc(R * sizeof *D->active);
    D->tokens = malloc(R * sizeof *D->tokens);
    D->step_tok = malloc(R * sizeof *D->step_tok);
    D->step_pre = malloc(R * sizeof *D->step_pre);
    D->b = malloc(R * sizeof *D->b);
    if (!D->L || !D->gq || !D->pick || !D->active || !D->tokens ||
        !D->step_tok || !D->step_pre || !D->b) {
        nvl_report("out of memory scheduling %zu requests on %d ranks",
                   D->n, D->ranks);
        return NVL_ERR_NOMEM;
    }
    for (int r = 0; r < D->ranks; r++) {
        D->L[r] = *proto;
        nvl_status_t st = nvl_loop_alloc(&D->L[r], D->n);
        if (st != NVL_OK) {
            memset(&D->L[r], 0, sizeof D->L[r]);
            return st;
        }
        nvl_loop_init(&D->L[r], replica, 0);
        D->L[r].conc = 0; /* the closed loop is the replica's (finished) */
    }
    return NVL_OK;
}

static void dp_stats(const dp_t *D, const nvl_serve_capacity_t *cap,
                     nvl_serve_replica_stats_t *st)
{
    memset(st, 0, sizeof *st);
    for (int r = 0; r < D->ranks; r++)
        nvl_serve_stats_add_work(st, &D->L[r].s.st);
    st->steps = D->steps;
    st->busy_ps = D->busy_ps;
    st->end_ps = D->now;
    st->peak_blocks = D->peak_blocks;
    st->kv_blocks = (uint64_t)D->ranks * cap->kv_blocks;
}

nvl_status_t nvl_serve_run_dp(const nvl_serve_workload_t *w,
                              const uint32_t *which, size_t n_which,
                              uint32_t replica, const nvl_serve_policy_t *p,
                              const nvl_serve_capacity_t *cap, int ranks,
                              nvl_serve_dp_step_fn step, void *ctx,
                              nvl_serve_outcome_t *out,
                              nvl_serve_replica_stats_t *stats_out,
                              nvl_serve_step_rec_t **steps_out,
                              size_t *n_steps_out)
{
    if (ranks < 1 || !nvl_serve_scheduler(p->sched)->admit_to_completion)
        return nvl_sched_broken("attention-DP serving needs ranks and "
                                "TensorRT-LLM's scheduler");
    loop_t proto = {.s = {.w = w, .which = which, .n = n_which, .p = p,
                          .cap = cap, .out = out, .n_pe = nvl_sched_prefixes(w, which, n_which),
                          .row = nvl_serve_scheduler(p->sched)},
                    .conc = w->concurrency};
    proto.s.st.kv_blocks = cap->kv_blocks;
    dp_t D = {.ranks = ranks, .max_active = p->max_batch,
              .conc = w->concurrency, .n = n_which};
    nvl_status_t st = dp_alloc(&D, &proto, replica);
    while (st == NVL_OK && D.done < n_which)
        st = dp_step(&D, step, ctx, steps_out != NULL);
    if (st == NVL_OK) {
        dp_stats(&D, cap, stats_out);
        if (steps_out != NULL) {
            *steps_out = D.L[0].recs;
            *n_steps_out = D.L[0].n_recs;
            D.L[0].recs = NULL;
        }
    }
    if (D.L != NULL)
        free(D.L[0].recs);
    dp_free(&D);
    return st;
}
