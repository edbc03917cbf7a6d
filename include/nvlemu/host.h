/* nvlemu: the host the emulation runs on (not the emulated GPU), read with
 * hwloc: how many cores and NUMA nodes, and therefore how ranks must wait.
 * When more ranks share a host than it has cores, a spinning rank steals
 * the core another rank needs, so ranks then block (sleep between polls)
 * instead of spinning. */
#ifndef NVLEMU_HOST_H
#define NVLEMU_HOST_H

#include <stdint.h>

#include "nvlemu/status.h"

typedef enum {
    NVL_WAIT_SPIN,  /* a core per rank: MPI's own busy wait */
    NVL_WAIT_BLOCK  /* oversubscribed: poll, then sleep with backoff */
} nvl_wait_policy_t;

typedef struct {
    char hostname[64];
    unsigned cores;      /* physical cores this process may use */
    unsigned pus;        /* hardware threads */
    unsigned numa_nodes;
    char cpu_model[96];
} nvl_host_info_t;

/* Reads the host through hwloc.  Reports and returns NVL_ERR_IO if hwloc
 * cannot load the host topology. */
nvl_status_t nvl_host_probe(nvl_host_info_t *info_out);

/* The wait policy for local_ranks ranks on a host with info->cores cores. */
nvl_wait_policy_t nvl_host_wait_policy(const nvl_host_info_t *info,
                                       unsigned local_ranks);

const char *nvl_wait_policy_name(nvl_wait_policy_t policy);

/* Bytes of memory a process on this host can still obtain: MemAvailable
 * of /proc/meminfo (what the kernel can hand out without swapping, page
 * cache included), lowered to the room left under the cgroup's
 * memory.max when one is set (a container's limit); hwloc's total memory
 * of the machine where /proc/meminfo cannot be read.  0: none of them
 * could be read (the caller then cannot check). */
uint64_t nvl_host_memory_available_bytes(void);

#endif
