/* validate-compute: the compute cost model (include/nvlemu/cost.h) against
 * kernels measured on one H200, with topology/h200-nvl2.topo's GPU.
 *
 *   gemm (fit)       tests/data/calibration/h200-nvl2/gemm_qwen2.5-7b.csv:
 *                    the rows the matmul constants were fitted to
 *                    (scripts/calibration/fit-gemm.py)
 *   gemm (check)     h200-ops/gemm_qwen2.5-72b.csv: Qwen2.5-72B shard
 *                    shapes, not used in the fit
 *   gemm (check)     h200-narrow-gemm/narrow-gemm.csv: TP 2, 4 and 8
 *                    shards of Qwen2.5-7B, 32B and 72B at m 1-256, with
 *                    the kernels cuBLAS picked (split-K or not); not
 *                    used in the fit
 *   attention decode h200-ops/attention_decode.csv, cuDNN with GQA rows
 *   attention prefill h200-ops/attention_prefill.csv, cuDNN with GQA rows
 *   element-wise     h200-ops/elementwise.csv: the single-kernel rows
 *                    (residual add, copy)
 *
 * A row's error is max(pred/meas, meas/pred) - 1; each group's geomean of
 * (1 + error) - 1 must stay within its bound (the table below; the reasons
 * are in docs/cost-model.md).  Prints every row with --rows.  Exit status
 * 0 when every bound holds, 1 when one is broken, 2 on bad input.
 *
 *   validate-compute [--topo FILE] [--data DIR] [--rows]
 *
 * The CSV files are the measuring scripts' own simple output (a header
 * line, then comma-separated numbers and names, no quoting), read with
 * strtok. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/cost.h"
#include "nvlemu/engine.h"
#include "nvlemu/opts.h"

typedef enum { G_GEMM, G_DECODE, G_PREFILL, G_ELEM } group_kind_t;

/* One group of measurements: a file, which rows, the bound. */
typedef struct {
    const char *label;
    const char *file;    /* under --data */
    group_kind_t kind;
    const char *impl;    /* attention rows: this impl only */
    double bound;        /* geomean error */
} group_t;

static const group_t groups[] = {
    {"gemm, Qwen2.5-7B shapes (fit)", "h200-nvl2/gemm_qwen2.5-7b.csv",
     G_GEMM, NULL, 0.10},
    {"gemm, Qwen2.5-72B shapes (check)", "h200-ops/gemm_qwen2.5-72b.csv",
     G_GEMM, NULL, 0.15},
    {"gemm, narrow TP 2-8 shards (check)",
     "h200-narrow-gemm/narrow-gemm.csv", G_GEMM, NULL, 0.15},
    {"attention decode (cuDNN, GQA)", "h200-ops/attention_decode.csv",
     G_DECODE, "sdpa-cudnn/gqa", 0.20},
    {"attention prefill (cuDNN, GQA)", "h200-ops/attention_prefill.csv",
     G_PREFILL, "sdpa-cudnn/gqa", 0.25},
    /* one op replayed back to back costs ~0.6 us less per tiny kernel
     * than the same kernel inside a step, which mem_latency is fitted to
     * (docs/cost-model.md, "Per operator") */
    {"element-wise (add, copy)", "h200-ops/elementwise.csv", G_ELEM, NULL,
     0.35},
};

#define MAX_COLS 16

/* Splits a CSV line into at most MAX_COLS fields (in place). */
static int split(char *line, char **f)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *s = strtok(line, ","); s != NULL && n < MAX_COLS;
         s = strtok(NULL, ","))
        f[n++] = s;
    return n;
}

static int column(char **head, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(head[i], name) == 0)
            return i;
    return -1;
}

/* Predicted and measured seconds of one row; 0 when the row is skipped. */
static int predict(const group_t *g, const nvl_cost_cfg_t *base, char **f,
                   const int *col, double *pred_out, double *meas_out,
                   char *desc, size_t len)
{
    nvl_cost_cfg_t cfg = *base;
    nvl_kernel_cost_t c;
    *meas_out = atof(f[col[0]]) * 1e-6;
    if (g->kind == G_GEMM) {
        uint64_t m = strtoull(f[col[1]], NULL, 10);
        uint64_t n = strtoull(f[col[2]], NULL, 10);
        uint64_t k = strtoull(f[col[3]], NULL, 10);
        if (strcmp(f[col[4]], "fp8") == 0)
            cfg.weight_dtype = NVL_WDT_FP8;
        else if (strcmp(f[col[4]], "bf16") != 0)
            return 0;
        c = nvl_cost_matmul(&cfg, m, n, k);
        snprintf(desc, len, "%s m=%llu n=%llu k=%llu %s", f[col[5]],
                 (unsigned long long)m, (unsigned long long)n,
                 (unsigned long long)k, f[col[4]]);
    } else if (g->kind == G_DECODE || g->kind == G_PREFILL) {
        if (strcmp(f[col[1]], g->impl) != 0)
            return 0;
        size_t b = strtoull(f[col[2]], NULL, 10);
        uint32_t qh = (uint32_t)atoi(f[col[3]]), kvh = (uint32_t)atoi(f[col[4]]);
        uint32_t hd = (uint32_t)atoi(f[col[5]]);
        uint64_t len_tok = strtoull(f[col[6]], NULL, 10);
        uint64_t *T = malloc((b + 1) * sizeof *T), *P = malloc((b + 1) * sizeof *P);
        if (T == NULL || P == NULL)
            exit(2);
        for (size_t i = 0; i < b; i++) {
            T[i] = g->kind == G_DECODE ? 1 : len_tok;
            P[i] = g->kind == G_DECODE ? len_tok - 1 : 0;
        }
        c = nvl_cost_attention(&cfg, b, T, P, qh, kvh, hd);
        free(T);
        free(P);
        snprintf(desc, len, "batch %zu heads %u/%u %s %llu", b, qh, kvh,
                 g->kind == G_DECODE ? "ctx" : "seq",
                 (unsigned long long)len_tok);
    } else {
        const char *op = f[col[1]];
        double m = atof(f[col[2]]), w = atof(f[col[3]]);
        double elems;
        if (strcmp(op, "residual_add") == 0)
            elems = 3 * m * w;
        else if (strcmp(op, "copy") == 0)
            elems = 2 * m * w;
        else
            return 0;
        c = nvl_cost_memory(&cfg, elems * 2.0);
        snprintf(desc, len, "%s m=%.0f width=%.0f", op, m, w);
    }
    *pred_out = (double)c.time_ps * 1e-12;
    return 1;
}

static int run_group(const group_t *g, const char *dir,
                     const nvl_cost_cfg_t *cfg, int rows)
{
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/%s", dir, g->file);
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        fprintf(stderr, "validate-compute: cannot open %s\n", path);
        return 2;
    }
    char *head[MAX_COLS], hline[1024];
    if (fgets(hline, sizeof hline, in) == NULL) {
        fprintf(stderr, "validate-compute: %s is empty\n", path);
        fclose(in);
        return 2;
    }
    int nh = split(hline, head);
    static const char *const names[][7] = {
        [G_GEMM] = {"us", "m", "n", "k", "dtype", "op", NULL},
        [G_DECODE] = {"us", "impl", "batch", "q_heads", "kv_heads", "head_dim", "ctx"},
        [G_PREFILL] = {"us", "impl", "batch", "q_heads", "kv_heads", "head_dim", "seq"},
        [G_ELEM] = {"us", "op", "m", "width", NULL, NULL, NULL},
    };
    int col[7];
    for (int i = 0; i < 7; i++) {
        const char *name = names[g->kind][i];
        col[i] = name ? column(head, nh, name) : 0;
        if (col[i] < 0) {
            fprintf(stderr, "validate-compute: %s:1: no column '%s'\n", path,
                    name);
            fclose(in);
            return 2;
        }
    }
    double logsum = 0, worst = 0;
    int n = 0, lineno = 1;
    while (fgets(line, sizeof line, in) != NULL) {
        lineno++;
        char *f[MAX_COLS];
        if (split(line, f) < nh) {
            fprintf(stderr, "validate-compute: %s:%d: expected %d columns\n",
                    path, lineno, nh);
            fclose(in);
            return 2;
        }
        double pred, meas;
        char desc[160];
        if (!predict(g, cfg, f, col, &pred, &meas, desc, sizeof desc) ||
            meas <= 0)
            continue;
        double err = fmax(pred / meas, meas / pred) - 1.0;
        logsum += log1p(err);
        worst = fmax(worst, err);
        n++;
        if (rows)
            printf("  %-48s meas %9.2f us  pred %9.2f us  %+6.1f%%\n", desc,
                   meas * 1e6, pred * 1e6, 100 * (pred / meas - 1));
    }
    fclose(in);
    double geo = n ? expm1(logsum / n) : 0;
    int ok = geo <= g->bound;
    printf("%-36s rows %3d  geomean %5.1f%%  worst %6.1f%%  bound %4.0f%%  "
           "%s\n", g->label, n, 100 * geo, 100 * worst, 100 * g->bound,
           ok ? "ok" : "BROKEN");
    return ok ? 0 : 1;
}

typedef struct {
    const char *topo, *data;
    int rows, help;
} compute_args_t;

#define AT(f) offsetof(compute_args_t, f)
static const nvl_opt_t compute_opts[] = {
    {.name = "topo", .kind = NVL_OPT_STRING, .offset = AT(topo),
     .arg = "FILE", .def = "topology/h200-nvl2.topo",
     .doc = "the topology whose [gpu] the kernels run on"},
    {.name = "data", .kind = NVL_OPT_STRING, .offset = AT(data),
     .arg = "DIR", .def = "tests/data/calibration",
     .doc = "the measured kernels' folder"},
    {.name = "rows", .kind = NVL_OPT_FLAG, .offset = AT(rows),
     .doc = "print every row, measured against predicted"},
    {.name = "help", .kind = NVL_OPT_HELP, .offset = AT(help),
     .doc = "print this help"},
};
#undef AT

static const nvl_opts_t compute_set = {
    .prefix = "validate-compute",
    .help_hint = "validate-compute --help",
    .usage = "validate-compute [--topo FILE] [--data DIR] [--rows]",
    .opts = compute_opts,
    .n_opts = sizeof compute_opts / sizeof compute_opts[0],
};

int main(int argc, char **argv)
{
    compute_args_t a = {0};
    int first;
    if (nvl_opts_parse(&compute_set, argc, argv, &a, &first) != NVL_OK)
        return 2;
    if (a.help) {
        nvl_opts_help(&compute_set, stdout);
        return 0;
    }
    nvl_topo_t *topo;
    if (nvl_topo_load(a.topo, &topo) != NVL_OK)
        return 2;
    nvl_cost_cfg_t cfg = {.topo = topo, .gpu = 0,
                          .weight_dtype = NVL_WDT_BF16,
                          .kv_dtype = NVL_WDT_BF16, .attn = NVL_ATTN_FA3,
                          .launch = NVL_LAUNCH_GRAPH};
    nvl_stack_cost(NVL_STACK_FUSED, &cfg); /* nvlemu run's libraries */
    printf("# validate-compute: %s against measured kernels in %s\n",
           a.topo, a.data);
    int status = 0;
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        int s = run_group(&groups[i], a.data, &cfg, a.rows);
        status = s > status ? s : status;
    }
    nvl_topo_free(topo);
    return status;
}
