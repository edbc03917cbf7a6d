/* NVLS (NCCL_ALGO=NVLS): NVLink SHARP.  The NVSwitch reduces: each GPU
 * reads its 1/N share of every peer's buffer through the switch's
 * multimem load-reduce and writes the result back with a multicast store.
 *
 *   GPU i --S/N of each peer--> switch (sum) --multicast--> all GPUs
 *
 * Data mode moves the same shares: a direct reduce-scatter (reduced in
 * member order, as the switch does, so every GPU gets identical bits) and a
 * direct allgather.  Only within one NVLink domain with switches that
 * support it.
 *
 * Cost: T = nvls.simple.nvlink_lat + S / algbw, where
 *   allreduce:                algbw = min(nvls_bw, port) x 5/6 (NCCL
 *                             tuning.cc's NVLS ratio),
 *   allgather/reduce-scatter: algbw = port x N/(N-1) (each GPU moves
 *                             (N-1)/N of S through its port),
 *   port = the GPU's NVLink bandwidth x eta for the channels in use. */
#include <stdlib.h>
#include <string.h>

#include "coll_impl.h"

static bool nvls_supports(const nvl_comm_t *c, nvl_coll_t coll,
                          nvl_proto_t proto)
{
    return c->nvls && (uint32_t)c->size >= c->topo->nccl.nvls_min_ranks &&
           proto == NVL_PROTO_SIMPLE &&
           (coll == NVL_COLL_ALLREDUCE || coll == NVL_COLL_ALLGATHER ||
            coll == NVL_COLL_REDUCESCATTER);
}

static double nvls_predict(const nvl_comm_t *c, nvl_coll_t coll,
                           size_t bytes, nvl_proto_t proto, double channels)
{
    double lat = nvl_coll_model_lat_s(c, NVL_ALGO_NVLS, proto, 1, 0);
    double port = nvl_coll_model_bus_bw(c, coll, NVL_ALGO_NVLS, proto,
                                   c->nvlink_bw, channels, (double)bytes);
    double algbw;
    if (coll == NVL_COLL_ALLREDUCE) {
        const nvl_nccl_spec_t *n = &c->topo->nccl;
        double x = (double)bytes, knee = (double)n->nvls_knee_bytes;
        double sw = c->topo->nvlink.nvls_bw_bytes_per_s * channels /
                    n->channels *
                    (n->nvls_mid_efficiency +
                     (1 - n->nvls_mid_efficiency) * x / (x + knee));
        algbw = (sw < port ? sw : port) * 5.0 / 6.0;
    } else {
        algbw = port * (double)c->size / (c->size - 1);
    }
    return lat + (double)bytes / algbw;
}

static nvl_status_t nvls_run(const nvl_coll_call_t *call)
{
    nvl_comm_t *c = call->comm;
    int n = c->size;
    size_t esz = nvl_dtype_size(call->dtype);
    size_t *off = malloc(2 * (size_t)n * sizeof *off);
    char *work = NULL;
    nvl_status_t st = NVL_ERR_NOMEM;
    if (off == NULL)
        goto out;
    size_t *len = off + n;
    nvl_group_t g = nvl_group_all(c);
    nvl_blocks_t b = {off, len};
    if (call->coll == NVL_COLL_ALLREDUCE) {
        if (call->recv != call->send)
            memcpy(call->recv, call->send, call->count * esz);
        nvl_blocks_even(call->count, n, off, len);
        st = nvl_direct_reduce_scatter(call, &g, call->recv, &b);
        if (st == NVL_OK)
            st = nvl_direct_allgather(call, &g, call->recv, &b);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        off[i] = (size_t)i * call->count;
        len[i] = call->count;
    }
    if (call->coll == NVL_COLL_ALLGATHER) {
        memmove((char *)call->recv + off[c->rank] * esz, call->send,
                call->count * esz);
        st = nvl_direct_allgather(call, &g, call->recv, &b);
    } else {
        work = malloc(call->count * (size_t)n * esz + 1);
        if (work == NULL)
            goto out;
        memcpy(work, call->send, call->count * (size_t)n * esz);
        st = nvl_direct_reduce_scatter(call, &g, work, &b);
        if (st == NVL_OK)
            memcpy(call->recv, work + off[c->rank] * esz, call->count * esz);
    }
out:
    if (st == NVL_ERR_NOMEM)
        nvl_report("out of memory in NVLS %s", nvl_coll_name(call->coll));
    free(work);
    free(off);
    return st;
}

const nvl_coll_algo_t nvl_coll_algo_nvls = {
    .algo = NVL_ALGO_NVLS,
    .supports = nvls_supports,
    .predict_s = nvls_predict,
    .run = nvls_run,
};
