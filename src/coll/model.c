/* The pieces of the collective cost model that all algorithms share.
 * docs/collectives.md states each formula and the source of each constant.
 *
 * Latency: NCCL's own model, base + per-step latencies (topology [nccl]).
 * Bandwidth: a channel moves path_bw x NVLINK_DATA_EFF / channels bytes per
 * second; protocols keep a fraction of it (LL: half the line is flags,
 * LL128: 120 of 128 bytes); NCCL uses fewer channels for small messages. */
#include <math.h>

#include "coll_impl.h"

/* NCCL 2.28 reports maxBw 370.8 GB/s on 18 x 26.562 GB/s = 478.1 GB/s of
 * raw NVLink-4 (shared/calibration/h200-nvl2/nccl_model_table.txt): the
 * fraction of a link's raw rate that carries payload. */
#define NVLINK_DATA_EFF (370.8 / 478.116)

/* Protocol efficiencies, NCCL tuning.cc: LL moves 4 data bytes per 8-byte
 * line; LL128 120 of 128 bytes (NCCL applies 0.92); Tree LL 1/3.8. */
static double proto_eff(nvl_algo_t algo, nvl_proto_t proto)
{
    if (proto == NVL_PROTO_LL)
        return algo == NVL_ALGO_TREE ? 1.0 / 3.8 : 0.5;
    if (proto == NVL_PROTO_LL128)
        return algo == NVL_ALGO_TREE ? 7.0 / 9.0 : 0.92;
    return 1.0;
}

double nvl_model_lat_s(const nvl_comm_t *c, nvl_algo_t algo,
                       nvl_proto_t proto, int intra_steps, int inter_steps)
{
    const nvl_nccl_spec_t *n = &c->topo->nccl;
    double ps = (double)n->base_lat_ps[algo][proto] +
                intra_steps * (double)n->nvlink_lat_ps[algo][proto] +
                inter_steps * (double)n->net_lat_ps[algo][proto];
    return ps * 1e-12;
}

double nvl_model_bus_bw(const nvl_comm_t *c, nvl_algo_t algo,
                        nvl_proto_t proto, double path_bw, int channels)
{
    double per_channel = path_bw * NVLINK_DATA_EFF / c->topo->nccl.channels;
    return per_channel * channels * proto_eff(algo, proto);
}

/* NCCL's thread thresholds (bytes per thread before adding a channel):
 * LL 16 (ring) / 8 (tree), LL128 8, Simple 64, with 512 threads (NCCL 2.28
 * init log: "threadThresholds 8/8/64 | 16/8/64 | 512 | 512"). */
int nvl_model_channels(const nvl_comm_t *c, nvl_algo_t algo,
                       nvl_proto_t proto, size_t bytes)
{
    int nc = (int)c->topo->nccl.channels;
    if (c->tuner.max_channels > 0 && c->tuner.max_channels < nc)
        nc = c->tuner.max_channels;
    int min_nc = c->tuner.min_channels > 0 ? c->tuner.min_channels : 1;
    double threshold = proto == NVL_PROTO_SIMPLE ? 64.0
                       : proto == NVL_PROTO_LL128 ? 8.0
                       : algo == NVL_ALGO_RING ? 16.0 * c->size
                                               : 8.0;
    while (nc > min_nc && (double)bytes < nc * 512.0 * threshold)
        nc--;
    return nc;
}
