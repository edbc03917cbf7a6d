/* Private to src/model: the safetensors reader's pieces that the
 * quantized-weight reader (qweights.c) builds on.  weights.c holds the
 * files; qweights.c answers nvl_weights_info / nvl_weights_read_f32,
 * dequantizing where the checkpoint's config declares a format and
 * calling the plain readers below otherwise. */
#ifndef NVLEMU_WEIGHTS_IMPL_H
#define NVLEMU_WEIGHTS_IMPL_H

#include "nvlemu/quant.h"
#include "nvlemu/weights.h"

/* A stored tensor: its file, dtype, shape and bytes. */
typedef struct {
    const char *file;  /* the safetensors file's path */
    int fd;
    const char *dtype; /* as the header spells it: "U8", "F8_E4M3" ... */
    int ndim;
    uint64_t shape[NVL_TENSOR_MAX_DIMS];
    uint64_t base;     /* its first byte in the file */
    uint64_t n_bytes;
} nvl_st_ref_t;

/* The stored tensor `name` (no report when absent: false). */
bool nvl_st_find(const nvl_weights_t *w, const char *name, nvl_st_ref_t *ref);

/* Bytes [at, at + n) of a stored tensor; reports a short read naming the
 * tensor and file: NVL_ERR_IO. */
nvl_status_t nvl_st_pread(const nvl_st_ref_t *ref, const char *name,
                          uint64_t at, uint64_t n, void *buf);

/* The format the checkpoint's config declares (quantized false: none). */
const nvl_quant_config_t *nvl_st_quant(const nvl_weights_t *w);

/* nvl_weights_info and nvl_weights_read_f32 of a tensor stored as F32,
 * BF16 or F16 (weights.c). */
nvl_status_t nvl_st_plain_info(const nvl_weights_t *w, const char *name,
                               nvl_tensor_info_t *info_out);
nvl_status_t nvl_st_plain_read_f32(const nvl_weights_t *w, const char *name,
                                   uint64_t row0, uint64_t rows, uint64_t col0,
                                   uint64_t cols, float *data_out);

#endif
