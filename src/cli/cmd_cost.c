/* nvlemu cost: the cost model of one operation on one GPU of a topology
 * (a matmul, an attention kernel, a memory-bound kernel, a copy): its time,
 * its work, the rate it reaches and the term of the formula that limits
 * it.  The times are the cost model's own (include/nvlemu/cost.h); the
 * limiting term is found by asking the same functions again on copies of
 * the topology with one resource twice as fast, or with every fixed cost
 * zero, so no formula is written twice.  Under mpirun every rank checks
 * its input and rank 0 prints. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "model_opts.h"
#include "nvlemu/cost.h"
#include "nvlemu/engine.h"
#include "nvlemu/json.h"
#include "nvlemu/units.h"
#include "nvlemu/vclock.h"

typedef struct {
    nvl_cli_common_t common;
    long gpu, peer;
    /* op-specific options; NULL or 0 when not given */
    const char *dtype, *library, *kernel, *kv_dtype, *path;
    long batch, q_len, ctx, heads, kv_heads, head_dim;
    /* from the arguments (check) */
    const struct op *op;
    double size[3]; /* gemm: m, n, k; elementwise, copy: bytes */
    nvl_wdtype_t wdtype, kv_wdtype;
    nvl_gemm_lib_t gemm_lib;
    nvl_attn_impl_t attn;
    bool attn_given;
    nvl_copy_path_t copy_path;
    /* from the topology (prepare) */
    nvl_cost_cfg_t cfg;
    uint64_t *new_tokens, *past; /* attention's, one per sequence */
} cost_args_t;

/* Each operation's usage, for its row and the command's. */
#define GEMM_USAGE                                                          \
    "gemm M N K [--dtype bf16|fp8|fp4] "                                    \
    "[--library cublaslt|cutlass|deepgemm|trtllm-gen]"
#define ATTENTION_USAGE                                                     \
    "attention --batch B [--q-len Q] [--ctx C] --heads H --kv-heads K "     \
    "--head-dim D [--kernel fa3|fa4|sdpa] [--kv-dtype bf16|fp8]"
#define ELEMENTWISE_USAGE "elementwise BYTES"
#define COPY_USAGE "copy BYTES --path hbm|nvlink|c2c-h2d|c2c-d2h|host [--peer N]"
#define USAGE                                                               \
    "[mpirun -np N] nvlemu cost [--topo FILE] [--gpu N] [--json FILE] "     \
    "[--set K=V]... OP, where OP is one of: " GEMM_USAGE "; "                \
    ATTENTION_USAGE "; " ELEMENTWISE_USAGE "; " COPY_USAGE

#define AT(field) offsetof(cost_args_t, field)
#define OP_LONG(name_, field, doc_)                                         \
    {.name = name_, .kind = NVL_OPT_LONG, .offset = AT(field), .arg = "N",  \
     .doc = doc_, .min = 1, .max = 1L << 30}

static const nvl_opt_t cost_opts[] = {
    NVL_CLI_OPT_TOPO(cost_args_t, NVL_CLI_DEFAULT_TOPO, false),
    {.name = "gpu", .kind = NVL_OPT_LONG, .offset = AT(gpu), .arg = "N",
     .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS - 1,
     .doc = "the GPU of the topology that runs the operation (its what-if "
            "overrides apply)"},
    NVL_CLI_OPT_JSON(cost_args_t, "write the result as JSON to FILE ('-': "
                                  "standard output) instead"),
    NVL_CLI_OPT_SET(cost_args_t),
    NVL_CLI_OPT_RANK_PLAYS(cost_args_t),
    NVL_CLI_OPT_SET_FILE(cost_args_t),
    {.name = "dtype", .kind = NVL_OPT_STRING, .offset = AT(dtype),
     .arg = "bf16|fp8|fp4", .doc = "gemm: weight and input type (default "
                                   "bf16)"},
    {.name = "library", .kind = NVL_OPT_STRING, .offset = AT(library),
     .arg = "cublaslt|cutlass|deepgemm|trtllm-gen",
     .doc = "gemm: the GEMM library (default: the one nvlemu run's fused "
            "stack calls for --dtype; docs/cost-model.md \"GEMM "
            "libraries\")"},
    OP_LONG("batch", batch, "attention: sequences in the kernel"),
    OP_LONG("q-len", q_len, "attention: new (query) tokens per sequence "
                            "(default 1: a decode step)"),
    {.name = "ctx", .kind = NVL_OPT_LONG, .offset = AT(ctx), .arg = "C",
     .min = 0, .max = 1L << 30,
     .doc = "attention: positions already in each sequence's KV cache "
            "(default 0)"},
    OP_LONG("heads", heads, "attention: query heads on this GPU"),
    OP_LONG("kv-heads", kv_heads, "attention: key/value heads on this GPU "
                                  "(divides --heads)"),
    OP_LONG("head-dim", head_dim, "attention: head dimension"),
    {.name = "kernel", .kind = NVL_OPT_STRING, .offset = AT(kernel),
     .arg = "fa3|fa4|sdpa", .doc = "attention: FlashAttention 3 or 4, or "
                                   "PyTorch's SDPA (default: fa4 on GPUs "
                                   "with FP4 units, else fa3, as nvlemu "
                                   "run's fused stack)"},
    {.name = "kv-dtype", .kind = NVL_OPT_STRING, .offset = AT(kv_dtype),
     .arg = "bf16|fp8", .doc = "attention: KV cache type (default bf16)"},
    {.name = "path", .kind = NVL_OPT_STRING, .offset = AT(path),
     .arg = "hbm|nvlink|c2c-h2d|c2c-d2h|host",
     .doc = "copy: device to device, to a peer GPU over NVLink, host to "
            "device or device to host over NVLink-C2C, host to host"},
    {.name = "peer", .kind = NVL_OPT_LONG, .offset = AT(peer), .arg = "N",
     .def = "-1", .min = -1, .max = NVL_TOPO_MAX_GPUS - 1,
     .doc = "copy --path nvlink: the GPU copied to (-1: the next GPU of "
            "--gpu's NVLink domain)"},
    NVL_CLI_OPT_HELP(cost_args_t),
};

/* ---- the operations ------------------------------------------------------
 * One row each: its name, its arguments, the options that are its own,
 * how it reads them, its cost, its inputs for the report and its rate. */

typedef struct op {
    const char *name;
    const char *usage;   /* "gemm M N K [--dtype ...]" */
    const char *args;    /* the positional arguments, as usage shows them */
    int n_args;
    const char *options; /* its own options, "--a --b" ("" for none) */
    nvl_status_t (*read)(cost_args_t *a);
    nvl_kernel_cost_t (*cost)(const cost_args_t *a, const nvl_cost_cfg_t *cfg);
    /* "m=8192 n=8192 k=8192 dtype=bf16" */
    void (*describe)(const cost_args_t *a, const nvl_cost_cfg_t *cfg,
                     char *buf, size_t len);
    void (*inputs_json)(const cost_args_t *a, const nvl_cost_cfg_t *cfg,
                        json_t *inputs);
    bool flops_rate; /* the rate that matters: TFLOP/s, else GB/s */
} op_t;

static nvl_status_t read_gemm(cost_args_t *a)
{
    if (a->dtype != NULL &&
        nvl_wdtype_parse("--dtype", a->dtype, &a->wdtype) != NVL_OK)
        return NVL_ERR_INVALID;
    return a->library == NULL
               ? NVL_OK
               : nvl_gemm_lib_parse("--library", a->library, &a->gemm_lib);
}

/* The library the GEMM runs in (the stack's choice resolved). */
static const char *gemm_library(const nvl_cost_cfg_t *cfg)
{
    double rel;
    return nvl_gemm_lib_name(nvl_gemm_lib_choose(cfg, cfg->weight_dtype, &rel));
}

static nvl_kernel_cost_t cost_gemm(const cost_args_t *a,
                                   const nvl_cost_cfg_t *cfg)
{
    return nvl_cost_matmul(cfg, (uint64_t)a->size[0], (uint64_t)a->size[1],
                           (uint64_t)a->size[2]);
}

static void describe_gemm(const cost_args_t *a, const nvl_cost_cfg_t *cfg,
                          char *buf, size_t len)
{
    snprintf(buf, len, "m=%.0f n=%.0f k=%.0f dtype=%s library=%s",
             a->size[0], a->size[1], a->size[2],
             nvl_wdtype_name(cfg->weight_dtype), gemm_library(cfg));
}

static void json_gemm_op(const cost_args_t *a, const nvl_cost_cfg_t *cfg,
                      json_t *in)
{
    static const char *const dims[] = {"m", "n", "k"};
    for (int i = 0; i < 3; i++)
        json_object_set_new(in, dims[i], json_integer((json_int_t)a->size[i]));
    json_object_set_new(in, "dtype",
                        json_string(nvl_wdtype_name(cfg->weight_dtype)));
    json_object_set_new(in, "library", json_string(gemm_library(cfg)));
}

static nvl_status_t read_attention(cost_args_t *a)
{
    static const struct {
        const char *label;
        size_t offset;
    } needed[] = {{"--batch", AT(batch)}, {"--heads", AT(heads)},
                  {"--kv-heads", AT(kv_heads)}, {"--head-dim", AT(head_dim)}};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        if (*(const long *)((const char *)a + needed[i].offset) == 0) {
            nvl_report("cost attention: %s is required (usage: nvlemu "
                       "cost %s)", needed[i].label, ATTENTION_USAGE);
            return NVL_ERR_INVALID;
        }
    if (a->heads % a->kv_heads != 0) {
        nvl_report("cost attention: --kv-heads %ld does not divide --heads "
                   "%ld", a->kv_heads, a->heads);
        return NVL_ERR_INVALID;
    }
    if (a->q_len == 0)
        a->q_len = 1;
    if (a->kernel != NULL) {
        if (nvl_attn_parse("--kernel", a->kernel, &a->attn) != NVL_OK)
            return NVL_ERR_INVALID;
        a->attn_given = true;
    }
    if (a->kv_dtype != NULL) {
        if (nvl_cli_parse_kv_dtype("--kv-dtype", a->kv_dtype,
                                   &a->kv_wdtype) != NVL_OK)
            return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

static nvl_kernel_cost_t cost_attention(const cost_args_t *a,
                                        const nvl_cost_cfg_t *cfg)
{
    return nvl_cost_attention(cfg, (size_t)a->batch, a->new_tokens, a->past,
                              (uint32_t)a->heads, (uint32_t)a->kv_heads,
                              (uint32_t)a->head_dim);
}

static void describe_attention(const cost_args_t *a, const nvl_cost_cfg_t *cfg,
                               char *buf, size_t len)
{
    snprintf(buf, len, "batch=%ld q_len=%ld ctx=%ld heads=%ld kv_heads=%ld "
             "head_dim=%ld kernel=%s kv_dtype=%s", a->batch, a->q_len, a->ctx,
             a->heads, a->kv_heads, a->head_dim, nvl_attn_name(cfg->attn),
             nvl_wdtype_name(cfg->kv_dtype));
}

static void json_attention_op(const cost_args_t *a, const nvl_cost_cfg_t *cfg,
                           json_t *in)
{
    const struct {
        const char *key;
        long value;
    } counts[] = {{"batch", a->batch}, {"q_len", a->q_len}, {"ctx", a->ctx},
                  {"heads", a->heads}, {"kv_heads", a->kv_heads},
                  {"head_dim", a->head_dim}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        json_object_set_new(in, counts[i].key, json_integer(counts[i].value));
    json_object_set_new(in, "kernel", json_string(nvl_attn_name(cfg->attn)));
    json_object_set_new(in, "kv_dtype",
                        json_string(nvl_wdtype_name(cfg->kv_dtype)));
}

static nvl_status_t read_elementwise(cost_args_t *a)
{
    (void)a;
    return NVL_OK;
}

static nvl_kernel_cost_t cost_elementwise(const cost_args_t *a,
                                          const nvl_cost_cfg_t *cfg)
{
    return nvl_cost_memory(cfg, a->size[0]);
}

static void describe_bytes(const cost_args_t *a, const nvl_cost_cfg_t *cfg,
                           char *buf, size_t len)
{
    (void)cfg;
    snprintf(buf, len, "size=%.0fB", a->size[0]);
}

static void json_bytes_op(const cost_args_t *a, const nvl_cost_cfg_t *cfg,
                       json_t *in)
{
    (void)cfg;
    json_object_set_new(in, "size_bytes", json_integer((json_int_t)a->size[0]));
}

static nvl_status_t read_copy(cost_args_t *a)
{
    if (a->path == NULL) {
        nvl_report("cost copy: --path is required (usage: nvlemu cost %s)",
                   COPY_USAGE);
        return NVL_ERR_INVALID;
    }
    if (nvl_copy_path_parse("--path", a->path, &a->copy_path) != NVL_OK)
        return NVL_ERR_INVALID;
    if (a->peer >= 0 && a->copy_path != NVL_COPY_NVLINK) {
        nvl_report("cost copy: --peer %ld applies to --path nvlink only, "
                   "not %s", a->peer, a->path);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

static nvl_kernel_cost_t cost_copy(const cost_args_t *a,
                                   const nvl_cost_cfg_t *cfg)
{
    return nvl_cost_copy(cfg, a->copy_path, (uint32_t)a->peer, a->size[0]);
}

static void describe_copy(const cost_args_t *a, const nvl_cost_cfg_t *cfg,
                          char *buf, size_t len)
{
    (void)cfg;
    int n = snprintf(buf, len, "size=%.0fB path=%s", a->size[0],
                     nvl_copy_path_name(a->copy_path));
    if (a->copy_path == NVL_COPY_NVLINK && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " peer=%ld", a->peer);
}

static void json_copy_op(const cost_args_t *a, const nvl_cost_cfg_t *cfg,
                      json_t *in)
{
    json_bytes_op(a, cfg, in);
    json_object_set_new(in, "path",
                        json_string(nvl_copy_path_name(a->copy_path)));
    if (a->copy_path == NVL_COPY_NVLINK)
        json_object_set_new(in, "peer", json_integer(a->peer));
}

static const op_t ops[] = {
    {.name = "gemm", .usage = GEMM_USAGE, .args = "M N K", .n_args = 3,
     .options = "--dtype --library",
     .read = read_gemm, .cost = cost_gemm, .describe = describe_gemm,
     .inputs_json = json_gemm_op, .flops_rate = true},
    {.name = "attention", .usage = ATTENTION_USAGE, .args = "", .n_args = 0,
     .options = "--batch --q-len --ctx --heads --kv-heads --head-dim "
                "--kernel --kv-dtype",
     .read = read_attention, .cost = cost_attention,
     .describe = describe_attention, .inputs_json = json_attention_op,
     .flops_rate = true},
    {.name = "elementwise", .usage = ELEMENTWISE_USAGE,
     .args = "BYTES", .n_args = 1, .options = "",
     .read = read_elementwise, .cost = cost_elementwise,
     .describe = describe_bytes, .inputs_json = json_bytes_op},
    {.name = "copy", .usage = COPY_USAGE, .args = "BYTES", .n_args = 1, .options = "--path --peer",
     .read = read_copy, .cost = cost_copy, .describe = describe_copy,
     .inputs_json = json_copy_op},
};
#define N_OPS (sizeof ops / sizeof ops[0])

/* The op-specific options as given (a string NULL, a number `unset` when
 * not given), to refuse one that another op owns. */
static const struct {
    const char *label;
    size_t offset;
    bool is_string;
    long unset;
} op_options[] = {
    {"--dtype", AT(dtype), true, 0},       {"--library", AT(library), true, 0},
    {"--batch", AT(batch), false, 0},
    {"--q-len", AT(q_len), false, 0},      {"--ctx", AT(ctx), false, 0},
    {"--heads", AT(heads), false, 0},      {"--kv-heads", AT(kv_heads), false, 0},
    {"--head-dim", AT(head_dim), false, 0}, {"--kernel", AT(kernel), true, 0},
    {"--kv-dtype", AT(kv_dtype), true, 0}, {"--path", AT(path), true, 0},
    {"--peer", AT(peer), false, -1},
};

static bool option_given(const cost_args_t *a, size_t i)
{
    const char *field = (const char *)a + op_options[i].offset;
    return op_options[i].is_string ? *(const char *const *)field != NULL
                                   : *(const long *)field != op_options[i].unset;
}

/* Whether label is a whole word of the op's option list. */
static bool op_owns(const op_t *op, const char *label)
{
    size_t n = strlen(label);
    for (const char *p = strstr(op->options, label); p != NULL;
         p = strstr(p + 1, label))
        if (p[n] == '\0' || p[n] == ' ')
            return true;
    return false;
}

static const char *op_names(void)
{
    static char names[64];
    if (names[0] == '\0')
        for (size_t i = 0; i < N_OPS; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names),
                     "%s%s", i == 0 ? "" : i + 1 < N_OPS ? ", " : " or ",
                     ops[i].name);
    return names;
}

/* A size argument above zero: a count (gemm), or bytes in util/units'
 * grammar (a plain number, 64MB, 1GiB, nccl-tests' 1G; docs/units.md). */
static nvl_status_t read_size(const op_t *op, const char *name,
                              const char *text, double *size_out)
{
    char why[160];
    double v;
    nvl_qty_kind_t kind = op->flops_rate ? NVL_QTY_COUNT : NVL_QTY_BYTES;
    if (nvl_qty_parse_in(kind, text, op->flops_rate ? NULL : "B", &v, why,
                         sizeof why) != NVL_OK) {
        if (op->flops_rate)
            nvl_report("cost %s: %s = %s: %s (a whole number)", op->name,
                       name, text, why);
        else
            nvl_report("cost %s: %s = %s: %s (a size: bytes, or with one of "
                       "%s; docs/units.md)", op->name, name, text, why,
                       nvl_qty_units(NVL_QTY_BYTES));
        return NVL_ERR_INVALID;
    }
    if (!(v >= 1) || v > 1e18 || v != floor(v)) {
        nvl_report("cost %s: %s = %s: expected %s from 1 to 1e18",
                   op->name, name, text,
                   op->flops_rate ? "a whole number"
                                  : "a whole number of bytes");
        return NVL_ERR_INVALID;
    }
    *size_out = v;
    return NVL_OK;
}

/* The op and its arguments; the options it does not own are refused. */
static nvl_status_t check(void *args, int argc, char **argv, int first)
{
    cost_args_t *a = args;
    if (first >= argc) {
        nvl_report("cost: expected an operation: %s (usage: %s)", op_names(),
                   USAGE);
        return NVL_ERR_INVALID;
    }
    for (size_t i = 0; i < N_OPS && a->op == NULL; i++)
        if (strcmp(argv[first], ops[i].name) == 0)
            a->op = &ops[i];
    const op_t *op = a->op;
    if (op == NULL) {
        nvl_report("cost: unknown operation '%s': one of %s (usage: %s)",
                   argv[first], op_names(), USAGE);
        return NVL_ERR_INVALID;
    }
    int n = argc - first - 1;
    if (n != op->n_args) {
        nvl_report("cost %s: expected %d argument%s%s%s, got %d (usage: "
                   "nvlemu cost %s)", op->name, op->n_args,
                   op->n_args == 1 ? "" : "s", op->n_args > 0 ? ": " : "",
                   op->args, n, op->usage);
        return NVL_ERR_INVALID;
    }
    char names[64];
    snprintf(names, sizeof names, "%s", op->args);
    char *save = NULL, *name = strtok_r(names, " ", &save);
    for (int i = 0; i < n; i++, name = strtok_r(NULL, " ", &save))
        if (read_size(op, name, argv[first + 1 + i], &a->size[i]) != NVL_OK)
            return NVL_ERR_INVALID;
    for (size_t i = 0; i < sizeof op_options / sizeof op_options[0]; i++)
        if (option_given(a, i) && !op_owns(op, op_options[i].label)) {
            char owned[96] = "";
            if (op->options[0] != '\0')
                snprintf(owned, sizeof owned, " (its options: %s)",
                         op->options);
            nvl_report("cost %s: %s is not an option of %s%s", op->name,
                       op_options[i].label, op->name, owned);
            return NVL_ERR_INVALID;
        }
    return op->read(a);
}

/* ---- what limits the operation -------------------------------------------
 * One row per resource: the operation is limited by the resource whose
 * doubling saves the most time, unless its fixed costs (kernel overheads,
 * the copy engine's, latencies) are at least the rest of it. */

typedef struct {
    const char *key;
    const char *doc;
    void (*faster)(nvl_topo_t *t); /* doubles the resource */
} term_t;

static void faster_compute(nvl_topo_t *t)
{
    t->gpu.bf16_flops_per_s *= 2;
    t->gpu.fp8_flops_per_s *= 2;
    t->gpu.fp4_flops_per_s *= 2;
}
static void faster_exp(nvl_topo_t *t) { t->gpu.exp_ops_per_s *= 2; }
static void faster_hbm(nvl_topo_t *t) { t->gpu.hbm_bw_bytes_per_s *= 2; }
static void faster_link(nvl_topo_t *t)
{
    t->nvlink.link_bw_bytes_per_s *= 2;
    t->gpu.die_link_bw_bytes_per_s *= 2; /* --rank-plays die */
    t->c2c.bw_bytes_per_s *= 2;
    t->scaleout.nic_bw_bytes_per_s *= 2;
}
static void faster_host(nvl_topo_t *t) { t->host_memory.bw_bytes_per_s *= 2; }

static const term_t terms[] = {
    {"compute", "tensor-core FLOP/s", faster_compute},
    {"exp", "SFU exponentials (softmax)", faster_exp},
    {"memory", "HBM bandwidth", faster_hbm},
    {"link", "link bandwidth", faster_link},
    {"host-memory", "host memory bandwidth", faster_host},
};

static const term_t overhead_term = {
    "overhead", "kernel overhead, copy engine, latency", NULL};

static void no_fixed_costs(nvl_topo_t *t)
{
    t->gpu.kernel_overhead_ps = 0;
    t->gpu.attn_overhead_ps = 0;
    t->gpu.kernel_floor_ps = 0;
    t->gpu.mem_latency_ps = 0;
    t->gpu.copy_overhead_ps = 0;
    t->nvlink.hop_lat_ps = 0;
    t->gpu.die_link_lat_ps = 0;
    t->c2c.lat_ps = 0;
    t->scaleout.lat_ps = 0;
}

typedef struct {
    nvl_kernel_cost_t cost;
    int64_t fixed_ps; /* of cost.time_ps */
    const term_t *bound;
} result_t;

/* The op's cost on a copy of the topology changed by `change`. */
static int64_t time_with(const cost_args_t *a, void (*change)(nvl_topo_t *))
{
    nvl_topo_t probe = *a->cfg.topo; /* shares the read-only overrides */
    change(&probe);
    nvl_cost_cfg_t cfg = a->cfg;
    cfg.topo = &probe;
    return a->op->cost(a, &cfg).time_ps;
}

static result_t evaluate(const cost_args_t *a)
{
    result_t r = {a->op->cost(a, &a->cfg), 0, &overhead_term};
    int64_t t = r.cost.time_ps, best_saved_ps = 0;
    r.fixed_ps = t - time_with(a, no_fixed_costs);
    for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++) {
        int64_t saved = t - time_with(a, terms[i].faster);
        if (saved > best_saved_ps) {
            best_saved_ps = saved;
            r.bound = &terms[i];
        }
    }
    if (2 * r.fixed_ps >= t)
        r.bound = &overhead_term;
    return r;
}

/* ---- the command ---------------------------------------------------------- */

static nvl_status_t prepare(void *args, const nvl_cli_ctx_t *ctx)
{
    cost_args_t *a = args;
    const nvl_topo_t *topo = ctx->topo;
    if (a->gpu >= (long)topo->gpus) {
        nvl_report("--gpu %ld: topology '%s' (%s) has %u GPUs (0 to %u)",
                   a->gpu, topo->name, a->common.topo, topo->gpus,
                   topo->gpus - 1);
        return NVL_ERR_INVALID;
    }
    nvl_engine_opts_t defaults; /* the kernels nvlemu run uses */
    nvl_engine_opts_default(&defaults, topo);
    a->cfg = defaults.cost;
    a->cfg.gpu = (uint32_t)a->gpu;
    a->cfg.weight_dtype = a->wdtype;
    a->cfg.kv_dtype = a->kv_wdtype;
    a->cfg.gemm_lib = a->gemm_lib;
    if (a->op->cost == cost_gemm &&
        nvl_gemm_lib_check("--library", &a->cfg) != NVL_OK)
        return NVL_ERR_INVALID;
    if (a->attn_given)
        a->cfg.attn = a->attn;
    if (a->op->cost == cost_copy) {
        if (a->peer < 0) { /* the next GPU of the NVLink domain */
            uint32_t n = topo->nvlink.domain_gpus, g = (uint32_t)a->gpu;
            a->peer = (long)(g - g % n + (g % n + 1) % n);
        }
        char why[160];
        if (!nvl_copy_path_usable(&a->cfg, a->copy_path, (uint32_t)a->peer,
                                  why, sizeof why)) {
            nvl_report("cost copy --path %s: topology '%s' (%s) cannot "
                       "carry it: %s", a->path, topo->name, a->common.topo,
                       why);
            return NVL_ERR_INVALID;
        }
    }
    if (a->op->cost == cost_attention) {
        size_t n = (size_t)a->batch;
        a->new_tokens = malloc(n * sizeof *a->new_tokens);
        a->past = malloc(n * sizeof *a->past);
        if (a->new_tokens == NULL || a->past == NULL) {
            nvl_report("cost attention: --batch %ld: out of memory", a->batch);
            return NVL_ERR_NOMEM;
        }
        for (size_t i = 0; i < n; i++) {
            a->new_tokens[i] = (uint64_t)a->q_len;
            a->past[i] = (uint64_t)a->ctx;
        }
    }
    return NVL_OK;
}

static double per_s(double amount, int64_t time_ps)
{
    return time_ps > 0 ? amount / ((double)time_ps * 1e-12) : 0;
}

/* What the answer is about, for its validation families: the op's class
 * (a copy's by its path: both NVLink-C2C directions are one class), the
 * GPU, its FLOPs (gemm, attention) or bytes, and the GEMM's library and
 * type. */
static void cost_query(const cost_args_t *a, const nvl_topo_t *topo,
                       const result_t *r, char *cls, size_t len,
                       nvl_vquery_t *q)
{
    const char *path = nvl_copy_path_name(a->copy_path);
    if (a->op->cost != cost_copy)
        snprintf(cls, len, "%s", a->op->name);
    else
        snprintf(cls, len, "copy-%s", strncmp(path, "c2c", 3) == 0 ? "c2c" : path);
    double size = a->op->flops_rate ? r->cost.flops : a->size[0];
    *q = (nvl_vquery_t){.what = a->op->name, .cls = cls,
                        .hardware = topo->name, .ranks = 1, .sized = true,
                        .size_lo = size, .size_hi = size};
    if (a->op->cost == cost_gemm) {
        q->attrs[0].key = "library";
        q->attrs[0].value = gemm_library(&a->cfg);
        q->attrs[1].key = "dtype";
        q->attrs[1].value = nvl_wdtype_name(a->cfg.weight_dtype);
    } else if (a->op->cost == cost_attention) {
        q->attrs[0].key = "kernel";
        q->attrs[0].value = nvl_attn_name(a->cfg.attn);
    }
}

static void print_text(const cost_args_t *a, const nvl_topo_t *topo,
                       const result_t *r, const nvl_validation_t *v)
{
    char in[256];
    a->op->describe(a, &a->cfg, in, sizeof in);
    int64_t t = r->cost.time_ps;
    printf("# nvlemu cost: GPU %ld of %s (%s)\n", a->gpu, topo->name,
           a->common.topo);
    printf("%-10s %s %s\n", "op", a->op->name, in);
    printf("%-10s %.3f us\n", "time", (double)t / 1e6);
    printf("%-10s %.4g FLOP, %.4g bytes moved\n", "work", r->cost.flops,
           r->cost.bytes);
    if (a->op->flops_rate)
        printf("%-10s %.4g TFLOP/s, %.4g GB/s\n", "rate",
               per_s(r->cost.flops, t) / 1e12, per_s(r->cost.bytes, t) / 1e9);
    else
        printf("%-10s %.4g GB/s\n", "rate", per_s(r->cost.bytes, t) / 1e9);
    printf("%-10s %s-bound (%s); fixed costs %.3f us\n", "limit",
           r->bound->key, r->bound->doc, (double)r->fixed_ps / 1e6);
    char cls[32];
    nvl_vquery_t q;
    cost_query(a, topo, r, cls, sizeof cls, &q);
    fflush(stdout);
    nvl_validation_print(v, &q, 1, stdout);
}

static nvl_status_t write_json(const cost_args_t *a, const nvl_topo_t *topo,
                               const result_t *r, const nvl_validation_t *v,
                               FILE *out)
{
    int64_t t = r->cost.time_ps;
    json_t *root = json_object(), *inputs = json_object();
    json_object_set_new(root, "topology", json_string(topo->name));
    json_object_set_new(root, "file", json_string(a->common.topo));
    json_object_set_new(root, "gpu", json_integer(a->gpu));
    json_object_set_new(root, "op", json_string(a->op->name));
    a->op->inputs_json(a, &a->cfg, inputs);
    json_object_set_new(root, "inputs", inputs);
    json_object_set_new(root, "time_ps", json_integer(t));
    json_object_set_new(root, "time_us", json_real((double)t / 1e6));
    json_object_set_new(root, "flops", json_real(r->cost.flops));
    json_object_set_new(root, "bytes", json_real(r->cost.bytes));
    if (a->op->flops_rate)
        json_object_set_new(root, "tflops",
                            json_real(per_s(r->cost.flops, t) / 1e12));
    json_object_set_new(root, "gb_per_s",
                        json_real(per_s(r->cost.bytes, t) / 1e9));
    json_object_set_new(root, "bound", json_string(r->bound->key));
    json_object_set_new(root, "fixed_us", json_real((double)r->fixed_ps / 1e6));
    char cls[32];
    nvl_vquery_t q;
    cost_query(a, topo, r, cls, sizeof cls, &q);
    json_object_set_new(root, "validation", nvl_validation_json(v, &q, 1));
    int rc = nvl_json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (rc != 0 || fputc('\n', out) == EOF) {
        nvl_report("--json %s: cannot write the result", a->common.json);
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

/* Rank 0 computes and prints; the others only checked their input. */
static nvl_status_t body(void *args, const nvl_cli_ctx_t *ctx)
{
    const cost_args_t *a = args;
    if (ctx->rt->rank != 0)
        return NVL_OK;
    result_t r = evaluate(a);
    if (!nvl_vclock_fits(0, r.cost.time_ps)) {
        char in[160];
        a->op->describe(a, &a->cfg, in, sizeof in);
        nvl_report("cost %s %s on %s: the modeled time is past the clock's "
                   "range (one operation lasts at most %.1f days of "
                   "emulated time)", a->op->name, in, ctx->topo->name,
                   NVL_MAX_DURATION_DAYS);
        return NVL_ERR_RANGE;
    }
    nvl_status_t st = NVL_OK;
    if (a->common.json == NULL) {
        print_text(a, ctx->topo, &r, ctx->validation);
    } else {
        FILE *out = nvl_cli_open_out("--json", a->common.json);
        if (out == NULL)
            return NVL_ERR_IO;
        st = write_json(a, ctx->topo, &r, ctx->validation, out);
        nvl_status_t cst = nvl_cli_close_out("--json", a->common.json, out);
        st = st != NVL_OK ? st : cst;
    }
    fflush(stdout);
    return st;
}

static void cleanup(void *args)
{
    cost_args_t *a = args;
    free(a->new_tokens);
    free(a->past);
}

const nvl_cli_command_t nvl_cli_cost_command = {
    .args_size = sizeof(cost_args_t),
    .opts = NVL_CLI_OPTS("cost", cost_opts, USAGE, 4),
    .common_offset = offsetof(cost_args_t, common),
    .provenance = true,
    .check = check,
    .prepare = prepare,
    .body = body,
    .cleanup = cleanup,
};

int nvl_cmd_cost(int argc, char **argv)
{
    cost_args_t args = {0};
    return nvl_cli_command_run(&nvl_cli_cost_command, &args, argc, argv);
}
