/* nvlemu: model weights from Hugging Face safetensors checkpoints, read a
 * slice at a time so that a rank holds only its own shard.
 *
 * A checkpoint directory holds model.safetensors, or shards listed by
 * model.safetensors.index.json ("weight_map": tensor -> file).  Opening
 * reads only the files' JSON headers (jansson); reading a slice preads only
 * its bytes.  Tensors of dtype F32, BF16 and F16 are read as float32. */
#ifndef NVLEMU_WEIGHTS_H
#define NVLEMU_WEIGHTS_H

#include <stdbool.h>
#include <stdint.h>

#include "nvlemu/coll.h"
#include "nvlemu/status.h"

#define NVL_TENSOR_MAX_DIMS 4

typedef struct nvl_weights nvl_weights_t;

typedef struct {
    nvl_dtype_t dtype;
    int ndim;
    uint64_t shape[NVL_TENSOR_MAX_DIMS];
} nvl_tensor_info_t;

/* Opens the checkpoint in dir.  Reports (naming the file and what is wrong:
 * missing, truncated, bad header, an offset past the end, a shape that does
 * not match its bytes, an unsupported dtype is only reported when read) and
 * returns NVL_ERR_IO or NVL_ERR_INVALID.  Close with nvl_weights_close. */
nvl_status_t nvl_weights_open(const char *dir,
                              nvl_weights_t **weights_out);
void nvl_weights_close(nvl_weights_t *w);

/* Whether the checkpoint has a tensor (no report). */
bool nvl_weights_has(const nvl_weights_t *w, const char *name);

/* Shape and dtype of a tensor; reports a missing one, naming it. */
nvl_status_t nvl_weights_info(const nvl_weights_t *w, const char *name,
                              nvl_tensor_info_t *info_out);

/* Reads rows [row0, row0 + rows) and columns [col0, col0 + cols) of a 2-D
 * tensor (a 1-D tensor is one row) as float32 into data_out (rows x cols,
 * row-major), reading only those bytes.  Reports a missing tensor, a slice
 * outside its shape, or an unsupported dtype, naming the tensor. */
nvl_status_t nvl_weights_read_f32(const nvl_weights_t *w, const char *name,
                                  uint64_t row0, uint64_t rows, uint64_t col0,
                                  uint64_t cols, float *data_out);

#endif
