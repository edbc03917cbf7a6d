/* How data mode moves a checked call's data: one row per data path, the
 * first whose predicate holds takes the call.  A row plans what rides
 * along with the agreement every call opens with (agree.c) and, once the
 * members agree, finishes the move.  Every path gives the same bits as the
 * others for the same call; only the host's cost differs (docs/
 * collectives.md, "What the emulation costs"), and the modeled time is the
 * tuner's or the kernel's whatever the path.
 *
 *   window           a serving engine's kernel, members on one host: the
 *                    buffers staged in a shared window (ar_window.c)
 *   engine-direct    a kernel's allreduce in a small group: riding along
 *                    with the agreement (direct.c's plan, ar_data.c's sums)
 *   engine-gathered  a kernel's allreduce in a larger group: every buffer
 *                    gathered within the agreement while it has room
 *   engine-messages  a kernel's allreduce by MPI messages (ar_data.c)
 *   direct           small groups: the data rides along with the
 *                    agreement, then direct exchanges (direct.c)
 *   wide             larger groups: a small allreduce reduced within the
 *                    agreement, else one MPI collective (wide.c)
 *   algorithm        the chosen algorithm's own steps (ring.c, tree.c ...;
 *                    p2p.c for all-to-all and send/recv)
 * The engine rows sum in the kernel's order on every path; the others in
 * member order (or, on the algorithm path, the algorithm's). */
#include <string.h>

#include "host_paths.h"

static bool small_group(const nvl_data_move_t *m)
{
    return m->call->comm->size <= NVL_DIRECT_MAX_MEMBERS;
}

static bool fast(const nvl_data_move_t *m)
{
    return m->call->comm->data_path == NVL_DATA_PATH_FAST;
}

/* The chosen algorithm's own steps (p2p.c's for alltoall and sendrecv). */
static nvl_status_t run_algorithm(const nvl_data_move_t *m)
{
    return m->call->coll <= NVL_COLL_ALLREDUCE
               ? nvl_coll_algo(m->algo)->run(m->call)
               : nvl_p2p_run(m->call);
}

/* ---- predicates -------------------------------------------------------- */

static bool window_fits(const nvl_data_move_t *m)
{
    return m->engine && nvl_ar_window_fits(m->call->comm, m->data_bytes);
}

static bool engine_direct_fits(const nvl_data_move_t *m)
{
    return m->engine && fast(m) && small_group(m);
}

static bool engine_gathered_fits(const nvl_data_move_t *m)
{
    return m->engine && fast(m);
}

static bool engine_fits(const nvl_data_move_t *m) { return m->engine; }

static bool direct_fits(const nvl_data_move_t *m)
{
    return fast(m) && small_group(m);
}

static bool any_call(const nvl_data_move_t *m)
{
    (void)m;
    return true;
}

/* ---- plans: what rides along with the agreement ------------------------ */

static void plan_nothing(nvl_data_move_t *m, nvl_agree_in_t *in)
{
    (void)m;
    (void)in;
}

/* Copies the buffer into this member's slot when the window has room. */
static void plan_window(nvl_data_move_t *m, nvl_agree_in_t *in)
{
    (void)in;
    m->staged = nvl_ar_window_stage(m->call);
}

static void plan_direct(nvl_data_move_t *m, nvl_agree_in_t *in)
{
    m->direct = nvl_direct_plan(m->call, m->msgs);
    in->msgs = m->msgs;
}

/* Larger groups: an allreduce whose `ride` bytes fit the agreement's room
 * rides along, reduced (or, for a kernel's own order, gathered); the
 * agreement's room follows the need of the calls before. */
static void plan_ride(nvl_data_move_t *m, nvl_agree_in_t *in, size_t ride,
                      bool gather)
{
    if (m->call->coll != NVL_COLL_ALLREDUCE || ride > NVL_AGREE_MAX_PAYLOAD)
        return;
    in->need = ride;
    if (ride <= nvl_agree_room(m->call->comm)) {
        in->reduce_send = m->call->send;
        in->reduce_bytes = m->data_bytes;
        in->gather = gather;
    }
}

static void plan_gathered(nvl_data_move_t *m, nvl_agree_in_t *in)
{
    plan_ride(m, in, m->data_bytes * (size_t)m->call->comm->size, true);
}

static void plan_reduced(nvl_data_move_t *m, nvl_agree_in_t *in)
{
    plan_ride(m, in, m->data_bytes, false);
}

/* ---- finishes: the rest of the move, once agreed ----------------------- */

/* A kernel's sums in its order, from what the agreement carried. */
static nvl_status_t finish_engine(nvl_data_move_t *m,
                                  const nvl_agree_out_t *agreed)
{
    return nvl_ar_run(m->call, m->order, m->direct, m->msgs,
                      agreed->reduced);
}

/* The window, unless the members turn out to span hosts. */
static nvl_status_t finish_window(nvl_data_move_t *m,
                                  const nvl_agree_out_t *agreed)
{
    bool moved = false;
    nvl_status_t st = nvl_ar_window_run(m->call, m->order, m->staged, &moved);
    return st == NVL_OK && !moved ? finish_engine(m, agreed) : st;
}

static nvl_status_t finish_direct(nvl_data_move_t *m,
                                  const nvl_agree_out_t *agreed)
{
    (void)agreed;
    return m->direct != NVL_DIRECT_NONE
               ? nvl_direct_finish(m->call, m->direct, m->msgs)
               : run_algorithm(m);
}

static nvl_status_t finish_wide(nvl_data_move_t *m,
                                const nvl_agree_out_t *agreed)
{
    const nvl_coll_call_t *call = m->call;
    if (agreed->reduced != NULL) {
        if (call->recv != agreed->reduced && m->data_bytes > 0)
            memcpy(call->recv, agreed->reduced, m->data_bytes);
        return NVL_OK;
    }
    bool handled = false;
    nvl_status_t st = nvl_wide_run(call, &handled);
    return st == NVL_OK && !handled ? run_algorithm(m) : st;
}

static nvl_status_t finish_algorithm(nvl_data_move_t *m,
                                     const nvl_agree_out_t *agreed)
{
    (void)agreed;
    return run_algorithm(m);
}

/* In the order they are tried. */
static const nvl_data_path_row_t paths[] = {
    {{"window", "a serving engine's allreduce, members on one host: "
                "buffers staged in a shared MPI window (ar_window.c)"},
     window_fits, plan_window, finish_window},
    {{"engine-direct", "a serving engine's allreduce, up to 8 members: the "
                       "buffers ride along with the agreement (ar_data.c)"},
     engine_direct_fits, plan_direct, finish_engine},
    {{"engine-gathered", "a serving engine's allreduce, more members: the "
                         "buffers gathered within the agreement while it "
                         "has room, else MPI messages (ar_data.c)"},
     engine_gathered_fits, plan_gathered, finish_engine},
    {{"engine-messages", "a serving engine's allreduce on the algorithm "
                         "path: MPI messages, the kernel's order "
                         "(ar_data.c)"},
     engine_fits, plan_nothing, finish_engine},
    {{"direct", "up to 8 members: the data rides along with the agreement, "
                "then direct exchanges, member order (direct.c)"},
     direct_fits, plan_direct, finish_direct},
    {{"wide", "more members: a small allreduce reduced within the "
              "agreement, else one MPI collective (wide.c)"},
     fast, plan_reduced, finish_wide},
    {{"algorithm", "the chosen algorithm's own steps, in its order (ring.c, "
                   "tree.c, nvls.c, nvls_tree.c, pat.c, p2p.c)"},
     any_call, plan_nothing, finish_algorithm},
};

const nvl_family_t nvl_data_path_family =
    NVL_FAMILY("data-path", "how data mode moves a collective's data on the "
                            "host, tried in this order (the modeled time is "
                            "the same on every path)",
               paths);

const nvl_data_path_row_t *nvl_data_path_plan(nvl_data_move_t *m,
                                              nvl_agree_in_t *in)
{
    size_t i = 0;
    while (!paths[i].fits(m))
        i++; /* the last row takes every call */
    paths[i].plan(m, in);
    return &paths[i];
}
