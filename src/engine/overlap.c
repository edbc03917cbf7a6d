/* A row-parallel GEMM and the allreduce that completes its partial sums
 * (o_proj, and the dense MLP's down_proj), one after the other (--overlap
 * none) or pipelined as async tensor parallelism (--overlap async-tp):
 * PyTorch's micro-pipeline TP (torch.distributed._symmetric_memory,
 * _fused_matmul_reduce_scatter) and FLUX (Chang et al., arXiv 2406.06858)
 * cut the GEMM so that the communication of one piece runs while the next
 * piece computes.
 *
 *   stream   | g1 | g2' | g3' | g4' |          GEMM chunks (columns)
 *   comm          | c1     | c2    | c3  | c4 |  allreduce of each chunk
 *
 * The GEMM is cut into C = NVL_OVERLAP_CHUNKS chunks of its output
 * columns (n / C each; any m, so decode steps too).  Chunk i computes on
 * the GPU's stream; then its columns' allreduce runs on the communication
 * stream, which starts when both the chunk is done and the stream's
 * previous allreduce is (and, being a collective, when every rank's chunk
 * is: the agreement's latest entry).  The stream never waits for the
 * communication until the end, where the residual add needs the whole
 * sum: the rank's clock becomes the later of its own and the
 * communication stream's -- the critical path of the two streams.  What
 * of the communication's time is left after the last GEMM chunk is
 * exposed (the collective part); the rest is hidden.
 *
 * Contention: a GEMM chunk that runs beside a chunk's allreduce shares the
 * GPU with it (nvl_cost_matmul_shared): the allreduce kernel holds one SM
 * per NCCL channel (one CTA each: info.channels), and moves
 *   hbm = 2 S + 2 x 2 (N - 1) / N x S
 * bytes through HBM over its duration (its input read and its output
 * written, and each byte received over NVLink written and read back),
 * bandwidth the GEMM no longer has.  Only the part of the chunk that
 * overlaps the allreduce runs slowed: a chunk of time g alone and g' > g
 * beside it, starting w before the allreduce ends, takes g' if g' <= w,
 * else w + (1 - w / g') g.  The communication is bound by NVLink, not by
 * the SMs or HBM the GEMM leaves it, so it is not slowed.  The chunking's
 * own costs come from the models: C kernel launches and C overheads, C
 * narrower GEMMs (the width term of the matmul model), C collectives each
 * paying its latency.
 *
 * Data mode: the partial sums are computed whole by the caller; each
 * chunk's allreduce moves its columns (packed), reduced in the same member
 * order as one allreduce of the whole buffer, so every bit is the same
 * (groups of up to 8 reduce in member order; larger ones through MPI, as
 * without overlap). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

/* Chunks of a pipelined GEMM: PyTorch's async TP cuts into one chunk per
 * rank, FLUX into tiles; 4 keeps each chunk wide enough for the GPU at
 * TP 72 while giving three chunks of overlap. */
#define NVL_OVERLAP_CHUNKS 4

/* What the last chunk's allreduce holds of the GPU while it runs. */
typedef struct {
    uint32_t sms;
    double hbm_bytes_per_s;
    int64_t end_ps;
} comm_load_t;

/* The GEMM chunk's cost when it starts at start_ps beside the allreduce
 * described by load (see the contention above). */
static nvl_kernel_cost_t chunk_cost(const nvl_cost_cfg_t *cfg, uint64_t m,
                                    uint64_t n, uint64_t k, int64_t start_ps,
                                    const comm_load_t *load)
{
    nvl_kernel_cost_t alone = nvl_cost_matmul(cfg, m, n, k);
    int64_t w = load->end_ps - start_ps;
    if (w <= 0 || alone.time_ps <= 0)
        return alone;
    nvl_kernel_cost_t shared = nvl_cost_matmul_shared(
        cfg, m, n, k, load->sms, load->hbm_bytes_per_s);
    double g = (double)alone.time_ps, gs = (double)shared.time_ps;
    if (gs <= (double)w)
        return shared;
    shared.time_ps = w + (int64_t)((1.0 - (double)w / gs) * g + 0.5);
    return shared;
}

/* Copies columns [c0, c0 + w) of m rows of n floats to or from a packed
 * m x w buffer. */
static void columns(float *full, float *packed, uint64_t m, uint64_t n,
                    uint64_t c0, uint64_t w, bool pack)
{
    for (uint64_t r = 0; r < m; r++) {
        float *a = full + r * n + c0, *b = packed + r * w;
        if (pack)
            memcpy(b, a, w * sizeof *b);
        else
            memcpy(a, b, w * sizeof *a);
    }
}

static nvl_status_t async_tp(nvl_engine_t *e, const char *name,
                             nvl_quant_class_t c, int32_t layer, uint64_t m,
                             uint64_t n, uint64_t k, float *buf)
{
    nvl_cost_cfg_t cfg = nvl_engine_layer_gemm_cost(e, c, layer);
    int chunks = n < NVL_OVERLAP_CHUNKS ? (int)n : NVL_OVERLAP_CHUNKS;
    nvl_vclock_t *clk = nvl_engine_clock(e);
    int members = nvl_comm_size(e->ovl);
    float *packed = NULL;
    if (e->data) {
        packed = malloc(m * (n / (uint64_t)chunks + 1) * sizeof *packed);
        if (packed == NULL) {
            nvl_report("out of memory for an async-TP chunk of %" PRIu64
                       " x %" PRIu64, m, n / (uint64_t)chunks + 1);
            nvl_runtime_abort(1); /* peers wait in the allreduce */
        }
    }
    comm_load_t load = {0, 0, 0};
    int64_t busy = 0;
    nvl_status_t st = NVL_OK;
    for (int i = 0; i < chunks && st == NVL_OK && !e->time_overflow; i++) {
        nvl_range_t cols = nvl_range_split((uint32_t)n, chunks, i);
        nvl_engine_kernel(e, name, NVL_PART_GEMM, layer,
                          chunk_cost(&cfg, m, cols.count, k, clk->now_ps,
                                     &load));
        /* the chunk's columns, once computed, on the communication
         * stream (launched by the host after the chunk) */
        nvl_vclock_wait_until(&e->ovl_clock, clk->now_ps);
        nvl_stream_collective(&e->stream, &e->ovl_clock);
        if (packed != NULL)
            columns(buf, packed, m, n, cols.first, cols.count, true);
        nvl_coll_info_t info;
        st = nvl_allreduce(e->ovl, packed, packed, m * cols.count,
                           NVL_DT_F32, NVL_OP_SUM, &info);
        if (st != NVL_OK)
            break;
        if (packed != NULL)
            columns(buf, packed, m, n, cols.first, cols.count, false);
        nvl_engine_account_comm(e, "allreduce_chunk", layer, &info);
        busy += info.time_ps;
        double S = (double)info.bytes;
        double hbm = 2 * S + 4.0 * (members - 1) / members * S;
        load = (comm_load_t){(uint32_t)info.channels,
                             info.time_ps > 0
                                 ? hbm / ((double)info.time_ps * 1e-12)
                                 : 0,
                             e->ovl_clock.now_ps};
    }
    free(packed);
    if (st != NVL_OK)
        return st;
    /* the residual add waits for the last chunk's sum */
    int64_t exposed = e->ovl_clock.now_ps - clk->now_ps;
    if (exposed > 0 && !e->time_overflow) {
        nvl_engine_account(e, "allreduce_exposed", NVL_PART_COLL, layer,
                           clk->now_ps, exposed, 0, 0);
        nvl_vclock_wait_until(clk, e->ovl_clock.now_ps);
    }
    int64_t hidden = busy - (exposed > 0 ? exposed : 0);
    e->cur.overlap_hidden_ps += hidden > 0 ? hidden : 0;
    return NVL_OK;
}

nvl_status_t nvl_engine_rowpar(nvl_engine_t *e, const char *name,
                               nvl_quant_class_t c, int32_t layer,
                               uint64_t m, uint64_t n, uint64_t k,
                               float *buf)
{
    if (e->ovl == NULL || m == 0 || n < 2) {
        /* the sum is followed by the residual add and the next norm, as
         * after attention: the copy into a symmetric buffer and the
         * fused epilogue are the same as there */
        nvl_engine_matmul(e, name, c, layer, m, n, k);
        return nvl_engine_allreduce_add_norm(e, layer, buf, m * n);
    }
    return async_tp(e, name, c, layer, m, n, k, buf);
}
