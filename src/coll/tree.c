/* Tree (NCCL_ALGO=Tree): NCCL's double binary tree, allreduce only.  The
 * buffer is split in two halves; each half is reduced up one binary tree
 * and broadcast back down it.  The second tree is the first mirrored
 * (member i sits where member N-1-i sits in the first), so a member that is
 * a leaf in one tree is inner in the other and every link carries half the
 * data in each direction.
 *
 *          0              N-1
 *        /   \           /   \
 *       1     2        N-2   N-3     reduce up, then broadcast down
 *
 * Cost (NCCL tuning.cc): T = base + 2((ppn-1) nvlink_lat + log2(D) net_lat)
 *   + S / algbw, algbw = 0.5 x busbw, busbw = C bw_ch x 0.92 x eff(proto).
 * Die view: within a domain NCCL's tree is a chain in ring order, a
 * package's dies adjacent: its path and die-link steps as ring.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xfer.h"

static bool tree_supports(const nvl_comm_t *c, nvl_coll_t coll,
                          nvl_proto_t proto)
{
    (void)c;
    (void)proto;
    return coll == NVL_COLL_ALLREDUCE;
}

/* The call's time (kernel false: the eager call, predict_s) or its
 * kernel's alone (kernel_s). */
static double tree_time_s(const nvl_comm_t *c, nvl_coll_t coll, size_t bytes,
                          nvl_proto_t proto, double channels, bool kernel)
{
    int ppn = c->max_per_domain;
    double lat = nvl_coll_model_steps_lat_s(c, NVL_ALGO_TREE, proto,
                                            2 * (ppn - 1),
                                            2 * c->log2_domains, kernel);
    double path = nvl_coll_model_path_bw(c);
    double busbw =
        0.92 * nvl_coll_model_bus_bw(c, coll, NVL_ALGO_TREE, proto, path, channels,
                                (double)bytes);
    return lat + (double)bytes / (0.5 * busbw);
}

static double tree_predict(const nvl_comm_t *c, nvl_coll_t coll, size_t bytes,
                           nvl_proto_t proto, double channels)
{
    return tree_time_s(c, coll, bytes, proto, channels, false);
}

static double tree_kernel(const nvl_comm_t *c, nvl_coll_t coll, size_t bytes,
                          nvl_proto_t proto, double channels)
{
    return tree_time_s(c, coll, bytes, proto, channels, true);
}

/* NCCL's correction of its tree bandwidth at mid sizes (tuning.cc
 * treeCorrectionFactor, NCCL 2.30 src/graph/tuning.cc:623), per protocol,
 * for nBytes of 64 B x 2^i, i = log2(nBytes / 64) < 23. */
static const float tree_correction[NVL_PROTO_COUNT][23] = {
    [NVL_PROTO_LL] = {1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .7f, .7f,
                      .7f,  .7f,  .6f,  .5f,  .4f, .4f, .5f, .6f,
                      .7f,  .8f,  .9f,  1.0f, 1.0f, 1.0f, 1.0f},
    [NVL_PROTO_LL128] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .8f,
                         .8f,  .7f,  .6f,  .6f,  .6f,  .6f, .6f, .6f,
                         .8f,  .9f,  .9f,  .9f,  .9f,  1.0f, 1.0f},
    [NVL_PROTO_SIMPLE] = {.9f, .9f, .9f, .9f, .9f, .9f, .8f, .7f,
                          .6f, .6f, .5f, .5f, .5f, .5f, .6f, .7f,
                          .8f, .7f, .7f, .8f, .9f, .9f, .9f},
};

/* NCCL's own rating of a tree allreduce (tuning.cc ncclTopoTuneModel,
 * ncclTopoGetAlgoTime): busBw = nChannels x bwIntra x .92 under nChannels
 * x perChMaxTreeBws, then LL x 1/3.8 under llMaxBws, LL128 x 7/9 (one
 * node; 120/128 across nodes) under nChannels x perChMaxTreeLL128Bws (the
 * ring's LL128 ceiling here: both 36.7 GB/s on Hopper); algBw = busBw / 2
 * x treeCorrectionFactor; latency baseLat + 2 ((N/nodes - 1) hwLat[NVLINK]
 * + log2(nodes) hwLat[NET]). */
static double tree_rating_s(const nvl_comm_t *c, nvl_coll_t coll,
                            size_t bytes, nvl_proto_t proto)
{
    (void)coll;
    const nvl_nccl_spec_t *n = &c->topo->nccl;
    double nc = nvl_coll_model_max_channels(c);
    double bus = nvl_coll_model_path_bw(c) * NVL_NVLINK_DATA_EFF * nc /
                 n->channels * 0.92;
    bus = fmin(bus, nc * n->tree_max_bw_per_channel_bytes_per_s);
    if (proto == NVL_PROTO_LL)
        bus = fmin(bus / 3.8, n->ll_max_bw_bytes_per_s);
    else if (proto == NVL_PROTO_LL128)
        bus = fmin(bus * (c->domains == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                   nc * n->ll128_max_bw_per_channel_bytes_per_s);
    int log_size = -1;
    for (size_t x = bytes >> 6; x > 0; x >>= 1)
        log_size++;
    double alg = bus * 0.5 *
                 (log_size >= 0 && log_size < 23
                      ? tree_correction[proto][log_size]
                      : 1.0);
    int ppn = c->max_per_domain;
    double lat = nvl_coll_model_nccl_lat_s(c, NVL_ALGO_TREE, proto,
                                           2 * (ppn - 1), 2 * c->log2_domains);
    return lat + (double)bytes / alg;
}

/* Reduce up and broadcast down the binary heap over positions, where
 * position q is played by member member_of(q). */
static nvl_status_t heap_allreduce(const nvl_coll_call_t *call, char *buf,
                                   size_t n_elems, int mirrored)
{
    nvl_comm_t *c = call->comm;
    int n = c->size;
    size_t esz = nvl_dtype_size(call->dtype), bytes = n_elems * esz;
    int me = mirrored ? n - 1 - c->rank : c->rank;
#define MEMBER(q) (mirrored ? n - 1 - (q) : (q))
    int kids[2] = {2 * me + 1, 2 * me + 2};
    nvl_status_t st = NVL_OK;
    if (bytes > 0) {
        char *tmp = nvl_xfer_scratch(c, bytes);
        if (tmp == NULL)
            return NVL_ERR_NOMEM;
        for (int k = 0; k < 2 && st == NVL_OK; k++) {
            if (kids[k] >= n)
                continue;
            st = nvl_xfer_sendrecv(c, NULL, 0, -1, tmp, bytes,
                                   MEMBER(kids[k]), NVL_TAG_TREE_UP + mirrored);
            if (st == NVL_OK)
                nvl_xfer_reduce(call, buf, tmp, n_elems);
        }
    }
    if (st == NVL_OK && me > 0 && bytes > 0) {
        int parent = MEMBER((me - 1) / 2);
        st = nvl_xfer_sendrecv(c, buf, bytes, parent, NULL, 0, -1,
                               NVL_TAG_TREE_UP + mirrored);
        if (st == NVL_OK)
            st = nvl_xfer_sendrecv(c, NULL, 0, -1, buf, bytes, parent,
                                   NVL_TAG_TREE_DOWN + mirrored);
    }
    for (int k = 0; k < 2 && st == NVL_OK && bytes > 0; k++)
        if (kids[k] < n)
            st = nvl_xfer_sendrecv(c, buf, bytes, MEMBER(kids[k]), NULL, 0,
                                   -1, NVL_TAG_TREE_DOWN + mirrored);
#undef MEMBER
    return st;
}

static nvl_status_t tree_run(const nvl_coll_call_t *call)
{
    size_t esz = nvl_dtype_size(call->dtype);
    if (call->recv != call->send)
        memcpy(call->recv, call->send, call->count * esz);
    size_t half = call->count / 2;
    nvl_status_t st = heap_allreduce(call, call->recv, half, 0);
    if (st == NVL_OK)
        st = heap_allreduce(call, (char *)call->recv + half * esz,
                            call->count - half, 1);
    if (st == NVL_ERR_NOMEM)
        nvl_report("out of memory in tree allreduce");
    return st;
}

const char nvl_coll_algo_doc_tree[] =
    "double binary tree, reduce up and broadcast down: allreduce (tree.c)";

/* NCCL's Tree ceiling per channel (tuning.cc perChMaxTreeBws). */
static double tree_max_bw(const nvl_nccl_spec_t *n)
{
    return n->tree_max_bw_per_channel_bytes_per_s;
}

const nvl_coll_algo_t nvl_coll_algo_tree = {
    .algo = NVL_ALGO_TREE,
    .supports = tree_supports,
    .predict_s = tree_predict,
    .kernel_s = tree_kernel,
    .run = tree_run,
    /* NCCL tuning.cc: Tree LL at 1/3.8, LL128 at 7/9 */
    .proto_eff = {[NVL_PROTO_LL] = 1.0 / 3.8, [NVL_PROTO_LL128] = 7.0 / 9.0},
    .max_bw_per_channel = tree_max_bw,
    .rating_s = tree_rating_s,
};
