/* PAT (NCCL_ALGO=PAT): NCCL's Parallel Aggregated Trees for allgather and
 * reduce-scatter with one GPU per node: ceil(log2 N) steps at doubling (or
 * halving) distances, as in Bruck's algorithm, for any N.
 *
 *   allgather: rank r holds blocks r, r+1, ..., r+m-1; it receives the next
 *   min(m, N-m) of them from rank r+m and sends its first ones to rank r-m.
 *   reduce-scatter: the reverse, halving: blocks destined d = ceil(m/2) or
 *   more ranks ahead go to rank r+d, which adds them to its own.
 *
 * NCCL enables PAT only with one GPU per node, so here only when every
 * member is in its own NVLink domain.
 * Cost (NCCL tuning.cc): T = 8us + log2(D) x net_lat / 3.5 + N x 2.8us
 *   + S / algbw, algbw = busbw x 0.75 over the NIC path. */
#include <stdlib.h>
#include <string.h>

#include "xfer.h"

static bool pat_supports(const nvl_comm_t *c, nvl_coll_t coll,
                         nvl_proto_t proto)
{
    return proto == NVL_PROTO_SIMPLE && c->size > 1 &&
           c->max_per_domain == 1 &&
           (coll == NVL_COLL_ALLGATHER || coll == NVL_COLL_REDUCESCATTER);
}

static double pat_predict(const nvl_comm_t *c, nvl_coll_t coll, size_t bytes,
                          nvl_proto_t proto, double channels)
{

    const nvl_nccl_spec_t *k = &c->topo->nccl;
    double lat = ((double)k->base_lat_ps[NVL_ALGO_PAT][proto] +
                  c->log2_domains *
                      (double)k->net_lat_ps[NVL_ALGO_PAT][proto] / 3.5 +
                  c->size * (double)k->nvlink_lat_ps[NVL_ALGO_PAT][proto]) *
                 1e-12;
    double path = c->nic_bw < c->nvlink_bw ? c->nic_bw : c->nvlink_bw;
    double busbw =
        0.75 * nvl_coll_model_bus_bw(c, coll, NVL_ALGO_PAT, proto, path, channels,
                                (double)bytes);
    return lat + (double)bytes * (c->size - 1) / c->size / busbw;
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

/* rot holds blocks in rotated order: rot block i belongs to rank r+i. */
static nvl_status_t bruck_allgather(const nvl_coll_call_t *call, char *rot,
                                    size_t block)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, r = c->rank, m = 1;
    while (m < n) {
        int k = m < n - m ? m : n - m;
        nvl_status_t st = nvl_xfer_sendrecv(
            c, rot, (size_t)k * block, mod(r - m, n), rot + (size_t)m * block,
            (size_t)k * block, mod(r + m, n), NVL_TAG_PAT_GATHER);
        if (st != NVL_OK)
            return st;
        m += k;
    }
    return NVL_OK;
}

static nvl_status_t halving_reduce_scatter(const nvl_coll_call_t *call,
                                           char *rot, size_t count)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, r = c->rank, m = n;
    size_t block = count * nvl_dtype_size(call->dtype);
    char *tmp = nvl_xfer_scratch(c, (size_t)(n / 2 + 1) * block);
    if (tmp == NULL && block > 0)
        return NVL_ERR_NOMEM;
    while (m > 1) {
        int d = (m + 1) / 2, k = m - d;
        /* my blocks [d, m) are destined d.. ranks ahead: rank r+d adds them
         * to its blocks [0, k); I get rank r-d's into mine */
        nvl_status_t st = nvl_xfer_sendrecv(
            c, rot + (size_t)d * block, (size_t)k * block, mod(r + d, n), tmp,
            (size_t)k * block, mod(r - d, n), NVL_TAG_PAT_SCATTER);
        if (st != NVL_OK)
            return st;
        nvl_xfer_reduce(call, rot, tmp, (size_t)k * count);
        m = d;
    }
    return NVL_OK;
}

static nvl_status_t pat_run(const nvl_coll_call_t *call)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, r = c->rank;
    size_t block = call->count * nvl_dtype_size(call->dtype);
    char *rot = malloc((size_t)n * block + 1);
    nvl_status_t st = NVL_ERR_NOMEM;
    if (rot == NULL)
        goto out;
    if (call->coll == NVL_COLL_ALLGATHER) {
        memcpy(rot, call->send, block);
        st = bruck_allgather(call, rot, block);
        for (int i = 0; st == NVL_OK && i < n; i++)
            memcpy((char *)call->recv + (size_t)mod(r + i, n) * block,
                   rot + (size_t)i * block, block);
    } else {
        for (int i = 0; i < n; i++)
            memcpy(rot + (size_t)i * block,
                   (const char *)call->send + (size_t)mod(r + i, n) * block,
                   block);
        st = halving_reduce_scatter(call, rot, call->count);
        if (st == NVL_OK)
            memcpy(call->recv, rot, block);
    }
out:
    if (st == NVL_ERR_NOMEM)
        nvl_report("out of memory in PAT %s", nvl_coll_name(call->coll));
    free(rot);
    return st;
}

const char nvl_coll_algo_doc_pat[] =
    "Parallel Aggregated Trees, one GPU per node: allgather, "
    "reduce-scatter (pat.c)";

const nvl_coll_algo_t nvl_coll_algo_pat = {
    .algo = NVL_ALGO_PAT,
    .supports = pat_supports,
    .predict_s = pat_predict,
    .run = pat_run,
    .enable_env = "NCCL_PAT_ENABLE",
};
