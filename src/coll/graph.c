/* An NCCL collective captured in a CUDA graph beside compute kernels, as a
 * serving step replays it (docs/collectives.md, "NCCL inside a CUDA
 * graph").
 *
 * No host enqueues the call: the graph launches NCCL's kernel node after
 * the node before it, so the call's GPU time is
 *
 *     t = graph_edge + rating(algorithm, protocol, bytes)
 *
 * rating: NCCL's own latency + bytes / bandwidth of the algorithm and
 *   protocol the tuner picked (tuning.cc, nvl_coll_nccl_rating_s), which
 *   matches NCCL's kernels on a CUDA graph's replay (nccl-tests -G 20 on
 *   HGX H100; in the serving steps' traces the ring LL all_reduce of
 *   114,688 B at 4 GPUs runs 11.2-11.7 us, the rating gives 11.4);
 * graph_edge ([nccl] graph_edge, 2.4 us): measured from the end of the
 *   kernel before to the start of NCCL's, 2.35 us (hgx-h200-x4 serve
 *   traces, TP 4), 2.47-2.55 us (h200-x2-serve, TP 2), 2.34-2.53 us
 *   (hgx-h100-x4 torch steps, TP 4), where two compute kernels of the same
 *   graphs start 0.42 us apart (NCCL's own nodes around its kernel under
 *   capture, NCCL's strong streams, sit in that gap; it is measured whole,
 *   not node by node).
 *
 * An algorithm without a rating (NVLS, PAT) keeps the model's time. */
#include "coll_impl.h"

void nvl_comm_set_graph(nvl_comm_t *comm, bool graph)
{
    comm->graph = graph;
}

void nvl_coll_graph_time(const nvl_comm_t *comm, nvl_coll_info_t *info)
{
    /* the rating the tuner chose by, kept with its choice */
    if (info->rating_ps > 0)
        info->time_ps = comm->topo->nccl.graph_edge_ps + info->rating_ps;
}
