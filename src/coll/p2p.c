/* Point-to-point traffic: alltoall (every pair directly, NCCL's p2p path),
 * sendrecv, and groups of sends and receives (nvl_group_start .. _end).
 *
 * A GPU's NVLink ports and its NIC are shared by everything it moves at
 * once, per direction: an alltoall member sends (N-1) blocks, those to its
 * own NVLink domain through its NVLink ports, the others through its NIC,
 * and receives as many.
 *
 * Cost: T = kernel + ring.simple base + one step (nvlink_lat + hop_lat, or
 *   net_lat + scale-out lat when any peer is in another domain)
 *   + max(out_nvlink, in_nvlink) / (nvlink_bw x eta)
 *     max-ed with max(out_net, in_net) / (NIC / oversubscription),
 *   the slowest member setting everyone's end. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_impl.h"
#include "nvlemu/runtime.h"

/* Bytes this member moves per fabric and direction. */
typedef struct {
    double out[NVL_FABRIC_COUNT], in[NVL_FABRIC_COUNT];
} port_load_t;

static void load_add(const nvl_comm_t *c, port_load_t *l, int peer,
                     bool out, double bytes)
{
    nvl_fabric_t f = nvl_topo_fabric(c->topo, c->gpus[c->rank], c->gpus[peer]);
    if (out)
        l->out[f] += bytes;
    else
        l->in[f] += bytes;
}

static int64_t port_time_ps(const nvl_comm_t *c, const port_load_t *l)
{
    const nvl_topo_t *t = c->topo;
    uint32_t me = c->gpus[c->rank];
    double nv = fmax(l->out[NVL_FABRIC_NVLINK], l->in[NVL_FABRIC_NVLINK]);
    double net = fmax(l->out[NVL_FABRIC_SCALEOUT], l->in[NVL_FABRIC_SCALEOUT]);
    if (nv == 0 && net == 0)
        return 0;
    const nvl_nccl_spec_t *k = &t->nccl;
    double lat = (double)t->gpu.kernel_overhead_ps +
                 (double)k->base_lat_ps[NVL_ALGO_RING][NVL_PROTO_SIMPLE] +
                 (net > 0 ? (double)k->net_lat_ps[NVL_ALGO_RING]
                                                 [NVL_PROTO_SIMPLE] +
                                (double)t->scaleout.lat_ps
                          : (double)k->nvlink_lat_ps[NVL_ALGO_RING]
                                                    [NVL_PROTO_SIMPLE] +
                                (double)t->nvlink.hop_lat_ps);
    double t_nv = nv > 0 ? nv / (nvl_topo_nvlink_bw(t, me) * NVL_NVLINK_DATA_EFF)
                         : 0;
    double t_net = net > 0 ? net / (nvl_topo_nic_bw(t, me) /
                                    t->scaleout.oversubscription)
                           : 0;
    return (int64_t)lat + nvl_ps_from_s(fmax(t_nv, t_net));
}

int64_t nvl_p2p_predict_ps(const nvl_coll_call_t *call)
{
    nvl_comm_t *c = call->comm;
    double bytes = (double)(call->count * nvl_dtype_size(call->dtype));
    port_load_t l = {{0}, {0}};
    if (call->coll == NVL_COLL_ALLTOALL) {
        for (int i = 0; i < c->size; i++) {
            load_add(c, &l, i, true, bytes);
            load_add(c, &l, i, false, bytes);
        }
    } else if (c->size > 1) {
        load_add(c, &l, call->peer_to, true, bytes);
        load_add(c, &l, call->peer_from, false, bytes);
    }
    return port_time_ps(c, &l);
}

nvl_status_t nvl_p2p_run(const nvl_coll_call_t *call)
{
    nvl_comm_t *c = call->comm;
    size_t bytes = call->count * nvl_dtype_size(call->dtype);
    if (call->coll == NVL_COLL_SENDRECV) {
        const void *send = call->send;
        if (send == call->recv && bytes > 0) { /* in place: send a copy */
            void *copy = nvl_xfer_scratch(c, bytes);
            if (copy == NULL)
                return NVL_ERR_NOMEM;
            memcpy(copy, send, bytes);
            send = copy;
        }
        return nvl_xfer_sendrecv(c, send, bytes, call->peer_to, call->recv,
                                 bytes, call->peer_from, 140);
    }
    int n = c->size, r = c->rank;
    memmove((char *)call->recv + (size_t)r * bytes,
            (const char *)call->send + (size_t)r * bytes, bytes);
    if (n == 1)
        return NVL_OK;
    nvl_p2p_op_t *ops = malloc(2 * (size_t)n * sizeof *ops);
    if (ops == NULL) {
        nvl_report("out of memory for a %d-member alltoall", n);
        return NVL_ERR_NOMEM;
    }
    size_t m = 0;
    for (int k = 0; k < n; k++) {
        if (k == r)
            continue;
        ops[m++] = (nvl_p2p_op_t){true, (char *)call->send + (size_t)k * bytes,
                                  bytes, k};
        ops[m++] = (nvl_p2p_op_t){false, (char *)call->recv + (size_t)k * bytes,
                                  bytes, k};
    }
    nvl_status_t st = nvl_xfer_exchange(c, ops, m, 141);
    free(ops);
    return st;
}

/* ---- groups ------------------------------------------------------------ */

nvl_status_t nvl_group_start(nvl_comm_t *c)
{
    if (c->group_open) {
        nvl_report("nvl_group_start: a group is already open on member %d "
                   "(GPU %" PRIu32 ")", c->rank, c->gpus[c->rank]);
        return NVL_ERR_INVALID;
    }
    c->group_open = true;
    c->n_ops = 0;
    return NVL_OK;
}

static nvl_status_t queue(nvl_comm_t *c, bool send, void *buf, size_t count,
                          nvl_dtype_t dtype, int peer)
{
    const char *what = send ? "nvl_send" : "nvl_recv";
    if (!c->group_open) {
        nvl_report("%s: outside a group (call nvl_group_start first)", what);
        return NVL_ERR_INVALID;
    }
    size_t esz = dtype < NVL_DT_COUNT ? nvl_dtype_size(dtype) : 0;
    if (esz == 0 || peer < 0 || peer >= c->size || count > SIZE_MAX / esz) {
        nvl_report("%s: member %d: bad arguments (count %zu, dtype %d, peer "
                   "%d of %d)", what, c->rank, count, (int)dtype, peer,
                   c->size);
        return NVL_ERR_INVALID;
    }
    if (c->n_ops == c->cap_ops) {
        size_t cap = c->cap_ops ? 2 * c->cap_ops : 16;
        nvl_p2p_op_t *ops = realloc(c->ops, cap * sizeof *ops);
        if (ops == NULL) {
            nvl_report("%s: out of memory", what);
            return NVL_ERR_NOMEM;
        }
        c->ops = ops;
        c->cap_ops = cap;
    }
    c->ops[c->n_ops++] = (nvl_p2p_op_t){send, buf, count * esz, peer};
    return NVL_OK;
}

nvl_status_t nvl_send(nvl_comm_t *c, const void *buf, size_t count,
                      nvl_dtype_t dtype, int peer)
{
    return queue(c, true, (void *)buf, count, dtype, peer);
}

nvl_status_t nvl_recv(nvl_comm_t *c, void *buf, size_t count,
                      nvl_dtype_t dtype, int peer)
{
    return queue(c, false, buf, count, dtype, peer);
}

/* Data mode: what each member sends to each other must be what that one
 * expects; one MPI_Alltoall of the byte counts tells.  Writes why on a
 * mismatch seen here (as a receiver). */
static bool pairs_match(nvl_comm_t *c, char *why, size_t len)
{
    int n = c->size;
    uint64_t *sent = calloc(2 * (size_t)n, sizeof *sent);
    if (sent == NULL) {
        snprintf(why, len, "out of memory checking the group");
        return false;
    }
    uint64_t *told = sent + n;
    for (size_t i = 0; i < c->n_ops; i++)
        if (c->ops[i].send)
            sent[c->ops[i].peer] += c->ops[i].bytes;
    MPI_Alltoall(sent, 1, MPI_UINT64_T, told, 1, MPI_UINT64_T, c->mpi);
    bool ok = true;
    for (int p = 0; p < n && ok; p++) {
        uint64_t want = 0;
        for (size_t i = 0; i < c->n_ops; i++)
            if (!c->ops[i].send && c->ops[i].peer == p)
                want += c->ops[i].bytes;
        if (want != told[p]) {
            snprintf(why, len, "member %d sends %" PRIu64 " bytes to member "
                               "%d, which receives %" PRIu64 " from it",
                     p, told[p], c->rank, want);
            ok = false;
        }
    }
    free(sent);
    return ok;
}

nvl_status_t nvl_group_end(nvl_comm_t *c, nvl_coll_info_t *info_out)
{
    char why[256] = "";
    bool ok = c->group_open;
    if (!ok)
        snprintf(why, sizeof why, "no group open on member %d", c->rank);
    c->group_open = false;
    if (c->mode == NVL_MODE_DATA) {
        /* every member takes part in the check, so that none waits alone */
        bool match = pairs_match(c, why, sizeof why);
        ok = ok && match;
    }
    port_load_t l = {{0}, {0}};
    double total = 0;
    for (size_t i = 0; i < c->n_ops; i++) {
        load_add(c, &l, c->ops[i].peer, c->ops[i].send,
                 (double)c->ops[i].bytes);
        total += (double)c->ops[i].bytes;
    }
    int64_t start_ps, time_ps;
    nvl_status_t st = nvl_coll_agree(c, 0x5EED, ok, "nvl_group_end", why,
                                     port_time_ps(c, &l), NULL, &start_ps,
                                     &time_ps);
    if (st != NVL_OK) {
        c->n_ops = 0;
        return st;
    }
    if (c->mode == NVL_MODE_DATA && c->n_ops > 0 &&
        nvl_xfer_exchange(c, c->ops, c->n_ops, 150) != NVL_OK)
        nvl_runtime_abort(1);
    c->clock->now_ps = start_ps + time_ps;
    if (info_out != NULL)
        *info_out = (nvl_coll_info_t){.coll = NVL_COLL_SENDRECV,
                                      .algo = NVL_ALGO_COUNT,
                                      .proto = NVL_PROTO_SIMPLE,
                                      .bytes = (size_t)total,
                                      .start_ps = start_ps,
                                      .time_ps = time_ps};
    c->n_ops = 0;
    return NVL_OK;
}
