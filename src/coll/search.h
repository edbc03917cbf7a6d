/* NCCL's topology search within one NVLink domain (search.c; NCCL
 * search.cc ncclTopoCompute), private to the collective model: the
 * bandwidth of the graphs NCCL's tuner rates the ring (ring.c) and NVLS
 * (nvls.c) on, by [nccl] compcap. */
#ifndef NVLEMU_COLL_SEARCH_H
#define NVLEMU_COLL_SEARCH_H

#include "coll_impl.h"

/* Both return bytes per second, for NCCL's tuner only.
 * nvl_coll_search_nvls_bw: the NVLS graph of `heads` channels, nChannels x
 * bwIntra (nvls.c); without a compcap, the NVLink data rate.
 * nvl_coll_search_ring_bw: the ring graph, the best nChannels x bwIntra of
 * the speeds pass 1 tries: from the first at most maxBw (links x NCCL's
 * rate per link) down while the next is over .49 of the best graph's
 * speed, each fitting floor(maxBw / speed) channels (at most 32), stopping
 * once a graph reaches maxBw; 360 GB/s on Hopper's 18 links (6 x 60, 370.8
 * maxBw), 720 on Blackwell's (8 x 90, 721.8).  Without a compcap, across
 * NVLink domains or on die links: the path's data rate. */
double nvl_coll_search_nvls_bw(const nvl_comm_t *c, double heads);
double nvl_coll_search_ring_bw(const nvl_comm_t *c);

#endif
