/* Private to the engine: what moe_ep.c (an expert-parallel layer) takes
 * from moe_book.c (the layer's numbers: its routing's counts, the other
 * all-to-all's times, timing mode's book of a pass). */
#ifndef NVL_ENGINE_MOE_EP_H
#define NVL_ENGINE_MOE_EP_H

#include "engine_impl.h"

/* One expert-parallel MoE layer on this rank: its rows' routing and the
 * plan and buffers of the two all-to-alls. */
typedef struct {
    uint64_t R, hid, pay;          /* rows; values per row; dispatched */
    uint32_t k;                    /* experts per row */
    int n;                         /* ranks */
    uint32_t *ids;                 /* R x k: the rows' experts */
    float *w;                      /* R x k: their weights */
    unsigned char *dest;           /* R x n: row t goes to rank d */
    uint64_t *to, *sofs;           /* rows sent to each rank, and where */
    uint64_t *from, *rofs;         /* rows received from each, and where */
    uint64_t *pto, *pfrom;         /* (row, expert) pairs to / from each */
    double *wsend, *wrecv;         /* pairs / rows to and from each rank:
                                      the low-latency mode's wire factors
                                      (one message per pair) */
    uint64_t nsend, nrecv;
    uint64_t *mine;                /* tokens per expert, this rank's rows */
    uint64_t *count;               /* tokens per expert, the whole job */
    float *sbuf, *rbuf;            /* dispatch (data mode) */
    float *xin, *win, *back;       /* received rows, weights, outputs */
    uint32_t *idin;
} nvl_ep_layer_t;

/* The expert group holding expert x (groups hold nvl_range_split
 * shares). */
int nvl_ep_expert_group(const nvl_engine_t *e, uint32_t x);
/* Whether this run's layers exchange by allgather and reduce-scatter
 * (moe_agrs.c): --ep-comm allgather, or auto under attention DP. */
bool nvl_ep_allgather(const nvl_engine_t *e);
/* The one-sided mode of this pass: low-latency in decode steps, high-
 * throughput in the prefill. */
nvl_a2a_t nvl_ep_onesided_mode(const nvl_engine_t *e);
/* Frees what s holds. */
void nvl_ep_free(nvl_ep_layer_t *s);
/* The counts of layer li's routing of this rank's s->R rows from row0
 * over the expert groups (routed from h in data mode, counted from the
 * seeded routing in timing mode), and s's per-rank arrays from them. */
void nvl_ep_route_counts(nvl_engine_t *e, uint32_t li, uint64_t row0,
                         const float *h, nvl_ep_layer_t *s);
/* The wire factors of the low-latency mode (into s), and the dispatch and
 * combine as the implementation the run does not use would time them on
 * member `member`, whose numbers s holds (t[0], t[1]), or on this rank;
 * false when that implementation is not usable. */
bool nvl_ep_alt_member(nvl_engine_t *e, nvl_ep_layer_t *s, int member,
                       int64_t t[2]);
bool nvl_ep_alt_local(nvl_engine_t *e, nvl_ep_layer_t *s, int64_t t[2]);
/* Timing mode, collective over e->tp: the pass's book (this rank's R rows
 * from row0), made once a pass at its first expert-parallel layer. */
void nvl_ep_book_pass(nvl_engine_t *e, uint64_t R, uint64_t row0);
/* Layer li's numbers from the pass's book into s (as the data mode's
 * routing and exchange leave them); its agreed alternative times. */
const int64_t *nvl_ep_from_book(nvl_engine_t *e, uint32_t li,
                                nvl_ep_layer_t *s);

#endif
