/* Deferred agreement (timing mode): a member records its calls instead of
 * agreeing on each, and the members agree on a whole batch at once.
 *
 * The per-call agreement (agree.c) sets call k's start to the latest entry
 * clock of the members, S_k = max_r E_k^r, its duration to the largest
 * member's, T_k = max_r t_k^r, and every member's clock to
 * X_k = S_k + T_k.  Between two calls a member's clock moves by its own
 * work: durations added and waits for times of its own (a kernel launch),
 * so its entry is E_k^r = max(X_{k-1} + a_k^r, b_k^r) for numbers a, b it
 * knows without the others (nvl_comm_defer_entry; b from its own waits,
 * NVL_DEFER_NO_BOUND without).  Then
 *
 *   S_k = max(X_{k-1} + max_r a_k^r, max_r b_k^r),
 *
 * so one allreduce (max) of every call's [a, b, t, signature, -signature,
 * error] gives every member all it needs, and the starts follow in order
 * from X_0 = 0 (the first call's a is its entry itself): integer
 * picoseconds, the same sums as the per-call agreement's, the same bits.
 *
 * A call that failed its checks on some member, or whose signature
 * differs, is found in the same exchange; the members then run the
 * per-call agreement on that call alone (all of them reach it), which
 * reports it exactly as it always has.  Members that recorded different
 * numbers of calls are reported at the first call one of them lacks. */
#include <stdlib.h>
#include <string.h>

#include "coll_impl.h"
#include "nvlemu/runtime.h"

/* A member's entry max(x + a, b), x the previous call's end; over the
 * exchanged maxima, the call's start. */
static int64_t entry_of(int64_t x, int64_t a_ps, int64_t b_ps)
{
    return x + a_ps > b_ps ? x + a_ps : b_ps;
}

/* The exchanged numbers of one call. */
enum { DV_A, DV_B, DV_T, DV_SIG, DV_NEG_SIG, DV_ERR, DV_N };

/* The exchange's head: the members' call counts (max and, negated, min),
 * whether any stated an entry inexactly, the caller's value
 * (nvl_comm_defer_ride) and the end's a and b; the calls follow. */
enum { DH_N, DH_NEG_N, DH_INEXACT, DH_RIDE, DH_END_A, DH_END_B, DH_N_ALL };

nvl_status_t nvl_comm_defer(nvl_comm_t *c)
{
    if (c->mode != NVL_MODE_TIMING) {
        nvl_report("internal error: deferred agreement in data mode");
        return NVL_ERR_INVALID;
    }
    c->defer = true;
    c->defer_exact = true;
    c->defer_per_call = false;
    c->n_dcalls = 0;
    c->settled_next = 0;
    c->defer_fail = -1;
    c->next_a_ps = c->clock->now_ps;
    c->next_b_ps = NVL_DEFER_NO_BOUND;
    c->ride = INT64_MIN;
    return NVL_OK;
}

void nvl_comm_defer_ride(nvl_comm_t *c, int64_t value) { c->ride = value; }

int64_t nvl_comm_settled_ride(const nvl_comm_t *c) { return c->ride; }

bool nvl_comm_deferring(const nvl_comm_t *c) { return c->defer; }

void nvl_comm_defer_entry(nvl_comm_t *c, int64_t a_ps, int64_t b_ps,
                          bool exact)
{
    c->next_a_ps = a_ps;
    c->next_b_ps = b_ps;
    if (!exact)
        c->defer_exact = false;
}

size_t nvl_comm_deferred_calls(const nvl_comm_t *c) { return c->n_dcalls; }

nvl_status_t nvl_defer_record(const nvl_coll_call_t *call, bool ok,
                              const char *what, const char *why,
                              const nvl_coll_info_t *info,
                              nvl_coll_info_t *info_out)
{
    nvl_comm_t *c = call->comm;
    if (c->n_dcalls == c->cap_dcalls) {
        size_t cap = c->cap_dcalls ? 2 * c->cap_dcalls : 256;
        nvl_defer_call_t *p = realloc(c->dcalls, cap * sizeof *p);
        if (p == NULL) { /* the peers would wait at the settlement */
            nvl_report("out of memory recording %zu calls", cap);
            nvl_runtime_abort(1);
        }
        c->dcalls = p;
        c->cap_dcalls = cap;
    }
    nvl_defer_call_t *d = &c->dcalls[c->n_dcalls];
    *d = (nvl_defer_call_t){.call = *call,
                            .signature = nvl_coll_signature(call),
                            .ok = ok, .a_ps = c->next_a_ps,
                            .b_ps = c->next_b_ps, .info = *info};
    d->call.send = NULL;
    d->call.recv = NULL;
    if (!ok && c->defer_fail < 0) {
        c->defer_fail = (long)c->n_dcalls;
        snprintf(c->defer_what, sizeof c->defer_what, "%s", what);
        snprintf(c->defer_why, sizeof c->defer_why, "%s", why);
    }
    c->n_dcalls++;
    if (info_out != NULL) {
        *info_out = *info;
        info_out->start_ps = -1;
    }
    return NVL_OK;
}

/* Call k (or, k == n_dcalls, the end of this member's batch) agreed alone
 * by the per-call agreement, which reports what is wrong with it. */
static nvl_status_t report_call(nvl_comm_t *c, size_t k)
{
    nvl_coll_call_t end = {.comm = c, .coll = NVL_COLL_COUNT + 1};
    const nvl_defer_call_t *d = k < c->n_dcalls ? &c->dcalls[k] : NULL;
    const nvl_coll_call_t *call = d != NULL ? &d->call : &end;
    bool mine = c->defer_fail == (long)k;
    nvl_agree_in_t in = {.signature = nvl_coll_signature(call),
                         .ok = d == NULL || d->ok,
                         .what = mine ? c->defer_what : "",
                         .why = mine ? c->defer_why : ""};
    nvl_agree_out_t agreed;
    nvl_status_t st = nvl_coll_agree(c, &in, &agreed);
    if (st == NVL_ERR_MISMATCH)
        return nvl_coll_report_mismatch(c, call);
    if (st == NVL_OK) { /* the exchange saw a difference this one did not */
        nvl_report("internal error: call %zu of a deferred batch agrees "
                   "alone", k);
        return NVL_ERR_MISMATCH;
    }
    return st;
}

/* Call k's numbers into x; INT64_MIN (neutral to max) past this member's
 * calls. */
static void put_call(const nvl_comm_t *c, size_t k, int64_t *x)
{
    if (k >= c->n_dcalls) {
        for (int i = 0; i < DV_N; i++)
            x[i] = INT64_MIN;
        return;
    }
    const nvl_defer_call_t *d = &c->dcalls[k];
    x[DV_A] = d->a_ps;
    x[DV_B] = d->b_ps;
    x[DV_T] = d->info.time_ps;
    x[DV_SIG] = d->signature;
    x[DV_NEG_SIG] = -d->signature;
    x[DV_ERR] = !d->ok;
}

nvl_status_t nvl_comm_settle(nvl_comm_t *c, int64_t *end_out)
{
    c->defer = false;
    c->settled_next = 0;
    /* one allreduce of the head and of as many calls as the last batch
     * agreed (the same number on every member: a pass repeats its calls),
     * a second one only for the calls beyond them */
    size_t g = c->settle_guess;
    size_t cap = g > c->n_dcalls ? g : c->n_dcalls;
    int64_t *v = malloc((DH_N_ALL + cap * DV_N) * sizeof *v);
    if (v == NULL) {
        nvl_report("out of memory settling %zu calls", cap);
        nvl_runtime_abort(1);
    }
    v[DH_N] = (int64_t)c->n_dcalls;
    v[DH_NEG_N] = -(int64_t)c->n_dcalls;
    v[DH_INEXACT] = !c->defer_exact;
    v[DH_RIDE] = c->ride;
    v[DH_END_A] = end_out != NULL ? c->next_a_ps : INT64_MIN;
    v[DH_END_B] = end_out != NULL ? c->next_b_ps : INT64_MIN;
    int64_t *calls = v + DH_N_ALL;
    for (size_t k = 0; k < g; k++)
        put_call(c, k, calls + DV_N * k);
    MPI_Allreduce(MPI_IN_PLACE, v, (int)(DH_N_ALL + g * DV_N), MPI_INT64_T,
                  MPI_MAX, c->mpi);
    size_t m = (size_t)-v[DH_NEG_N]; /* calls every member recorded */
    c->settle_guess = (size_t)v[DH_N];
    c->defer_per_call = v[DH_INEXACT] != 0;
    c->ride = v[DH_RIDE];
    if (m > g) {
        for (size_t k = g; k < m; k++)
            put_call(c, k, calls + DV_N * k);
        MPI_Allreduce(MPI_IN_PLACE, calls + DV_N * g, (int)((m - g) * DV_N),
                      MPI_INT64_T, MPI_MAX, c->mpi);
    }
    nvl_status_t st = NVL_OK;
    int64_t x = 0; /* the previous call's end */
    for (size_t k = 0; k < m && st == NVL_OK; k++) {
        const int64_t *y = calls + DV_N * k;
        if (y[DV_ERR] || y[DV_SIG] != -y[DV_NEG_SIG]) {
            st = report_call(c, k);
            break;
        }
        if (c->defer_per_call)
            continue;
        /* beyond the clock's range the per-call agreement's saturation
         * rules apply: replay call by call (the same on every member) */
        if (y[DV_A] > NVL_PS_MAX_CLOCK - x) {
            c->defer_per_call = true;
            continue;
        }
        int64_t start = entry_of(x, y[DV_A], y[DV_B]);
        if (k < c->n_dcalls)
            c->dcalls[k].entry_ps = entry_of(x, c->dcalls[k].a_ps,
                                             c->dcalls[k].b_ps);
        c->dcalls[k].info.start_ps = start;
        c->dcalls[k].info.time_ps = y[DV_T];
        x = start + y[DV_T];
    }
    if (end_out != NULL)
        *end_out = c->defer_per_call || v[DH_END_A] > NVL_PS_MAX_CLOCK - x
                       ? -1
                       : entry_of(x, v[DH_END_A], v[DH_END_B]);
    bool counts_differ = v[DH_N] != (int64_t)m;
    free(v);
    if (st == NVL_OK && counts_differ)
        st = report_call(c, m);
    if (st != NVL_OK)
        c->n_dcalls = 0;
    return st;
}

nvl_status_t nvl_comm_settled_call(nvl_comm_t *c, size_t k,
                                   nvl_coll_info_t *info_out)
{
    if (k != c->settled_next || k >= c->n_dcalls) {
        nvl_report("internal error: settled call %zu asked, %zu next of %zu",
                   k, c->settled_next, c->n_dcalls);
        nvl_runtime_abort(1);
    }
    nvl_defer_call_t *d = &c->dcalls[k];
    int64_t entry = c->clock->now_ps;
    if (c->defer_per_call) {
        nvl_agree_in_t in = {.signature = d->signature, .ok = true,
                             .what = "", .why = "",
                             .time_ps = d->info.time_ps};
        nvl_agree_out_t agreed;
        nvl_status_t st = nvl_coll_agree(c, &in, &agreed);
        if (st != NVL_OK) /* agreed at the settlement: cannot differ now */
            nvl_runtime_abort(1);
        d->info.start_ps = agreed.start_ps;
        d->info.time_ps = agreed.time_ps;
    } else {
        int64_t mine = d->entry_ps;
        if (mine != entry) {
            nvl_report("internal error: call %zu of a deferred batch "
                       "entered at %lld ps, stated %lld ps",
                       k, (long long)entry, (long long)mine);
            nvl_runtime_abort(1);
        }
    }
    c->settled_next = k + 1;
    c->clock->now_ps = d->info.start_ps + d->info.time_ps;
    if (k + 1 == c->n_dcalls)
        c->n_dcalls = 0;
    *info_out = d->info;
    return NVL_OK;
}

void nvl_comm_deferred_get(const nvl_comm_t *c, size_t k,
                           nvl_defer_view_t *out)
{
    const nvl_defer_call_t *d = &c->dcalls[k];
    *out = (nvl_defer_view_t){.a_ps = d->a_ps, .b_ps = d->b_ps,
                              .time_ps = d->info.time_ps,
                              .signature = d->signature, .ok = d->ok};
}

void nvl_comm_defer_resolve(nvl_comm_t *c, size_t k, int64_t entry_ps,
                            int64_t start_ps, int64_t time_ps)
{
    nvl_defer_call_t *d = &c->dcalls[k];
    d->entry_ps = entry_ps;
    d->info.start_ps = start_ps;
    d->info.time_ps = time_ps;
}

void nvl_comm_defer_close(nvl_comm_t *c, bool per_call)
{
    c->defer = false;
    c->settled_next = 0;
    c->defer_per_call = per_call;
}

nvl_status_t nvl_comm_defer_report(nvl_comm_t *c, size_t k)
{
    nvl_comm_defer_close(c, false);
    nvl_status_t st = report_call(c, k);
    c->n_dcalls = 0;
    return st;
}

void nvl_comm_defer_drop(nvl_comm_t *c)
{
    nvl_comm_defer_close(c, false);
    c->n_dcalls = 0;
}
