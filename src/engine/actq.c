/* Quantized numerics of data mode: the input of a quantized GEMM as the
 * serving engines quantize it (src/quant/act.c), with the checkpoint's
 * input scales, and the FP8 KV cache's values with its k/v scales
 * (docs/quantization.md, "Activations" and "FP8 KV cache"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_tensors.h"
#include "nvlemu/runtime.h"
#include "nvlemu/weights.h"

/* Calibration (opts.calibrate): the running max |v| of n values at
 * point p of layer li, as ModelOpt's MaxCalibrator.collect keeps it; a
 * NaN stays (reported when the amax is read). */
static void calib_collect(const nvl_engine_t *e, uint32_t li, int p,
                          const float *v, uint64_t n)
{
    if (e->calib_amax == NULL)
        return;
    float *a = &e->calib_amax[(size_t)li * NVL_CALIB_COUNT + (size_t)p];
    for (uint64_t i = 0; i < n; i++) {
        float m = fabsf(v[i]);
        if (m > *a || isnan(m))
            *a = isnan(*a) ? *a : m;
    }
}

/* The calibration point of GEMM input g (the same order from QKV on). */
static int calib_point(nvl_gemm_in_t g)
{
    _Static_assert(NVL_GEMM_IN_DOWN - NVL_GEMM_IN_QKV ==
                       NVL_CALIB_DOWN - NVL_CALIB_QKV,
                   "GEMM inputs and calibration points in one order");
    return NVL_CALIB_QKV + (int)(g - NVL_GEMM_IN_QKV);
}

/* The GEMM class GEMM input g of this stage's layer li feeds. */
static nvl_quant_class_t class_of(const nvl_engine_t *e, uint32_t li,
                                  nvl_gemm_in_t g)
{
    return g <= NVL_GEMM_IN_O ? NVL_QCLASS_ATTN
           : nvl_model_layer_is_moe(&e->cfg, e->layer0 + li)
               ? NVL_QCLASS_EXPERTS
               : NVL_QCLASS_MLP;
}

/* How GEMM input g of this stage's layer li is quantized: its class's
 * rule, none where the checkpoint keeps the layer's weights of that
 * class in bf16 (a per-layer exclusion: the input stays unquantized, as
 * the engines run an unquantized Linear). */
static nvl_act_quant_t rule_of(const nvl_engine_t *e, uint32_t li,
                               nvl_gemm_in_t g)
{
    nvl_quant_class_t c = class_of(e, li, g);
    uint32_t gl = e->layer0 + li;
    if (nvl_model_layer_bf16(e->opts.gemm_bf16_layers[c], (int64_t)gl))
        return NVL_ACT_NONE;
    return gl < NVL_FORMAT_LAYERS && e->actq_layer[c][gl] < NVL_ACT_COUNT
               ? e->actq_layer[c][gl]
               : e->actq[c];
}

/* Each of the M rows of x (K values) as the GEMM reads it, into out
 * (which may be x). */
static void quant_rows(const nvl_engine_t *e, uint32_t li, nvl_gemm_in_t g,
                       const float *x, float *out, uint64_t M, uint64_t K)
{
    float s = e->in_scale[(size_t)li * NVL_GEMM_IN_COUNT + g];
    nvl_act_quant_t a = rule_of(e, li, g);
    for (uint64_t r = 0; r < M; r++) {
        const float *in = x + r * K;
        float *o = out + r * K;
        if (a == NVL_ACT_NVFP4)
            nvl_act_quant_nvfp4(in, K, s, o);
        else if (a == NVL_ACT_NVFP4_GS)
            nvl_act_quant_nvfp4_gs(in, K, s, o);
        else if (a == NVL_ACT_FP8_TENSOR)
            nvl_act_quant_fp8_tensor(in, K, s, o);
        else if (a == NVL_ACT_FP8_TOKEN)
            nvl_act_quant_fp8_token(in, K, o);
        else if (a == NVL_ACT_INT8_TOKEN)
            nvl_act_quant_int8_token(in, K, o);
        else
            nvl_act_quant_fp8_group(in, K, NVL_FP8_ACT_GROUP, o);
    }
}

const float *nvl_engine_gemm_input(nvl_engine_t *e, uint32_t li,
                                   nvl_gemm_in_t g, const float *x,
                                   uint64_t M, uint64_t K)
{
    calib_collect(e, li, calib_point(g), x, M * K);
    if (rule_of(e, li, g) == NVL_ACT_NONE || M * K == 0)
        return x;
    if (M * K > e->actq_cap) {
        free(e->actq_buf);
        e->actq_cap = M * K;
        e->actq_buf = malloc(e->actq_cap * sizeof *e->actq_buf);
        if (e->actq_buf == NULL) {
            nvl_report("out of memory quantizing %llu x %llu activations",
                       (unsigned long long)M, (unsigned long long)K);
            nvl_runtime_abort(1);
        }
    }
    quant_rows(e, li, g, x, e->actq_buf, M, K);
    return e->actq_buf;
}

void nvl_engine_gemm_input_inplace(const nvl_engine_t *e, uint32_t li,
                                   nvl_gemm_in_t g, float *x, uint64_t M,
                                   uint64_t K)
{
    calib_collect(e, li, calib_point(g), x, M * K);
    if (rule_of(e, li, g) != NVL_ACT_NONE)
        quant_rows(e, li, g, x, x, M, K);
}

void nvl_engine_kv_store(const nvl_engine_t *e, uint32_t li, int which,
                         float *dst, const float *src, uint64_t n)
{
    calib_collect(e, li, NVL_CALIB_K + which, src, n);
    if (e->kv_fp8)
        nvl_kv_quant_fp8(src, n, e->kv_scale[(size_t)li * 2 + which], dst);
    else
        memcpy(dst, src, n * sizeof *dst);
}

/* A per-tensor scale `name` (one F32 or BF16 value, finite and positive)
 * into *v; absent: *v unchanged.  compressed-tensors stores NVFP4's input
 * scale as the global scale, "<module>.input_global_scale" (448 x 6 /
 * amax, generate_gparam): read in its place, as it is (the largest of a
 * fused GEMM's parts, as vLLM's CompressedTensorsW4A4Fp4 takes it, and
 * NVL_ACT_NVFP4_GS's rule). */
static nvl_status_t read_scale(const nvl_weights_t *w, const char *dir,
                               const char *name, float *v)
{
    static const char in[] = "input_scale";
    char alt[256];
    size_t len = strlen(name), k = len > sizeof in ? len - (sizeof in - 1) : 0;
    snprintf(alt, sizeof alt, "%.*sinput_global_scale", (int)k, name);
    if (!nvl_weights_has(w, name) && strcmp(name + k, in) == 0 &&
        nvl_weights_has(w, alt))
        name = alt;
    else if (!nvl_weights_has(w, name))
        return NVL_OK;
    unsigned char *bytes = NULL;
    uint64_t n = 0;
    const char *dt = NULL;
    nvl_status_t st = nvl_weights_read_raw(w, name, &bytes, &n, &dt);
    if (st != NVL_OK)
        return st;
    float f = NAN;
    if (strcmp(dt, "F32") == 0 && n == 4)
        f = nvl_quant_scale_value(NVL_QCODE_F32, bytes);
    else if (strcmp(dt, "BF16") == 0 && n == 2)
        f = nvl_quant_scale_value(NVL_QCODE_BF16, bytes);
    free(bytes);
    if (!(f > 0.0f) || isinf(f)) {
        nvl_report("%s: scale '%s' must be one finite positive F32 or BF16 "
                   "value (dtype %s, %llu bytes, value %g)", dir, name, dt,
                   (unsigned long long)n, (double)f);
        return NVL_ERR_INVALID;
    }
    *v = f;
    return NVL_OK;
}

/* A mixture of experts' layer gl: the largest of every expert's gate/up
 * (g NVL_GEMM_IN_GATE_UP) or down (NVL_GEMM_IN_DOWN) input_scale into
 * *best, as TensorRT-LLM's fused MoE loads them (one fc31_input_scale and
 * one fc2_input_scale a layer, the max over the experts:
 * load_activation_scales_fp8_qdq, and NVFP4's fc31_input_scale). */
static nvl_status_t expert_scales(const nvl_engine_t *e,
                                  const nvl_weights_t *w, const char *dir,
                                  uint32_t gl, int g, float *best)
{
    static const char *const up[2] = {"gate_proj", "up_proj"};
    nvl_status_t st = NVL_OK;
    char n[192];
    for (uint32_t x = 0; x < e->cfg.num_experts && st == NVL_OK; x++)
        for (int j = 0; j < (g == NVL_GEMM_IN_DOWN ? 1 : 2) && st == NVL_OK;
             j++) {
            float v = 0.0f;
            snprintf(n, sizeof n, "model.layers.%u.mlp.experts.%u.%s."
                     "input_scale", gl, x,
                     g == NVL_GEMM_IN_DOWN ? "down_proj" : up[j]);
            st = read_scale(w, dir, n, &v);
            *best = fmaxf(*best, v);
        }
    return st;
}

/* The input_scale of every matrix of table rows[0 .. n) that checkpoint
 * layer gl has ("<module>.input_scale", the module its suffix less
 * ".weight"): the largest of each GEMM input's parts into best[gemm_in]
 * (vLLM: layer.input_scale.max() over a merged layer's shards). */
static nvl_status_t table_scales(const nvl_engine_t *e,
                                 const nvl_weights_t *w, const char *dir,
                                 uint32_t gl, const nvl_layer_tensor_t *rows,
                                 size_t n, float *best)
{
    static const char weight[] = ".weight";
    nvl_status_t st = NVL_OK;
    char name[192];
    for (size_t i = 0; i < n && st == NVL_OK; i++) {
        const nvl_layer_tensor_t *t = &rows[i];
        if (t->gemm_in == NVL_GEMM_IN_NONE ||
            (t->in_layer != NULL && !t->in_layer(&e->cfg, gl)))
            continue;
        int module = (int)(strlen(t->suffix) - (sizeof weight - 1));
        snprintf(name, sizeof name, "model.layers.%u.%.*s.input_scale", gl,
                 module, t->suffix);
        float v = 0.0f;
        st = read_scale(w, dir, name, &v);
        best[t->gemm_in] = fmaxf(best[t->gemm_in], v);
    }
    return st;
}

/* This stage's layer li's input scales (the checkpoint's layer
 * layer0 + li), from its attention variant's table and the shared one
 * (a mixture of experts' layer: its experts'), 1.0 where the checkpoint
 * has none; k_scale and v_scale under either name vLLM reads
 * (".self_attn.k_scale", ModelOpt's ".self_attn.k_proj.k_scale"). */
static nvl_status_t layer_scales(nvl_engine_t *e, const nvl_weights_t *w,
                                 const char *dir, uint32_t li)
{
    static const char *const kv[2][2] = {
        {"self_attn.k_scale", "self_attn.k_proj.k_scale"},
        {"self_attn.v_scale", "self_attn.v_proj.v_scale"}};
    char n[192];
    uint32_t gl = e->layer0 + li; /* the checkpoint's layer */
    float best[NVL_GEMM_IN_COUNT] = {0};
    const nvl_attn_variant_t *v = nvl_attn_variant_of(&e->cfg);
    nvl_status_t st =
        table_scales(e, w, dir, gl, v->tensors, v->n_tensors, best);
    if (st == NVL_OK)
        st = table_scales(e, w, dir, gl, nvl_layer_tensors, NVL_LAYER_COUNT,
                          best);
    for (int g = NVL_GEMM_IN_GATE_UP; g <= NVL_GEMM_IN_DOWN &&
         st == NVL_OK && nvl_model_layer_is_moe(&e->cfg, gl); g++)
        st = expert_scales(e, w, dir, gl, g, &best[g]);
    for (int g = NVL_GEMM_IN_QKV; g < NVL_GEMM_IN_COUNT; g++)
        e->in_scale[(size_t)li * NVL_GEMM_IN_COUNT + (size_t)g] =
            best[g] > 0.0f ? best[g] : 1.0f;
    for (int k = 0; k < 2 && st == NVL_OK; k++) {
        e->kv_scale[(size_t)li * 2 + (size_t)k] = 1.0f;
        for (int j = 0; j < 2 && st == NVL_OK; j++) {
            snprintf(n, sizeof n, "model.layers.%u.%s", gl, kv[k][j]);
            st = read_scale(w, dir, n, &e->kv_scale[(size_t)li * 2 + (size_t)k]);
        }
    }
    return st;
}

/* e->actq: each class's rule, the checkpoint's (nvl_act_quant_of), or
 * for compressed-tensors' groups of several schemes the rule of the
 * group each class takes (nvl_model_gemm_formats), and in e->actq_layer
 * the rule of the group a later layer's class takes; none with
 * --act-quant none, without a checkpoint, and for a class the checkpoint
 * leaves unquantized (bf16 weights: the engines run an unquantized
 * Linear on unquantized inputs). */
static nvl_status_t act_rules(nvl_engine_t *e, const nvl_quant_config_t *q)
{
    nvl_model_formats_t f;
    bool mixed = q != NULL && q->quantized && nvl_quant_config_mixed(q);
    if (mixed && nvl_model_gemm_formats(&e->cfg, q, &f) != NVL_OK)
        return NVL_ERR_INVALID;
    for (int c = 0; c < NVL_QCLASS_COUNT; c++) {
        nvl_quant_config_t own;
        e->actq[c] = NVL_ACT_NONE;
        for (int l = 0; l < NVL_FORMAT_LAYERS; l++)
            e->actq_layer[c][l] = NVL_ACT_COUNT;
        if (q == NULL || e->opts.act_quant_none ||
            e->opts.gemm_dtype[c] == NVL_WDT_BF16 || (mixed && f.group[c] < 0))
            continue;
        if (mixed)
            nvl_quant_config_as_group(q, f.group[c], &own);
        e->actq[c] = nvl_act_quant_of(mixed ? &own : q);
        for (int l = 0; l < NVL_FORMAT_LAYERS && mixed; l++) {
            if (f.layer_group[c][l] == 0)
                continue;
            nvl_quant_config_as_group(q, f.layer_group[c][l] - 1, &own);
            e->actq_layer[c][l] = nvl_act_quant_of(&own);
        }
    }
    return NVL_OK;
}

nvl_status_t nvl_engine_load_quant(nvl_engine_t *e,
                                   const nvl_weights_t *w,
                                   const char *dir)
{
    const nvl_quant_config_t *q = w != NULL ? nvl_weights_quant(w) : NULL;
    nvl_status_t st = act_rules(e, q);
    if (st != NVL_OK)
        return st;
    e->kv_fp8 = e->opts.cost.kv_dtype == NVL_WDT_FP8;
    e->in_scale = malloc(((size_t)e->layers * NVL_GEMM_IN_COUNT + 1) *
                         sizeof *e->in_scale);
    e->kv_scale = malloc(((size_t)e->layers * 2 + 1) * sizeof *e->kv_scale);
    if (e->opts.calibrate)
        e->calib_amax = calloc((size_t)e->layers * NVL_CALIB_COUNT + 1,
                               sizeof *e->calib_amax);
    if (e->in_scale == NULL || e->kv_scale == NULL ||
        (e->opts.calibrate && e->calib_amax == NULL)) {
        nvl_report("out of memory for %u layers' scales", e->layers);
        return NVL_ERR_NOMEM;
    }
    st = NVL_OK;
    for (uint32_t li = 0; li < e->layers && st == NVL_OK; li++) {
        for (int g = 0; g < NVL_GEMM_IN_COUNT; g++)
            e->in_scale[(size_t)li * NVL_GEMM_IN_COUNT + (size_t)g] = 1.0f;
        e->kv_scale[(size_t)li * 2] = e->kv_scale[(size_t)li * 2 + 1] = 1.0f;
        if (w != NULL)
            st = layer_scales(e, w, dir, li);
    }
    return st;
}

nvl_status_t nvl_engine_calib_amax(const nvl_engine_t *e, float *amax_out)
{
    size_t n = (size_t)e->layers * NVL_CALIB_COUNT;
    if (e->calib_amax == NULL || e->stages > 1) {
        nvl_report("calibration needs an engine created with "
                   "opts.calibrate in data mode, without a pipeline");
        return NVL_ERR_INVALID;
    }
    for (size_t i = 0; i < n; i++) /* a NaN survives the max as inf */
        amax_out[i] = isnan(e->calib_amax[i]) ? INFINITY : e->calib_amax[i];
    /* a row-parallel input (o_proj's, down_proj's) and the keys and
     * values are cut over the ranks: the largest over the group */
    MPI_Allreduce(MPI_IN_PLACE, amax_out, (int)n, MPI_FLOAT, MPI_MAX,
                  nvl_comm_mpi(e->tp));
    for (size_t i = 0; i < n; i++)
        if (isinf(amax_out[i])) {
            if (nvl_comm_rank(e->tp) == 0)
                nvl_report("calibration: layer %zu's %s holds a NaN or an "
                           "infinity (ModelOpt's MaxCalibrator refuses "
                           "non-finite activations)",
                           i / NVL_CALIB_COUNT,
                           nvl_quant_calib_point_name(
                               (int)(i % NVL_CALIB_COUNT)));
            return NVL_ERR_INVALID;
        }
    return NVL_OK;
}
