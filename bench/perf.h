/* Private to bench/: what the shared benchmark driver (perf_main.c) needs to
 * know about one collective, as one row of one table (perf_colls.c).  Adding
 * a benchmark means adding a row there and a name to NVL_BENCH_COLLS in
 * bench/CMakeLists.txt. */
#ifndef NVLEMU_BENCH_PERF_H
#define NVLEMU_BENCH_PERF_H

#include <stdbool.h>
#include <stddef.h>

#include "nvlemu/coll.h"

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

#endif
