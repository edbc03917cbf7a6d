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
#include "cost_cmd.h"
#include "nvlemu/cost.h"
#include "nvlemu/engine.h"
#include "nvlemu/json.h"
#include "nvlemu/units.h"
#include "nvlemu/vclock.h"

#define AT(field) offsetof(nvl_cli_cost_args_t, field)
#define OP_LONG(name_, field, doc_)                                         \
    {.name = name_, .kind = NVL_OPT_LONG, .offset = AT(field), .arg = "N",  \
     .doc = doc_, .min = 1, .max = 1L << 30}

static const nvl_opt_t cost_opts[] = {
    NVL_CLI_OPT_TOPO(nvl_cli_cost_args_t, NVL_CLI_DEFAULT_TOPO, false),
    {.name = "gpu", .kind = NVL_OPT_LONG, .offset = AT(gpu), .arg = "N",
     .def = "0", .min = 0, .max = NVL_TOPO_MAX_GPUS - 1,
     .doc = "the GPU of the topology that runs the operation (its what-if "
            "overrides apply)"},
    NVL_CLI_OPT_JSON(nvl_cli_cost_args_t, "write the result as JSON to FILE ('-': "
                                  "standard output) instead"),
    NVL_CLI_OPT_SET(nvl_cli_cost_args_t),
    NVL_CLI_OPT_RANK_PLAYS(nvl_cli_cost_args_t),
    NVL_CLI_OPT_SET_FILE(nvl_cli_cost_args_t),
    {.name = "dtype", .kind = NVL_OPT_STRING, .offset = AT(dtype),
     .family = &nvl_wdtype_family,
     .doc = "gemm: weight and input type (default bf16)"},
    {.name = "library", .kind = NVL_OPT_STRING, .offset = AT(library),
     .family = &nvl_gemm_lib_family,
     .doc = "gemm: the GEMM library (default: the one nvlemu run's fused "
            "stack calls for --dtype; docs/cost-model.md \"GEMM "
            "libraries\")"},
    {.name = "harness", .kind = NVL_OPT_STRING, .offset = AT(harness),
     .family = &nvl_gemm_harness_family,
     .doc = "gemm: how a benchmark timed the GEMM (default kernel: as a "
            "step runs it; docs/cost-model.md \"GEMM harnesses\")"},
    OP_LONG("groups", groups, "grouped: the groups (experts) the M rows are "
                              "spread over, as evenly as they go"),
    {.name = "stack", .kind = NVL_OPT_STRING, .offset = AT(stack),
     .family = &nvl_stack_family,
     .doc = "grouped: the stack whose grouped GEMM runs (default fused: a "
            "serving engine's; torch or compiled: torch._grouped_mm and "
            "_scaled_grouped_mm, their tile chosen by shape)"},
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
     .family = &nvl_attn_family, .doc = "attention: FlashAttention 3 or 4, or "
                                   "PyTorch's SDPA (default: fa4 on GPUs "
                                   "with FP4 units, else fa3, as nvlemu "
                                   "run's fused stack)"},
    {.name = "kv-dtype", .kind = NVL_OPT_STRING, .offset = AT(kv_dtype),
     .family = &nvl_kv_dtype_family,
     .doc = "attention: KV cache type (default bf16)"},
    {.name = "path", .kind = NVL_OPT_STRING, .offset = AT(path),
     .family = &nvl_copy_path_family,
     .doc = "copy: device to device, to a peer GPU over NVLink, host to "
            "device or device to host over NVLink-C2C, host to host"},
    {.name = "peer", .kind = NVL_OPT_LONG, .offset = AT(peer), .arg = "N",
     .def = "-1", .min = -1, .max = NVL_TOPO_MAX_GPUS - 1,
     .doc = "copy --path nvlink: the GPU copied to (-1: the next GPU of "
            "--gpu's NVLink domain)"},
    NVL_CLI_OPT_HELP(nvl_cli_cost_args_t),
};

/* The op-specific options as given (a string NULL, a number `unset` when
 * not given), to refuse one that another op owns. */
static const struct {
    const char *label;
    size_t offset;
    bool is_string;
    long unset;
} op_options[] = {
    {"--dtype", AT(dtype), true, 0},       {"--library", AT(library), true, 0},
    {"--harness", AT(harness), true, 0},
    {"--batch", AT(batch), false, 0},      {"--groups", AT(groups), false, 0},
    {"--q-len", AT(q_len), false, 0},      {"--ctx", AT(ctx), false, 0},
    {"--heads", AT(heads), false, 0},      {"--kv-heads", AT(kv_heads), false, 0},
    {"--head-dim", AT(head_dim), false, 0}, {"--kernel", AT(kernel), true, 0},
    {"--kv-dtype", AT(kv_dtype), true, 0}, {"--path", AT(path), true, 0},
    {"--peer", AT(peer), false, -1},       {"--stack", AT(stack), true, 0},
};

static bool option_given(const nvl_cli_cost_args_t *a, size_t i)
{
    const char *field = (const char *)a + op_options[i].offset;
    return op_options[i].is_string ? *(const char *const *)field != NULL
                                   : *(const long *)field != op_options[i].unset;
}

/* Whether label is a whole word of the op's option list. */
static bool op_owns(const nvl_cli_cost_op_t *op, const char *label)
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
        for (size_t i = 0; i < nvl_cli_cost_op_count; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names),
                     "%s%s", i == 0 ? "" : i + 1 < nvl_cli_cost_op_count ? ", " : " or ",
                     nvl_cli_cost_ops[i].name);
    return names;
}

/* A size argument above zero: a count (gemm), or bytes in util/units'
 * grammar (a plain number, 64MB, 1GiB, nccl-tests' 1G; docs/units.md). */
static nvl_status_t read_size(const nvl_cli_cost_op_t *op, const char *name,
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
    nvl_cli_cost_args_t *a = args;
    if (first >= argc) {
        nvl_report("cost: expected an operation: %s (usage: %s)", op_names(),
                   COST_USAGE);
        return NVL_ERR_INVALID;
    }
    for (size_t i = 0; i < nvl_cli_cost_op_count && a->op == NULL; i++)
        if (strcmp(argv[first], nvl_cli_cost_ops[i].name) == 0)
            a->op = &nvl_cli_cost_ops[i];
    const nvl_cli_cost_op_t *op = a->op;
    if (op == NULL) {
        nvl_report("cost: unknown operation '%s': one of %s (usage: %s)",
                   argv[first], op_names(), COST_USAGE);
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
    t->gpu.fp4_call_overhead_ps = 0;
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
static int64_t time_with(const nvl_cli_cost_args_t *a, void (*change)(nvl_topo_t *))
{
    nvl_topo_t probe = *a->cfg.topo; /* shares the read-only overrides */
    change(&probe);
    nvl_cost_cfg_t cfg = a->cfg;
    cfg.topo = &probe;
    return a->op->cost(a, &cfg).time_ps;
}

static result_t evaluate(const nvl_cli_cost_args_t *a)
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
    nvl_cli_cost_args_t *a = args;
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
    a->cfg.gemm_harness = a->gemm_harness;
    if (a->attn_given)
        a->cfg.attn = a->attn;
    int stack;
    if (a->stack != NULL) {
        if (nvl_family_parse_report(&nvl_stack_family, "--stack", a->stack,
                                    &stack) != NVL_OK)
            return NVL_ERR_INVALID;
        nvl_stack_cost((nvl_stack_t)stack, &a->cfg);
    }
    return a->op->prepare != NULL ? a->op->prepare(a) : NVL_OK;
}

static double per_s(double amount, int64_t time_ps)
{
    return time_ps > 0 ? amount / ((double)time_ps * 1e-12) : 0;
}

/* What the answer is about, for its validation families: the op's class
 * (a copy's by its path: both NVLink-C2C directions are one class), the
 * GPU, its FLOPs (gemm, attention) or bytes, and the GEMM's library and
 * type. */
static void cost_query(const nvl_cli_cost_args_t *a, const nvl_topo_t *topo,
                       const result_t *r, char *cls, size_t len,
                       nvl_vquery_t *q)
{
    snprintf(cls, len, "%s", a->op->name);
    double size = a->op->flops_rate ? r->cost.flops : a->size[0];
    *q = (nvl_vquery_t){.what = a->op->name, .cls = cls,
                        .hardware = topo->name, .ranks = 1, .sized = true,
                        .size_lo = size, .size_hi = size};
    if (a->op->query != NULL)
        a->op->query(a, cls, len, q);
}

static void print_text(const nvl_cli_cost_args_t *a, const nvl_topo_t *topo,
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

static nvl_status_t write_json(const nvl_cli_cost_args_t *a, const nvl_topo_t *topo,
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
    const nvl_cli_cost_args_t *a = args;
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
    nvl_cli_cost_args_t *a = args;
    free(a->new_tokens);
    free(a->past);
}

const nvl_cli_command_t nvl_cli_cost_command = {
    .args_size = sizeof(nvl_cli_cost_args_t),
    .opts = NVL_CLI_OPTS("cost", cost_opts, COST_USAGE, 4),
    .common_offset = offsetof(nvl_cli_cost_args_t, common),
    .provenance = true,
    .check = check,
    .prepare = prepare,
    .body = body,
    .cleanup = cleanup,
};

int nvl_cmd_cost(int argc, char **argv)
{
    nvl_cli_cost_args_t args = {0};
    return nvl_cli_command_run(&nvl_cli_cost_command, &args, argc, argv);
}
