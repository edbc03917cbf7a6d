/* Private to src/cli: `nvlemu cost`'s arguments and its table of
 * operations (cost_ops.c), one row per operation carrying every
 * difference between them; cmd_cost.c is the command around the table. */
#ifndef NVLEMU_CLI_COST_CMD_H
#define NVLEMU_CLI_COST_CMD_H

#include <jansson.h>

#include "cli.h"
#include "nvlemu/cost.h"
#include "nvlemu/validation.h"

typedef struct {
    nvl_cli_common_t common;
    long gpu, peer;
    /* op-specific options; NULL or 0 when not given */
    const char *dtype, *library, *harness, *kernel, *kv_dtype, *path, *stack;
    long batch, q_len, ctx, heads, kv_heads, head_dim, groups;
    /* from the arguments (check) */
    const struct nvl_cli_cost_op *op;
    double size[3]; /* gemm, grouped: m, n, k; elementwise, copy: bytes */
    nvl_wdtype_t wdtype, kv_wdtype;
    nvl_gemm_lib_t gemm_lib;
    nvl_gemm_harness_t gemm_harness;
    nvl_attn_impl_t attn;
    bool attn_given;
    nvl_copy_path_t copy_path;
    /* from the topology (prepare) */
    nvl_cost_cfg_t cfg;
    uint64_t *new_tokens, *past; /* attention's, one per sequence */
} nvl_cli_cost_args_t;

/* Each operation's usage, for its row and the command's.  A value that
 * names a family's member is a placeholder: the option's row takes the
 * family (cmd_cost.c), so --help lists its members and a new member
 * needs no edit here. */
#define GEMM_USAGE \
    "gemm M N K [--dtype DTYPE] [--library LIBRARY] [--harness HARNESS]"
#define GROUPED_USAGE \
    "grouped M N K --groups G [--dtype DTYPE] [--stack STACK]"
#define ATTENTION_USAGE                                                     \
    "attention --batch B [--q-len Q] [--ctx C] --heads H --kv-heads K "     \
    "--head-dim D [--kernel KERNEL] [--kv-dtype KV_DTYPE]"
#define ELEMENTWISE_USAGE "elementwise BYTES"
#define COPY_USAGE "copy BYTES --path PATH [--peer N]"
#define COST_USAGE                                                          \
    "[mpirun -np N] nvlemu cost [--topo FILE] [--gpu N] [--json FILE] "     \
    "[--set K=V]... OP, where OP is one of: " GEMM_USAGE "; "                \
    GROUPED_USAGE "; " ATTENTION_USAGE "; " ELEMENTWISE_USAGE "; " COPY_USAGE

/* One operation: its name, its arguments, the options that are its own,
 * how it reads them, its cost, its inputs for the report, its rate, its
 * preparation and its validation query. */
typedef struct nvl_cli_cost_op {
    const char *name;
    const char *usage;   /* "gemm M N K [--dtype ...]" */
    const char *args;    /* the positional arguments, as usage shows them */
    int n_args;
    const char *options; /* its own options, "--a --b" ("" for none) */
    nvl_status_t (*read)(nvl_cli_cost_args_t *a);
    nvl_kernel_cost_t (*cost)(const nvl_cli_cost_args_t *a,
                              const nvl_cost_cfg_t *cfg);
    /* "m=8192 n=8192 k=8192 dtype=bf16" */
    void (*describe)(const nvl_cli_cost_args_t *a, const nvl_cost_cfg_t *cfg,
                     char *buf, size_t len);
    void (*inputs_json)(const nvl_cli_cost_args_t *a,
                        const nvl_cost_cfg_t *cfg, json_t *inputs);
    bool flops_rate; /* the rate that matters: TFLOP/s, else GB/s */
    /* its own preparation once the topology is known (cfg set), or NULL */
    nvl_status_t (*prepare)(nvl_cli_cost_args_t *a);
    /* its validation class (cls, already its name) and attributes, or
     * NULL */
    void (*query)(const nvl_cli_cost_args_t *a, char *cls, size_t len,
                  nvl_vquery_t *q);
} nvl_cli_cost_op_t;

/* The operations, in the order usage and messages list them. */
extern const nvl_cli_cost_op_t nvl_cli_cost_ops[];
extern const size_t nvl_cli_cost_op_count;

#endif
