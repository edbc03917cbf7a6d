/* The die view of a topology (--rank-plays die): each MPI rank plays one
 * die of a multi-die package, such as one of a B200's two dies.
 *
 * A die gets 1/dies of everything the package has per GPU: SMs, FLOP and
 * exp rates, HBM capacity and bandwidth, NVLink links (the package's 18
 * NVLink-5 links split 9 + 9: NVIDIA does not publish which die drives
 * which port, so the split assumes what the identical dies suggest, as do
 * the 8 HBM stacks, 4 per die), its NVLS rate, its NIC, its C2C link and
 * its host-memory share.  Per-kernel fixed costs (overheads, floors,
 * latencies) and efficiencies stay: a die runs a kernel as the package
 * does, on fewer SMs.  The dies of a package talk over [gpu] die_link_bw
 * and die_link_lat (NV-HBI on Blackwell); docs/cost-model.md, "Die pairs",
 * states the rules and their sources. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/topo.h"

static const struct {
    nvl_member_t id;
} plays[] = {
    [NVL_PLAYS_GPU] = {{"gpu", "each rank plays a whole GPU package"}},
    [NVL_PLAYS_DIE] = {{"die", "each rank plays one die of a multi-die "
                               "package (B200: two, joined by NV-HBI)"}},
};
const nvl_family_t nvl_rank_plays_family =
    NVL_FAMILY("rank-plays", "what each MPI rank plays (--rank-plays)",
               plays);

uint32_t nvl_topo_package_of(const nvl_topo_t *t, uint32_t gpu)
{
    return t->die_view ? gpu / t->gpu.dies : gpu;
}

nvl_status_t nvl_topo_split_dies(nvl_topo_t *t)
{
    uint32_t d = t->gpu.dies;
    if (t->die_view)
        return NVL_OK;
    if (d < 2) {
        nvl_report("--rank-plays die: topology '%s' has one die per GPU "
                   "([gpu] dies = %" PRIu32 "); its ranks can only play "
                   "whole GPUs (--rank-plays gpu)",
                   t->name, d);
        return NVL_ERR_INVALID;
    }
    if (t->gpu.die_link_bw_bytes_per_s <= 0) {
        nvl_report("--rank-plays die: topology '%s' has %" PRIu32 " dies per "
                   "GPU but no die-to-die link: set [gpu] die_link_bw (and "
                   "die_link_lat)",
                   t->name, d);
        return NVL_ERR_INVALID;
    }
    const nvl_nvlink_spec_t *nv = &t->nvlink;
    uint32_t die_links = nv->links_per_gpu / d;
    if (nv->links_per_gpu % d != 0 ||
        (nv->switch_trays > 0 && die_links % nv->switch_trays != 0)) {
        nvl_report("--rank-plays die: topology '%s': [nvlink] links = %" PRIu32
                   " do not split into %" PRIu32 " dies' equal shares of "
                   "whole links, one share per switch tray (switch_trays = "
                   "%" PRIu32 ")",
                   t->name, nv->links_per_gpu, d, nv->switch_trays);
        return NVL_ERR_INVALID;
    }
    if ((uint64_t)t->gpus * d > NVL_TOPO_MAX_GPUS) {
        nvl_report("--rank-plays die: topology '%s' would have %" PRIu64
                   " dies, more than %u",
                   t->name, (uint64_t)t->gpus * d, NVL_TOPO_MAX_GPUS);
        return NVL_ERR_INVALID;
    }
    uint32_t n = t->gpus * d;
    nvl_gpu_override_t *ov = malloc(n * sizeof *ov);
    if (ov == NULL) {
        nvl_report("out of memory splitting topology '%s' into dies",
                   t->name);
        return NVL_ERR_NOMEM;
    }
    for (uint32_t g = 0; g < n; g++) {
        const nvl_gpu_override_t *p = &t->overrides[g / d];
        uint32_t die = g % d;
        ov[g] = *p;
        /* the package's lost links, as evenly as its links: die 0 first */
        ov[g].links_down = p->links_down / d + (die < p->links_down % d);
    }
    free(t->overrides);
    t->overrides = ov;
    t->gpus = n;
    nvl_gpu_spec_t *gs = &t->gpu;
    gs->hbm_bytes /= d;
    gs->hbm_bw_bytes_per_s /= d;
    gs->bf16_flops_per_s /= d;
    gs->fp8_flops_per_s /= d;
    gs->fp4_flops_per_s /= d;
    gs->sm_count /= d;
    gs->exp_ops_per_s /= d;
    t->nvlink.links_per_gpu = die_links;
    t->nvlink.nvls_bw_bytes_per_s /= d;
    t->nvlink.domain_gpus *= d;
    t->c2c.bw_bytes_per_s /= d;
    t->host_memory.bytes /= d;
    t->host_memory.bw_bytes_per_s /= d;
    t->scaleout.nic_bw_bytes_per_s /= d;
    t->node.gpus_per_tray *= d;
    t->node.gpus_per_superchip *= d;
    t->die_view = true;
    return NVL_OK;
}

nvl_status_t nvl_topo_check_die_ranks(const nvl_topo_t *t, uint32_t ranks)
{
    uint32_t d = t->gpu.dies;
    if (!t->die_view || ranks % d == 0)
        return NVL_OK;
    uint32_t below = ranks / d * d, above = below + d;
    char near[64];
    if (below > 0)
        snprintf(near, sizeof near, "%" PRIu32 " or %" PRIu32, below, above);
    else
        snprintf(near, sizeof near, "%" PRIu32, above);
    nvl_report("--rank-plays die: %" PRIu32 " ranks do not fill whole "
               "packages of %" PRIu32 " dies (topology '%s'): a package's "
               "dies are played together, so the rank count must be a "
               "multiple of %" PRIu32 " (here %s)",
               ranks, d, t->name, d, near);
    return NVL_ERR_INVALID;
}
