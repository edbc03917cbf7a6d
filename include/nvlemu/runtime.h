/* nvlemu: the MPI job around the emulator: start-up (host probe, wait
 * policy, MPI), agreement between ranks, and failing without hangs.
 *
 * Errors detected identically on every rank (a bad topology file) are
 * reported once: each rank captures its reports, the ranks agree on a status
 * with one collective, and only the lowest failing rank prints.  Errors
 * detected on one rank while others may wait on it end the job with
 * nvl_runtime_abort(), which never hangs. */
#ifndef NVLEMU_RUNTIME_H
#define NVLEMU_RUNTIME_H

#include <mpi.h>
#include <stdio.h>

#include "nvlemu/host.h"
#include "nvlemu/status.h"
#include "nvlemu/topo.h"

typedef struct {
    int rank, size;             /* in MPI_COMM_WORLD */
    int local_rank, local_size; /* on this host */
    int hosts;                  /* distinct hosts in the job */
    nvl_host_info_t host;
    nvl_wait_policy_t wait;
} nvl_runtime_t;

/* Probes the host, chooses the wait policy (setting Open MPI's
 * mpi_yield_when_idle before MPI_Init when ranks outnumber cores), starts
 * MPI and fills *rt_out.  A process started without a launcher (an MPI
 * singleton) starts lean: no daemon, no network transports, no hwloc I/O
 * discovery (Open MPI variables the caller set are kept).  Reports and
 * returns an error if MPI cannot start. */
nvl_status_t nvl_runtime_init(int *argc, char ***argv, nvl_runtime_t *rt_out);

/* Ends MPI; call once on every rank. */
void nvl_runtime_finalize(void);

/* The runtime filled by nvl_runtime_init (NULL before it). */
const nvl_runtime_t *nvl_runtime(void);

/* Starts capturing reports on this rank instead of printing them. */
void nvl_runtime_capture_begin(void);

/* Collective over MPI_COMM_WORLD: stops capturing, and returns NVL_OK on
 * every rank if local is NVL_OK on every rank; otherwise the lowest failing
 * rank prints what it captured and every rank returns that rank's status. */
nvl_status_t nvl_runtime_capture_end(nvl_status_t local);

/* As nvl_runtime_capture_end, over the ranks of comm only. */
nvl_status_t nvl_runtime_capture_end_on(MPI_Comm comm, nvl_status_t local);

/* Mutes (quiet true) or restores this rank's reports: a muted rank's
 * reports are dropped, inside a capture too (its capture still agrees on
 * the status, and a muted first failing rank prints nothing).  For ranks
 * that repeat another rank's work (`run`'s replicas after the first: an
 * error they find is the first replica's, reported there once). */
void nvl_runtime_set_quiet(bool quiet);

/* As nvl_runtime_capture_end_on, agreeing in the same reduction on the
 * largest *value_ps over comm (a rank with nothing to say passes -1;
 * values >= -1): *value_ps is that maximum on every rank, on success and
 * on failure alike.  One MPI_Allreduce when every rank succeeds. */
nvl_status_t nvl_runtime_capture_end_max(MPI_Comm comm, nvl_status_t local,
                                         int64_t *value_ps);
/* As nvl_runtime_capture_end_max for n values at once (n >= 0):
 * values_ps[i] becomes the largest over comm on every rank.  One
 * MPI_Allreduce when every rank succeeds. */
nvl_status_t nvl_runtime_capture_end_maxn(MPI_Comm comm, nvl_status_t local,
                                          int64_t *values_ps, int n);

/* As nvl_runtime_capture_end_on, the caller's own reduction having
 * agreed on the first failing rank (comm's size: none) and on whether any
 * rank printed a report before (nvl_report_printed() > 0 on some rank):
 * no exchange when no rank failed, else the first one's broadcast. */
nvl_status_t nvl_runtime_capture_end_agreed(MPI_Comm comm,
                                            nvl_status_t local, int first,
                                            bool reported_before);

/* Collective: checks that every rank loaded the same topology (equal
 * nvl_topo_hash) and that it has a GPU for every rank.  On disagreement
 * rank 0 names the ranks that differ, and every rank returns
 * NVL_ERR_MISMATCH (or NVL_ERR_INVALID when ranks exceed GPUs). */
nvl_status_t nvl_runtime_check_topo(const nvl_topo_t *topo);

/* Waits for a request by the host's wait policy: MPI_Wait when ranks have a
 * core each, else polls with MPI_Test, yielding the core between the first
 * polls and then sleeping (backing off from 1 us to 100 us), so that
 * oversubscribed ranks leave the cores to the ranks that have work. */
void nvl_runtime_wait(MPI_Request *request);

/* As nvl_runtime_wait, for n requests at once (MPI_Waitall). */
void nvl_runtime_waitall(int n, MPI_Request *requests);

/* Ends the whole job at once with a non-zero code, after what was reported;
 * for errors found on one rank while others may be waiting. */
_Noreturn void nvl_runtime_abort(int code);

/* Prints the run header (ranks, hosts, host cores and NUMA nodes, wait
 * policy) as '#' lines; rank 0 only. */
void nvl_runtime_print_header(FILE *out);

#endif
