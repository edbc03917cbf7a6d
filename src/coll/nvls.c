/* NVLS (NCCL_ALGO=NVLS): NVLink SHARP.  The NVSwitch reduces: each GPU
 * reads its 1/N share of every peer's buffer through the switch's
 * multimem load-reduce and writes the result back with a multicast store.
 *
 *   GPU i --S/N of each peer--> switch (sum) --multicast--> all GPUs
 *
 * Data mode moves the same shares: a direct reduce-scatter (reduced in
 * member order, as the switch does, so every GPU gets identical bits) and a
 * direct allgather.  Only within one NVLink domain with switches that
 * support it.
 *
 * Cost, per member port and direction (docs/collectives.md, "What each
 * NVLS collective carries"): reduce-scatter sends S (read responses to
 * the switch's load-reduce) and receives S/N; allgather sends S/N and
 * receives S (multicast copies); allreduce sends and receives S + S/H.
 * A port direction moves data at the ring's rate (port); the switch sums
 * and copies at A = nvls_bw x 5/6 per port (NCCL tuning.cc's NVLS ratio),
 * which allreduce asks for twice per byte and the others once.
 * Allgather/reduce-scatter: T = kernel + nvls.simple.nvlink_lat + hop
 *   + S / min(port, 2A).
 * Allreduce, from NCCL's mechanism (device/all_reduce.h, NVLS single
 * node: scatter, multimem reduce + multicast store, gather warps per
 * channel, each stage behind NCCL_STEPS slots):
 *   C = [nccl] nvls_channels (nvls.cc: 16 Hopper, 24 Blackwell NVL);
 *   H = N heads in the pipeline (NCCL: at most 32, search.cc; see
 *     nvls_heads);
 *   chunk c = 128 KB, cut to 64/32/16 KB when S < 64/8/2 x C x H' x c
 *     (enqueue.cc calcCollChunking, concurrentOps = C x nHeads, NCCL's
 *     H' = min(N, 32) heads), and no larger than S / (C H);
 *   algbw = min(A, port H/(H+1)), a channel's rate b = algbw / C;
 *   one chunk through one stage takes c / b; a loop iteration moves one
 *   chunk to each of the H heads (loopSize = C H c) and synchronises
 *   once through the switch (nvls_chunk_lat), so
 *   T = kernel + nvls.simple.nvlink_lat + hop
 *       + (S / (C c) + 2 min(H, S / (C c))) c / b
 *       + (S / (C H c) + F) nvls_chunk_lat,
 *     the first iteration's two later stages (scatter -> reduce ->
 *     gather, each posting only after the whole iteration,
 *     prims_simple.h ScatterGatherOp) the pipeline's fill, and
 *     F = 2 NCCL_STEPS - 1 syncs while the two slot rings fill;
 *   S / C is the busiest channel's bytes: before NCCL 2.20 ([nccl]
 *     nvls_whole_chunks) max(S / C, min(S, H c)) in whole chunks
 *     (nvls_channel_bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xfer.h"
#include "search.h"

static bool nvls_supports(const nvl_comm_t *c, nvl_coll_t coll,
                          nvl_proto_t proto)
{
    if (!c->nvls || (uint32_t)c->size < c->topo->nccl.nvls_min_ranks ||
        proto != NVL_PROTO_SIMPLE)
        return false;
    if (coll == NVL_COLL_ALLREDUCE)
        return true;
    /* enqueue.cc topoGetAlgoInfo: no NVLS allgather or reduce-scatter on
     * more local ranks than NCCL_MAX_NVLS_ARITY (their kernels reach every
     * member through one multicast group of at most that many heads). */
    return (coll == NVL_COLL_ALLGATHER || coll == NVL_COLL_REDUCESCATTER) &&
           c->size <= NVL_NVLS_MAX_ARITY;
}

/* The model's NVLS pipeline heads: every member (loopSize = C N c).
 * NCCL's NVLS graph keeps at most NCCL_MAX_NVLS_ARITY (32) heads
 * (search.cc ncclTopoCompute: maxChannels = min(NCCL_MAX_NVLS_ARITY,
 * GPUs)); its chunk rule counts those (nvls_nccl_heads).  The pipeline's
 * fill keeps the members: what grows with them beyond 32 is not found in
 * the source (docs/collectives.md, "All_reduce at 72 ranks"), and the
 * members stand in for it. */
static double nvls_heads(const nvl_comm_t *c)
{
    return c->size;
}

/* NCCL's NVLS heads, min(N, NCCL_MAX_NVLS_ARITY): connect.cc connectNvls
 * nHeads, which enqueue.cc calcCollChunking multiplies by the channels
 * into concurrentOps. */
static double nvls_nccl_heads(const nvl_comm_t *c)
{
    return c->size < NVL_NVLS_MAX_ARITY ? c->size : NVL_NVLS_MAX_ARITY;
}

/* The bandwidth of NCCL's NVLS graph within one node, nChannels x
 * bwIntra, by which NCCL rates NVLS (nvls_rating_s, nvls_nccl_declines).
 * search.cc ncclTopoCompute: H = min(N, NCCL_MAX_NVLS_ARITY) channels,
 * forced when no NIC is left (minChannels = maxChannels); the first speed
 * tried is the fastest at most the GPU's NVLink rate (maxBw, links x the
 * per-link rate); ncclTopoSearchTryNvls takes one speed's worth of every
 * GPU's port to and from the switch per channel, two on the channel's
 * head, so H channels fit where (H + 1) x speed <= maxBw, else the next
 * speed.  8 x B200: 9 x 80 <= 721.8, 8 x 80 = 640 GB/s; 5 x B200: 5 x
 * 90 = 450 (the array's top); 8 x H100: 8 x 40 = 320.  Without a
 * compcap, maxBw (the rating's upper bound).  The speeds: search.c. */
static double nvls_graph_bw(const nvl_comm_t *c)
{
    return nvl_coll_search_nvls_bw(c, nvls_nccl_heads(c));
}

/* What one direction of a member's port carries as NVLS data: the NVLink
 * data rate the ring's channels get (NCCL's maxBw, nvlink_bw x
 * NVL_NVLINK_DATA_EFF), in the share of the ring's channels the call may
 * use (NCCL_MAX_NCHANNELS).  Multimem loads and stores are no faster per
 * byte than the ring's: forced NVLS allgather on 8 GPUs measures 300 GB/s
 * busbw where the ring measures 350 (NVIDIA/nccl#1506), 0.86 of it, the
 * (N-1)/N = 0.875 this rate gives. */
static double nvls_port_bw(const nvl_comm_t *c, nvl_proto_t proto)
{
    double ring_ch = nvl_coll_model_channels(c, NVL_ALGO_RING, proto,
                                             SIZE_MAX);
    return c->nvlink_bw * NVL_NVLINK_DATA_EFF * ring_ch /
           c->topo->nccl.channels;
}

/* NCCL's NVLS chunk for a call of `bytes` (enqueue.cc calcCollChunking,
 * one domain: concurrentOps = channels x nHeads): 128 KB, cut
 * to 64, 32 and 16 KB below 64, 8 and 2 x concurrentOps x chunk. */
static double nvls_chunk_bytes(double bytes, double ops)
{
    double c = 128 * 1024;
    if (bytes < 64 * ops * c)
        c = 65536;
    if (bytes < 8 * ops * c)
        c = 32768;
    if (bytes < 2 * ops * c)
        c = 16384;
    return c;
}

/* The bytes the busiest channel carries of an NVLS allreduce of `s`
 * bytes in chunks of `chunk` (*chunk cut to a head's share where NCCL
 * cuts it).  NCCL 2.20 on splits the call over the channels and cuts the
 * last loop's chunk to its share (2.20.3 enqueue.cc
 * computeCollLastChunkInfo, device/all_reduce.h `oneNode`): S / C.
 * Before 2.20 every channel loops over the whole call, channel b's loop
 * taking the b-th H chunks (2.18.5 collectives/device/all_reduce.h
 * RunWorkElement NVLS: offset = gridOffset + bid nHeads chunkSize, the
 * chunk enqueue.cc's, at least 16 KB), so a call of less than one loop
 * of all channels puts up to H whole chunks on the first ([nccl]
 * nvls_whole_chunks). */
static double nvls_channel_bytes(const nvl_comm_t *c, double s,
                                 double *chunk, double channels, double heads)
{
    double per_channel = s / channels;
    if (c->topo->nccl.nvls_whole_chunks) {
        double first = s < heads * *chunk ? s : heads * *chunk;
        return first > per_channel ? first : per_channel;
    }
    double share = s / (channels * heads);
    if (*chunk > share)
        *chunk = share;
    return per_channel;
}

/* The chunk pipeline's time for `s` bytes in chunks of `chunk`, on the
 * busiest channel (nvls_channel_bytes, B bytes): (B / c + F) chunk
 * transfers and (B / (N c) + F) loop iterations' synchronisations. */
static double nvls_pipe_s(const nvl_comm_t *c, double s, double chunk,
                          double channels, double algbw, double heads)
{
    double chunks =
        nvls_channel_bytes(c, s, &chunk, channels, heads) / chunk;
    /* a loop iteration is one chunk per head (N chunks) and crosses three
     * stages, scatter -> the heads' multimem reduce -> gather, each taking
     * the whole iteration before the next stage has it: the first
     * iteration's two later stages are the pipeline's fill, 2 min(N,
     * chunks) chunk times; the syncs fill the two slot rings first. */
    double fill = 2 * (chunks < heads ? chunks : heads);
    double sync_fill = 2 * NVL_NCCL_STEPS - 1;
    return (chunks + fill) * chunk / (algbw / channels) +
           (chunks / heads + sync_fill) *
               ((double)c->topo->nccl.nvls_chunk_lat_ps * 1e-12);
}

static double nvls_predict(const nvl_comm_t *c, nvl_coll_t coll,
                           size_t bytes, nvl_proto_t proto, double channels)
{
    double lat = nvl_coll_model_lat_s(c, NVL_ALGO_NVLS, proto, 1, 0);
    double sw = c->topo->nvlink.nvls_bw_bytes_per_s * 5.0 / 6.0;
    if (coll != NVL_COLL_ALLREDUCE) {
        double port = nvls_port_bw(c, proto);
        /* One port direction carries all S bytes (NVIDIA/nccl#1083, the
         * maintainer: NVLS reduce-scatter sends S and receives S/N,
         * allgather sends S/N and receives S): reduce-scatter's
         * load-reduce reads every member's copy of every share, the
         * reader's too (device/reduce_scatter.h, "Reduce through NVLS"),
         * so each port sends S of read responses; allgather's multicast
         * store writes every block into every member, the writer too
         * (device/all_gather.h, "Bcast through NVLS"), so each port
         * receives S.  The switch handles S per port (summed or copied),
         * half of allreduce's 2S, so its bound is 2 A. */
        double r = 2 * sw < port ? 2 * sw : port;
        return lat + (double)bytes / r;
    }
    return lat + nvl_nvls_allreduce_pipe_s(c, (double)bytes, channels,
                                           nvls_heads(c), 1);
}

/* A domain's NVLS allreduce rate, every port direction carrying S + S/H
 * (see nvl_nvls_allreduce_pipe_s) under the switch's rate. */
static double nvls_allreduce_bw(const nvl_comm_t *c, double members)
{
    double sw = c->topo->nvlink.nvls_bw_bytes_per_s * 5.0 / 6.0;
    double algbw = c->nvlink_bw * NVL_NVLINK_DATA_EFF * members /
                   (members + 1);
    return sw < algbw ? sw : algbw;
}

/* NCCL's NVLSTree chunk for a call of `bytes` between two domains
 * (enqueue.cc calcCollChunking, NCCL_ALGO_NVLS_TREE; v2.26.2-1 lines
 * 1888-1900): nvlsChunkSize 128 KB (NCCL_NVLSTREE_MAX_CHUNKSIZE caps it
 * at 64 KB from 4 domains), cut to 64 KB below 4 x concurrentOps x
 * chunk and to 32 KB below 1 x: the NVLS allreduce's cuts (at 64, 8 and
 * 2 x) do not apply, so from 4 x concurrentOps x 128 KB on NVLSTree
 * moves its domain's data in 128 KB chunks where NVLS would use 64 KB. */
static double nvls_tree_chunk_bytes(double bytes, double ops, int domains)
{
    double c = domains >= 4 ? 65536 : 128 * 1024;
    if (bytes < 4 * ops * c && c > 65536)
        c = 65536;
    if (bytes < ops * c && c > 32768)
        c = 32768;
    return c;
}

static double nvls_tree_pipe_s(const nvl_comm_t *c, double s, double channels,
                               double members, int domains)
{
    double algbw = nvls_allreduce_bw(c, members);
    double nccl_heads = members < NVL_NVLS_MAX_ARITY ? members
                                                      : NVL_NVLS_MAX_ARITY;
    double chunk = nvls_tree_chunk_bytes(s, channels * nccl_heads, domains);
    return nvls_pipe_s(c, s, chunk, channels, algbw, members);
}

double nvl_nvls_allreduce_pipe_s(const nvl_comm_t *c, double s,
                                 double channels, double members, int domains)
{
    if (domains > 1)
        return nvls_tree_pipe_s(c, s, channels, members, domains);
    /* Each port direction carries S + S/H (read responses and the head's
     * multicast store out; the multicast copies and the head's reduced
     * share in, H = heads), and the switch sums S and copies S per port:
     * A = min(sw, port H/(H+1)) on all of the port (NVLS channels, not
     * the ring's), the switch's rate where it is the lower (every
     * topology: nvls_bw is fit to allreduce). */
    double h = members;
    double algbw = nvls_allreduce_bw(c, members);
    double nccl_heads = members < NVL_NVLS_MAX_ARITY ? members
                                                      : NVL_NVLS_MAX_ARITY;
    double ops = channels * nccl_heads;
    double chunk = nvls_chunk_bytes(s, ops);
    double t = nvls_pipe_s(c, s, chunk, channels, algbw, h);
    /* Just past a threshold the larger chunk finishes sooner than the
     * smaller one did just below it (fewer syncs): real NCCL dips there;
     * the model keeps the time of the largest size on the smaller chunk,
     * so that time never falls as the size grows (unit.coll_props). */
    for (double below = chunk / 2; below >= 16384; below /= 2) {
        double edge = (below == 65536 ? 64 : below == 32768 ? 8 : 2) * ops *
                      (2 * below); /* where NCCL halves 2 x below */
        double t_edge = nvls_pipe_s(c, edge, below, channels, algbw, h);
        if (t_edge > t)
            t = t_edge;
    }
    return t;
}

static const nvl_block_passes_t nvls_passes = {
    .name = "NVLS",
    .reduce_scatter = nvl_direct_reduce_scatter,
    .allgather = nvl_direct_allgather,
};

static nvl_status_t nvls_run(const nvl_coll_call_t *call)
{
    return nvl_blocks_run(call, &nvls_passes);
}

/* NCCL's tuning latency of an NVLS call on NVLink, [nccl] nvls_tuning_lat
 * (tuning.cc: baseLat NVLS Simple 23 us in 2.18.5, hwLat NVLINK NVLS
 * Simple 23 us in 2.19-2.20.5 and 25 us from 2.21.5): what NCCL's choice
 * charges it, whatever the topology's fitted nvls.simple.nvlink_lat. */
static double nccl_nvls_tuning_lat_s(const nvl_comm_t *c)
{
    return (double)c->topo->nccl.nvls_tuning_lat_ps * 1e-12;
}

/* NCCL never runs NVLS allgather or reduce-scatter where its rating puts
 * an enabled ring protocol first (docs/collectives.md, "Which algorithm
 * NCCL runs for allgather and reduce-scatter").  Its NVLS graph has one
 * channel per head, H = min(N, NCCL_MAX_NVLS_ARITY) (search.cc
 * ncclTopoCompute: maxChannels, and minChannels = maxChannels inside one
 * node), each at the fastest step of its speed table that H of them fit
 * in (nvls_graph_bw); the rating is nChannels x bw x nvlsEfficiency x (H-1)/H x
 * (N-1)/N, used as the algorithm bandwidth, at [nccl] nvls_tuning_lat
 * (tuning.cc). */
static bool nvls_nccl_declines(const nvl_comm_t *c, nvl_coll_t coll,
                               size_t bytes)
{
    if (coll == NVL_COLL_ALLREDUCE || !c->tuner.algo_enabled[NVL_ALGO_RING])
        return false;
    double h = nvls_nccl_heads(c), n = c->size;
    double rate = nvls_graph_bw(c) * c->topo->nccl.nvls_efficiency *
                  (h - 1) / h * (n - 1) / n;
    double nvls = nccl_nvls_tuning_lat_s(c) + (double)bytes / rate;
    for (int p = 0; p < NVL_PROTO_COUNT; p++)
        if (c->tuner.proto_enabled[p] &&
            nvl_coll_ring_rating_s(c, coll, bytes, (nvl_proto_t)p) < nvls)
            return true;
    return false;
}

/* NCCL's rating of an NVLS allreduce, by which it chooses between NVLS
 * and the ring (tuning.cc ncclTopoTuneModel, 2.28 on): a channel of its
 * NVLS graph rates bwIntra x nvlsEfficiency x (nCh-1)/nCh, twice for
 * allreduce ("AllReduce pipelines two operations"), the algorithm
 * bandwidth nCh times that x N / (2 (N-1)), at hwLat's NVLS latency
 * ([nccl] nvls_tuning_lat).  The graph's nCh x bwIntra with nCh = H is
 * nvls_graph_bw, so algBw = graph x nvlsEfficiency x (H-1)/H x N/(N-1).
 * NCCL 2.18-2.27 rate graph x 5/6 at 23-25 us: within 13 % of this at 8
 * ranks, on Hopper and Blackwell; the graph's speed step decides where
 * NVLS takes over from the ring by rank count (docs/collectives.md, "When
 * NCCL runs NVLS allreduce", "NVLS by rank count on 8 x B200").
 * Allgather and reduce-scatter: none here (nvls_nccl_declines). */
static double nvls_rating_s(const nvl_comm_t *c, nvl_coll_t coll,
                            size_t bytes, nvl_proto_t proto)
{
    (void)proto;
    if (coll != NVL_COLL_ALLREDUCE)
        return -1.0;
    double h = nvls_nccl_heads(c), n = c->size;
    double rate = nvls_graph_bw(c) * c->topo->nccl.nvls_efficiency *
                  (h - 1) / h * n / (n - 1);
    return nccl_nvls_tuning_lat_s(c) + (double)bytes / rate;
}

const char nvl_coll_algo_doc_nvls[] =
    "NVLink SHARP: the switch reduces and multicasts, one NVLink domain: "
    "allreduce, allgather, reduce-scatter (nvls.c)";

/* nvls.cc: nvlsChannels, within the CTA bounds. */
static double nvls_channels(const nvl_comm_t *c, int max_nc, int min_nc)
{
    (void)max_nc;
    int nv = (int)c->topo->nccl.nvls_channels;
    if (c->tuner.max_channels > 0 && c->tuner.max_channels < nv)
        nv = c->tuner.max_channels;
    return nv < min_nc ? min_nc : nv;
}

const nvl_coll_algo_t nvl_coll_algo_nvls = {
    .algo = NVL_ALGO_NVLS,
    .supports = nvls_supports,
    .predict_s = nvls_predict,
    .run = nvls_run,
    .channels = nvls_channels,
    .rating_s = nvls_rating_s,
    .enable_env = "NCCL_NVLS_ENABLE",
    .nccl_declines = nvls_nccl_declines,
};
