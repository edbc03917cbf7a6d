/* nvlemu: model weights from Hugging Face safetensors checkpoints, read a
 * slice at a time so that a rank holds only its own shard.
 *
 * A checkpoint directory holds model.safetensors, or shards listed by
 * model.safetensors.index.json ("weight_map": tensor -> file).  Opening
 * reads only the files' JSON headers (jansson); reading a slice preads only
 * its bytes.  Tensors of dtype F32, BF16 and F16 are read as float32.
 *
 * A quantized checkpoint (its config.json's quantization_config or
 * ModelOpt's hf_quant_config.json names a format of include/nvlemu/
 * quant.h) stores a weight "P.weight" as that format's parts ("P.weight",
 * "P.weight_scale" ... or "P.weight_blocks", "P.weight_scales"): such a
 * weight reads as its dequantized float32 values, with its logical shape
 * (src/model/qweights.c; docs/quantization.md). */
#ifndef NVLEMU_WEIGHTS_H
#define NVLEMU_WEIGHTS_H

#include <stdbool.h>
#include <stdint.h>

#include "nvlemu/coll.h"
#include "nvlemu/quant.h"
#include "nvlemu/status.h"

#define NVL_TENSOR_MAX_DIMS 4

typedef struct nvl_weights nvl_weights_t;

typedef struct {
    nvl_dtype_t dtype;   /* quantized: NVL_DT_F32, the dtype it reads as */
    int ndim;
    uint64_t shape[NVL_TENSOR_MAX_DIMS];
    bool quantized;      /* stored in the checkpoint's quantized format */
} nvl_tensor_info_t;

/* Opens the checkpoint in dir.  Reports (naming the file and what is wrong:
 * missing, truncated, bad header, an offset past the end, a shape that does
 * not match its bytes, an unsupported dtype is only reported when read) and
 * returns NVL_ERR_IO or NVL_ERR_INVALID.  Close with nvl_weights_close. */
nvl_status_t nvl_weights_open(const char *dir,
                              nvl_weights_t **weights_out);
void nvl_weights_close(nvl_weights_t *w);

/* The quantized format the checkpoint's config declares (quantized
 * false: none); valid while w is open. */
const nvl_quant_config_t *nvl_weights_quant(const nvl_weights_t *w);

/* Whether the checkpoint has a tensor (no report). */
bool nvl_weights_has(const nvl_weights_t *w, const char *name);

/* Shape and dtype of a tensor; reports a missing one, naming it.  A
 * quantized weight: its logical shape, its parts checked (each present,
 * of its dtype, the scales' grid matching the codes; a block size that
 * does not divide the dimension), any fault reported naming the tensor
 * and the file: NVL_ERR_INVALID. */
nvl_status_t nvl_weights_info(const nvl_weights_t *w, const char *name,
                              nvl_tensor_info_t *info_out);

/* Reads rows [row0, row0 + rows) and columns [col0, col0 + cols) of a 2-D
 * tensor (a 1-D tensor is one row; one of more dimensions, as gpt-oss's
 * experts [E, R, C], a matrix of its leading dimensions' rows, [E x R,
 * C]; MX-FP4 blocks [E, R, C/32, 16] likewise read as [E x R, C]) as float32 into data_out (rows x cols,
 * row-major), reading only those bytes.  Reports a missing tensor, a slice
 * outside its shape, or an unsupported dtype, naming the tensor.  A
 * quantized weight is dequantized exactly (each value code x scale
 * [x scale2] rounded once); a slice must hold whole blocks (it starts on
 * a block's first row and column and ends on a block's end or the
 * tensor's), as vLLM and TensorRT-LLM refuse a tensor-parallel part that
 * cuts a block; a NaN, infinite or negative scale in the slice is
 * reported naming the scale tensor, the block and the file. */
nvl_status_t nvl_weights_read_f32(const nvl_weights_t *w, const char *name,
                                  uint64_t row0, uint64_t rows, uint64_t col0,
                                  uint64_t cols, float *data_out);

/* Calls fn(name, ctx) for every stored tensor (file by file, in header
 * order) until one returns an error, which it returns. */
nvl_status_t nvl_weights_foreach(const nvl_weights_t *w,
                                 nvl_status_t (*fn)(const char *name,
                                                    void *ctx),
                                 void *ctx);

/* The stored bytes of tensor `name` as they are (any dtype): *bytes_out
 * (malloc'd, the caller frees), their count, and the dtype as the header
 * spells it (valid while w is open).  Reports a missing tensor. */
nvl_status_t nvl_weights_read_raw(const nvl_weights_t *w, const char *name,
                                  unsigned char **bytes_out,
                                  uint64_t *n_bytes_out,
                                  const char **dtype_out);

/* The dtype of stored tensor `name` as the header spells it ("F32",
 * "F8_E4M3" ...; valid while w is open), no byte read.  Reports a
 * missing tensor. */
nvl_status_t nvl_weights_stored_dtype(const nvl_weights_t *w,
                                      const char *name,
                                      const char **dtype_out);

/* One tensor to write: name, safetensors dtype, shape (ndim 0: a scalar)
 * and bytes. */
typedef struct {
    const char *name;
    const char *dtype;
    int ndim;
    uint64_t shape[NVL_TENSOR_MAX_DIMS];
    const unsigned char *bytes;
    uint64_t n_bytes;
} nvl_st_entry_t;

/* Writes a safetensors file of n tensors, in the given order: the 8-byte
 * little-endian header length, the JSON header (jansson; "__metadata__":
 * {"format": "pt"} as transformers writes it; padded with spaces to a
 * multiple of 8) and the bytes.  Reports an I/O error naming the file. */
nvl_status_t nvl_st_write(const char *path, const nvl_st_entry_t *t,
                          size_t n);

/* What nvlemu quantize writes: the format, the calibrated amax (NULL:
 * none) and whether the checkpoint is for an FP8 KV cache. */
typedef struct {
    nvl_quant_format_t format;
    const nvl_quant_calib_t *calib;
    bool kv_fp8;
} nvl_weights_quant_opts_t;

/* Writes to out_dir (created if absent) the checkpoint in_dir quantized to
 * format q->format as its writer lays it out (src/model/quantize.c):
 * every 2-D "model.layers.*_proj.weight" (attention, MLP and experts'
 * projections) becomes the format's parts, every other tensor is copied
 * in its dtype (lm_head and embeddings stay unquantized, as ModelOpt's
 * default excludes lm_head), in one model.safetensors; config.json gains
 * the writer's quantization_config, hf_quant_config.json is written for
 * ModelOpt's formats (kv_cache_quant_algo "FP8" with q->kv_fp8),
 * generation_config.json is copied.  With q->calib (its layers the
 * model's): each quantized weight's F32 "P.input_scale" where the format
 * has static input scales (nvl_quant_input_scale of its input's amax) and,
 * with q->kv_fp8, each layer's "self_attn.k_proj.k_scale" /
 * "self_attn.v_proj.v_scale" (nvl_quant_kv_scale_fp8), as ModelOpt
 * exports them, or for compressed-tensors' formats (the row's
 * compressed_tensors) "self_attn.k_scale" / "v_scale" [1]
 * (nvl_quant_kv_scale_ct), whose config then ignores a mixture of
 * experts' router ("re:.*mlp.gate$") and with q->kv_fp8 carries
 * kv_cache_scheme.  mxfp4 of a gpt-oss (fused 3-D experts) writes
 * gpt-oss's own layout instead: the experts alone
 * (nvl_quant_mxfp4_experts), openai's quantization_config.  Reports an
 * input already quantized, a tensor the writer refuses (named),
 * calibration of another layer count, --kv-dtype fp8 for gpt-oss's
 * layout, or an I/O error. */
nvl_status_t nvl_weights_quantize(const char *in_dir, const char *out_dir,
                                  const nvl_weights_quant_opts_t *q);

#endif
