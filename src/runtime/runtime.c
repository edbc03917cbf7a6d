#include "nvlemu/runtime.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static nvl_runtime_t runtime;
static int runtime_up;

static char captured[4096];
static size_t captured_len;
static bool quiet; /* nvl_runtime_set_quiet */

static void quiet_sink(void *ctx, const char *message)
{
    (void)ctx;
    (void)message;
}

void nvl_runtime_set_quiet(bool q)
{
    quiet = q;
    nvl_report_set_sink(q ? quiet_sink : NULL, NULL);
}

static void capture_sink(void *ctx, const char *message)
{
    (void)ctx;
    int n = snprintf(captured + captured_len,
                     sizeof captured - captured_len, "%s%s",
                     captured_len ? "\n" : "", message);
    if (n > 0)
        captured_len += (size_t)n;
    if (captured_len >= sizeof captured)
        captured_len = sizeof captured - 1;
}

/* Ranks on this host before MPI_Init, from the launcher's environment. */
static unsigned launcher_local_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE",
                                       "MPI_LOCALNRANKS", "MPI_LOCAL_NRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && atoi(v) > 0)
            return (unsigned)atoi(v);
    }
    return 1;
}

/* Started without a launcher (no launcher's rank variable): this process
 * is an MPI singleton, a job of one rank. */
static bool launched_alone(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                                       "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]) != NULL)
            return false;
    return true;
}

/* One host's MPI start-up, lean, as scripts/nvlrun sets it: the settings
 * of src/runtime/one-host.env (its comments give the measurements), the
 * rows below generated from it by CMake.  Shared memory and ob1 only; only
 * the MPI components nvlemu uses; hwloc without its plugins and its I/O
 * phase.  A job started by a plain `mpirun` on one host gets the same: a
 * 72-rank `nvlemu topo` took 15.4 s of CPU that way, 8.3 s through nvlrun
 * (2-core machine, loaded).  A variable the user set is kept. */
static const struct {
    const char *name, *value;
} one_host_env[] = {
#include "one_host_env.h"
};

static void lean_one_host_env(void)
{
    for (size_t i = 0; i < sizeof one_host_env / sizeof one_host_env[0]; i++)
        setenv(one_host_env[i].name, one_host_env[i].value, 0);
}

/* Every rank of the job on this host, from Open MPI's launcher variables
 * (set before the rank starts): the one-host settings apply. */
static bool launched_on_one_host(void)
{
    const char *world = getenv("OMPI_COMM_WORLD_SIZE");
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    return world != NULL && local != NULL && atoi(world) > 0 &&
           atoi(world) == atoi(local);
}

/* Oversubscribed ranks wait by sleeping and polling; each wake-up takes
 * CPU from the ranks they wait for.  A timer slack of 10 us per rank per
 * core lets the kernel batch those wake-ups (scripts/nvlrun's rule and
 * measurements: 72 ranks on 2 cores, MPI_Init 0.47-0.95 -> 0.11 s of CPU
 * per rank); below the kernel's default 50 us it is left alone, and a
 * slack the launcher or the user set (NVL_TIMERSLACK_NS) is kept. */
static void oversubscribed_slack(unsigned local_ranks)
{
    if (getenv("NVL_TIMERSLACK_NS") != NULL)
        return;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        cores = CPU_COUNT(&set);
    unsigned long slack_ns =
        10000ul * local_ranks / (unsigned long)(cores > 0 ? cores : 1);
    if (slack_ns > 50000ul && prctl(PR_GET_TIMERSLACK) <= 50000)
        prctl(PR_SET_TIMERSLACK, slack_ns);
}

/* A singleton's MPI start-up, lean: Open MPI 4.1 otherwise forks a daemon
 * (orted) so that the process could spawn or connect to others later,
 * which nvlemu never does (ess_singleton_isolated), and does what the
 * one-host settings above avoid.  Measured on the 2-core machine, MPI_Init
 * of a one-rank job: 0.20-0.69 s -> 0.05 s (bench/mpi_floor run without
 * mpiexec). */
static char singleton_dir[256];

static void lean_singleton_env(void)
{
    /* Isolated singletons all take job family 0, so each needs a session
     * directory of its own: two at once share /tmp/ompi.HOST.UID/jf.0, and
     * the first to end removes it under the other's MPI_Init. */
    if (getenv("OMPI_MCA_orte_tmpdir_base") == NULL) {
        const char *tmp = getenv("TMPDIR");
        snprintf(singleton_dir, sizeof singleton_dir, "%s/nvlemu-mpi.%ld",
                 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", (long)getpid());
        setenv("OMPI_MCA_orte_tmpdir_base", singleton_dir, 1);
    }
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    lean_one_host_env();
}

/* scripts/nvlrun lets Open MPI's launcher take a rank that exits 0
 * unregistered for a normal end (orte_allowed_exit_without_sync: PMIx's
 * 2 s finalize deadline, nvlrun says why), so a rank that leaves without
 * nvl_runtime_finalize fails here instead: it exits 1, which ends the job
 * (a hang or a lost report otherwise). */
static void exit_guard(void)
{
    if (!runtime_up)
        return;
    fprintf(stderr, "nvlemu[rank %d]: internal error: exit without "
                    "MPI_Finalize\n", runtime.rank);
    fflush(stderr);
    _exit(1);
}

nvl_status_t nvl_runtime_init(int *argc, char ***argv, nvl_runtime_t *rt_out)
{
    nvl_runtime_t rt = {0};
    if (launched_alone()) {
        lean_singleton_env();
    } else if (launched_on_one_host()) {
        lean_one_host_env();
        oversubscribed_slack(launcher_local_size());
    }
    nvl_status_t st = nvl_host_probe(&rt.host);
    if (st != NVL_OK)
        return st;
    rt.wait = nvl_host_wait_policy(&rt.host, launcher_local_size());
    if (rt.wait == NVL_WAIT_BLOCK)
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        nvl_report("MPI_Init failed");
        return NVL_ERR_MPI;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rt.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &rt.size);
    nvl_report_set_rank(rt.size > 1 ? rt.rank : -1);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rt.rank,
                        MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &rt.local_rank);
    MPI_Comm_size(local, &rt.local_size);
    MPI_Comm_free(&local);
    int leader = rt.local_rank == 0;
    MPI_Allreduce(&leader, &rt.hosts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    rt.wait = nvl_host_wait_policy(&rt.host, (unsigned)rt.local_size);
    runtime = rt;
    static bool guarded;
    if (!guarded)
        guarded = atexit(exit_guard) == 0;
    runtime_up = 1;
    *rt_out = rt;
    return NVL_OK;
}

/* From this many ranks on one host, mpiexec's answers to the ranks'
 * finalize come late (scripts/nvlrun: its threshold for the ranks' idle
 * class is the same). */
#define NVL_CROWD_RANKS 256

/* In a crowd, MPI_Finalize's teardown (unmapping the peers' shared
 * memory, closing Open MPI's components) runs on every rank at once, just
 * when mpiexec must answer each rank's PMIx finalize within the 2 s that
 * PMIx 4.2's client waits (scripts/nvlrun says what a late answer costs).
 * The rank's own thread yields to everything else meanwhile (SCHED_IDLE;
 * the rank's PMIx thread, which receives the answer, keeps its class).
 * Smaller oversubscribed jobs keep their class: idle ranks there only
 * wait for whatever else the host runs (a test suite's other jobs). */
void nvl_runtime_finalize(void)
{
    if (runtime_up && runtime.wait == NVL_WAIT_BLOCK &&
        runtime.local_size >= NVL_CROWD_RANKS)
        sched_setscheduler(0, SCHED_IDLE, &(struct sched_param){0});
    if (runtime_up)
        MPI_Finalize();
    runtime_up = 0;
    /* Open MPI removed its session tree; the directory above it is ours */
    if (singleton_dir[0] != '\0')
        rmdir(singleton_dir);
}

const nvl_runtime_t *nvl_runtime(void) { return runtime_up ? &runtime : NULL; }

void nvl_runtime_capture_begin(void)
{
    captured_len = 0;
    captured[0] = '\0';
    nvl_report_set_sink(capture_sink, NULL);
}

/* Both ends of a capture: the first failing rank (size: none) and
 * whether a report was printed before (a), then that rank's status and
 * what it captured (b). */
static nvl_status_t capture_finish(MPI_Comm comm, nvl_status_t local,
                                   int first, bool reported_before)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (first == size)
        return NVL_OK;
    int status = (int)local;
    MPI_Bcast(&status, 1, MPI_INT, first, comm);
    if (rank == first && !quiet) {
        /* print line by line, through the normal prefix */
        char *save = NULL;
        for (char *line = strtok_r(captured, "\n", &save); line != NULL;
             line = strtok_r(NULL, "\n", &save))
            nvl_report("%s", line);
        if (captured_len == 0 && !reported_before)
            nvl_report("failed: %s", nvl_status_str(local));
    }
    return (nvl_status_t)status;
}

nvl_status_t nvl_runtime_capture_end_on(MPI_Comm comm, nvl_status_t local)
{
    nvl_report_set_sink(quiet ? quiet_sink : NULL, NULL);
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* the first failing rank, and whether any rank has already printed a
     * report (an error reported where it was detected, before this region:
     * a failure with nothing captured then needs no second line) */
    int mine[2] = {local == NVL_OK ? size : rank,
                   nvl_report_printed() > 0 ? -1 : 0};
    int all[2] = {size, 0};
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, comm);
    return capture_finish(comm, local, all[0], all[1] < 0);
}

nvl_status_t nvl_runtime_capture_end_maxn(MPI_Comm comm, nvl_status_t local,
                                          int64_t *values_ps, int n)
{
    nvl_report_set_sink(quiet ? quiet_sink : NULL, NULL);
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* as capture_end_on's, and the values' negations (their minima are
     * the largest values) */
    enum { FIXED = 2 };
    int64_t *mine = malloc((size_t)(2 * (FIXED + n)) * sizeof *mine);
    if (n < 0 || mine == NULL) { /* the peers would wait: end the job */
        nvl_report("out of memory agreeing on %d values", n);
        nvl_runtime_abort(1);
    }
    int64_t *all = mine + FIXED + n;
    mine[0] = local == NVL_OK ? size : rank;
    mine[1] = nvl_report_printed() > 0 ? -1 : 0;
    for (int i = 0; i < n; i++)
        mine[FIXED + i] = -values_ps[i];
    MPI_Allreduce(mine, all, FIXED + n, MPI_INT64_T, MPI_MIN, comm);
    for (int i = 0; i < n; i++)
        values_ps[i] = -all[FIXED + i];
    int first = (int)all[0];
    bool before = all[1] < 0;
    free(mine);
    return capture_finish(comm, local, first, before);
}

nvl_status_t nvl_runtime_capture_end_agreed(MPI_Comm comm,
                                            nvl_status_t local, int first,
                                            bool reported_before)
{
    nvl_report_set_sink(quiet ? quiet_sink : NULL, NULL);
    return capture_finish(comm, local, first, reported_before);
}

nvl_status_t nvl_runtime_capture_end_max(MPI_Comm comm, nvl_status_t local,
                                         int64_t *value_ps)
{
    return nvl_runtime_capture_end_maxn(comm, local, value_ps, 1);
}

nvl_status_t nvl_runtime_capture_end(nvl_status_t local)
{
    return nvl_runtime_capture_end_on(MPI_COMM_WORLD, local);
}

nvl_status_t nvl_runtime_check_topo(const nvl_topo_t *topo)
{
    uint64_t h = nvl_topo_hash(topo);
    uint64_t hmin, hmax;
    MPI_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (hmin != hmax) {
        uint64_t *all = NULL;
        if (runtime.rank == 0)
            all = malloc((size_t)runtime.size * sizeof *all);
        MPI_Gather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0,
                   MPI_COMM_WORLD);
        if (runtime.rank == 0) {
            char list[512] = "";
            size_t used = 0;
            int differ = 0;
            for (int r = 0; r < runtime.size && all != NULL; r++) {
                if (all[r] == h)
                    continue;
                differ++;
                if (used < sizeof list - 16)
                    used += (size_t)snprintf(list + used, sizeof list - used,
                                             "%s%d", differ > 1 ? ", " : "", r);
            }
            nvl_report("ranks disagree on the topology: %d rank(s) (%s) "
                       "loaded a model different from rank 0's '%s' (hash "
                       "%016" PRIx64 "); give every rank the same file and "
                       "--set options",
                       differ, list, topo->name, h);
            free(all);
        }
        return NVL_ERR_MISMATCH;
    }
    if ((uint32_t)runtime.size > topo->gpus) {
        if (runtime.rank == 0)
            nvl_report("%d ranks but topology '%s' has only %" PRIu32
                       " GPUs (rank r plays GPU r)",
                       runtime.size, topo->name, topo->gpus);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

void nvl_runtime_wait(MPI_Request *request)
{
    nvl_runtime_waitall(1, request);
}

void nvl_runtime_waitall(int n, MPI_Request *requests)
{
    if (runtime.wait != NVL_WAIT_BLOCK) {
        MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
        return;
    }
    /* oversubscribed: give the core away at once (the rank we wait for may
     * need it), then sleep, backing off from 1 us to 100 us */
    long sleep_ns = 1000;
    for (int polls = 0;; polls++) {
        int done = 0;
        MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
        if (done)
            return;
        if (polls < 16) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 100000)
            sleep_ns *= 2;
    }
}

_Noreturn void nvl_runtime_abort(int code)
{
    fflush(stdout);
    fflush(stderr);
    if (runtime_up)
        MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

void nvl_runtime_print_header(FILE *out)
{
    if (runtime.rank != 0)
        return;
    fprintf(out, "# nvlemu: %d rank(s) on %d host(s); rank 0 on %s: %u "
                 "core(s), %u hardware thread(s), %u NUMA node(s), %s\n",
            runtime.size, runtime.hosts, runtime.host.hostname,
            runtime.host.cores, runtime.host.pus, runtime.host.numa_nodes,
            runtime.host.cpu_model);
    fprintf(out, "# nvlemu: %d rank(s) on this host; ranks wait by %s\n",
            runtime.local_size, nvl_wait_policy_name(runtime.wait));
}
