/* Private to src/coll: the communicator, one call's arguments, the table
 * row each algorithm fills, and the shared pieces of the cost model and of
 * data movement. */
#ifndef NVLEMU_COLL_IMPL_H
#define NVLEMU_COLL_IMPL_H

#include "nvlemu/coll.h"

struct nvl_comm {
    MPI_Comm mpi;
    int rank, size;
    uint32_t *gpus;          /* size entries: GPU played by each member */
    const nvl_topo_t *topo;
    nvl_vclock_t *clock;
    nvl_mode_t mode;
    nvl_data_path_t data_path; /* how data mode moves data */
    size_t time_elem_bytes;  /* element size the time model uses; 0: the call's */
    double time_bits;        /* bits a value for collectives; 0: unused */
    bool time_rooted;        /* set_time_rooted: grouped broadcasts */
    nvl_tuner_cfg_t tuner;
    nvl_ar_impl_t ar_impl;   /* allreduce implementation (allreduce.c) */
    bool graph;              /* NCCL calls are CUDA graph nodes (graph.c) */
    nvl_coll_info_t choice;  /* the tuner's last answer (coll, bytes: key) */
    bool choice_valid;       /* cleared when the tuner changes */
    /* derived from the members' GPUs (same on every member) */
    int *members;            /* 0..size-1: the group of every member */
    int domains;             /* NVLink domains spanned ("nodes" in NCCL) */
    int log2_domains;        /* floor(log2(domains)), NCCL's log2i */
    int max_per_domain;      /* most members in one domain */
    double nvlink_bw;        /* slowest member's NVLink, bytes/s/direction */
    /* die view (--rank-plays die): NCCL's ring places a package's dies
     * next to each other, so that `die_edges` of its `size` edges cross
     * the die link (every edge when the members are one package's dies) */
    int die_edges;
    double die_link_bw;      /* bytes/s/direction; 0 without die edges */
    double nic_bw;           /* slowest member's NIC, after oversubscription */
    bool nvls;               /* all members in one switched domain with NVLS */
    void *scratch;           /* owned: nvl_xfer_scratch */
    size_t scratch_bytes;
    char *agree_buf;         /* owned: the agreement exchange's messages */
    size_t agree_bytes;
    /* groups of more than NVL_DIRECT_MAX_MEMBERS (agree.c, wide.c) */
    size_t agree_room;       /* payload room of the next agreement (same on
                                every member: set from agreed calls only) */
    size_t agree_need_prev;  /* what the last agreed call could have used */
    MPI_Datatype agree_type; /* one agreement element, agree_type_bytes */
    size_t agree_type_bytes; /* 0: none created yet */
    MPI_Op agree_op;         /* merges two elements (agree.c) */
    /* the serving engines' allreduces' shared window (ar_window.c) */
    int win_host;            /* 1: members on one host, -1: not, 0: unknown */
    MPI_Win win;             /* 2 x win_slot_bytes per member */
    char **win_slots;        /* owned: size entries, member k's two slots */
    size_t win_slot_bytes;   /* 0: no window yet */
    unsigned win_calls;      /* agreed calls through it (the slot's parity) */
    bool wide_ready;         /* the reduction ops below exist (wide.c) */
    MPI_Op reduce_op[NVL_DT_COUNT][NVL_OP_COUNT];
    /* point-to-point group being queued (nvl_group_start .. _end) */
    bool group_open;
    struct nvl_p2p_op *ops;  /* owned */
    double *op_time_bytes;   /* owned: per queued op, the bytes its time
                                counts (at the time dtype) */
    size_t n_ops, cap_ops;
    /* deferred agreement (defer.c): the recorded calls, their outcome */
    bool defer, defer_exact; /* recording; every entry stated exactly */
    bool defer_per_call;     /* settled: agree call by call on replay */
    struct nvl_defer_call *dcalls; /* owned */
    size_t n_dcalls, cap_dcalls, settled_next;
    size_t settle_guess;     /* calls the last settlement counted */
    int64_t next_a_ps, next_b_ps; /* the next call's entry */
    long defer_fail;         /* this member's first failing call (-1) */
    int64_t ride;            /* nvl_comm_defer_ride's; settled: the max */
    char defer_what[160], defer_why[256];
};

/* The MPI tags of the collectives' own messages, one per phase that may
 * be in flight beside another on the same communicator. */
typedef enum {
    NVL_TAG_AGREE = 90,        /* agree.c: the agreement's messages */
    NVL_TAG_RING_RS = 100,     /* xfer.c: ring reduce-scatter steps */
    NVL_TAG_RING_AG = 101,     /* xfer.c: ring allgather steps */
    NVL_TAG_DIRECT_RS = 102,   /* xfer.c: direct reduce-scatter */
    NVL_TAG_DIRECT_AG = 103,   /* xfer.c: direct allgather */
    NVL_TAG_SPLIT = 91,        /* direct.c: shares beyond the agreement */
    NVL_TAG_RING_BCAST = 110,  /* ring.c: the chain from the root */
    NVL_TAG_RING_REDUCE = 111, /* ring.c: the chain to the root */
    NVL_TAG_TREE_UP = 120,     /* tree.c: towards the root (+1 mirrored) */
    NVL_TAG_TREE_DOWN = 122,   /* tree.c: from the root (+1 mirrored) */
    NVL_TAG_PAT_GATHER = 130,  /* pat.c: doubling allgather */
    NVL_TAG_PAT_SCATTER = 131, /* pat.c: halving reduce-scatter */
    NVL_TAG_SENDRECV = 140,    /* p2p.c */
    NVL_TAG_ALLTOALL = 141,    /* p2p.c */
    NVL_TAG_GROUP = 150,       /* p2p.c: nvl_group_end's exchange */
} nvl_tag_t;

/* One queued send or receive of a group. */
typedef struct nvl_p2p_op {
    bool send;
    void *buf;
    size_t bytes;
    int peer;
} nvl_p2p_op_t;

/* One collective call, as every algorithm's run() receives it. */
typedef struct {
    nvl_comm_t *comm;
    nvl_coll_t coll;
    const void *send;
    void *recv;
    size_t count;            /* elements: per rank for allgather/RS/alltoall */
    nvl_dtype_t dtype;
    nvl_redop_t op;
    int root;
    int peer_to, peer_from;  /* sendrecv */
} nvl_coll_call_t;

/* The model of one NCCL algorithm (src/coll/<algo>.c): its functions and
 * every rule of the shared cost model (model.c) that differs for it; its
 * identity (enum value, names, latency keys) is its row of NVL_ALGO_TABLE
 * (include/nvlemu/topo.h), its family row algos.c's. */
typedef struct {
    nvl_algo_t algo;
    /* whether the algorithm can run coll with proto on this communicator */
    bool (*supports)(const nvl_comm_t *comm, nvl_coll_t coll,
                     nvl_proto_t proto);
    /* modeled duration in seconds of coll moving `bytes` (NCCL nBytes) */
    double (*predict_s)(const nvl_comm_t *comm, nvl_coll_t coll,
                        size_t bytes, nvl_proto_t proto, double channels);
    /* the GPU time in seconds of the kernel alone, launched from a CUDA
     * graph (nvl_coll_kernel_time_ps): NCCL's step latencies and the
     * bytes over the channels, without the eager call's costs predict_s
     * carries; NULL: predict_s is the kernel's time too */
    double (*kernel_s)(const nvl_comm_t *comm, nvl_coll_t coll,
                       size_t bytes, nvl_proto_t proto, double channels);
    /* moves the data of a call (data mode only) */
    nvl_status_t (*run)(const nvl_coll_call_t *call);
    /* the share of a channel's rate a protocol carries, where this
     * algorithm's differs from the protocol's own eff (0: the protocol's) */
    double proto_eff[NVL_PROTO_COUNT];
    /* NCCL's bytes per thread before adding a channel, per member, where
     * it scales with the members (0: the protocol's thread_threshold) */
    double thread_threshold_per_rank[NVL_PROTO_COUNT];
    /* the channels it runs on, where not chosen by size from the
     * protocol's thread threshold (NULL): max_nc and min_nc are the
     * channel bounds after NCCL_MAX/MIN_NCHANNELS */
    double (*channels)(const nvl_comm_t *comm, int max_nc, int min_nc);
    /* NCCL's ceiling per channel for this algorithm (NULL: none) */
    double (*max_bw_per_channel)(const nvl_nccl_spec_t *nccl);
    /* its allreduce, allgather and reduce-scatter are a chain of steps of
     * which only the first and the last touch the user's buffers, the
     * others forwarding at the channel's rate: the mid-size ramp and
     * gather_scatter_efficiency apply to those end steps only (model.c) */
    bool forwarding_steps;
    /* NCCL's own estimate of the call's time, seconds (tuning.cc
     * ncclTopoTuneModel's latency and bandwidth tables, enqueue.cc /
     * tuning.cc ncclTopoGetAlgoTime: lat + nBytes / algBw), by which NCCL
     * picks the algorithm's protocol (tuner.c); NULL: the model's own
     * predict_s picks it */
    double (*rating_s)(const nvl_comm_t *comm, nvl_coll_t coll, size_t bytes,
                       nvl_proto_t proto);
    /* the environment variable whose 0 disables it (NULL: none) */
    const char *enable_env;
    /* whether NCCL's own tuning (tuning.cc ncclTopoTuneModel, enqueue.cc
     * topoGetAlgoInfo) rates an enabled ring protocol faster for coll of
     * `bytes`, so that NCCL never runs this algorithm there although it
     * can (NULL: the model's costs alone choose, tuner.c) */
    bool (*nccl_declines)(const nvl_comm_t *comm, nvl_coll_t coll,
                          size_t bytes);
} nvl_coll_algo_t;

/* Each algorithm's row, nvl_coll_algo_<key> in src/coll/<file>.c, and its
 * one-line description nvl_coll_algo_doc_<key>, declared from the
 * algorithm table (NVL_ALGO_TABLE, include/nvlemu/topo.h). */
#define NVL_COLL_ALGO_EXTERN_(id, key, name, ll, ll128, simple)             \
    extern const nvl_coll_algo_t nvl_coll_algo_##key;                       \
    extern const char nvl_coll_algo_doc_##key[];
NVL_ALGO_TABLE(NVL_COLL_ALGO_EXTERN_)
#undef NVL_COLL_ALGO_EXTERN_

/* The algorithms' family rows (algos.c), indexed by nvl_algo_t. */
typedef struct {
    nvl_member_t id;              /* NCCL_ALGO's spelling, and the doc */
    const nvl_coll_algo_t *model; /* src/coll/<key>.c's row */
} nvl_coll_algo_row_t;
extern const nvl_coll_algo_row_t nvl_coll_algo_rows[NVL_ALGO_COUNT];

/* The model of algorithm a (a < NVL_ALGO_COUNT). */
static inline const nvl_coll_algo_t *nvl_coll_algo(nvl_algo_t a)
{
    return nvl_coll_algo_rows[a].model;
}

/* NCCL's slots per connection (device.h NCCL_STEPS): a channel's buffer
 * holds this many steps in flight. */
#define NVL_NCCL_STEPS 8

/* NCCL's most NVLS heads (device.h NCCL_MAX_NVLS_ARITY): the NVLS graph
 * has at most this many, and allgather/reduce-scatter run NVLS only on
 * groups no larger (src/coll/nvls.c). */
#define NVL_NVLS_MAX_ARITY 32

/* One protocol's row (src/coll/protos.c), indexed by nvl_proto_t: the
 * rows of nvl_proto_family. */
typedef struct {
    nvl_member_t id;         /* NCCL_PROTO's spelling, and the doc */
    double eff;              /* the share of a channel's rate carrying data */
    /* one step's payload, bytes (NCCL enqueue.cc calcCollChunking:
     * buffSize / NCCL_STEPS, of which the protocol's data share):
     * broadcast's and reduce's chunk (CHUNKSTEPS 1) */
    size_t chunk_bytes;
    double thread_threshold; /* bytes per thread before adding a channel */
    int threads;             /* a channel's threads (NCCL maxThreads) */
    /* a chunked protocol: on a ring's steps a channel reaches
     * [nccl] mid_efficiency of its rate at mid sizes (model.c) */
    bool knee;
    /* a flag in every line (LL, LL128): a receiver forwards a line as soon
     * as it lands, so a chain has no chunk to fill (ring.c) */
    bool line_flags;
    /* NCCL's ceiling on `channels` channels, bytes/s (NULL: none) */
    double (*max_bw)(const nvl_nccl_spec_t *nccl, double channels);
} nvl_coll_proto_t;
extern const nvl_coll_proto_t nvl_coll_protos[NVL_PROTO_COUNT];

/* One call recorded under deferred agreement (src/coll/defer.c). */
typedef struct nvl_defer_call {
    nvl_coll_call_t call;    /* as called (buffers NULL: timing mode) */
    int64_t signature;
    bool ok;
    int64_t a_ps, b_ps, entry_ps; /* max(x + a, b): the entry, settled */
    nvl_coll_info_t info;    /* this member's choice and duration; once
                                settled, the group's start and duration */
} nvl_defer_call_t;

/* collective.c, p2p.c, under deferred agreement: records a checked call (ok,
 * and when not the call's name and why) with this member's info (its
 * duration in time_ps), writes info_out (start_ps -1) and returns
 * NVL_OK; the agreement comes at nvl_comm_settle. */
nvl_status_t nvl_defer_record(const nvl_coll_call_t *call, bool ok,
                              const char *what, const char *why,
                              const nvl_coll_info_t *info,
                              nvl_coll_info_t *info_out);

/* ---- serving engines' allreduces (src/coll/allreduce.c) --------------- */

/* The order in which an implementation sums an element's n copies; every
 * order accumulates in float and rounds to the element type once, as the
 * kernels do (vLLM custom_all_reduce.cuh packed_reduce: upcast, add,
 * downcast). */
typedef enum {
    NVL_AR_ORDER_MEMBER, /* x_0 + x_1 + ... + x_{n-1}, on every member */
    NVL_AR_ORDER_OWNER   /* block b (nvl_ar_blocks): x_b + x_{b+1} + ...
                            + x_{b-1}, indices mod n */
} nvl_ar_order_t;

/* One kernel's row, nvl_ar_<impl> in src/coll/<impl>.c (declared where
 * the implementations' table points at it, allreduce.c, and where auto
 * picks it, ar_auto.c). */
typedef struct {
    bool needs_nvls;           /* multimem: NVLink SHARP switches only */
    nvl_ar_order_t order;      /* data mode's reduction order */
    /* modeled duration, seconds, of an allreduce of `bytes` (n > 1) */
    double (*predict_s)(const nvl_comm_t *comm, double bytes);
} nvl_ar_row_t;

/* What one kernel does, from its source, for nvl_ar_model_s (allreduce.c;
 * docs/collectives.md, "The cost"):
 *   open_fence   the opening barrier releases (a system-scope fence before
 *                its flags); the closing barrier always does
 *   stores_peers the data phase stores into peers, so the closing fence
 *                waits for those stores' acknowledgements
 *   max_blocks, threads  the launch: blocks of `threads`, 16 bytes a thread
 *                per iteration, as many blocks as the slice needs up to
 *                max_blocks
 *   slice_bytes  the bytes this GPU's threads walk (S, or its S/n block)
 *   serial_loads peer loads one iteration waits for one after another
 *                (1: all in flight at once)
 *   sm_bytes     NVLink bytes through the SMs per slice byte, in + out
 *   port_bytes   this GPU's busier port direction, per call
 *   switch_reduce the port bytes go through the switch's reduction (rate
 *                min(NCCL's port rate, [nvlink] nvls_bw)); otherwise SMs'
 *                loads and stores at [nvlink] peer_efficiency */
typedef struct {
    bool open_fence, stores_peers;
    int max_blocks, threads;
    double slice_bytes;
    int serial_loads;
    double sm_bytes, port_bytes;
    bool switch_reduce;
} nvl_ar_cost_t;
double nvl_ar_model_s(const nvl_comm_t *comm, const nvl_ar_cost_t *cost);
/* Peer loads an iteration of an n-rank load-and-reduce waits for in turn:
 * 1 where the kernel is compiled for n (torch's DISPATCH_WORLD_SIZES: 2, 4,
 * 8) and issues every load at once, n - 1 elsewhere (its generic loop
 * loads the peers one after another). */
int nvl_ar_serial_loads(int n);

/* The order data mode reduces in for a resolved implementation. */
nvl_ar_order_t nvl_ar_order(nvl_ar_impl_t impl);

/* TensorRT-LLM's AUTO strategy for an allreduce of `bytes` on comm
 * (src/coll/ar_auto.c): the kernel's row it runs, NULL for NCCL's. */
const nvl_ar_row_t *nvl_ar_auto_pick(const nvl_comm_t *comm, size_t bytes);

/* Member b's block of a two-shot allreduce of count elements of esz
 * bytes (vLLM cross_device_reduce_2stage: whole 16-byte packs, count / n
 * packs each, the last member also the rest): [*off, *off + *len). */
void nvl_ar_blocks(size_t count, size_t esz, int n, int b, size_t *off,
                   size_t *len);


/* ---- cost model pieces (src/coll/model.c) ------------------------------ */

/* The fraction of an NVLink's raw rate that carries payload: NCCL 2.28
 * reports maxBw 370.8 GB/s on 18 x 26.562 GB/s = 478.1 GB/s of raw NVLink-4
 * (tests/data/calibration/h200-nvl2/nccl_model_table.txt). */
#define NVL_NVLINK_DATA_EFF (370.8 / 478.116)

/* NCCL's latency model for one call: base + steps over NVLink and over the
 * network, in seconds, from the topology's [nccl] constants. */
double nvl_coll_model_lat_s(const nvl_comm_t *comm, nvl_algo_t algo,
                       nvl_proto_t proto, int intra_steps, int inter_steps);

/* The same for an algorithm whose steps walk the ring's edges (ring,
 * tree's chain): of the intra-domain steps, floor(steps x die_edges /
 * size) cross a die link and pay NCCL's NVLink step latency + the die
 * link's die_link_lat instead of + hop_lat (docs/collectives.md, "Die
 * pairs"). */
double nvl_coll_model_ring_lat_s(const nvl_comm_t *comm, nvl_algo_t algo,
                                 nvl_proto_t proto, int intra_steps,
                                 int inter_steps);

/* The latency of a ring's or tree's steps: an eager call's
 * (nvl_coll_model_ring_lat_s) or, when kernel, the kernel's alone in a
 * CUDA graph (nvl_coll_model_nccl_lat_s: NCCL's base and per-step
 * latencies, no kernel overhead or hop_lat; docs/collectives.md, "The
 * kernel and its harness"). */
double nvl_coll_model_steps_lat_s(const nvl_comm_t *comm, nvl_algo_t algo,
                                  nvl_proto_t proto, int intra_steps,
                                  int inter_steps, bool kernel);

/* NCCL's own latency of a call (tuning.cc ncclTopoTuneModel): baseLat +
 * intra_steps x hwLat[NVLINK] + inter_steps x (hwLat[NET] + the
 * network's one-way latency, NCCL's graph latencyInter), from the
 * topology's [nccl] constants; in the die view floor(steps x die_edges /
 * size) of the NVLink steps also cross a die link (die_link_lat).  No
 * kernel overhead or hop latency on top: NCCL's constants are measured
 * whole-call and per-step costs (docs/collectives.md, "The ring by NCCL's
 * own tuning"). */
double nvl_coll_model_nccl_lat_s(const nvl_comm_t *comm, nvl_algo_t algo,
                                 nvl_proto_t proto, int intra_steps,
                                 int inter_steps);

/* NCCL's own rating of a ring call of `bytes` (NCCL nBytes) with proto,
 * seconds (ring.c): what NCCL's tuner compares to pick the protocol. */
double nvl_coll_ring_rating_s(const nvl_comm_t *comm, nvl_coll_t coll,
                              size_t bytes, nvl_proto_t proto);

/* The raw per-direction rate of the slowest edge of a ring within one
 * NVLink domain: the slowest member's NVLink, or in the die view the die
 * link where every edge is one, else the slower of the two. */
double nvl_coll_model_intra_bw(const nvl_comm_t *comm);

/* The rate of a ring's or tree's path: nvl_coll_model_intra_bw within one
 * NVLink domain, the slower of it and the NIC across domains. */
double nvl_coll_model_path_bw(const nvl_comm_t *comm);

/* Bus bandwidth (bytes/s) that `channels` channels of a protocol reach over
 * a path of raw per-direction bandwidth path_bw, when each channel moves
 * wire_bytes / channels bytes of collective coll. */
double nvl_coll_model_bus_bw(const nvl_comm_t *comm, nvl_coll_t coll,
                        nvl_algo_t algo, nvl_proto_t proto, double path_bw,
                        double channels, double wire_bytes);

/* The most channels a call may use: [nccl] channels, or fewer under
 * NCCL_MAX_NCHANNELS. */
int nvl_coll_model_max_channels(const nvl_comm_t *comm);

/* A kernel's `channels` counted in shares of the path (1 / [nccl]
 * channels each): a channel is one SM's block, moving up to [nvlink]
 * sm_peer_bw while few run, until together they fill the path. */
double nvl_coll_model_kernel_channels(const nvl_comm_t *comm,
                                      double channels);

/* The NVLS allreduce pipeline of one NVLink domain of `members` GPUs on
 * `channels` NVLS channels, for s bytes: the chunk transfers, the fill
 * and the loop iterations' switch syncs, without the call's latency
 * (nvls.c; NVLSTree times each of its `domains` > 1 with it). */
double nvl_nvls_allreduce_pipe_s(const nvl_comm_t *comm, double s,
                                 double channels, double members, int domains);

/* Channels NCCL would use for nBytes (fewer for small messages), before
 * rounding down to whole channels: the bandwidth's channel count (model.c
 * says why); its integer part is the count NCCL reports. */
double nvl_coll_model_channels(const nvl_comm_t *comm, nvl_algo_t algo,
                               nvl_proto_t proto, size_t bytes);

/* nvl_coll_choose without reporting (NVL_ERR_INVALID when nothing fits). */
nvl_status_t nvl_coll_choose_quiet(const nvl_comm_t *comm, nvl_coll_t coll,
                                   size_t bytes, nvl_coll_info_t *info_out);

/* Point-to-point operations (src/coll/p2p.c): this rank's modeled time of
 * an alltoall or sendrecv call, and its data movement. */
int64_t nvl_p2p_predict_ps(const nvl_coll_call_t *call);
nvl_status_t nvl_p2p_run(const nvl_coll_call_t *call);

/* One-sided all-to-all (src/coll/onesided.c): member `member`'s time of
 * a group writing out_bytes to its peers and receiving in_bytes, all over
 * NVLink, in mode a2a (not NVL_A2A_NCCL). */
int64_t nvl_onesided_time_ps(const nvl_comm_t *comm, int member,
                             nvl_a2a_t a2a, double out_bytes, double in_bytes);

/* ---- agreeing on a call (src/coll/agree.c) ----------------------------- */

/* Groups of up to this many members agree on a call in one direct
 * exchange (every member sends every other one message), which also
 * carries the first part of the call's data; larger groups agree in one
 * MPI_Allreduce, N(N-1) messages being dearer than its log2 N rounds. */
#define NVL_DIRECT_MAX_MEMBERS 8

/* The most payload one member sends another within the agreement
 * exchange; every receive slot has this room, so that a member that
 * disagrees on the call cannot overflow it.  Larger groups: the most an
 * allreduce reduces within its agreement. */
#define NVL_AGREE_MAX_PAYLOAD ((size_t)64 << 10)

/* Each message of the exchange starts with a header of this size. */
#define NVL_AGREE_HEADER_BYTES 64

/* What this member sends member k within the agreement exchange, and what
 * it expects from k (bytes, at most NVL_AGREE_MAX_PAYLOAD each); the
 * exchange sets recv to where k's payload landed (the comm's agreement
 * buffer, valid until the next call; NULL for this member itself). */
typedef struct {
    const void *send;
    size_t send_bytes;
    size_t recv_bytes;
    const char *recv;
} nvl_agree_msg_t;

/* One member's side of the agreement step of a call. */
typedef struct {
    int64_t signature;       /* the call (collective.c); equal calls, equal values */
    bool ok;                 /* this member's arguments are right */
    const char *what, *why;  /* the call and what is wrong (only if !ok) */
    int64_t time_ps;         /* this member's modeled duration */
    uint64_t pairs;          /* summed over the members (p2p.c's check) */
    /* groups of up to NVL_DIRECT_MAX_MEMBERS: the data riding along,
     * indexed by member (NULL: none) */
    nvl_agree_msg_t *msgs;
    /* larger groups: an allreduce's whole buffer to reduce within the
     * agreement (NULL: none; at most nvl_agree_room bytes) */
    const void *reduce_send;
    size_t reduce_bytes;
    /* ... or, when gather is set, gathered instead: member k's
     * reduce_bytes land at k x reduce_bytes of the result (n x
     * reduce_bytes of room) */
    bool gather;
    nvl_dtype_t dtype;
    nvl_redop_t op;
    /* larger groups: the most the agreement could have carried of this
     * call (0 if none), a function of the call alone: the room of the next
     * agreements follows it */
    size_t need;
} nvl_agree_in_t;

/* The merged outcome, the same on every member. */
typedef struct {
    int64_t start_ps;        /* the latest entry clock */
    int64_t time_ps;         /* the largest modeled duration */
    uint64_t pairs;          /* the sum over the members */
    const void *reduced;     /* larger groups: reduce_send's reduction over
                                the members, or with gather every member's
                                (comm's buffer, valid until the next call);
                                NULL where nothing rode along */
} nvl_agree_out_t;

/* The agreement step of every call: the max over the members of the entry
 * clock, the call's signature and its negation, whether a member's
 * arguments were wrong (why says how) and the modeled duration, and the
 * sum of pairs.  Groups of up to NVL_DIRECT_MAX_MEMBERS exchange it
 * directly, with msgs[k] riding along; larger groups in one allreduce of
 * one element (a header and nvl_agree_room bytes), which reduces
 * reduce_send along the way when given.  On success fills out; on wrong
 * arguments the lowest failing member reports "what: why" and every member
 * returns NVL_ERR_INVALID; when the members' signatures differ every
 * member returns NVL_ERR_MISMATCH and the caller reports
 * (nvl_coll_report_mismatch).  A local failure within the exchange, peers
 * waiting, ends the job (nvl_runtime_abort). */
nvl_status_t nvl_coll_agree(nvl_comm_t *comm, const nvl_agree_in_t *in,
                            nvl_agree_out_t *agreed_out);

/* Larger groups: the payload room of the next agreement (bytes, the same
 * on every member); a data-mode allreduce of at most this many bytes is
 * reduced within it.  The room is the larger need of the last two agreed
 * calls: a loop of equal calls, or of two alternating sizes, rides along
 * from its second call on, while timing mode and large calls keep the
 * agreement a bare header. */
size_t nvl_agree_room(const nvl_comm_t *comm);

/* Frees the agreement's MPI objects (comm destruction). */
void nvl_agree_free(nvl_comm_t *comm);

/* agree.c, when the members' calls differ: every member calls this (collectively);
 * member 0 reports the first member whose call differs from its own, and
 * every member returns NVL_ERR_MISMATCH.  call->coll == NVL_COLL_COUNT
 * stands for nvl_group_end. */
nvl_status_t nvl_coll_report_mismatch(nvl_comm_t *comm,
                                      const nvl_coll_call_t *call);

/* The signature of a call (what nvl_agree_in_t.signature holds). */
int64_t nvl_coll_signature(const nvl_coll_call_t *call);

/* "allreduce(count=..., bf16, sum)" or "nvl_group_end (...)": a call as
 * reports name it, into buf (len bytes). */
void nvl_coll_describe(const nvl_coll_call_t *call, char *buf, size_t len);

/* Whether info's NCCL call has a kernel time of its own (tuner.c). */
bool nvl_coll_has_kernel(const nvl_comm_t *comm, const nvl_coll_info_t *info);

/* The kernel's own time of the NCCL call info describes (tuner.c): its
 * row's kernel_s on NCCL's channels at nvl_coll_model_kernel_channels'
 * rate; info->time_ps where it has none (nvl_coll_has_kernel). */
int64_t nvl_coll_kernel_ps(const nvl_comm_t *comm,
                           const nvl_coll_info_t *info);

/* The tuner's choice *info for a call made a CUDA graph node
 * (nvl_comm_set_graph): its time_ps becomes the graph's edge plus the
 * kernel's time (nvl_coll_kernel_ps, the one nccl-tests -G is timed by)
 * where the algorithm has one; unchanged elsewhere (graph.c). */
void nvl_coll_graph_time(const nvl_comm_t *comm, nvl_coll_info_t *info);

#endif
