/* nccl-tests for the emulator: the one driver of every <coll>_perf
 * benchmark, built once per collective with -DNVL_BENCH_COLL="<coll>" (a
 * row of perf_colls.c).
 *
 * Every MPI rank plays one GPU of the topology.  For each size from -b to
 * -e (times -f, or plus -i) it calls the collective out of place and then
 * in place, -w untimed and -n timed times each, and prints nccl-tests'
 * table (the same '#' header, columns, number formats and footer, so that
 * existing scripts read it) with three columns more: the host's wall time
 * per call, and the algorithm and protocol the tuner chose.
 *
 *   time   emulated time of one call (us): the mean over the timed calls of
 *          the group's virtual end - start (nvl_coll_info_t.time_ps), but
 *          never less than the host's enqueue time of a call
 *          (nvl_coll_loop_time_ps: [nccl] launch_overhead), as a loop of
 *          back-to-back calls measures it
 *   algbw  size / time;  busbw = algbw x the collective's factor
 *          (nccl-tests: allreduce 2(n-1)/n, allgather, reduce-scatter and
 *          alltoall (n-1)/n, broadcast, reduce and sendrecv 1)
 *   #wrong elements that differ from the host's reference after one more
 *          call on fresh inputs (data mode, -c 1); N/A in timing mode
 *   wall   host seconds per timed call, measured on rank 0
 *
 * Sizes up to --data-max run in data mode (real buffers through MPI), the
 * larger ones in timing mode (no payload), which gives the same times. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvlemu/coll.h"
#include "nvlemu/opts.h"
#include "nvlemu/runtime.h"
#include "nvlemu/topo.h"
#include "nvlemu/units.h"
#include "nvlemu/validation.h"
#include "perf.h"

#ifndef NVL_BENCH_COLL
#error "build with -DNVL_BENCH_COLL=\"all_reduce\" (a row of perf_colls.c)"
#endif
#ifndef NVL_VERSION
#define NVL_VERSION "unknown"
#endif
#ifndef NVL_GIT_COMMIT
#define NVL_GIT_COMMIT "unknown"
#endif
#define NCCL_TESTS_VERSION "2.19.6" /* whose output this reproduces */

/* ---- the header ---------------------------------------------------------- */

typedef struct {
    int pid;
    char host[64];
} rank_id_t;

/* Every rank's process id and short host name, on rank 0 (the caller
 * frees); NULL on the other ranks. */
static rank_id_t *gather_rank_ids(const nvl_runtime_t *rt)
{
    rank_id_t me = {(int)getpid(), ""}, *all = NULL;
    snprintf(me.host, sizeof me.host, "%s", rt->host.hostname);
    char *dot = strchr(me.host, '.');
    if (dot != NULL)
        *dot = '\0';
    if (rt->rank == 0)
        all = malloc((size_t)rt->size * sizeof *all);
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE,
               0, MPI_COMM_WORLD);
    return all;
}

/* -J's configuration block, from the parsed options. */
static void json_config(nvl_bench_json_t *json, const nvl_bench_args_t *a,
                        const nvl_topo_t *topo)
{
    printf("# Writing JSON output to %s\n", nvl_bench_json_path(json));
    nvl_bench_config_t cfg = {
        .min_bytes = a->min_bytes, .max_bytes = a->max_bytes,
        .step_bytes = a->step_bytes, .data_max = a->data_max,
        .step_factor = a->step_factor, .warmup = a->warmup,
        .iters = a->iters, .check = a->check != 0,
        .average = (int)a->average, .nthreads = a->nthreads,
        .ngpus = a->ngpus, .graph_calls = a->graph_calls,
        .version = NVL_VERSION,
        .commit = NVL_GIT_COMMIT, .topology = topo->name,
        .topology_file = a->topo};
    nvl_bench_json_config(json, &cfg);
}

/* nccl-tests' "Using devices" lines: one per rank, the GPU (or die) it
 * plays. */
static void print_devices(const nvl_topo_t *topo, const nvl_runtime_t *rt,
                          const rank_id_t *all, nvl_bench_json_t *json)
{
    char hbm[32], link[32];
    printf("#\n# Using devices\n");
    nvl_qty_format(NVL_QTY_BYTES, (double)topo->gpu.hbm_bytes, hbm,
                   sizeof hbm);
    for (int r = 0; r < rt->size && all != NULL; r++) {
        uint32_t g = (uint32_t)r;
        nvl_qty_format(NVL_QTY_BW, nvl_topo_nvlink_bw(topo, g), link,
                       sizeof link);
        char hex[96], info[96];
        if (topo->die_view) /* --rank-plays die */
            snprintf(hex, sizeof hex, "die %u of GPU %u of %s",
                     g % topo->gpu.dies, nvl_topo_package_of(topo, g),
                     topo->name);
        else
            snprintf(hex, sizeof hex, "GPU %u of %s", g, topo->name);
        snprintf(info, sizeof info, "%s HBM, NVLink %s", hbm, link);
        printf("#  Rank %2d Group %2d Pid %6d on %10s device %2u [%s] %s\n",
               r, 0, all[r].pid, all[r].host, g % topo->node.gpus_per_tray,
               hex, info);
        if (json != NULL)
            nvl_bench_json_device(json, r, all[r].pid, all[r].host,
                                  (int)(g % topo->node.gpus_per_tray), hex,
                                  info);
    }
}

/* nccl-tests' column header, then ours. */
static void print_columns(void)
{
    printf("#\n# %10s  %12s  %8s  %6s  %6s           out-of-place           "
           "            in-place          \n",
           "", "", "", "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
           "%6s  %8s  %8s  %6s\n",
           "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
           "#wrong", "time", "algbw", "busbw", "#wrong", "wall(us)", "algo",
           "proto");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
           "%6s  %8s  %8s  %6s\n",
           "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
           "(us)", "(GB/s)", "(GB/s)", "", "", "", "");
}

static void print_header(const nvl_bench_coll_t *row, const nvl_bench_args_t *a,
                         const nvl_topo_t *topo, const nvl_runtime_t *rt,
                         nvl_bench_json_t *json)
{
    rank_id_t *all = gather_rank_ids(rt);
    if (rt->rank != 0)
        return;
    char step[48];
    if (a->step_factor > 1)
        snprintf(step, sizeof step, "%ld(factor)", a->step_factor);
    else
        snprintf(step, sizeof step, "%zu(bytes)", a->step_bytes);
    if (json != NULL)
        json_config(json, a, topo);
    printf("# nvlemu %s (output of nccl-tests version %s), topology %s: %s\n",
           NVL_VERSION, NCCL_TESTS_VERSION, topo->name, topo->description);
    printf("# Collective test starting: %s_perf\n", row->name);
    printf("# nThread %ld nGpus %ld minBytes %zu maxBytes %zu step: %s warmup "
           "iters: %ld iters: %ld agg iters: 1 validation: %d graph: %ld "
           "unalign: 0\n",
           a->nthreads, a->ngpus, a->min_bytes, a->max_bytes, step,
           a->warmup, a->iters, a->check ? 1 : 0, a->graph_calls);
    nvl_runtime_print_header(stdout);
    if (a->mode == MODE_AUTO)
        printf("# nvlemu: data mode up to %zu bytes (real buffers%s), timing "
               "mode above (no payload, #wrong N/A)\n",
               a->data_max, a->check ? ", results checked" : "");
    else
        printf("# nvlemu: %s mode at every size%s\n", nvl_bench_mode_names[a->mode].name,
               a->mode == MODE_DATA && a->check ? " (results checked)" : "");
    printf("# nvlemu: time = emulated time per call (mean of the virtual "
           "clock over the iters, at least the host's enqueue time); "
           "wall(us) = host time per call; algo proto = the tuner's "
           "choice\n");
    print_devices(topo, rt, all, json);
    free(all);
    print_columns();
    fflush(stdout);
}

/* The largest integer E such that 0..E are all exact in dtype (at most
 * 2^14): the bound on every partial sum of the check's inputs. */
static int exact_int_limit(nvl_dtype_t dtype)
{
    char elem[8];
    int e = 0;
    while (e < (1 << 14)) {
        nvl_dtype_from_float(dtype, (float)(e + 1), elem);
        if (nvl_dtype_to_float(dtype, elem) != (float)(e + 1))
            break;
        e++;
    }
    return e;
}

/* What the options name, loaded alike on every rank (nothing under
 * --help): the row's checks, the topology with its what-ifs and die view,
 * the validation families, and rank 0's -J file (argv as typed). */
static nvl_status_t prepare(nvl_bench_args_t *args,
                            const nvl_bench_coll_t *row,
                            const nvl_runtime_t *rt, int argc, char **typed,
                            nvl_topo_t **topo, nvl_validation_t **validation,
                            nvl_bench_json_t **json)
{
    nvl_status_t st = nvl_bench_check_args(args, row, rt->size);
    if (st == NVL_OK)
        st = nvl_topo_load(args->topo, topo);
    for (int i = 0; st == NVL_OK && i < args->set_files.n; i++)
        st = nvl_topo_set_file(*topo, args->set_files.items[i]);
    for (int i = 0; st == NVL_OK && i < args->sets.n; i++)
        st = nvl_topo_set(*topo, args->sets.items[i]);
    if (st == NVL_OK && args->rank_plays == NVL_PLAYS_DIE)
        st = nvl_topo_split_dies(*topo);
    if (st == NVL_OK)
        st = nvl_topo_check_die_ranks(*topo, (uint32_t)rt->size);
    if (st == NVL_OK)
        st = nvl_validation_load(NULL, NVL_SOURCE_DIR, validation);
    if (st == NVL_OK && args->json_path != NULL && rt->rank == 0)
        st = nvl_bench_json_open(args->json_path, argc, typed, json);
    return st;
}

/* Every size from -b to -e, times -f or plus -i. */
static nvl_status_t run_sizes(const nvl_bench_coll_t *row,
                              const nvl_bench_args_t *args, nvl_comm_t *comm,
                              const nvl_bench_call_t *call,
                              nvl_bench_totals_t *totals)
{
    nvl_status_t st = NVL_OK;
    for (size_t size = args->min_bytes; st == NVL_OK;) {
        st = nvl_bench_run_size(row, args, comm, call, size, totals);
        if (args->step_factor > 1) {
            if (size > args->max_bytes / (size_t)args->step_factor)
                break;
            size *= (size_t)args->step_factor;
        } else {
            if (args->max_bytes - size < args->step_bytes ||
                args->step_bytes == 0)
                break;
            size += args->step_bytes;
        }
    }
    return st;
}

/* nccl-tests' footer on rank 0, with the validation families covering
 * this collective on these ranks and sizes (an engine's allreduce kernel
 * is a class of its own); closes -J (*json becomes NULL). */
static nvl_status_t print_footer(const nvl_bench_coll_t *row,
                                 const nvl_bench_args_t *args,
                                 const nvl_topo_t *topo, int nranks,
                                 const nvl_validation_t *validation,
                                 const nvl_bench_totals_t *totals,
                                 nvl_bench_json_t **json)
{
    double avg = totals->busbw_n ? totals->busbw_sum / totals->busbw_n : 0.0;
    printf("# Out of bounds values : %" PRId64 " %s\n", totals->wrong,
           totals->wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n#\n", avg);
    char cls[48];
    if (args->impl != NVL_AR_NCCL)
        snprintf(cls, sizeof cls, "allreduce-%s", nvl_ar_impl_name(args->impl));
    else
        snprintf(cls, sizeof cls, "%s", row->name);
    nvl_vquery_t q = {.what = cls, .cls = cls, .hardware = topo->name,
                      .ranks = (uint32_t)nranks, .sized = true,
                      .size_lo = (double)args->min_bytes,
                      .size_hi = (double)args->max_bytes};
    nvl_validation_print(validation, &q, 1, stdout);
    printf("#\n# Collective test concluded: %s_perf\n#\n\n", row->name);
    fflush(stdout);
    nvl_status_t st = nvl_bench_json_close(*json, totals->wrong, avg,
                                           nvl_validation_json(validation,
                                                               &q, 1));
    *json = NULL;
    return st;
}

/* --version: this build and the nccl-tests whose output it reproduces. */
static void print_version(int rank)
{
    if (rank == 0)
        printf("%s_perf: nvlemu %s (commit %s), output of nccl-tests %s\n",
               NVL_BENCH_COLL, NVL_VERSION, NVL_GIT_COMMIT,
               NCCL_TESTS_VERSION);
}

/* The benchmark once everything is loaded: the communicator, the header,
 * every size, the footer.  The exit code: 0, or 1 when a result was wrong
 * or a step failed (reported where it failed, agreed over the job). */
static int run_bench(const nvl_bench_coll_t *row, const nvl_bench_args_t *args,
                     nvl_topo_t *topo, const nvl_runtime_t *rt,
                     const nvl_validation_t *validation,
                     nvl_bench_json_t **json)
{
    nvl_vclock_t clock = {0};
    nvl_comm_t *comm = NULL;
    nvl_coll_info_t probe;
    int code = 1;
    if (nvl_runtime_check_topo(topo) != NVL_OK ||
        nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &comm) != NVL_OK ||
        nvl_comm_set_allreduce(comm, args->impl) != NVL_OK)
        goto out;
    /* NCCL_ALGO / NCCL_PROTO may leave nothing that runs this collective:
     * say so before the table (the p2p ones need no algorithm) */
    if (row->coll <= NVL_COLL_ALLREDUCE &&
        nvl_coll_choose(comm, row->coll, 0, &probe) != NVL_OK)
        goto out;
    print_header(row, args, topo, rt, *json);
    /* inputs stay small integers: with |input| <= 2, sums over at most
     * E / 2 ranks stay exact (fp8: 8 ranks, bf16: 128) */
    nvl_bench_call_t call = {
        .rank = rt->rank, .nranks = rt->size, .dtype = args->dtype,
        .op = args->op, .root = (int)args->root, .reducing = row->has_op,
        .sum_ranks = exact_int_limit(args->dtype) / 2};
    nvl_bench_totals_t totals = {.json = *json};
    if (run_sizes(row, args, comm, &call, &totals) != NVL_OK)
        goto out;
    nvl_runtime_capture_begin();
    nvl_status_t st = NVL_OK;
    if (rt->rank == 0)
        st = print_footer(row, args, topo, rt->size, validation, &totals,
                          json);
    if (nvl_runtime_capture_end(st) != NVL_OK)
        goto out;
    int64_t wrong = totals.wrong;
    MPI_Bcast(&wrong, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    code = wrong == 0 ? 0 : 1;
out:
    nvl_comm_destroy(comm);
    return code;
}

int main(int argc, char **argv)
{
    /* the options of perf_opts.c, with this benchmark named in the usage */
    nvl_opts_t opt_table = nvl_bench_opts;
    opt_table.usage = "mpirun -np N " NVL_BENCH_COLL "_perf --topo FILE "
                      "[options]";
    opt_table.intro = "Times the emulated " NVL_BENCH_COLL " on N ranks (one "
                      "GPU each) and prints nccl-tests' table.";
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        print_version(rt.rank);
        nvl_runtime_finalize();
        return 0;
    }
    const nvl_bench_coll_t *row = nvl_bench_coll_find(NVL_BENCH_COLL);
    nvl_bench_args_t args = {0};
    nvl_topo_t *topo = NULL;
    nvl_validation_t *validation = NULL;
    int code = 1;

    nvl_runtime_capture_begin();
    nvl_status_t st = NVL_OK;
    if (row == NULL) {
        nvl_report("no benchmark row '%s' in bench/perf_colls.c",
                   NVL_BENCH_COLL);
        st = NVL_ERR_INVALID;
    }
    /* getopt_long reorders argv: -J records it as typed */
    char **typed = malloc(((size_t)argc + 1) * sizeof *typed);
    nvl_bench_json_t *json = NULL;
    if (typed == NULL) {
        nvl_report("out of memory");
        st = NVL_ERR_NOMEM;
    } else {
        memcpy(typed, argv, ((size_t)argc + 1) * sizeof *typed);
    }
    int first;
    if (st == NVL_OK)
        st = nvl_opts_parse(&opt_table, argc, argv, &args, &first);
    if (st == NVL_OK && !args.help)
        st = prepare(&args, row, &rt, argc, typed, &topo, &validation, &json);
    if (nvl_runtime_capture_end(st) != NVL_OK)
        goto out;
    if (args.help) {
        if (rt.rank == 0)
            nvl_opts_help(&opt_table, stdout);
        code = 0;
        goto out;
    }
    code = run_bench(row, &args, topo, &rt, validation, &json);
out:
    nvl_bench_json_free(json, true); /* a run that failed writes no file */
    free(typed);
    nvl_topo_free(topo);
    nvl_validation_free(validation);
    nvl_opts_free(&opt_table, &args);
    nvl_runtime_finalize();
    return code;
}
