#include "nvlemu/host.h"

#include <hwloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

nvl_status_t nvl_host_probe(nvl_host_info_t *info_out)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        nvl_report("hwloc could not read this host's topology");
        return NVL_ERR_IO;
    }
    nvl_host_info_t info = {0};
    int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    int numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    info.pus = pus > 0 ? (unsigned)pus : 1;
    info.cores = cores > 0 ? (unsigned)cores : info.pus;
    info.numa_nodes = numa > 0 ? (unsigned)numa : 1;
    hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
    const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
    snprintf(info.cpu_model, sizeof info.cpu_model, "%s",
             model ? model : "unknown CPU");
    for (size_t n = strlen(info.cpu_model); n > 0 && info.cpu_model[n - 1] == ' ';)
        info.cpu_model[--n] = '\0';
    hwloc_topology_destroy(topo);
    if (gethostname(info.hostname, sizeof info.hostname) != 0)
        snprintf(info.hostname, sizeof info.hostname, "unknown");
    info.hostname[sizeof info.hostname - 1] = '\0';
    *info_out = info;
    return NVL_OK;
}

nvl_wait_policy_t nvl_host_wait_policy(const nvl_host_info_t *info,
                                       unsigned local_ranks)
{
    return local_ranks > info->cores ? NVL_WAIT_BLOCK : NVL_WAIT_SPIN;
}

const char *nvl_wait_policy_name(nvl_wait_policy_t policy)
{
    return policy == NVL_WAIT_BLOCK ? "block (ranks outnumber cores)"
                                    : "spin (a core per rank)";
}
