/* nvlemu: serving a workload in virtual time: requests (a trace file or a
 * generator), a continuous-batching scheduler as serving engines run it,
 * and the per-request and aggregate results (docs/serve.md).
 *
 * The module is pure: no MPI, no clock of its own, no engine.  A step's
 * time comes from the caller (nvl_serve_step_fn: `nvlemu serve` runs the
 * step through the engine, the unit tests use a formula), so the
 * scheduler is the same code whatever times a step; every rank of a
 * replica runs it identically and agrees on each step's end time.
 *
 * Scheduling (vLLM V1's scheduler, docs/serve.md "The scheduler"): each
 * step has a token budget (--max-tokens-per-step) and a sequence limit
 * (--max-batch); running requests are served first in the order they were
 * admitted (a decode takes one token, an unfinished prefill a chunk of at
 * most --chunk tokens), then swapped-out requests resume, then waiting
 * requests are admitted first come, first served.  KV lives in blocks of
 * `block_tokens` positions; a step that needs a block when none is free
 * first evicts unused prefix-cache entries, then preempts the running
 * request admitted last (recompute: its KV dropped, its prompt and outputs
 * prefilled again; swap: its KV copied to host memory over NVLink-C2C and
 * back later). */
#ifndef NVLEMU_SERVE_H
#define NVLEMU_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nvlemu/family.h"
#include "nvlemu/status.h"

/* ---- requests ------------------------------------------------------------ */

/* One request of a workload.  Times are integer picoseconds of virtual
 * time from the workload's start. */
typedef struct {
    uint32_t id;          /* 0.. in the order of the trace or generator */
    uint32_t line;        /* the trace file's line (0: generated) */
    int64_t arrival_ps;   /* when it reaches the server (closed loop:
                             set when a slot frees; -1 until then) */
    uint32_t input_tokens, output_tokens; /* >= 1 each */
    int32_t prefix;       /* shared-prefix id, or -1 */
    uint32_t prefix_tokens; /* the shared prefix's length (<= input) */
    int64_t frontend_ps;  /* from arrival to the scheduler: the time the
                             serving engine's front end holds it
                             (nvl_serve_frontend; 0: none) */
} nvl_serve_req_t;

/* A workload: its requests and how they arrive. */
typedef struct {
    nvl_serve_req_t *reqs; /* owned */
    size_t n;
    /* closed loop (--concurrency N): N requests start at time 0, each
     * finishing request lets the next one arrive at that moment; 0: open
     * (every arrival_ps is set) */
    uint32_t concurrency;
    char **prefix_names;   /* the trace's prefix ids by number (owned) */
    size_t n_prefixes;
} nvl_serve_workload_t;

/* A length distribution of the generator: "N" (fixed), "uniform:LO:HI"
 * (integers LO..HI), "normal:MEAN:SD" (rounded, at least 1),
 * "lognormal:MEDIAN:SIGMA" (rounded, at least 1). */
typedef struct {
    enum { NVL_LEN_FIXED, NVL_LEN_UNIFORM, NVL_LEN_NORMAL,
           NVL_LEN_LOGNORMAL } kind;
    double a, b;
} nvl_serve_len_t;

/* Parses a distribution (an option parser: label names the option in the
 * report; out points to an nvl_serve_len_t). */
nvl_status_t nvl_serve_len_parse(const char *label, const char *text,
                                 void *len_out);
/* Writes the distribution back as parsed ("512", "uniform:128:1024"). */
void nvl_serve_len_format(const nvl_serve_len_t *len, char *buf, size_t n);

/* The generator's parameters. */
typedef struct {
    uint32_t requests;     /* how many */
    double rate_per_s;     /* Poisson arrivals at this mean rate; 0: all
                              at time 0 unless concurrency */
    uint32_t concurrency;  /* closed loop with this many in flight; 0: open */
    nvl_serve_len_t isl, osl;
    uint32_t prefix_groups; /* requests share one of this many prefixes
                               (0: none) of prefix_tokens each */
    uint32_t prefix_tokens;
    uint64_t seed;
} nvl_serve_gen_t;

/* Makes the generator's workload, the same on every host for the same
 * parameters (its own 64-bit generator, no libc random).  Reports and
 * fails on parameters that make no requests (a prefix longer than an
 * input is cut to the input). */
nvl_status_t nvl_serve_generate(const nvl_serve_gen_t *g,
                                nvl_serve_workload_t *w_out);

/* Reads a JSONL trace: one request per line, an object with
 *   "arrival_s" (seconds, >= 0, not decreasing; "timestamp" is read too),
 *   "input_tokens", "output_tokens" (whole numbers >= 1; "input_length" /
 *   "output_length" too), optional "prefix_id" (a string or a number) and
 *   "prefix_tokens" (the shared prefix's length, <= input_tokens; default
 *   the input_tokens of the first request with that id).
 * Blank lines and lines starting with '#' are skipped.  Reports
 * "FILE:LINE: why" and fails on the first bad line (malformed JSON, a
 * missing or negative field, times going backwards). */
nvl_status_t nvl_serve_trace_load(const char *path,
                                  nvl_serve_workload_t *w_out);

void nvl_serve_workload_free(nvl_serve_workload_t *w);

/* The serving engine's front end (vLLM's API server: one process, one
 * asyncio loop that parses, templates and tokenises every request before
 * handing it to the engine; docs/serve.md "The front end"): each request
 * takes per_request_s of the loop, and the requests it holds share it
 * round-robin (processor sharing), so a request reaches the scheduler
 * when its share is done; sets every request's frontend_ps.  Arrivals
 * must be open (set, not decreasing): a closed loop (--concurrency) is
 * reported and refused.  per_request_s 0 clears frontend_ps. */
nvl_status_t nvl_serve_frontend(nvl_serve_workload_t *w,
                                double per_request_s);

/* ---- the scheduler -------------------------------------------------------- */

/* What preempting a request does (--preempt): its KV dropped and its
 * prompt and outputs prefilled again, or its KV swapped to the host's
 * memory; the rows of nvl_serve_preempt_family (src/serve/schedulers.c). */
typedef enum { NVL_PREEMPT_RECOMPUTE, NVL_PREEMPT_SWAP } nvl_preempt_t;
extern const nvl_family_t nvl_serve_preempt_family;

/* Whose scheduler: the index of its row of nvl_serve_sched_family
 * (nvl_serve_scheduler_t says what differs).  Row 0 is vLLM's, the
 * default (a zeroed policy holds it); every other row is known by its
 * name, so a new scheduler adds no value here. */
typedef int nvl_serve_sched_t;
#define NVL_SCHED_VLLM 0

/* The policy, one field per knob (docs/serve.md lists each with its
 * serving-engine default and source). */
typedef struct {
    nvl_serve_sched_t sched;       /* its row of nvl_serve_sched_family */
    uint32_t max_batch;            /* sequences in one step */
    uint32_t max_tokens_per_step;  /* the step's token budget */
    uint32_t chunk;                /* a prefill's tokens per step */
    bool whole_prompts;            /* a prompt's rest runs in one step or
                                      waits (TensorRT-LLM without chunked
                                      context: admission stops there) */
    uint32_t block_tokens;         /* KV positions per block */
    nvl_preempt_t preempt;
    bool prefix_caching;
    /* steps in flight at once: a pipeline's stages (each holds one
     * batch: vLLM V1's batch queue of max_concurrent_batches =
     * pipeline_parallel_size, TensorRT-LLM's num_micro_batches =
     * pp_size); 0 or 1: one step at a time */
    uint32_t in_flight;
    /* the output path's time a token (--stream-us; 0: none): the API
     * server's output handler takes each sampled token in turn (vLLM
     * V1's AsyncLLM output_handler: OutputProcessor.process_outputs, the
     * chat chunk, its send), one queue per replica behind the engine,
     * which never waits for it (docs/serve.md, "The output path"); a
     * token reaches the client when its turn is done */
    int64_t stream_token_ps;
} nvl_serve_policy_t;

/* trtllm-bench's own limits (tensorrt_llm/bench/build/tuning.py
 * calc_engine_setting and finetune_setting, applied by
 * tensorrt_llm/bench/benchmark/utils/general.py get_settings when
 * --max_batch_size and --max_num_tokens are not given): from the model,
 * the GPUs' memory and the dataset's mean lengths. */
typedef struct {
    double checkpoint_params;   /* the checkpoint's safetensors element
                                   count (nvl_serve_checkpoint_params) */
    double bytes_per_param;     /* 0.5 nvfp4, 1 fp8, 2 otherwise */
    double kv_bytes_per_elem;   /* 1 fp8, 2 otherwise */
    uint32_t layers, kv_heads, tp;
    uint32_t kv_head_elems;     /* elements one position of one layer
                                   caches per KV head, keys and values
                                   (2 head_dim under GQA; the caller reads
                                   them from the attention's geometry) */
    uint32_t pp;                /* pipeline stages (0 or 1: none) */
    double gpu_mem_gib;         /* one GPU's memory as NVML reports it */
    double kv_fraction;         /* --kv_cache_free_gpu_mem_fraction */
    double mean_isl, mean_osl;  /* the dataset's averages */
    uint32_t max_isl;           /* its longest prompt */
    bool chunked;               /* --enable_chunked_context */
} nvl_serve_trtllm_bench_in_t;

/* The checkpoint's element count as safetensors metadata sums it (what
 * trtllm-bench reads as param_count): linear weights of an nvfp4
 * checkpoint packed two to a byte plus one fp8 scale per 16, fp8 ones
 * one each; embeddings, norms and lm_head in bf16 one each.
 * total_params: the model's parameters; embed_params: its embedding and
 * lm_head parameters (counted once if tied). */
double nvl_serve_checkpoint_params(double total_params, double embed_params,
                                   double bytes_per_param);

/* Fills *max_batch_out and *max_tokens_out as trtllm-bench would; fails
 * (reported, naming the numbers) when the model does not fit or no
 * request's KV fits, as trtllm-bench raises. */
nvl_status_t nvl_serve_trtllm_bench_limits(
    const nvl_serve_trtllm_bench_in_t *in, uint32_t *max_batch_out,
    uint32_t *max_tokens_out);

/* A scheduler (docs/serve.md "The schedulers"): one row of the table
 * in src/serve/schedulers.c carrying everything that differs between the
 * serving engines; adding one is adding a row (and its functions).
 *   vllm:   vLLM V1: a request takes KV blocks as its tokens need them;
 *           when none is free, the running request admitted last is
 *           preempted.
 *   trtllm: TensorRT-LLM's GUARANTEED_NO_EVICT capacity scheduler and
 *           MicroBatchScheduler: a waiting request is admitted only when
 *           the free blocks, less those every running request still needs
 *           to finish, hold its prompt and all its outputs; nothing is
 *           ever preempted; admission stops at the first that does not
 *           fit. */
typedef struct {
    nvl_member_t id;              /* --scheduler's name */
    /* admission: a waiting request needs blocks for its prompt and every
     * output once the running requests' blocks to completion are held
     * back (no-evict); false: blocks for its first chunk only */
    bool admit_to_completion;
    /* a step short of blocks preempts the running request admitted last;
     * false: that never happens (a broken invariant if it did) */
    bool preempts;
    bool chunked;                 /* --chunk 0 chunks a prefill to the
                                     step's budget; false: whole prompts */
    /* with steps in flight (a pipeline), a request whose prefill chunk
     * is in flight may run its next chunk in the next step (vLLM V1
     * counts tokens computed when it schedules them; it waits only once
     * every known token is scheduled); false: a request in a step in
     * flight waits for that step's end (TensorRT-LLM's inflight_req_ids) */
    bool next_chunk_in_flight;
    /* the defaults of --max-batch and --max-tokens-per-step; 0: from
     * bench_limits (trtllm-bench's rule) */
    uint32_t max_batch, max_tokens_per_step;
    nvl_status_t (*bench_limits)(const nvl_serve_trtllm_bench_in_t *in,
                                 uint32_t *max_batch_out,
                                 uint32_t *max_tokens_out);
    uint32_t block_tokens;        /* --block's default */
    /* --mem-fraction's default, of the GPU's whole memory (vLLM's
     * gpu_memory_utilization) or of what the weights and activations leave
     * free (mem_of_free: TensorRT-LLM's free_gpu_memory_fraction) */
    double mem_fraction;
    bool mem_of_free;
    /* HBM the engine holds on each GPU outside what the model counts
     * (weights, the profile's activations), taken before mem_fraction;
     * 0: none */
    double outside_bytes;
    /* the memory profile's sampler pass: bytes per logit over max_batch
     * sequences (at most one a token of --max-tokens-per-step) of the
     * whole vocabulary, its peak taken apart from the
     * forward's (nvl_engine_kv_rule_t); 0: the float32 logits beside the
     * forward's activations */
    double sampler_logit_bytes;
    /* the memory profile counts the fused MoE runner's workspace at its
     * whole step (TensorRT-LLM's CUTLASS MoE; nvl_engine_kv_rule_t) */
    bool moe_runner_workspace;
    /* CUDA graphs: the rows a step of `seqs` sequences, `tokens` tokens
     * (`prefill` of them prefill) runs, padded to the graph replayed for
     * it; 0: no graph, the step runs as scheduled.  `cap`: the largest
     * decode batch the engine runs, min(max batch, max tokens a step),
     * which bounds the graphs an engine captures where it says so */
    uint32_t (*graph_rows)(uint32_t seqs, uint64_t tokens,
                           uint64_t prefill, uint32_t cap);
    /* the report's preemption phrase; NULL: --preempt's choice */
    const char *preemption_text;
    /* the engine's host work per scheduled request and step; 0: none
     * modeled.  Overlapped (host_serial false: its loop prepares step
     * n + 1 while the GPU runs step n, so a step lasts the longer of the
     * two) or serial (true: schedule, input preparation and output update
     * run while the GPU waits, so they add to every step) */
    double host_us_per_request;
    /* the same engine's host work per step whatever its requests (the
     * step's inputs copied and its graph launched: what its loop cannot
     * overlap even when it overlaps the rest); 0: none modeled */
    double host_us_per_step;
    /* the CPU time of one torch.nn.Linear forward call (the topology's
     * [host] torch_op) on the host host_us_per_request was measured on;
     * 0: not known (the figure holds on every host) */
    double host_ref_torch_op_us;
    bool host_serial;
    /* the engine's MoE GEMM for 4-bit experts on a GPU without FP4
     * tensor cores: vLLM's Marlin kernel (nvl_cost_cfg_t.moe_marlin) */
    bool moe_marlin;
    /* BF16 and block-FP8 experts on Hopper: vLLM's Triton fused_moe
     * (nvl_cost_cfg_t.moe_triton) */
    bool moe_triton;
    /* a step without a CUDA graph has its kernels launched one by one by
     * the same host thread, before its loop's work for the requests */
    bool eager_without_graph;
} nvl_serve_scheduler_t;

/* TensorRT-LLM's PyTorch executor (PyExecutor._executor_loop_overlap):
 * host time per scheduled request and iteration, 45.11 ms an iteration
 * at 1,536 requests a rank (GPT-OSS-120B on GB200, attention DP over 2
 * GPUs, max_batch_size 1536 at 3,072 concurrent 1k/1k requests, a run
 * its authors call host-bound; github.com/NVIDIA/TensorRT-LLM/pull/10273);
 * docs/serve.md, "The executor's host loop". */
#define NVL_TRTLLM_HOST_US_PER_REQUEST (45110.0 / 1536.0)

/* What TensorRT-LLM's PyTorch executor holds on a GPU beyond the weights
 * and the activations the model counts, when it sizes its KV cache
 * (KvCacheCreator: (total - peak of torch and non-torch memory in the
 * profiling pass) x free_gpu_memory_fraction; the non-torch part is its
 * CUDA context, the modules of its kernels and the libraries'
 * workspaces).  From the one published log of that sizing: TensorRT-LLM
 * issue 6294 (github.com/NVIDIA/TensorRT-LLM/issues/6294; v0.20.0,
 * trtllm-bench on one H100 80GB, Llama-3.1-8B FP8 with an FP8 KV cache,
 * fraction 0.8, max_num_tokens 23,552) allocated 860,320 positions,
 * 31,840 fewer than the 892,160 the model sized without it at the same
 * settings: 31,840 x 65,536 bytes a position / 0.8 = 2.61 GB
 * (docs/serve.md, "The KV cache outside the profile"). */
#define NVL_TRTLLM_OUTSIDE_BYTES (31840.0 * 65536.0 / 0.8)

/* That run's host, a GB200's Grace (72 Neoverse V2 cores): one
 * torch.nn.Linear forward (BF16, hidden 2048, 8192 tokens) costs its CPU
 * 37.08 us, against 13.48 us on a DGX H100's Xeon Platinum 8480C
 * (github.com/NVIDIA/TransformerEngine/issues/2053, the table);
 * docs/serve.md, "The host's CPU". */
#define NVL_TRTLLM_HOST_REF_TORCH_OP_US 37.08

/* vLLM V1's engine core without async scheduling (EngineCore.step:
 * schedule, execute the model, update from its output, one after the
 * other; --async-scheduling off by default in v0.11.0): the GPU's gap
 * between two decode steps, 5-6 ms at 256 sequences (Llama-2-7B on
 * ShareGPT, V1's AsyncLLM; github.com/vllm-project/vllm/issues/10634),
 * 5.5 ms.  With the scheduling and the input preparation moved off the
 * GPU's path the same run's gap fell to 150-170 us, the CUDA-graph
 * launch and its inputs' copies (pull request 11133, measured at batch
 * 256): that part is the step's own, the rest, 5.5 ms less it, the 256
 * requests'.  docs/serve.md, "vLLM's host time". */
#define NVL_VLLM_HOST_US_PER_STEP 160.0
#define NVL_VLLM_HOST_US_PER_REQUEST ((5500.0 - NVL_VLLM_HOST_US_PER_STEP) / 256.0)

/* An eager tiny kernel's host time over one torch.nn.Linear forward's,
 * on one host: 6.93 / 18.22 us and 10.25 / 28.26 us in two processes on
 * the lent H200's host (tests/data/calibration/h200-host-torch), 0.38
 * and 0.36. */
#define NVL_EAGER_LAUNCH_PER_TORCH_OP 0.37

/* The host time of one eager kernel launch on a host whose CPU spends
 * torch_op_ps on one torch.nn.Linear forward call (the topology's [host]
 * torch_op): NVL_EAGER_LAUNCH_PER_TORCH_OP of it; the topology's own
 * [gpu] launch_overhead_ps where torch_op is not given (0). */
double nvl_serve_eager_launch_us(int64_t torch_op_ps,
                                 int64_t launch_overhead_ps);

/* The host time per scheduled request and step of `row`'s engine on a
 * host whose CPU spends torch_op_ps on one torch.nn.Linear forward call
 * (the topology's [host] torch_op; 0: not given): the row's figure, times
 * torch_op / the row's reference host's when both are known (the
 * executor's loop is Python and PyTorch calls on one thread, so it
 * scales with that thread's speed at them). */
double nvl_serve_host_us_per_request(const nvl_serve_scheduler_t *row,
                                     int64_t torch_op_ps);

/* The same for the row's host work per step (host_us_per_step). */
double nvl_serve_host_us_per_step(const nvl_serve_scheduler_t *row,
                                  int64_t torch_op_ps);

/* The schedulers: --scheduler's values, `nvlemu --list scheduler`. */
extern const nvl_family_t nvl_serve_sched_family;

/* The row of scheduler s (a valid nvl_serve_sched_t). */
const nvl_serve_scheduler_t *nvl_serve_scheduler(nvl_serve_sched_t s);

/* What the replica's memory holds (nvl_engine_serve_memory gives it). */
typedef struct {
    uint64_t kv_blocks;         /* KV blocks in HBM */
    double kv_block_bytes;      /* bytes of one block on one GPU */
    double host_bytes;          /* host memory for swapped KV and evicted
                                   prefixes (0: no host tier) */
    uint64_t max_context;       /* the model's positions */
} nvl_serve_capacity_t;

/* One step as the scheduler hands it to the step function: n sequences,
 * sequence i runs new[i] tokens after past[i] cached positions; copies
 * over NVLink-C2C before the step (swap-in, prefix reloads: host to
 * device) and after it (swap-out, prefix evictions: device to host). */
typedef struct {
    int n;
    const uint64_t *past, *new_tokens;
    const uint32_t *req;        /* the request each sequence serves */
    uint64_t tokens, prefill_tokens; /* sum of new; of which prefill */
    double h2d_bytes, d2h_bytes;
    int64_t start_ps;
} nvl_serve_batch_t;

/* A step's times from its start: dur_ps (> 0) until its tokens are
 * sampled, free_ps (0 < free_ps <= dur_ps) until the next step may start
 * (a pipeline's first stage is done with it; without a pipeline, dur_ps). */
typedef struct {
    int64_t dur_ps, free_ps;
} nvl_serve_step_time_t;

/* Runs the step and returns its times in *time_out; a failure (already
 * reported) stops the scheduler with its status. */
typedef nvl_status_t (*nvl_serve_step_fn)(void *ctx,
                                          const nvl_serve_batch_t *b,
                                          nvl_serve_step_time_t *time_out);

/* What happened to one request. */
typedef struct {
    int64_t arrival_ps, scheduled_ps, first_token_ps, done_ps;
    uint32_t cached_tokens;  /* prompt tokens taken from the prefix cache */
    uint32_t preemptions;
    uint32_t replica;
    bool done;
} nvl_serve_outcome_t;

/* One replica's totals. */
typedef struct {
    uint64_t steps, tokens, prefill_tokens, decode_tokens, seqs;
    uint64_t preemptions, prefix_hits, prefix_hit_tokens;
    uint64_t peak_blocks;     /* the most KV blocks in use at a step */
    uint64_t kv_blocks;       /* the capacity */
    double h2d_bytes, d2h_bytes;
    int64_t busy_ps;          /* sum of step durations */
    int64_t end_ps;           /* the last step's end */
} nvl_serve_replica_stats_t;

/* Adds s's work counters (tokens, prefill and decode tokens, sequences,
 * preemptions, prefix hits and their tokens, C2C bytes) to t; the steps,
 * busy and end times and the blocks are the caller's to combine. */
void nvl_serve_stats_add_work(nvl_serve_replica_stats_t *t,
                              const nvl_serve_replica_stats_t *s);

/* A step's record for the trace (kept when nvl_serve_run's steps_out is
 * not NULL). */
typedef struct {
    int64_t start_ps, dur_ps;
    uint32_t seqs, tokens, prefill_tokens, blocks_used;
} nvl_serve_step_rec_t;

/* Checks the policy and that every request of `which` (indices into w,
 * n_which of them; NULL: all) can be served: its prompt and outputs fit
 * the context and the KV blocks.  Reports the first that cannot, naming
 * its id and trace line; the same on every rank. */
nvl_status_t nvl_serve_check(const nvl_serve_workload_t *w,
                             const nvl_serve_policy_t *p,
                             const nvl_serve_capacity_t *cap);

/* Serves the requests listed in which[0..n_which) (indices into w, in
 * arrival order; a closed loop lets which[k + concurrency] arrive when a
 * request finishes) on one replica, starting at start_ps, calling step for
 * each step.  With p->in_flight > 1 (a pipeline) up to that many steps
 * run at once: the next step is built when the last one frees the
 * pipeline's first stage (its free_ps) and a step is full, or nothing
 * more can run, then the oldest step's tokens are sampled at its end
 * (dur_ps); a request in a step in flight runs in no other (its next
 * prefill chunk excepted under the row's next_chunk_in_flight).  prefilled: the requests arrive with their prompt's KV
 * computed and their first token made (a disaggregated decode pool);
 * their KV still takes blocks here.  Fills out[which[k]] (every request
 * listed ends done) and *stats_out; with steps_out, a malloc'd array of
 * the steps (free it) and its length.  Invariants checked as it runs (an
 * internal error if broken): KV blocks in use never above cap->kv_blocks,
 * a step's tokens never above the budget, its sequences never above
 * max_batch. */
nvl_status_t nvl_serve_run(const nvl_serve_workload_t *w,
                           const uint32_t *which, size_t n_which,
                           uint32_t replica, const nvl_serve_policy_t *p,
                           const nvl_serve_capacity_t *cap, bool prefilled,
                           int64_t start_ps, nvl_serve_step_fn step,
                           void *ctx, nvl_serve_outcome_t *out,
                           nvl_serve_replica_stats_t *stats_out,
                           nvl_serve_step_rec_t **steps_out,
                           size_t *n_steps_out);

/* ---- attention data-parallel ranks (TensorRT-LLM's ADP) ------------------ */

/* One step of every attention-DP rank of a replica: batches[r] is rank
 * r's step (n 0: nothing scheduled there); the ranks run it together (the
 * mixture of experts' layers join them), so it returns one duration. */
typedef nvl_status_t (*nvl_serve_dp_step_fn)(void *ctx,
                                             const nvl_serve_batch_t *batches,
                                             int ranks, int64_t *dur_ps_out);

/* Serves which[0..n_which) of w as nvl_serve_run does, on a replica whose
 * `ranks` ranks each run attention on their own sequences (TensorRT-LLM's
 * enable_attention_dp; docs/serve.md "Attention data-parallel"): each
 * rank its own scheduler under p with its own KV cache of cap->kv_blocks
 * and its own max_batch and budget; every step, the requests that arrived
 * go to the ranks as TensorRT-LLM's executor request queue balances them
 * (at most ranks x max_batch active in all; the ranks below the expected
 * count, fewest active prompt tokens first, take them longest prompt
 * first); then every rank builds its step and step runs them together.
 * p->sched must admit to completion (TensorRT-LLM's scheduler) and
 * nothing arrives prefilled.  *stats_out sums the ranks (kv_blocks and
 * peak_blocks over all ranks, steps counted once); steps_out as
 * nvl_serve_run's, a step's sequences, tokens and blocks summed. */
nvl_status_t nvl_serve_run_dp(const nvl_serve_workload_t *w,
                              const uint32_t *which, size_t n_which,
                              uint32_t replica, const nvl_serve_policy_t *p,
                              const nvl_serve_capacity_t *cap, int ranks,
                              nvl_serve_dp_step_fn step, void *ctx,
                              nvl_serve_outcome_t *out,
                              nvl_serve_replica_stats_t *stats_out,
                              nvl_serve_step_rec_t **steps_out,
                              size_t *n_steps_out);

/* ---- results ------------------------------------------------------------- */

/* Mean and percentiles of one latency, in milliseconds. */
typedef struct {
    double mean, p50, p90, p99, min, max;
    size_t n;
} nvl_serve_dist_t;

/* The summary of a workload's outcomes. */
typedef struct {
    size_t requests;
    double makespan_s;                 /* first arrival to last finish */
    nvl_serve_dist_t ttft_ms, tpot_ms, e2e_ms, queue_ms;
    double input_tokens, output_tokens;
    double output_tok_per_s, total_tok_per_s, req_per_s;
    double output_tok_per_s_per_gpu, total_tok_per_s_per_gpu;
    double tok_per_s_per_user;         /* mean over requests of 1 / TPOT */
    double slo_ttft_ms, slo_tpot_ms;   /* 0: none */
    size_t good_requests;              /* meeting both SLOs */
    double goodput_req_per_s, goodput_tok_per_s, slo_attainment;
    double gpu_hour_cost;              /* 0: not given */
    double cost_per_m_output, cost_per_m_total; /* currency per 1e6 tokens */
    int gpus;
} nvl_serve_summary_t;

/* Summarises outcomes of w's requests served by `gpus` GPUs. */
void nvl_serve_summarize(const nvl_serve_workload_t *w,
                         const nvl_serve_outcome_t *out, int gpus,
                         double slo_ttft_ms, double slo_tpot_ms,
                         double gpu_hour_cost,
                         nvl_serve_summary_t *sum_out);

/* Writes the per-request CSV (a header line, then one row per request:
 * id, line, replica, arrival_s, input_tokens, output_tokens,
 * cached_tokens, queue_ms, ttft_ms, tpot_ms, e2e_ms, preemptions,
 * meets_slo). */
void nvl_serve_csv_write(const nvl_serve_workload_t *w,
                         const nvl_serve_outcome_t *out,
                         const nvl_serve_summary_t *sum, FILE *f);

#endif
