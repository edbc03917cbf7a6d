/* The pieces of the collective cost model that all algorithms share.
 * docs/collectives.md states each formula and the source of each constant.
 *
 * Latency: the GPU's kernel overhead + NCCL's own model, base + per-step
 * latencies (topology [nccl]), each step also paying the wire's one-way
 * latency.
 * Bandwidth: a channel moves path_bw x NVL_NVLINK_DATA_EFF / channels bytes per
 * second; protocols keep a fraction of it (LL: half the line is flags,
 * LL128: 120 of 128 bytes) under NCCL's ceilings; the chunked protocols
 * reach mid_efficiency of it at mid sizes, approaching 1 past the knee
 * (on a ring, in the steps that begin and end the chain only: the
 * forwarding steps run at the channel's rate); NCCL uses fewer channels
 * for small messages. */
#include <math.h>

#include "coll_impl.h"


/* The share of a channel's rate proto carries under algo: the
 * algorithm's own where its row has one, else the protocol's. */
static double proto_eff(nvl_algo_t algo, nvl_proto_t proto)
{
    double own = nvl_coll_algo(algo)->proto_eff[proto];
    return own > 0 ? own : nvl_coll_protos[proto].eff;
}

double nvl_coll_model_lat_s(const nvl_comm_t *c, nvl_algo_t algo,
                       nvl_proto_t proto, int intra_steps, int inter_steps)
{
    const nvl_nccl_spec_t *n = &c->topo->nccl;
    /* each step pays NCCL's software latency and the wire's one-way
     * latency (NVLink hop or scale-out) */
    double ps = (double)c->topo->gpu.kernel_overhead_ps +
                (double)n->base_lat_ps[algo][proto] +
                intra_steps * ((double)n->nvlink_lat_ps[algo][proto] +
                               (double)c->topo->nvlink.hop_lat_ps) +
                inter_steps * ((double)n->net_lat_ps[algo][proto] +
                               (double)c->topo->scaleout.lat_ps);
    return ps * 1e-12;
}

double nvl_coll_model_nccl_lat_s(const nvl_comm_t *c, nvl_algo_t algo,
                                 nvl_proto_t proto, int intra_steps,
                                 int inter_steps)
{
    const nvl_topo_t *t = c->topo;
    const nvl_nccl_spec_t *n = &t->nccl;
    int die = (int)((int64_t)intra_steps * c->die_edges / c->size);
    double ps = (double)n->base_lat_ps[algo][proto] +
                intra_steps * (double)n->nvlink_lat_ps[algo][proto] +
                die * (double)t->gpu.die_link_lat_ps +
                inter_steps * ((double)n->net_lat_ps[algo][proto] +
                               (double)t->scaleout.lat_ps);
    return ps * 1e-12;
}

double nvl_coll_model_ring_lat_s(const nvl_comm_t *c, nvl_algo_t algo,
                                 nvl_proto_t proto, int intra_steps,
                                 int inter_steps)
{
    int die = (int)((int64_t)intra_steps * c->die_edges / c->size);
    const nvl_topo_t *t = c->topo;
    double die_ps = (double)t->nccl.nvlink_lat_ps[algo][proto] +
                    (double)t->gpu.die_link_lat_ps;
    return nvl_coll_model_lat_s(c, algo, proto, intra_steps - die,
                                inter_steps) +
           die * die_ps * 1e-12;
}

double nvl_coll_model_steps_lat_s(const nvl_comm_t *c, nvl_algo_t algo,
                                  nvl_proto_t proto, int intra_steps,
                                  int inter_steps, bool kernel)
{
    return kernel ? nvl_coll_model_nccl_lat_s(c, algo, proto, intra_steps,
                                              inter_steps)
                  : nvl_coll_model_ring_lat_s(c, algo, proto, intra_steps,
                                              inter_steps);
}

double nvl_coll_model_intra_bw(const nvl_comm_t *c)
{
    if (c->die_edges == 0)
        return c->nvlink_bw;
    if (c->die_edges >= c->size)
        return c->die_link_bw;
    return fmin(c->nvlink_bw, c->die_link_bw);
}

double nvl_coll_model_path_bw(const nvl_comm_t *c)
{
    double intra = nvl_coll_model_intra_bw(c);
    return c->domains > 1 && c->nic_bw < intra ? c->nic_bw : intra;
}

/* Allgather and reduce-scatter per byte, relative to allreduce's.  NCCL's
 * ring (device/all_gather.h and reduce_scatter.h runRing) runs N-1 steps per
 * chunk: one that starts from the user's buffer (allgather's
 * directCopySend: the send and, out of place, the copy of the rank's own
 * block; reduce-scatter's send) and forwarding steps
 * (directRecvCopyDirectSend, recvReduceSend), the last ending in the
 * output (directRecv, recvReduceCopy).  Two ranks run only the end step;
 * gather_scatter_efficiency is its rate per byte, fit to the 2-rank curves
 * (topology-format.md).  Algorithms without forwarding steps (PAT, Tree)
 * keep it as one of N-1 steps at allreduce's rate:
 * eff = (N-1) / (N-2 + 1/gather_scatter_efficiency), 0.86 at 2 ranks, 0.977
 * at 8, 0.998 at 72. */
static double gather_scatter_eff(const nvl_comm_t *c)
{
    double g = c->topo->nccl.gather_scatter_efficiency;
    int steps = c->size - 1;
    return steps <= 1 ? g : steps / (steps - 1 + 1.0 / g);
}

/* The ring's steps (docs/collectives.md, "The ring's end steps"): of a
 * loop iteration's wire steps, the ones that begin and end the chain at
 * the user's buffers are all of a 2-rank call -- allreduce's send,
 * recvReduceCopySend and recv (all_reduce.h runRing), allgather's and
 * reduce-scatter's first and last -- and carry the mid-size ramp `ramp`
 * (and, for allgather and reduce-scatter, gather_scatter_efficiency): the
 * 2-rank curves they were fit to are nothing else.  The N-2 forwarding
 * steps per pass (recvReduceSend, recvCopySend, directRecvCopyDirectSend)
 * run at the channel's rate.  One pass of N-1 steps holds one end step's
 * worth of them: eff = (N-1) / (N-2 + 1/(g ramp)). */
static double ring_steps_eff(const nvl_comm_t *c, nvl_coll_t coll,
                             double ramp)
{
    double g = coll == NVL_COLL_ALLREDUCE
                   ? 1.0
                   : c->topo->nccl.gather_scatter_efficiency;
    int steps = c->size - 1;
    double end = g * ramp;
    return steps <= 1 ? end : steps / (steps - 1 + 1.0 / end);
}

double nvl_coll_model_bus_bw(const nvl_comm_t *c, nvl_coll_t coll,
                        nvl_algo_t algo, nvl_proto_t proto, double path_bw,
                        double channels, double wire_bytes)
{
    const nvl_nccl_spec_t *n = &c->topo->nccl;
    double per_channel = path_bw * NVL_NVLINK_DATA_EFF / n->channels;
    const nvl_coll_proto_t *p = &nvl_coll_protos[proto];
    const nvl_coll_algo_t *a = nvl_coll_algo(algo);
    double bw = per_channel * channels * proto_eff(algo, proto);
    /* NCCL's ceilings (tuning.cc): what the SMs of a channel can move,
     * the protocol's, then the algorithm's */
    if (p->max_bw != NULL && bw > p->max_bw(n, channels))
        bw = p->max_bw(n, channels);
    if (a->max_bw_per_channel != NULL &&
        bw > channels * a->max_bw_per_channel(n))
        bw = channels * a->max_bw_per_channel(n);
    /* chunked protocols on a ring's steps (every member receiving from one
     * neighbour and sending to the other at once): a channel reaches
     * mid_efficiency of its rate at mid sizes and approaches all of it as
     * its share grows past the knee.  Broadcast and reduce are a chain
     * (ring.c): their pipeline is modeled there, not by this shape, which
     * was measured on allreduce, allgather and reduce-scatter only. */
    double ramp = 1.0;
    if (p->knee && coll != NVL_COLL_BROADCAST &&
        coll != NVL_COLL_REDUCE) {
        double x = wire_bytes / channels, knee = (double)n->knee_bytes;
        ramp = n->mid_efficiency + (1 - n->mid_efficiency) * x / (x + knee);
    }
    bool gather_scatter =
        coll == NVL_COLL_ALLGATHER || coll == NVL_COLL_REDUCESCATTER;
    if (a->forwarding_steps && (gather_scatter ||
                                coll == NVL_COLL_ALLREDUCE))
        return bw * ring_steps_eff(c, coll, ramp);
    bw *= ramp;
    if (gather_scatter)
        bw *= gather_scatter_eff(c);
    return bw;
}

int nvl_coll_model_max_channels(const nvl_comm_t *c)
{
    int nc = (int)c->topo->nccl.channels;
    return c->tuner.max_channels > 0 && c->tuner.max_channels < nc
               ? c->tuner.max_channels
               : nc;
}

double nvl_coll_model_kernel_channels(const nvl_comm_t *c, double channels)
{
    double sm = c->topo->nvlink.sm_peer_bw_bytes_per_s;
    double share = nvl_coll_model_path_bw(c) * NVL_NVLINK_DATA_EFF /
                   c->topo->nccl.channels;
    if (sm <= share)
        return channels;
    double nc = nvl_coll_model_max_channels(c);
    return fmin(nc, channels * sm / share);
}

/* NCCL's channel count (enqueue.cc topoGetAlgoInfo, "Ring/Tree channel
 * tuning"): from nChannels, drop one while nBytes < nc x nt x threshold,
 * nt the protocol's threads (protos.c) and threshold its bytes per thread
 * (tuning.cc threadThresholds: LL 8, LL128 8, Simple 64; Ring LL 8 x
 * nRanks, "threadThresholds 8/8/64 | 32/8/64" at 4 ranks in the lent
 * HGX H100's log), so C = floor(S / (nt x threshold)) between the bounds.
 * The bandwidth uses the unrounded quotient, the channels' load averaged
 * over the sizes between two channel counts: rounding would make a message
 * just past a channel boundary faster than one just below it, which no
 * measured curve shows. */
double nvl_coll_model_channels(const nvl_comm_t *c, nvl_algo_t algo,
                               nvl_proto_t proto, size_t bytes)
{
    int nc = nvl_coll_model_max_channels(c);
    int min_nc = c->tuner.min_channels > 0 ? c->tuner.min_channels : 1;
    if (min_nc > nc)
        min_nc = nc;
    const nvl_coll_algo_t *a = nvl_coll_algo(algo);
    if (a->channels != NULL)
        return a->channels(c, nc, min_nc);
    double per_rank = a->thread_threshold_per_rank[proto];
    double threshold = per_rank > 0 ? per_rank * c->size
                                    : nvl_coll_protos[proto].thread_threshold;
    double share =
        (double)bytes / (nvl_coll_protos[proto].threads * threshold);
    return share < min_nc ? min_nc : share > nc ? nc : share;
}
