/* nvlemu quantize --format F [--calib FILE.jsonl] [--kv-dtype fp8] IN_DIR
 * OUT_DIR: a float Hugging Face checkpoint rewritten in a quantized
 * format, as the format's writer lays it out, with ModelOpt's calibrated
 * static scales when given calibration data (docs/quantization.md).  Runs
 * as one process (or, to calibrate a large model, on the ranks of a TP
 * group; rank 0 writes). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "model_opts.h"
#include "quality.h"
#include "nvlemu/engine.h"
#include "nvlemu/quant.h"
#include "nvlemu/runtime.h"
#include "nvlemu/weights.h"

typedef struct {
    nvl_cli_common_t common;
    int format;
    const char *calib; /* --calib FILE.jsonl */
    nvl_wdtype_t kv_dtype;
    const char *in, *out;
    nvl_model_config_t cfg;
    int32_t *tok; /* --calib's sequences (quality.h) */
    int *len, n;
    uint64_t *off;
} quantize_args_t;

#define USAGE "nvlemu quantize --format FORMAT " \
              "[--calib FILE.jsonl] [--kv-dtype fp8] IN_DIR OUT_DIR"

static const nvl_opt_t quantize_opts[] = {
    {.name = "format", .kind = NVL_OPT_ENUM,
     .offset = offsetof(quantize_args_t, format),
     .family = &nvl_quant_format_family, .required = true,
     .doc = "the format to write (`nvlemu --list quant-format`)"},
    {.name = "calib", .kind = NVL_OPT_STRING,
     .offset = offsetof(quantize_args_t, calib), .arg = "FILE.jsonl",
     .doc = "calibration data, one JSON array of token ids a line: the "
            "float model runs over it (data mode) and every static scale "
            "is written from the amax it saw, as ModelOpt's max "
            "calibration: input_scale (nvfp4, fp8) and, with --kv-dtype "
            "fp8, k_scale / v_scale"},
    {.name = "kv-dtype", .kind = NVL_OPT_CUSTOM,
     .offset = offsetof(quantize_args_t, kv_dtype),
     .family = &nvl_kv_dtype_family,
     .def = "bf16", .parse = nvl_cli_parse_kv_dtype,
     .doc = "the KV cache the checkpoint is for: fp8 writes ModelOpt's "
            "kv_cache_quant_algo \"FP8\" (nvfp4, fp8) and, with --calib, "
            "each layer's k_proj.k_scale and v_proj.v_scale; "
            "compressed-tensors' kv_cache_scheme (int8, int4, mxfp4) and, "
            "with --calib, self_attn.k_scale and v_scale"},
    NVL_CLI_OPT_TOPO(quantize_args_t, NVL_CLI_DEFAULT_TOPO, false),
    NVL_CLI_OPT_HELP(quantize_args_t),
};

static nvl_status_t check(void *args, int argc, char **argv, int first)
{
    quantize_args_t *a = args;
    if (a->common.help)
        return NVL_OK;
    if (argc - first != 2) {
        nvl_report("quantize: expected IN_DIR and OUT_DIR (usage: %s)",
                   USAGE);
        return NVL_ERR_INVALID;
    }
    a->in = argv[first];
    a->out = argv[first + 1];
    return NVL_OK;
}

static nvl_status_t prepare(void *args, const nvl_cli_ctx_t *ctx)
{
    (void)ctx;
    quantize_args_t *a = args;
    if (a->calib == NULL)
        return NVL_OK;
    nvl_status_t st = nvl_model_config_load(a->in, &a->cfg);
    if (st == NVL_OK)
        st = nvl_cli_read_token_file(a->calib, a->cfg.vocab, &a->tok,
                                     &a->len, &a->off, &a->n);
    return st;
}

/* The float model over --calib's sequences (one prefill of them all) on
 * every rank, the amax of each calibration point into *amax_out
 * (malloc'd, layers x NVL_CALIB_COUNT, every rank). */
static nvl_status_t calibrate(const quantize_args_t *a,
                              const nvl_cli_ctx_t *ctx, float **amax_out)
{
    nvl_vclock_t clock = {0};
    nvl_comm_t *tp = NULL;
    nvl_status_t st = nvl_comm_create(MPI_COMM_WORLD, ctx->topo, &clock, &tp);
    if (st != NVL_OK)
        return st;
    nvl_engine_opts_t o;
    nvl_engine_opts_default(&o, ctx->topo);
    o.weights_dir = a->in;
    o.act_quant_none = true; /* ModelOpt calibrates with quantizers off */
    o.calibrate = true;
    float *amax = malloc(((size_t)a->cfg.layers * NVL_CALIB_COUNT + 1) *
                         sizeof *amax);
    int32_t *next = malloc(((size_t)a->n + 1) * sizeof *next);
    if (amax == NULL || next == NULL) {
        nvl_report("out of memory for calibration");
        nvl_runtime_abort(1);
    }
    nvl_engine_t *e = NULL;
    st = nvl_engine_create(&a->cfg, &o, tp, &e);
    if (st == NVL_OK)
        st = nvl_engine_generate(e, a->tok, a->len, a->n, 1, next, NULL);
    if (st == NVL_OK)
        st = nvl_engine_calib_amax(e, amax);
    if (e != NULL)
        nvl_engine_free(e);
    nvl_comm_destroy(tp);
    free(next);
    if (st != NVL_OK)
        free(amax);
    else
        *amax_out = amax;
    return st;
}

static nvl_status_t body(void *args, const nvl_cli_ctx_t *ctx)
{
    const quantize_args_t *a = args;
    float *amax = NULL;
    nvl_status_t st = NVL_OK;
    if (a->calib != NULL)
        st = calibrate(a, ctx, &amax);
    nvl_quant_calib_t calib = {.layers = a->cfg.layers, .amax = amax};
    if (st == NVL_OK && ctx->rt->rank == 0) {
        nvl_weights_quant_opts_t q = {
            .format = (nvl_quant_format_t)a->format,
            .calib = amax != NULL ? &calib : NULL,
            .kv_fp8 = a->kv_dtype == NVL_WDT_FP8};
        st = nvl_weights_quantize(a->in, a->out, &q);
        if (st == NVL_OK)
            printf("# nvlemu quantize: %s -> %s (%s%s%s%s)\n", a->in, a->out,
                   nvl_quant_row(q.format)->m.name,
                   q.kv_fp8 ? ", FP8 KV cache" : "",
                   a->calib != NULL ? ", calibrated over " : "",
                   a->calib != NULL ? a->calib : "");
    }
    free(amax);
    return st;
}

static void cleanup(void *args)
{
    quantize_args_t *a = args;
    free(a->tok);
    free(a->len);
    free(a->off);
}

static const nvl_cli_command_t quantize_command = {
    .args_size = sizeof(quantize_args_t),
    .opts = NVL_CLI_OPTS("quantize", quantize_opts, USAGE, 2),
    .common_offset = offsetof(quantize_args_t, common),
    .check = check,
    .prepare = prepare,
    .body = body,
    .cleanup = cleanup,
};

int nvl_cmd_quantize(int argc, char **argv)
{
    quantize_args_t args = {0};
    return nvl_cli_command_run(&quantize_command, &args, argc, argv);
}
