/* nvlemu serve: a workload (a JSONL request trace or a generator) served
 * by replicas of a model in virtual time, each replica a tensor-parallel
 * group of ranks running the continuous-batching scheduler of src/serve/
 * over the same engine steps as `run` (docs/serve.md).  Aggregated: the
 * job's ranks form world / --tp replicas, requests assigned round-robin.
 * Disaggregated (--prefill-gpus, --decode-gpus): the prefill pool serves
 * every prompt first, each request's KV then crosses to a decode replica
 * (timed by the collectives' point-to-point model between the GPUs
 * holding each KV head), and the decode pool serves the outputs.
 *
 * Every rank of a replica schedules identically and agrees on each
 * step's end (one MPI_Allreduce per step, none per request); the pools
 * exchange the prefill results in one collective; rank 0 gathers the
 * outcomes once and writes the report, JSON, per-request CSV and trace. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvlemu/runtime.h"
#include "nvlemu/shard.h"
#include "serve.h"

typedef struct {
    nvl_serve_args_t a;
    nvl_engine_opts_t engine; /* made of a.engine by prepare */
    nvl_model_config_t cfg;
    nvl_serve_workload_t w;
    FILE *trace;
    uint32_t tp_all;       /* the job's ranks (a TP of 0: all of them) */
} serve_cmd_t;

static const nvl_opt_name_t preempt_names[] = {
    {"recompute", NVL_PREEMPT_RECOMPUTE}, {"swap", NVL_PREEMPT_SWAP},
    {NULL, 0}};
static const nvl_opt_name_t on_off_names[] = {{"on", 1}, {"off", 0},
                                              {NULL, 0}};

/* CUDA graphs: the rows a step runs once padded to the graph replayed
 * for it (0: no graph, run as scheduled).  vLLM V1 pads a step of at most
 * 512 tokens to its capture sizes 1, 2, 4 and the multiples of 8 (
 * CompilationConfig cudagraph_capture_sizes, piecewise graphs for mixed
 * steps too).  TensorRT-LLM's PyTorch backend replays a graph for a
 * generation-only batch only, padded to the next of cuda_graph_config's
 * batch_sizes with enable_padding (the list TensorRT-LLM's performance
 * overview benchmarks with); a step with a context runs eagerly. */
static uint32_t vllm_graph_rows(uint32_t seqs, uint64_t tokens,
                                uint64_t prefill)
{
    (void)seqs;
    (void)prefill;
    if (tokens > 512)
        return 0;
    if (tokens <= 4)
        return tokens <= 1 ? 1 : tokens <= 2 ? 2 : 4;
    return (uint32_t)((tokens + 7) / 8 * 8);
}

static uint32_t trtllm_graph_rows(uint32_t seqs, uint64_t tokens,
                                  uint64_t prefill)
{
    static const uint32_t sizes[] = {1,   2,   4,    8,    16,   32,  64,
                                     128, 256, 384,  512,  1024, 2048,
                                     4096, 8192};
    (void)tokens;
    if (prefill > 0)
        return 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (sizes[i] >= seqs)
            return sizes[i];
    return 0;
}

/* The schedulers (serve.h), with the defaults each engine ships
 * (docs/serve.md "The schedulers" cites each). */
static const nvl_cli_sched_t schedulers[] = {
    {.name = "vllm", .sched = NVL_SCHED_VLLM, .max_batch = 1024,
     .max_tokens = 8192, .block = 16, .chunked = true,
     .kv_rule = {.fraction = 0.90, .of_free = false},
     .graph_rows = vllm_graph_rows},
    {.name = "trtllm", .sched = NVL_SCHED_TRTLLM, .max_batch = 0,
     .max_tokens = 0, .block = 32, .chunked = false,
     .kv_rule = {.fraction = 0.90, .of_free = true},
     .graph_rows = trtllm_graph_rows},
};
static const nvl_opt_name_t sched_names[] = {{"vllm", 0}, {"trtllm", 1},
                                             {NULL, 0}};

const nvl_cli_sched_t *nvl_cli_serve_sched(int scheduler)
{
    return &schedulers[scheduler];
}

#define AT(field) offsetof(nvl_serve_args_t, field)
#define MAX_TOKENS (1L << 30)
static const nvl_opt_t serve_opts[] = {
    NVL_CLI_OPT_TOPO(nvl_serve_args_t, NVL_CLI_DEFAULT_TOPO, false),
    {.name = "model", .kind = NVL_OPT_STRING, .offset = AT(model),
     .arg = "NAME|DIR", .def = "qwen2.5-72b",
     .doc = "a preset (as `nvlemu run --help` lists) or a Hugging Face "
            "model directory (its config.json; served in timing mode)"},
    /* the workload */
    {.name = "workload", .kind = NVL_OPT_STRING, .offset = AT(workload),
     .arg = "FILE",
     .doc = "a JSONL request trace: {\"arrival_s\": S, \"input_tokens\": "
            "N, \"output_tokens\": M[, \"prefix_id\": ID, "
            "\"prefix_tokens\": P]} a line (instead of the generator)"},
    {.name = "requests", .kind = NVL_OPT_LONG, .offset = AT(requests),
     .arg = "N", .def = "1000", .min = 1, .max = 1 << 24,
     .doc = "generator: requests"},
    {.name = "rate", .kind = NVL_OPT_DOUBLE, .offset = AT(rate),
     .arg = "R", .def = "0", .min_d = 0, .max_d = 1e9,
     .doc = "generator: Poisson arrivals at R requests/s (0 with no "
            "--concurrency: every request at time 0, offline)"},
    {.name = "concurrency", .kind = NVL_OPT_LONG, .offset = AT(concurrency),
     .arg = "N", .def = "0", .min = 0, .max = 1 << 24,
     .doc = "generator: closed loop, N requests in flight (each finishing "
            "one lets the next arrive)"},
    {.name = "isl", .kind = NVL_OPT_CUSTOM, .offset = AT(isl),
     .arg = "N|uniform:LO:HI|normal:M:SD|lognormal:MED:S", .def = "1024",
     .parse = nvl_serve_len_parse, .doc = "generator: input tokens"},
    {.name = "osl", .kind = NVL_OPT_CUSTOM, .offset = AT(osl),
     .arg = "N|uniform:LO:HI|normal:M:SD|lognormal:MED:S", .def = "128",
     .parse = nvl_serve_len_parse, .doc = "generator: output tokens"},
    {.name = "prefix-groups", .kind = NVL_OPT_LONG,
     .offset = AT(prefix_groups), .arg = "G", .def = "0", .min = 0,
     .max = 1 << 24,
     .doc = "generator: each request starts with one of G shared prefixes "
            "(0: none)"},
    {.name = "prefix-len", .kind = NVL_OPT_LONG, .offset = AT(prefix_len),
     .arg = "P", .def = "0", .min = 0, .max = MAX_TOKENS,
     .doc = "generator: tokens of each shared prefix"},
    {.name = "seed", .kind = NVL_OPT_LONG, .offset = AT(seed), .arg = "S",
     .def = "1", .min = 1, .max = MAX_TOKENS,
     .doc = "generator and timing mode's expert routing"},
    /* the policy */
    {.name = "scheduler", .kind = NVL_OPT_ENUM, .offset = AT(scheduler),
     .arg = "vllm|trtllm", .def = "vllm", .names = sched_names,
     .doc = "whose scheduler and defaults: vLLM V1 (KV blocks on demand, "
            "preemption, chunked prefill) or TensorRT-LLM as trtllm-bench "
            "runs it (GUARANTEED_NO_EVICT, whole prompts, trtllm-bench's "
            "limits)"},
    {.name = "max-batch", .kind = NVL_OPT_LONG, .offset = AT(max_batch),
     .arg = "N", .def = "0", .min = 0, .max = 1 << 20,
     .doc = "sequences in one step (0: the scheduler's: vllm 1024, "
            "max_num_seqs; trtllm trtllm-bench's max_batch_size rule)"},
    {.name = "max-tokens-per-step", .kind = NVL_OPT_LONG,
     .offset = AT(max_tokens), .arg = "N", .def = "0", .min = 0,
     .max = MAX_TOKENS,
     .doc = "tokens in one step, prefill chunks and decodes together (0: "
            "the scheduler's: vllm 8192, max_num_batched_tokens; trtllm "
            "trtllm-bench's max_num_tokens rule)"},
    {.name = "chunk", .kind = NVL_OPT_LONG, .offset = AT(chunk),
     .arg = "N", .def = "0", .min = 0, .max = MAX_TOKENS,
     .doc = "a prefill's tokens in one step (0: vllm up to the step's "
            "budget, long_prefill_token_threshold; trtllm whole prompts, "
            "no chunked context)"},
    {.name = "block", .kind = NVL_OPT_LONG, .offset = AT(block),
     .arg = "N", .def = "0", .min = 0, .max = 1 << 16,
     .doc = "KV positions per cache block (0: vllm 16, block_size; "
            "trtllm 32, tokens_per_block)"},
    {.name = "mem-fraction", .kind = NVL_OPT_DOUBLE,
     .offset = AT(mem_fraction), .arg = "F", .def = "0", .min_d = 0,
     .max_d = 1,
     .doc = "memory for weights, activations and KV cache (0: vllm 0.90 "
            "of HBM, gpu_memory_utilization; trtllm 0.90 of what the "
            "weights and activations leave, free_gpu_memory_fraction)"},
    {.name = "preempt", .kind = NVL_OPT_ENUM, .offset = AT(preempt),
     .arg = "recompute|swap", .def = "recompute", .names = preempt_names,
     .doc = "when the KV cache is full: drop the last request's KV and "
            "prefill it again, or swap it to the host's memory over "
            "NVLink-C2C"},
    {.name = "prefix-caching", .kind = NVL_OPT_ENUM,
     .offset = AT(prefix_caching), .arg = "on|off", .def = "on",
     .names = on_off_names,
     .doc = "requests sharing a prefix id reuse its KV blocks (evicted "
            "ones kept in host memory when there is one)"},
    /* the layout */
    {.name = "tp", .kind = NVL_OPT_LONG, .offset = AT(tp), .arg = "T",
     .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS,
     .doc = "aggregated: ranks per replica (0: all; the job runs "
            "ranks / T replicas)"},
    {.name = "replicas", .kind = NVL_OPT_LONG, .offset = AT(replicas),
     .arg = "N", .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS,
     .doc = "aggregated: the system's replicas of --tp GPUs each, requests "
            "round-robin over them, of which the job emulates ranks / T "
            "(the others serve the same share; 0: ranks / T)"},
    {.name = "prefill-gpus", .kind = NVL_OPT_LONG,
     .offset = AT(prefill_gpus), .arg = "N", .def = "0", .min = 0,
     .max = NVL_TOPO_MAX_GPUS,
     .doc = "disaggregated: the first N ranks prefill (with "
            "--decode-gpus; N + M = the ranks)"},
    {.name = "decode-gpus", .kind = NVL_OPT_LONG, .offset = AT(decode_gpus),
     .arg = "M", .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS,
     .doc = "disaggregated: the last M ranks decode"},
    {.name = "prefill-tp", .kind = NVL_OPT_LONG, .offset = AT(prefill_tp),
     .arg = "T", .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS,
     .doc = "disaggregated: ranks per prefill replica (0: all N)"},
    {.name = "decode-tp", .kind = NVL_OPT_LONG, .offset = AT(decode_tp),
     .arg = "T", .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS,
     .doc = "disaggregated: ranks per decode replica (0: all M)"},
    /* the model's kernels, as run */
    NVL_CLI_MODEL_OPTS(nvl_serve_args_t, engine),
    NVL_CLI_MODEL_OPT_ROUTE_SKEW(nvl_serve_args_t, engine),
    {.name = "rope-scaling", .kind = NVL_OPT_CUSTOM, .offset = AT(rope_yarn),
     .arg = "none|yarn:F", .def = "none",
     .parse = nvl_model_rope_scaling_parse,
     .doc = "YaRN rope scaling (as run)"},
    /* results */
    {.name = "slo-ttft", .kind = NVL_OPT_QTY, .offset = AT(slo_ttft_ms),
     .arg = "TIME", .def = "0", .min_d = 0, .max_d = 1e12,
     .qty = NVL_QTY_TIME, .unit = "ms",
     .doc = "goodput: a request meets its SLO with TTFT <= TIME (ms "
            "without a unit: 500, 500ms, 0.5s; 0: no bound)"},
    {.name = "slo-tpot", .kind = NVL_OPT_QTY, .offset = AT(slo_tpot_ms),
     .arg = "TIME", .def = "0", .min_d = 0, .max_d = 1e12,
     .qty = NVL_QTY_TIME, .unit = "ms",
     .doc = "goodput: and TPOT <= TIME (ms without a unit; 0: no bound)"},
    {.name = "gpu-hour-cost", .kind = NVL_OPT_DOUBLE,
     .offset = AT(gpu_hour_cost), .arg = "X", .def = "0", .min_d = 0,
     .max_d = 1e9, .doc = "price of one GPU hour: cost per million tokens"},
    NVL_CLI_OPT_SET(nvl_serve_args_t),
    NVL_CLI_OPT_RANK_PLAYS(nvl_serve_args_t),
    NVL_CLI_OPT_SET_FILE(nvl_serve_args_t),
    NVL_CLI_OPT_JSON(nvl_serve_args_t,
                     "write the summary as JSON ('-': standard output)"),
    {.name = "csv", .kind = NVL_OPT_STRING, .offset = AT(csv), .arg = "FILE",
     .doc = "write one row per request (latencies, cached tokens, "
            "preemptions)"},
    {.name = "trace", .kind = NVL_OPT_STRING, .offset = AT(trace),
     .arg = "FILE",
     .doc = "write a Chrome trace (Perfetto): each replica's steps and "
            "each request's queued / prefill / decode spans"},
    NVL_CLI_OPT_HELP(nvl_serve_args_t),
};
#undef AT
#define USAGE "mpirun -np N nvlemu serve [--model NAME|DIR] [--workload " \
              "FILE | --requests N --rate R|--concurrency C --isl L "      \
              "--osl L] [--tp T | --prefill-gpus N --decode-gpus M] ..."

/* ---- the layout ------------------------------------------------------------ */

/* This rank's pool and replica. */
typedef struct {
    int n_pools, pool, replica; /* replica: global index over the pools */
    int replica_in_pool, rank_in_replica;
    nvl_serve_pool_t pools[2];
} layout_t;

static nvl_status_t plan_layout(const nvl_serve_args_t *a, int size,
                                int rank, layout_t *l)
{
    memset(l, 0, sizeof *l);
    bool disagg = a->prefill_gpus > 0 || a->decode_gpus > 0;
    if (disagg) {
        if (a->tp) {
            nvl_report("--tp is the aggregated layout's; disaggregated "
                       "pools take --prefill-tp and --decode-tp");
            return NVL_ERR_INVALID;
        }
        if (a->prefill_gpus + a->decode_gpus != size ||
            a->prefill_gpus < 1 || a->decode_gpus < 1) {
            nvl_report("--prefill-gpus %ld + --decode-gpus %ld must be the "
                       "job's %d ranks, at least one each", a->prefill_gpus,
                       a->decode_gpus, size);
            return NVL_ERR_INVALID;
        }
        if (a->concurrency > 0) {
            nvl_report("--concurrency (a closed loop) with disaggregated "
                       "pools is not supported: give --rate or --workload");
            return NVL_ERR_INVALID;
        }
        long g[2] = {a->prefill_gpus, a->decode_gpus};
        long t[2] = {a->prefill_tp ? a->prefill_tp : g[0],
                     a->decode_tp ? a->decode_tp : g[1]};
        static const char *names[2] = {"prefill", "decode"};
        const char *opt[2] = {"--prefill-tp", "--decode-tp"};
        int first = 0, rep0 = 0;
        l->n_pools = 2;
        for (int p = 0; p < 2; p++) {
            if (g[p] % t[p] != 0) {
                nvl_report("%s %ld does not divide the pool's %ld GPUs",
                           opt[p], t[p], g[p]);
                return NVL_ERR_INVALID;
            }
            l->pools[p] = (nvl_serve_pool_t){
                .name = names[p], .first_rank = first, .gpus = (int)g[p],
                .tp = (int)t[p], .replicas = (int)(g[p] / t[p]),
                .system_replicas = (int)(g[p] / t[p])};
            if (a->replicas) {
                nvl_report("--replicas is the aggregated layout's");
                return NVL_ERR_INVALID;
            }
            if (rank >= first && rank < first + g[p]) {
                l->pool = p;
                l->replica_in_pool = (rank - first) / (int)t[p];
                l->replica = rep0 + l->replica_in_pool;
                l->rank_in_replica = (rank - first) % (int)t[p];
            }
            first += (int)g[p];
            rep0 += l->pools[p].replicas;
        }
        return NVL_OK;
    }
    if (a->prefill_tp || a->decode_tp) {
        nvl_report("--prefill-tp / --decode-tp need --prefill-gpus and "
                   "--decode-gpus");
        return NVL_ERR_INVALID;
    }
    long tp = a->tp ? a->tp : size;
    if (size % tp != 0) {
        nvl_report("--tp %ld does not divide the job's %d ranks", tp, size);
        return NVL_ERR_INVALID;
    }
    if (a->replicas && a->replicas < size / tp) {
        nvl_report("--replicas %ld: the job's %d ranks already run %ld "
                   "replicas of TP %ld", a->replicas, size, size / tp, tp);
        return NVL_ERR_INVALID;
    }
    l->n_pools = 1;
    l->pools[0] = (nvl_serve_pool_t){
        .name = "aggregated", .gpus = size, .tp = (int)tp,
        .replicas = size / (int)tp,
        .system_replicas = a->replicas ? (int)a->replicas : size / (int)tp};
    l->replica = l->replica_in_pool = rank / (int)tp;
    l->rank_in_replica = rank % (int)tp;
    return NVL_OK;
}

/* ---- one replica's engine and its steps -------------------------------------- */

typedef struct {
    nvl_engine_t *e;
    const nvl_cli_sched_t *sched;  /* its CUDA-graph padding */
    uint64_t *past, *newt;         /* the padded step (pad_cap rows) */
    size_t pad_cap;
    uint64_t pad_rows;             /* dummy rows run, over the steps */
    int64_t part_ps[NVL_PART_COUNT];
} step_ctx_t;

/* Runs the scheduler's step; a step a CUDA graph replays runs its
 * graph's rows, the padding as one-token sequences without a past (their
 * matmul rows are real work, their attention next to none). */
static nvl_status_t engine_step(void *ctx, const nvl_serve_batch_t *b,
                                int64_t *dur_ps_out)
{
    step_ctx_t *c = ctx;
    nvl_pass_stats_t ps;
    int n = b->n;
    const uint64_t *past = b->past, *newt = b->new_tokens;
    uint32_t rows = c->sched->graph_rows((uint32_t)b->n, b->tokens,
                                         b->prefill_tokens);
    if (rows > b->tokens) {
        size_t pad = rows - b->tokens, need = (size_t)b->n + pad;
        if (need > c->pad_cap) {
            uint64_t *p = realloc(c->past, need * sizeof *p);
            uint64_t *t = p ? realloc(c->newt, need * sizeof *t) : NULL;
            if (p != NULL)
                c->past = p;
            if (t == NULL) {
                nvl_report("out of memory padding a step to its CUDA graph");
                return NVL_ERR_NOMEM;
            }
            c->newt = t;
            c->pad_cap = need;
        }
        memcpy(c->past, b->past, (size_t)b->n * sizeof *c->past);
        memcpy(c->newt, b->new_tokens, (size_t)b->n * sizeof *c->newt);
        for (size_t i = (size_t)b->n; i < need; i++) {
            c->past[i] = 0;
            c->newt[i] = 1;
        }
        n = (int)need;
        past = c->past;
        newt = c->newt;
        c->pad_rows += pad;
    }
    nvl_status_t st = nvl_engine_serve_step(c->e, n, past, newt,
                                            b->h2d_bytes, b->d2h_bytes,
                                            b->start_ps, dur_ps_out, &ps);
    if (st == NVL_OK)
        for (int i = 0; i < NVL_PART_COUNT; i++)
            c->part_ps[i] += ps.part_ps[i];
    return st;
}

/* ---- disaggregation: the KV's trip from a prefill to a decode replica ------ */

/* The kv heads member r of a TP group of n holds (the shard plan's: the
 * heads its query heads read; {0, 0} when it holds none). */
static nvl_range_t heads_of(const nvl_model_config_t *cfg, int n, int r)
{
    nvl_shard_t sh;
    if (nvl_shard_plan(cfg, n, r, &sh) != NVL_OK)
        return (nvl_range_t){0, 0};
    return sh.kv_heads;
}

/* The member (of n) that sends kv head h to the receiver's member j: of
 * the members holding h, the (j mod their count)-th. */
static int head_holder(const nvl_model_config_t *cfg, int n, uint32_t h,
                       int j)
{
    int holders = 0;
    for (int r = 0; r < n; r++) {
        nvl_range_t s = heads_of(cfg, n, r);
        holders += h >= s.first && h < s.first + s.count;
    }
    int pick = holders > 0 ? j % holders : 0;
    for (int r = 0; r < n; r++) {
        nvl_range_t s = heads_of(cfg, n, r);
        if (h >= s.first && h < s.first + s.count && pick-- == 0)
            return r;
    }
    return 0;
}

/* heads[i * dt + j]: the kv heads prefill member i (of pt) sends decode
 * member j (of dt); malloc'd. */
static double *head_matrix(const nvl_model_config_t *cfg, int pt, int dt)
{
    double *m = calloc((size_t)pt * (size_t)dt + 1, sizeof *m);
    if (m == NULL) {
        nvl_report("out of memory timing the KV transfers");
        nvl_runtime_abort(1);
    }
    for (int j = 0; j < dt; j++) {
        nvl_range_t hs = heads_of(cfg, dt, j);
        for (uint32_t h = hs.first; h < hs.first + hs.count; h++)
            m[(size_t)head_holder(cfg, pt, h, j) * (size_t)dt + (size_t)j]++;
    }
    return m;
}

/* Time of moving `positions` positions of KV (every layer, head_pos_bytes
 * per head and position) from the prefill replica at world rank p0 (tp
 * pt) to the decode replica at d0 (tp dt), the heads as `heads` assigns
 * them, all pairs at once: the point-to-point group model
 * (nvl_p2p_predict_member_ps, NCCL's p2p path) of the busiest member. */
static int64_t kv_transfer_ps(const nvl_comm_t *world, const double *heads,
                              double head_pos_bytes, double positions,
                              int p0, int pt, int d0, int dt, double *send,
                              double *recv)
{
    int n = nvl_comm_size(world);
    double b = head_pos_bytes * positions;
    int64_t worst = 0;
    for (int side = 0; side < 2; side++)
        for (int m = 0; m < (side ? dt : pt); m++) {
            memset(send, 0, (size_t)n * sizeof *send);
            memset(recv, 0, (size_t)n * sizeof *recv);
            for (int i = 0; i < pt; i++)
                for (int j = 0; j < dt; j++) {
                    double x = heads[(size_t)i * (size_t)dt + (size_t)j] * b;
                    if (side == 0 && i == m)
                        send[d0 + j] += x;
                    if (side == 1 && j == m)
                        recv[p0 + i] += x;
                }
            int64_t t = nvl_p2p_predict_member_ps(
                world, side ? d0 + m : p0 + m, send, recv);
            if (t > worst)
                worst = t;
        }
    return worst;
}

/* ---- results across ranks ------------------------------------------------------ */

enum { O_ARRIVAL, O_SCHED, O_FIRST, O_DONE, O_CACHED, O_PREEMPT, O_REPLICA,
       O_FIELDS };

/* Every rank's outcomes of the requests it served (mine[i]) to `root`
 * (root < 0: every rank), one reduction for all of them. */
static void gather_outcomes(nvl_serve_outcome_t *out, const bool *mine,
                            size_t n, int root)
{
    int64_t *v = malloc((n * O_FIELDS + 1) * sizeof *v);
    int64_t *all = malloc((n * O_FIELDS + 1) * sizeof *all);
    if (v == NULL || all == NULL) {
        nvl_report("out of memory gathering %zu outcomes", n);
        nvl_runtime_abort(1);
    }
    for (size_t i = 0; i < n; i++) {
        int64_t *f = v + i * O_FIELDS;
        const nvl_serve_outcome_t *o = &out[i];
        if (!mine[i]) {
            for (int j = 0; j < O_FIELDS; j++)
                f[j] = INT64_MIN;
            continue;
        }
        f[O_ARRIVAL] = o->arrival_ps;
        f[O_SCHED] = o->scheduled_ps;
        f[O_FIRST] = o->first_token_ps;
        f[O_DONE] = o->done_ps;
        f[O_CACHED] = o->cached_tokens;
        f[O_PREEMPT] = o->preemptions;
        f[O_REPLICA] = o->replica;
    }
    int count = (int)(n * O_FIELDS);
    if (root < 0)
        MPI_Allreduce(v, all, count, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    else
        MPI_Reduce(v, all, count, MPI_INT64_T, MPI_MAX, root,
                   MPI_COMM_WORLD);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (root < 0 || rank == root)
        for (size_t i = 0; i < n; i++) {
            const int64_t *f = all + i * O_FIELDS;
            if (f[O_ARRIVAL] == INT64_MIN)
                continue; /* nobody served it in this phase */
            nvl_serve_outcome_t *o = &out[i];
            o->arrival_ps = f[O_ARRIVAL];
            o->scheduled_ps = f[O_SCHED];
            o->first_token_ps = f[O_FIRST];
            o->done_ps = f[O_DONE];
            o->cached_tokens = (uint32_t)f[O_CACHED];
            o->preemptions = (uint32_t)f[O_PREEMPT];
            o->replica = (uint32_t)f[O_REPLICA];
            o->done = true;
        }
    free(v);
    free(all);
}

/* The replica statistics and part times every rank sends rank 0. */
enum { S_BUSY, S_END, S_STEPS, S_TOKENS, S_PREFILL, S_DECODE, S_SEQS,
       S_PREEMPT, S_HITS, S_HIT_TOKENS, S_PEAK, S_BLOCKS, S_H2D, S_D2H,
       S_KV_GB, S_KV_HOST, S_PARTS, S_FIELDS = S_PARTS + NVL_PART_COUNT };

static void pack_stats(const nvl_serve_replica_stats_t *s,
                       const step_ctx_t *sc, const nvl_engine_kv_room_t *room,
                       double *f)
{
    f[S_BUSY] = (double)s->busy_ps;
    f[S_END] = (double)s->end_ps;
    f[S_STEPS] = (double)s->steps;
    f[S_TOKENS] = (double)s->tokens;
    f[S_PREFILL] = (double)s->prefill_tokens;
    f[S_DECODE] = (double)s->decode_tokens;
    f[S_SEQS] = (double)s->seqs;
    f[S_PREEMPT] = (double)s->preemptions;
    f[S_HITS] = (double)s->prefix_hits;
    f[S_HIT_TOKENS] = (double)s->prefix_hit_tokens;
    f[S_PEAK] = (double)s->peak_blocks;
    f[S_BLOCKS] = (double)s->kv_blocks;
    f[S_H2D] = s->h2d_bytes;
    f[S_D2H] = s->d2h_bytes;
    f[S_KV_GB] = room->positions * room->kv_position_bytes / 1e9;
    f[S_KV_HOST] = room->kv_host_share;
    for (int i = 0; i < NVL_PART_COUNT; i++)
        f[S_PARTS + i] = (double)sc->part_ps[i];
}

static void unpack_pools(const double *all, int size, layout_t *L,
                         nvl_serve_pool_t *pools)
{
    for (int p = 0; p < L->n_pools; p++) {
        nvl_serve_pool_t *pl = &pools[p];
        *pl = L->pools[p];
        pl->stats = calloc((size_t)pl->replicas, sizeof *pl->stats);
        if (pl->stats == NULL) {
            nvl_report("out of memory for the report");
            nvl_runtime_abort(1);
        }
        for (int r = pl->first_rank; r < pl->first_rank + pl->gpus; r++) {
            const double *f = all + (size_t)r * S_FIELDS;
            for (int i = 0; i < NVL_PART_COUNT; i++)
                pl->part_ps[i] += (int64_t)(f[S_PARTS + i] / pl->gpus);
            if ((r - pl->first_rank) % pl->tp != 0)
                continue;
            nvl_serve_replica_stats_t *s =
                &pl->stats[(r - pl->first_rank) / pl->tp];
            s->busy_ps = (int64_t)f[S_BUSY];
            s->end_ps = (int64_t)f[S_END];
            s->steps = (uint64_t)f[S_STEPS];
            s->tokens = (uint64_t)f[S_TOKENS];
            s->prefill_tokens = (uint64_t)f[S_PREFILL];
            s->decode_tokens = (uint64_t)f[S_DECODE];
            s->seqs = (uint64_t)f[S_SEQS];
            s->preemptions = (uint64_t)f[S_PREEMPT];
            s->prefix_hits = (uint64_t)f[S_HITS];
            s->prefix_hit_tokens = (uint64_t)f[S_HIT_TOKENS];
            s->peak_blocks = (uint64_t)f[S_PEAK];
            s->kv_blocks = (uint64_t)f[S_BLOCKS];
            s->h2d_bytes = f[S_H2D];
            s->d2h_bytes = f[S_D2H];
            pl->kv_blocks = f[S_BLOCKS];
            pl->kv_gb_per_gpu = f[S_KV_GB];
            pl->kv_host_share = f[S_KV_HOST];
        }
    }
    (void)size;
}

/* Replica leaders' step records to rank 0 (steps_out[replica]). */
static void gather_steps(const nvl_serve_step_rec_t *mine, size_t n_mine,
                         bool leader, int size, int n_replicas,
                         const int *leader_replica,
                         nvl_serve_step_rec_t **steps_out, size_t *n_out)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int bytes = leader ? (int)(n_mine * sizeof *mine) : 0;
    int *counts = rank == 0 ? calloc((size_t)size, sizeof *counts) : NULL;
    int *displs = rank == 0 ? calloc((size_t)size, sizeof *displs) : NULL;
    MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *buf = NULL;
    if (rank == 0) {
        size_t total = 0;
        for (int r = 0; r < size; r++) {
            displs[r] = (int)total;
            total += (size_t)counts[r];
        }
        buf = malloc(total + 1);
        if (buf == NULL) {
            nvl_report("out of memory gathering the steps");
            nvl_runtime_abort(1);
        }
    }
    MPI_Gatherv(mine, bytes, MPI_BYTE, buf, counts, displs, MPI_BYTE, 0,
                MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            int rep = leader_replica[r];
            if (rep < 0 || rep >= n_replicas)
                continue;
            n_out[rep] = (size_t)counts[r] / sizeof *mine;
            steps_out[rep] = malloc((size_t)counts[r] + 1);
            if (steps_out[rep] == NULL) {
                nvl_report("out of memory gathering the steps");
                nvl_runtime_abort(1);
            }
            memcpy(steps_out[rep], buf + displs[r], (size_t)counts[r]);
        }
    }
    free(buf);
    free(counts);
    free(displs);
}

/* ---- the command ------------------------------------------------------------------ */

typedef struct {
    serve_cmd_t *c;
    const nvl_cli_ctx_t *ctx;
    layout_t L;
    nvl_vclock_t clock;
    nvl_comm_t *world, *group;
    nvl_engine_t *e;
    nvl_engine_kv_room_t room;
    nvl_serve_policy_t policy;
    nvl_serve_capacity_t cap;
    step_ctx_t sc;
    nvl_serve_replica_stats_t stats;
    nvl_serve_step_rec_t *steps;
    size_t n_steps;
} job_t;

/* A copy of w in which every request makes one token (a prefill pool's
 * work). */
static nvl_status_t prefill_only(const nvl_serve_workload_t *w,
                                 nvl_serve_workload_t *p_out)
{
    *p_out = *w;
    p_out->prefix_names = NULL;
    p_out->n_prefixes = 0;
    p_out->reqs = malloc((w->n + 1) * sizeof *p_out->reqs);
    if (p_out->reqs == NULL) {
        nvl_report("out of memory for %zu requests", w->n);
        return NVL_ERR_NOMEM;
    }
    memcpy(p_out->reqs, w->reqs, w->n * sizeof *w->reqs);
    for (size_t i = 0; i < w->n; i++)
        p_out->reqs[i].output_tokens = 1;
    return NVL_OK;
}

/* Engine, memory and policy of this rank's replica; agreed over the job. */
static nvl_status_t setup(job_t *j, const nvl_serve_workload_t *pool_w)
{
    const nvl_serve_args_t *a = &j->c->a;
    nvl_status_t st = nvl_engine_create(&j->c->cfg, &j->c->engine, j->group,
                                        &j->e);
    nvl_runtime_capture_begin();
    st = nvl_runtime_capture_end_on(MPI_COMM_WORLD, st);
    if (st != NVL_OK)
        return st;
    nvl_runtime_capture_begin();
    nvl_engine_kv_rule_t rule = schedulers[a->scheduler].kv_rule;
    rule.fraction = a->mem_fraction;
    st = nvl_engine_serve_memory(j->e, (uint64_t)a->max_tokens,
                                 (uint64_t)a->max_batch, &rule, &j->room);
    if (st == NVL_OK) {
        j->policy = (nvl_serve_policy_t){
            .sched = schedulers[a->scheduler].sched,
            .max_batch = (uint32_t)a->max_batch,
            .max_tokens_per_step = (uint32_t)a->max_tokens,
            .chunk = (uint32_t)(a->chunk ? a->chunk : a->max_tokens),
            .whole_prompts = a->whole_prompts,
            .block_tokens = (uint32_t)a->block,
            .preempt = (nvl_preempt_t)a->preempt,
            .prefix_caching = a->prefix_caching != 0};
        j->cap = (nvl_serve_capacity_t){
            .kv_blocks = (uint64_t)(j->room.positions / (double)a->block),
            .kv_block_bytes = (double)a->block * j->room.kv_position_bytes *
                              (1 - j->room.kv_host_share),
            .host_bytes = j->room.host_free_bytes,
            .max_context = nvl_model_max_context(&j->c->cfg)};
        if (a->preempt == NVL_PREEMPT_SWAP && j->cap.host_bytes <= 0) {
            nvl_report("--preempt swap: topology '%s' has no host memory "
                       "left to swap to (no NVLink-C2C host tier, or "
                       "--kv-host took it all)", j->ctx->topo->name);
            st = NVL_ERR_INVALID;
        } else
            st = nvl_serve_check(pool_w, &j->policy, &j->cap);
    }
    return nvl_runtime_capture_end_on(MPI_COMM_WORLD, st);
}

/* The requests (indices of w) replica r of a pool of R serves, in
 * arrival order: round-robin by request number. */
static uint32_t *assign(const nvl_serve_workload_t *w, int r, int R,
                        size_t *n_out)
{
    uint32_t *which = malloc((w->n / (size_t)R + 2) * sizeof *which);
    if (which == NULL) {
        nvl_report("out of memory for %zu requests", w->n);
        nvl_runtime_abort(1);
    }
    size_t n = 0;
    for (size_t i = (size_t)r; i < w->n; i += (size_t)R)
        which[n++] = (uint32_t)i;
    *n_out = n;
    return which;
}

/* Sorting request numbers by a time (qsort has no context argument). */
static const int64_t *ready_key;
static int cmp_ready_idx(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if (ready_key[a] != ready_key[b])
        return ready_key[a] < ready_key[b] ? -1 : 1;
    return (a > b) - (a < b);
}

/* Disaggregated: when each request's KV reaches its decode replica. */
static void kv_arrivals(job_t *j, const nvl_serve_outcome_t *pre,
                        int64_t *ready, double *transfer_ms_mean,
                        double *transfer_gb)
{
    const nvl_serve_workload_t *w = &j->c->w;
    const nvl_model_config_t *cfg = &j->c->cfg;
    const nvl_serve_pool_t *P = &j->L.pools[0], *D = &j->L.pools[1];
    int n = nvl_comm_size(j->world);
    double *send = calloc((size_t)n, sizeof *send);
    double *recv = calloc((size_t)n, sizeof *recv);
    uint32_t *order = malloc((w->n + 1) * sizeof *order);
    int64_t *out_free = calloc((size_t)P->replicas, sizeof *out_free);
    int64_t *in_free = calloc((size_t)D->replicas, sizeof *in_free);
    int64_t *done = malloc((w->n + 1) * sizeof *done);
    if (!send || !recv || !order || !out_free || !in_free || !done) {
        nvl_report("out of memory timing the KV transfers");
        nvl_runtime_abort(1);
    }
    /* one kv head's bytes per position, every layer */
    double head_pos = 2.0 * cfg->head_dim * (double)nvl_engine_layers(j->e) *
                      nvl_wdtype_bytes(j->c->a.engine.kv_dtype);
    double *heads = head_matrix(cfg, P->tp, D->tp);
    for (size_t i = 0; i < w->n; i++) {
        order[i] = (uint32_t)i;
        done[i] = pre[i].first_token_ps;
    }
    ready_key = done;
    qsort(order, w->n, sizeof *order, cmp_ready_idx);
    double sum_ms = 0, bytes = 0;
    for (size_t k = 0; k < w->n; k++) {
        uint32_t i = order[k];
        int src = (int)(i % (uint32_t)P->replicas);
        int dst = (int)(i % (uint32_t)D->replicas);
        int64_t start = done[i];
        if (out_free[src] > start)
            start = out_free[src];
        if (in_free[dst] > start)
            start = in_free[dst];
        int64_t t = kv_transfer_ps(j->world, heads, head_pos,
                                   (double)w->reqs[i].input_tokens,
                                   P->first_rank + src * P->tp, P->tp,
                                   D->first_rank + dst * D->tp, D->tp, send,
                                   recv);
        out_free[src] = in_free[dst] = ready[i] = start + t;
        sum_ms += (double)(ready[i] - done[i]) / 1e9;
        bytes += head_pos * cfg->kv_heads * w->reqs[i].input_tokens;
    }
    *transfer_ms_mean = w->n ? sum_ms / (double)w->n : 0;
    *transfer_gb = bytes / 1e9;
    free(send);
    free(recv);
    free(order);
    free(out_free);
    free(in_free);
    free(done);
    free(heads);
}

static nvl_status_t run_pool(job_t *j, const nvl_serve_workload_t *pw,
                             const uint32_t *which, size_t n_which,
                             bool prefilled, nvl_serve_outcome_t *out)
{
    bool want_steps = j->c->a.trace != NULL;
    return nvl_serve_run(pw, which, n_which, (uint32_t)j->L.replica,
                         &j->policy, &j->cap, prefilled, 0, engine_step,
                         &j->sc, out, &j->stats,
                         want_steps ? &j->steps : NULL, &j->n_steps);
}

static nvl_status_t serve(serve_cmd_t *c, const nvl_cli_ctx_t *ctx)
{
    const nvl_serve_args_t *a = &c->a;
    const nvl_serve_workload_t *w = &c->w;
    int size = ctx->rt->size, rank = ctx->rt->rank;
    job_t j = {.c = c, .ctx = ctx};
    nvl_status_t st = plan_layout(a, size, rank, &j.L);
    if (st != NVL_OK)
        return st;
    if ((st = nvl_comm_create(MPI_COMM_WORLD, ctx->topo, &j.clock,
                              &j.world)) != NVL_OK)
        return st;
    if ((st = nvl_comm_split(j.world, j.L.replica, rank, &j.group)) !=
        NVL_OK) {
        nvl_comm_destroy(j.world);
        return st;
    }
    j.sc.e = NULL;
    j.sc.sched = &schedulers[a->scheduler];
    bool disagg = j.L.n_pools == 2;
    nvl_serve_workload_t pre_w = {0};
    if (disagg && (st = prefill_only(w, &pre_w)) != NVL_OK)
        nvl_runtime_abort(1);
    const nvl_serve_workload_t *my_w =
        disagg && j.L.pool == 0 ? &pre_w : w;
    double t0 = MPI_Wtime();
    st = setup(&j, my_w);
    j.sc.e = j.e;
    nvl_serve_outcome_t *out = calloc(w->n + 1, sizeof *out);
    bool *mine = calloc(w->n + 1, sizeof *mine);
    if (out == NULL || mine == NULL) {
        nvl_report("out of memory for %zu requests", w->n);
        nvl_runtime_abort(1);
    }
    double xfer_ms = 0, xfer_gb = 0;
    const nvl_serve_pool_t *pool = &j.L.pools[j.L.pool];
    if (st == NVL_OK) {
        /* phase 1: the aggregated replicas, or the prefill pool */
        size_t nw = 0;
        uint32_t *which = NULL;
        nvl_serve_workload_t local = *my_w;
        if (!disagg || j.L.pool == 0) {
            uint32_t R = (uint32_t)pool->system_replicas;
            which = assign(my_w, j.L.replica_in_pool, (int)R, &nw);
            if (w->concurrency > 0) /* the closed loop's share */
                local.concurrency =
                    w->concurrency / R +
                    ((uint32_t)j.L.replica_in_pool < w->concurrency % R);
            if (nw > 0 && local.concurrency == 0 && w->concurrency > 0)
                local.concurrency = 1;
            st = run_pool(&j, &local, which, nw, false, out);
            for (size_t k = 0; k < nw; k++)
                mine[which[k]] = true;
        }
        free(which);
        /* a failed replica reports once; every rank stops here */
        nvl_runtime_capture_begin();
        st = nvl_runtime_capture_end_on(MPI_COMM_WORLD, st);
    }
    if (st == NVL_OK && disagg) {
        /* the prefill outcomes to every rank, the KV's trips, phase 2 */
        gather_outcomes(out, mine, w->n, -1);
        int64_t *ready = malloc((w->n + 1) * sizeof *ready);
        if (ready == NULL) {
            nvl_report("out of memory for %zu requests", w->n);
            nvl_runtime_abort(1);
        }
        kv_arrivals(&j, out, ready, &xfer_ms, &xfer_gb);
        memset(mine, 0, w->n * sizeof *mine);
        if (j.L.pool == 1) {
            nvl_serve_workload_t dw = *w;
            dw.reqs = malloc((w->n + 1) * sizeof *dw.reqs);
            size_t nw = 0;
            uint32_t *which = malloc((w->n + 1) * sizeof *which);
            if (dw.reqs == NULL || which == NULL) {
                nvl_report("out of memory for %zu requests", w->n);
                nvl_runtime_abort(1);
            }
            memcpy(dw.reqs, w->reqs, w->n * sizeof *w->reqs);
            for (size_t i = 0; i < w->n; i++) {
                dw.reqs[i].arrival_ps = ready[i];
                if (i % (size_t)pool->replicas ==
                        (size_t)j.L.replica_in_pool &&
                    w->reqs[i].output_tokens > 1)
                    which[nw++] = (uint32_t)i;
            }
            ready_key = ready;
            qsort(which, nw, sizeof *which, cmp_ready_idx);
            st = run_pool(&j, &dw, which, nw, true, out);
            for (size_t k = 0; k < nw; k++)
                mine[which[k]] = true;
            free(which);
            free(dw.reqs);
        }
        free(ready);
        nvl_runtime_capture_begin();
        st = nvl_runtime_capture_end_on(MPI_COMM_WORLD, st);
    }
    if (st == NVL_OK) {
        gather_outcomes(out, mine, w->n, 0);
        double f[S_FIELDS];
        pack_stats(&j.stats, &j.sc, &j.room, f);
        double *all = rank == 0 ? malloc((size_t)size * sizeof f) : NULL;
        MPI_Gather(f, S_FIELDS, MPI_DOUBLE, all, S_FIELDS, MPI_DOUBLE, 0,
                   MPI_COMM_WORLD);
        int n_rep = 0;
        for (int p = 0; p < j.L.n_pools; p++)
            n_rep += j.L.pools[p].replicas;
        nvl_serve_step_rec_t **steps = calloc((size_t)n_rep + 1,
                                              sizeof *steps);
        size_t *n_steps = calloc((size_t)n_rep + 1, sizeof *n_steps);
        int *leader_rep = malloc(((size_t)size + 1) * sizeof *leader_rep);
        if (!steps || !n_steps || !leader_rep || (rank == 0 && !all)) {
            nvl_report("out of memory for the report");
            nvl_runtime_abort(1);
        }
        for (int r = 0, rep0 = 0, p = 0; p < j.L.n_pools; p++) {
            const nvl_serve_pool_t *pl = &j.L.pools[p];
            for (int k = 0; k < pl->gpus; k++, r++)
                leader_rep[r] = k % pl->tp == 0 ? rep0 + k / pl->tp : -1;
            rep0 += pl->replicas;
        }
        if (a->trace != NULL)
            gather_steps(j.steps, j.n_steps, j.L.rank_in_replica == 0, size,
                         n_rep, leader_rep, steps, n_steps);
        double wall = MPI_Wtime() - t0;
        if (rank == 0) {
            nvl_serve_result_t r = {.args = a, .cfg = &c->cfg,
                                    .topo = ctx->topo, .w = w, .out = out,
                                    .n_pools = j.L.n_pools,
                                    .kv_transfer_ms_mean = xfer_ms,
                                    .kv_transfer_gb = xfer_gb,
                                    .wall_s = wall,
                                    .validation = ctx->validation};
            unpack_pools(all, size, &j.L, r.pools);
            /* --replicas: the emulated replicas' requests only */
            nvl_serve_workload_t sw = *w;
            nvl_serve_outcome_t *so = out;
            if (pool->system_replicas > pool->replicas) {
                sw.reqs = malloc((w->n + 1) * sizeof *sw.reqs);
                so = malloc((w->n + 1) * sizeof *so);
                if (sw.reqs == NULL || so == NULL) {
                    nvl_report("out of memory for the report");
                    nvl_runtime_abort(1);
                }
                sw.n = 0;
                for (size_t i = 0; i < w->n; i++)
                    if (i % (size_t)pool->system_replicas <
                        (size_t)pool->replicas) {
                        so[sw.n] = out[i];
                        sw.reqs[sw.n++] = w->reqs[i];
                    }
                r.w = &sw;
                r.out = so;
            }
            nvl_serve_summarize(r.w, r.out, size, a->slo_ttft_ms,
                                a->slo_tpot_ms, a->gpu_hour_cost, &r.sum);
            bool json_out = a->common.json != NULL &&
                            strcmp(a->common.json, "-") == 0;
            nvl_serve_report_text(&r, json_out ? stderr : stdout);
            if (a->common.json != NULL)
                st = nvl_serve_report_json(&r, a->common.json);
            if (st == NVL_OK && a->csv != NULL)
                st = nvl_serve_report_csv(&r, a->csv);
            if (st == NVL_OK && c->trace != NULL)
                st = nvl_serve_trace_write(&r, steps, n_steps, c->trace);
            for (int p = 0; p < r.n_pools; p++)
                free(r.pools[p].stats);
            if (so != out) {
                free(sw.reqs);
                free(so);
            }
        }
        for (int i = 0; i < n_rep; i++)
            free(steps[i]);
        free(steps);
        free(n_steps);
        free(leader_rep);
        free(all);
    }
    free(j.steps);
    free(j.sc.past);
    free(j.sc.newt);
    free(out);
    free(mine);
    free(pre_w.reqs);
    if (j.e != NULL)
        nvl_engine_free(j.e);
    nvl_comm_destroy(j.group);
    nvl_comm_destroy(j.world);
    return st;
}

/* The scheduler's defaults for the knobs left 0; trtllm-bench's limits
 * from the workload's mean and longest lengths. */
static nvl_status_t resolve_policy(serve_cmd_t *c, const nvl_topo_t *topo)
{
    nvl_serve_args_t *a = &c->a;
    const nvl_cli_sched_t *row = &schedulers[a->scheduler];
    if (a->block == 0)
        a->block = row->block;
    if (a->mem_fraction == 0)
        a->mem_fraction = row->kv_rule.fraction;
    a->whole_prompts = a->chunk == 0 && !row->chunked;
    if (a->max_batch == 0 && row->max_batch)
        a->max_batch = row->max_batch;
    if (a->max_tokens == 0 && row->max_tokens)
        a->max_tokens = row->max_tokens;
    if (a->max_batch && a->max_tokens)
        return NVL_OK;
    const nvl_model_config_t *m = &c->cfg;
    double isl = 0, osl = 0;
    uint32_t max_isl = 0;
    for (size_t i = 0; i < c->w.n; i++) {
        isl += c->w.reqs[i].input_tokens;
        osl += c->w.reqs[i].output_tokens;
        if (c->w.reqs[i].input_tokens > max_isl)
            max_isl = c->w.reqs[i].input_tokens;
    }
    /* trtllm-bench's BYTES_PER_ELEM (nvfp4 0.5: its scales are counted
     * in the element count), not nvl_wdtype_bytes's */
    double per = a->engine.dtype == NVL_WDT_FP4 ? 0.5
                 : a->engine.dtype == NVL_WDT_FP8 ? 1.0 : 2.0;
    double embed = (double)m->vocab * m->hidden *
                   (m->tied_embeddings ? 1 : 2);
    /* aggregated: the replica's TP; disaggregated: the decode pool's,
     * whose KV lives longest */
    long tp = a->tp ? a->tp
              : a->decode_gpus ? (a->decode_tp ? a->decode_tp
                                               : a->decode_gpus)
                               : 0;
    nvl_serve_trtllm_bench_in_t in = {
        .checkpoint_params = nvl_serve_checkpoint_params(
            (double)nvl_model_param_count(m), embed, per),
        .bytes_per_param = per,
        .kv_bytes_per_elem = nvl_wdtype_bytes(a->engine.kv_dtype),
        .layers = m->layers, .kv_heads = m->kv_heads,
        .head_dim = m->head_dim, .tp = (uint32_t)(tp ? tp : c->tp_all),
        .gpu_mem_gib = (double)topo->gpu.hbm_bytes / 1073741824.0,
        .kv_fraction = row->kv_rule.fraction,
        .mean_isl = isl / (double)c->w.n, .mean_osl = osl / (double)c->w.n,
        .max_isl = max_isl, .chunked = !a->whole_prompts};
    uint32_t bs, tok;
    nvl_status_t st = nvl_serve_trtllm_bench_limits(&in, &bs, &tok);
    if (st != NVL_OK)
        return st;
    if (a->max_batch == 0)
        a->max_batch = bs;
    if (a->max_tokens == 0)
        a->max_tokens = tok;
    return NVL_OK;
}

static nvl_status_t prepare(void *args, const nvl_cli_ctx_t *ctx)
{
    serve_cmd_t *c = args;
    nvl_serve_args_t *a = &c->a;
    if (nvl_cli_model_opts_engine(&a->engine, ctx->topo, &c->engine) !=
        NVL_OK)
        return NVL_ERR_INVALID;
    c->engine.mode = NVL_MODE_TIMING;
    c->engine.seed = (uint64_t)a->seed;
    if (a->rate > 0 && a->concurrency > 0) {
        nvl_report("--rate (open loop) and --concurrency (closed loop) "
                   "exclude each other");
        return NVL_ERR_INVALID;
    }
    if ((a->prefix_groups > 0) != (a->prefix_len > 0)) {
        nvl_report("--prefix-groups and --prefix-len go together");
        return NVL_ERR_INVALID;
    }
    layout_t L;
    if (plan_layout(a, ctx->rt->size, ctx->rt->rank, &L) != NVL_OK)
        return NVL_ERR_INVALID;
    bool preset = nvl_model_is_preset(a->model);
    nvl_status_t st = preset ? nvl_model_preset(a->model, &c->cfg)
                             : nvl_model_config_load(a->model, &c->cfg);
    if (st != NVL_OK)
        return st;
    if (a->rope_yarn > 0 &&
        nvl_model_set_yarn(&c->cfg, a->rope_yarn) != NVL_OK)
        return NVL_ERR_INVALID;
    if (a->workload != NULL)
        st = nvl_serve_trace_load(a->workload, &c->w);
    else {
        nvl_serve_gen_t g = {.requests = (uint32_t)a->requests,
                             .rate_per_s = a->rate,
                             .concurrency = (uint32_t)a->concurrency,
                             .isl = a->isl, .osl = a->osl,
                             .prefix_groups = (uint32_t)a->prefix_groups,
                             .prefix_tokens = (uint32_t)a->prefix_len,
                             .seed = (uint64_t)a->seed};
        st = nvl_serve_generate(&g, &c->w);
    }
    if (st != NVL_OK)
        return st;
    c->tp_all = (uint32_t)ctx->rt->size;
    if ((st = resolve_policy(c, ctx->topo)) != NVL_OK)
        return st;
    if (ctx->rt->rank == 0) {
        if (nvl_cli_check_writable("--json", a->common.json) != NVL_OK ||
            nvl_cli_check_writable("--csv", a->csv) != NVL_OK)
            return NVL_ERR_IO;
        if (a->trace != NULL && (c->trace = fopen(a->trace, "w")) == NULL) {
            nvl_report("--trace %s: cannot open for writing: %s", a->trace,
                       strerror(errno));
            return NVL_ERR_IO;
        }
    }
    return NVL_OK;
}

static nvl_status_t body(void *args, const nvl_cli_ctx_t *ctx)
{
    return serve(args, ctx);
}

static void cleanup(void *args)
{
    serve_cmd_t *c = args;
    if (c->trace != NULL)
        fclose(c->trace);
    nvl_serve_workload_free(&c->w);
}

const nvl_cli_command_t nvl_cli_serve_command = {
    .args_size = sizeof(serve_cmd_t),
    .opts = NVL_CLI_OPTS("serve", serve_opts, USAGE, 0),
    .common_offset = offsetof(serve_cmd_t, a.common),
    .check_ranks = true,
    .world_is_job = true,
    .provenance = true,
    .prepare = prepare,
    .body = body,
    .cleanup = cleanup,
};

int nvl_cmd_serve(int argc, char **argv)
{
    serve_cmd_t cmd = {0};
    return nvl_cli_command_run(&nvl_cli_serve_command, &cmd, argc, argv);
}
