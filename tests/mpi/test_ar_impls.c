/* MPI test: each serving engine's allreduce (nvl_comm_set_allreduce) in
 * data mode gives the bits of its documented reduction order -- member
 * order, or a two-shot block summed from its owner on, in float with one
 * rounding -- against a reference computed here, in float32 and bf16, at
 * sizes on both host paths (whole buffers, blocks), in place and not; the
 * implementation auto runs is the one its rules name; then the same calls
 * in timing mode give identical virtual times.  Implementations the
 * topology cannot run (NVLS without switches) must be refused.  With
 * `messages` the data moves by MPI messages (ar_data.c, the path of
 * members on several hosts) instead of the one host's shared window
 * (ar_window.c).  Last, a call made a CUDA graph node (nvl_comm_set_graph)
 * costs NCCL's rating of its algorithm and protocol after [nccl]
 * graph_edge, and an engine kernel's time does not change.
 *   mpirun -np N test_ar_impls TOPO [nvls|no-nvls|messages] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/coll.h"
#include "nvlemu/runtime.h"

static int rank_, size_, failures;

/* Values whose sums depend on their order in float: not small integers. */
static float input(int r, size_t i)
{
    unsigned x = (unsigned)(r * 2654435761u) ^ (unsigned)(i * 40503u + 17u);
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return ((float)(x % 20001u) - 10000.0f) * 1.37e-3f *
           (1.0f + (float)(r % 3) * 1e3f);
}

/* The documented block split of two-shot (vLLM cross_device_reduce_2stage:
 * 16-byte packs, count / n packs each, the last member the rest). */
static int owner_of(size_t i, size_t count, size_t esz, int n)
{
    size_t pack = 16 / esz, part = count / pack / (size_t)n * pack;
    if (part == 0)
        return n - 1;
    size_t b = i / part;
    return b >= (size_t)n ? n - 1 : (int)b;
}

/* Element i as the implementation's order sums it, rounded to dt once. */
static float reference(size_t i, size_t count, nvl_dtype_t dt, bool owner)
{
    size_t esz = nvl_dtype_size(dt);
    int first = owner ? owner_of(i, count, esz, size_) : 0;
    char e[4];
    float acc = 0;
    for (int k = 0; k < size_; k++) {
        int r = (first + k) % size_;
        nvl_dtype_from_float(dt, input(r, i), e); /* the input as stored */
        float v = nvl_dtype_to_float(dt, e);
        acc = k == 0 ? v : acc + v;
    }
    nvl_dtype_from_float(dt, acc, e);
    return nvl_dtype_to_float(dt, e);
}

/* Whether implementation impl is the row called name. */
static bool is(int impl, const char *name)
{
    return strcmp(nvl_ar_impl_name((nvl_ar_impl_t)impl), name) == 0;
}

static void check_call(nvl_comm_t *comm, nvl_ar_impl_t impl, nvl_dtype_t dt,
                       size_t count, bool inplace, int64_t *time_out)
{
    size_t esz = nvl_dtype_size(dt);
    char *send = malloc(count * esz + 1), *recv = malloc(count * esz + 1);
    for (size_t i = 0; i < count; i++)
        nvl_dtype_from_float(dt, input(rank_, i), send + i * esz);
    char *out = inplace ? send : recv;
    nvl_coll_info_t info;
    if (nvl_allreduce(comm, send, out, count, dt, NVL_OP_SUM, &info) !=
        NVL_OK) {
        fprintf(stderr, "rank %d: %s count %zu failed\n", rank_,
                nvl_ar_impl_name(impl), count);
        failures++;
    }
    nvl_coll_info_t want;
    nvl_ar_predict(comm, impl, count * nvl_dtype_size(NVL_DT_BF16), &want);
    if (info.impl != want.impl || (!is(impl, "auto") && info.impl != (int)impl)) {
        fprintf(stderr, "rank %d: %s ran %s, expected %s\n", rank_,
                nvl_ar_impl_name(impl),
                nvl_ar_impl_name((nvl_ar_impl_t)info.impl),
                nvl_ar_impl_name((nvl_ar_impl_t)want.impl));
        failures++;
    }
    bool owner = is(info.impl, "twoshot");
    for (size_t i = 0; i < count && info.impl != NVL_AR_NCCL; i++) {
        float got = nvl_dtype_to_float(dt, out + i * esz);
        float ref = reference(i, count, dt, owner);
        if (memcmp(&got, &ref, sizeof got) != 0) {
            fprintf(stderr, "rank %d: %s %s count %zu%s: element %zu = %.9g, "
                    "its order gives %.9g\n", rank_, nvl_ar_impl_name(impl),
                    nvl_dtype_name(dt), count, inplace ? " in place" : "", i,
                    got, ref);
            failures++;
            break;
        }
    }
    *time_out = info.time_ps;
    free(send);
    free(recv);
}

/* One allreduce of count bf16 values in timing mode, under impl, with the
 * graph flag as given: its info. */
static nvl_coll_info_t timed(nvl_comm_t *comm, nvl_ar_impl_t impl,
                             size_t count, bool graph)
{
    nvl_coll_info_t info = {0};
    nvl_comm_set_graph(comm, graph);
    if (nvl_comm_set_allreduce(comm, impl) != NVL_OK ||
        nvl_allreduce(comm, NULL, NULL, count, NVL_DT_BF16, NVL_OP_SUM,
                      &info) != NVL_OK)
        failures++;
    nvl_comm_set_graph(comm, false);
    return info;
}

/* In a CUDA graph, NCCL's call costs graph_edge + its kernel's time (the
 * one nccl-tests -G is timed by, where its algorithm has one: Ring and
 * Tree; NVLS, rated too, keeps its modeled time), the model's time
 * outside; oneshot's is the same either way.  114,688 B is a TP 4
 * decode's allreduce of 16 rows. */
static void check_graph(nvl_comm_t *comm, const nvl_topo_t *topo)
{
    const size_t counts[] = {1000, 57344, 4194304};
    nvl_comm_set_mode(comm, NVL_MODE_TIMING);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t bytes = counts[c] * 2;
        nvl_coll_info_t off = timed(comm, NVL_AR_NCCL, counts[c], false);
        nvl_coll_info_t on = timed(comm, NVL_AR_NCCL, counts[c], true);
        double r = on.algo == NVL_ALGO_RING || on.algo == NVL_ALGO_TREE
                       ? nvl_coll_nccl_rating_s(comm, NVL_COLL_ALLREDUCE,
                                                bytes, on.algo, on.proto)
                       : -1.0;
        int64_t want =
            r < 0 ? off.time_ps
                  : topo->nccl.graph_edge_ps +
                        nvl_coll_kernel_time_ps(comm, NVL_COLL_ALLREDUCE,
                                                bytes);
        if (on.time_ps != want || (r >= 0 && on.time_ps == off.time_ps)) {
            fprintf(stderr, "rank %d: NCCL in a graph, %zu B: %lld ps, want "
                    "%lld (outside: %lld)\n", rank_, bytes,
                    (long long)on.time_ps, (long long)want,
                    (long long)off.time_ps);
            failures++;
        }
        nvl_ar_impl_t one;
        if (nvl_ar_impl_parse("oneshot", &one) != NVL_OK ||
            timed(comm, one, counts[c], true).time_ps !=
                timed(comm, one, counts[c], false).time_ps) {
            fprintf(stderr, "rank %d: oneshot's time moved in a graph\n",
                    rank_);
            failures++;
        }
    }
}

int main(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK || argc < 2)
        return 1;
    rank_ = rt.rank;
    size_ = rt.size;
    bool nvls = argc < 3 || strcmp(argv[2], "no-nvls") != 0;
    nvl_topo_t *topo = NULL;
    if (nvl_topo_load(argv[1], &topo) != NVL_OK ||
        (!nvls && nvl_topo_set(topo, "nvlink.nvls=no") != NVL_OK))
        nvl_runtime_abort(1);
    nvl_vclock_t clock = {0};
    nvl_comm_t *comm;
    if (nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &comm) != NVL_OK)
        nvl_runtime_abort(1);
    nvl_comm_set_time_dtype(comm, NVL_DT_BF16);
    if (argc > 2 && strcmp(argv[2], "messages") == 0)
        nvl_comm_set_data_path(comm, NVL_DATA_PATH_ALGORITHM);
    /* whole buffers (window: n x S <= 64 KB; messages: (n-1) x S <= 64
     * KB), then blocks, each size first growing the window, then staged
     * before the agreement; counts not multiples of the packs nor of the
     * rank count */
    const size_t counts[] = {1, 7, 1000, 4099, 40001};
    const nvl_dtype_t dts[] = {NVL_DT_F32, NVL_DT_BF16};
    enum { N_CALLS = 5 * 2 * 2 };
    for (int impl = NVL_AR_NCCL + 1; impl < (int)nvl_ar_impl_family.n_rows;
         impl++) {
        bool needs = is(impl, "nvls-oneshot") || is(impl, "nvls-twoshot");
        nvl_status_t st = nvl_comm_set_allreduce(comm, (nvl_ar_impl_t)impl);
        if (needs && !nvls) {
            if (st != NVL_ERR_INVALID) {
                fprintf(stderr, "rank %d: %s accepted without NVLS\n", rank_,
                        nvl_ar_impl_name((nvl_ar_impl_t)impl));
                failures++;
            }
            continue;
        }
        if (st != NVL_OK) {
            failures++;
            continue;
        }
        int64_t t_data[N_CALLS], t_timing[N_CALLS];
        int k = 0;
        nvl_comm_set_mode(comm, NVL_MODE_DATA);
        for (size_t c = 0; c < 5; c++)
            for (int d = 0; d < 2; d++)
                for (int ip = 0; ip < 2; ip++)
                    check_call(comm, (nvl_ar_impl_t)impl, dts[d], counts[c],
                               ip, &t_data[k++]);
        nvl_comm_set_mode(comm, NVL_MODE_TIMING);
        k = 0;
        for (size_t c = 0; c < 5; c++)
            for (int d = 0; d < 2; d++)
                for (int ip = 0; ip < 2; ip++) {
                    nvl_coll_info_t info;
                    nvl_allreduce(comm, NULL, NULL, counts[c], dts[d],
                                  NVL_OP_SUM, &info);
                    t_timing[k++] = info.time_ps;
                }
        for (int i = 0; i < N_CALLS; i++) {
            if (t_data[i] != t_timing[i]) {
                fprintf(stderr, "rank %d: %s call %d: data %lld ps, timing "
                        "%lld ps\n", rank_,
                        nvl_ar_impl_name((nvl_ar_impl_t)impl), i,
                        (long long)t_data[i], (long long)t_timing[i]);
                failures++;
            }
        }
    }
    check_graph(comm, topo);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank_ == 0)
        printf("test_ar_impls: %d rank(s), %s, %d failure(s)\n", size_,
               topo->name, all);
    nvl_comm_destroy(comm);
    nvl_topo_free(topo);
    nvl_runtime_finalize();
    return all != 0;
}
