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
 *          back-to-back calls measures it; under -G the NCCL call's
 *          device time is its kernel alone (nvl_coll_kernel_time_ps); with
 *          one GPU per process (-g 1, no -G) the host's enqueue runs beside
 *          the kernel and a stream launch's own cost
 *          (nvl_coll_process_loop_time_ps)
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

/* The "Using devices" lines: one per rank, from the ranks' pids and
 * hosts (all, rank 0 only). */
typedef struct {
    int pid;
    char host[64];
} rank_id_t;

static void print_devices(const nvl_topo_t *topo, int nranks,
                          const rank_id_t *all, nvl_bench_json_t *json)
{
    char hbm[32], link[32];
    printf("#\n# Using devices\n");
    nvl_qty_format(NVL_QTY_BYTES, (double)topo->gpu.hbm_bytes, hbm,
                   sizeof hbm);
    for (int r = 0; r < nranks && all != NULL; r++) {
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

/* The run's parameters into the JSON output. */
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

/* nccl-tests' header (collective: every rank sends rank 0 its pid and
 * host), the emulator's lines, the devices and the columns. */
static void print_header(const nvl_bench_coll_t *row, const nvl_bench_args_t *a,
                         const nvl_topo_t *topo, const nvl_runtime_t *rt,
                         nvl_bench_json_t *json)
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
    print_devices(topo, rt->size, all, json);
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

/* ---- the run --------------------------------------------------------------- */

/* What a run holds from its set-up to its end. */
typedef struct {
    nvl_opts_t opts;          /* perf_opts.c's, this benchmark named */
    nvl_bench_args_t args;
    const nvl_bench_coll_t *row;
    char **typed;             /* argv as typed: getopt_long reorders argv */
    nvl_topo_t *topo;
    nvl_validation_t *validation;
    nvl_bench_json_t *json;   /* rank 0, with -J */
} bench_t;

/* The options, the topology with its what-ifs, the validation table and
 * the JSON output: each step reports its own error. */
static nvl_status_t bench_setup(bench_t *b, int argc, char **argv,
                                const nvl_runtime_t *rt)
{
    nvl_bench_args_t *a = &b->args;
    if (b->row == NULL) {
        nvl_report("no benchmark row '%s' in bench/perf_colls.c",
                   NVL_BENCH_COLL);
        return NVL_ERR_INVALID;
    }
    b->typed = malloc(((size_t)argc + 1) * sizeof *b->typed);
    if (b->typed == NULL) {
        nvl_report("out of memory");
        return NVL_ERR_NOMEM;
    }
    memcpy(b->typed, argv, ((size_t)argc + 1) * sizeof *b->typed);
    int first;
    nvl_status_t st = nvl_opts_parse(&b->opts, argc, argv, a, &first);
    if (st != NVL_OK || a->help)
        return st;
    if ((st = nvl_bench_check_args(a, b->row, rt->size)) != NVL_OK ||
        (st = nvl_topo_load(a->topo, &b->topo)) != NVL_OK)
        return st;
    for (int i = 0; st == NVL_OK && i < a->set_files.n; i++)
        st = nvl_topo_set_file(b->topo, a->set_files.items[i]);
    for (int i = 0; st == NVL_OK && i < a->sets.n; i++)
        st = nvl_topo_set(b->topo, a->sets.items[i]);
    if (st == NVL_OK && a->rank_plays == NVL_PLAYS_DIE)
        st = nvl_topo_split_dies(b->topo);
    if (st == NVL_OK)
        st = nvl_topo_check_die_ranks(b->topo, (uint32_t)rt->size);
    if (st == NVL_OK)
        st = nvl_validation_load(NULL, NVL_SOURCE_DIR, &b->validation);
    if (st == NVL_OK && a->json_path != NULL && rt->rank == 0)
        st = nvl_bench_json_open(a->json_path, argc, b->typed, &b->json);
    return st;
}

/* Every size from -b to -e, by -f or -i. */
static nvl_status_t run_sizes(const bench_t *b, nvl_comm_t *comm,
                              const nvl_bench_call_t *call,
                              nvl_bench_totals_t *totals)
{
    const nvl_bench_args_t *a = &b->args;
    nvl_status_t st = NVL_OK;
    for (size_t size = a->min_bytes; st == NVL_OK;) {
        st = nvl_bench_run_size(b->row, a, comm, call, size, totals);
        if (a->step_factor > 1) {
            if (size > a->max_bytes / (size_t)a->step_factor)
                break;
            size *= (size_t)a->step_factor;
        } else {
            if (a->max_bytes - size < a->step_bytes || a->step_bytes == 0)
                break;
            size += a->step_bytes;
        }
    }
    return st;
}

/* Rank 0: nccl-tests' footer, the validation families covering the run
 * (an engine's allreduce kernel is a class of its own), and the JSON
 * output closed (b->json then NULL). */
static nvl_status_t print_footer(bench_t *b, int nranks,
                                 const nvl_bench_totals_t *totals)
{
    const nvl_bench_args_t *a = &b->args;
    double avg = totals->busbw_n ? totals->busbw_sum / totals->busbw_n : 0.0;
    printf("# Out of bounds values : %" PRId64 " %s\n", totals->wrong,
           totals->wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n#\n", avg);
    char cls[48];
    if (a->impl != NVL_AR_NCCL)
        snprintf(cls, sizeof cls, "allreduce-%s", nvl_ar_impl_name(a->impl));
    else
        snprintf(cls, sizeof cls, "%s", b->row->name);
    nvl_vquery_t q = {.what = cls, .cls = cls, .hardware = b->topo->name,
                      .ranks = (uint32_t)nranks, .sized = true,
                      .size_lo = (double)a->min_bytes,
                      .size_hi = (double)a->max_bytes};
    nvl_validation_print(b->validation, &q, 1, stdout);
    printf("#\n# Collective test concluded: %s_perf\n#\n\n", b->row->name);
    fflush(stdout);
    nvl_bench_json_t *json = b->json;
    b->json = NULL;
    return nvl_bench_json_close(json, totals->wrong, avg,
                                nvl_validation_json(b->validation, &q, 1));
}

/* The run after its set-up: the communicator, the header, the sizes and
 * the footer; the exit code (0: every result right). */
static int bench_run(bench_t *b, const nvl_runtime_t *rt)
{
    nvl_vclock_t clock = {0};
    nvl_comm_t *comm = NULL;
    int code = 1;
    const nvl_bench_coll_t *row = b->row;
    if (nvl_runtime_check_topo(b->topo) != NVL_OK ||
        nvl_comm_create(MPI_COMM_WORLD, b->topo, &clock, &comm) != NVL_OK ||
        nvl_comm_set_allreduce(comm, b->args.impl) != NVL_OK)
        goto out;
    /* NCCL_ALGO / NCCL_PROTO may leave nothing that runs this collective:
     * say so before the table (the p2p ones need no algorithm) */
    nvl_coll_info_t probe;
    if (row->coll <= NVL_COLL_ALLREDUCE &&
        nvl_coll_choose(comm, row->coll, 0, &probe) != NVL_OK)
        goto out;
    print_header(row, &b->args, b->topo, rt, b->json);
    /* inputs stay small integers: with |input| <= 2, sums over at most
     * E / 2 ranks stay exact (fp8: 8 ranks, bf16: 128) */
    nvl_bench_call_t call = {
        .rank = rt->rank, .nranks = rt->size, .dtype = b->args.dtype,
        .op = b->args.op, .root = (int)b->args.root, .reducing = row->has_op,
        .sum_ranks = exact_int_limit(b->args.dtype) / 2,
        .one_way = b->args.pattern == PATTERN_ONE_WAY};
    nvl_bench_totals_t totals = {.json = b->json};
    if (run_sizes(b, comm, &call, &totals) != NVL_OK)
        goto out;
    nvl_runtime_capture_begin();
    nvl_status_t st =
        rt->rank == 0 ? print_footer(b, rt->size, &totals) : NVL_OK;
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
    bench_t b = {.opts = nvl_bench_opts};
    b.opts.usage = "mpirun -np N " NVL_BENCH_COLL "_perf --topo FILE "
                   "[options]";
    b.opts.intro = "Times the emulated " NVL_BENCH_COLL " on N ranks (one "
                   "GPU each) and prints nccl-tests' table.";
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        if (rt.rank == 0)
            printf("%s_perf: nvlemu %s (commit %s), output of nccl-tests "
                   "%s\n", NVL_BENCH_COLL, NVL_VERSION, NVL_GIT_COMMIT,
                   NCCL_TESTS_VERSION);
        nvl_runtime_finalize();
        return 0;
    }
    b.row = nvl_bench_coll_find(NVL_BENCH_COLL);
    int code = 1;
    nvl_runtime_capture_begin();
    nvl_status_t st = bench_setup(&b, argc, argv, &rt);
    if (nvl_runtime_capture_end(st) == NVL_OK) {
        if (b.args.help && rt.rank == 0)
            nvl_opts_help(&b.opts, stdout);
        code = b.args.help ? 0 : bench_run(&b, &rt);
    }
    nvl_bench_json_free(b.json, true); /* a run that failed writes no file */
    free(b.typed);
    nvl_topo_free(b.topo);
    nvl_validation_free(b.validation);
    nvl_opts_free(&b.opts, &b.args);
    nvl_runtime_finalize();
    return code;
}
