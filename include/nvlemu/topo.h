/* nvlemu: the rack that is emulated, read from a topology file.
 *
 * A topology file is INI text (parsed by inih) whose sections describe one
 * GPU model, the NVLink fabric, the GPU's host link (NVLink-C2C) and host
 * memory, the scale-out network between NVLink domains, the shape of a
 * compute tray, NCCL's tuning constants, and per-GPU overrides for what-if
 * studies.  docs/topology-format.md lists every key; the one table behind
 * parsing, export and that document is in src/topo/keys.c.
 *
 * MPI rank r plays GPU r.  GPUs [d*domain_gpus, (d+1)*domain_gpus) form
 * NVLink domain d; GPUs of one domain talk over NVLink (through the NVSwitch
 * trays, or directly when there are none), GPUs of different domains over the
 * scale-out network.
 *
 * A loaded nvl_topo_t is read-only; every field is in base units named by its
 * suffix (bytes, bytes per second, picoseconds, FLOP per second, hertz). */
#ifndef NVLEMU_TOPO_H
#define NVLEMU_TOPO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "nvlemu/opts.h"
#include "nvlemu/status.h"

#define NVL_TOPO_MAX_GPUS 4096u
#define NVL_TOPO_NAME_MAX 64

/* NCCL's algorithms: ONE row each, in the order of NCCL's tuning table,
 *   X(ID, key, NCCL name, LL, LL128, Simple)
 * ID names nvl_algo_t's value (NVL_ALGO_<ID>) and the collective model's
 * row (src/coll/<key>.c's nvl_coll_algo_<key>); key is the lower-case
 * name in topology keys ([nccl] <key>.<proto>.base_lat ...); NCCL name is
 * NCCL_ALGO's spelling; each protocol column gives NCCL's default
 * latencies, LAT(base per call, per NVLink step, per network step), or
 * NO_LAT where NCCL does not run the algorithm with that protocol.
 * Defaults: NCCL src/graph/tuning.cc (baseLat, hwLat[NVLINK], hwLat[NET])
 * as NCCL 2.28 prints them for the measured 2 x H200 machine
 * (tests/data/calibration/h200-nvl2/nccl_model_table.txt); PAT:
 * tuning.cc's "8 + nRanks * 2.8" us.  Every list of algorithms derives
 * from this one: the enum below, nvl_algo_key, the [nccl] latency keys
 * (src/topo/keys.c), nvl_algo_name and NCCL_ALGO's accepted names
 * (src/coll/tuner.c) and the table of models (src/coll/algos.c). */
#define NVL_ALGO_TABLE(X)                                                   \
    X(TREE, tree, "Tree", LAT("6.8us", "0.6us", "5us"),                     \
      LAT("14us", "1.25us", "8.5us"), LAT("8.4us", "4us", "14us"))          \
    X(RING, ring, "Ring", LAT("6.6us", "0.6us", "2.7us"),                   \
      LAT("14us", "1.9us", "4us"), LAT("8.4us", "3.4us", "14us"))           \
    X(NVLS, nvls, "NVLS", NO_LAT, NO_LAT, LAT("0us", "25us", "18us"))       \
    X(NVLS_TREE, nvlstree, "NVLSTree", NO_LAT, NO_LAT,                      \
      LAT("0us", "25us", "14us"))                                           \
    X(PAT, pat, "PAT", NO_LAT, NO_LAT, LAT("8us", "2.8us", "14us"))

#define NVL_ALGO_ENUM_(id, key, name, ll, ll128, simple) NVL_ALGO_##id,
typedef enum {
    NVL_ALGO_TABLE(NVL_ALGO_ENUM_)
    NVL_ALGO_COUNT
} nvl_algo_t;
#undef NVL_ALGO_ENUM_

typedef enum {
    NVL_PROTO_LL,
    NVL_PROTO_LL128,
    NVL_PROTO_SIMPLE,
    NVL_PROTO_COUNT
} nvl_proto_t;

/* Lower-case names as used in topology keys ("ring", "ll128"). */
const char *nvl_algo_key(nvl_algo_t algo);
const char *nvl_proto_key(nvl_proto_t proto);

/* Which fabric carries traffic between two GPUs. */
typedef enum {
    NVL_FABRIC_LOCAL,    /* the same GPU */
    NVL_FABRIC_DIE,      /* the two dies of one package (die view) */
    NVL_FABRIC_NVLINK,   /* same NVLink domain */
    NVL_FABRIC_SCALEOUT, /* different NVLink domains, through NICs */
    NVL_FABRIC_COUNT
} nvl_fabric_t;

const char *nvl_fabric_name(nvl_fabric_t fabric);

typedef struct {
    uint64_t hbm_bytes;
    double hbm_bw_bytes_per_s;
    double bf16_flops_per_s; /* dense peak */
    double fp8_flops_per_s;
    double fp4_flops_per_s;
    uint32_t sm_count;
    double clock_hz;
    double exp_ops_per_s; /* SFU exp2 throughput of the whole GPU */
    int64_t kernel_overhead_ps; /* fixed cost of one kernel on the GPU */
    int64_t launch_overhead_ps; /* host cost of launching one kernel */
    int64_t kernel_floor_ps;    /* GPU time of an empty kernel in a graph */
    int64_t copy_overhead_ps;   /* fixed time of one copy-engine copy */
    uint32_t dies;              /* compute dies per package */
    double die_link_bw_bytes_per_s; /* die-to-die link, per direction; 0: none */
    int64_t die_link_lat_ps;        /* die-to-die link, one way */
    /* compute cost model constants (include/nvlemu/cost.h) */
    double matmul_efficiency;   /* large matmuls: fraction of peak */
    double fp8_matmul_efficiency; /* of the FP8 peak (0: matmul_efficiency) */
    double fp4_matmul_efficiency; /* of the FP4 peak (0: matmul_efficiency) */
    uint32_t matmul_k_pad;      /* per-tile fixed work, in k steps */
    uint32_t fp8_matmul_k_pad;  /* the same on FP8 tensor cores (0: matmul_k_pad) */
    double hbm_efficiency;      /* streaming reads: fraction of hbm_bw */
    uint32_t matmul_cols_per_sm; /* output columns per SM to stream at full rate */
    double matmul_width_exp;    /* how bandwidth falls with fewer columns */
    double attn_efficiency;     /* attention matmuls: fraction of bf16 peak */
    double attn_hbm_efficiency; /* attention KV streams: fraction of hbm_bw */
    int64_t attn_overhead_ps;   /* fixed GPU time of one attention kernel */
    double fa4_exp_fma_share;   /* FA4: share of exps done on FMA units */
    double sdpa_efficiency;     /* PyTorch SDPA attention: fraction of bf16 peak */
    int64_t mem_latency_ps;     /* a memory kernel's dependent load + store completion */
    int64_t norm_step_ps;       /* one step of a one-CTA-per-row norm over its row */
    double strided_efficiency;  /* non-vectorised element-wise: share of the HBM rate */
    double stream_efficiency;   /* contiguous element-wise: share of the HBM rate (0: hbm_efficiency) */
    double hot_l2_speedup;      /* a GEMM's weights from a hot L2 against HBM (1: unmeasured) */
    int64_t fp4_call_overhead_ps; /* a cuBLASLt block-scaled FP4 GEMM's fixed time beyond kernel_overhead */
} nvl_gpu_spec_t;

typedef struct {
    uint32_t links_per_gpu;
    double link_bw_bytes_per_s; /* per link, per direction */
    int64_t hop_lat_ps;         /* one traversal GPU -> switch -> GPU */
    /* serving engines' all-reduce kernels (src/coll/allreduce.c) */
    int64_t flag_lat_ps;        /* a flag's one-way trip (its CAS round trip
                                   is two; 0: hop_lat_ps) */
    int64_t load_lat_ps;        /* a peer load's round trip (0: 2 flag_lat) */
    int64_t fence_lat_ps;       /* a system-scope release fence */
    double peer_efficiency;     /* share of links x link_bw that SM loads and
                                   stores to peers carry, per direction */
    double sm_peer_bw_bytes_per_s; /* one SM's peer traffic, in + out */
    uint32_t switch_trays;      /* 0: GPUs are linked directly */
    uint32_t switch_chips_per_tray;
    uint32_t switch_trays_down; /* what-if: trays out of service */
    bool nvls;                  /* NVLink SHARP in-switch reduction */
    double nvls_bw_bytes_per_s; /* per GPU, per direction */
    uint32_t domain_gpus;       /* GPUs in one NVLink domain */
} nvl_nvlink_spec_t;

typedef struct {
    double bw_bytes_per_s; /* per direction; 0 when the GPU has no C2C */
    int64_t lat_ps;
    uint64_t line_bytes;   /* data per packet (a 128-byte L2 line) */
    uint64_t header_bytes; /* the packet's header flit (16 bytes) */
} nvl_c2c_spec_t;

typedef struct {
    uint64_t bytes; /* host memory reachable per GPU; 0 when not modeled */
    double bw_bytes_per_s;
} nvl_host_memory_spec_t;

/* The host CPU's speed at an inference engine's Python/PyTorch work, one
 * thread: the CPU time of one torch.nn.Linear forward call (BF16, hidden
 * 2048, 8192 tokens; TransformerEngine issue 2053's benchmark).  0: not
 * given (a serving engine's host time stays the figure it was measured
 * at). */
typedef struct {
    int64_t torch_op_ps;
} nvl_host_cpu_spec_t;

typedef struct {
    double nic_bw_bytes_per_s; /* per GPU, per direction; 0: no scale-out */
    int64_t lat_ps;
    double oversubscription; /* >= 1: tapering of the fabric above the NICs */
} nvl_scaleout_spec_t;

typedef struct {
    uint32_t gpus_per_tray;
    uint32_t gpus_per_superchip;
} nvl_node_spec_t;

/* NCCL's tuning model constants (NCCL src/graph/tuning.cc, baseLat and
 * hwLat): a fixed latency per call and one per step over NVLink or the
 * network, per algorithm and protocol. */
typedef struct {
    int64_t base_lat_ps[NVL_ALGO_COUNT][NVL_PROTO_COUNT];
    int64_t nvlink_lat_ps[NVL_ALGO_COUNT][NVL_PROTO_COUNT];
    int64_t net_lat_ps[NVL_ALGO_COUNT][NVL_PROTO_COUNT];
    uint32_t channels;        /* collective channels NCCL opens */
    double mid_efficiency;    /* LL128/Simple channel efficiency, mid sizes */
    uint64_t knee_bytes;      /* bytes per channel where efficiency is halfway to 1 */
    double gather_scatter_efficiency; /* allgather/reduce-scatter vs allreduce */
    uint32_t nvls_min_ranks;  /* NVLS only for groups at least this large */
    uint32_t nvls_channels;     /* NCCL's nvlsChannels (nvls.cc) */
    uint32_t nvls_tree_channels; /* the same across domains (0: as above) */
    int64_t nvls_chunk_lat_ps;  /* NVLS: one chunk's sync through the switch */
    double nvls_efficiency;     /* NCCL's nvlsEfficiency (tuning.cc): its NVLS rating */
    int64_t nvls_tuning_lat_ps; /* NCCL's NVLS latency in its rating (tuning.cc) */
    bool nvls_whole_chunks;     /* NCCL < 2.20: NVLS fills channel 0 in whole chunks */
    uint32_t compcap;           /* compute capability NCCL sees (90, 100; 0: none) */
    int64_t launch_overhead_ps; /* host cost of enqueueing one NCCL call */
    int64_t empty_call_ps;      /* host cost of a count-0 call (no kernel) */
    int64_t torch_call_ps; /* host cost of one torch.distributed call */
    int64_t graph_edge_ps; /* a CUDA graph's edge into an NCCL kernel node */
    int64_t stream_gap_ps; /* a back-to-back eager call over its graph kernel */
    double ll_max_bw_bytes_per_s;          /* LL ceiling, all channels */
    double ll128_max_bw_per_channel_bytes_per_s;
    double tree_max_bw_per_channel_bytes_per_s;
} nvl_nccl_spec_t;

/* Per-GPU what-if overrides; the defaults (1, 1, 0, 1, 1) change nothing. */
typedef struct {
    double clock_scale;   /* scales FLOP/s and exp throughput */
    double hbm_bw_scale;
    uint32_t links_down;  /* NVLink links of this GPU out of service */
    double link_bw_scale; /* scales this GPU's per-link bandwidth */
    double nic_bw_scale;
} nvl_gpu_override_t;

typedef struct {
    char name[NVL_TOPO_NAME_MAX];
    char description[160];
    uint32_t gpus;
    nvl_gpu_spec_t gpu;
    nvl_nvlink_spec_t nvlink;
    nvl_c2c_spec_t c2c;
    nvl_host_memory_spec_t host_memory;
    nvl_host_cpu_spec_t host;
    nvl_scaleout_spec_t scaleout;
    nvl_node_spec_t node;
    nvl_nccl_spec_t nccl;
    nvl_gpu_override_t *overrides; /* gpus entries, owned */
    /* false: entry g is GPU package g.  true (nvl_topo_split_dies): entry
     * g is die g % gpu.dies of package g / gpu.dies, and [gpu], the NVLink
     * ports, the NIC, C2C and host memory are a die's share. */
    bool die_view;
} nvl_topo_t;

/* Loads and validates a topology file.  On success *topo_out is a new
 * topology that the caller releases with nvl_topo_free().  On error reports
 * once, naming the file and line and what was expected, and returns
 * NVL_ERR_IO (cannot read) or NVL_ERR_INVALID. */
nvl_status_t nvl_topo_load(const char *path, nvl_topo_t **topo_out);

/* As nvl_topo_load, from text in memory; origin names it in reports. */
nvl_status_t nvl_topo_load_string(const char *text, const char *origin,
                                  nvl_topo_t **topo_out);

/* Applies one override "section.key=value" as a what-if on a loaded
 * topology ("nvlink.link_bw=100GB/s", "gpu[17].clock_scale=0.8",
 * "gpu.0-3.links_down=1", "switch_trays_down=1" for keys whose name is
 * unique), then re-validates.  Reports and returns NVL_ERR_INVALID on a bad
 * key or value; the topology is unchanged then. */
nvl_status_t nvl_topo_set(nvl_topo_t *topo, const char *assignment);

/* Applies the overrides of a what-if file, one section.key=value a line,
 * in order ('#' or ';' at the start or after a blank starts a comment;
 * blank lines are skipped).  Reports "FILE:LINE: assignment: what is
 * wrong" and returns NVL_ERR_IO / NVL_ERR_INVALID at the first bad line;
 * the lines before it stay applied. */
nvl_status_t nvl_topo_set_file(nvl_topo_t *topo, const char *path);

void nvl_topo_free(nvl_topo_t *topo);

/* Writes the topology as a complete, canonical topology file: every key,
 * in table order, values in units that read back bit for bit, overrides
 * for the GPUs that have any.  Loading the output gives an equal topology. */
nvl_status_t nvl_topo_export(const nvl_topo_t *topo, FILE *out);

/* True when two topologies describe the same model (every field). */
bool nvl_topo_equal(const nvl_topo_t *a, const nvl_topo_t *b);

/* A 64-bit FNV-1a hash of the canonical export: equal models, equal hash. */
uint64_t nvl_topo_hash(const nvl_topo_t *topo);

/* ---- ranks that play dies (src/topo/dies.c) ------------------------------ */

/* What each MPI rank plays: a whole GPU package, or one die of one. */
typedef enum { NVL_PLAYS_GPU, NVL_PLAYS_DIE } nvl_rank_plays_t;

/* "gpu", "die", a row each (family.h): --rank-plays's names and
 * `nvlemu --list rank-plays`. */
extern const nvl_family_t nvl_rank_plays_family;

/* The --rank-plays row of every command and bench that starts ranks
 * (`run`, `generate`, the *_perf benches), into an int field of `type`. */
#define NVL_TOPO_OPT_RANK_PLAYS(type, field)                                \
    {.name = "rank-plays", .kind = NVL_OPT_ENUM,                            \
     .offset = offsetof(type, field), .def = "gpu",                         \
     .family = &nvl_rank_plays_family,                                      \
     .doc = "what each rank plays: a whole GPU, or one die of a "           \
            "multi-die package (half its SMs, FLOP rates, HBM and NVLink "  \
            "ports; the package's dies joined by [gpu] die_link_bw; the "   \
            "rank count must fill whole packages)"}

/* Turns a loaded topology (after its --set what-ifs) into its die view:
 * gpus x dies entries, entry g die g % dies of package g / dies, each with
 * 1/dies of the package's SMs, FLOP and exp rates, HBM capacity and
 * bandwidth, NVLink links (whole links, so links must divide), NVLS rate,
 * NIC, C2C and host-memory share; NVLink domains, trays and superchips hold
 * dies x as many entries; a package's [gpu.N] override applies to both its
 * dies (links_down split as evenly as links).  The dies of one package are
 * joined by [gpu] die_link_bw / die_link_lat (docs/cost-model.md, "Die
 * pairs").  Reports "--rank-plays die: ..." and returns NVL_ERR_INVALID,
 * leaving topo unchanged, when gpu.dies is 1, die_link_bw is 0 or the
 * links do not split; on success replaces the override array. */
nvl_status_t nvl_topo_split_dies(nvl_topo_t *topo);

/* A die-view job of `ranks` ranks fills whole packages: ranks must be a
 * multiple of gpu.dies (each package's dies are played together).
 * Reports "--rank-plays die: N ranks ..." and returns NVL_ERR_INVALID
 * otherwise; NVL_OK for a package view. */
nvl_status_t nvl_topo_check_die_ranks(const nvl_topo_t *topo,
                                      uint32_t ranks);

/* The package of entry g: g / gpu.dies in the die view, else g. */
uint32_t nvl_topo_package_of(const nvl_topo_t *topo, uint32_t gpu);

/* ---- derived quantities ------------------------------------------------ */

uint32_t nvl_topo_domains(const nvl_topo_t *topo);
uint32_t nvl_topo_domain_of(const nvl_topo_t *topo, uint32_t gpu);
uint32_t nvl_topo_tray_of(const nvl_topo_t *topo, uint32_t gpu);
nvl_fabric_t nvl_topo_fabric(const nvl_topo_t *topo, uint32_t a, uint32_t b);

/* NVLink links of a GPU that are up (after links_down and switch trays
 * down). */
uint32_t nvl_topo_links_up(const nvl_topo_t *topo, uint32_t gpu);

/* Per-direction NVLink bandwidth of one GPU: links up x link bandwidth. */
double nvl_topo_nvlink_bw(const nvl_topo_t *topo, uint32_t gpu);

/* Per-direction scale-out bandwidth of one GPU (NIC, after its override). */
double nvl_topo_nic_bw(const nvl_topo_t *topo, uint32_t gpu);

/* Effective compute and memory of one GPU after overrides. */
double nvl_topo_gpu_flops(const nvl_topo_t *topo, uint32_t gpu,
                          double peak_flops_per_s);
double nvl_topo_hbm_bw(const nvl_topo_t *topo, uint32_t gpu);

/* Point-to-point bandwidth between two GPUs (the slower end's port) and the
 * one-way wire latency, from the fabric that joins them. */
double nvl_topo_p2p_bw(const nvl_topo_t *topo, uint32_t a, uint32_t b);
int64_t nvl_topo_p2p_lat_ps(const nvl_topo_t *topo, uint32_t a, uint32_t b);

/* Bisection bandwidth (per direction) among GPUs [0, ranks) over one
 * fabric: NVLink within each domain (the sum over domains), scale-out
 * across the split of the job into two halves.  0 when that fabric does
 * not carry traffic of the job. */
double nvl_topo_bisection_bw(const nvl_topo_t *topo, uint32_t ranks,
                             nvl_fabric_t fabric);

/* ---- descriptions for users ------------------------------------------- */

/* Writes what a user needs to reason about the system as a job of `ranks`
 * ranks (GPUs [0, ranks)): GPUs and nodes, per-GPU and bisection bandwidth
 * per fabric, latencies, which rank pairs use which fabric, NVLS, what-if
 * overrides.  `origin` names the file in the heading. */
void nvl_topo_describe(const nvl_topo_t *topo, uint32_t ranks,
                       const char *origin, FILE *out);

/* The same as a JSON document (jansson), values in base units (bytes,
 * bytes/s, ps, FLOP/s, op/s, Hz).  Reports and returns NVL_ERR_IO if it
 * cannot write. */
nvl_status_t nvl_topo_describe_json(const nvl_topo_t *topo, uint32_t ranks,
                                    const char *origin, FILE *out);

/* Writes the key reference (section, key, unit kind, default, meaning) as a
 * Markdown table: the source of docs/topology-format.md's key list. */
void nvl_topo_keys_markdown(FILE *out);

#endif
