/* The results across ranks: the outcomes (one reduction), each rank's
 * replica statistics and step times to rank 0's pools (one gather), and
 * the replica leaders' step records for a trace (one gather). */
#include <stdlib.h>
#include <string.h>

#include "serving_impl.h"

enum { O_ARRIVAL, O_SCHED, O_FIRST, O_DONE, O_CACHED, O_PREEMPT, O_REPLICA,
       O_FIELDS };

static void pack_outcomes(const nvl_serve_outcome_t *out, const bool *mine,
                          size_t n, int64_t *v)
{
    for (size_t i = 0; i < n; i++) {
        int64_t *f = v + i * O_FIELDS;
        const nvl_serve_outcome_t *o = &out[i];
        if (!mine[i]) {
            for (int j = 0; j < O_FIELDS; j++)
                f[j] = INT64_MIN;
            continue;
        }
        f[O_ARRIVAL] = o->arrival_ps;
        f[O_SCHED] = o->scheduled_ps;
        f[O_FIRST] = o->first_token_ps;
        f[O_DONE] = o->done_ps;
        f[O_CACHED] = o->cached_tokens;
        f[O_PREEMPT] = o->preemptions;
        f[O_REPLICA] = o->replica;
    }
}

static void unpack_outcomes(const int64_t *all, size_t n,
                            nvl_serve_outcome_t *out)
{
    for (size_t i = 0; i < n; i++) {
        const int64_t *f = all + i * O_FIELDS;
        if (f[O_ARRIVAL] == INT64_MIN)
            continue; /* nobody served it in this phase */
        nvl_serve_outcome_t *o = &out[i];
        o->arrival_ps = f[O_ARRIVAL];
        o->scheduled_ps = f[O_SCHED];
        o->first_token_ps = f[O_FIRST];
        o->done_ps = f[O_DONE];
        o->cached_tokens = (uint32_t)f[O_CACHED];
        o->preemptions = (uint32_t)f[O_PREEMPT];
        o->replica = (uint32_t)f[O_REPLICA];
        o->done = true;
    }
}

void nvl_serving_gather_outcomes(nvl_serve_outcome_t *out, const bool *mine,
                                 size_t n, int root)
{
    int64_t *v = malloc((n * O_FIELDS + 1) * sizeof *v);
    int64_t *all = malloc((n * O_FIELDS + 1) * sizeof *all);
    if (v == NULL || all == NULL) {
        nvl_report("out of memory gathering %zu outcomes", n);
        nvl_runtime_abort(1);
    }
    pack_outcomes(out, mine, n, v);
    int count = (int)(n * O_FIELDS);
    if (root < 0)
        MPI_Allreduce(v, all, count, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    else
        MPI_Reduce(v, all, count, MPI_INT64_T, MPI_MAX, root,
                   MPI_COMM_WORLD);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (root < 0 || rank == root)
        unpack_outcomes(all, n, out);
    free(v);
    free(all);
}

/* The replica statistics and part times every rank sends rank 0. */
enum { S_BUSY, S_END, S_STEPS, S_TOKENS, S_PREFILL, S_DECODE, S_SEQS,
       S_PREEMPT, S_HITS, S_HIT_TOKENS, S_PEAK, S_BLOCKS, S_H2D, S_D2H,
       S_KV_GB, S_KV_HOST, S_PARTS, S_FIELDS = S_PARTS + NVL_PART_COUNT };

static void pack_stats(const nvl_serving_job_t *j, double *f)
{
    const nvl_serve_replica_stats_t *s = &j->stats;
    f[S_BUSY] = (double)s->busy_ps;
    f[S_END] = (double)s->end_ps;
    f[S_STEPS] = (double)s->steps;
    f[S_TOKENS] = (double)s->tokens;
    f[S_PREFILL] = (double)s->prefill_tokens;
    f[S_DECODE] = (double)s->decode_tokens;
    f[S_SEQS] = (double)s->seqs;
    f[S_PREEMPT] = (double)s->preemptions;
    f[S_HITS] = (double)s->prefix_hits;
    f[S_HIT_TOKENS] = (double)s->prefix_hit_tokens;
    f[S_PEAK] = (double)s->peak_blocks;
    f[S_BLOCKS] = (double)s->kv_blocks;
    f[S_H2D] = s->h2d_bytes;
    f[S_D2H] = s->d2h_bytes;
    f[S_KV_GB] = (j->room.positions * j->room.kv_position_bytes +
                  j->room.window_bytes) / 1e9;
    f[S_KV_HOST] = j->room.kv_host_share;
    for (int i = 0; i < NVL_PART_COUNT; i++)
        f[S_PARTS + i] = (double)j->sc.part_ps[i];
}

/* A replica leader's fields into its replica's statistics and the pool. */
static void unpack_replica(const double *f, nvl_serving_pool_t *pl,
                           nvl_serve_replica_stats_t *s)
{
    s->busy_ps = (int64_t)f[S_BUSY];
    s->end_ps = (int64_t)f[S_END];
    s->steps = (uint64_t)f[S_STEPS];
    s->tokens = (uint64_t)f[S_TOKENS];
    s->prefill_tokens = (uint64_t)f[S_PREFILL];
    s->decode_tokens = (uint64_t)f[S_DECODE];
    s->seqs = (uint64_t)f[S_SEQS];
    s->preemptions = (uint64_t)f[S_PREEMPT];
    s->prefix_hits = (uint64_t)f[S_HITS];
    s->prefix_hit_tokens = (uint64_t)f[S_HIT_TOKENS];
    s->peak_blocks = (uint64_t)f[S_PEAK];
    s->kv_blocks = (uint64_t)f[S_BLOCKS];
    s->h2d_bytes = f[S_H2D];
    s->d2h_bytes = f[S_D2H];
    pl->kv_blocks = f[S_BLOCKS];
    pl->kv_gb_per_gpu = f[S_KV_GB];
    pl->kv_host_share = f[S_KV_HOST];
}

static void unpack_pools(const double *all, const nvl_serving_layout_t *L,
                         nvl_serving_pool_t *pools)
{
    for (int p = 0; p < L->n_pools; p++) {
        nvl_serving_pool_t *pl = &pools[p];
        *pl = L->pools[p];
        pl->stats = calloc((size_t)pl->replicas, sizeof *pl->stats);
        if (pl->stats == NULL) {
            nvl_report("out of memory for the report");
            nvl_runtime_abort(1);
        }
        for (int r = pl->first_rank; r < pl->first_rank + pl->gpus; r++) {
            const double *f = all + (size_t)r * S_FIELDS;
            for (int i = 0; i < NVL_PART_COUNT; i++)
                pl->part_ps[i] += (int64_t)(f[S_PARTS + i] / pl->gpus);
            int per = pl->tp * pl->pp; /* a replica's ranks */
            if ((r - pl->first_rank) % per == 0)
                unpack_replica(f, pl,
                               &pl->stats[(r - pl->first_rank) / per]);
        }
    }
}

void nvl_serving_gather_pools(const nvl_serving_job_t *j,
                              nvl_serving_result_t *r)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double f[S_FIELDS];
    pack_stats(j, f);
    double *all = rank == 0 ? malloc((size_t)size * sizeof f) : NULL;
    if (rank == 0 && all == NULL) {
        nvl_report("out of memory for the report");
        nvl_runtime_abort(1);
    }
    MPI_Gather(f, S_FIELDS, MPI_DOUBLE, all, S_FIELDS, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        r->n_pools = j->L.n_pools;
        unpack_pools(all, &j->L, r->pools);
    }
    free(all);
}

/* Rank 0: the replica whose leader each rank is (-1: none). */
static int *leader_replicas(const nvl_serving_layout_t *L, int size)
{
    int *leader_rep = malloc(((size_t)size + 1) * sizeof *leader_rep);
    if (leader_rep == NULL) {
        nvl_report("out of memory for the report");
        nvl_runtime_abort(1);
    }
    for (int r = 0, rep0 = 0, p = 0; p < L->n_pools; p++) {
        const nvl_serving_pool_t *pl = &L->pools[p];
        for (int k = 0; k < pl->gpus; k++, r++)
            leader_rep[r] = k % (pl->tp * pl->pp) == 0
                                ? rep0 + k / (pl->tp * pl->pp)
                                : -1;
        rep0 += pl->replicas;
    }
    return leader_rep;
}

/* Rank 0: each leader's records (counts[r] bytes at displs[r] of buf) to
 * its replica's array. */
static void split_steps(const char *buf, const int *counts,
                        const int *displs, const nvl_serving_layout_t *L,
                        int size, nvl_serving_result_t *r)
{
    int *leader_rep = leader_replicas(L, size);
    for (int k = 0; k < size; k++) {
        int rep = leader_rep[k];
        if (rep < 0 || rep >= r->n_replicas)
            continue;
        r->n_steps[rep] = (size_t)counts[k] / sizeof **r->steps;
        r->steps[rep] = malloc((size_t)counts[k] + 1);
        if (r->steps[rep] == NULL) {
            nvl_report("out of memory gathering the steps");
            nvl_runtime_abort(1);
        }
        memcpy(r->steps[rep], buf + displs[k], (size_t)counts[k]);
    }
    free(leader_rep);
}

void nvl_serving_gather_steps(const nvl_serving_job_t *j,
                              nvl_serving_result_t *r)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bool leader = j->L.rank_in_replica == 0;
    int bytes = leader ? (int)(j->n_steps * sizeof *j->steps) : 0;
    int *counts = rank == 0 ? calloc((size_t)size, sizeof *counts) : NULL;
    int *displs = rank == 0 ? calloc((size_t)size, sizeof *displs) : NULL;
    MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *buf = NULL;
    if (rank == 0) {
        size_t total = 0;
        for (int k = 0; k < size; k++) {
            displs[k] = (int)total;
            total += (size_t)counts[k];
        }
        buf = malloc(total + 1);
        if (buf == NULL) {
            nvl_report("out of memory gathering the steps");
            nvl_runtime_abort(1);
        }
    }
    MPI_Gatherv(j->steps, bytes, MPI_BYTE, buf, counts, displs, MPI_BYTE, 0,
                MPI_COMM_WORLD);
    if (rank == 0)
        split_steps(buf, counts, displs, &j->L, size, r);
    free(buf);
    free(counts);
    free(displs);
}
