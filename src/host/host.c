#include "nvlemu/host.h"

#include <hwloc.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A topology of this host holding what the probe reads and no more: cores
 * and packages (PUs and NUMA nodes are always kept), no caches, groups or
 * I/O devices, and no x86 backend, whose CPUID walk binds to every PU in
 * turn (the Linux backend reads cores, NUMA nodes and the CPU model from
 * /sys and /proc alone).  Every rank probes before MPI_Init, so with many
 * ranks per core this is most of the emulator's own start-up (72 ranks on
 * 2 cores: bench/emu-speed). */
static int load_lean(hwloc_topology_t *topo)
{
    if (hwloc_topology_init(topo) != 0)
        return -1;
    hwloc_topology_set_all_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(*topo, HWLOC_OBJ_CORE,
                                   HWLOC_TYPE_FILTER_KEEP_ALL);
    hwloc_topology_set_type_filter(*topo, HWLOC_OBJ_PACKAGE,
                                   HWLOC_TYPE_FILTER_KEEP_ALL);
    hwloc_topology_set_components(*topo,
                                  HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                  "x86");
    if (hwloc_topology_load(*topo) != 0) {
        hwloc_topology_destroy(*topo);
        return -1;
    }
    return 0; /* the caller destroys it */
}

nvl_status_t nvl_host_probe(nvl_host_info_t *info_out)
{
    hwloc_topology_t topo;
    if (load_lean(&topo) != 0) {
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

/* The first line of `path` starting with `key`, its number (in units of
 * `scale` bytes); false if the file, the key or the number is missing. */
static bool read_number(const char *path, const char *key, uint64_t scale,
                        uint64_t *bytes_out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    char line[256];
    bool found = false;
    size_t n = strlen(key);
    while (!found && fgets(line, sizeof line, f) != NULL) {
        uint64_t v;
        if (strncmp(line, key, n) == 0 &&
            sscanf(line + n, "%" SCNu64, &v) == 1 && v <= UINT64_MAX / scale) {
            *bytes_out = v * scale;
            found = true;
        }
    }
    fclose(f);
    return found;
}

uint64_t nvl_host_memory_available_bytes(void)
{
    uint64_t avail = 0;
    if (!read_number("/proc/meminfo", "MemAvailable:", 1024, &avail)) {
        hwloc_topology_t topo;
        if (load_lean(&topo) == 0) {
            avail = hwloc_get_root_obj(topo)->total_memory;
            hwloc_topology_destroy(topo);
        }
    }
    /* cgroup v2: memory.max is "max" (no limit: sscanf fails) or bytes */
    uint64_t max, cur;
    if (read_number("/sys/fs/cgroup/memory.max", "", 1, &max) &&
        read_number("/sys/fs/cgroup/memory.current", "", 1, &cur)) {
        uint64_t room = max > cur ? max - cur : 0;
        if (avail == 0 || room < avail)
            avail = room;
    }
    return avail;
}
