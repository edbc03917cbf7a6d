/* nvlemu: the tensor-parallel forward pass of a Qwen model in data mode.
 *
 * Each rank of a TP communicator holds only its shard (include/nvlemu/
 * shard.h), read slice by slice from the checkpoint: q/k/v and gate/up
 * column-parallel, o and down row-parallel with an allreduce after each,
 * embedding and lm_head vocab-parallel.  Computes in float32 (BF16/F16
 * weights are converted when read).  The collectives run through
 * include/nvlemu/coll.h, so they also advance the ranks' virtual clocks.
 *
 * Prefill runs a prompt's tokens together; decode then runs one token at a
 * time against a per-sequence key/value cache of this rank's kv heads. */
#ifndef NVLEMU_ENGINE_H
#define NVLEMU_ENGINE_H

#include <stdint.h>

#include "nvlemu/coll.h"
#include "nvlemu/model.h"
#include "nvlemu/status.h"

typedef struct nvl_engine nvl_engine_t;

/* Collective over tp: loads this rank's shard of the model in dir (cfg from
 * nvl_model_config_load).  Reports (naming the tensor or file) and returns
 * an error when a tensor is missing or mis-shaped; the error is agreed across
 * tp so that every rank fails.  Free with nvl_engine_free. */
nvl_status_t nvl_engine_load(const nvl_model_config_t *cfg, const char *dir,
                             nvl_comm_t *tp, nvl_engine_t **out);
void nvl_engine_free(nvl_engine_t *e);

/* Collective over tp: runs `batch` prompts of `len` tokens each (ids:
 * batch x len, row-major) and writes the logits of each prompt's last
 * position (batch x vocab, the full vocabulary on every rank).  Reports a
 * token id outside the vocabulary. */
nvl_status_t nvl_engine_last_logits(nvl_engine_t *e, const int32_t *ids,
                                    int batch, int len, float *logits_out);

/* Collective over tp: greedy generation.  ids holds the batch's prompts one
 * after another (prompt b has lens[b] tokens); writes max_new new tokens per
 * prompt (new_tokens_out: batch x max_new) and, unless NULL, the logits of
 * each prompt's last position (batch x vocab).  Decode uses a KV cache. */
nvl_status_t nvl_engine_generate(nvl_engine_t *e, const int32_t *ids,
                                 const int *lens, int batch, int max_new,
                                 int32_t *new_tokens_out,
                                 float *last_logits_out);

#endif
