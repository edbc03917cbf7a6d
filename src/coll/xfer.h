/* Data mode's movement of payloads through MPI (src/coll/xfer.c) and the
 * blocks and groups the algorithms walk: private to src/coll, for the
 * algorithms' and the data paths' files. */
#ifndef NVLEMU_COLL_XFER_H
#define NVLEMU_COLL_XFER_H

#include "coll_impl.h"

/* ---- data movement helpers (src/coll/xfer.c) --------------------------- */

/* Sends sbytes to dst and receives rbytes from src at once (either may be
 * -1 / 0 to skip), in pieces MPI's int counts can hold, waiting by the
 * host's wait policy.  Tags separate concurrent phases. */
nvl_status_t nvl_xfer_sendrecv(nvl_comm_t *comm, const void *sbuf,
                               size_t sbytes, int dst, void *rbuf,
                               size_t rbytes, int src, nvl_tag_t tag);

/* Runs n sends and receives (nvl_p2p_op_t) at once: all posted together,
 * receives first, and waited for together, in pieces MPI's int counts can
 * hold, by the host's wait policy. */
nvl_status_t nvl_xfer_exchange(nvl_comm_t *comm, const nvl_p2p_op_t *ops,
                               size_t n, nvl_tag_t tag);

/* Reduces n elements of in into inout (nvl_reduce_into). */
void nvl_xfer_reduce(const nvl_coll_call_t *call, void *inout, const void *in,
                     size_t n);

/* Scratch memory of the communicator, at least bytes long (owned by the
 * comm; valid until the next call). NULL (reported) when out of memory. */
void *nvl_xfer_scratch(nvl_comm_t *comm, size_t bytes);


/* ---- building blocks shared by algorithms ------------------------------ */

/* A group of members (comm ranks) in the order an algorithm walks them, and
 * this rank's position in it. */
typedef struct {
    const int *members;
    int n;
    int pos;
} nvl_group_t;

/* Every member of the communicator, in member order. */
static inline nvl_group_t nvl_group_all(const nvl_comm_t *c)
{
    return (nvl_group_t){c->members, c->size, c->rank};
}

/* Element blocks: block i is [off[i], off[i] + len[i]). */
typedef struct {
    const size_t *off;
    const size_t *len;
} nvl_blocks_t;

/* Splits count elements into n nearly equal blocks (the first count % n
 * get one more); off and len have n entries. */
void nvl_blocks_even(size_t count, int n, size_t *off, size_t *len);

/* A pass of a block algorithm over g's blocks b of buf. */
typedef nvl_status_t nvl_block_pass_fn(const nvl_coll_call_t *call,
                                       const nvl_group_t *g, char *buf,
                                       const nvl_blocks_t *b);

/* Ring reduce-scatter: afterwards this member's block g->pos holds the
 * reduction of everyone's block g->pos. */
nvl_block_pass_fn nvl_ring_reduce_scatter;
/* Ring allgather: each member contributes its block g->pos. */
nvl_block_pass_fn nvl_ring_allgather;
/* Direct (NVLS-style) reduce-scatter: every member pulls its block from
 * every other member and reduces them in member order 0..n-1. */
nvl_block_pass_fn nvl_direct_reduce_scatter;
/* Direct (multicast-style) allgather. */
nvl_block_pass_fn nvl_direct_allgather;

/* A block algorithm's two passes: ring.c's (ring steps) or nvls.c's
 * (direct pulls and multicast). */
typedef struct {
    const char *name; /* in the out-of-memory report: "ring", "NVLS" */
    nvl_block_pass_fn *reduce_scatter;
    nvl_block_pass_fn *allgather;
} nvl_block_passes_t;

/* Moves the data of call (an allreduce, allgather or reduce-scatter over
 * every member) by p's passes: allreduce as a reduce-scatter then an
 * allgather on recv cut into even blocks, allgather and reduce-scatter on
 * one block of call->count elements a member.  Reports running out of
 * memory (NVL_ERR_NOMEM); NVL_ERR_INVALID for another collective. */
nvl_status_t nvl_blocks_run(const nvl_coll_call_t *call,
                            const nvl_block_passes_t *p);

#endif
