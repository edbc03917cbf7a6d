/* The layout of a serving job: one pool of replicas (aggregated), or a
 * prefill and a decode pool (disaggregated); this rank's place. */
#include <stdio.h>
#include <string.h>

#include "nvlemu/serving.h"

static nvl_status_t check_disagg(const nvl_serving_layout_opts_t *o,
                                 bool closed_loop, int size)
{
    if (o->tp) {
        nvl_report("--tp is the aggregated layout's; disaggregated "
                   "pools take --prefill-tp and --decode-tp");
        return NVL_ERR_INVALID;
    }
    if (o->pp > 1) {
        nvl_report("--pp %ld with disaggregated pools is not modeled: a "
                   "pipeline's KV lives on every stage, and the transfer "
                   "from a prefill to a decode replica is timed between "
                   "tensor-parallel groups only; use --pp with the "
                   "aggregated layout (--tp)", o->pp);
        return NVL_ERR_INVALID;
    }
    if (o->prefill_gpus + o->decode_gpus != size || o->prefill_gpus < 1 ||
        o->decode_gpus < 1) {
        nvl_report("--prefill-gpus %ld + --decode-gpus %ld must be the "
                   "job's %d ranks, at least one each", o->prefill_gpus,
                   o->decode_gpus, size);
        return NVL_ERR_INVALID;
    }
    if (closed_loop) {
        nvl_report("--concurrency (a closed loop) with disaggregated "
                   "pools is not supported: give --rate or --workload");
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

static nvl_status_t plan_disagg(const nvl_serving_layout_opts_t *o,
                                bool closed_loop, int size, int rank,
                                nvl_serving_layout_t *l)
{
    nvl_status_t st = check_disagg(o, closed_loop, size);
    if (st != NVL_OK)
        return st;
    long g[2] = {o->prefill_gpus, o->decode_gpus};
    long t[2] = {o->prefill_tp ? o->prefill_tp : g[0],
                 o->decode_tp ? o->decode_tp : g[1]};
    static const char *names[2] = {"prefill", "decode"};
    const char *opt[2] = {"--prefill-tp", "--decode-tp"};
    int first = 0, rep0 = 0;
    l->n_pools = 2;
    for (int p = 0; p < 2; p++) {
        if (g[p] % t[p] != 0) {
            nvl_report("%s %ld does not divide the pool's %ld GPUs", opt[p],
                       t[p], g[p]);
            return NVL_ERR_INVALID;
        }
        l->pools[p] = (nvl_serving_pool_t){
            .name = names[p], .first_rank = first, .gpus = (int)g[p],
            .tp = (int)t[p], .pp = 1, .replicas = (int)(g[p] / t[p]),
            .system_replicas = (int)(g[p] / t[p])};
        if (o->replicas) {
            nvl_report("--replicas is the aggregated layout's");
            return NVL_ERR_INVALID;
        }
        if (rank >= first && rank < first + g[p]) {
            l->pool = p;
            l->replica_in_pool = (rank - first) / (int)t[p];
            l->replica = rep0 + l->replica_in_pool;
            l->rank_in_replica = (rank - first) % (int)t[p];
        }
        first += (int)g[p];
        rep0 += l->pools[p].replicas;
    }
    return NVL_OK;
}

static nvl_status_t plan_aggregated(const nvl_serving_layout_opts_t *o,
                                    int size, int rank,
                                    nvl_serving_layout_t *l)
{
    if (o->prefill_tp || o->decode_tp) {
        nvl_report("--prefill-tp / --decode-tp need --prefill-gpus and "
                   "--decode-gpus");
        return NVL_ERR_INVALID;
    }
    long pp = o->pp > 1 ? o->pp : 1;
    if (size % pp != 0) {
        nvl_report("--pp %ld does not divide the job's %d ranks", pp, size);
        return NVL_ERR_INVALID;
    }
    long tp = o->tp ? o->tp : size / pp, per = tp * pp;
    if (size % per != 0) {
        if (pp > 1)
            nvl_report("--tp %ld x --pp %ld (%ld ranks a replica) does "
                       "not divide the job's %d ranks", tp, pp, per, size);
        else
            nvl_report("--tp %ld does not divide the job's %d ranks", tp,
                       size);
        return NVL_ERR_INVALID;
    }
    if (o->replicas && o->replicas < size / per) {
        char stages[32] = "";
        if (pp > 1)
            snprintf(stages, sizeof stages, " x PP %ld", pp);
        nvl_report("--replicas %ld: the job's %d ranks already run %ld "
                   "replicas of TP %ld%s", o->replicas, size, size / per,
                   tp, stages);
        return NVL_ERR_INVALID;
    }
    l->n_pools = 1;
    l->pools[0] = (nvl_serving_pool_t){
        .name = "aggregated", .gpus = size, .tp = (int)tp, .pp = (int)pp,
        .replicas = size / (int)per,
        .system_replicas = o->replicas ? (int)o->replicas : size / (int)per};
    l->replica = l->replica_in_pool = rank / (int)per;
    l->rank_in_replica = rank % (int)per;
    return NVL_OK;
}

nvl_status_t nvl_serving_layout_plan(const nvl_serving_layout_opts_t *o,
                                     bool closed_loop, int size, int rank,
                                     nvl_serving_layout_t *layout_out)
{
    memset(layout_out, 0, sizeof *layout_out);
    if (o->prefill_gpus > 0 || o->decode_gpus > 0)
        return plan_disagg(o, closed_loop, size, rank, layout_out);
    return plan_aggregated(o, size, rank, layout_out);
}
