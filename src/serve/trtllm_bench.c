/* trtllm-bench's max batch size and max number of tokens per iteration,
 * as `trtllm-bench throughput` picks them when they are not given
 * (tensorrt_llm/bench/build/tuning.py calc_engine_setting and
 * finetune_setting; tensorrt_llm/bench/benchmark/utils/general.py get_settings;
 * docs/serve.md "The schedulers"):
 *
 *   kv_bytes/token = layers max(tp, kv_heads) kv_head_elems kv_bytes  (GiB)
 *                    (kv_head_elems: 2 head_dim, keys and values, under
 *                    GQA; one latent, replicated on every rank, under MLA)
 *   engine         = param_count bytes_per_param                      (GiB)
 *   cache          = (mem_gib tp pp - engine) kv_fraction
 *   requests       = cache / (kv_bytes/token (isl + osl))
 *   raw_bs         = min(requests, 4096) / pp
 *   raw_tokens     = min(raw_bs (1 + isl / osl), 32768)
 *   max_batch      = max(64, 32 ceil(raw_bs / 32))   raw_bs < 256
 *                    128 ceil(raw_bs / 128)          raw_bs < 1024
 *                    256 ceil(raw_bs / 256)          otherwise
 *   max_tokens     = max(2048, 256 ceil(raw / 256))  raw_tokens < 4096
 *                    512 ceil(raw / 512)             raw_tokens < 8192
 *                    1024 ceil(raw / 1024)           otherwise
 *   without chunked context: max_tokens = max(max_tokens, max_isl +
 *   max_batch), so the longest prompt runs in one iteration.
 *
 * param_count is the checkpoint's safetensors element count, so an nvfp4
 * checkpoint's packed weights count half (nvl_serve_checkpoint_params).
 *
 * And the executor's host time a request and an eager launch on a
 * topology's host (nvl_serve_host_us_per_request,
 * nvl_serve_eager_launch_us; docs/serve.md, "The host's CPU"). */
#include <math.h>

#include "nvlemu/serve.h"

#define GIB 1073741824.0

double nvl_serve_checkpoint_params(double total_params, double embed_params,
                                   double bytes_per_param)
{
    double linear = total_params - embed_params;
    double per_linear = 1.0;
    if (bytes_per_param == 0.5)
        per_linear = 0.5 + 1.0 / 16; /* two fp4 a byte, an fp8 scale per 16 */
    return embed_params + linear * per_linear;
}

/* finetune_setting's rounding: x up to the unit of the first tier it is
 * below, and at least `least` (the tiers' own minimum, which only the
 * first tier can fall under). */
typedef struct {
    double below, unit;
} tier_t;

static uint32_t tiered(double x, const tier_t tiers[3], uint32_t least)
{
    int i = 0;
    while (i < 2 && x >= tiers[i].below)
        i++;
    uint32_t v = (uint32_t)(tiers[i].unit * ceil(x / tiers[i].unit));
    return v > least ? v : least;
}

nvl_status_t nvl_serve_trtllm_bench_limits(
    const nvl_serve_trtllm_bench_in_t *in, uint32_t *max_batch_out,
    uint32_t *max_tokens_out)
{
    double heads = in->kv_heads > in->tp ? in->kv_heads : in->tp;
    double per_token_gib = (double)in->layers * heads * in->kv_head_elems *
                           in->kv_bytes_per_elem / GIB;
    double engine_gib = in->checkpoint_params * in->bytes_per_param / GIB;
    uint32_t pp = in->pp > 1 ? in->pp : 1, gpus = in->tp * pp;
    double total_gib = in->gpu_mem_gib * gpus;
    if (total_gib < engine_gib) {
        nvl_report("--scheduler trtllm: trtllm-bench's limits: the model "
                   "needs %.2f GiB, the %u GPUs hold %.2f GiB",
                   engine_gib, gpus, total_gib);
        return NVL_ERR_NOMEM;
    }
    double cache_gib = (total_gib - engine_gib) * in->kv_fraction;
    double requests = cache_gib /
                      (per_token_gib * (in->mean_isl + in->mean_osl));
    if (requests < 1) {
        nvl_report("--scheduler trtllm: trtllm-bench's limits: %.2f GiB of "
                   "KV cache holds %.2f requests of %.0f + %.0f tokens "
                   "(fewer than one)", cache_gib, requests, in->mean_isl,
                   in->mean_osl);
        return NVL_ERR_NOMEM;
    }
    double raw_bs = (requests < 4096 ? requests : 4096) / pp;
    double raw_tok = raw_bs * (1 + in->mean_isl / in->mean_osl);
    if (raw_tok > 32768)
        raw_tok = 32768;
    static const tier_t bs_tiers[3] = {{256, 32}, {1024, 128}, {0, 256}};
    static const tier_t tok_tiers[3] = {{4096, 256}, {8192, 512}, {0, 1024}};
    uint32_t bs = tiered(raw_bs, bs_tiers, 64);
    uint32_t tok = tiered(raw_tok, tok_tiers, 2048);
    if (!in->chunked && tok < in->max_isl + bs)
        tok = in->max_isl + bs;
    *max_batch_out = bs;
    *max_tokens_out = tok;
    return NVL_OK;
}

/* us on the row's reference host, scaled to a host of torch_op_ps */
static double on_host(const nvl_serve_scheduler_t *row, double us,
                      int64_t torch_op_ps)
{
    if (torch_op_ps <= 0 || row->host_ref_torch_op_us <= 0)
        return us;
    /* in picoseconds both, so that the reference host's own value
     * gives the figure unchanged */
    return us * ((double)torch_op_ps / (row->host_ref_torch_op_us * 1e6));
}

double nvl_serve_host_us_per_request(const nvl_serve_scheduler_t *row,
                                     int64_t torch_op_ps)
{
    return on_host(row, row->host_us_per_request, torch_op_ps);
}

double nvl_serve_host_us_per_step(const nvl_serve_scheduler_t *row,
                                  int64_t torch_op_ps)
{
    return on_host(row, row->host_us_per_step, torch_op_ps);
}

double nvl_serve_eager_launch_us(int64_t torch_op_ps,
                                 int64_t launch_overhead_ps)
{
    if (torch_op_ps <= 0)
        return (double)launch_overhead_ps * 1e-6;
    return NVL_EAGER_LAUNCH_PER_TORCH_OP * (double)torch_op_ps * 1e-6;
}
