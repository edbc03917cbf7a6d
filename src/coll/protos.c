/* The table of NCCL's protocols: one row per nvl_proto_t, carrying its
 * name (NCCL_PROTO's spelling) and every number and rule of the cost model
 * that depends on the protocol alone (docs/collectives.md).  A rule that
 * differs for one algorithm sits in that algorithm's row (algos.c). */
#include "coll_impl.h"

/* The ceilings NCCL puts on what a protocol's channels move (tuning.cc):
 * LL over all channels (llMaxBws), LL128 per channel
 * (perChMaxRingLL128Bws); Simple has none. */
static double ll_max_bw(const nvl_nccl_spec_t *n, double channels)
{
    (void)channels;
    return n->ll_max_bw_bytes_per_s;
}

static double ll128_max_bw(const nvl_nccl_spec_t *n, double channels)
{
    return channels * n->ll128_max_bw_per_channel_bytes_per_s;
}

/* eff: protocol efficiencies, NCCL tuning.cc: LL moves 4 data bytes per
 * 8-byte line; LL128 120 of 128 bytes (NCCL applies 0.92).
 * chunk_bytes: buffer sizes (init.cc DEFAULT_*BUFFSIZE, device.h) over
 * NCCL_STEPS: LL 8 lines x 512 threads x NCCL_STEPS x 16 B, half of it
 * data; LL128 120 elements x 640 threads x NCCL_STEPS x 8 B, 15 of 16
 * words data; Simple 4 MiB.
 * thread_threshold: NCCL's bytes per thread before adding a channel
 * (tuning.cc: NCCL_LL_THREAD_THRESHOLD 8, NCCL_LL128_THREAD_THRESHOLD 8,
 * NCCL_SIMPLE_THREAD_THRESHOLD 64; NCCL 2.28 init log at 2 ranks:
 * "threadThresholds 8/8/64 | 16/8/64 | 512 | 512"; Ring's LL scales with
 * the ranks, its row says so).
 * threads: a channel's threads, NCCL's maxThreads (device.h
 * NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS 640,
 * NCCL_SIMPLE_MAX_NTHREADS 512; the 2.28 tuning log's "Max NThreads 512 |
 * 640 | 512"). */
const nvl_coll_proto_t nvl_coll_protos[NVL_PROTO_COUNT] = {
    [NVL_PROTO_LL] = {
        .id = {"LL", "low latency: 8-byte stores of 4 data bytes and a "
                     "flag (NCCL prims_ll.h)"},
        .eff = 0.5,
        .chunk_bytes = (size_t)8 * 512 * NVL_NCCL_STEPS * 16 /
                       NVL_NCCL_STEPS / 2,
        .thread_threshold = 8.0,
        .threads = 512,
        .knee = false,
        .line_flags = true,
        .max_bw = ll_max_bw,
    },
    [NVL_PROTO_LL128] = {
        .id = {"LL128", "128-byte lines of 120 data bytes and a flag, on "
                        "NVLink (NCCL prims_ll128.h)"},
        .eff = 0.92,
        .chunk_bytes = (size_t)120 * 640 * NVL_NCCL_STEPS * 8 /
                       NVL_NCCL_STEPS / 16 * 15,
        .thread_threshold = 8.0,
        .threads = 640,
        .knee = true,
        .line_flags = true,
        .max_bw = ll128_max_bw,
    },
    [NVL_PROTO_SIMPLE] = {
        .id = {"Simple", "whole buffers behind a fence per step: highest "
                         "bandwidth, highest latency (NCCL prims_simple.h)"},
        .eff = 1.0,
        .chunk_bytes = ((size_t)4 << 20) / NVL_NCCL_STEPS,
        .thread_threshold = 64.0,
        .threads = 512,
        .knee = true,
        .line_flags = false,
        .max_bw = NULL,
    },
};

const nvl_family_t nvl_proto_family =
    NVL_FAMILY("protocol", "NCCL's protocols (NCCL_PROTO)", nvl_coll_protos);

const char *nvl_proto_name(nvl_proto_t p)
{
    return nvl_family_name(&nvl_proto_family, (int)p);
}
