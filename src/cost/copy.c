/* Copies: one row per path, its name, when a topology can carry it and its
 * time (formulas in include/nvlemu/cost.h; the copy engine's fixed cost,
 * [gpu] copy_overhead, is cited in each topology file). */
#include "nvlemu/cost.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A copy over a link: the copy engine's fixed cost, the link's latency,
 * then the bytes at the link's rate. */
static nvl_kernel_cost_t link_copy(const nvl_cost_cfg_t *cfg, int64_t lat_ps,
                                   double bw_bytes_per_s, double size_bytes)
{
    double s = (double)(cfg->topo->gpu.copy_overhead_ps + lat_ps) * 1e-12 +
               size_bytes / bw_bytes_per_s;
    return (nvl_kernel_cost_t){nvl_ps_from_s(s), 0, size_bytes};
}

static nvl_kernel_cost_t hbm_copy(const nvl_cost_cfg_t *cfg, uint32_t peer,
                                  double size_bytes)
{
    (void)peer;
    return nvl_cost_memory(cfg, 2.0 * size_bytes);
}

static nvl_kernel_cost_t nvlink_copy(const nvl_cost_cfg_t *cfg, uint32_t peer,
                                     double size_bytes)
{
    const nvl_topo_t *t = cfg->topo;
    return link_copy(cfg, nvl_topo_p2p_lat_ps(t, cfg->gpu, peer),
                     nvl_topo_p2p_bw(t, cfg->gpu, peer), size_bytes);
}

static nvl_kernel_cost_t c2c_copy(const nvl_cost_cfg_t *cfg, uint32_t peer,
                                  double size_bytes)
{
    (void)peer;
    const nvl_topo_t *t = cfg->topo;
    /* the link's rate less its packet headers: data moves as lines of
     * [c2c] line bytes, each behind a header of [c2c] header bytes */
    double line = (double)t->c2c.line_bytes;
    double bw = t->c2c.bw_bytes_per_s * line / (line + (double)t->c2c.header_bytes);
    /* the superchip's host memory, shared by the GPUs reading it */
    double grace = t->host_memory.bw_bytes_per_s * t->node.gpus_per_superchip;
    if (grace > 0)
        bw = fmin(bw, grace / (cfg->host_sharers > 1 ? cfg->host_sharers : 1));
    return link_copy(cfg, t->c2c.lat_ps, bw, size_bytes);
}

static nvl_kernel_cost_t host_copy(const nvl_cost_cfg_t *cfg, uint32_t peer,
                                   double size_bytes)
{
    (void)peer;
    double bytes = 2.0 * size_bytes;
    double s = bytes / cfg->topo->host_memory.bw_bytes_per_s;
    return (nvl_kernel_cost_t){nvl_ps_from_s(s), 0, bytes};
}

static bool nvlink_usable(const nvl_cost_cfg_t *cfg, uint32_t peer,
                          char *why, size_t len)
{
    const nvl_topo_t *t = cfg->topo;
    if (peer >= t->gpus)
        snprintf(why, len, "GPU %u does not exist (%u GPUs)", peer, t->gpus);
    else if (peer == cfg->gpu)
        snprintf(why, len, "the peer GPU %u is the GPU itself (NVLink "
                 "domains of %u GPU(s))", peer, t->nvlink.domain_gpus);
    else if (nvl_topo_fabric(t, cfg->gpu, peer) != NVL_FABRIC_NVLINK &&
             nvl_topo_fabric(t, cfg->gpu, peer) != NVL_FABRIC_DIE)
        snprintf(why, len, "GPUs %u and %u are in different NVLink domains "
                 "(%u GPUs each)", cfg->gpu, peer, t->nvlink.domain_gpus);
    else if (nvl_topo_p2p_bw(t, cfg->gpu, peer) <= 0)
        snprintf(why, len, "GPU %u or %u has no NVLink link up", cfg->gpu,
                 peer);
    else
        return true;
    return false;
}

static bool c2c_usable(const nvl_cost_cfg_t *cfg, uint32_t peer, char *why,
                       size_t len)
{
    (void)peer;
    if (cfg->topo->c2c.bw_bytes_per_s > 0)
        return true;
    snprintf(why, len, "no NVLink-C2C link ([c2c] bw = 0)");
    return false;
}

static bool host_usable(const nvl_cost_cfg_t *cfg, uint32_t peer, char *why,
                        size_t len)
{
    (void)peer;
    if (cfg->topo->host_memory.bw_bytes_per_s > 0)
        return true;
    snprintf(why, len, "no host memory modeled ([host_memory] bw = 0)");
    return false;
}

static const struct {
    nvl_member_t id;
    /* NULL: every topology can */
    bool (*usable)(const nvl_cost_cfg_t *cfg, uint32_t peer, char *why,
                   size_t len);
    nvl_kernel_cost_t (*cost)(const nvl_cost_cfg_t *cfg, uint32_t peer,
                              double size_bytes);
} paths[NVL_COPY_COUNT] = {
    [NVL_COPY_HBM] = {{"hbm", "HBM to HBM on one GPU (read and write)"},
                      NULL, hbm_copy},
    [NVL_COPY_NVLINK] = {{"nvlink", "to a peer GPU over NVLink"},
                         nvlink_usable, nvlink_copy},
    [NVL_COPY_C2C_H2D] = {{"c2c-h2d", "host memory to the GPU over "
                                      "NVLink-C2C"},
                          c2c_usable, c2c_copy},
    [NVL_COPY_C2C_D2H] = {{"c2c-d2h", "the GPU to host memory over "
                                      "NVLink-C2C"},
                          c2c_usable, c2c_copy},
    [NVL_COPY_HOST] = {{"host", "host memory to host memory"}, host_usable,
                       host_copy},
};

const nvl_family_t nvl_copy_path_family =
    NVL_FAMILY("copy-path", "the paths a copy takes (nvlemu cost copy "
                            "--path)", paths);

const char *nvl_copy_path_name(nvl_copy_path_t path)
{
    return nvl_family_name(&nvl_copy_path_family, (int)path);
}

nvl_status_t nvl_copy_path_parse(const char *what, const char *name,
                                 nvl_copy_path_t *path_out)
{
    int v;
    nvl_status_t st = nvl_family_parse_report(&nvl_copy_path_family, what,
                                              name, &v);
    if (st == NVL_OK)
        *path_out = (nvl_copy_path_t)v;
    return st;
}

bool nvl_copy_path_usable(const nvl_cost_cfg_t *cfg, nvl_copy_path_t path,
                          uint32_t peer, char *why, size_t why_len)
{
    if (path >= NVL_COPY_COUNT) {
        snprintf(why, why_len, "copy path %d does not exist", (int)path);
        return false;
    }
    return paths[path].usable == NULL ||
           paths[path].usable(cfg, peer, why, why_len);
}

nvl_kernel_cost_t nvl_cost_copy(const nvl_cost_cfg_t *cfg,
                                nvl_copy_path_t path, uint32_t peer,
                                double size_bytes)
{
    if (size_bytes <= 0 || path >= NVL_COPY_COUNT)
        return (nvl_kernel_cost_t){0, 0, 0};
    return paths[path].cost(cfg, peer, size_bytes);
}
