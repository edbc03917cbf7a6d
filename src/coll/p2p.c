/* Point-to-point traffic: alltoall (every pair directly, NCCL's p2p path)
 * and sendrecv.  A GPU's NVLink ports and its NIC are shared by everything
 * it sends at once: an alltoall member sends (N-1) blocks, those to its own
 * NVLink domain through its NVLink ports, the others through its NIC.
 *
 * Cost: T = ring.simple base + one step latency (NVLink, or network when any
 *   peer is in another domain)
 *   + max(bytes over NVLink / (nvlink_bw x eta), bytes over NIC / nic_bw),
 *   the slowest member setting the pace (the call ends when the last block
 *   has arrived). */
#include <stdlib.h>
#include <string.h>

#include "coll_impl.h"

#define NVLINK_DATA_EFF (370.8 / 478.116) /* as src/coll/model.c */

int64_t nvl_p2p_predict_ps(const nvl_coll_call_t *call)
{
    nvl_comm_t *c = call->comm;
    const nvl_topo_t *t = c->topo;
    size_t bytes = call->count * nvl_dtype_size(call->dtype);
    uint32_t me = c->gpus[c->rank];
    double nv_bytes = 0, net_bytes = 0;
    int any_net = 0;
    if (call->coll == NVL_COLL_ALLTOALL) {
        for (int i = 0; i < c->size; i++) {
            nvl_fabric_t f = nvl_topo_fabric(t, me, c->gpus[i]);
            if (f == NVL_FABRIC_NVLINK)
                nv_bytes += (double)bytes;
            else if (f == NVL_FABRIC_SCALEOUT)
                net_bytes += (double)bytes;
        }
    } else if (c->size > 1) {
        /* sendrecv: what arrives here from `from` (ports are full duplex) */
        nvl_fabric_t f = nvl_topo_fabric(t, c->gpus[call->peer_from], me);
        if (f == NVL_FABRIC_NVLINK)
            nv_bytes = (double)bytes;
        else if (f == NVL_FABRIC_SCALEOUT)
            net_bytes = (double)bytes;
    }
    any_net = net_bytes > 0;
    if (nv_bytes == 0 && net_bytes == 0)
        return 0;
    const nvl_nccl_spec_t *k = &t->nccl;
    double lat = (double)k->base_lat_ps[NVL_ALGO_RING][NVL_PROTO_SIMPLE] +
                 (double)(any_net ? k->net_lat_ps : k->nvlink_lat_ps)
                     [NVL_ALGO_RING][NVL_PROTO_SIMPLE];
    double nv_bw = nvl_topo_nvlink_bw(t, me) * NVLINK_DATA_EFF;
    double nic = nvl_topo_nic_bw(t, me) / t->scaleout.oversubscription;
    double t_nv = nv_bytes > 0 ? nv_bytes / nv_bw : 0;
    double t_net = net_bytes > 0 ? net_bytes / nic : 0;
    return (int64_t)lat + nvl_ps_from_s(t_nv > t_net ? t_nv : t_net);
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
    const void **sb = malloc((size_t)n * sizeof *sb);
    void **rb = malloc((size_t)n * sizeof *rb);
    size_t *len = malloc((size_t)n * sizeof *len);
    int *peer = malloc((size_t)n * sizeof *peer);
    nvl_status_t st = NVL_ERR_NOMEM;
    if (sb != NULL && rb != NULL && len != NULL && peer != NULL) {
        for (int k = 0; k < n; k++) {
            peer[k] = k == r ? -1 : k;
            len[k] = bytes;
            sb[k] = (const char *)call->send + (size_t)k * bytes;
            rb[k] = (char *)call->recv + (size_t)k * bytes;
        }
        st = nvl_xfer_exchange(c, n, (const void *const *)sb, len, peer,
                               (void *const *)rb, len, peer, 141);
    } else {
        nvl_report("out of memory for a %d-member alltoall", n);
    }
    free(sb);
    free(rb);
    free(len);
    free(peer);
    return st;
}
