/* nvlemu: NCCL-modeled collectives in virtual time.
 *
 * A communicator (nvl_comm_t) is a group of ranks, each playing the GPU of
 * its MPI_COMM_WORLD rank, on one topology.  Every collective
 *   1. agrees across the group on the call (kind, count, dtype, op, root)
 *      and on the start time, the latest entry clock of the group, in one
 *      small exchange (groups of up to 8: one message between every two
 *      members, which in data mode also carries the first of the data;
 *      larger groups: one allreduce, which in data mode also carries a
 *      small allreduce's data);
 *   2. picks an algorithm and protocol as NCCL's tuner does (or as forced by
 *      NCCL_ALGO / NCCL_PROTO), and predicts its duration from the topology;
 *   3. in data mode, moves the real buffers through MPI and computes the
 *      real result, every member holding the same bits (groups of up to 8
 *      in direct exchanges, reducing in member order; larger groups in one
 *      MPI collective); in timing mode moves no payload at all;
 *   4. sets every member's clock to start + duration.
 * Both modes therefore give identical virtual times for the same calls.
 *
 * Buffers are host memory; in timing mode they may be NULL.  In-place
 * operation (sendbuf == recvbuf, or for allgather sendbuf == recvbuf +
 * rank * count elements) is allowed as in NCCL.  Errors (bad arguments,
 * ranks that disagree on a call) are reported once, by the lowest rank that
 * sees them, and returned on every rank of the group: never a hang. */
#ifndef NVLEMU_COLL_H
#define NVLEMU_COLL_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvlemu/family.h"
#include "nvlemu/status.h"
#include "nvlemu/topo.h"
#include "nvlemu/vclock.h"

typedef enum {
    NVL_DT_F32,
    NVL_DT_BF16,
    NVL_DT_F16,
    NVL_DT_FP8_E4M3,
    NVL_DT_COUNT
} nvl_dtype_t;

typedef enum { NVL_OP_SUM, NVL_OP_MAX, NVL_OP_MIN, NVL_OP_COUNT } nvl_redop_t;

/* The collectives, the first five in NCCL's ncclFunc order. */
typedef enum {
    NVL_COLL_BROADCAST,
    NVL_COLL_REDUCE,
    NVL_COLL_ALLGATHER,
    NVL_COLL_REDUCESCATTER,
    NVL_COLL_ALLREDUCE,
    NVL_COLL_ALLTOALL,
    NVL_COLL_SENDRECV,
    NVL_COLL_COUNT
} nvl_coll_t;

typedef enum { NVL_MODE_DATA, NVL_MODE_TIMING } nvl_mode_t;

/* Bytes per element. */
size_t nvl_dtype_size(nvl_dtype_t dtype);
/* nccl-tests' names: "float", "bfloat16", "half", "f8e4m3". */
const char *nvl_dtype_name(nvl_dtype_t dtype);
/* Accepts nccl-tests' names and short ones (f32, bf16, f16, fp8, e4m3). */
nvl_status_t nvl_dtype_parse(const char *name, nvl_dtype_t *dtype_out);
/* "sum", "max", "min". */
const char *nvl_redop_name(nvl_redop_t op);
nvl_status_t nvl_redop_parse(const char *name, nvl_redop_t *op_out);
/* NCCL's names: "AllReduce", "AllGather", ... */
const char *nvl_coll_name(nvl_coll_t coll);
/* NCCL's spellings of algorithms and protocols, as NCCL_ALGO / NCCL_PROTO
 * and NCCL's tuning table write them: "Ring", "NVLSTree", "LL128",
 * "Simple" ("P2P" for NVL_ALGO_COUNT, the point-to-point operations). */
const char *nvl_algo_name(nvl_algo_t algo);
const char *nvl_proto_name(nvl_proto_t proto);
/* The algorithms and the protocols as families (family.h), one row per
 * nvl_algo_t (src/coll/algos.c) and per nvl_proto_t (src/coll/protos.c),
 * each carrying the member's rules of the cost model: NCCL_ALGO's and
 * NCCL_PROTO's names, `nvlemu --list algorithm|protocol`. */
extern const nvl_family_t nvl_algo_family;
extern const nvl_family_t nvl_proto_family;

/* Converts between a dtype and float (round to nearest even; fp8 e4m3
 * saturates to +-448, NaN stays NaN). */
float nvl_dtype_to_float(nvl_dtype_t dtype, const void *elem);
void nvl_dtype_from_float(nvl_dtype_t dtype, float value, void *elem_out);

/* inout[i] = inout[i] op in[i] for n elements, computed in float and
 * rounded back to the dtype, as NCCL reduces in the element type. */
void nvl_reduce_into(nvl_dtype_t dtype, nvl_redop_t op, void *inout,
                     const void *in, size_t n);

/* ---- tuning: which algorithm and protocol ----------------------------- */

/* What NCCL's environment allows: NCCL_ALGO, NCCL_PROTO (lists, or "^list"
 * to exclude), NCCL_NVLS_ENABLE, NCCL_MAX_NCHANNELS / NCCL_MIN_NCHANNELS. */
typedef struct {
    bool algo_enabled[NVL_ALGO_COUNT];
    bool proto_enabled[NVL_PROTO_COUNT];
    int max_channels; /* 0: the topology's default */
    int min_channels;
    /* NCCL_ALGO and NCCL_PROTO as given ("" when unset), for reports */
    char algo_env[128], proto_env[128];
} nvl_tuner_cfg_t;

/* Everything enabled, channels from the topology. */
void nvl_tuner_cfg_default(nvl_tuner_cfg_t *cfg_out);

/* Reads NCCL's variables from the environment; an unknown algorithm or
 * protocol name is reported with the variable and the accepted names, and
 * NVL_ERR_INVALID returned. */
nvl_status_t nvl_tuner_cfg_from_env(nvl_tuner_cfg_t *cfg_out);

/* ---- communicators ----------------------------------------------------- */

typedef struct nvl_comm nvl_comm_t;

/* Collective over mpi_comm: a communicator whose member i plays the GPU of
 * its MPI_COMM_WORLD rank, advancing *clock (owned by the caller, one per
 * rank, shared by all of its communicators).  The topology must outlive the
 * communicator.  Tuning comes from the environment (nvl_tuner_cfg_from_env).
 * Free with nvl_comm_destroy. */
nvl_status_t nvl_comm_create(MPI_Comm mpi_comm, const nvl_topo_t *topo,
                             nvl_vclock_t *clock, nvl_comm_t **comm_out);

/* Collective: splits comm into sub-communicators by color (a TP group is
 * one color), ordered by key then rank, as MPI_Comm_split. */
nvl_status_t nvl_comm_split(nvl_comm_t *comm, int color, int key,
                            nvl_comm_t **comm_out);

/* Not collective, no MPI needed: a prediction-only communicator of nranks
 * members playing GPUs 0..nranks-1, as seen from member 0 (rank 0, size
 * nranks, nvl_comm_mpi() is MPI_COMM_NULL), for tools that model a job
 * they do not run (nvlemu coll-table).  Only nvl_coll_predict and
 * nvl_coll_choose (and the accessors) may be used on it; the collectives
 * need a real group.  clock may be NULL.  Tuning comes from the
 * environment.  Reports and returns NVL_ERR_INVALID when nranks is not
 * 1..topo->gpus or the environment is bad.  Free with nvl_comm_destroy. */
nvl_status_t nvl_comm_create_virtual(const nvl_topo_t *topo, int nranks,
                                     nvl_vclock_t *clock,
                                     nvl_comm_t **comm_out);

void nvl_comm_destroy(nvl_comm_t *comm);

int nvl_comm_rank(const nvl_comm_t *comm);
int nvl_comm_size(const nvl_comm_t *comm);
/* The GPU (topology index) member i plays. */
uint32_t nvl_comm_gpu(const nvl_comm_t *comm, int member);
const nvl_topo_t *nvl_comm_topo(const nvl_comm_t *comm);
nvl_vclock_t *nvl_comm_clock(nvl_comm_t *comm);
MPI_Comm nvl_comm_mpi(const nvl_comm_t *comm);

void nvl_comm_set_mode(nvl_comm_t *comm, nvl_mode_t mode);
nvl_mode_t nvl_comm_mode(const nvl_comm_t *comm);
/* Models every later call's time as if its elements were of `dtype`
 * (same count), whatever type the buffers hold: a float32 emulation of a
 * GPU that moves bf16 activations.  NVL_DT_COUNT restores the call's own
 * dtype (the default).  Must be the same on every member. */
void nvl_comm_set_time_dtype(nvl_comm_t *comm, nvl_dtype_t dtype);
/* Models every later call's bytes as count x bits / 8 (a collective's
 * rounded up to whole bytes): a payload whose values are narrower
 * than any dtype (NVFP4's 4 bits and a scale byte per 16 values) or mix
 * widths.  0 (the default) restores set_time_dtype's rule.  Must be the
 * same on every member. */
void nvl_comm_set_time_bits(nvl_comm_t *comm, double bits);
/* rooted true: every later allgather is timed as a group of one
 * ncclBroadcast a member (root r sending its own part) and every
 * reduce-scatter as one ncclReduce a member (root r receiving its own
 * part), as TensorRT-LLM's allgather and reducescatter ops run them
 * (cpp/tensorrt_llm/thop/allgatherOp.cpp, reducescatterOp.cpp).
 * NCCL (src/enqueue.cc, ncclPrepareTasks) aggregates a group's calls of one
 * function, operation and type within 4x of each other's size into one
 * call of their summed count for the choice of algorithm and protocol and
 * spreads them over its channels by their bytes, so the group costs one
 * Broadcast (Reduce) of the gathered (scattered) bytes: the ring only,
 * each chunk crossing its n - 1 links one after another (docs/
 * collectives.md, "Attention DP's allgather and reduce-scatter").  The
 * data move as the call's own collective.  false (the default): each
 * call is timed as itself.  Must be the same on every member. */
void nvl_comm_set_time_rooted(nvl_comm_t *comm, bool rooted);
/* graph true: every later NCCL collective of comm is a node of a CUDA
 * graph beside the caller's kernels (a serving step's graph replay), and
 * costs the GPU time of its kernel, the one nccl-tests -G is timed by
 * (nvl_coll_kernel_time_ps, where the algorithm has one: Ring, Tree)
 * after the graph's edge into NCCL's node ([nccl] graph_edge), with no
 * host enqueue.  false (the default): the model's time of a call the host
 * launches.  A serving engine's own allreduce kernels and point-to-point
 * groups are timed as before.  Must be the same on every member. */
void nvl_comm_set_graph(nvl_comm_t *comm, bool graph);
/* How data mode moves a collective's data; the modeled time is the same
 * either way.  NVL_DATA_PATH_FAST (the default): the host's quickest
 * exchange whatever algorithm the tuner chose -- member to member in
 * groups of up to 8 (src/coll/direct.c), small allreduces inside the
 * agreement and one MPI collective above 8 (src/coll/wide.c) -- reducing
 * in member order.  NVL_DATA_PATH_ALGORITHM: the chosen algorithm's own
 * steps (src/coll/ring.c, tree.c, nvls.c, nvls_tree.c, pat.c; p2p.c for
 * all-to-all and send/recv), reducing in the order that NCCL algorithm
 * does, slower on the host; a floating-point reduction may then differ in
 * its last bits from the fast path's.  A serving engine's allreduce
 * (nvl_comm_set_allreduce) sums in its own order on either path, the same
 * bits: FAST stages the buffers in a shared-memory window when the members
 * share one host (src/coll/ar_window.c), ALGORITHM always moves them by
 * MPI messages (src/coll/ar_data.c).  Must be the same on every member
 * (the agreement reports a member that differs). */
typedef enum { NVL_DATA_PATH_FAST, NVL_DATA_PATH_ALGORITHM } nvl_data_path_t;
/* The host's data paths as a family (src/coll/data_path.c), in the order
 * a call tries them: `nvlemu --list data-path`. */
extern const nvl_family_t nvl_data_path_family;
void nvl_comm_set_data_path(nvl_comm_t *comm, nvl_data_path_t path);

/* Replaces the tuning configuration (must be the same on every member). */
void nvl_comm_set_tuner(nvl_comm_t *comm, const nvl_tuner_cfg_t *cfg);
const nvl_tuner_cfg_t *nvl_comm_tuner(const nvl_comm_t *comm);

/* ---- prediction -------------------------------------------------------- */

/* What one collective call did or would do. */
typedef struct {
    nvl_coll_t coll;
    nvl_algo_t algo;   /* NVL_ALGO_COUNT for alltoall / sendrecv (p2p) */
    nvl_proto_t proto;
    int channels;
    size_t bytes;      /* NCCL's nBytes: the larger of send and receive */
    int64_t start_ps;  /* group-wide start: latest entry clock */
    int64_t time_ps;   /* modeled duration */
    int impl;          /* allreduce: the nvl_ar_impl_t that ran it
                          (NVL_AR_NCCL: algo and proto say how) */
} nvl_coll_info_t;

/* Predicted duration of one call of coll moving `bytes` (NCCL's nBytes) on
 * this communicator with a given algorithm and protocol.  Returns
 * NVL_ERR_RANGE (no report) when the pair cannot run this collective here
 * (NVLS without switches, PAT for allreduce, ...). */
nvl_status_t nvl_coll_predict(const nvl_comm_t *comm, nvl_coll_t coll,
                              size_t bytes, nvl_algo_t algo,
                              nvl_proto_t proto, nvl_coll_info_t *info_out);

/* GPU time of one NCCL collective launched from a CUDA graph, no host
 * cost: the kernel of the (algorithm, protocol) nvl_coll_choose picks for
 * coll (broadcast, reduce, allgather, reduce-scatter, allreduce) moving
 * `bytes` (NCCL's nBytes) on comm -- NCCL's per-step latencies and its
 * bytes over the protocol's bandwidth on the channels NCCL runs
 * (docs/collectives.md, "The kernel and its harness").  A harness adds its
 * host cost apart (nvl_coll_loop_time_ps, nvl_coll_blocking_time_ps, the
 * launch stream of cost.h).  0 for one rank or no bytes (NCCL launches no
 * kernel); -1 (no report) when coll is not one of those five or nothing
 * enabled can run it. */
int64_t nvl_coll_kernel_time_ps(const nvl_comm_t *comm, nvl_coll_t coll,
                                size_t bytes);

/* The time one call takes in a back-to-back loop such as nccl-tests': the
 * device time, but never less than the host's enqueue time of the call
 * ([nccl] launch_overhead) on each of host_gpus GPUs one host thread drives
 * (1 for a rank per GPU; nccl-tests -g 2 drives 2), that floor divided by
 * graph_calls when that many calls are captured in one CUDA graph launch
 * (nccl-tests -G; 1 without graphs).  A collective of no bytes costs only
 * its enqueue ([nccl] empty_call per GPU): NCCL discards it, no kernel. */
int64_t nvl_coll_loop_time_ps(const nvl_comm_t *comm,
                              const nvl_coll_info_t *info, int host_gpus,
                              int graph_calls);

/* The time one call takes in nccl-tests' eager loop with one process per
 * GPU (mpirun -np N ... -g 1, no -G, -z 0) of `iters` timed calls: the
 * host's enqueue ([nccl] launch_overhead) runs beside the device time,
 * the call's kernel (nvl_coll_kernel_ps, what -G measures) with a stream
 * launch's cost ([gpu] kernel_overhead) in place of a graph node's
 * ([gpu] kernel_floor); a call takes the larger of the two, plus the
 * smaller divided by iters (the loop's first enqueue or last kernel,
 * which nothing hides).  A call without a kernel time (NVLS, NVLSTree,
 * PAT, point-to-point), of no bytes, or iters < 1, takes
 * nvl_coll_loop_time_ps(comm, info, 1, 1). */
int64_t nvl_coll_process_loop_time_ps(const nvl_comm_t *comm,
                                      const nvl_coll_info_t *info,
                                      long iters);

/* The time one call takes when the host waits for it before it issues the
 * next (nccl-tests -z 1; a harness that records CUDA events around one
 * call on an idle device, as torch.distributed benchmarks do): the host's
 * path to the kernel and then the device time, one after the other, where
 * nvl_coll_loop_time_ps takes the larger of the two.  The host's path:
 * NCCL's enqueue ([nccl] launch_overhead) on each of host_gpus GPUs,
 * divided by graph_calls as there, and, when torch_eager, PyTorch's eager
 * launch of the op ([gpu] launch_overhead) before it; a torch.distributed
 * call also ends no sooner than its whole host path ([nccl] torch_call),
 * the end event being recorded after the call returns.  An empty
 * collective costs its host path with [nccl] empty_call in place of the
 * enqueue. */
int64_t nvl_coll_blocking_time_ps(const nvl_comm_t *comm,
                                  const nvl_coll_info_t *info, int host_gpus,
                                  int graph_calls, bool torch_eager);

/* Whether NCCL's own tuning never runs algo for this call although it is
 * enabled and can: another enabled algorithm rates faster in NCCL's model
 * (NVLS allgather and reduce-scatter against the ring, docs/collectives.md
 * "Which algorithm NCCL runs for allgather and reduce-scatter").  Such an
 * algorithm does not compete in nvl_coll_choose; nvl_coll_predict still
 * times it.  False for every algorithm whose choice the model's costs
 * alone make. */
bool nvl_coll_nccl_declines(const nvl_comm_t *comm, nvl_coll_t coll,
                            size_t bytes, nvl_algo_t algo);

/* NCCL's own rating of algo with proto for the call, in seconds (NCCL
 * tuning.cc's latency + nBytes / bandwidth, docs/collectives.md "The ring
 * by NCCL's own tuning"), by which NCCL picks the algorithm's protocol;
 * negative where the model carries no rating for algo (its protocol is
 * the one it times fastest) or algo cannot run the call with proto. */
double nvl_coll_nccl_rating_s(const nvl_comm_t *comm, nvl_coll_t coll,
                              size_t bytes, nvl_algo_t algo,
                              nvl_proto_t proto);

/* The enabled (algorithm, protocol) NCCL runs the call with: each
 * algorithm nvl_coll_nccl_declines leaves runs the enabled protocol of
 * lowest nvl_coll_nccl_rating_s where it has a rating, else the one the
 * model times fastest; of those, the algorithm the model times fastest. */
nvl_status_t nvl_coll_choose(const nvl_comm_t *comm, nvl_coll_t coll,
                             size_t bytes, nvl_coll_info_t *info_out);

/* ---- allreduce implementations (src/coll/allreduce.c, one file each;
 * docs/collectives.md, "Serving engines' allreduces") -------------------- */

/* NCCL's (the tuner's algorithm and protocol), or a serving engine's own
 * kernel: one-shot / two-shot by peer loads and stores (TensorRT-LLM
 * customAllReduceKernels, vLLM custom_all_reduce.cuh), their NVLink SHARP
 * (multimem) forms, or auto: chosen per call as TensorRT-LLM's AUTO
 * strategy chooses (src/coll/ar_auto.c).  An implementation is the index
 * of its row in the family's table (src/coll/allreduce.c).  Row 0 is
 * NCCL's, the default (a zeroed option holds it); every other row is
 * known by its name (nvl_ar_impl_parse), so a new kernel adds no value
 * here. */
typedef int nvl_ar_impl_t;
#define NVL_AR_NCCL 0

/* The implementations as a family (family.h), one row per nvl_ar_impl_t
 * (n_rows of them): --allreduce's names, its error text and `nvlemu
 * --list allreduce`. */
extern const nvl_family_t nvl_ar_impl_family;
/* The row's name ("nccl", "oneshot", ...; "?" out of range). */
const char *nvl_ar_impl_name(nvl_ar_impl_t impl);
/* True when impl reduces a buffer registered with every peer, so the
 * caller copies its input there first: torch's symmetric-memory one-shot
 * and two-shot (what `oneshot` and `twoshot` model; vLLM's
 * SymmMemCommunicator copies each input in).  False for NCCL, the
 * multimem forms and auto (TensorRT-LLM's kernels read their input in
 * place), and out of range. */
bool nvl_ar_impl_copies_input(nvl_ar_impl_t impl);
/* The name's implementation; NVL_ERR_INVALID (no report) when unknown. */
nvl_status_t nvl_ar_impl_parse(const char *name, nvl_ar_impl_t *impl_out);
/* NULL when impl can run on comm, else why not (a string literal): the
 * NVLS forms need every member in one NVLink domain whose switches reduce
 * (NVLink SHARP), as NCCL's NVLS does. */
const char *nvl_ar_impl_unsupported(const nvl_comm_t *comm,
                                    nvl_ar_impl_t impl);
/* Every later allreduce of comm runs impl (must be the same on every
 * member; NVL_AR_NCCL is the default).  Reports (member 0) and returns
 * NVL_ERR_INVALID when impl cannot run on comm. */
nvl_status_t nvl_comm_set_allreduce(nvl_comm_t *comm, nvl_ar_impl_t impl);
nvl_ar_impl_t nvl_comm_allreduce(const nvl_comm_t *comm);
/* Predicted allreduce of `bytes` on comm by impl; auto resolves to the
 * implementation it picks (info_out->impl; NVL_AR_NCCL: the tuner's
 * choice).  NVL_ERR_RANGE (no report) when impl cannot run here. */
nvl_status_t nvl_ar_predict(const nvl_comm_t *comm, nvl_ar_impl_t impl,
                            size_t bytes, nvl_coll_info_t *info_out);

/* ---- the collectives (collective over comm; info_out may be NULL) ----- */

nvl_status_t nvl_allreduce(nvl_comm_t *comm, const void *sendbuf,
                           void *recvbuf, size_t count, nvl_dtype_t dtype,
                           nvl_redop_t op, nvl_coll_info_t *info_out);
/* sendcount elements from each rank; recvbuf holds size * sendcount. */
nvl_status_t nvl_allgather(nvl_comm_t *comm, const void *sendbuf,
                           void *recvbuf, size_t sendcount, nvl_dtype_t dtype,
                           nvl_coll_info_t *info_out);
/* sendbuf holds size * recvcount; rank r gets block r reduced. */
nvl_status_t nvl_reducescatter(nvl_comm_t *comm, const void *sendbuf,
                               void *recvbuf, size_t recvcount,
                               nvl_dtype_t dtype, nvl_redop_t op,
                               nvl_coll_info_t *info_out);
nvl_status_t nvl_broadcast(nvl_comm_t *comm, const void *sendbuf,
                           void *recvbuf, size_t count, nvl_dtype_t dtype,
                           int root, nvl_coll_info_t *info_out);
/* recvbuf is used on root only. */
nvl_status_t nvl_reduce(nvl_comm_t *comm, const void *sendbuf, void *recvbuf,
                        size_t count, nvl_dtype_t dtype, nvl_redop_t op,
                        int root, nvl_coll_info_t *info_out);
/* count elements to and from every rank (buffers hold size * count). */
nvl_status_t nvl_alltoall(nvl_comm_t *comm, const void *sendbuf,
                          void *recvbuf, size_t count, nvl_dtype_t dtype,
                          nvl_coll_info_t *info_out);
/* Sends count elements to member `to` and receives count from member
 * `from` at once (nccl-tests sendrecv: to = rank+1, from = rank-1).  Both
 * directions share the GPU's ports; the receive completes no earlier than
 * the sender's clock plus latency plus transfer. */
nvl_status_t nvl_sendrecv(nvl_comm_t *comm, const void *sendbuf, int to,
                          void *recvbuf, int from, size_t count,
                          nvl_dtype_t dtype, nvl_coll_info_t *info_out);

/* ---- point-to-point groups (ncclGroupStart / ncclSend / ncclRecv /
 * ncclGroupEnd) ----------------------------------------------------------- */

/* Starts queuing: until nvl_group_end, nvl_send and nvl_recv only record
 * their operation (buffers must stay valid until nvl_group_end returns).
 * Reports and returns NVL_ERR_INVALID if a group is already open. */
nvl_status_t nvl_group_start(nvl_comm_t *comm);

/* Queue count elements to send to member peer / to receive from it. */
nvl_status_t nvl_send(nvl_comm_t *comm, const void *buf, size_t count,
                      nvl_dtype_t dtype, int peer);
nvl_status_t nvl_recv(nvl_comm_t *comm, void *buf, size_t count,
                      nvl_dtype_t dtype, int peer);

/* Collective over comm (every member calls it, with or without queued
 * operations): runs everything queued at once.  A GPU's NVLink ports and its
 * NIC are shared by all of its sends, and (the other direction) by all of
 * its receives, so the group takes its busiest port's time plus one
 * latency; the slowest member sets everyone's end.  In data mode the
 * members check, within the agreement every call opens with, that every
 * send matches a receive of the same size; a mismatch is reported once,
 * naming both members, and fails everywhere (NVL_ERR_INVALID).  A member
 * calling a collective meanwhile fails everywhere too (NVL_ERR_MISMATCH,
 * one report naming both calls). */
nvl_status_t nvl_group_end(nvl_comm_t *comm, nvl_coll_info_t *info_out);

/* ---- all-to-all implementations (how a group is timed) ------------------
 * A mixture of experts' dispatch and combine are groups of sends and
 * receives.  NCCL runs them on its p2p path (p2p.c); serving engines on
 * NVLink run one-sided kernels instead that write straight into the
 * peers' receive buffers (src/coll/onesided.c, docs/collectives.md
 * "One-sided all-to-all"): DeepEP's low-latency mode (one kernel, one
 * message per (token, expert) pair, a flag per expert) and its normal,
 * high-throughput mode (a notify kernel exchanging counts, then one
 * message per (token, rank)).  The data moved is the same; only the time
 * differs. */
typedef enum {
    NVL_A2A_NCCL,        /* "nccl" */
    NVL_A2A_ONESIDED_LL, /* "onesided-ll" */
    NVL_A2A_ONESIDED_HT, /* "onesided-ht" */
    NVL_A2A_COUNT
} nvl_a2a_t;

/* The names above (literals). */
const char *nvl_a2a_name(nvl_a2a_t a2a);

/* Whether a2a can run on comm: the one-sided kernels need every member in
 * one NVLink domain (peer access to every receive buffer); if not, writes
 * why into why (len bytes) and returns false. */
bool nvl_a2a_usable(const nvl_comm_t *comm, nvl_a2a_t a2a, char *why,
                    size_t len);

/* This member's modeled time of a group under a2a sending send_bytes[p]
 * to and receiving recv_bytes[p] from each member p (comm size entries;
 * its own entry ignored); the group takes the largest over the members.
 * Pure: no MPI, no clock.  a2a must be usable on comm. */
int64_t nvl_a2a_predict_ps(const nvl_comm_t *comm, nvl_a2a_t a2a,
                           const double *send_bytes,
                           const double *recv_bytes);

/* The same seen from member `member` (its sends and receives, its GPU's
 * ports): what nvl_a2a_predict_ps returns on that member, on any member
 * (timing mode's expert-parallel book takes the group's largest without
 * an exchange). */
int64_t nvl_a2a_predict_member_ps(const nvl_comm_t *comm, int member,
                                  nvl_a2a_t a2a, const double *send_bytes,
                                  const double *recv_bytes);

/* NCCL's point-to-point time of a group (as nvl_a2a_predict_ps with
 * NVL_A2A_NCCL) seen from any member: that member sending send_bytes[p]
 * to and receiving recv_bytes[p] from each member p.  Pure: no MPI, no
 * clock; works on a virtual communicator (nvlemu serve times a KV
 * transfer between two replicas with it on every rank). */
int64_t nvl_p2p_predict_member_ps(const nvl_comm_t *comm, int member,
                                  const double *send_bytes,
                                  const double *recv_bytes);

/* nvl_group_end timed as a2a (NVL_A2A_NCCL: exactly nvl_group_end).  The
 * one-sided modes time the queued bytes to and from member p multiplied
 * by wire_out[p] and wire_in[p] (NULL: 1): the copies the implementation
 * puts on the wire beyond the queued data (the low-latency mode's one
 * message per expert instead of per rank).  Reports and fails on every
 * member when a2a is not usable on comm. */
nvl_status_t nvl_group_end_a2a(nvl_comm_t *comm, nvl_a2a_t a2a,
                               const double *wire_out, const double *wire_in,
                               nvl_coll_info_t *info_out);

/* ---- deferred agreement (timing mode; docs/ARCHITECTURE.md, "Deferred
 * agreement") ----------------------------------------------------------
 * In timing mode nothing a member computes between two calls depends on
 * the other members but their clocks, so a member may run ahead: record
 * its calls with its entry clock as a function of the previous call's end
 * (unknown until the members have agreed), and agree on all of them at
 * once.  Each call's start is then computed from the exchanged entries in
 * order, exactly as the per-call agreement computes it (the latest entry
 * clock; integer picoseconds, so bit for bit the same), its duration is
 * the largest member's, and a call that is wrong or differs between the
 * members is reported as the per-call agreement reports it, naming the
 * first such call. */

/* "No lower bound" for nvl_comm_defer_entry's b_ps. */
#define NVL_DEFER_NO_BOUND INT64_MIN

/* Starts recording: until nvl_comm_settle, every collective and
 * nvl_group_end of comm is checked and timed on this member only and
 * recorded; it returns NVL_OK with this member's duration in info_out's
 * time_ps and start_ps -1, and leaves the clock alone.  Timing mode only:
 * in data mode (payloads must move) reports and returns NVL_ERR_INVALID. */
nvl_status_t nvl_comm_defer(nvl_comm_t *comm);

/* Whether comm is recording. */
bool nvl_comm_deferring(const nvl_comm_t *comm);

/* This member's entry clock of the next recorded call, as
 * max(x + a_ps, b_ps) with x the end of the previous recorded call
 * (first call: x = 0, so a_ps is the entry itself, b_ps
 * NVL_DEFER_NO_BOUND).  exact false: the caller could not state it
 * (a value out of its range); the batch then agrees call by call at
 * nvl_comm_settled_call, as without deferral. */
void nvl_comm_defer_entry(nvl_comm_t *comm, int64_t a_ps, int64_t b_ps,
                          bool exact);

/* Calls recorded since nvl_comm_defer (the index the next one gets). */
size_t nvl_comm_deferred_calls(const nvl_comm_t *comm);

/* A value of this member's that the settlement's exchange carries (the
 * largest over the members is read back with nvl_comm_settled_ride after
 * nvl_comm_settle); INT64_MIN when not called since nvl_comm_defer. */
void nvl_comm_defer_ride(nvl_comm_t *comm, int64_t value);
int64_t nvl_comm_settled_ride(const nvl_comm_t *comm);

/* Collective: ends recording and agrees on every recorded call in one
 * exchange (one small allreduce when the members recorded no more calls
 * than the last settlement counted, else a second one for the rest).  A wrong call, or calls that differ
 * between the members (their kinds, sizes, or how many there were), fail
 * on every member with the report the per-call agreement gives for the
 * first such call (NVL_ERR_INVALID, NVL_ERR_MISMATCH).  On success the
 * outcomes are read in order with nvl_comm_settled_call.  end_out (NULL
 * on every member, or on none): the caller stated, with a last
 * nvl_comm_defer_entry after its last call, where its work ends; gets the
 * latest of those ends over the members (computed as a call's start), or
 * -1 when the batch agrees call by call (not known before the replay). */
nvl_status_t nvl_comm_settle(nvl_comm_t *comm, int64_t *end_out);

/* Recorded call k's outcome, for k = 0, 1, ... in order, once each, with
 * comm's clock at this member's entry of the call: sets the clock to the
 * call's end, as the call itself would have, and writes what it did
 * (start_ps, time_ps as agreed).  A clock other than the entry stated
 * for the call is an internal error (reported; the job ends).  Collective
 * when the batch agrees call by call (an inexact entry). */
nvl_status_t nvl_comm_settled_call(nvl_comm_t *comm, size_t k,
                                   nvl_coll_info_t *info_out);

/* ---- a batch agreed by the caller: several communicators' recorded
 * calls settled in one exchange of the caller's (a pipeline's step,
 * src/engine/pipe_agree.c), instead of nvl_comm_settle ---------------- */

/* Recorded call k as this member recorded it: its entry max(x + a, b),
 * its duration, signature and whether its checks passed. */
typedef struct {
    int64_t a_ps, b_ps, time_ps, signature;
    bool ok;
} nvl_defer_view_t;
void nvl_comm_deferred_get(const nvl_comm_t *comm, size_t k,
                           nvl_defer_view_t *out);

/* Recorded call k agreed: this member's entry, the call's start and
 * duration (what nvl_comm_settled_call then checks and returns). */
void nvl_comm_defer_resolve(nvl_comm_t *comm, size_t k, int64_t entry_ps,
                            int64_t start_ps, int64_t time_ps);

/* Ends recording once every call is resolved (per_call false), or
 * leaves them to be agreed call by call by nvl_comm_settled_call
 * (per_call true: collective over comm, each call in order). */
void nvl_comm_defer_close(nvl_comm_t *comm, bool per_call);

/* Collective over comm: ends recording and has the per-call agreement
 * report what is wrong with recorded call k (k = the number recorded:
 * this member has no such call), as nvl_comm_settle does; drops the
 * calls.  Returns the error (NVL_ERR_INVALID, NVL_ERR_MISMATCH). */
nvl_status_t nvl_comm_defer_report(nvl_comm_t *comm, size_t k);

/* Ends recording and drops the recorded calls (a failed batch). */
void nvl_comm_defer_drop(nvl_comm_t *comm);

#endif
