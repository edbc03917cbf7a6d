/* The command line of every <coll>_perf benchmark: nccl-tests' options and
 * the emulator's, as one table (perf.h), and the checks no single option
 * can make.  perf_main.c names the benchmark in the usage line. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/coll.h"
#include "nvlemu/opts.h"
#include "perf.h"

/* nccl-tests' sizes: a number of bytes, optionally with K, M or G. */
/* --impl: an allreduce implementation's name (nvl_ar_impl_name). */
static nvl_status_t parse_impl(const char *label, const char *text,
                               void *impl_out)
{
    if (nvl_ar_impl_parse(text, impl_out) == NVL_OK)
        return NVL_OK;
    char names[256];
    nvl_family_names(&nvl_ar_impl_family, ", ", " or ", names, sizeof names);
    nvl_report("%s %s: unknown allreduce implementation (expected %s)",
               label, text, names);
    return NVL_ERR_INVALID;
}

/* nvl_dtype_parse and nvl_redop_parse name the value, not the option. */
static nvl_status_t parse_dtype(const char *label, const char *text,
                                void *dtype_out)
{
    (void)label;
    return nvl_dtype_parse(text, dtype_out);
}

static nvl_status_t parse_op(const char *label, const char *text,
                             void *op_out)
{
    (void)label;
    return nvl_redop_parse(text, op_out);
}

/* In bench_mode_t's order: mode_names[m].name names mode m. */
const nvl_opt_name_t nvl_bench_mode_names[] = {
    {"auto", MODE_AUTO}, {"data", MODE_DATA}, {"timing", MODE_TIMING},
    {NULL, 0}};

const nvl_opt_name_t nvl_bench_caller_names[] = {
    {"nccl-tests", CALLER_NCCL_TESTS}, {"torch", CALLER_TORCH}, {NULL, 0}};

const nvl_opt_name_t nvl_bench_pattern_names[] = {
    {"ring", PATTERN_RING}, {"one-way", PATTERN_ONE_WAY}, {NULL, 0}};

#define AT(field) offsetof(nvl_bench_args_t, field)
#define MAX_COUNT 1000000000L
/* the largest size a bench takes: 2^62 bytes (a time past the clock's
 * range is refused where it is computed) */
#define MAX_BYTES 0x1p62
static const nvl_opt_t opts[] = {
    {.name = "topo", .kind = NVL_OPT_STRING, .offset = AT(topo),
     .arg = "FILE", .required = true,
     .doc = "topology to emulate; rank r plays GPU r (or die r, --rank-plays die)"},
    {.name = "set", .kind = NVL_OPT_LIST, .offset = AT(sets),
     .arg = "SECTION.KEY=VALUE",
     .doc = "topology what-if, repeatable (nvlink.link_bw=100GB/s)"},
    {.name = "set-file", .kind = NVL_OPT_LIST, .offset = AT(set_files),
     .arg = "FILE",
     .doc = "topology what-ifs from a file, one SECTION.KEY=VALUE a line "
            "('#' comments), repeatable; applied before --set"},
    NVL_TOPO_OPT_RANK_PLAYS(nvl_bench_args_t, rank_plays),
    {.name = "minbytes", .short_name = 'b', .kind = NVL_OPT_SIZE,
     .offset = AT(min_bytes), .arg = "SIZE", .def = "32M", .min_d = 0,
     .max_d = MAX_BYTES,
     .doc = "smallest size (K, M, G are powers of 1024 as in nccl-tests; "
            "KB, MB, GB powers of 1000; KiB, MiB, GiB; docs/units.md)"},
    {.name = "maxbytes", .short_name = 'e', .kind = NVL_OPT_SIZE,
     .offset = AT(max_bytes), .arg = "SIZE", .def = "32M", .min_d = 0,
     .max_d = MAX_BYTES, .doc = "largest size"},
    {.name = "stepbytes", .short_name = 'i', .kind = NVL_OPT_SIZE,
     .offset = AT(step_bytes), .arg = "SIZE", .def = "1M", .min_d = 0,
     .max_d = MAX_BYTES,
     .doc = "increment between sizes when --stepfactor is 1"},
    {.name = "stepfactor", .short_name = 'f', .kind = NVL_OPT_LONG,
     .offset = AT(step_factor), .arg = "N", .def = "1", .min = 1,
     .max = MAX_COUNT,
     .doc = "multiply the size by N between sizes (1: use --stepbytes)"},
    {.name = "iters", .short_name = 'n', .kind = NVL_OPT_LONG,
     .offset = AT(iters), .arg = "N", .def = "20", .min = 1,
     .max = MAX_COUNT, .doc = "timed calls per size and layout"},
    {.name = "warmup_iters", .short_name = 'w', .kind = NVL_OPT_LONG,
     .offset = AT(warmup), .arg = "N", .def = "5", .min = 0,
     .max = MAX_COUNT, .doc = "untimed calls before them"},
    {.name = "datatype", .short_name = 'd', .kind = NVL_OPT_CUSTOM,
     .offset = AT(dtype), .arg = "TYPE", .def = "float",
     .parse = parse_dtype, .doc = "float, half, bfloat16 or f8e4m3"},
    {.name = "op", .short_name = 'o', .kind = NVL_OPT_CUSTOM,
     .offset = AT(op), .arg = "OP", .def = "sum", .parse = parse_op,
     .doc = "sum, max or min"},
    {.name = "root", .short_name = 'r', .kind = NVL_OPT_LONG,
     .offset = AT(root), .arg = "N", .def = "0", .min = 0, .max = MAX_COUNT,
     .doc = "root of broadcast and reduce"},
    {.name = "check", .short_name = 'c', .kind = NVL_OPT_LONG,
     .offset = AT(check), .arg = "N", .def = "1", .min = 0, .max = MAX_COUNT,
     .doc = "check the results of data-mode sizes (0: no check)"},
    {.name = "mode", .kind = NVL_OPT_ENUM, .offset = AT(mode),
     .arg = "MODE", .def = "auto", .names = nvl_bench_mode_names,
     .doc = "data, timing, or auto: data mode up to --data-max and timing "
            "mode above"},
    {.name = "impl", .kind = NVL_OPT_CUSTOM, .offset = AT(impl),
     .arg = "IMPL", .def = "nccl", .parse = parse_impl,
     .doc = "all_reduce only: nccl (the tuner's algorithm), or a serving "
            "engine's kernel (nvlemu --list allreduce; auto: TensorRT-LLM's "
            "AUTO rules, docs/collectives.md)"},
    {.name = "data-max", .kind = NVL_OPT_SIZE, .offset = AT(data_max),
     .arg = "SIZE", .def = "1M", .min_d = 0, .max_d = MAX_BYTES,
     .doc = "largest size that auto mode runs in data mode"},
    {.name = "ngpus", .short_name = 'g', .kind = NVL_OPT_LONG,
     .offset = AT(ngpus), .arg = "G", .def = "1", .min = 1, .max = 1024,
     .doc = "GPUs each thread drives, as nccl-tests: G consecutive ranks "
            "share one host thread, whose launches serialize ([nccl] "
            "launch_overhead each)"},
    {.name = "nthreads", .short_name = 't', .kind = NVL_OPT_LONG,
     .offset = AT(nthreads), .arg = "T", .def = "1", .min = 1, .max = 1024,
     .doc = "threads per nccl-tests process: each group of T x G "
            "consecutive ranks is one process (the rank count must be a "
            "multiple of T x G)"},
    {.name = "average", .short_name = 'a', .kind = NVL_OPT_LONG,
     .offset = AT(average), .arg = "N", .def = "1", .min = 0, .max = 3,
     .doc = "the time reported from the ranks' own times, as nccl-tests: "
            "0 rank 0's, 1 the mean, 2 the minimum, 3 the maximum (a "
            "collective ends at one group-wide emulated time, so they "
            "differ only where ranks' clocks do)"},
    {.name = "output_file", .alias = "json", .short_name = 'J',
     .kind = NVL_OPT_STRING, .offset = AT(json_path), .arg = "FILE",
     .doc = "also write the results as nccl-tests' JSON (FILE.0, FILE.1, "
            "... if FILE exists), with the emulator's columns"},
    {.name = "blocking", .short_name = 'z', .kind = NVL_OPT_LONG,
     .offset = AT(blocking), .arg = "N", .def = "0", .min = 0, .max = 1,
     .doc = "1: the host waits for each call before it issues the next "
            "(nccl-tests -z 1), so a call takes its host path and then its "
            "device time, one after the other (0: back to back, the larger "
            "of the two)"},
    {.name = "caller", .kind = NVL_OPT_ENUM, .offset = AT(caller),
     .arg = "WHO", .def = "nccl-tests", .names = nvl_bench_caller_names,
     .doc = "who issues each call: nccl-tests (NCCL's enqueue, [nccl] "
            "launch_overhead per GPU) or torch (torch.distributed eager: "
            "the op's launch, [gpu] launch_overhead, before NCCL's "
            "enqueue, and no call shorter than its host path, [nccl] "
            "torch_call; with -z 1, a harness that times one call on an "
            "idle device; with -G N, the replay of torch's CUDA graph of N "
            "calls, each call its eager device time, no host floor)"},
    {.name = "pattern", .kind = NVL_OPT_ENUM, .offset = AT(pattern),
     .arg = "PEERS", .def = "ring", .names = nvl_bench_pattern_names,
     .doc = "sendrecv only: ring (nccl-tests': every rank sends to the "
            "next and receives from the previous) or one-way (rank 0 sends "
            "to rank 1 while the others idle, as torch.distributed's "
            "send / recv between two members of a larger group)"},
    {.name = "cudagraph", .short_name = 'G', .kind = NVL_OPT_LONG,
     .offset = AT(graph_calls), .arg = "N", .def = "0", .min = 0,
     .max = MAX_COUNT,
     .doc = "capture N calls per CUDA graph launch: the host's launch "
            "floor is paid once per graph, N calls, and each NCCL call "
            "costs its kernel alone (0: no graphs)"},
    {.name = "help", .short_name = 'h', .kind = NVL_OPT_HELP,
     .offset = AT(help), .doc = "this help"},
};
#undef AT
const nvl_opts_t nvl_bench_opts = {
    .help_hint = "--help",
    .usage = "mpirun -np N <coll>_perf --topo FILE [options]",
    .intro = "Times the emulated collective on N ranks (one GPU each) and "
             "prints nccl-tests' table.",
    .opts = opts, .n_opts = sizeof opts / sizeof opts[0]};

nvl_status_t nvl_bench_check_args(const nvl_bench_args_t *a,
                                  const nvl_bench_coll_t *row, int nranks)
{
    size_t esz = nvl_dtype_size(a->dtype);
    const struct { const char *label; size_t bytes; bool used; } sizes[] = {
        {"-b/--minbytes", a->min_bytes, true},
        {"-e/--maxbytes", a->max_bytes, true},
        {"-i/--stepbytes", a->step_bytes, a->step_factor == 1},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].used && sizes[i].bytes % esz != 0) {
            nvl_report("%s %zu: not a whole number of %zu-byte %s elements",
                       sizes[i].label, sizes[i].bytes, esz,
                       nvl_dtype_name(a->dtype));
            return NVL_ERR_INVALID;
        }
    }
    if (a->min_bytes > a->max_bytes) {
        nvl_report("-b/--minbytes %zu is larger than -e/--maxbytes %zu",
                   a->min_bytes, a->max_bytes);
        return NVL_ERR_INVALID;
    }
    if (a->step_factor == 1 && a->step_bytes == 0 &&
        a->min_bytes < a->max_bytes) {
        nvl_report("-i/--stepbytes 0 with -f/--stepfactor 1 never reaches "
                   "-e/--maxbytes");
        return NVL_ERR_INVALID;
    }
    if (a->step_factor > 1 && a->min_bytes == 0) {
        nvl_report("-b/--minbytes 0 does not grow by -f/--stepfactor %ld; "
                   "start at one element or more",
                   a->step_factor);
        return NVL_ERR_INVALID;
    }
    if (a->impl != NVL_AR_NCCL && row->coll != NVL_COLL_ALLREDUCE) {
        nvl_report("--impl %s: only all_reduce_perf has implementations "
                   "other than nccl", nvl_ar_impl_name(a->impl));
        return NVL_ERR_INVALID;
    }
    if (a->pattern != PATTERN_RING &&
        (row->coll != NVL_COLL_SENDRECV || nranks < 2)) {
        nvl_report("--pattern %s: only sendrecv_perf on 2 or more ranks has "
                   "one (this is %s_perf on %d)",
                   nvl_bench_pattern_names[a->pattern].name, row->name,
                   nranks);
        return NVL_ERR_INVALID;
    }
    long per_process = a->nthreads * a->ngpus;
    if (nranks % per_process != 0) {
        nvl_report("-t %ld x -g %ld = %ld GPUs per nccl-tests process does "
                   "not divide the job's %d ranks (start a multiple of %ld "
                   "ranks: each rank plays one GPU)",
                   a->nthreads, a->ngpus, per_process, nranks, per_process);
        return NVL_ERR_INVALID;
    }
    if (row->has_root && a->root >= nranks) {
        nvl_report("-r/--root %ld: no such rank (the job has %d: 0..%d)",
                   a->root, nranks, nranks - 1);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

