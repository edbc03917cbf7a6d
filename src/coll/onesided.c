/* One-sided all-to-all: dispatch and combine of a mixture of experts as
 * direct NVLink writes into the peers' receive buffers, as DeepEP's
 * kernels (deepseek-ai/DeepEP csrc/kernels/internode_ll.cu, intranode.cu)
 * and TensorRT-LLM's MNNVL all-to-all do, instead of NCCL's send/recv
 * groups (p2p.c).  The data a group moves is the same; the time follows
 * the kernels' mechanism (docs/collectives.md, "One-sided all-to-all"):
 *
 *   T = kernels x kernel_overhead + hops x hop_lat
 *       + max(bytes out, bytes in) / (NVLink per GPU x eta)
 *
 *   low-latency (LL, DeepEP low_latency_dispatch / _combine): one kernel;
 *     each (token, expert) pair is its own message written into the
 *     expert's slot of the receiver's buffer (the caller scales the bytes:
 *     nvl_group_end_a2a's wire factors), then a per-expert flag: hops = 1
 *     (the last write lands) + 1 (its acknowledgement returns: the release
 *     fence before the flag) + 1 (the flag lands; the receiver polls it);
 *   normal / high-throughput (HT, DeepEP intranode notify_dispatch then
 *     dispatch): a notify kernel first (a barrier and every rank's counts
 *     written to every peer: data hop, fence, flag = 3 hops), then the
 *     data kernel (3 hops as LL), one message per (token, rank).
 *
 * No NCCL channel setup, base latency or protocol: the kernels are the
 * engine's own, launched once per call.  Bandwidth: a GPU's NVLink ports
 * at NCCL's payload efficiency (DeepEP's normal kernels reach 153 GB/s of
 * H800's ~160 GB/s, its README).  SMs: DeepEP's normal kernels take 20
 * SMs (deep_ep/buffer.py, Buffer.num_sms), the low-latency ones a warp
 * group per expert; the engine does not overlap the all-to-all with
 * compute, so they cost no time here (docs/collectives.md's Known
 * limits). */
#include <stdio.h>

#include "coll_impl.h"

typedef struct {
    const char *name;
    int kernels; /* launches per call */
    int hops;    /* NVLink traversals on the critical path */
} a2a_row_t;

static const a2a_row_t rows[NVL_A2A_COUNT] = {
    [NVL_A2A_NCCL] = {.name = "nccl"},
    [NVL_A2A_ONESIDED_LL] = {.name = "onesided-ll", .kernels = 1, .hops = 3},
    [NVL_A2A_ONESIDED_HT] = {.name = "onesided-ht", .kernels = 2, .hops = 6},
};

const char *nvl_a2a_name(nvl_a2a_t a2a)
{
    return a2a < NVL_A2A_COUNT ? rows[a2a].name : "unknown";
}

bool nvl_a2a_usable(const nvl_comm_t *c, nvl_a2a_t a2a, char *why,
                    size_t len)
{
    if (a2a == NVL_A2A_NCCL)
        return true;
    if (c->domains > 1) {
        snprintf(why, len, "the one-sided all-to-all needs every GPU in "
                 "one NVLink domain (peer access to every receive buffer); "
                 "these %d GPUs span %d", c->size, c->domains);
        return false;
    }
    return true;
}

int64_t nvl_onesided_time_ps(const nvl_comm_t *c, int member,
                             nvl_a2a_t a2a, double out_bytes,
                             double in_bytes)
{
    if (out_bytes <= 0 && in_bytes <= 0)
        return 0;
    const nvl_topo_t *t = c->topo;
    const a2a_row_t *r = &rows[a2a];
    double bw = nvl_topo_nvlink_bw(t, c->gpus[member]) * NVL_NVLINK_DATA_EFF;
    double most = out_bytes > in_bytes ? out_bytes : in_bytes;
    return (int64_t)r->kernels * t->gpu.kernel_overhead_ps +
           (int64_t)r->hops * t->nvlink.hop_lat_ps + nvl_ps_from_s(most / bw);
}
