/* `nvlemu cost`'s operations (cost_cmd.h): one row each, its functions
 * beside it. */
#include <stdlib.h>
#include <string.h>

#include "cost_cmd.h"
#include "model_opts.h"

#define AT(field) offsetof(nvl_cli_cost_args_t, field)


static nvl_status_t read_gemm(nvl_cli_cost_args_t *a)
{
    if (a->dtype != NULL &&
        nvl_wdtype_parse("--dtype", a->dtype, &a->wdtype) != NVL_OK)
        return NVL_ERR_INVALID;
    if (a->harness != NULL &&
        nvl_gemm_harness_parse("--harness", a->harness, &a->gemm_harness) !=
            NVL_OK)
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

static nvl_kernel_cost_t cost_gemm(const nvl_cli_cost_args_t *a,
                                   const nvl_cost_cfg_t *cfg)
{
    return nvl_cost_matmul(cfg, (uint64_t)a->size[0], (uint64_t)a->size[1],
                           (uint64_t)a->size[2]);
}

/* The parts the model splits the GEMM's K loop into (1: not split). */
static uint32_t gemm_split_k(const nvl_cli_cost_args_t *a,
                             const nvl_cost_cfg_t *cfg)
{
    return nvl_cost_matmul_split_k(cfg, (uint64_t)a->size[0],
                                   (uint64_t)a->size[1],
                                   (uint64_t)a->size[2]);
}

static void describe_gemm(const nvl_cli_cost_args_t *a, const nvl_cost_cfg_t *cfg,
                          char *buf, size_t len)
{
    uint32_t parts = gemm_split_k(a, cfg);
    int n = snprintf(buf, len, "m=%.0f n=%.0f k=%.0f dtype=%s library=%s",
                     a->size[0], a->size[1], a->size[2],
                     nvl_wdtype_name(cfg->weight_dtype), gemm_library(cfg));
    if (cfg->gemm_harness != NVL_HARNESS_KERNEL && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " harness=%s",
                      nvl_gemm_harness_name(cfg->gemm_harness));
    if (parts > 1 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n,
                 " split-k=%u (+ a reduction kernel)", parts);
}

/* m, n, k and the type: gemm's and grouped's inputs. */
static void json_mnk(const nvl_cli_cost_args_t *a, const nvl_cost_cfg_t *cfg,
                     json_t *in)
{
    static const char *const dims[] = {"m", "n", "k"};
    for (int i = 0; i < 3; i++)
        json_object_set_new(in, dims[i], json_integer((json_int_t)a->size[i]));
    json_object_set_new(in, "dtype",
                        json_string(nvl_wdtype_name(cfg->weight_dtype)));
}

static void json_gemm_op(const nvl_cli_cost_args_t *a, const nvl_cost_cfg_t *cfg,
                      json_t *in)
{
    json_mnk(a, cfg, in);
    json_object_set_new(in, "library", json_string(gemm_library(cfg)));
    json_object_set_new(in, "harness",
                        json_string(nvl_gemm_harness_name(cfg->gemm_harness)));
}

/* The library must run the type on this GPU. */
static nvl_status_t prepare_gemm(nvl_cli_cost_args_t *a)
{
    return nvl_gemm_lib_check("--library", &a->cfg);
}

static void query_gemm(const nvl_cli_cost_args_t *a, char *cls, size_t len,
                       nvl_vquery_t *q)
{
    (void)cls;
    (void)len;
    q->attrs[0].key = "library";
    q->attrs[0].value = gemm_library(&a->cfg);
    q->attrs[1].key = "dtype";
    q->attrs[1].value = nvl_wdtype_name(a->cfg.weight_dtype);
}

/* grouped: --groups is required and at most M (every group gets rows). */
static nvl_status_t read_grouped(nvl_cli_cost_args_t *a)
{
    if (a->groups == 0) {
        nvl_report("cost grouped: --groups is required (usage: nvlemu cost "
                   "%s)", GROUPED_USAGE);
        return NVL_ERR_INVALID;
    }
    if ((double)a->groups > a->size[0]) {
        nvl_report("cost grouped: --groups %ld: expected 1 to M = %.0f (every "
                   "group gets a row)", a->groups, a->size[0]);
        return NVL_ERR_INVALID;
    }
    return a->dtype == NULL
               ? NVL_OK
               : nvl_wdtype_parse("--dtype", a->dtype, &a->wdtype);
}

/* M rows over G groups: the first M mod G groups one row more. */
static nvl_kernel_cost_t cost_grouped(const nvl_cli_cost_args_t *a,
                                      const nvl_cost_cfg_t *cfg)
{
    size_t g = (size_t)a->groups;
    uint64_t rows = (uint64_t)a->size[0];
    uint64_t *m = malloc(g * sizeof *m);
    if (m == NULL)
        return (nvl_kernel_cost_t){0};
    for (size_t i = 0; i < g; i++)
        m[i] = rows / g + (i < rows % g ? 1 : 0);
    nvl_kernel_cost_t c = nvl_cost_grouped_matmul(cfg, g, m,
                                                  (uint64_t)a->size[1],
                                                  (uint64_t)a->size[2]);
    free(m);
    return c;
}

static void describe_grouped(const nvl_cli_cost_args_t *a,
                             const nvl_cost_cfg_t *cfg, char *buf, size_t len)
{
    snprintf(buf, len, "m=%.0f n=%.0f k=%.0f groups=%ld dtype=%s",
             a->size[0], a->size[1], a->size[2], a->groups,
             nvl_wdtype_name(cfg->weight_dtype));
}

static void json_grouped_op(const nvl_cli_cost_args_t *a,
                            const nvl_cost_cfg_t *cfg, json_t *in)
{
    json_mnk(a, cfg, in);
    json_object_set_new(in, "groups", json_integer((json_int_t)a->groups));
}

static nvl_status_t read_attention(nvl_cli_cost_args_t *a)
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

static nvl_kernel_cost_t cost_attention(const nvl_cli_cost_args_t *a,
                                        const nvl_cost_cfg_t *cfg)
{
    return nvl_cost_attention(cfg, (size_t)a->batch, a->new_tokens, a->past,
                              (uint32_t)a->heads, (uint32_t)a->kv_heads,
                              (uint32_t)a->head_dim);
}

static void describe_attention(const nvl_cli_cost_args_t *a, const nvl_cost_cfg_t *cfg,
                               char *buf, size_t len)
{
    snprintf(buf, len, "batch=%ld q_len=%ld ctx=%ld heads=%ld kv_heads=%ld "
             "head_dim=%ld kernel=%s kv_dtype=%s", a->batch, a->q_len, a->ctx,
             a->heads, a->kv_heads, a->head_dim, nvl_attn_name(cfg->attn),
             nvl_wdtype_name(cfg->kv_dtype));
}

static void json_attention_op(const nvl_cli_cost_args_t *a, const nvl_cost_cfg_t *cfg,
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

/* Every sequence alike: --q-len new tokens after --ctx cached ones. */
static nvl_status_t prepare_attention(nvl_cli_cost_args_t *a)
{
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
    return NVL_OK;
}

static void query_attention(const nvl_cli_cost_args_t *a, char *cls,
                            size_t len, nvl_vquery_t *q)
{
    (void)cls;
    (void)len;
    q->attrs[0].key = "kernel";
    q->attrs[0].value = nvl_attn_name(a->cfg.attn);
    q->attrs[1].key = "kv_dtype";
    q->attrs[1].value = nvl_wdtype_name(a->cfg.kv_dtype);
}

static nvl_status_t read_elementwise(nvl_cli_cost_args_t *a)
{
    (void)a;
    return NVL_OK;
}

static nvl_kernel_cost_t cost_elementwise(const nvl_cli_cost_args_t *a,
                                          const nvl_cost_cfg_t *cfg)
{
    return nvl_cost_memory(cfg, a->size[0]);
}

static void describe_bytes(const nvl_cli_cost_args_t *a, const nvl_cost_cfg_t *cfg,
                           char *buf, size_t len)
{
    (void)cfg;
    snprintf(buf, len, "size=%.0fB", a->size[0]);
}

static void json_bytes_op(const nvl_cli_cost_args_t *a, const nvl_cost_cfg_t *cfg,
                       json_t *in)
{
    (void)cfg;
    json_object_set_new(in, "size_bytes", json_integer((json_int_t)a->size[0]));
}

static nvl_status_t read_copy(nvl_cli_cost_args_t *a)
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

static nvl_kernel_cost_t cost_copy(const nvl_cli_cost_args_t *a,
                                   const nvl_cost_cfg_t *cfg)
{
    return nvl_cost_copy(cfg, a->copy_path, (uint32_t)a->peer, a->size[0]);
}

static void describe_copy(const nvl_cli_cost_args_t *a, const nvl_cost_cfg_t *cfg,
                          char *buf, size_t len)
{
    (void)cfg;
    int n = snprintf(buf, len, "size=%.0fB path=%s", a->size[0],
                     nvl_copy_path_name(a->copy_path));
    if (a->copy_path == NVL_COPY_NVLINK && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " peer=%ld", a->peer);
}

static void json_copy_op(const nvl_cli_cost_args_t *a, const nvl_cost_cfg_t *cfg,
                      json_t *in)
{
    json_bytes_op(a, cfg, in);
    json_object_set_new(in, "path",
                        json_string(nvl_copy_path_name(a->copy_path)));
    if (a->copy_path == NVL_COPY_NVLINK)
        json_object_set_new(in, "peer", json_integer(a->peer));
}

/* The peer (default: the next GPU of --gpu's NVLink domain), and a path
 * the topology can carry. */
static nvl_status_t prepare_copy(nvl_cli_cost_args_t *a)
{
    const nvl_topo_t *topo = a->cfg.topo;
    if (a->peer < 0) {
        uint32_t n = topo->nvlink.domain_gpus, g = (uint32_t)a->gpu;
        a->peer = (long)(g - g % n + (g % n + 1) % n);
    }
    char why[160];
    if (!nvl_copy_path_usable(&a->cfg, a->copy_path, (uint32_t)a->peer, why,
                              sizeof why)) {
        nvl_report("cost copy --path %s: topology '%s' (%s) cannot carry "
                   "it: %s", a->path, topo->name, a->common.topo, why);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* A copy's class is its path's (both NVLink-C2C directions are one). */
static void query_copy(const nvl_cli_cost_args_t *a, char *cls, size_t len,
                       nvl_vquery_t *q)
{
    (void)q;
    const char *path = nvl_copy_path_name(a->copy_path);
    snprintf(cls, len, "copy-%s", strncmp(path, "c2c", 3) == 0 ? "c2c" : path);
}

const nvl_cli_cost_op_t nvl_cli_cost_ops[] = {
    {.name = "gemm", .usage = GEMM_USAGE, .args = "M N K", .n_args = 3,
     .options = "--dtype --library --harness",
     .read = read_gemm, .cost = cost_gemm, .describe = describe_gemm,
     .inputs_json = json_gemm_op, .flops_rate = true,
     .prepare = prepare_gemm, .query = query_gemm},
    {.name = "grouped", .usage = GROUPED_USAGE, .args = "M N K", .n_args = 3,
     .options = "--groups --dtype --stack", .read = read_grouped, .cost = cost_grouped,
     .describe = describe_grouped, .inputs_json = json_grouped_op,
     .flops_rate = true},
    {.name = "attention", .usage = ATTENTION_USAGE, .args = "", .n_args = 0,
     .options = "--batch --q-len --ctx --heads --kv-heads --head-dim "
                "--kernel --kv-dtype",
     .read = read_attention, .cost = cost_attention,
     .describe = describe_attention, .inputs_json = json_attention_op,
     .flops_rate = true, .prepare = prepare_attention,
     .query = query_attention},
    {.name = "elementwise", .usage = ELEMENTWISE_USAGE,
     .args = "BYTES", .n_args = 1, .options = "",
     .read = read_elementwise, .cost = cost_elementwise,
     .describe = describe_bytes, .inputs_json = json_bytes_op},
    {.name = "copy", .usage = COPY_USAGE, .args = "BYTES", .n_args = 1,
     .options = "--path --peer",
     .read = read_copy, .cost = cost_copy, .describe = describe_copy,
     .inputs_json = json_copy_op, .prepare = prepare_copy,
     .query = query_copy},
};
const size_t nvl_cli_cost_op_count =
    sizeof nvl_cli_cost_ops / sizeof nvl_cli_cost_ops[0];

