/* The parts of a quantized tensor, and what the formats' quantizers and
 * configuration writers share (src/quant/quant_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant_impl.h"

unsigned char *nvl_qt_part(nvl_quant_tensor_t *t, int i,
                           const nvl_quant_part_t *p, int ndim,
                           const uint64_t *shape, uint64_t elem_bytes)
{
    uint64_t n = elem_bytes;
    t->part[i].suffix = p->suffix;
    t->part[i].dtype = p->dtype;
    t->part[i].ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->part[i].shape[d] = shape[d];
        n *= shape[d];
    }
    t->part[i].n_bytes = n;
    t->part[i].bytes = calloc(n + 1, 1);
    if (t->n_parts < i + 1)
        t->n_parts = i + 1;
    if (t->part[i].bytes == NULL)
        nvl_report("out of memory for %llu bytes of a quantized tensor",
                   (unsigned long long)n);
    return t->part[i].bytes;
}

void nvl_quant_tensor_free(nvl_quant_tensor_t *t)
{
    for (int i = 0; i < t->n_parts; i++)
        free(t->part[i].bytes);
    memset(t, 0, sizeof *t);
}

nvl_status_t nvl_qt_check_block(const char *fmt, const char *name, uint64_t n,
                                uint32_t block, bool rows)
{
    if (n % block == 0)
        return NVL_OK;
    nvl_report("tensor '%s': %s %llu is not a multiple of %s's block of %u "
               "(the writer refuses it)",
               name, rows ? "rows" : "columns", (unsigned long long)n, fmt,
               block);
    return NVL_ERR_INVALID;
}

float nvl_qt_amax(const float *w, uint64_t n)
{
    float m = 0.0f;
    for (uint64_t i = 0; i < n; i++)
        m = fmaxf(m, fabsf(w[i]));
    return m;
}

void nvl_qt_put_f32(unsigned char *at, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    for (int k = 0; k < 4; k++)
        at[k] = (unsigned char)(u >> (8 * k));
}

/* modelopt/torch/export/unified_export_hf.py (export_hf_checkpoint) writes
 * hf_quant_config.json as {"producer": {...}, "quantization": {"quant_algo",
 * "kv_cache_quant_algo", "group_size" (NVFP4), "exclude_modules"}}, and
 * config.json's quantization_config as convert_hf_quant_config_format
 * (modelopt/torch/export/convert_hf_config.py) turns it: {"config_groups":
 * {"group_0": {"input_activations", "weights": {"dynamic": false,
 * "num_bits": 8 or 4, "type": "float"[, "group_size": 16]}, "targets":
 * ["Linear"]}}, "ignore", "quant_algo"[, "kv_cache_scheme"], "producer",
 * "quant_method": "modelopt"}; vLLM's ModelOptQuantConfigBase.from_config
 * (vllm/model_executor/layers/quantization/modelopt.py) reads the first
 * under "quantization" and the second flat (`ignore`, kv_cache_scheme). */
void nvl_qc_modelopt(const char *algo, int group_size, json_t *exclude,
                     json_t *qconfig, json_t **hf_out)
{
    json_t *q = json_object();
    json_object_set_new(q, "quant_algo", json_string(algo));
    json_object_set_new(q, "kv_cache_quant_algo", json_null());
    if (group_size > 0)
        json_object_set_new(q, "group_size", json_integer(group_size));
    json_object_set(q, "exclude_modules", exclude);
    json_t *producer =
        json_pack("{s:s, s:s}", "name", "nvlemu", "version", "quantize");
    json_t *w = json_pack("{s:b, s:i, s:s}", "dynamic", 0, "num_bits",
                          group_size > 0 ? 4 : 8, "type", "float");
    if (group_size > 0)
        json_object_set_new(w, "group_size", json_integer(group_size));
    json_object_set_new(
        qconfig, "config_groups",
        json_pack("{s:{s:O, s:o, s:[s]}}", "group_0", "input_activations", w,
                  "weights", w, "targets", "Linear"));
    json_object_set(qconfig, "ignore", exclude);
    json_object_set_new(qconfig, "quant_algo", json_string(algo));
    json_object_set(qconfig, "producer", producer);
    json_object_set_new(qconfig, "quant_method", json_string("modelopt"));
    json_t *hf = json_object();
    json_object_set_new(hf, "producer", producer);
    json_object_set_new(hf, "quantization", q);
    *hf_out = hf;
}

/* compressed-tensors' quantization_config (config/base.py,
 * quantization/quant_config.py) as llm-compressor's W8A8 and W4A16
 * presets write it (quantization/quant_scheme.py: INT8 weights per
 * channel with dynamic per-token int8 activations; W4A16 weights per
 * group of 128, no activation quantization; mxfp4.c's MXFP4A16) */
void nvl_qc_ct(const char *format, json_t *weights, json_t *acts,
               json_t *exclude, json_t *qconfig)
{
    json_t *g = json_pack("{s:[s], s:o, s:o}", "targets", "Linear", "weights",
                          weights, "input_activations", acts);
    json_object_set_new(qconfig, "quant_method",
                        json_string("compressed-tensors"));
    json_object_set_new(qconfig, "format", json_string(format));
    json_object_set_new(qconfig, "quantization_status",
                        json_string("compressed"));
    json_object_set_new(qconfig, "config_groups",
                        json_pack("{s:o}", "group_0", g));
    json_object_set(qconfig, "ignore", exclude);
    json_object_set_new(qconfig, "kv_cache_scheme", json_null());
}

/* llm-compressor's FP8 KV cache recipe (examples/quantization_kv_cache/
 * README.md: kv_cache_scheme {num_bits 8, type float, strategy tensor,
 * dynamic false, symmetric true}) as compressed-tensors serializes its
 * QuantizationArgs (quantization/quant_args.py, validate_model_after:
 * zp_dtype the FP8 dtype), with the observer "static_minmax" (the min and
 * max over every calibration token: llm-compressor observers/min_max.py)
 * whose scales nvlemu quantize --calib writes */
json_t *nvl_quant_ct_kv_scheme(void)
{
    return json_pack("{s:n, s:n, s:b, s:n, s:i, s:s, s:o, s:n, s:s, s:b, "
                     "s:s, s:s}",
                     "actorder", "block_structure", "dynamic", 0,
                     "group_size", "num_bits", 8, "observer", "static_minmax",
                     "observer_kwargs", json_object(), "scale_dtype",
                     "strategy", "tensor", "symmetric", 1, "type", "float",
                     "zp_dtype", "torch.float8_e4m3fn");
}
