/* A pipeline's step agreed in one exchange (timing mode).
 *
 * Each rank records its whole step (issue.c): every pass of every
 * microbatch, its stage's collectives on e->tp and its link transfers on
 * link_prev and link_next, each call's entry stated as max(x + a, b) with
 * x the end of the rank's call before it, on whichever communicator
 * (the first call of the step: x = 0, a its entry), and each pass's end
 * alike.  Nothing a rank records needs a peer: a stage's collectives are
 * its own group's, and a transfer's arrival is known only once the
 * receiver's clock is read, which the replay does.  The job then agrees
 * once, an MPI_Allreduce (max) of
 *
 *   head       the first failing rank, whether one printed, whether an
 *              entry was stated inexactly, the most entries a rank owns,
 *              each stage's call count (and its negation);
 *   per stage  each collective's a, b (those that follow a collective of
 *              the stage: x is the stage's), duration, signature (and its
 *              negation), error;
 *   per rank   the entries only the rank knows: its transfers (a, b,
 *              duration, signature, error), the collective after one
 *              (x is the transfer's end, the rank's own), its passes' ends;
 *
 * and every rank plays the step's calls through in order, as the
 * per-call agreements would have run them: a collective starts at its
 * stage's latest entry and lasts the longest member's time (agree.c), a
 * transfer at the later of the pair's entries and lasts the longer time
 * (p2p.c, nvl_group_end: both GPUs wait for the later), each member's x
 * becoming the call's end.  Integer picoseconds and the same maxima and
 * sums: the same times, bit for bit.  Then the rank issues its tape
 * (nvl_engine_replay) with each call's outcome known.
 *
 * A wrong call, or ranks of a stage (or the two ends of a link) whose
 * calls differ, are found in the same exchange; the members of the first
 * such call (stages in order, then links) have the per-call agreement
 * report it (nvl_comm_defer_report), every rank fails.  A rank whose
 * recording failed fails every rank, its report printed once.  An entry
 * the shadows could not state (issue.c) or a clock beyond its range makes
 * the replay agree call by call, as without deferral (each rank's calls
 * in the order the live run makes them). */
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

/* The head; then two numbers per stage: its call count and negation. */
enum { HD_FAIL, HD_PRINTED, HD_INEXACT, HD_OWN, HD_N };
/* A stage collective's numbers. */
enum { SL_A, SL_B, SL_T, SL_SIG, SL_NEG_SIG, SL_ERR, SL_N };
/* A rank's own entry: its kind (nvl_step_kind_t; 0 none), the stage
 * collectives before it, its numbers. */
enum { OW_KIND, OW_POS, OW_A, OW_B, OW_T, OW_SIG, OW_ERR, OW_N };

/* Eager launches are left out: after a pass's end the host's clock
 * follows the GPU's, and a launch per kernel makes the GPU wait on it
 * past the next pass's first call, which the shadows bound but cannot
 * state (issue.c); such a step would agree call by call on replay, more
 * messages than settling each pass. */
bool nvl_engine_pipe_can_record_step(const nvl_engine_t *e)
{
    return e->stages > 1 && !e->data && nvl_engine_records(e) &&
           e->opts.cost.launch != NVL_LAUNCH_EAGER;
}

/* The exchange's layout, the same on every rank (from the agreed
 * rooms). */
typedef struct {
    nvl_engine_t *e;
    int ranks, tp, stages, me;
    size_t stage_at[NVL_ENGINE_PP_MAX + 1], own_at, n;
    int64_t *v;
} xchg_t;

static void layout(xchg_t *x)
{
    size_t at = HD_N + 2 * (size_t)x->stages;
    for (int k = 0; k < x->stages; k++) {
        x->stage_at[k] = at;
        at += x->e->rec.cap[k] * SL_N;
    }
    x->own_at = at;
    x->n = at + (size_t)x->ranks * x->e->rec.cap_own * OW_N;
    free(x->v);
    x->v = malloc((x->n + 1) * sizeof *x->v);
    if (x->v == NULL) {
        nvl_report("out of memory agreeing a step of %zu numbers", x->n);
        nvl_runtime_abort(1);
    }
}

static int64_t *own_slot(const xchg_t *x, int rank, size_t j)
{
    return x->v + x->own_at + ((size_t)rank * x->e->rec.cap_own + j) * OW_N;
}

static int64_t *stage_slot(const xchg_t *x, int k, size_t i)
{
    return x->v + x->stage_at[k] + i * SL_N;
}

/* The communicator of a recorded call of this rank's. */
static nvl_comm_t *ev_comm(const nvl_engine_t *e, nvl_step_kind_t k)
{
    return k == NVL_STEP_COLL   ? e->tp
           : k == NVL_STEP_RECV ? e->link_prev
                                : e->link_next;
}

/* This rank's numbers into x->v (INT64_MIN, neutral, elsewhere). */
static void pack(xchg_t *x, nvl_status_t st)
{
    nvl_engine_t *e = x->e;
    for (size_t i = 0; i < x->n; i++)
        x->v[i] = INT64_MIN;
    size_t n_own = 0, nc = nvl_comm_deferred_calls(e->tp);
    for (size_t i = 0; i < e->rec.n_ev; i++)
        n_own += e->rec.ev[i].own;
    x->v[HD_FAIL] = -(int64_t)(st != NVL_OK ? x->me : x->ranks);
    x->v[HD_PRINTED] = nvl_report_printed() > 0;
    x->v[HD_INEXACT] = !e->shadow_exact;
    x->v[HD_OWN] = (int64_t)n_own;
    x->v[HD_N + 2 * e->stage] = (int64_t)nc;
    x->v[HD_N + 2 * e->stage + 1] = -(int64_t)nc;
    size_t cap = e->rec.cap[e->stage];
    for (size_t i = 0; i < nc && i < cap; i++) {
        nvl_defer_view_t d;
        nvl_comm_deferred_get(e->tp, i, &d);
        int64_t *s = stage_slot(x, e->stage, i);
        s[SL_A] = d.a_ps;
        s[SL_B] = d.b_ps;
        s[SL_T] = d.time_ps;
        s[SL_SIG] = d.signature;
        s[SL_NEG_SIG] = -d.signature;
        s[SL_ERR] = !d.ok;
    }
    size_t j = 0;
    for (size_t i = 0; i < e->rec.n_ev; i++) {
        const nvl_step_ev_t *ev = &e->rec.ev[i];
        if (ev->kind == NVL_STEP_COLL && ev->own && ev->call < cap)
            stage_slot(x, e->stage, ev->call)[SL_A] =
                stage_slot(x, e->stage, ev->call)[SL_B] = INT64_MIN;
        if (!ev->own || j >= e->rec.cap_own)
            continue;
        int64_t *o = own_slot(x, x->me, j++);
        o[OW_KIND] = ev->kind;
        o[OW_POS] = (int64_t)ev->pos;
        o[OW_A] = ev->a_ps;
        o[OW_B] = ev->b_ps;
        o[OW_T] = o[OW_SIG] = o[OW_ERR] = 0;
        if (ev->kind == NVL_STEP_END)
            continue;
        nvl_defer_view_t d;
        nvl_comm_deferred_get(ev_comm(e, ev->kind), ev->call, &d);
        o[OW_A] = d.a_ps;
        o[OW_B] = d.b_ps;
        o[OW_T] = d.time_ps;
        o[OW_SIG] = d.signature;
        o[OW_ERR] = !d.ok;
    }
    for (; j < e->rec.cap_own; j++)
        memset(own_slot(x, x->me, j), 0, OW_N * sizeof(int64_t));
}

/* The step's recording dropped (a failed step). */
static void drop(nvl_engine_t *e)
{
    nvl_comm_t *c[3] = {e->tp, e->link_prev, e->link_next};
    for (int i = 0; i < 3; i++)
        if (c[i] != NULL)
            nvl_comm_defer_drop(c[i]);
    e->n_tape = 0;
    e->defer = e->rec.on = false;
}

/* One call or pass end in a rank's order: its kind, its index (a stage
 * collective's on the stage, a transfer's on its link, a pass's end's in
 * the step) and its own entry's slot (-1: the stage's). */
typedef struct {
    nvl_step_kind_t kind;
    size_t call;
    long slot;
} seq_ev_t;

/* Every rank's order, from its own entries and its stage's count:
 * seq + at[r] .. at[r + 1]. */
static seq_ev_t *orders(const xchg_t *x, size_t **at_out)
{
    size_t total = 0, *at = calloc((size_t)x->ranks + 1, sizeof *at);
    for (int r = 0; at != NULL && r < x->ranks; r++)
        total += (size_t)x->v[HD_N + 2 * (r / x->tp)] + x->e->rec.cap_own;
    seq_ev_t *seq = malloc((total + 1) * sizeof *seq);
    if (at == NULL || seq == NULL) {
        nvl_report("out of memory ordering a step of %zu calls", total);
        nvl_runtime_abort(1);
    }
    size_t n = 0;
    for (int r = 0; r < x->ranks; r++) {
        size_t calls = (size_t)x->v[HD_N + 2 * (r / x->tp)], next = 0;
        size_t counts[NVL_STEP_END + 1] = {0};
        at[r] = n;
        for (size_t j = 0; j < x->e->rec.cap_own; j++) {
            const int64_t *o = own_slot(x, r, j);
            if (o[OW_KIND] < NVL_STEP_COLL || o[OW_KIND] > NVL_STEP_END)
                break;
            size_t pos = (size_t)o[OW_POS];
            for (; next < pos && next < calls; next++)
                seq[n++] = (seq_ev_t){NVL_STEP_COLL, next, -1};
            nvl_step_kind_t k = (nvl_step_kind_t)o[OW_KIND];
            size_t call = k == NVL_STEP_COLL ? pos : counts[k]++;
            if (k == NVL_STEP_COLL)
                next = pos + 1;
            seq[n++] = (seq_ev_t){k, call, (long)j};
        }
        for (; next < calls; next++)
            seq[n++] = (seq_ev_t){NVL_STEP_COLL, next, -1};
    }
    at[x->ranks] = n;
    *at_out = at;
    return seq;
}

/* The first call that is wrong or differs: stage k's collective *call_out
 * (*link_out false), or link k -> k + 1 of TP rank *t_out's transfer
 * *call_out; false when there is none. */
static bool first_bad(const xchg_t *x, const seq_ev_t *seq, const size_t *at,
                      int *k_out, int *t_out, size_t *call_out,
                      bool *link_out)
{
    for (int k = 0; k < x->stages; k++) {
        size_t most = (size_t)x->v[HD_N + 2 * k],
               least = (size_t)-x->v[HD_N + 2 * k + 1], i = 0;
        for (; i < least && i < x->e->rec.cap[k]; i++) {
            const int64_t *s = stage_slot(x, k, i);
            if (s[SL_ERR] || s[SL_SIG] != -s[SL_NEG_SIG])
                break;
        }
        if (i < least || least != most) {
            *k_out = k;
            *call_out = i;
            *link_out = false;
            return true;
        }
    }
    for (int k = 0; k + 1 < x->stages; k++)
        for (int t = 0; t < x->tp; t++) {
            int s = k * x->tp + t, r = s + x->tp;
            const seq_ev_t *a = seq + at[s], *b = seq + at[r];
            size_t na = at[s + 1] - at[s], nb = at[r + 1] - at[r];
            size_t i = 0, j = 0, n = 0;
            bool bad = false;
            for (;; n++) {
                while (i < na && a[i].kind != NVL_STEP_SEND)
                    i++;
                while (j < nb && b[j].kind != NVL_STEP_RECV)
                    j++;
                if (i == na || j == nb) {
                    bad = i != na || j != nb;
                    break;
                }
                const int64_t *p = own_slot(x, s, (size_t)a[i++].slot),
                              *q = own_slot(x, r, (size_t)b[j++].slot);
                if (p[OW_ERR] || q[OW_ERR] || p[OW_SIG] != q[OW_SIG]) {
                    bad = true;
                    break;
                }
            }
            if (bad) {
                *k_out = k;
                *t_out = t;
                *call_out = n;
                *link_out = true;
                return true;
            }
        }
    return false;
}

/* An entry max(x + a, b); false when x + a leaves the clock's range (the
 * per-call agreement's saturation then applies). */
static bool entry_at(int64_t x, int64_t a, int64_t b, int64_t *out)
{
    if (a == INT64_MIN) {
        *out = b;
        return b != INT64_MIN;
    }
    if (a > NVL_PS_MAX_CLOCK - x)
        return false;
    *out = x + a > b ? x + a : b;
    return true;
}

/* The play-through's state: each rank's x (the end of its last call),
 * place in its order, passes ended and entry held at a stage collective
 * (came_r: arrived), each stage's members arrived there; this rank's own
 * entry of its stage's next collective. */
typedef struct {
    const xchg_t *x;
    const seq_ev_t *seq;
    const size_t *at;
    int64_t *clk, *in, *ends_ps, *mine_ps;
    size_t *p, *m;
    int *came;
    bool *came_r;
    int passes;
    int64_t mine_in;
    bool progress;
} play_t;

enum { PLAY_RANGE, PLAY_ON, PLAY_WAIT };

/* Rank r's entry of ev: from its own numbers, or its stage's. */
static bool play_entry(const play_t *s, int r, const seq_ev_t *ev,
                       int64_t *out)
{
    const int64_t *o = ev->slot >= 0 ? own_slot(s->x, r, (size_t)ev->slot)
                                     : NULL;
    const int64_t *st = o == NULL ? stage_slot(s->x, r / s->x->tp, ev->call)
                                  : NULL;
    return entry_at(s->clk[r], o != NULL ? o[OW_A] : st[SL_A],
                    o != NULL ? o[OW_B] : st[SL_B], out);
}

/* Rank r at a pass's end. */
static int play_end(play_t *s, int r, const seq_ev_t *ev)
{
    int64_t v;
    if (!play_entry(s, r, ev, &v))
        return PLAY_RANGE;
    if ((int)s->m[r] < s->passes) {
        int64_t *end = &s->ends_ps[(r / s->x->tp) * s->passes + (int)s->m[r]];
        *end = v > *end ? v : *end;
        if (r == s->x->me)
            s->mine_ps[s->m[r]] = v;
    }
    s->m[r]++;
    s->p[r]++;
    s->progress = true;
    return PLAY_ON;
}

/* Rank r at a stage collective: arrives (its entry held; this rank's own
 * entry from its own a and b where the stage's maxima stood for them),
 * and once its stage has, the call starts at the latest entry. */
static int play_coll(play_t *s, int r, const seq_ev_t *ev)
{
    const xchg_t *x = s->x;
    int T = x->tp, k = r / T;
    if (!s->came_r[r]) {
        if (!play_entry(s, r, ev, &s->in[r]))
            return PLAY_RANGE;
        s->came_r[r] = true;
        s->came[k]++;
        s->progress = true;
        nvl_defer_view_t d;
        if (r == x->me && ev->slot < 0) {
            nvl_comm_deferred_get(x->e->tp, ev->call, &d);
            if (!entry_at(s->clk[r], d.a_ps, d.b_ps, &s->mine_in))
                return PLAY_RANGE;
        } else if (r == x->me) {
            s->mine_in = s->in[r];
        }
    }
    if (s->came[k] < T)
        return PLAY_WAIT;
    int64_t start = INT64_MIN, dur = stage_slot(x, k, ev->call)[SL_T];
    for (int q = k * T; q < k * T + T; q++)
        start = s->in[q] > start ? s->in[q] : start;
    if (x->me / T == k)
        nvl_comm_defer_resolve(x->e->tp, ev->call, s->mine_in, start, dur);
    for (int q = k * T; q < k * T + T; q++) {
        s->clk[q] = start + dur;
        s->came_r[q] = false;
        s->p[q]++;
    }
    s->came[k] = 0;
    return PLAY_ON;
}

/* Rank r at a transfer, met once its partner is at the matching one:
 * the later entry, the longer time, for both. */
static int play_xfer(play_t *s, int r, const seq_ev_t *ev)
{
    const xchg_t *x = s->x;
    bool recv = ev->kind == NVL_STEP_RECV;
    int q = recv ? r - x->tp : r + x->tp;
    if (q < 0 || q >= x->ranks || s->p[q] >= s->at[q + 1] - s->at[q])
        return PLAY_WAIT;
    const seq_ev_t *eq = s->seq + s->at[q] + s->p[q];
    if (eq->kind != (recv ? NVL_STEP_SEND : NVL_STEP_RECV) ||
        eq->call != ev->call)
        return PLAY_WAIT;
    int64_t v, vq;
    if (!play_entry(s, r, ev, &v) || !play_entry(s, q, eq, &vq))
        return PLAY_RANGE;
    int64_t tr = own_slot(x, r, (size_t)ev->slot)[OW_T],
            tq = own_slot(x, q, (size_t)eq->slot)[OW_T];
    int64_t start = v > vq ? v : vq, dur = tr > tq ? tr : tq;
    if (r == x->me || q == x->me) {
        bool mine_r = r == x->me;
        nvl_comm_defer_resolve(ev_comm(x->e, mine_r ? ev->kind : eq->kind),
                               ev->call, mine_r ? v : vq, start, dur);
    }
    s->clk[r] = s->clk[q] = start + dur;
    s->p[r]++;
    s->p[q]++;
    s->progress = true;
    return PLAY_ON;
}

/* Every rank's calls played through in order (file comment); this rank's
 * outcomes resolved on its communicators, its passes' ends into
 * mine_ps, each stage's latest into ends_ps [stages x passes].  Returns
 * 1 when done, 0 when an entry leaves the clock's range, -1 when the
 * orders do not meet (an internal error). */
static int solve(const xchg_t *x, const seq_ev_t *seq, const size_t *at,
                 int64_t *ends_ps, int passes, int64_t *mine_ps)
{
    size_t R = (size_t)x->ranks;
    play_t s = {.x = x, .seq = seq, .at = at, .ends_ps = ends_ps,
                .mine_ps = mine_ps, .passes = passes, .progress = true,
                .clk = calloc(R, sizeof(int64_t)),
                .in = calloc(R, sizeof(int64_t)),
                .p = calloc(R, sizeof(size_t)), .m = calloc(R, sizeof(size_t)),
                .came = calloc((size_t)x->stages, sizeof(int)),
                .came_r = calloc(R, sizeof(bool))};
    if (!s.clk || !s.in || !s.p || !s.m || !s.came || !s.came_r) {
        nvl_report("out of memory agreeing a step of %zu ranks", R);
        nvl_runtime_abort(1);
    }
    int res = PLAY_ON;
    while (s.progress && res != PLAY_RANGE) {
        s.progress = false;
        for (size_t r = 0; r < R && res != PLAY_RANGE; r++)
            for (res = PLAY_ON; res == PLAY_ON && s.p[r] < at[r + 1] - at[r];) {
                const seq_ev_t *ev = seq + at[r] + s.p[r];
                res = ev->kind == NVL_STEP_END    ? play_end(&s, (int)r, ev)
                      : ev->kind == NVL_STEP_COLL ? play_coll(&s, (int)r, ev)
                                                  : play_xfer(&s, (int)r, ev);
            }
    }
    int result = res == PLAY_RANGE ? 0 : 1;
    for (size_t r = 0; r < R && result == 1; r++)
        if (s.p[r] != at[r + 1] - at[r])
            result = -1;
    free(s.clk);
    free(s.in);
    free(s.p);
    free(s.m);
    free(s.came);
    free(s.came_r);
    return result;
}

/* Collective over e->job, the error path: the members of the first bad
 * call have the per-call agreement report it, every rank fails. */
static nvl_status_t report_bad(const xchg_t *x, const seq_ev_t *seq,
                               const size_t *at)
{
    nvl_engine_t *e = x->e;
    int k = 0, t = 0;
    size_t call = 0;
    bool link = false;
    nvl_status_t st = NVL_OK;
    if (!first_bad(x, seq, at, &k, &t, &call, &link)) {
        nvl_report("internal error: the pipeline's recorded step does not "
                   "resolve (rank %d)", x->me);
        st = NVL_ERR_INVALID;
    } else if (!link && e->stage == k) {
        st = nvl_comm_defer_report(e->tp, call);
    } else if (link && x->me == k * x->tp + t) {
        st = nvl_comm_defer_report(e->link_next, call);
    } else if (link && x->me == (k + 1) * x->tp + t) {
        st = nvl_comm_defer_report(e->link_prev, call);
    }
    drop(e);
    return nvl_runtime_capture_end_on(nvl_comm_mpi(e->job), st);
}

/* Whether the exchange outgrew the rooms: grows them (the same on every
 * rank). */
static bool grow(xchg_t *x)
{
    bool more = false;
    for (int k = 0; k < x->stages; k++)
        if ((size_t)x->v[HD_N + 2 * k] > x->e->rec.cap[k]) {
            x->e->rec.cap[k] = (size_t)x->v[HD_N + 2 * k];
            more = true;
        }
    if ((size_t)x->v[HD_OWN] > x->e->rec.cap_own) {
        x->e->rec.cap_own = (size_t)x->v[HD_OWN];
        more = true;
    }
    return more;
}

/* The per-call fallback's ends: each stage's latest end of each pass,
 * from the replay's clocks (one more allreduce). */
static void replayed_ends(nvl_engine_t *e, int64_t *ends_ps, int passes)
{
    int n = e->stages * passes;
    for (int i = 0; i < n; i++)
        ends_ps[i] = INT64_MIN;
    for (int m = 0; m < passes && (size_t)m < e->rec.n_pass; m++)
        ends_ps[e->stage * passes + m] = e->rec.pass[m].end_ps;
    MPI_Allreduce(MPI_IN_PLACE, ends_ps, n, MPI_INT64_T, MPI_MAX,
                  nvl_comm_mpi(e->job));
}

nvl_status_t nvl_engine_pipe_settle_step(nvl_engine_t *e, nvl_status_t st,
                                         int64_t *ends_ps, int passes)
{
    MPI_Comm job = nvl_comm_mpi(e->job);
    xchg_t x = {.e = e, .ranks = nvl_comm_size(e->job),
                .tp = nvl_comm_size(e->tp), .stages = e->stages,
                .me = nvl_comm_rank(e->job)};
    bool again = true;
    for (int round = 0; again; round++) {
        layout(&x);
        pack(&x, st);
        MPI_Allreduce(MPI_IN_PLACE, x.v, (int)x.n, MPI_INT64_T, MPI_MAX, job);
        again = x.v[HD_FAIL] == -(int64_t)x.ranks && grow(&x) && round == 0;
    }
    int first = (int)-x.v[HD_FAIL];
    bool printed = x.v[HD_PRINTED] > 0;
    if (first < x.ranks) { /* a rank's recording failed */
        free(x.v);
        drop(e);
        return nvl_runtime_capture_end_agreed(job, st, first, printed);
    }
    size_t *at = NULL;
    seq_ev_t *seq = orders(&x, &at);
    int64_t *mine = malloc(((size_t)passes + 1) * sizeof *mine);
    if (mine == NULL) {
        nvl_report("out of memory for %d passes", passes);
        nvl_runtime_abort(1);
    }
    for (int i = 0; i < e->stages * passes; i++)
        ends_ps[i] = INT64_MIN;
    for (int i = 0; i < passes; i++)
        mine[i] = INT64_MIN;
    int k = 0, t = 0, solved = -1;
    size_t call = 0;
    bool link = false;
    if (!first_bad(&x, seq, at, &k, &t, &call, &link))
        solved = x.v[HD_INEXACT] ? 0 : solve(&x, seq, at, ends_ps, passes,
                                             mine);
    if (solved < 0) {
        st = report_bad(&x, seq, at);
    } else {
        /* agreed: the capture ends here (nothing failed), so that an
         * internal error of the replay is printed before the job ends */
        st = nvl_runtime_capture_end_agreed(job, NVL_OK, x.ranks, printed);
        nvl_comm_t *c[3] = {e->tp, e->link_prev, e->link_next};
        for (int i = 0; i < 3; i++)
            if (c[i] != NULL)
                nvl_comm_defer_close(c[i], solved == 0);
        /* the replay cannot fail (a call agreed here cannot differ
         * there: nvl_comm_settled_call ends the job) */
        if (nvl_engine_replay(e) != NVL_OK)
            nvl_runtime_abort(1);
        if (solved == 0)
            replayed_ends(e, ends_ps, passes);
        for (int i = 0; i < passes && solved == 1; i++)
            if ((size_t)i < e->rec.n_pass &&
                mine[i] != e->rec.pass[i].end_ps) {
                nvl_report("internal error: pass %d of a recorded step "
                           "ended at %lld ps, agreed %lld ps", i,
                           (long long)e->rec.pass[i].end_ps,
                           (long long)mine[i]);
                nvl_runtime_abort(1);
            }
    }
    free(mine);
    free(seq);
    free(at);
    free(x.v);
    return st;
}
