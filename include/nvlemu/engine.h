/* nvlemu: the tensor-parallel forward pass of a Qwen model, in modeled time.
 *
 * Each rank of a TP communicator holds only its shard (include/nvlemu/
 * shard.h): q/k/v and gate/up column-parallel, o and down row-parallel with
 * an allreduce after each, embedding and lm_head vocab-parallel (logits
 * gathered with an allgather).  A batch of sequences runs together: their
 * tokens are the rows of every matmul; attention reads each sequence's own
 * key/value cache.
 *
 * Two modes, one path and one clock.  Data mode holds real weights (read
 * slice by slice from a checkpoint, or deterministic synthetic ones) and
 * computes in float32 (BF16/F16 weights are converted when read); timing
 * mode allocates no weights, no activations and no cache, and does no
 * arithmetic.  Both issue the same kernels and collectives: every kernel
 * advances the rank's virtual clock by the cost model (include/nvlemu/
 * cost.h), every collective by the collective model (include/nvlemu/
 * coll.h, timed as bf16 activations), so the same run gives the same
 * virtual times in either mode; except for a mixture of experts, whose
 * kernel times follow the tokens each expert receives: the real routing in
 * data mode, a seeded one in timing mode (src/engine/moe.c).
 *
 * A mixture of experts may instead be placed with expert parallelism
 * (opts.place, nvl_shard_place): the experts spread over groups of ranks,
 * each token sent to the ranks holding its experts and their outputs sent
 * back (dispatch and combine, one all-to-all each, through nvl_group_*);
 * attention stays tensor-parallel over all ranks (then each rank routes
 * its share of the rows: the attention's allreduce becomes a reduce-
 * scatter before the experts and an allgather after them) or becomes
 * data-parallel (each rank runs its own sequences with the whole
 * attention; no collective outside the experts).  The all-to-alls may be
 * timed as one-sided NVLink writes instead of NCCL's (opts.a2a_onesided),
 * and the row-parallel GEMMs pipelined with their allreduces on a second,
 * communication stream (opts.overlap): the same numbers either way. */
#ifndef NVLEMU_ENGINE_H
#define NVLEMU_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "nvlemu/coll.h"
#include "nvlemu/cost.h"
#include "nvlemu/model.h"
#include "nvlemu/shard.h"
#include "nvlemu/status.h"

typedef struct nvl_engine nvl_engine_t;

/* How a row-parallel GEMM and the collective after it run (docs/
 * cost-model.md, "Overlap"): one after the other, or async tensor
 * parallelism: the GEMM cut into chunks of its output columns, each
 * chunk's allreduce on a communication stream while the next chunk
 * computes (PyTorch's micro-pipeline TP, FLUX). */
typedef enum {
    NVL_OVERLAP_NONE,
    NVL_OVERLAP_ASYNC_TP,
    NVL_OVERLAP_COUNT
} nvl_overlap_t;

/* An expert-parallel layer's exchange (nvl_engine_opts_t.ep_comm). */
typedef enum {
    NVL_EP_COMM_AUTO,
    NVL_EP_COMM_ALLTOALL,
    NVL_EP_COMM_ALLGATHER,
    NVL_EP_COMM_COUNT
} nvl_ep_comm_t;

/* The software stack a step stands for, i.e. which kernels each layer
 * runs (src/engine/plan.c, docs/cost-model.md "Software stacks"):
 * torch: PyTorch with CUDA graphs, one F.* call per operation (RoPE by
 * torch.cat of rotated halves, separate residual adds, SDPA attention);
 * fused: a serving engine's kernel list (TensorRT-LLM: fused QKV bias +
 * RoPE + KV write, fused residual add + RMSNorm, fused SwiGLU,
 * FlashAttention); compiled: the torch layer compiled by torch.compile
 * (Inductor's Triton kernels around cuBLAS GEMMs and cuDNN SDPA, the
 * serving-like steps of tests/data/calibration/hgx-h*-x4).  A row each
 * of nvl_stack_family (src/engine/options.c), which also carries what
 * the cost model reads of a stack: its default attention kernel and its
 * GEMM libraries. */
typedef enum {
    NVL_STACK_TORCH,
    NVL_STACK_FUSED,
    NVL_STACK_COMPILED,
    NVL_STACK_COUNT
} nvl_stack_t;

/* The stacks as families: stack ("torch", "fused", "compiled") and
 * fusion, --fusion's older names ("none", "typical") of the first two
 * stacks, a row per nvl_stack_t it names. */
extern const nvl_family_t nvl_stack_family, nvl_fusion_family;
const char *nvl_stack_name(nvl_stack_t stack);
/* The attention kernel stack runs on topo's GPUs when none is asked for:
 * the torch stack calls SDPA; a serving engine runs FlashAttention
 * (nvl_attn_flash: 4 on GPUs with FP4 tensor cores, else 3). */
nvl_attn_impl_t nvl_stack_attn(const nvl_topo_t *topo, nvl_stack_t stack);
/* Writes what the cost model reads of stack into cost: the GEMM
 * libraries it calls per tensor-core type (stack_libs) and whose grouped
 * GEMMs it runs (torch_grouped: torch and compiled). */
void nvl_stack_cost(nvl_stack_t stack, nvl_cost_cfg_t *cost);

/* The families of the engine's options (family.h): overlap (a row per
 * nvl_overlap_t: "none", "async-tp"), a2a (opts.a2a_onesided: "nccl",
 * "onesided"), ep-comm (a row per nvl_ep_comm_t: "auto", "alltoall",
 * "allgather") and attn-parallel (opts.place.attn_dp: "tp", "dp"). */
extern const nvl_family_t nvl_overlap_family, nvl_engine_a2a_family,
    nvl_engine_ep_comm_family, nvl_attn_parallel_family;

/* "none", "async-tp" */
const char *nvl_overlap_name(nvl_overlap_t overlap);

/* The most pipeline stages (--pp). */
#define NVL_ENGINE_PP_MAX 256

typedef struct {
    nvl_mode_t mode;         /* NVL_MODE_DATA or NVL_MODE_TIMING */
    const char *weights_dir; /* data mode: checkpoint; NULL: synthetic */
    uint64_t seed;           /* synthetic weights */
    uint32_t layers;         /* run only the first N layers; 0: all */
    double route_skew;       /* timing mode, mixture of experts: Zipf
                                exponent of the seeded routing over the
                                experts (0: uniform) */
    nvl_placement_t place;   /* mixture of experts: expert parallelism and
                                data-parallel attention (default: ep 1,
                                attention tensor-parallel) */
    nvl_stack_t stack;       /* the kernels a step runs */
    nvl_cost_cfg_t cost;     /* topo and gpu are filled in from tp; its
                                stack_libs from .stack (nvl_stack_cost) */
    /* The weight type of each class of GEMM (a checkpoint's weight format
     * per class, docs/quantization.md "A format per GEMM class");
     * NVL_WDT_COUNT (the default): cost.weight_dtype for attention, MLP
     * and experts, bf16 for the router and lm_head
     * (nvl_engine_opts_gemm_dtype). */
    nvl_wdtype_t gemm_dtype[NVL_QCLASS_COUNT];
    /* The checkpoint layers whose class c stays bf16 although gemm_dtype[c]
     * is quantized (nvl_model_formats_t's bf16_layers; zero: none). */
    uint64_t gemm_bf16_layers[NVL_QCLASS_COUNT][NVL_FORMAT_LAYER_WORDS];
    /* The checkpoint layers whose class c takes another weight type than
     * gemm_dtype[c] (compressed-tensors' config groups by layer): that
     * type + 1 (zero: gemm_dtype[c]'s). */
    uint8_t gemm_layer_dtype[NVL_QCLASS_COUNT][NVL_FORMAT_LAYERS];
    /* The tensor-parallel allreduce: NCCL's (the default) or a serving
     * engine's kernel; nvl_engine_create sets it on its communicators
     * (nvl_comm_set_allreduce, which reports what the topology cannot
     * run). */
    nvl_ar_impl_t allreduce;
    /* Memory tiers (docs/cost-model.md, "Memory tiers"): the share of
     * every sequence's KV cache, and of each layer's weights, kept in the
     * host CPU's memory and read over NVLink-C2C every pass; 0 (the
     * default): none; NVL_HOST_AUTO: what does not fit in HBM. */
    double kv_host, weights_host;
    /* The residual add and RMSNorm after each attention and MLP allreduce
     * run inside the allreduce's kernel (TensorRT-LLM AllReduceFusionOp
     * RESIDUAL_RMS_NORM) whenever that allreduce is a serving engine's
     * kernel, not NCCL's (.allreduce); the math is unchanged */
    bool fuse_allreduce_norm;
    /* Tensor-parallel communication overlapped with the row-parallel
     * GEMMs (o_proj, down_proj) that produce it (docs/cost-model.md,
     * "Overlap"); default none. */
    nvl_overlap_t overlap;
    /* Expert parallelism's dispatch and combine: NCCL's send/recv groups
     * (false, the default) or one-sided NVLink writes (src/coll/
     * onesided.c): DeepEP's low-latency mode in decode steps, its
     * high-throughput mode in the prefill (SGLang's --deepep-mode auto). */
    bool a2a_onesided;
    /* How an expert-parallel layer under attention data-parallelism moves
     * its rows (docs/serve.md, "The DEP layer's exchange"): auto (the
     * default: allgather with --attn-parallel dp, else alltoall),
     * alltoall (dispatch and combine, .a2a_onesided says how), or
     * allgather (TensorRT-LLM's CUTLASS MoE without an all-to-all: every
     * rank's rows gathered at their quantised width, each rank's experts over all
     * of them, the bf16 partial outputs reduce-scattered back; needs
     * place.attn_dp). */
    nvl_ep_comm_t ep_comm;
    /* Pipeline parallelism (docs/pipeline.md): the job's ranks are pp
     * stages of TP ranks each, stage k on ranks k*TP .. k*TP + TP - 1;
     * stage k runs pp_layers[k] consecutive layers (all 0: the layers
     * split evenly, nvl_range_split), tensor-parallel inside the stage;
     * activations cross from stage to stage on the topology's
     * point-to-point path.  0 or 1: no pipeline. */
    uint32_t pp;
    uint32_t pp_layers[NVL_ENGINE_PP_MAX];
    /* Data mode with a quantized checkpoint: false (the default) quantizes
     * each quantized GEMM's input as the serving engines run the format
     * (nvl_act_quant_of, with the checkpoint's input scales); true keeps
     * the inputs float32 (weight-only).  Timing mode: the GEMMs' types
     * (nvl_cost_cfg_t.weight_only). */
    bool act_quant_none;
    /* Data mode: record, pass after pass, the largest |x| of every
     * layer's GEMM inputs and of the keys and values it stores, as
     * ModelOpt's max calibration does (nvl_engine_calib_amax); the
     * numerics are unchanged. */
    bool calibrate;
} nvl_engine_opts_t;

#define NVL_HOST_AUTO (-1.0)

/* Data mode from a checkpoint directory, bf16 weights and KV, FA4 on
 * GPUs with FP4 tensor cores (Blackwell) and FA3 otherwise, typical
 * fused stack, CUDA graphs, all layers; experts tensor-parallel (place.ep 1),
 * attention tensor-parallel. */
void nvl_engine_opts_default(nvl_engine_opts_t *opts_out,
                             const nvl_topo_t *topo);

/* The weight type GEMMs of class c read under opts (.gemm_dtype). */
nvl_wdtype_t nvl_engine_opts_gemm_dtype(const nvl_engine_opts_t *opts,
                                        nvl_quant_class_t c);
/* The same in checkpoint layer `layer` (bf16 where .gemm_bf16_layers says
 * so; layer < 0: the class's). */
nvl_wdtype_t nvl_engine_opts_layer_dtype(const nvl_engine_opts_t *opts,
                                         nvl_quant_class_t c, int64_t layer);

/* The rule between options that no single option checks: reports and
 * returns NVL_ERR_INVALID for fuse_allreduce_norm with NCCL's allreduce
 * (TensorRT-LLM runs its residual add + RMSNorm as a kernel of its own
 * after ncclAllReduce).  Not collective; nvl_engine_create does not repeat
 * it (callers check once, where the options are made). */
nvl_status_t nvl_engine_opts_check(const nvl_engine_opts_t *opts);

/* Collective over tp: builds this rank's engine (tp is the whole job:
 * the tensor-parallel group, or the expert-parallel world when
 * opts.place says so).  Data mode with a
 * weights_dir reads only this rank's slices of the checkpoint; with none it
 * generates synthetic weights that do not depend on the TP degree (value of
 * element (r, c) of a tensor = f(seed, tensor, r, c)), so every TP degree
 * computes the same logits.  Reports (naming the tensor or file) and
 * returns an error when a tensor is missing or mis-shaped, or when the TP
 * degree exceeds what the model can use (more ranks than intermediate rows,
 * rows of each expert, or vocabulary rows) or the placement does not fit
 * (nvl_shard_place); every rank fails.  Sets tp's allreduce
 * (opts.allreduce; rank 0 reports one the topology cannot run) and its
 * time dtype (bf16).
 * Free with nvl_engine_free. */
nvl_status_t nvl_engine_create(const nvl_model_config_t *cfg,
                               const nvl_engine_opts_t *opts, nvl_comm_t *tp,
                               nvl_engine_t **engine_out);

/* nvl_engine_create in data mode from dir with the default options. */
nvl_status_t nvl_engine_load(const nvl_model_config_t *cfg, const char *dir,
                             nvl_comm_t *tp, nvl_engine_t **engine_out);
void nvl_engine_free(nvl_engine_t *e);

/* Collective over tp: runs `batch` prompts of `len` tokens each (ids:
 * batch x len, row-major) as one prefill and writes the logits of each
 * prompt's last position (batch x vocab, the full vocabulary on every
 * rank).  Reports a token id outside the vocabulary. */
nvl_status_t nvl_engine_last_logits(nvl_engine_t *e, const int32_t *ids,
                                    int batch, int len, float *logits_out);

/* Collective over tp: the amax recorded since creation by an engine made
 * with opts.calibrate, per layer it runs (opts.layers) and calibration point
 * (amax_out[layer * NVL_CALIB_COUNT + point], include/nvlemu/quant.h), the
 * largest over the ranks (a row-parallel input and the KV heads are cut
 * over them).  Reports (on rank 0) a NaN or infinite activation, naming
 * the layer and the point, and an engine not made for it or with a
 * pipeline: NVL_ERR_INVALID on every rank. */
nvl_status_t nvl_engine_calib_amax(const nvl_engine_t *e, float *amax_out);

/* Collective over tp: greedy generation.  ids holds the batch's prompts one
 * after another (prompt b has lens[b] tokens; NULL in timing mode); one
 * prefill runs every prompt, then max_new - 1 decode steps run the batch
 * together, each sequence against its own KV cache.  Writes max_new new
 * tokens per prompt (new_tokens_out: batch x max_new; -1 in timing mode)
 * and, unless NULL, the prefill's last-position logits (batch x vocab).
 * Reports an id outside the vocabulary, a sequence longer than the
 * model's max_position_embeddings, and, with data-parallel attention, a
 * batch smaller than the ranks (each rank runs sequences
 * nvl_range_split(batch, ranks, rank); the outputs are gathered on every
 * rank). */
nvl_status_t nvl_engine_generate(nvl_engine_t *e, const int32_t *ids,
                                 const int *lens, int batch, int max_new,
                                 int32_t *new_tokens_out,
                                 float *last_logits_out);

/* ---- where the time went ---------------------------------------------- */

/* The parts of a rank's time. */
typedef enum {
    NVL_PART_GEMM,   /* matrix products (projections, lm_head) */
    NVL_PART_ATTN,   /* attention kernels */
    NVL_PART_COLL,   /* collectives, from the group's start to their end */
    NVL_PART_OTHER,  /* norms, RoPE, activation, residual, embedding, sampling */
    NVL_PART_LAUNCH, /* GPU idle, waiting for the host to launch */
    NVL_PART_WAIT,   /* GPU idle at a collective, waiting for slower ranks */
    NVL_PART_C2C,    /* GPU idle on NVLink-C2C: the step's token copies, and
                        waits for host-memory data the prefetch has not
                        brought yet (memory tiers) */
    NVL_PART_COUNT
} nvl_part_t;

/* "gemm", "attention", "collective", "other", "launch", "wait", "c2c" */
const char *nvl_part_name(nvl_part_t part);

/* One kernel or collective as this rank ran it. */
typedef struct {
    const char *name;     /* static: "qkv_proj", "attention", "allreduce", ... */
    const char *algo, *proto; /* collectives: NCCL's names; NULL for kernels */
    nvl_part_t part;
    int32_t track;        /* 0: the GPU's stream; 1: its C2C copy engine;
                             2: its communication stream (--overlap
                             async-tp); 1 and 2 overlap the stream, in no
                             part's time */
    int32_t layer;        /* -1 outside the transformer layers */
    int32_t pass;         /* 0: prefill, i: decode step i */
    int64_t start_ps, dur_ps;
    double flops, bytes;  /* bytes: HBM traffic, or the collective's size */
} nvl_op_event_t;

/* One forward pass (prefill or one decode step) on this rank. */
typedef struct {
    int64_t start_ps, end_ps;   /* on this rank's clock */
    int64_t part_ps[NVL_PART_COUNT];       /* the whole pass */
    int64_t layers_part_ps[NVL_PART_COUNT]; /* inside the transformer layers */
    uint64_t tokens;            /* new tokens the pass ran (matmul rows) */
    uint32_t kernels;           /* kernels it ran (an eager host's launches,
                                   collectives not counted) */
    uint64_t context;           /* longest sequence after the pass */
    double flops, hbm_bytes, coll_bytes;
    /* NVLink-C2C: bytes each way, and the host-to-device queue's busy
     * time (overlapped or not) */
    double c2c_h2d_bytes, c2c_d2h_bytes;
    int64_t c2c_h2d_busy_ps;
    double wall_s;              /* host time the emulation of the pass took */
    /* mixture of experts, summed over the pass's MoE layers */
    uint32_t moe_layers;
    double expert_pairs;        /* (token, expert) pairs this rank's
                                   experts computed */
    double expert_pairs_max;    /* per layer the most any rank computed, */
    double expert_pairs_mean;   /* and the mean over the ranks */
    /* expert parallelism: the all-to-alls (dispatch: tokens to their
       experts' ranks; combine: the outputs back) */
    double dispatch_bytes, combine_bytes; /* sent by this rank */
    int64_t dispatch_ps, combine_ps;
    int64_t combine_wait_ps;    /* idle before the combine, waiting for the
                                   busiest rank: the cost of imbalance */
    /* the all-to-alls as the other implementation would have timed them
     * (one-sided when the run uses NCCL and the reverse; the group's
     * largest, the same on every rank; 0 when it cannot run here) */
    int64_t dispatch_alt_ps, combine_alt_ps;
    bool a2a_alt_usable;
    /* --overlap async-tp: the communication stream's busy time (the
     * chunks' collectives) and the part of it hidden under the GEMM
     * chunks (the rest is in the collective part) */
    int64_t overlap_comm_ps, overlap_hidden_ps;
    /* pipeline parallelism: the activations' sends and receives between
     * stages (transfer time, in the collective part) and the bubble: the
     * time this GPU idled waiting on the pipeline (a receive's or send's
     * partner, the last stage's tokens), in the wait part */
    int64_t pp_xfer_ps, pp_bubble_ps;
    double pp_bytes;            /* sent and received */
} nvl_pass_stats_t;

/* One MoE layer's numbers on this rank, summed over the decode passes
 * (pass >= 1) run so far; fields as nvl_pass_stats_t's. */
typedef struct {
    double dispatch_ps, combine_ps, dispatch_bytes, combine_bytes;
    double expert_pairs_max, expert_pairs_mean, combine_wait_ps;
    double dispatch_alt_ps, combine_alt_ps;
} nvl_moe_layer_stats_t;

/* Per layer run (nvl_engine_layers entries, zeros for dense layers; owned
 * by the engine). */
const nvl_moe_layer_stats_t *nvl_engine_moe_layer_stats(const nvl_engine_t *e);

/* Keeps the op events of the first `passes` passes (0, the default: none;
 * -1: all) for a trace. */
void nvl_engine_record_events(nvl_engine_t *e, int32_t passes);
/* The events kept so far (owned by the engine; valid until the next call
 * into it). */
const nvl_op_event_t *nvl_engine_events(const nvl_engine_t *e, size_t *n_out);
/* The passes run so far, in order (owned by the engine). */
const nvl_pass_stats_t *nvl_engine_passes(const nvl_engine_t *e,
                                          size_t *n_out);
/* Forgets events, passes and the per-layer MoE numbers. */
void nvl_engine_reset_stats(nvl_engine_t *e);

/* Layers the engine runs (opts.layers or all; with a pipeline, its
 * stage's). */
uint32_t nvl_engine_layers(const nvl_engine_t *e);

/* This rank's place in the pipeline (one stage of the job's size without
 * one): stages, its stage, the stage's TP degree, its layers (global
 * indices first .. first + count - 1), and the microbatches the last
 * generation ran (its batch split into min(stages, batch) groups of
 * sequences; 1 without a pipeline): passes come in groups of that many,
 * one per microbatch, the first group the prefill. */
typedef struct {
    int stages, stage, tp;
    uint32_t layer_first, layer_count, layers_total;
    int microbatches;
} nvl_engine_pipe_t;
void nvl_engine_pipeline(const nvl_engine_t *e, nvl_engine_pipe_t *out);

/* This rank's shard and placement. */
const nvl_shard_t *nvl_engine_shard(const nvl_engine_t *e);

/* Where a run's bytes live on each GPU (the largest shard's, the same on
 * every rank): nvl_engine_generate plans it before the prefill and fails
 * every rank, with one report, when it does not fit. */
typedef struct {
    bool planned;             /* a generation planned it */
    bool fits;
    bool tiers;               /* the topology has NVLink-C2C and host memory */
    double weights_bytes;     /* the whole shard, both tiers */
    double layer_weights_bytes; /* of which the layers' (what may stream) */
    double kv_bytes;          /* the whole batch's KV cache, both tiers */
    double act_bytes;         /* activations of the largest pass (chunked) */
    double reserve_bytes;     /* CUDA context, workspaces, graphs */
    double staging_bytes;     /* HBM buffers the C2C prefetch lands in */
    double kv_host_share, weights_host_share; /* in host memory, 0..1 */
    double window_host_share; /* of the sliding-window layers' KV: the
                                 KV's share, 0 serving (windows in HBM) */
    double hbm_need_bytes, host_need_bytes;
    double hbm_bytes, host_bytes; /* capacities per GPU */
} nvl_mem_plan_t;

/* The plan of the last nvl_engine_generate (planned is false before). */
const nvl_mem_plan_t *nvl_engine_memory(const nvl_engine_t *e);

/* Bytes this rank's GPU would hold: its weight shard, each GEMM class's
 * matrices in its weight type (nvl_engine_opts_gemm_dtype), and its KV
 * cache for a batch of `seqs` sequences of `positions` each in the KV
 * dtype (data-parallel attention: for its share of the batch):
 * nvl_attn_kv_pos_bytes of its shard's geometry (nvl_engine_shard(e)->
 * attn) x seqs x, per layer run, positions, or for a sliding-window
 * layer at most its window (vLLM's SlidingWindowSpec and TensorRT-LLM's
 * per-layer max_attention_window keep only the window's blocks). */
double nvl_engine_weight_bytes(const nvl_engine_t *e);
double nvl_engine_kv_bytes(const nvl_engine_t *e, uint64_t seqs,
                           uint64_t positions);
/* The positions one sequence with `positions` cached holds in this
 * rank's sliding-window layers, each at most its window (UINT64_MAX: the
 * windows' sum), and in *full_out how many of its layers are of full
 * attention (each holds every position): the one walk of the windows
 * that the KV bytes, serving's room and the host tier's copies share. */
double nvl_engine_kv_window_positions(const nvl_engine_t *e,
                                      uint64_t positions, uint32_t *full_out);

/* ---- serving (nvlemu serve; include/nvlemu/serve.h) --------------------- */

/* The KV cache's room on each GPU of a serving replica. */
typedef struct {
    double kv_position_bytes; /* one position's KV on the largest shard,
                                 every layer of full attention (the
                                 sliding-window layers' windows are set
                                 aside per sequence), both tiers */
    double positions;         /* the positions that fit */
    double kv_host_share;     /* of each position's KV, in host memory */
    double host_free_bytes;   /* host memory left (swap, evicted prefixes;
                                 0 without a host tier) */
    double window_bytes;      /* HBM set aside for the running sequences'
                                 sliding windows (0 without such layers) */
} nvl_engine_kv_room_t;

/* How a serving engine sizes its KV cache: a fraction of the GPU's whole
 * memory less the weights and activations (vLLM's
 * gpu_memory_utilization), or a fraction of what the weights and
 * activations leave free (TensorRT-LLM's free_gpu_memory_fraction).
 * The activations are those of the engine's memory profile: with
 * sampler_logit_bytes > 0, the larger of the forward pass's working set
 * and a sampler pass over min(max_seqs, max_rows) rows of the whole
 * vocabulary at that many bytes per logit (vLLM's profile_run: the forward, then a
 * dummy sampler run that sorts every logit, after the forward's tensors
 * are freed); 0: the forward's working set plus the float32 logits.
 * moe_runner: a mixture of experts' layers also hold, at the profile's
 * whole step (not chunked), what TensorRT-LLM's CUTLASS MoE runner
 * allocates for a call (nvl_engine_moe_runner_bytes).  outside_bytes:
 * HBM the engine holds on each GPU beyond the weights and the profile's
 * activations (its CUDA context, libraries' modules and workspaces), taken
 * before the fraction like them. */
typedef struct {
    double fraction;   /* (0, 1] */
    bool of_free;      /* of the free memory, not of the whole */
    double sampler_logit_bytes; /* >= 0 */
    bool moe_runner;
    double outside_bytes; /* >= 0 */
} nvl_engine_kv_rule_t;

/* Collective over the engine's group (with a pipeline, every stage: the
 * room is what the fullest stage holds, the same on every rank): the
 * room for the KV cache once the
 * weights (less --weights-host's share) and the activations of a step of
 * max_rows tokens over max_seqs sequences are in HBM, sized by rule, with
 * the KV's host share (--kv-host; auto: the share that fills HBM and the
 * host memory) in the host's memory (docs/serve.md, "Memory and the
 * prefix cache").  Plans the engine's memory for the steps to come.  Reports and fails on every rank
 * when nothing is left for the KV cache or when a host tier is asked of a
 * topology without one.  Under data-parallel attention the room is each
 * rank's own: every KV head, its share of the steps' rows. */
nvl_status_t nvl_engine_serve_memory(nvl_engine_t *e, uint64_t max_rows,
                                     uint64_t max_seqs,
                                     const nvl_engine_kv_rule_t *rule,
                                     nvl_engine_kv_room_t *room_out);

/* Data-parallel attention: the rows every rank of the replica (the
 * engine's group, `ranks` members) runs in the next nvl_engine_serve_step,
 * rows[r] for rank r, in rank order: rank r's are rows sum_{q<r} rows[q]..
 * of the replica's step, so each rank's rows draw their own seeded expert
 * routing, and timing mode routes every rank's without an exchange.  The
 * step after it starts from row 0 again; `ranks` other than the group's
 * size: only this rank's first row is set (the book is exchanged). */
void nvl_engine_serve_rows(nvl_engine_t *e, int ranks, const uint64_t *rows);

/* Collective over the engine's group, timing mode: one continuous-batching
 * step from start_ps (the clock waits until then): sequence i runs
 * new_tokens[i] tokens after past[i] cached positions, exactly as a pass
 * of nvl_engine_generate (so a step of a fixed batch takes a run's time),
 * after d2h_bytes are copied out of HBM (preempted KV swapped out,
 * prefix-cache entries evicted) and h2d_bytes into it (swapped KV and
 * cached prefixes brought back) over NVLink-C2C.  The
 * step's end is the latest over the group (one MPI_Allreduce), the same
 * on every rank; *dur_ps_out = end - start_ps, and *free_ps_out the same.
 * With a pipeline (opts.pp) each stage's ranks end at their stage's
 * latest end, the clocks of different stages apart (a stage is free for
 * the next step when its part of this one is done); *free_ps_out is
 * stage 0's end - start_ps (when the next step may enter the pipeline),
 * *dur_ps_out the last stage's (when the step's tokens are sampled); an
 * error on any stage fails every rank of the job.  pass_out (NULL: not
 * wanted) receives this rank's statistics of the step; the engine keeps
 * no record of it (constant memory however many steps). */
nvl_status_t nvl_engine_serve_step(nvl_engine_t *e, int n,
                                   const uint64_t *past,
                                   const uint64_t *new_tokens,
                                   double h2d_bytes, double d2h_bytes,
                                   int64_t start_ps, int64_t *dur_ps_out,
                                   int64_t *free_ps_out,
                                   nvl_pass_stats_t *pass_out);

/* One projection of a layer: its name as checkpoints call it and its
 * weight's shape, n outputs x k inputs. */
typedef struct {
    const char *name; /* "q_proj" */
    nvl_quant_class_t cls;
    uint64_t n, k;
} nvl_engine_gemm_t;

#define NVL_ENGINE_LAYER_GEMMS_MAX 8

/* The projections of one of cfg's layers on a shard holding q_heads
 * query heads, kv_heads key/value heads and `rows` MLP rows (moe: rows
 * of each expert), as the engine's plan runs them: attention's
 * projections, then the dense MLP's, or (moe) the router's and one
 * expert's (gpt-oss: gate and up fused), each with its GEMM class, into
 * out (at most NVL_ENGINE_LAYER_GEMMS_MAX).  Returns their count.  Pure;
 * no MPI. */
int nvl_engine_layer_gemms(const nvl_model_config_t *cfg, bool moe,
                           uint64_t q_heads, uint64_t kv_heads,
                           uint64_t rows,
                           nvl_engine_gemm_t out[NVL_ENGINE_LAYER_GEMMS_MAX]);

#endif
