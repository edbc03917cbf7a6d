/* The engine's private state and the interfaces between its rooms.
 *
 * The rooms, each one file of src/engine/, and who may call whom (a file
 * calls only files below it; nothing calls upward, so there is no cycle):
 *
 *   step.c       one continuous-batching step of nvlemu serve (calls
 *                pass.c)
 *   generate.c   checks prompts, runs the prefill and the decode steps,
 *                samples, gathers outputs (data-parallel attention)
 *   pass.c       one forward pass: embedding, the layers, final norm,
 *                lm_head, the logits' allgather
 *   pipe.c       pipeline parallelism: the activations sent from stage to
 *                stage, each microbatch's logits handed from the last
 *                stage to every rank
 *   attention.c  a layer's attention half (and, before expert parallelism,
 *                the reduce-scatter / allgather around the experts)
 *   attn_gqa.c   grouped-query attention's tensors and data-mode maths
 *                (an attention variant: layer_tensors.h; attention.c
 *                reaches it through the variant's row)
 *   mlp.c        a layer's MLP half: dense, or moe.c's experts
 *   moe_ep.c     expert parallelism: the dispatch / combine all-to-alls
 *                around the experts, or moe_agrs.c's allgather and
 *                reduce-scatter (moe_agrs.h; calls moe.c, moe_route.c)
 *   moe_book.c   an expert-parallel layer's numbers: its rows' counts over
 *                the expert groups, timing mode's book of a pass (moe_ep.h)
 *   moe.c        the experts' maths and kernels (--stack torch: moe_torch.c)
 *   moe_route.c  the routing of a layer's rows (real or seeded)
 *   ---------------------------------------------------------------------
 *   plan.c       the stack table: which kernels a step issues under
 *                --stack torch | fused, and the allreduce whose epilogue
 *                runs the next add + RMSNorm (--fuse-allreduce-norm)
 *   overlap.c    a row-parallel GEMM and its allreduce, one after the
 *                other or pipelined in chunks (--overlap async-tp)
 *   issue.c      kernels and collectives: their modeled time advances the
 *                clock, and is accounted to the pass
 *   actq.c       quantized numerics (data mode): a quantized GEMM's
 *                input as the format's activation quantization makes it,
 *                the FP8 KV cache's values
 *   f32.c        float32 maths (data mode)
 *   kv.c         KV caches and a pass's activations (data mode)
 *   record.c     per-pass statistics and events
 *   memory.c     where the bytes live (HBM, host memory), whether they fit
 *   create.c     options, creation, teardown, memory sizes, whether a
 *                layer's experts are expert-parallel
 *   load.c       weights from a checkpoint or synthetic (create.c calls it),
 *                a layer's by the rows of its tables
 *   layer_tensors.c  the tensors every layer shares, the model's widths,
 *                the attention variants (load.c, actq.c read them)
 *   stages.c     pipeline parallelism's set-up: the layers of each stage,
 *                the stage's tensor-parallel group and its links to the
 *                neighbouring stages (create.c calls it)
 *
 * Four rooms advance the clock (docs/ARCHITECTURE.md lists them, and
 * tests/arch/check-architecture.py holds the list): issue.c (through the
 * stream of src/cost/ and the collectives of src/coll/), overlap.c, whose
 * communication stream has a clock of its own that the rank's waits for,
 * step.c, which waits for a serving step's agreed end, and pipe.c, whose
 * first stage waits for the last stage's tokens; generate.c calls MPI
 * directly only to gather outputs and capture errors, pipe.c to hand the
 * last stage's logits and clock to every rank. */
#ifndef NVLEMU_ENGINE_IMPL_H
#define NVLEMU_ENGINE_IMPL_H

#include "nvlemu/engine.h"
#include "nvlemu/quant.h"
#include "nvlemu/shard.h"
#include "nvlemu/weights.h"
#include "tape.h"

/* The most tensors an attention variant's layer has (its table's rows:
 * layer_tensors.h). */
#define NVL_ATTN_TENSORS_MAX 16

/* A layer's weights on this rank (data mode), each as load.c read it:
 * the slice of the tensor its table row gives (layer_tensors.h), NULL
 * where the layer has none. */
typedef struct {
    float *in_norm, *post_norm;       /* hidden */
    float *wg, *wu;                   /* [inter shard, hidden] */
    float *wd;                        /* [hidden, inter shard] */
    /* mixture-of-experts layers (the dense wg, wu, wd stay NULL) */
    float *router, *router_bias;      /* [experts, hidden], [experts] */
    float *eg, *eu;                   /* [held experts][moe inter shard, hidden] */
    float *ed;                        /* [held experts][hidden, moe inter shard] */
    float *egb, *eub, *edb;           /* gpt-oss's biases (load.c) */
    /* the attention's, by the rows of its variant's table (attn_gqa.c) */
    float *attn[NVL_ATTN_TENSORS_MAX];
} nvl_layer_weights_t;

/* The inputs of a layer's quantized GEMMs (a fused projection reads one
 * input: vLLM's merged QKV and gate_up layers take the largest of their
 * parts' input scales); from QKV on, in the order of the calibration
 * points (NVL_CALIB_QKV ..). */
typedef enum {
    NVL_GEMM_IN_NONE, /* a tensor no quantized GEMM reads */
    NVL_GEMM_IN_QKV,
    NVL_GEMM_IN_O,
    NVL_GEMM_IN_GATE_UP,
    NVL_GEMM_IN_DOWN,
    NVL_GEMM_IN_COUNT
} nvl_gemm_in_t;

struct nvl_engine {
    nvl_model_config_t cfg;
    nvl_engine_opts_t opts;
    nvl_shard_t shard;
    nvl_comm_t *job;      /* the whole job (the caller's) */
    nvl_comm_t *tp;       /* this pipeline stage's ranks: the job without
                             a pipeline (else owned) */
    nvl_comm_t *dense;    /* attention, embedding, lm_head, dense MLPs: tp,
                             or this rank alone (data-parallel attention;
                             owned) */
    uint32_t layers;      /* layers run (this stage's) */
    uint32_t layer0;      /* the stage's first layer (global index) */
    uint32_t layers_total; /* layers run by the whole pipeline */
    /* pipe.c: stages, this rank's, the two-member communicators to the
     * previous and next stage's rank of the same TP index (owned; NULL at
     * the ends), the microbatches of the generation, and the clock at
     * which the last stage's tokens of the next pass's microbatch are
     * back (stage 0 waits for them) */
    int stages, stage;
    nvl_comm_t *link_prev, *link_next;
    int microbatches;
    int64_t pp_ready_ps;
    uint64_t row0;        /* the pass's first row in the whole batch's
                             (seeds timing mode's routing) */
    bool data;            /* data mode: weights and arithmetic */
    /* data mode only */
    float *embed;   /* [vocab shard, hidden] */
    float *lm_head; /* [vocab shard, hidden] (the embedding when tied) */
    float *norm;    /* [hidden] */
    nvl_layer_weights_t *lw;
    /* quantized numerics (actq.c): input quantization per GEMM class and
     * layer (NVL_ACT_COUNT: the class's), per layer the GEMMs' input and
     * k/v scales (1.0: none), a row buffer; kv_fp8: E4M3 keys and values */
    nvl_act_quant_t actq[NVL_QCLASS_COUNT];
    nvl_act_quant_t actq_layer[NVL_QCLASS_COUNT][NVL_FORMAT_LAYERS];
    float *in_scale;  /* [layers][NVL_GEMM_IN_COUNT] */
    float *kv_scale;  /* [layers][2] */
    float *actq_buf;
    size_t actq_cap;
    bool kv_fp8;
    float *calib_amax; /* opts.calibrate: [layers][NVL_CALIB_COUNT] */
    /* time */
    nvl_stream_t stream;
    int32_t pass;         /* pass being run */
    /* norm_fused: the last allreduce ran the next add + RMSNorm as its
     * epilogue, that step issues nothing; one_token_pass: one row each */
    bool norm_fused, one_token_pass;
    /* the clock passed NVL_PS_MAX_CLOCK (issue.c): where, first */
    bool time_overflow;
    const char *overflow_name;
    int32_t overflow_layer, overflow_pass;
    nvl_pass_stats_t cur; /* its statistics */
    /* record.c */
    int32_t keep_passes;  /* record events of passes below this (-1: all) */
    double pass_wall_start;
    nvl_op_event_t *events;
    size_t n_events, cap_events;
    nvl_pass_stats_t *passes;
    size_t n_passes, cap_passes;
    nvl_moe_layer_stats_t *moe_decode; /* [layers] */
    /* moe.c, timing mode, experts tensor-parallel: the seeded routing's
     * token counts of every layer of pass moe_counts_pass over
     * moe_counts_rows rows ([layers][experts]; NULL until a pass needs
     * them), drawn once per pass */
    uint64_t *moe_counts;
    int32_t moe_counts_pass;
    uint64_t moe_counts_rows;
    /* moe_book.c, timing mode: the pass's expert-parallel book (each EP
     * layer's rows and pairs to and from each rank and tokens per expert,
     * agreed once a pass; the other all-to-all's times) */
    uint64_t *ep_book;
    int64_t *ep_book_alt;
    int32_t ep_book_pass;
    uint64_t ep_book_rows, ep_book_row0;
    /* whether the members route the book alone: each member's wish (1:
     * alone) and the group's largest, a non-blocking allreduce that a
     * member routing alone does not wait for (completed before the next
     * one, or when the engine is freed: nvl_engine_ep_done) */
    int ep_alone[2];
    MPI_Request ep_alone_req;
    bool ep_alone_pending;
    /* moe_route.c, timing mode: the routing table (rows of top_k experts
     * by popularity rank; NULL until a pass routes) */
    uint32_t *route_table;
    nvl_mem_plan_t mem;   /* memory.c: the last generation's plan */
    /* issue.c: the C2C copy engine, one queue per direction: when each is
     * free, and when the layer prefetched last has landed */
    int64_t c2c_h2d_free_ps, c2c_d2h_free_ps, c2c_ready_ps;
    /* overlap.c (--overlap async-tp, dense group of more than one): the
     * communication stream, a communicator over the dense group's members
     * with its own clock (owned) */
    nvl_comm_t *ovl;
    nvl_vclock_t ovl_clock;
    /* step.c: KV copies over NVLink-C2C the next pass makes before its
     * kernels (swap-in, prefix reloads) and after them (swap-out,
     * evictions) */
    double serve_h2d_bytes, serve_d2h_bytes;
    /* data-parallel attention: the next pass's rows of every member of
     * e->tp, [2 x members]: member r runs ep_rows[r] rows from row
     * ep_rows[members + r] of the step's (generate.c, step.c; owned,
     * dropped when the pass ends); NULL: not handed in */
    uint64_t *ep_rows;
    /* issue.c, deferred agreement (timing mode): the pass's kernels and
     * collectives recorded, issued when the group has agreed on the
     * collectives (nvl_engine_settle); meanwhile the clock stands still
     * and two shadow clocks on copies of the stream give each
     * collective's entry as max(x + a, b) of the previous one's end x */
    bool defer;
    struct nvl_tape_op *tape;     /* owned */
    size_t n_tape, cap_tape;
    nvl_stream_t shadow_stream[2];
    nvl_vclock_t shadow[2];       /* [0]: x + a, [1]: b */
    bool shadow_first;            /* no collective recorded yet: [0] holds
                                     the entry itself */
    bool shadow_exact;            /* the shadows stayed in range */
    int64_t settled_end_ps;       /* the last recorded pass's end, the
                                     latest over the group (-1: unknown) */
    nvl_step_rec_t rec;           /* pipe_step.h */
};


/* One sequence's cache on this rank: per layer, the keys and values of
 * this rank's kv heads at every position so far (data mode), and its
 * length (both modes). */
typedef struct {
    float **k, **v; /* [layer][cap x kv heads x head_dim] */
    uint64_t len, cap;
} nvl_kv_cache_t;

/* Activations of one pass (data mode). */
typedef struct {
    float *x, *h;   /* [M, hidden] */
    float *q, *a;   /* [M, q heads x head_dim] */
    float *k, *v;   /* [M, kv heads x head_dim] */
    float *g, *u;   /* [M, intermediate shard] */
    float *sc;      /* [longest context] */
    float *last;    /* [n, vocab shard] */
} nvl_acts_t;

/* The rank's virtual clock (the job communicator's). */
static inline nvl_vclock_t *nvl_engine_clock(nvl_engine_t *e)
{
    return nvl_comm_clock(e->tp);
}

/* create.c: layer li's bytes on this rank: all f32, or per GEMM class. */
double nvl_engine_layer_bytes(const nvl_engine_t *e, uint32_t li, bool f32);

/* memory.c: collective over tp: plans e->mem for `seqs` sequences of up
 * to `positions` positions whose largest pass runs `rows` rows; reports
 * (once, when every rank calls it under capture) and fails when it does
 * not fit, or when a host tier is asked of a topology without one. */
nvl_status_t nvl_engine_plan_memory(nvl_engine_t *e, uint64_t seqs,
                                    uint64_t positions, uint64_t rows);

/* load.c: fills the weights of a data-mode engine (e->shard set). */
nvl_status_t nvl_engine_load_weights(nvl_engine_t *e);
void nvl_engine_free_weights(nvl_engine_t *e);

/* issue.c: issuing kernels (their modeled time advances the clock; a
 * kernel without work is skipped). */
void nvl_engine_kernel(nvl_engine_t *e, const char *name, nvl_part_t part,
                       int32_t layer, nvl_kernel_cost_t c);
/* Class c's GEMM cost configuration (type, weight-only), or in `layer`. */
nvl_cost_cfg_t nvl_engine_gemm_cost(const nvl_engine_t *e, nvl_quant_class_t c);
nvl_cost_cfg_t nvl_engine_layer_gemm_cost(const nvl_engine_t *e,
                                          nvl_quant_class_t c, int32_t layer);
void nvl_engine_matmul(nvl_engine_t *e, const char *name, nvl_quant_class_t c,
                       int32_t layer, uint64_t m, uint64_t n, uint64_t k);
/* A memory-bound kernel moving `elems` bf16 elements through HBM. */
void nvl_engine_elementwise(nvl_engine_t *e, const char *name, int32_t layer,
                            double elems);

/* issue.c: a collective's launch (returns this rank's clock on
 * entering the collective) and its accounting (the wait for the group,
 * then its time). */
int64_t nvl_engine_coll_begin(nvl_engine_t *e, int32_t layer);
void nvl_engine_coll_done(nvl_engine_t *e, const char *name, int32_t layer,
                          int64_t entry_ps, const nvl_coll_info_t *info);
/* issue.c: nvl_engine_coll_done of an expert-parallel exchange, whose
 * agreed time nvl_engine_account_ep (record.c) then counts (at once, or
 * when the deferred pass is settled). */
void nvl_engine_coll_done_ep(nvl_engine_t *e, const char *name,
                             int32_t layer, int64_t entry_ps,
                             const nvl_coll_info_t *info, nvl_ep_xchg_t x);
/* overlap.c: a row-parallel GEMM y[m, n] = x[m, k] W[n, k]^T whose
 * partial sums (buf, m x n floats, already computed in data mode; NULL in
 * timing mode) the dense group's allreduce completes: the GEMM then the
 * allreduce, or under --overlap async-tp the two pipelined in chunks of
 * output columns (docs/cost-model.md, "Overlap"). */
nvl_status_t nvl_engine_rowpar(nvl_engine_t *e, const char *name,
                               nvl_quant_class_t c, int32_t layer, uint64_t m,
                               uint64_t n, uint64_t k, float *buf);

/* issue.c: the row-parallel sum of n floats across the dense group (none
 * at one rank, as serving engines skip it); buf is NULL in timing mode.
 * _info also returns the collective's info (impl NVL_AR_NCCL and time 0
 * when there was none). */
nvl_status_t nvl_engine_allreduce(nvl_engine_t *e, int32_t layer, float *buf,
                                  size_t n);
nvl_status_t nvl_engine_allreduce_info(nvl_engine_t *e, int32_t layer,
                                       float *buf, size_t n,
                                       nvl_coll_info_t *info_out);
/* issue.c: a kernel of cost c run as the epilogue of the collective
 * before it (no launch of its own, accounted to the other part);
 * recorded while deferring; nothing after the clock overflowed. */
void nvl_engine_epilogue(nvl_engine_t *e, const char *name, int32_t layer,
                         nvl_kernel_cost_t c);
/* plan.c: nvl_engine_allreduce followed by the residual add + RMSNorm
 * step of its rows; with opts.fuse_allreduce_norm and a serving engine's
 * allreduce kernel that step runs as the kernel's epilogue (the add +
 * RMSNorm reading the residual and writing it and the normed rows, the
 * reduced rows staying on chip) and the next NVL_STEP_ADD_NORM issues
 * nothing. */
nvl_status_t nvl_engine_allreduce_add_norm(nvl_engine_t *e, int32_t layer,
                                           float *buf, size_t n);

/* issue.c, memory tiers over NVLink-C2C (nothing without a host tier;
 * docs/cost-model.md, "Memory tiers"):
 * c2c_prefetch: starts copying `bytes` of host memory into HBM on the
 * copy engine (when its host-to-device queue is free, not before now),
 * overlapping the GPU's work; the data is ready when it lands.
 * c2c_wait: the GPU waits, idle, until the last prefetch has landed.
 * c2c_writeback: queues `bytes` from HBM to host memory (device to host),
 * overlapping; c2c_drain: the GPU waits until that queue is empty.
 * c2c_sync_copy: a copy on the GPU's path (the step's token ids in, the
 * sampled tokens out): issued like a kernel, accounted to the c2c part. */
void nvl_engine_c2c_prefetch(nvl_engine_t *e, int32_t layer, double bytes);
void nvl_engine_c2c_wait(nvl_engine_t *e, int32_t layer);
void nvl_engine_c2c_writeback(nvl_engine_t *e, int32_t layer, double bytes);
void nvl_engine_c2c_drain(nvl_engine_t *e);
void nvl_engine_c2c_sync_copy(nvl_engine_t *e, const char *name,
                              nvl_copy_path_t path, double bytes);

/* plan.c: the steps whose kernels depend on the software stack. */
typedef enum {
    NVL_STEP_ROPE_TABLES,     /* a pass's cos/sin rows for its positions */
    NVL_STEP_NORM,            /* rmsnorm, no residual pending */
    NVL_STEP_ADD_NORM,        /* the pending residual add, then rmsnorm */
    NVL_STEP_QKV,             /* q, k, v projections (and their bias) */
    NVL_STEP_QK_NORM,         /* Qwen3's per-head q and k norms */
    NVL_STEP_ROPE_KV,         /* RoPE on q and k, the new k and v cached */
    NVL_STEP_GATE_UP,         /* dense MLP: gate and up, SiLU, product */
    NVL_STEP_EXPERTS_GATE_UP, /* the experts' gate and up, SiLU, product */
    NVL_STEP_COUNT
} nvl_step_t;

/* Issues step's kernels under the engine's stack for `rows` rows (the
 * experts' step: (token, expert) pairs, with count[i] tokens for the
 * rank's i-th expert; NULL otherwise). */
void nvl_engine_step(nvl_engine_t *e, nvl_step_t step, int32_t layer,
                     double rows, const uint64_t *count);

/* f32.c: float32 maths (data mode).
 * y[t, o] = sum_i x[t, i] w[o, i] (+ b[o]) */
void nvl_engine_linear(const float *x, const float *w, const float *b,
                       float *y, uint64_t T, uint64_t O, uint64_t I);
/* y[t] = w * x[t] / rms(x[t]) for T rows of D */
void nvl_engine_rmsnorm(const float *x, const float *w, float *y, uint64_t T,
                        uint64_t D, double eps);
/* rotate_half RoPE on one head vector of d values at position pos */
void nvl_engine_rope(float *v, uint64_t d, uint64_t pos,
                     const nvl_model_config_t *cfg);
/* index of the largest of n values (the first on ties) */
int32_t nvl_engine_argmax(const float *v, uint32_t n);

/* actq.c: the M x K input x of layer li's GEMM `g` as the GEMM reads it:
 * x itself (its class's e->actq NONE, or weights the layer keeps in bf16), else each
 * row quantized (from a block boundary) into the engine's scratch. */
const float *nvl_engine_gemm_input(nvl_engine_t *e, uint32_t li,
                                   nvl_gemm_in_t g, const float *x,
                                   uint64_t M, uint64_t K);
/* actq.c: the same for a buffer the caller owns, quantized in place (a
 * mixture of experts' gathered rows: each expert's GEMM input). */
void nvl_engine_gemm_input_inplace(const nvl_engine_t *e, uint32_t li,
                                   nvl_gemm_in_t g, float *x, uint64_t M,
                                   uint64_t K);
/* actq.c: stores n keys (which 0) or values (which 1) of layer li into
 * the cache at dst: as they are, or as an FP8 cache returns them. */
void nvl_engine_kv_store(const nvl_engine_t *e, uint32_t li, int which,
                         float *dst, const float *src, uint64_t n);
/* actq.c: after the weights: resolves e->actq from the checkpoint's
 * format (each class's group's) and the options, reads the input scales and KV scales (w: the
 * open checkpoint, NULL for synthetic weights); reports a bad scale or an
 * unsupported combination, naming the tensor and the file. */
nvl_status_t nvl_engine_load_quant(nvl_engine_t *e,
                                   const nvl_weights_t *w,
                                   const char *dir);

/* kv.c: makes room for `more` positions in c (data mode), frees a cache
 * of `layers` layers; allocates / frees a pass's activations for M rows
 * of n sequences, the longest ctx positions.  Out of memory aborts the
 * job (the other ranks would wait in the next collective). */
void nvl_engine_kv_reserve(nvl_engine_t *e, nvl_kv_cache_t *c,
                           uint64_t more);
void nvl_engine_kv_free(nvl_kv_cache_t *c, uint32_t layers);
void nvl_engine_acts_alloc(nvl_engine_t *e, nvl_acts_t *b, uint64_t M, int n,
                           uint64_t ctx);
void nvl_engine_acts_free(nvl_acts_t *b);

/* attention.c: layer li's attention for M rows of n sequences (T[s] new
 * rows of sequence s after past[s] cached), up to o_proj: its partial sums
 * (complete with data-parallel attention) in b->h. */
nvl_status_t nvl_engine_attention(nvl_engine_t *e, uint32_t li, int n,
                                  nvl_kv_cache_t *caches, const uint64_t *T,
                                  const uint64_t *past, uint64_t M,
                                  nvl_acts_t *b);
/* attention.c: the partial sums completed (allreduce) and added to the
 * residual b->x. */
nvl_status_t nvl_engine_attention_out(nvl_engine_t *e, uint32_t li,
                                      uint64_t M, nvl_acts_t *b);
/* attention.c, tensor-parallel attention before expert parallelism: the
 * partial sums reduce-scattered by rows, added to the residual, normed,
 * through the experts (nvl_engine_moe_ep), added again, and allgathered:
 * the whole layer after nvl_engine_attention. */
nvl_status_t nvl_engine_attention_out_ep(nvl_engine_t *e, uint32_t li,
                                         uint64_t M, nvl_acts_t *b);

/* mlp.c: layer li's MLP half (dense, or experts) and its allreduce, added
 * to the residual b->x. */
nvl_status_t nvl_engine_mlp(nvl_engine_t *e, uint32_t li, uint64_t M,
                            nvl_acts_t *b);

/* pass.c: runs T[s] new tokens of each of n sequences (tokens one sequence
 * after another) at positions caches[s].len .., appending to the caches,
 * and writes each sequence's last-position logits (n x vocab, every rank;
 * data mode). */
nvl_status_t nvl_engine_forward(nvl_engine_t *e, int n,
                                nvl_kv_cache_t *caches, const int32_t *tok,
                                const uint64_t *T, float *logits);

/* create.c: whether this stage's layer li (global layer0 + li) is a
 * mixture of experts. */
bool nvl_engine_layer_is_moe(const nvl_engine_t *e, uint32_t li);

/* pipe.c: collective over e->job: the stages (opts.pp), this rank's
 * layers and communicators; reports (lowest rank) and fails on every
 * rank for a stage count that does not divide the ranks, more stages
 * than layers, or a --pp-layers list of the wrong count or sum.  Sets
 * e->tp (the job itself without a pipeline). */
nvl_status_t nvl_engine_pipe_create(nvl_engine_t *e);
void nvl_engine_pipe_free(nvl_engine_t *e);
/* pipe.c: a stage after the first receives the M rows of activations
 * (b->x, residual; b->h, hidden state) from the previous stage, a stage
 * before the last sends them on after every pass, timed on the
 * topology's point-to-point path, the wait for the partner the bubble.
 * _send first settles a deferred pass (collective over e->tp),
 * _settle_last the last stage's, each agreeing on the stage's worst
 * status in the same exchange (_settle_last returns it); the status
 * crosses first, a failure alone, which _recv returns (else agreed over
 * e->tp) without waiting for rows.  _skip: a pass of a stage that failed
 * earlier in the step (st, the same on its ranks): the previous stage's
 * status and rows taken, st passed on and returned. */
nvl_status_t nvl_engine_pipe_recv(nvl_engine_t *e, uint64_t M, nvl_acts_t *b);
nvl_status_t nvl_engine_pipe_send(nvl_engine_t *e, uint64_t M, nvl_acts_t *b,
                                  nvl_status_t st);
nvl_status_t nvl_engine_pipe_settle_last(nvl_engine_t *e, nvl_status_t st);
nvl_status_t nvl_engine_pipe_skip(nvl_engine_t *e, uint64_t M,
                                  nvl_status_t st);
/* pipe.c, a no-op without a pipeline: collective over e->job in data
 * mode, the last stage's logits of n sequences (n x vocab) handed to every
 * rank; end_ps, the clock its pass ended at (agreed over the job with the
 * pass's status: generate.c), is when stage 0's next pass may start. */
void nvl_engine_pipe_deliver(nvl_engine_t *e, int n, float *logits,
                             int64_t end_ps);
/* pipe.c: stage 0 idles until the tokens its pass needs are back (the
 * pipeline's bubble); at the start of a pass. */
void nvl_engine_pipe_wait_tokens(nvl_engine_t *e);
/* pipe.c: collective over e->job, a serving step's end with a pipeline:
 * every rank's clock waits for its stage's latest end; *free_ps_out is
 * when stage 0 ended (the next batch may enter), *ready_ps_out when the
 * last stage did (the step's tokens are sampled); returns the worst of
 * the ranks' st, so that a failure on one stage fails every rank. */
nvl_status_t nvl_engine_pipe_step_end(nvl_engine_t *e, nvl_status_t st,
                                      int64_t *free_ps_out,
                                      int64_t *ready_ps_out);

/* moe.c: the mixture-of-experts MLP of layer li over M rows.  Data mode:
 * h holds the normed input [M, hidden] and receives this rank's partial
 * sum of the experts' output (the caller's allreduce completes it); timing
 * mode: h is NULL.  Issues the router, top-k, grouped expert GEMMs and
 * combine kernels, costed with the routing's per-expert token counts (data
 * mode: the real routing; timing mode: seeded, uniform or Zipf over the
 * experts, opts.route_skew). */
void nvl_engine_moe(nvl_engine_t *e, uint32_t li, uint64_t M, float *h);

/* moe.c, shared with moe_ep.c: held experts over M rows with ids, weights
 * (data mode; in may be out; inputs quantized as layer li's); router, top-k
 * over M rows; bits of layer L's expert-input values with scales (16: BF16); expert
 * kernels, count[i] tokens for held expert i over `rows` rows (quantized_rows:
 * in that format already); layer li's MoE numbers since `before` into its
 * decode totals (decode passes; exchanges' times: nvl_engine_account_ep). */
void nvl_engine_moe_compute(const nvl_engine_t *e, uint32_t li,
                            const float *in, float *out, uint64_t M,
                            const uint32_t *ids, const float *w);
void nvl_engine_moe_router_kernels(nvl_engine_t *e, int32_t L, uint64_t M);
double nvl_engine_moe_act_bits(const nvl_engine_t *e, int32_t L);
void nvl_engine_moe_expert_kernels(nvl_engine_t *e, int32_t L,
                                   const uint64_t *count, uint64_t rows,
                                   bool quantized_rows);
void nvl_engine_moe_layer_done(nvl_engine_t *e, uint32_t li,
                               const nvl_pass_stats_t *before);

/* moe_route.c: the experts (ids, M x top_k) of rows row0 .. row0 + M - 1
 * of the pass, and their weights: data mode routes h (the normed rows,
 * M x hidden) through layer li's router; timing mode draws a seeded
 * routing (no weights), the same on every rank and placement. */
void nvl_engine_moe_route(nvl_engine_t *e, uint32_t li, uint64_t row0,
                          uint64_t M, const float *h, uint32_t *ids,
                          float *w);
/* Counts of a layer's routing over a split of its experts into groups
 * (expert parallelism's, moe_ep.c): tokens per expert (count, E), and per
 * group (n of them; expert x in group[x]) the (row, expert) pairs and
 * the rows with at least one expert there.  The counts are added to. */
typedef struct {
    const uint32_t *group;
    uint32_t n;
    uint64_t *count, *pairs, *rows;
} nvl_moe_groups_t;
/* moe_route.c: M routed rows (ids, M x top_k) added to g's counts. */
void nvl_engine_moe_count(const nvl_engine_t *e, const uint32_t *ids,
                          uint64_t M, const nvl_moe_groups_t *g);
/* moe_route.c, timing mode: nvl_engine_moe_route's seeded routing of
 * rows row0 .. row0 + M - 1 of layer li added to g's counts, without
 * the rows' ids. */
void nvl_engine_moe_route_count(nvl_engine_t *e, uint32_t li, uint64_t row0,
                                uint64_t M, const nvl_moe_groups_t *g);
/* moe_route.c: n zeroed elements of `size` bytes (one spare); out of
 * memory aborts the job (the other ranks would wait in the next
 * collective).  The caller frees. */
void *nvl_engine_moe_alloc(size_t n, size_t size);

/* moe_ep.c, expert parallelism (e->shard.ep > 1 or attention data-parallel):
 * collective over e->tp.  This rank's R rows (the pass's rows row0 ..
 * row0 + R - 1 of the whole batch) are routed here, sent to the ranks
 * holding their experts (dispatch), computed there and sent back
 * (combine).  Data mode: h holds the normed input [R, hidden] and receives
 * the experts' complete weighted sum; timing mode: h is NULL. */
nvl_status_t nvl_engine_moe_ep(nvl_engine_t *e, uint32_t li, uint64_t R,
                               uint64_t row0, float *h);

/* moe_book.c, data-parallel attention: the next pass's rows of every member
 * of e->tp (rows[r] from row first[r] of the whole step's, members'
 * entries each), so that timing mode's expert-parallel book routes every
 * member's rows without an exchange; e->row0 becomes this rank's first.
 * Holds for one pass (nvl_engine_forward drops it); a pass without it
 * exchanges the book. */
void nvl_engine_ep_rows(nvl_engine_t *e, const uint64_t *rows,
                        const uint64_t *first);

/* moe_book.c: completes the last pass's agreement on how the book is
 * routed, if pending (every member has posted it by the end of the pass
 * that did). */
void nvl_engine_ep_done(nvl_engine_t *e);

/* create.c: whether layer li's experts exchange tokens with all-to-alls
 * (a placement's property: issue.c, pass.c and the layers ask it). */
bool nvl_engine_moe_is_ep(const nvl_engine_t *e, uint32_t li);

/* record.c */
/* Grows an array p of n elements of size sz (capacity *cap) to hold one
 * more; aborts the job when memory runs out (other ranks would wait in
 * the next collective). */
void *nvl_engine_grow(void *p, size_t *cap, size_t n, size_t sz);
void nvl_engine_pass_begin(nvl_engine_t *e, uint64_t tokens);
void nvl_engine_pass_end(nvl_engine_t *e, uint64_t context);
/* Adds dur_ps of part to the current pass, and an event unless it is
 * idle time (launch, wait) or recording is off. */
void nvl_engine_account(nvl_engine_t *e, const char *name, nvl_part_t part,
                        int32_t layer, int64_t start_ps, int64_t dur_ps,
                        double flops, double bytes);
/* An event on the C2C copy engine's track (overlapping the GPU's work:
 * not in the parts' times), with its bytes counted to the pass. */
void nvl_engine_account_c2c(nvl_engine_t *e, const char *name,
                            nvl_copy_path_t path, int32_t layer,
                            int64_t start_ps, int64_t dur_ps, double bytes);
/* A collective on the communication stream (--overlap async-tp): an
 * event on its track, its bytes and time counted to the pass (in no
 * part's time: the stream waits for what is exposed). */
void nvl_engine_account_comm(nvl_engine_t *e, const char *name,
                             int32_t layer, const nvl_coll_info_t *info);
/* An expert-parallel exchange x of layer `layer` (moe_ep.c), entered at
 * entry_ps and agreed as info: its time added to the pass's dispatch or
 * combine time (the combine's wait for the group to the imbalance wait)
 * and, in decode passes, to the layer's. */
void nvl_engine_account_ep(nvl_engine_t *e, nvl_ep_xchg_t x, int32_t layer,
                           int64_t entry_ps, const nvl_coll_info_t *info);
/* The last event accounted, or NULL (to add collective details). */
nvl_op_event_t *nvl_engine_last_event(nvl_engine_t *e);

#endif
