/* NVLSTree (NCCL_ALGO=NVLSTree): NVLS inside each NVLink domain and a tree
 * between domains, for allreduce across domains.
 *
 *   domain A: reduce-scatter through the switch -> GPU a_i holds share i
 *   share i: allreduce among a_i, b_i, ... across domains (NIC)
 *   domain A: allgather through the switch
 *
 * Data mode follows those three phases (the inter-domain phase as a ring
 * over the members that hold the same share).  Needs at least two domains,
 * the same number of members in each, and NVLS switches.
 *
 * Cost: T = nvlstree.simple.nvlink_lat + 2 log2(D) nvlstree.simple.net_lat
 *   + max(the domain's NVLS allreduce pipeline on its P members
 *         (nvls.c, nvl_nvls_allreduce_pipe_s),
 *         S / (H x NIC x 5/6 / f)),
 * the two stages pipelined chunk by chunk: between domains each of the
 * H = min(P, NCCL_MAX_NVLS_ARITY) NVLS heads carries its 1/H share of S
 * on its own GPU's NIC (connect.cc connectNvls: a head per NVLS channel
 * group; tuning.cc counts the graph's channels' inter bandwidth, doubled
 * for two nodes), f = 1 for D <= 2 domains (the share goes up and comes
 * back down once each way) and 2 beyond (a tree's up and down on one
 * link), at NCCL's NVLS 5/6. */
#include <stdlib.h>
#include <string.h>

#include "xfer.h"

static bool same_per_domain(const nvl_comm_t *c)
{
    return c->domains > 1 && c->max_per_domain * c->domains == c->size;
}

static bool nvlstree_supports(const nvl_comm_t *c, nvl_coll_t coll,
                              nvl_proto_t proto)
{
    return coll == NVL_COLL_ALLREDUCE && proto == NVL_PROTO_SIMPLE &&
           c->topo->nvlink.nvls && c->topo->nvlink.switch_trays > 0 &&
           same_per_domain(c);
}

static double nvlstree_predict(const nvl_comm_t *c, nvl_coll_t coll,
                               size_t bytes, nvl_proto_t proto, double channels)
{
    (void)coll;
    double lat = nvl_coll_model_lat_s(c, NVL_ALGO_NVLS_TREE, proto, 1,
                                      2 * c->log2_domains);
    double per = c->max_per_domain;
    double heads = per < NVL_NVLS_MAX_ARITY ? per : NVL_NVLS_MAX_ARITY;
    double nic = c->domains <= 2 ? c->nic_bw : c->nic_bw / 2;
    double inter_s = (double)bytes / (heads * nic * 5.0 / 6.0);
    double intra_s = nvl_nvls_allreduce_pipe_s(c, (double)bytes, channels,
                                               per, c->domains);
    return lat + (intra_s > inter_s ? intra_s : inter_s);
}

static nvl_status_t nvlstree_run(const nvl_coll_call_t *call)
{
    nvl_comm_t *c = call->comm;
    int n = c->size, per = c->max_per_domain, nd = c->domains;
    size_t esz = nvl_dtype_size(call->dtype);
    int *intra = malloc((size_t)(per + nd) * sizeof *intra);
    size_t *off = malloc(2 * (size_t)(per + nd) * sizeof *off);
    nvl_status_t st = NVL_ERR_NOMEM;
    if (intra == NULL || off == NULL)
        goto out;
    int *inter = intra + per;
    /* members of my domain in member order, and the members holding the same
     * share in the other domains */
    uint32_t my_dom = nvl_topo_domain_of(c->topo, c->gpus[c->rank]);
    int ni = 0, pos_intra = 0;
    for (int i = 0; i < n; i++)
        if (nvl_topo_domain_of(c->topo, c->gpus[i]) == my_dom) {
            if (i == c->rank)
                pos_intra = ni;
            intra[ni++] = i;
        }
    int nx = 0, pos_inter = 0;
    for (int i = 0; i < n; i++) {
        uint32_t d = nvl_topo_domain_of(c->topo, c->gpus[i]);
        int idx = 0; /* index of member i within its domain */
        for (int j = 0; j < i; j++)
            idx += nvl_topo_domain_of(c->topo, c->gpus[j]) == d;
        if (idx == pos_intra) {
            if (i == c->rank)
                pos_inter = nx;
            inter[nx++] = i;
        }
    }
    if (call->recv != call->send)
        memcpy(call->recv, call->send, call->count * esz);
    size_t *len = off + per;
    nvl_blocks_even(call->count, per, off, len);
    nvl_group_t gi = {intra, per, pos_intra};
    nvl_blocks_t b = {off, len};
    st = nvl_direct_reduce_scatter(call, &gi, call->recv, &b);
    if (st == NVL_OK) {
        size_t *xoff = off + 2 * per, *xlen = xoff + nd;
        nvl_blocks_even(len[pos_intra], nd, xoff, xlen);
        for (int k = 0; k < nd; k++)
            xoff[k] += off[pos_intra];
        nvl_group_t gx = {inter, nd, pos_inter};
        nvl_blocks_t bx = {xoff, xlen};
        st = nvl_ring_reduce_scatter(call, &gx, call->recv, &bx);
        if (st == NVL_OK)
            st = nvl_ring_allgather(call, &gx, call->recv, &bx);
    }
    if (st == NVL_OK)
        st = nvl_direct_allgather(call, &gi, call->recv, &b);
out:
    if (st == NVL_ERR_NOMEM)
        nvl_report("out of memory in NVLSTree allreduce");
    free(intra);
    free(off);
    return st;
}

const char nvl_coll_algo_doc_nvlstree[] =
    "NVLink SHARP within each domain, a tree across domains: allreduce "
    "(nvls_tree.c)";

/* NCCL runs NVLSTree on its NVLS channels, a communicator spanning
 * domains on nvls.cc's multi-node count (NVLS_NCHANNELS_SM100 = 32 on
 * Blackwell: v2.26.2-1 nvls.cc line 176 for every Blackwell communicator,
 * 2.27-2.29 where it spans nodes, 2.30 ncclNvlsTreeSm100Tuning by nodes
 * and NIC rate), within NCCL_MAX_NCHANNELS. */
static double nvlstree_channels(const nvl_comm_t *c, int max_nc, int min_nc)
{
    (void)max_nc;
    const nvl_nccl_spec_t *k = &c->topo->nccl;
    int nv = (int)(k->nvls_tree_channels > 0 ? k->nvls_tree_channels
                                             : k->nvls_channels);
    if (c->tuner.max_channels > 0 && c->tuner.max_channels < nv)
        nv = c->tuner.max_channels;
    return nv < min_nc ? min_nc : nv;
}

const nvl_coll_algo_t nvl_coll_algo_nvlstree = {
    .algo = NVL_ALGO_NVLS_TREE,
    .supports = nvlstree_supports,
    .predict_s = nvlstree_predict,
    .run = nvlstree_run,
    .channels = nvlstree_channels,
    .enable_env = "NCCL_NVLS_ENABLE",
};
