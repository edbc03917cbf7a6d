/* Private to src/coll: how data mode moves a call's data on the host once
 * it is checked and timed -- the data paths (data_path.c) and the files
 * that move the bytes: direct.c (small groups), wide.c (larger ones),
 * ar_data.c and ar_window.c (the serving engines' allreduces). */
#ifndef NVLEMU_COLL_HOST_PATHS_H
#define NVLEMU_COLL_HOST_PATHS_H

#include "coll_impl.h"

/* ---- the data paths of larger groups (src/coll/wide.c) ----------------- */

/* Data mode, more than NVL_DIRECT_MAX_MEMBERS members, after agreeing:
 * moves an allreduce, allgather or reduce-scatter with one MPI collective
 * of the same name (reductions by nvl_reduce_into); *handled_out false
 * (nothing done) for the other collectives and for sizes MPI cannot take
 * in one call. */
nvl_status_t nvl_wide_run(const nvl_coll_call_t *call, bool *handled_out);

/* Frees the reduction ops (comm destruction). */
void nvl_wide_free(nvl_comm_t *comm);

/* ---- the direct data paths of small groups (src/coll/direct.c) --------- */

/* How a call's data moves when the group agrees directly. */
typedef enum {
    NVL_DIRECT_NONE,     /* the chosen algorithm's run() after agreeing */
    NVL_DIRECT_WHOLE,    /* allreduce: every member's buffer to every other
                            within the agreement; each reduces all of them */
    NVL_DIRECT_SHARES,   /* allreduce: block k to member k within the
                            agreement, reduced there, then gathered */
    NVL_DIRECT_SPLIT,    /* allreduce: after agreeing, the same in two
                            exchanges (blocks too large to ride along) */
    NVL_DIRECT_GATHER,   /* allgather: every member's block to every other
                            within the agreement */
    NVL_DIRECT_SCATTER   /* reduce-scatter: block k to member k within the
                            agreement, reduced there */
} nvl_direct_path_t;

/* Data mode, group of up to NVL_DIRECT_MAX_MEMBERS, arguments checked: the
 * path of the call and, in msgs (comm size entries), what its agreement
 * messages carry. */
nvl_direct_path_t nvl_direct_plan(const nvl_coll_call_t *call,
                                  nvl_agree_msg_t *msgs);

/* Data mode, after agreeing: a serving engine's allreduce moved and
 * reduced in `order` (ar_data.c), every member getting the same bits,
 * from what the agreement carried: in groups of up to
 * NVL_DIRECT_MAX_MEMBERS path and msgs of nvl_direct_plan (NVL_DIRECT_NONE:
 * nothing), in larger ones every member's buffer, gathered (NULL:
 * nothing). */
nvl_status_t nvl_ar_run(const nvl_coll_call_t *call, nvl_ar_order_t order,
                        nvl_direct_path_t path, const nvl_agree_msg_t *msgs,
                        const void *gathered);

/* Elements [lo, lo + len) of an allreduce, member k's copy of them at x[k]
 * (n entries), reduced in `order` (float, rounded
 * once) into out, which may be one of the x (ar_data.c). */
void nvl_ar_reduce_range(const nvl_coll_call_t *call, nvl_ar_order_t order,
                         const char **x, size_t lo, size_t len, char *out);

/* ---- the shared-window path of one host's members (src/coll/ar_window.c) */

/* Data mode, a serving engine's allreduce of `bytes`: whether it goes
 * through the shared window (unless the members turn out to span hosts);
 * the same on every member for equal calls. */
bool nvl_ar_window_fits(const nvl_comm_t *comm, size_t bytes);

/* Before agreeing, for a call that fits: copies the send buffer into this
 * member's slot when the window has room for it; returns whether it did
 * (the same on every member for equal calls). */
bool nvl_ar_window_stage(const nvl_coll_call_t *call);

/* After agreeing, for a call that fits: the allreduce through the window,
 * made or grown first (collectively) when stage did not stage it.
 * *handled_out false (nothing done) when the members span hosts: then
 * nvl_ar_run moves it.  Out of memory: reported, NVL_ERR_NOMEM. */
nvl_status_t nvl_ar_window_run(const nvl_coll_call_t *call,
                               nvl_ar_order_t order, bool staged,
                               bool *handled_out);

/* Frees the window (collective: comm destruction). */
void nvl_ar_window_free(nvl_comm_t *comm);

/* After agreeing: the rest of the data movement of a planned call. */
nvl_status_t nvl_direct_finish(const nvl_coll_call_t *call,
                               nvl_direct_path_t path,
                               const nvl_agree_msg_t *msgs);

/* ---- how data mode moves a call's data (src/coll/data_path.c) ---------- */

/* One call's data movement, from its plan to its finish. */
typedef struct {
    const nvl_coll_call_t *call; /* checked, data mode */
    nvl_algo_t algo;             /* the tuner's choice (the algorithm path) */
    bool engine;                 /* a serving engine's allreduce kernel */
    nvl_ar_order_t order;        /* engine: the kernel's reduction order */
    size_t data_bytes;           /* count x the buffers' element size */
    bool staged;                 /* window: staged before agreeing */
    nvl_direct_path_t direct;    /* direct.c's plan (NVL_DIRECT_NONE) */
    nvl_agree_msg_t msgs[NVL_DIRECT_MAX_MEMBERS]; /* what rides along */
} nvl_data_move_t;

/* One data path: the calls it takes, what it has ride along with the
 * agreement (in), and the rest of the move once the members agree. */
typedef struct {
    nvl_member_t id;
    bool (*fits)(const nvl_data_move_t *move);
    void (*plan)(nvl_data_move_t *move, nvl_agree_in_t *in);
    nvl_status_t (*finish)(nvl_data_move_t *move,
                           const nvl_agree_out_t *agreed);
} nvl_data_path_row_t;

/* Before agreeing: the first data path that takes move (the same on every
 * member for equal calls), its plan made into move and in. */
const nvl_data_path_row_t *nvl_data_path_plan(nvl_data_move_t *move,
                                              nvl_agree_in_t *in);

#endif
