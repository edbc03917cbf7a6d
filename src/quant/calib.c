/* Calibrated static scales from the amax a calibration pass saw, as
 * NVIDIA ModelOpt exports them (docs/quantization.md, "Calibration"):
 * modelopt/torch/export/quant_utils.py, get_activation_scaling_factor
 * (FP8: get_scaling_factor, amax / maxbound 448; NVFP4:
 * NVFP4QTensor.get_activation_scaling_factor, amax / (6 * 448)) and
 * postprocess_state_dict (k/v_bmm_quantizer._amax / 448, clamped to at
 * least 1.0 for an FP8 KV cache). */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "quant_impl.h"

#define E2M1_MAX 6.0f
#define E4M3_MAX 448.0f

float nvl_quant_input_scale(nvl_quant_format_t f, float amax)
{
    switch (f) {
    case NVL_QUANT_NVFP4:
        return amax / (E2M1_MAX * E4M3_MAX);
    case NVL_QUANT_FP8:
        return amax / E4M3_MAX;
    case NVL_QUANT_MXFP4:
    case NVL_QUANT_FP8_BLOCK:
    case NVL_QUANT_INT8: /* dynamic per token */
    case NVL_QUANT_INT4: /* weight-only */
    case NVL_QUANT_COUNT:
        break;
    }
    return 0.0f;
}

float nvl_quant_kv_scale_fp8(float amax)
{
    return fmaxf(amax / E4M3_MAX, 1.0f);
}

/* calculate_qparams, symmetric: max(|min|, |max|) / (bit_range / 2), the
 * FP8 range [-448, 448]; a zero scale becomes the dtype's eps */
float nvl_quant_kv_scale_ct(float amax)
{
    float s = amax / E4M3_MAX;
    return s == 0.0f ? FLT_EPSILON : s;
}

int nvl_quant_calib_point(const char *name, uint32_t *layer_out)
{
    static const struct {
        const char *proj;
        nvl_calib_point_t point;
    } projs[] = {
        {.proj = "q_proj", .point = NVL_CALIB_QKV},
        {.proj = "k_proj", .point = NVL_CALIB_QKV},
        {.proj = "v_proj", .point = NVL_CALIB_QKV},
        {.proj = "o_proj", .point = NVL_CALIB_O},
        {.proj = "gate_proj", .point = NVL_CALIB_GATE_UP},
        {.proj = "up_proj", .point = NVL_CALIB_GATE_UP},
        {.proj = "down_proj", .point = NVL_CALIB_DOWN},
    };
    unsigned layer = 0;
    int used = 0;
    if (sscanf(name, "model.layers.%u.%n", &layer, &used) != 1 || used == 0)
        return -1;
    const char *dot = strrchr(name, '.');
    if (dot == NULL || strcmp(dot, ".weight") != 0)
        return -1;
    for (size_t i = 0; i < sizeof projs / sizeof projs[0]; i++) {
        size_t n = strlen(projs[i].proj);
        if ((size_t)(dot - name) > n && strncmp(dot - n, projs[i].proj, n) == 0 &&
            dot[-(ptrdiff_t)n - 1] == '.') {
            *layer_out = layer;
            return projs[i].point;
        }
    }
    return -1;
}

const char *nvl_quant_calib_point_name(int point)
{
    static const char *const names[NVL_CALIB_COUNT] = {
        [NVL_CALIB_QKV] = "q/k/v_proj input",
        [NVL_CALIB_O] = "o_proj input",
        [NVL_CALIB_GATE_UP] = "gate/up_proj input",
        [NVL_CALIB_DOWN] = "down_proj input",
        [NVL_CALIB_K] = "keys",
        [NVL_CALIB_V] = "values",
    };
    return point >= 0 && point < NVL_CALIB_COUNT ? names[point] : "?";
}
