/* The schedulers, one row each with everything that differs between the
 * serving engines (include/nvlemu/serve.h nvl_serve_scheduler_t; docs/
 * serve.md "The schedulers" cites each default), and the kinds of
 * preemption.  sched.c and run.c read
 * the admission and preemption rules, src/serving the defaults, the
 * memory rule and the CUDA graphs, the report the texts. */
#include "nvlemu/serve.h"

/* CUDA graphs: the rows a step runs once padded to the graph replayed
 * for it (0: no graph, run as scheduled).  vLLM V1 pads a step of at most
 * 512 tokens to its capture sizes 1, 2, 4 and the multiples of 8 (
 * CompilationConfig cudagraph_capture_sizes, piecewise graphs for mixed
 * steps too). */
static uint32_t vllm_graph_rows(uint32_t seqs, uint64_t tokens,
                                uint64_t prefill, uint32_t cap)
{
    (void)seqs;
    (void)prefill;
    (void)cap;
    if (tokens > 512)
        return 0;
    if (tokens <= 4)
        return tokens <= 1 ? 1 : tokens <= 2 ? 2 : 4;
    return (uint32_t)((tokens + 7) / 8 * 8);
}

/* TensorRT-LLM's PyTorch backend replays a graph for a generation-only
 * batch only, padded to the next of cuda_graph_config's batch_sizes with
 * enable_padding (the list TensorRT-LLM's performance overview
 * benchmarks with); a step with a context runs eagerly.  The executor
 * keeps the sizes up to the largest decode batch it can run, CAP =
 * min(max_batch_size, max_num_tokens), and with padding adds CAP itself
 * in place of the first size above it, so a batch between the last size
 * kept and CAP pads to CAP, not to the list's next size
 * (tensorrt_llm/_torch/pyexecutor/model_engine.py,
 * _filter_cuda_graph_batch_sizes). */
static uint32_t trtllm_graph_rows(uint32_t seqs, uint64_t tokens,
                                  uint64_t prefill, uint32_t cap)
{
    static const uint32_t sizes[] = {1,   2,   4,    8,    16,   32,  64,
                                     128, 256, 384,  512,  1024, 2048,
                                     4096, 8192};
    (void)tokens;
    if (prefill > 0 || seqs > cap)
        return 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (sizes[i] >= seqs)
            return sizes[i] < cap ? sizes[i] : cap;
    return 0;
}

/* vLLM V1's memory profile (vllm/v1/worker/gpu_model_runner.py at
 * v0.11.0, profile_run): after the forward over max_num_batched_tokens,
 * _dummy_sampler_run samples max_num_seqs rows of the whole vocabulary
 * with top_k = vocabulary - 1 and top_p = 0.9.  In v0.11.0 the V1 sampler
 * takes FlashInfer's kernel whenever flashinfer is installed, as in
 * vLLM's container image (vllm/v1/sample/ops/topk_topp_sampler.py:
 * VLLM_USE_FLASHINFER_SAMPLER unset means on; off by default only from
 * vLLM pull request 26859, after v0.11.0), and flashinfer_sample calls
 * top_k_top_p_sampling_from_logits, which masks the top k into a new
 * tensor and softmaxes it without sorting.  At its peak, per logit: the
 * bf16 logits (2 bytes), their float32 copy (4), the masked logits (4)
 * and the probabilities (4): 14 bytes.  (Without flashinfer the PyTorch
 * path sorts every logit: 39 bytes; docs/serve.md, "vLLM's mechanisms,
 * source by source", says which the published rows show.) */
#define NVL_VLLM_SAMPLER_LOGIT_BYTES 14.0

static const nvl_serve_scheduler_t schedulers[] = {
    [NVL_SCHED_VLLM] = {
        .id = {"vllm", "vLLM V1: KV blocks on demand, preemption, chunked "
                       "prefill (vllm/v1/core/sched/scheduler.py)"},
        .admit_to_completion = false, .preempts = true, .chunked = true,
        .next_chunk_in_flight = true,
        .max_batch = 1024, .max_tokens_per_step = 8192, .block_tokens = 16,
        .mem_fraction = 0.90, .mem_of_free = false,
        .sampler_logit_bytes = NVL_VLLM_SAMPLER_LOGIT_BYTES,
        .graph_rows = vllm_graph_rows,
        .host_us_per_request = NVL_VLLM_HOST_US_PER_REQUEST,
        .host_us_per_step = NVL_VLLM_HOST_US_PER_STEP,
        .host_serial = true, .moe_marlin = true, .moe_triton = true},
    {
        .id = {"trtllm", "TensorRT-LLM as trtllm-bench runs it: "
                         "GUARANTEED_NO_EVICT, whole prompts, "
                         "trtllm-bench's limits"},
        .admit_to_completion = true, .preempts = false, .chunked = false,
        .next_chunk_in_flight = false,
        .bench_limits = nvl_serve_trtllm_bench_limits, .block_tokens = 32,
        .mem_fraction = 0.90, .mem_of_free = true,
        .outside_bytes = NVL_TRTLLM_OUTSIDE_BYTES,
        .moe_runner_workspace = true, .graph_rows = trtllm_graph_rows,
        .preemption_text = "no preemption (no-evict admission)",
        .host_us_per_request = NVL_TRTLLM_HOST_US_PER_REQUEST,
        .host_ref_torch_op_us = NVL_TRTLLM_HOST_REF_TORCH_OP_US,
        .eager_without_graph = true},
};

const nvl_family_t nvl_serve_sched_family =
    NVL_FAMILY("scheduler", "serving schedulers and their engines' "
                            "defaults (serve --scheduler)", schedulers);

/* Preemption's kinds (sched.c's preempt_last does what each says). */
static const nvl_member_t preemptions[] = {
    [NVL_PREEMPT_RECOMPUTE] = {"recompute", "drop the request's KV and "
                                            "prefill its prompt and outputs "
                                            "again (vLLM's default)"},
    [NVL_PREEMPT_SWAP] = {"swap", "copy the request's KV to the host's "
                                  "memory over NVLink-C2C and back later"},
};

const nvl_family_t nvl_serve_preempt_family =
    NVL_FAMILY("preempt", "what preempting a request does (serve "
                          "--preempt)", preemptions);

const nvl_serve_scheduler_t *nvl_serve_scheduler(nvl_serve_sched_t s)
{
    return &schedulers[s];
}
