/* Expert parallelism under attention data-parallelism by allgather and
 * reduce-scatter, as TensorRT-LLM's CUTLASS MoE runs it where it uses no
 * all-to-all (nvl_engine_moe_agrs; docs/serve.md, "The DEP layer's
 * exchange").  TensorRT-LLM's CutlassFusedMoE (tensorrt_llm/_torch/
 * modules/fused_moe/fused_moe_cutlass.py, 1.0) takes the all-to-all only
 * when moe_ep_size > top_k and the GPUs share MNNVL memory; on a DGX
 * (no MNNVL) or with Qwen3's EP 8 = top_k 8, forward_chunk instead
 *
 *   quantises this rank's rows (FP8, or NVFP4 with its scales; a kernel
 *               of its own, agrs_quantize),
 *   allgather   [rows, scales, expert ids, weights] of every rank at its
 *               own count (Qwen3's MoE passes use_dp_padding=False, so
 *               the op gets every rank's count): one ncclAllGather when
 *               the counts are equal (a CUDA-graph step pads every rank to
 *               one graph's rows), else one ncclBroadcast a rank in a
 *               group (cpp/tensorrt_llm/thop/allgatherOp.cpp)
 *   fused_moe   this rank's experts over every gathered row: the pairs of
 *               its experts sorted, expanded (the quantised rows copied),
 *               FC1, activation, FC2, and
 *               finalize writing every gathered row (zero where none of
 *               its experts was chosen)
 *   reducescatter  (reducescatter_or_allreduce) the partial outputs in the
 *               output dtype (bf16), summed, each rank its own rows back:
 *               one ncclReduceScatter for equal counts, else one
 *               ncclReduce a rank in a group (reducescatterOp.cpp).
 *
 * Cost: the allgather moves the S rows of every rank (n P when the counts
 * are equal) of hidden quantised values (NVFP4: 4.5 bits a value with its
 * scales, MX-FP4 4.25, FP8 8) and top_k int32 ids and fp32 weights
 * (agrs_row_bits); the experts' kernels run over the S gathered rows with
 * this rank's share of the job's pairs (moe.c); the reduce-scatter moves
 * S hidden bf16 values.  Unequal counts (a step with a prompt on some
 * rank) time the grouped broadcasts and reduces as NCCL runs a group
 * (nvl_comm_set_time_rooted): one ring Broadcast (Reduce) of the S rows.
 * Data mode moves every rank's rows padded to P, the same sums. */
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "moe_agrs.h"
#include "nvlemu/runtime.h"

/* Data mode: this rank's rows packed as the allgather sends them, P rows
 * of [hidden values, top_k ids, top_k weights]; padded rows choose expert
 * E (held by nobody) with weight 0. */
static float *agrs_pack(const nvl_engine_t *e, const nvl_moe_agrs_t *a,
                        const float *h)
{
    uint64_t hid = e->cfg.hidden;
    uint32_t k = e->cfg.top_k, E = e->cfg.num_experts;
    uint64_t pay = hid + 2 * (uint64_t)k;
    float *send = nvl_engine_moe_alloc(a->P * pay, sizeof *send);
    for (uint64_t t = 0; t < a->P; t++) {
        float *p = send + t * pay;
        for (uint32_t j = 0; j < k; j++) {
            p[hid + j] = (float)(t < a->R ? a->ids[t * k + j] : E);
            p[hid + k + j] = t < a->R ? a->w[t * k + j] : 0.0f;
        }
        if (t < a->R)
            memcpy(p, h + t * hid, hid * sizeof *p);
    }
    return send;
}

/* Data mode: this rank's experts over the N gathered rows (recv), their
 * partial sums into out [N, hidden]. */
static void agrs_compute(const nvl_engine_t *e, uint32_t li,
                         const float *recv, uint64_t N, float *out)
{
    uint64_t hid = e->cfg.hidden;
    uint32_t k = e->cfg.top_k;
    uint64_t pay = hid + 2 * (uint64_t)k;
    uint32_t *ids = nvl_engine_moe_alloc(N * k, sizeof *ids);
    float *w = nvl_engine_moe_alloc(N * k, sizeof *w);
    for (uint64_t r = 0; r < N; r++) {
        const float *p = recv + r * pay;
        memcpy(out + r * hid, p, hid * sizeof *out);
        for (uint32_t j = 0; j < k; j++) {
            ids[r * k + j] = (uint32_t)p[hid + j];
            w[r * k + j] = p[hid + k + j];
        }
    }
    nvl_engine_moe_compute(e, li, out, out, N, ids, w);
    free(w);
    free(ids);
}

/* Bits a gathered value carries on the wire, averaged over a row of
 * hidden activations quantised as the experts' input
 * (nvl_engine_moe_act_bits) and top_k (int32 id, fp32 weight) pairs. */
static double agrs_row_bits(const nvl_engine_t *e, int32_t L)
{
    double hid = (double)e->cfg.hidden, k = (double)e->cfg.top_k;
    return (hid * nvl_engine_moe_act_bits(e, L) + k * 64.0) / (hid + 2.0 * k);
}

/* The quantisation of this rank's R rows before the allgather, a kernel
 * of its own: forward_chunk's fp4_quantize (NVFP4, with its E4M3 scales)
 * or static_quantize_e4m3_per_tensor (FP8) on the layer's input, Qwen3's
 * RMSNorm not fusing it; bf16 rows read, the quantised rows written. */
static void agrs_quantize(nvl_engine_t *e, int32_t L, uint64_t P)
{
    double bits = nvl_engine_moe_act_bits(e, L);
    if (bits >= 16.0 || P == 0)
        return;
    nvl_cost_cfg_t c = nvl_engine_layer_gemm_cost(e, NVL_QCLASS_EXPERTS, L);
    nvl_engine_kernel(e, "moe_quantize", NVL_PART_OTHER, L,
                      nvl_cost_memory(&c, (double)P * (double)e->cfg.hidden *
                                              (2.0 + bits / 8.0)));
}

/* The share of the padded n P rows that the ranks' own counts move, and
 * whether they differ (the grouped broadcasts and reduces). */
static double agrs_share(const nvl_engine_t *e, const nvl_moe_agrs_t *a)
{
    double padded = (double)a->P * (double)nvl_comm_size(e->tp);
    return padded > 0 ? (double)a->S / padded : 1.0;
}

/* Times the next call of e->tp at `bits` a value of the padded buffer
 * scaled to the ranks' own rows, rooted when their counts differ. */
static void agrs_time(nvl_engine_t *e, const nvl_moe_agrs_t *a, double bits)
{
    double share = agrs_share(e, a);
    nvl_comm_set_time_bits(e->tp, bits * share);
    nvl_comm_set_time_rooted(e->tp, share < 1.0);
}

static void agrs_time_end(nvl_engine_t *e)
{
    nvl_comm_set_time_rooted(e->tp, false);
    nvl_comm_set_time_bits(e->tp, 0);
}

/* The allgather of the quantised rows, timed at their wire width (the
 * tensor-parallel group's calls are otherwise timed as bf16). */
static nvl_status_t agrs_gather(nvl_engine_t *e, int32_t L,
                                const nvl_moe_agrs_t *a, const float *send,
                                float *recv, uint64_t count)
{
    nvl_coll_info_t info;
    double bits = agrs_row_bits(e, L);
    int64_t entry = nvl_engine_coll_begin(e, L);
    agrs_time(e, a, bits);
    nvl_status_t st = nvl_allgather(e->tp, send, recv, count, NVL_DT_F32,
                                    &info);
    agrs_time_end(e);
    if (st != NVL_OK)
        return st;
    nvl_engine_coll_done_ep(e, "moe_allgather", L, entry, &info,
                            NVL_EP_XCHG_DISPATCH);
    /* what a ring moves out of this rank: every other rank's rows */
    double pay = (double)e->cfg.hidden + 2.0 * (double)e->cfg.top_k;
    e->cur.dispatch_bytes += (double)(a->S - a->R) * pay * bits / 8.0;
    return NVL_OK;
}

nvl_status_t nvl_engine_moe_agrs(nvl_engine_t *e, uint32_t li,
                                 const nvl_moe_agrs_t *a, float *h)
{
    int32_t L = (int32_t)li;
    uint64_t hid = e->cfg.hidden, n = (uint64_t)nvl_comm_size(e->tp);
    uint64_t pay = hid + 2 * (uint64_t)e->cfg.top_k, N = n * a->P;
    float *send = NULL, *recv = NULL, *part = NULL, *mine = NULL;
    if (e->data) {
        send = agrs_pack(e, a, h);
        recv = nvl_engine_moe_alloc(N * pay, sizeof *recv);
        part = nvl_engine_moe_alloc(N * hid, sizeof *part);
        mine = nvl_engine_moe_alloc(a->P * hid, sizeof *mine);
    }
    agrs_quantize(e, L, a->R);
    nvl_status_t st = agrs_gather(e, L, a, send, recv, a->P * pay);
    if (st == NVL_OK) {
        if (e->data)
            agrs_compute(e, li, recv, N, part);
        nvl_engine_moe_expert_kernels(e, L, a->held_count, a->S,
                                      nvl_engine_moe_act_bits(e, L) < 16.0);
        nvl_coll_info_t info;
        int64_t entry = nvl_engine_coll_begin(e, L);
        agrs_time(e, a, 8.0 * (double)nvl_dtype_size(NVL_DT_BF16));
        st = nvl_reducescatter(e->tp, part, mine, a->P * hid, NVL_DT_F32,
                               NVL_OP_SUM, &info);
        agrs_time_end(e);
        if (st == NVL_OK) {
            nvl_engine_coll_done_ep(e, "moe_reducescatter", L, entry, &info,
                                    NVL_EP_XCHG_COMBINE);
            e->cur.combine_bytes += (double)((a->S - a->R) * hid) *
                                    (double)nvl_dtype_size(NVL_DT_BF16);
        }
    }
    if (st == NVL_OK && e->data)
        memcpy(h, mine, a->R * hid * sizeof *h);
    free(mine);
    free(part);
    free(recv);
    free(send);
    return st;
}
