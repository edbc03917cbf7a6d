/* Private to src/quant: the formats' quantizers and configuration
 * writers (one file each), and the parts of a quantized tensor. */
#ifndef NVLEMU_QUANT_IMPL_H
#define NVLEMU_QUANT_IMPL_H

#include <jansson.h>

#include "nvlemu/quant.h"

/* Part i of t: format part p (its suffix and dtype) of the given shape
 * and bytes per element (ndim 0: a scalar); zeroed bytes.  Reports and
 * returns NULL when memory runs out. */
unsigned char *nvl_qt_part(nvl_quant_tensor_t *t, int i,
                           const nvl_quant_part_t *p, int ndim,
                           const uint64_t *shape, uint64_t elem_bytes);

/* Reports, naming the tensor, a weight whose columns (rows when `rows`)
 * are not a multiple of the block: NVL_ERR_INVALID; NVL_OK otherwise. */
nvl_status_t nvl_qt_check_block(const char *fmt, const char *name, uint64_t n,
                                uint32_t block, bool rows);

/* max |w| over n values */
float nvl_qt_amax(const float *w, uint64_t n);

/* compressed-tensors' quantization_config q of `file` into out (its
 * scheme as a format, targets, ignore, kv_cache_scheme); an unread scheme
 * or a malformed list reported naming file and key: NVL_ERR_INVALID. */
nvl_status_t nvl_quant_ct_read(const char *file, const json_t *q,
                               nvl_quant_config_t *out);

/* How compressed-tensors stores a weight of format f quantized with the
 * weights' `strategy` under the compression format `compression`
 * ("nvfp4-pack-quantized", "float-quantized"): its row (names, dtypes,
 * blocks; ct_layout.c); NULL where it has none. */
const nvl_quant_row_t *nvl_quant_ct_layout(const char *compression,
                                           const char *strategy,
                                           nvl_quant_format_t f);

/* Whether a compressed-tensors target / ignore entry names module `name`
 * (whole, "re:" from its start, "Linear" any). */
bool nvl_quant_ct_match(const char *entry, const char *name);

/* Writes a little-endian float32 */
void nvl_qt_put_f32(unsigned char *at, float v);

nvl_status_t nvl_qz_nvfp4(const nvl_quant_row_t *r, const char *name,
                          const float *w, uint64_t rows, uint64_t cols,
                          float amax, nvl_quant_tensor_t *out);
nvl_status_t nvl_qz_mxfp4(const nvl_quant_row_t *r, const char *name,
                          const float *w, uint64_t rows, uint64_t cols,
                          float amax, nvl_quant_tensor_t *out);
nvl_status_t nvl_qz_fp8(const nvl_quant_row_t *r, const char *name,
                        const float *w, uint64_t rows, uint64_t cols,
                        float amax, nvl_quant_tensor_t *out);
nvl_status_t nvl_qz_fp8_block(const nvl_quant_row_t *r, const char *name,
                              const float *w, uint64_t rows, uint64_t cols,
                              float amax, nvl_quant_tensor_t *out);

/* compressed-tensors' int8 (per channel) and int4 (per group of 128,
 * packed) writers (int.c; the row's data code picks which) */
nvl_status_t nvl_qz_int(const nvl_quant_row_t *r, const char *name,
                        const float *w, uint64_t rows, uint64_t cols,
                        float amax, nvl_quant_tensor_t *out);
/* compressed-tensors' quantization_config into qconfig: quant_method,
 * `format`, quantization_status "compressed", one config group "group_0"
 * of targets ["Linear"] with `weights` and `acts` (input_activations;
 * both taken), `exclude` as ignore, kv_cache_scheme null (tensor.c). */
void nvl_qc_ct(const char *format, json_t *weights, json_t *acts,
               json_t *exclude, json_t *qconfig);
void nvl_qc_int8(json_t *exclude, json_t *qconfig, json_t **hf_out);
void nvl_qc_int4(json_t *exclude, json_t *qconfig, json_t **hf_out);

void nvl_qc_nvfp4(json_t *exclude, json_t *qconfig, json_t **hf_out);
void nvl_qc_mxfp4(json_t *exclude, json_t *qconfig, json_t **hf_out);
void nvl_qc_fp8(json_t *exclude, json_t *qconfig, json_t **hf_out);
void nvl_qc_fp8_block(json_t *exclude, json_t *qconfig, json_t **hf_out);

/* ModelOpt's hf_quant_config.json for quant_algo algo (group_size 0:
 * none), and config.json's quantization_config as ModelOpt's export
 * converts it (config_groups, ignore; tensor.c, for nvfp4.c and fp8.c). */
void nvl_qc_modelopt(const char *algo, int group_size, json_t *exclude,
                     json_t *qconfig, json_t **hf_out);

#endif
