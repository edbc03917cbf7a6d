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
 * Cost (allreduce), from NCCL's mechanism (device/all_reduce.h, NVLS
 * single node: scatter, multimem reduce + multicast store, gather warps
 * per channel, each stage behind NCCL_STEPS slots):
 *   C = [nccl] nvls_channels (nvls.cc: 16 Hopper, 24 Blackwell NVL);
 *   chunk c = 128 KB, cut to 64/32/16 KB when S < 64/8/2 x C x N x c
 *     (enqueue.cc calcCollChunking, concurrentOps = C x nHeads, nHeads = N
 *     in one domain), and no larger than S / (C N);
 *   A = min(nvls_bw, port) x 5/6 (NCCL tuning.cc's NVLS ratio), a
 *     channel's rate b = A / C;
 *   one chunk through one stage takes c / b; a loop iteration moves one
 *   chunk to each of the N heads (loopSize = C N c) and synchronises
 *   once through the switch (nvls_chunk_lat), so
 *   T = kernel + nvls.simple.nvlink_lat + hop
 *       + (S / (C c) + 2 min(N, S / (C c))) c / b
 *       + (S / (C N c) + F) nvls_chunk_lat,
 *     the first iteration's two later stages (scatter -> reduce ->
 *     gather, each posting only after the whole iteration,
 *     prims_simple.h ScatterGatherOp) the pipeline's fill, and
 *     F = 2 NCCL_STEPS - 1 syncs while the two slot rings fill.
 * Allgather/reduce-scatter: every member's port carries all S bytes, its
 * own block included: T = kernel + nvls.simple.nvlink_lat + hop + S / R,
 * reduce-scatter's load-reduce R = min(port, nvls_bw x 5/6), port = the
 * ring's channels' NVLink rate; allgather's multicast store, which the
 * switch does not reduce, R = the port's data rate without the ring's
 * mid-size shape (docs/collectives.md, "At 4-72 ranks"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll_impl.h"

static bool nvls_supports(const nvl_comm_t *c, nvl_coll_t coll,
                          nvl_proto_t proto)
{
    return c->nvls && (uint32_t)c->size >= c->topo->nccl.nvls_min_ranks &&
           proto == NVL_PROTO_SIMPLE &&
           (coll == NVL_COLL_ALLREDUCE || coll == NVL_COLL_ALLGATHER ||
            coll == NVL_COLL_REDUCESCATTER);
}

/* NCCL's NVLS chunk for a call of `bytes` (enqueue.cc calcCollChunking,
 * one domain: concurrentOps = channels x nHeads, nHeads = n): 128 KB, cut
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

/* The chunk pipeline's time for `s` bytes in chunks of `chunk` (none
 * larger than a head's share): (S / (C c) + F) chunk transfers and
 * (S / (C N c) + F) loop iterations' synchronisations. */
static double nvls_pipe_s(const nvl_comm_t *c, double s, double chunk,
                          double channels, double algbw)
{
    double share = s / (channels * c->size);
    if (chunk > share)
        chunk = share;
    double chunks = s / (channels * chunk);
    /* a loop iteration is one chunk per head (N chunks) and crosses three
     * stages, scatter -> the heads' multimem reduce -> gather, each taking
     * the whole iteration before the next stage has it: the first
     * iteration's two later stages are the pipeline's fill, 2 min(N,
     * chunks) chunk times; the syncs fill the two slot rings first. */
    double fill = 2 * (chunks < c->size ? chunks : c->size);
    double sync_fill = 2 * NVL_NCCL_STEPS - 1;
    return (chunks + fill) * chunk / (algbw / channels) +
           (chunks / c->size + sync_fill) *
               ((double)c->topo->nccl.nvls_chunk_lat_ps * 1e-12);
}

/* Allgather's rate through NVLS: its "Bcast through NVLS" warps
 * multicast-store the input (device/all_gather.h, NVLS oneNode), which
 * the switch copies to every member and does not reduce, so the switch's
 * load-reduce rate (nvls_bw) does not bound it; and it is no ring, so the
 * ring's mid-size shape ([nccl] mid_efficiency, knee: every member
 * receiving from one neighbour while sending to the other) is not its:
 * the port's data rate on the ring's channels (Simple: no protocol
 * ceiling). */
static double nvls_store_bw(const nvl_comm_t *c, double ring_ch)
{
    return c->nvlink_bw * NVL_NVLINK_DATA_EFF * ring_ch /
           c->topo->nccl.channels;
}

static double nvls_predict(const nvl_comm_t *c, nvl_coll_t coll,
                           size_t bytes, nvl_proto_t proto, double channels)
{
    double lat = nvl_coll_model_lat_s(c, NVL_ALGO_NVLS, proto, 1, 0);
    if (coll != NVL_COLL_ALLREDUCE) {
        /* Every member's port carries all S bytes, its own block included
         * (device/all_gather.h, NVLS oneNode: the "Bcast through NVLS"
         * warps multicast-store the input, which reaches every member, the
         * writer too, and the "Gather" warps copy all nHeads blocks out of
         * the multicast buffer; reduce_scatter.h: the switch reads every
         * member's copy of a share, the reader's too): algbw = the port's
         * rate, busbw = port x (N-1)/N, below the ring's (NCCL's tuning.cc
         * likewise rates NVLS allgather/reduce-scatter at (ppn-1)/ppn of its
         * graph and the ring at N/(N-1), so NCCL runs large ones as a
         * ring).  The rate: the port (the ring's channels, NCCL_MAX_NCHANNELS
         * bounding them, at allreduce's per-byte rate), at most the
         * switch's multicast rate as the allreduce below has it. */
        double ring_ch = nvl_coll_model_channels(c, NVL_ALGO_RING, proto,
                                                 SIZE_MAX);
        double port = nvl_coll_model_bus_bw(c, NVL_COLL_ALLREDUCE,
                                            NVL_ALGO_NVLS, proto,
                                            c->nvlink_bw, ring_ch,
                                            (double)bytes);
        if (coll == NVL_COLL_ALLGATHER)
            return lat + (double)bytes / nvls_store_bw(c, ring_ch);
        double sw = c->topo->nvlink.nvls_bw_bytes_per_s * 5.0 / 6.0;
        return lat + (double)bytes / (sw < port ? sw : port);
    }
    double port = c->nvlink_bw * NVL_NVLINK_DATA_EFF;
    double sw = c->topo->nvlink.nvls_bw_bytes_per_s;
    double algbw = (sw < port ? sw : port) * 5.0 / 6.0;
    double s = (double)bytes, ops = channels * c->size;
    double chunk = nvls_chunk_bytes(s, ops);
    double t = nvls_pipe_s(c, s, chunk, channels, algbw);
    /* Just past a threshold the larger chunk finishes sooner than the
     * smaller one did just below it (fewer syncs): real NCCL dips there;
     * the model keeps the time of the largest size on the smaller chunk,
     * so that time never falls as the size grows (unit.coll_props). */
    for (double below = chunk / 2; below >= 16384; below /= 2) {
        double edge = (below == 65536 ? 64 : below == 32768 ? 8 : 2) * ops *
                      (2 * below); /* where NCCL halves 2 x below */
        double t_edge = nvls_pipe_s(c, edge, below, channels, algbw);
        if (t_edge > t)
            t = t_edge;
    }
    return lat + t;
}

static nvl_status_t nvls_run(const nvl_coll_call_t *call)
{
    nvl_comm_t *c = call->comm;
    int n = c->size;
    size_t esz = nvl_dtype_size(call->dtype);
    size_t *off = malloc(2 * (size_t)n * sizeof *off);
    char *work = NULL;
    nvl_status_t st = NVL_ERR_NOMEM;
    if (off == NULL)
        goto out;
    size_t *len = off + n;
    nvl_group_t g = nvl_group_all(c);
    nvl_blocks_t b = {off, len};
    if (call->coll == NVL_COLL_ALLREDUCE) {
        if (call->recv != call->send)
            memcpy(call->recv, call->send, call->count * esz);
        nvl_blocks_even(call->count, n, off, len);
        st = nvl_direct_reduce_scatter(call, &g, call->recv, &b);
        if (st == NVL_OK)
            st = nvl_direct_allgather(call, &g, call->recv, &b);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        off[i] = (size_t)i * call->count;
        len[i] = call->count;
    }
    if (call->coll == NVL_COLL_ALLGATHER) {
        memmove((char *)call->recv + off[c->rank] * esz, call->send,
                call->count * esz);
        st = nvl_direct_allgather(call, &g, call->recv, &b);
    } else {
        work = malloc(call->count * (size_t)n * esz + 1);
        if (work == NULL)
            goto out;
        memcpy(work, call->send, call->count * (size_t)n * esz);
        st = nvl_direct_reduce_scatter(call, &g, work, &b);
        if (st == NVL_OK)
            memcpy(call->recv, work + off[c->rank] * esz, call->count * esz);
    }
out:
    if (st == NVL_ERR_NOMEM)
        nvl_report("out of memory in NVLS %s", nvl_coll_name(call->coll));
    free(work);
    free(off);
    return st;
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
    .enable_env = "NCCL_NVLS_ENABLE",
};
