/* Ring (NCCL_ALGO=Ring): members pass blocks to the next member around a
 * ring.
 *
 *   allreduce = reduce-scatter + allgather:   2(N-1) steps
 *   r0 -> r1 -> r2 -> ... -> rN-1 -> r0        each step moves S/N per rank
 *   allgather, reduce-scatter:                 N-1 steps of S/N
 *   broadcast, reduce: a chain from / to the root, S pipelined in chunks
 *   root -> r1 -> ... -> rN-1, each channel moving S/C in chunks of one
 *   step (CHUNKSTEPS 1: Simple 512 KB, LL128 562.5 KB, LL 32 KB)
 *
 * Which protocol runs: NCCL's own rating (tuning.cc ncclTopoTuneModel and
 * ncclTopoGetAlgoTime, NCCL 2.28-2.30), lowest first (tuner.c):
 *   rating = baseLat + (nsteps - inter) hwLat[NVLINK] + inter hwLat[NET]
 *            + nBytes / algBw,  algBw = busBw x N / nsteps
 *   busBw = nChannels x bwIntra (the ring graph's, search.c: 360 GB/s
 *           on 18 Hopper links, as NCCL 2.28.9's TUNING tables print on
 *           the lent HGX H100 and H200 and the H200 pair; the path's data
 *           rate where no compcap is given), x .5 under llMaxBws (LL),
 *           x .92 under nChannels x perChMaxRingLL128Bws (LL128)
 *   nsteps = 2(N-1) allreduce, N-1 allgather/reduce-scatter, N bcast/reduce
 *   (broadcast and reduce pay one hwLat: one chain).
 * Cost (docs/collectives.md, "The ring by NCCL's own tuning"):
 *   T = kernel + base + intra_steps (nvlink_lat + hop_lat)
 *       + inter_steps (net_lat + scale-out lat) + w S / busbw
 *   w = nsteps / N; busbw from nvl_coll_model_bus_bw over the path, on the
 *   channels NCCL runs the call on (model.c): NVLink within one domain,
 *   the slower of NVLink and the NIC across domains, with the end steps'
 *   mid-size ramp.
 *   Die view: the ring puts a package's dies next to each other; the path
 *   is its slowest edge (die link or the die's NVLink share) and of the
 *   steps, floor(steps x die_edges / N) cross a die link (die_link_lat
 *   instead of hop_lat).
 *   Broadcast and reduce: the root's port is busy for S / busbw.  Simple:
 *   the channels' chunks (x = S/C per channel, c the chunk) do not move in
 *   step, so what is left after it is the last chunk crossing the other
 *   N-2 hops alone, each at one SM's peer rate (at most the path's; a
 *   channel's share of busbw where sm_peer_bw is not given); LL and
 *   LL128 carry a flag in every line and forward lines as they land:
 *   T = kernel + base + (N-1) hops (nvlink_lat + hop_lat) + S / busbw
 *       [+ (N-2) min(x, c) / min(sm_peer_bw, path), Simple]
 *   busbw: one link direction, no reduction traffic; reduce adds the
 *   receiver's reduction, 3 bytes of HBM (two reads, one write) per byte,
 *   min(busbw, hbm_bw x hbm_efficiency / 3). */
#include <stdlib.h>
#include <string.h>

#include "xfer.h"
#include "search.h"

static bool ring_supports(const nvl_comm_t *c, nvl_coll_t coll,
                          nvl_proto_t proto)
{
    (void)c;
    (void)proto;
    return coll <= NVL_COLL_ALLREDUCE;
}

/* Broadcast and reduce: the first chunk's latency crosses N-1 hops
 * (NCCL's tuning charges one, tuning.cc "waiting for proper chunk
 * modeling"); the last chunk's transfer the N-2 hops after the root's. */
static double chain_time_s(const nvl_comm_t *c, nvl_coll_t coll,
                           size_t bytes, nvl_proto_t proto, double channels,
                           bool kernel)
{
    int n = c->size, hops = n - 1;
    int inter = c->domains > 1 ? c->domains - 1 : 0;
    double lat = nvl_coll_model_steps_lat_s(c, NVL_ALGO_RING, proto,
                                            hops - inter, inter, kernel);
    double s = (double)bytes, x = s / channels;
    double chunk = (double)nvl_coll_protos[proto].chunk_bytes;
    double busbw = nvl_coll_model_bus_bw(c, coll, NVL_ALGO_RING, proto,
                                         nvl_coll_model_path_bw(c), channels,
                                         s);
    if (coll == NVL_COLL_REDUCE) {
        double hbm = nvl_topo_hbm_bw(c->topo, c->gpus[0]) *
                     c->topo->gpu.hbm_efficiency / 3.0;
        busbw = busbw < hbm ? busbw : hbm;
    }
    /* Simple: the channels do not move in step; the root's port stays
     * busy for S / busbw, then the last chunk crosses the other N-2 hops
     * alone, at one SM's peer rate.  LL, LL128: lines go on as they land */
    if (nvl_coll_protos[proto].line_flags)
        return lat + s / busbw;
    double sm = c->topo->nvlink.sm_peer_bw_bytes_per_s;
    double path = nvl_coll_model_path_bw(c);
    double hop_bw = sm <= 0 ? busbw / channels : sm < path ? sm : path;
    return lat + s / busbw + (n - 2) * (x < chunk ? x : chunk) / hop_bw;
}

/* The ring's steps per call and of them the ones between NVLink domains
 * (NCCL tuning.cc: nsteps, nInterSteps); false for broadcast and reduce
 * (a chain). */
static bool ring_steps(const nvl_comm_t *c, nvl_coll_t coll, int *nsteps,
                       int *inter)
{
    int n = c->size, d = c->domains;
    if (coll == NVL_COLL_ALLREDUCE) {
        *nsteps = 2 * (n - 1);
        *inter = d > 1 ? 2 * (d - 1) : 0;
        return true;
    }
    if (coll == NVL_COLL_ALLGATHER || coll == NVL_COLL_REDUCESCATTER) {
        *nsteps = n - 1;
        *inter = d - 1;
        return true;
    }
    *nsteps = n;
    *inter = d > 1 ? d - 1 : 0;
    return false;
}

/* NCCL's busBw of proto over all the channels the call may use: the
 * ring graph's nChannels x bwIntra (search.c) in the share of the
 * channels NCCL_MAX_NCHANNELS leaves, the protocol's share and NCCL's
 * ceilings (tuning.cc ncclTopoTuneModel). */
static double ring_nccl_bus_bw(const nvl_comm_t *c, nvl_proto_t proto)
{
    const nvl_nccl_spec_t *n = &c->topo->nccl;
    const nvl_coll_proto_t *p = &nvl_coll_protos[proto];
    double nc = nvl_coll_model_max_channels(c);
    double bw = nvl_coll_search_ring_bw(c) * nc / n->channels * p->eff;
    return p->max_bw != NULL && bw > p->max_bw(n, nc) ? p->max_bw(n, nc)
                                                      : bw;
}

double nvl_coll_ring_rating_s(const nvl_comm_t *c, nvl_coll_t coll,
                              size_t bytes, nvl_proto_t proto)
{
    int nsteps, inter;
    bool ring = ring_steps(c, coll, &nsteps, &inter);
    /* broadcast, reduce: one step's latency, a network one across domains */
    int lat_steps = ring ? nsteps : 1, lat_inter = ring ? inter : inter > 0;
    double lat = nvl_coll_model_nccl_lat_s(c, NVL_ALGO_RING, proto,
                                           lat_steps - lat_inter, lat_inter);
    return lat + (double)bytes * nsteps / c->size /
                     ring_nccl_bus_bw(c, proto);
}

/* The call's time (kernel false: the eager call as predict_s times it)
 * or its kernel's alone (kernel_s). */
static double ring_time_s(const nvl_comm_t *c, nvl_coll_t coll, size_t bytes,
                          nvl_proto_t proto, double channels, bool kernel)
{
    int nsteps, inter;
    if (!ring_steps(c, coll, &nsteps, &inter)) /* the chain's pipeline */
        return chain_time_s(c, coll, bytes, proto, channels, kernel);
    double lat = nvl_coll_model_steps_lat_s(c, NVL_ALGO_RING, proto,
                                            nsteps - inter, inter, kernel);
    double wire = (double)bytes * nsteps / c->size;
    return lat + wire / nvl_coll_model_bus_bw(c, coll, NVL_ALGO_RING, proto,
                                              nvl_coll_model_path_bw(c),
                                              channels, wire);
}

/* The eager call: its bytes move at the kernel's rate, a lone channel at
 * one SM's peer rate (nvl_coll_model_kernel_channels), as in a CUDA graph;
 * the eager latencies stay (docs/collectives.md, "When NCCL runs NVLS
 * allreduce"). */
static double ring_predict(const nvl_comm_t *c, nvl_coll_t coll,
                           size_t bytes, nvl_proto_t proto, double channels)
{
    return ring_time_s(c, coll, bytes, proto,
                       nvl_coll_model_kernel_channels(c, channels), false);
}

static double ring_kernel(const nvl_comm_t *c, nvl_coll_t coll, size_t bytes,
                          nvl_proto_t proto, double channels)
{
    return ring_time_s(c, coll, bytes, proto, channels, true);
}

static nvl_status_t chain(const nvl_coll_call_t *call, char *buf, size_t bytes,
                          int reduce)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, p = (c->rank - call->root + n) % n;
    int up = (c->rank - 1 + n) % n, down = (c->rank + 1) % n;
    nvl_status_t st = NVL_OK;
    if (!reduce) { /* root -> root+1 -> ... */
        if (p > 0)
            st = nvl_xfer_sendrecv(c, NULL, 0, -1, buf, bytes, up,
                                   NVL_TAG_RING_BCAST);
        if (st == NVL_OK && p < n - 1)
            st = nvl_xfer_sendrecv(c, buf, bytes, down, NULL, 0, -1,
                                   NVL_TAG_RING_BCAST);
        return st;
    }
    /* reduce: ... -> root+1 -> root, each member adds its own */
    if (p < n - 1) {
        char *tmp = nvl_xfer_scratch(c, bytes);
        if (tmp == NULL && bytes > 0)
            return NVL_ERR_NOMEM;
        st = nvl_xfer_sendrecv(c, NULL, 0, -1, tmp, bytes, down,
                               NVL_TAG_RING_REDUCE);
        if (st == NVL_OK)
            nvl_xfer_reduce(call, buf, tmp, call->count);
    }
    if (st == NVL_OK && p > 0)
        st = nvl_xfer_sendrecv(c, buf, bytes, up, NULL, 0, -1,
                               NVL_TAG_RING_REDUCE);
    return st;
}

static const nvl_block_passes_t ring_passes = {
    .name = "ring",
    .reduce_scatter = nvl_ring_reduce_scatter,
    .allgather = nvl_ring_allgather,
};

static nvl_status_t ring_run(const nvl_coll_call_t *call)
{
    size_t bytes = call->count * nvl_dtype_size(call->dtype);
    nvl_status_t st;
    char *work;
    switch (call->coll) {
    case NVL_COLL_BROADCAST:
        if (call->comm->rank == call->root && call->recv != call->send)
            memcpy(call->recv, call->send, bytes);
        return chain(call, call->recv, bytes, 0);
    case NVL_COLL_REDUCE:
        work = malloc(bytes + 1);
        if (work == NULL) {
            nvl_report("out of memory in ring %s", nvl_coll_name(call->coll));
            return NVL_ERR_NOMEM;
        }
        memcpy(work, call->send, bytes);
        st = chain(call, work, bytes, 1);
        if (st == NVL_OK && call->comm->rank == call->root)
            memcpy(call->recv, work, bytes);
        free(work);
        return st;
    default:
        return nvl_blocks_run(call, &ring_passes);
    }
}

const char nvl_coll_algo_doc_ring[] =
    "members pass blocks around a ring: allreduce, allgather, "
    "reduce-scatter; broadcast and reduce as a chain (ring.c)";

const nvl_coll_algo_t nvl_coll_algo_ring = {
    .algo = NVL_ALGO_RING,
    .supports = ring_supports,
    .predict_s = ring_predict,
    .kernel_s = ring_kernel,
    .run = ring_run,
    /* Ring LL: NCCL_LL_THREAD_THRESHOLD (8 bytes per thread) x nRanks
     * (tuning.cc; "16/8/64" at 2 ranks, "32/8/64" at 4 in NCCL 2.28's
     * init logs) */
    .thread_threshold_per_rank = {[NVL_PROTO_LL] = 8.0},
    .rating_s = nvl_coll_ring_rating_s,
    /* all_reduce.h, all_gather.h, reduce_scatter.h runRing: a first
     * step from the user's buffer, N-2 forwarding steps per pass, a last
     * step into the output (docs/collectives.md, "The ring's end steps") */
    .forwarding_steps = true,
};
