/* An NCCL collective captured in a CUDA graph beside compute kernels, as a
 * serving step replays it (docs/collectives.md, "NCCL inside a CUDA
 * graph").
 *
 * No host enqueues the call: the graph launches NCCL's kernel node after
 * the node before it, so the call's GPU time is
 *
 *     t = graph_edge + kernel(algorithm, protocol, bytes)
 *
 * kernel: the kernel's own time (nvl_coll_kernel_ps), the same that
 *   nccl-tests -G times (nvl_coll_loop_time_ps): NCCL's latencies and the
 *   bytes over the channels NCCL runs, a channel up to one SM's peer rate
 *   while few run (in the serving steps' traces the ring LL all_reduce of
 *   114,688 B at 4 GPUs runs 11.2-11.7 us; the kernel gives 11.4 on
 *   hgx-h200-x4.topo);
 * graph_edge ([nccl] graph_edge, 2.4 us): measured from the end of the
 *   kernel before to the start of NCCL's, 2.35 us (hgx-h200-x4 serve
 *   traces, TP 4), 2.47-2.55 us (h200-x2-serve, TP 2), 2.34-2.53 us
 *   (hgx-h100-x4 torch steps, TP 4), where two compute kernels of the same
 *   graphs start 0.42 us apart (NCCL's own nodes around its kernel under
 *   capture, NCCL's strong streams, sit in that gap; it is measured whole,
 *   not node by node).
 *
 * An algorithm without a kernel time (NVLS, NVLSTree, PAT) keeps the
 * model's time. */
#include "coll_impl.h"

void nvl_comm_set_graph(nvl_comm_t *comm, bool graph)
{
    comm->graph = graph;
}

void nvl_coll_graph_time(const nvl_comm_t *comm, nvl_coll_info_t *info)
{
    if (nvl_coll_has_kernel(comm, info))
        info->time_ps = comm->topo->nccl.graph_edge_ps +
                        nvl_coll_kernel_ps(comm, info);
}
