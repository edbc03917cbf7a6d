/* Quantities derived from a topology: which fabric joins two GPUs, the
 * bandwidth a GPU has on each, and bisection bandwidths. */
#include "nvlemu/topo.h"

#include <math.h>

#define KEY(id, key, name, ll, ll128, simple) [NVL_ALGO_##id] = #key,
static const char *const algo_keys[NVL_ALGO_COUNT] = {NVL_ALGO_TABLE(KEY)};
#undef KEY
static const char *const proto_keys[NVL_PROTO_COUNT] = {
    [NVL_PROTO_LL] = "ll", [NVL_PROTO_LL128] = "ll128",
    [NVL_PROTO_SIMPLE] = "simple"};
static const char *const fabric_names[NVL_FABRIC_COUNT] = {
    [NVL_FABRIC_LOCAL] = "local", [NVL_FABRIC_DIE] = "die-link",
    [NVL_FABRIC_NVLINK] = "nvlink",
    [NVL_FABRIC_SCALEOUT] = "scaleout"};

const char *nvl_algo_key(nvl_algo_t a)
{
    return a < NVL_ALGO_COUNT ? algo_keys[a] : "?";
}

const char *nvl_proto_key(nvl_proto_t p)
{
    return p < NVL_PROTO_COUNT ? proto_keys[p] : "?";
}

const char *nvl_fabric_name(nvl_fabric_t f)
{
    return f < NVL_FABRIC_COUNT ? fabric_names[f] : "?";
}

uint32_t nvl_topo_domains(const nvl_topo_t *t)
{
    return t->gpus / t->nvlink.domain_gpus;
}

uint32_t nvl_topo_domain_of(const nvl_topo_t *t, uint32_t gpu)
{
    return gpu / t->nvlink.domain_gpus;
}

uint32_t nvl_topo_tray_of(const nvl_topo_t *t, uint32_t gpu)
{
    return gpu / t->node.gpus_per_tray;
}

nvl_fabric_t nvl_topo_fabric(const nvl_topo_t *t, uint32_t a, uint32_t b)
{
    if (a == b)
        return NVL_FABRIC_LOCAL;
    if (t->die_view && nvl_topo_package_of(t, a) == nvl_topo_package_of(t, b))
        return NVL_FABRIC_DIE;
    if (nvl_topo_domain_of(t, a) == nvl_topo_domain_of(t, b))
        return NVL_FABRIC_NVLINK;
    return NVL_FABRIC_SCALEOUT;
}

uint32_t nvl_topo_links_up(const nvl_topo_t *t, uint32_t gpu)
{
    const nvl_nvlink_spec_t *nv = &t->nvlink;
    uint32_t lost = t->overrides[gpu].links_down;
    if (nv->switch_trays > 0)
        lost += nv->switch_trays_down * (nv->links_per_gpu / nv->switch_trays);
    return lost >= nv->links_per_gpu ? 0 : nv->links_per_gpu - lost;
}

double nvl_topo_nvlink_bw(const nvl_topo_t *t, uint32_t gpu)
{
    return nvl_topo_links_up(t, gpu) * t->nvlink.link_bw_bytes_per_s *
           t->overrides[gpu].link_bw_scale;
}

double nvl_topo_nic_bw(const nvl_topo_t *t, uint32_t gpu)
{
    return t->scaleout.nic_bw_bytes_per_s * t->overrides[gpu].nic_bw_scale;
}

double nvl_topo_gpu_flops(const nvl_topo_t *t, uint32_t gpu,
                          double peak_flops_per_s)
{
    return peak_flops_per_s * t->overrides[gpu].clock_scale;
}

double nvl_topo_hbm_bw(const nvl_topo_t *t, uint32_t gpu)
{
    return t->gpu.hbm_bw_bytes_per_s * t->overrides[gpu].hbm_bw_scale;
}

double nvl_topo_p2p_bw(const nvl_topo_t *t, uint32_t a, uint32_t b)
{
    double ba, bb;
    switch (nvl_topo_fabric(t, a, b)) {
    case NVL_FABRIC_LOCAL:
        return nvl_topo_hbm_bw(t, a);
    case NVL_FABRIC_DIE:
        return t->gpu.die_link_bw_bytes_per_s;
    case NVL_FABRIC_NVLINK:
        ba = nvl_topo_nvlink_bw(t, a);
        bb = nvl_topo_nvlink_bw(t, b);
        return fmin(ba, bb);
    default:
        ba = nvl_topo_nic_bw(t, a);
        bb = nvl_topo_nic_bw(t, b);
        return fmin(ba, bb);
    }
}

int64_t nvl_topo_p2p_lat_ps(const nvl_topo_t *t, uint32_t a, uint32_t b)
{
    switch (nvl_topo_fabric(t, a, b)) {
    case NVL_FABRIC_LOCAL:
        return 0;
    case NVL_FABRIC_DIE:
        return t->gpu.die_link_lat_ps;
    case NVL_FABRIC_NVLINK:
        return t->nvlink.hop_lat_ps;
    default:
        return t->scaleout.lat_ps;
    }
}

/* Bisection across the job's natural split: GPUs [first, first + n/2)
 * against the next n/2, the smaller side's port sum (a non-blocking switch
 * lets each side send at its full port rate).  With uneven per-GPU
 * overrides another split can be lower; this one is what a TP group split
 * in rank order sees. */
static double half_ports(const nvl_topo_t *t, uint32_t first, uint32_t n,
                         double (*port)(const nvl_topo_t *, uint32_t))
{
    double lo = 0, hi = 0;
    uint32_t half = n / 2;
    for (uint32_t i = 0; i < n; i++) {
        double bw = port(t, first + i);
        if (i < half)
            lo += bw;
        else if (i < 2 * half)
            hi += bw;
    }
    return fmin(lo, hi);
}

double nvl_topo_bisection_bw(const nvl_topo_t *t, uint32_t ranks,
                             nvl_fabric_t fabric)
{
    if (ranks > t->gpus)
        ranks = t->gpus;
    uint32_t dom = t->nvlink.domain_gpus;
    if (fabric == NVL_FABRIC_NVLINK) {
        double sum = 0;
        for (uint32_t first = 0; first < ranks; first += dom) {
            uint32_t n = ranks - first < dom ? ranks - first : dom;
            if (n >= 2)
                sum += half_ports(t, first, n, nvl_topo_nvlink_bw);
        }
        return sum;
    }
    if (fabric == NVL_FABRIC_SCALEOUT) {
        if (ranks <= dom)
            return 0;
        return half_ports(t, 0, ranks, nvl_topo_nic_bw) /
               t->scaleout.oversubscription;
    }
    return 0;
}
