/* Point-to-point traffic: alltoall (every pair directly, NCCL's p2p path),
 * sendrecv, and groups of sends and receives (nvl_group_start .. _end).
 *
 * A GPU's NVLink ports and its NIC are shared by everything it moves at
 * once, per direction: an alltoall member sends (N-1) blocks, those to its
 * own NVLink domain through its NVLink ports, the others through its NIC,
 * and receives as many.  In the die view a peer on the same package is
 * reached over the die link, a port of its own (die_link_bw).
 *
 * Cost: T = kernel + ring.simple base + one step (nvlink_lat + hop_lat, or
 *   net_lat + scale-out lat when any peer is in another domain)
 *   + the slowest of: NVLink out and in, the NIC out and in, the self copy.
 * NCCL's p2p path (enqueue.cc addP2pToPlan, scheduleP2pTasksToPlan;
 * graph/paths.cc ncclTopoComputeP2pChannels): Simple only, chunk
 * NCCL_P2P_NVL_CHUNKSIZE 512 KB, p2pnChannels = pow2Up(channels), a peer's
 * share nChannelsMin = p2pnChannels halved while nChannelsMin x N >
 * p2pnChannels; an operation of B bytes runs on min(nChannelsMin, B / 64
 * KB) channels, doubled (up to p2pnChannels) while each carries more than
 * 16 MB (across domains: 256 KB and 512 KB).  Each channel moves at most
 * NCCL's per-channel bandwidth, bw_ch = path x eta / channels (on
 * NVLink: an SM's peer rate, halved where the member both sends and
 * receives: the CTA's warps split between the two), so a
 * fabric direction carrying bytes b over k channels in all takes
 *   b / min(path x eta, min(k, p2pnChannels) x bw_ch x r),
 * r = 1 but on NVLink, where each channel ramps as a ring's end step
 * with its share b/k ([nccl] mid_efficiency, knee: p2p_ramp);
 * the self block of an alltoall is a copy on its own channels (HBM read
 * and write).  The slowest member sets everyone's end. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfer.h"
#include "nvlemu/runtime.h"

/* Bytes this member moves per fabric and direction, and the channels
 * they run on. */
typedef struct {
    double out[NVL_FABRIC_COUNT], in[NVL_FABRIC_COUNT];
    double ch_out[NVL_FABRIC_COUNT], ch_in[NVL_FABRIC_COUNT];
} port_load_t;

static int pow2_up(int x)
{
    int p = 1;
    while (p < x)
        p *= 2;
    return p;
}

/* p2pnChannels: NCCL's channels, rounded up to a power of two. */
static int p2p_channels(const nvl_comm_t *c)
{
    int nc = (int)c->topo->nccl.channels;
    if (c->tuner.max_channels > 0 && c->tuner.max_channels < nc)
        nc = c->tuner.max_channels;
    return pow2_up(nc);
}

/* Channels NCCL gives one send or receive of `bytes` (addP2pToPlan). */
static int op_channels(const nvl_comm_t *c, double bytes, nvl_fabric_t f)
{
    int most = p2p_channels(c), least = most;
    while (least * c->size > most && least > 1)
        least /= 2;
    double step = 512.0 * 1024; /* NCCL_P2P_NVL_CHUNKSIZE */
    double min_part = f == NVL_FABRIC_SCALEOUT ? step / 2 : step / 8;
    double max_part = f == NVL_FABRIC_SCALEOUT ? step : step * 32;
    double parts = ceil(bytes / min_part);
    int n = parts < least ? (parts < 1 ? 1 : (int)parts) : least;
    while (bytes / n > max_part && n <= most / 2)
        n *= 2;
    return n;
}

static void load_add_at(const nvl_comm_t *c, int me, port_load_t *l,
                        int peer, bool out, double bytes)
{
    nvl_fabric_t f = nvl_topo_fabric(c->topo, c->gpus[me], c->gpus[peer]);
    double ch = bytes > 0 ? op_channels(c, bytes, f) : 0;
    if (out) {
        l->out[f] += bytes;
        l->ch_out[f] += ch;
    } else {
        l->in[f] += bytes;
        l->ch_in[f] += ch;
    }
}

static void load_add(const nvl_comm_t *c, port_load_t *l, int peer,
                     bool out, double bytes)
{
    load_add_at(c, c->rank, l, peer, out, bytes);
}

/* The share of its rate a p2p channel keeps while it carries `x` bytes:
 * a p2p channel is one Simple send (directSend) and one receive
 * (directRecv) of 512 KB steps behind the connection's NCCL_STEPS slots
 * (device/sendrecv.h runSend/runRecv), the primitive of a ring's first
 * and last step, so it ramps as those end steps do (model.c): [nccl]
 * mid_efficiency at mid sizes, approaching 1 past knee_bytes per
 * channel.  The die link and the NIC keep their rates. */
static double p2p_ramp(const nvl_nccl_spec_t *n, double x)
{
    double knee = (double)n->knee_bytes;
    if (knee <= 0 || x <= 0)
        return 1.0;
    return n->mid_efficiency + (1 - n->mid_efficiency) * x / (x + knee);
}

/* Time for one fabric direction: b bytes over ch channels, each moving
 * the share `ramp` of its rate bw_ch, under the port's rate. */
static double dir_time_s(double b, double ch, int most, double bw_ch,
                         double port, double ramp)
{
    if (b <= 0)
        return 0;
    double bw = (ch < most ? ch : most) * bw_ch * ramp;
    return b / (bw < port ? bw : port);
}

/* One NVLink direction: b bytes over ch channels, each ramping with its
 * share of the bytes.  The ramp slows the channels, not the port: where
 * more channels run than the port needs (NCCL doubles a peer's channels
 * while each would carry more than 16 MB), the port stays full, as
 * sendrecv's 0.97 of it at 512 MB - 4 GB measures
 * (hgx-h100-x4/nccl-tests-g.csv). */
static double nvlink_dir_s(const nvl_nccl_spec_t *n, double b, double ch,
                           int most, double bw_ch, double port)
{
    double ramp = ch > 0 ? p2p_ramp(n, b / ch) : 1.0;
    return dir_time_s(b, ch, most, bw_ch, port, ramp);
}

/* The share of the p2p channels' warps an alltoall's self block holds.
 * A channel runs the works of its batch (up to
 * NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8 rounds, the self copy being round
 * 0) at once, nWarps / nWorks warps each; the self work copies with its
 * own warps, which then wait for the batch's end (device/sendrecv.h
 * run(): nWarpPerWork, isCopy; enqueue.cc scheduleP2pTasksToPlan, a
 * round's base channel ncclP2pChannelBaseForRound).  Where the works'
 * channel parts outnumber the p2pnChannels `most`, channels are shared and
 * the self parts hold their count's share of the warp time; where they
 * do not, every part has a channel of its own and the peers lose none. */
static double self_copy_share(const port_load_t *l, int most)
{
    double parts = 0;
    for (int f = 0; f < NVL_FABRIC_COUNT; f++)
        parts += l->ch_out[f];
    return parts > most ? l->ch_out[NVL_FABRIC_LOCAL] / parts : 0;
}

static int64_t port_time_at_ps(const nvl_comm_t *c, int member,
                               const port_load_t *l)
{
    const nvl_topo_t *t = c->topo;
    uint32_t me = c->gpus[member];
    const double *o = l->out, *i = l->in;
    bool any = false;
    for (int f = 0; f < NVL_FABRIC_COUNT; f++)
        any = any || o[f] > 0 || (f != NVL_FABRIC_LOCAL && i[f] > 0);
    if (!any)
        return 0;
    bool net = o[NVL_FABRIC_SCALEOUT] > 0 || i[NVL_FABRIC_SCALEOUT] > 0;
    /* the die link's wire latency only where no peer is beyond it */
    bool die_only = o[NVL_FABRIC_NVLINK] == 0 && i[NVL_FABRIC_NVLINK] == 0 &&
                    (o[NVL_FABRIC_DIE] > 0 || i[NVL_FABRIC_DIE] > 0);
    const nvl_nccl_spec_t *k = &t->nccl;
    double lat = (double)t->gpu.kernel_overhead_ps +
                 (double)k->base_lat_ps[NVL_ALGO_RING][NVL_PROTO_SIMPLE] +
                 (net ? (double)k->net_lat_ps[NVL_ALGO_RING][NVL_PROTO_SIMPLE] +
                            (double)t->scaleout.lat_ps
                      : (double)k->nvlink_lat_ps[NVL_ALGO_RING]
                                                [NVL_PROTO_SIMPLE] +
                            (double)(die_only ? t->gpu.die_link_lat_ps
                                              : t->nvlink.hop_lat_ps));
    int most = p2p_channels(c);
    double nv_port = nvl_topo_nvlink_bw(t, me) * NVL_NVLINK_DATA_EFF;
    double nv_ch = nv_port / k->channels;
    /* a p2p channel's NVLink rate, at one SM's peer rate: a work that
     * sends and receives splits its CTA's warps between the two, one that
     * only sends or only receives gives the one all of them (sendrecv.h
     * run(): nSendWarpPerWork and nRecvWarpPerWork split nWarpPerWork
     * only when the work has both) */
    const nvl_fabric_t nv = NVL_FABRIC_NVLINK;
    double split = o[nv] > 0 && i[nv] > 0 ? 2 : 1;
    double sm_ch = (t->nvlink.sm_peer_bw_bytes_per_s > 0
                        ? t->nvlink.sm_peer_bw_bytes_per_s / split
                        : nv_ch) *
                   (1 - self_copy_share(l, most));
    double nic = nvl_topo_nic_bw(t, me) / t->scaleout.oversubscription;
    double hbm = nvl_topo_hbm_bw(t, me) / 2; /* a copy reads and writes */
    double ts = fmax(
        nvlink_dir_s(k, o[nv], l->ch_out[nv], most, sm_ch, nv_port),
        nvlink_dir_s(k, i[nv], l->ch_in[nv], most, sm_ch, nv_port));
    ts = fmax(ts, fmax(dir_time_s(o[NVL_FABRIC_SCALEOUT],
                                  l->ch_out[NVL_FABRIC_SCALEOUT], most,
                                  nic, nic, 1.0),
                       dir_time_s(i[NVL_FABRIC_SCALEOUT],
                                  l->ch_in[NVL_FABRIC_SCALEOUT], most,
                                  nic, nic, 1.0)));
    double die_port = t->gpu.die_link_bw_bytes_per_s * NVL_NVLINK_DATA_EFF;
    ts = fmax(ts, fmax(dir_time_s(o[NVL_FABRIC_DIE], l->ch_out[NVL_FABRIC_DIE],
                                  most, die_port / k->channels, die_port,
                                  1.0),
                       dir_time_s(i[NVL_FABRIC_DIE], l->ch_in[NVL_FABRIC_DIE],
                                  most, die_port / k->channels, die_port,
                                  1.0)));
    ts = fmax(ts, dir_time_s(o[NVL_FABRIC_LOCAL], l->ch_out[NVL_FABRIC_LOCAL],
                             most, nv_ch, hbm, 1.0));
    return (int64_t)lat + nvl_ps_from_s(ts);
}

static int64_t port_time_ps(const nvl_comm_t *c, const port_load_t *l)
{
    return port_time_at_ps(c, c->rank, l);
}

int64_t nvl_p2p_predict_ps(const nvl_coll_call_t *call)
{
    nvl_comm_t *c = call->comm;
    double bytes = (double)(call->count * nvl_dtype_size(call->dtype));
    port_load_t l = {{0}, {0}, {0}, {0}};
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
                                 bytes, call->peer_from,
                                 NVL_TAG_SENDRECV);
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
    nvl_status_t st = nvl_xfer_exchange(c, ops, m, NVL_TAG_ALLTOALL);
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
        double *tb = realloc(c->op_time_bytes, cap * sizeof *tb);
        if (tb == NULL) {
            nvl_report("%s: out of memory", what);
            return NVL_ERR_NOMEM;
        }
        c->op_time_bytes = tb;
        c->cap_ops = cap;
    }
    size_t tsz = c->time_elem_bytes ? c->time_elem_bytes : esz;
    c->op_time_bytes[c->n_ops] =
        c->time_bits > 0 ? (double)count * c->time_bits / 8.0
                         : (double)count * (double)tsz;
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

/* What a pair's traffic adds to the group's check: sender i to receiver
 * j, `bytes` in all (0: no traffic, nothing added). */
static uint64_t pair_term(int i, int j, uint64_t bytes)
{
    if (bytes == 0)
        return 0;
    uint64_t h = ((uint64_t)(uint32_t)i << 32 | (uint32_t)j) ^
                 (bytes * 0x9E3779B97F4A7C15ull);
    h ^= h >> 33; /* splitmix64's finalizer */
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return h | 1; /* never 0 */
}

/* Bytes this member sends to (send) or receives from each member, n
 * entries (NULL when out of memory). */
static uint64_t *pair_bytes(nvl_comm_t *c, bool send)
{
    uint64_t *b = calloc((size_t)c->size, sizeof *b);
    if (b == NULL)
        return NULL;
    for (size_t i = 0; i < c->n_ops; i++)
        if (c->ops[i].send == send)
            b[c->ops[i].peer] += c->ops[i].bytes;
    return b;
}

/* Data mode: what each member sends to each other must be what that one
 * expects.  Each member adds a term per peer for what it sends and
 * subtracts one for what it expects to receive; the agreement sums them
 * over the members, so the sum is 0 when every pair matches (and, but for
 * a chance of 2^-64, only then), at no extra message. */
static uint64_t pairs_check(nvl_comm_t *c, bool *ok, char *why, size_t len)
{
    uint64_t *out = pair_bytes(c, true), *in = pair_bytes(c, false);
    uint64_t sum = 0;
    if (out == NULL || in == NULL) { /* the agreement fails everywhere */
        snprintf(why, len, "out of memory checking a group of %d", c->size);
        *ok = false;
    }
    for (int p = 0; p < c->size && *ok; p++)
        sum += pair_term(c->rank, p, out[p]) - pair_term(p, c->rank, in[p]);
    free(out);
    free(in);
    return sum;
}

/* The check failed: one MPI_Alltoall of the byte counts tells each
 * receiver whether its senders match; the lowest such member reports. */
static nvl_status_t report_pairs(nvl_comm_t *c)
{
    int n = c->size, bad = n, first = n;
    uint64_t *out = pair_bytes(c, true), *in = pair_bytes(c, false);
    uint64_t *told = calloc((size_t)n, sizeof *told);
    if (out == NULL || in == NULL || told == NULL) {
        nvl_report("out of memory checking a group of %d", n);
        nvl_runtime_abort(1); /* peers wait in the alltoall */
    }
    MPI_Alltoall(out, 1, MPI_UINT64_T, told, 1, MPI_UINT64_T, c->mpi);
    for (int p = 0; p < n && bad == n; p++)
        if (in[p] != told[p])
            bad = p;
    MPI_Allreduce(bad < n ? &c->rank : &n, &first, 1, MPI_INT, MPI_MIN,
                  c->mpi);
    if (first == c->rank)
        nvl_report("nvl_group_end: member %d sends %" PRIu64 " bytes to "
                   "member %d, which receives %" PRIu64 " from it",
                   bad, told[bad], c->rank, in[bad]);
    free(told);
    free(in);
    free(out);
    return NVL_ERR_INVALID;
}

int64_t nvl_a2a_predict_member_ps(const nvl_comm_t *c, int member,
                                  nvl_a2a_t a2a, const double *send_bytes,
                                  const double *recv_bytes)
{
    port_load_t l = {{0}, {0}, {0}, {0}};
    double out = 0, in = 0;
    for (int p = 0; p < c->size; p++) {
        if (p == member)
            continue;
        if (send_bytes[p] > 0)
            load_add_at(c, member, &l, p, true, send_bytes[p]);
        if (recv_bytes[p] > 0)
            load_add_at(c, member, &l, p, false, recv_bytes[p]);
        out += send_bytes[p];
        in += recv_bytes[p];
    }
    return a2a == NVL_A2A_NCCL
               ? port_time_at_ps(c, member, &l)
               : nvl_onesided_time_ps(c, member, a2a, out, in);
}

int64_t nvl_a2a_predict_ps(const nvl_comm_t *c, nvl_a2a_t a2a,
                           const double *send_bytes, const double *recv_bytes)
{
    return nvl_a2a_predict_member_ps(c, c->rank, a2a, send_bytes, recv_bytes);
}

int64_t nvl_p2p_predict_member_ps(const nvl_comm_t *c, int member,
                                  const double *send_bytes,
                                  const double *recv_bytes)
{
    port_load_t l = {{0}, {0}, {0}, {0}};
    for (int p = 0; p < c->size; p++) {
        if (p == member)
            continue;
        if (send_bytes[p] > 0)
            load_add_at(c, member, &l, p, true, send_bytes[p]);
        if (recv_bytes[p] > 0)
            load_add_at(c, member, &l, p, false, recv_bytes[p]);
    }
    return port_time_at_ps(c, member, &l);
}

/* This member's time of the queued group under a2a (wire factors as
 * nvl_group_end_a2a's). */
static int64_t group_time_ps(const nvl_comm_t *c, nvl_a2a_t a2a,
                             const double *wire_out, const double *wire_in)
{
    port_load_t l = {{0}, {0}, {0}, {0}};
    double out = 0, in = 0;
    for (size_t i = 0; i < c->n_ops; i++) {
        const nvl_p2p_op_t *op = &c->ops[i];
        double tb = c->op_time_bytes[i];
        load_add(c, &l, op->peer, op->send, tb);
        const double *w = op->send ? wire_out : wire_in;
        double b = tb * (w != NULL ? w[op->peer] : 1.0);
        if (op->peer != c->rank)
            *(op->send ? &out : &in) += b;
    }
    return a2a == NVL_A2A_NCCL
               ? port_time_ps(c, &l)
               : nvl_onesided_time_ps(c, c->rank, a2a, out, in);
}

nvl_status_t nvl_group_end(nvl_comm_t *c, nvl_coll_info_t *info_out)
{
    return nvl_group_end_a2a(c, NVL_A2A_NCCL, NULL, NULL, info_out);
}

nvl_status_t nvl_group_end_a2a(nvl_comm_t *c, nvl_a2a_t a2a,
                               const double *wire_out, const double *wire_in,
                               nvl_coll_info_t *info_out)
{
    char why[256] = "";
    bool ok = c->group_open;
    if (!ok)
        snprintf(why, sizeof why, "no group open on member %d", c->rank);
    else if (a2a >= NVL_A2A_COUNT) {
        snprintf(why, sizeof why, "unknown all-to-all implementation %d",
                 (int)a2a);
        ok = false;
    } else
        ok = nvl_a2a_usable(c, a2a, why, sizeof why);
    c->group_open = false;
    uint64_t pairs = 0;
    if (c->mode == NVL_MODE_DATA && ok)
        pairs = pairs_check(c, &ok, why, sizeof why);
    double total = 0;
    for (size_t i = 0; i < c->n_ops; i++)
        total += c->op_time_bytes[i];
    /* the group agrees as a call of its own, so that a member in a
     * collective meanwhile fails with a report of both calls */
    nvl_coll_call_t call = {.comm = c, .coll = NVL_COLL_COUNT};
    if (c->defer) { /* agreed later, with the batch (defer.c) */
        nvl_coll_info_t mine = {.coll = NVL_COLL_SENDRECV,
                                .algo = NVL_ALGO_COUNT,
                                .proto = NVL_PROTO_SIMPLE,
                                .bytes = (size_t)total,
                                .time_ps = ok ? group_time_ps(c, a2a,
                                                              wire_out,
                                                              wire_in)
                                              : 0};
        c->n_ops = 0;
        return nvl_defer_record(&call, ok, "nvl_group_end", why, &mine,
                                info_out);
    }
    nvl_agree_in_t in = {.signature = nvl_coll_signature(&call), .ok = ok,
                         .what = "nvl_group_end", .why = why,
                         .time_ps = ok ? group_time_ps(c, a2a, wire_out,
                                                       wire_in)
                                    : 0,
                         .pairs = pairs};
    nvl_agree_out_t agreed;
    nvl_status_t st = nvl_coll_agree(c, &in, &agreed);
    if (st == NVL_ERR_MISMATCH)
        st = nvl_coll_report_mismatch(c, &call);
    else if (st == NVL_OK && agreed.pairs != 0)
        st = report_pairs(c);
    if (st != NVL_OK) {
        c->n_ops = 0;
        return st;
    }
    if (c->mode == NVL_MODE_DATA && c->n_ops > 0 &&
        nvl_xfer_exchange(c, c->ops, c->n_ops, NVL_TAG_GROUP) != NVL_OK)
        nvl_runtime_abort(1);
    c->clock->now_ps = agreed.start_ps + agreed.time_ps;
    if (info_out != NULL)
        *info_out = (nvl_coll_info_t){.coll = NVL_COLL_SENDRECV,
                                      .algo = NVL_ALGO_COUNT,
                                      .proto = NVL_PROTO_SIMPLE,
                                      .bytes = (size_t)total,
                                      .start_ps = agreed.start_ps,
                                      .time_ps = agreed.time_ps};
    c->n_ops = 0;
    return NVL_OK;
}
