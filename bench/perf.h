/* Private to bench/: what the shared benchmark driver (perf_main.c) needs to
 * know about one collective, as one row of one table (perf_colls.c).  Adding
 * a benchmark means adding a row there and a name to NVL_BENCH_COLLS in
 * bench/CMakeLists.txt. */
#ifndef NVLEMU_BENCH_PERF_H
#define NVLEMU_BENCH_PERF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvlemu/coll.h"
#include "nvlemu/opts.h"

/* Where an in-place run puts the two buffers (nccl-tests' layouts). */
typedef enum {
    NVL_BENCH_INPLACE_SAME,         /* sendbuf == recvbuf */
    NVL_BENCH_INPLACE_SEND_IN_RECV, /* sendbuf = recvbuf + rank * count */
    NVL_BENCH_INPLACE_RECV_IN_SEND, /* recvbuf = sendbuf + rank * count */
    NVL_BENCH_INPLACE_NONE          /* not allowed (alltoall, as in NCCL):
                                       the in-place run is timing only */
} nvl_bench_inplace_t;

/* One call as the driver hands it to a row. */
typedef struct {
    int rank, nranks;
    size_t count;      /* the collective's count argument (nccl-tests'
                          paramcount: per block for split collectives) */
    nvl_dtype_t dtype;
    nvl_redop_t op;
    int root;
    bool reducing;     /* the row has an op */
    int sum_ranks;     /* in sums, ranks >= sum_ranks contribute zeros, so
                          that every partial sum stays exact in dtype */
    bool one_way;      /* sendrecv: rank 0 to rank 1 alone (--pattern) */
} nvl_bench_call_t;

typedef struct {
    const char *name;  /* "all_reduce": the executable is all_reduce_perf */
    nvl_coll_t coll;
    double (*busbw_factor)(int nranks); /* nccl-tests' busbw / algbw */
    bool has_root, has_op;
    /* nccl-tests' size is nranks blocks of a 16-byte-aligned count
     * (allgather: the receive buffer, reduce-scatter: the send buffer) */
    bool split;
    bool send_blocks, recv_blocks; /* the buffer holds nranks x count */
    nvl_bench_inplace_t inplace;
    nvl_status_t (*run)(nvl_comm_t *comm, const void *send, void *recv,
                        const nvl_bench_call_t *call,
                        nvl_coll_info_t *info_out);
    /* The value element i of this rank's receive buffer must hold after a
     * call whose send buffers held nvl_bench_input(); false where the
     * element is not a result (reduce, off the root). */
    bool (*expect)(const nvl_bench_call_t *call, size_t i, float *value_out);
} nvl_bench_coll_t;

/* The row named name, or NULL. */
const nvl_bench_coll_t *nvl_bench_coll_find(const char *name);

/* Element i of rank's send buffer: small integers, exact in every dtype,
 * whose reductions over any subset of ranks stay exact as well. */
float nvl_bench_input(const nvl_bench_call_t *call, int rank, size_t i);

/* ---- the command line (perf_opts.c) ------------------------------------- */

typedef enum { MODE_AUTO, MODE_DATA, MODE_TIMING } nvl_bench_mode_t;

/* Who issues each call: nccl-tests' host thread (NCCL's enqueue alone), or
 * PyTorch eager (torch.distributed: the op's eager launch first). */
typedef enum { CALLER_NCCL_TESTS, CALLER_TORCH } nvl_bench_caller_t;

/* Who sendrecv_perf's ranks exchange with: nccl-tests' ring shift (every
 * rank sends to the next and receives from the previous), or one way, rank
 * 0 to rank 1 while the others idle (torch.distributed's send / recv
 * between two members of a larger group). */
typedef enum { PATTERN_RING, PATTERN_ONE_WAY } nvl_bench_pattern_t;

typedef struct {
    const char *topo;
    nvl_opt_list_t sets, set_files;
    size_t min_bytes, max_bytes, step_bytes, data_max;
    long step_factor, iters, warmup, root, check, average;
    long blocking; /* -z: the host waits for each call (nccl-tests -z 1) */
    int caller;    /* nvl_bench_caller_t: who issues each call (--caller) */
    int pattern;   /* nvl_bench_pattern_t: sendrecv's peers (--pattern) */
    long nthreads, ngpus; /* -t, -g: a process of nthreads x ngpus ranks */
    long graph_calls;     /* -G: calls per CUDA graph launch (0: none) */
    const char *json_path; /* -J: nccl-tests' JSON output, or NULL */
    nvl_dtype_t dtype;
    nvl_redop_t op;
    nvl_ar_impl_t impl; /* --impl: all_reduce's implementation */
    int mode; /* nvl_bench_mode_t */
    int rank_plays; /* nvl_rank_plays_t: --rank-plays gpu|die */
    int help;
} nvl_bench_args_t;

/* Every benchmark's options (the usage names no collective; perf_main.c
 * puts its own in a copy); nvl_bench_mode_names names nvl_bench_mode_t,
 * nvl_bench_caller_names nvl_bench_caller_t, nvl_bench_pattern_names
 * nvl_bench_pattern_t. */
extern const nvl_opts_t nvl_bench_opts;
extern const nvl_opt_name_t nvl_bench_mode_names[];
extern const nvl_opt_name_t nvl_bench_caller_names[];
extern const nvl_opt_name_t nvl_bench_pattern_names[];

/* Checks what one option alone cannot; nranks is the MPI world size.
 * Reports and returns NVL_ERR_INVALID. */
nvl_status_t nvl_bench_check_args(const nvl_bench_args_t *args,
                                  const nvl_bench_coll_t *row, int nranks);

/* ---- nccl-tests' -J FILE (perf_json.c) ---------------------------------- */

typedef struct nvl_bench_json nvl_bench_json_t;

/* What the run was asked to do, for "config" and "nvlemu". */
typedef struct {
    size_t min_bytes, max_bytes, step_bytes, data_max;
    long step_factor, warmup, iters;
    bool check;
    int average; /* -a */
    long nthreads, ngpus, graph_calls; /* -t, -g, -G */
    const char *version, *commit, *topology, *topology_file;
} nvl_bench_config_t;

/* One size's line of the table. */
typedef struct {
    size_t bytes, count;
    const char *type, *redop;
    int root;
    double time_us[2], algbw[2], busbw[2]; /* out of place, in place */
    long long wrong[2];                    /* -1: not checked */
    long iters;
    double wall_us;
    const char *algo, *proto;
    int channels;
    bool data;
} nvl_bench_row_t;

/* Creates path (or path.0, path.1, ... if it exists, as nccl-tests) and
 * starts the document with argv and the environment.  Reports and returns
 * NVL_ERR_IO if no file can be created. */
nvl_status_t nvl_bench_json_open(const char *path, int argc, char **argv,
                                 nvl_bench_json_t **json_out);
/* The file actually written. */
const char *nvl_bench_json_path(const nvl_bench_json_t *json);
void nvl_bench_json_config(nvl_bench_json_t *json,
                           const nvl_bench_config_t *config);
void nvl_bench_json_device(nvl_bench_json_t *json, int rank, int pid,
                           const char *host, int device, const char *hex,
                           const char *info);
void nvl_bench_json_row(nvl_bench_json_t *json, const nvl_bench_row_t *row);
/* Adds the footer and the validation families covering the run (key
 * "validation", taken over; may be NULL), writes the file and frees json
 * (NULL: nothing to do, validation freed).  Reports and returns
 * NVL_ERR_IO on a write error. */
nvl_status_t nvl_bench_json_close(nvl_bench_json_t *json, int64_t wrong,
                                  double avg_busbw, json_t *validation);
/* Frees json without writing, removing its file if remove_file. */
void nvl_bench_json_free(nvl_bench_json_t *json, bool remove_file);

/* What the sizes of a run add up to (perf_size.c adds, perf_main.c prints
 * the footer). */
typedef struct {
    double busbw_sum;
    int busbw_n;
    int64_t wrong;
    nvl_bench_json_t *json; /* rank 0 with -J, else NULL */
} nvl_bench_totals_t;

/* Runs one size of row (collective over comm's members): both phases,
 * their check (data mode) and rank 0's line of the table (and the JSON
 * row), added into totals.  proto: the call's fixed fields. */
nvl_status_t nvl_bench_run_size(const nvl_bench_coll_t *row,
                                const nvl_bench_args_t *a, nvl_comm_t *comm,
                                const nvl_bench_call_t *proto, size_t size,
                                nvl_bench_totals_t *totals);

#endif
