/* A layer's tensors as tables (data mode reads them; both modes take
 * o_proj's GEMM width from its row): what the checkpoint calls each, its
 * shape in the model's widths (elements), the part a rank holds,
 * when the layer has it and which quantized GEMM reads it.
 *
 * Two tables describe a layer: the one every layer shares (its norms, the
 * dense MLP, a mixture of experts' router: layer_tensors.c; the experts
 * themselves are load.c's), and its attention variant's (one file per
 * variant: attn_gqa.c).  load.c walks both to read a layer, actq.c to read
 * its GEMMs' input scales; a variant's maths reads its own tensors by the
 * index of their rows (nvl_layer_weights_t's attn[]).  A variant's file
 * holds all of it: its widths, its table, its maths. */
#ifndef NVLEMU_ENGINE_LAYER_TENSORS_H
#define NVLEMU_ENGINE_LAYER_TENSORS_H

#include "engine_impl.h"

/* A dimension of a tensor in model c: its elements.  The variant that
 * owns a width defines it (attn_gqa.c: q_heads x head_dim ...). */
typedef uint64_t nvl_width_fn(const nvl_model_config_t *c);

/* hidden: the residual stream's width, every variant's input and output */
nvl_width_fn nvl_width_hidden;

/* The part of a tensor one rank holds (nvl_shard_t's ranges).  A head
 * split cuts the dimension into the config's heads, each width / heads
 * wide; a vector's "rows" are its elements. */
typedef enum {
    NVL_SPLIT_WHOLE,      /* all of it, on every rank */
    NVL_SPLIT_Q_ROWS,     /* the rows of the rank's query heads */
    NVL_SPLIT_KV_ROWS,    /* the rows of the kv heads its query heads read */
    NVL_SPLIT_Q_COLS,     /* the columns of its query heads (row-parallel) */
    NVL_SPLIT_INTER_ROWS, /* the rows of its intermediate slice */
    NVL_SPLIT_INTER_COLS  /* the columns of its intermediate slice */
} nvl_split_t;

/* One tensor of a layer.  The checkpoint names it
 * "model.layers.<layer>.<suffix>" (synthetic weights hash the same name). */
typedef struct {
    const char *suffix;
    nvl_width_fn *rows, *cols; /* [rows, cols]; cols NULL: a vector */
    nvl_split_t split;
    /* whether layer `layer` of the model has it (NULL: every layer); a
     * tensor it has is required, and reported by name when missing */
    bool (*in_layer)(const nvl_model_config_t *c, uint32_t layer);
    /* a matrix a quantized GEMM reads: the GEMM input whose scale is its
     * module's "<suffix without .weight>.input_scale" (the largest of a
     * fused GEMM's parts); NVL_GEMM_IN_NONE for the others */
    nvl_gemm_in_t gemm_in;
} nvl_layer_tensor_t;

/* Rows of the shared table (nvl_layer_tensors), in the order load.c reads
 * them: the norms, then (after the attention's) the MLP's. */
typedef enum {
    NVL_LAYER_IN_NORM,
    NVL_LAYER_POST_NORM,
    NVL_LAYER_ROUTER,      /* Qwen3-MoE's mlp.gate */
    NVL_LAYER_ROUTER_OSS,  /* gpt-oss's mlp.router, and its bias */
    NVL_LAYER_ROUTER_BIAS,
    NVL_LAYER_GATE,
    NVL_LAYER_UP,
    NVL_LAYER_DOWN,
    NVL_LAYER_COUNT
} nvl_layer_tensor_id_t;

extern const nvl_layer_tensor_t nvl_layer_tensors[NVL_LAYER_COUNT];

/* An attention variant in data mode: its tensors (row i read into a
 * layer's attn[i]) and its maths. */
typedef struct nvl_attn_variant {
    const char *name;
    const nvl_layer_tensor_t *tensors;
    size_t n_tensors; /* at most NVL_ATTN_TENSORS_MAX */
    size_t o_proj;    /* the row of the output projection, split by query
                         heads' columns: its columns are o_proj's GEMM
                         width in both modes */
    /* Layer li's attention for M rows of n sequences (T[s] new rows of
     * sequence s after past[s] cached): b->h holds the normed rows [M,
     * hidden] and receives o_proj's partial sums (this rank's heads';
     * complete with data-parallel attention); the new positions' keys
     * and values are appended to caches (nvl_engine_kv_store). */
    void (*forward)(nvl_engine_t *e, uint32_t li, int n,
                    nvl_kv_cache_t *caches, const uint64_t *T,
                    const uint64_t *past, uint64_t M, nvl_acts_t *b);
} nvl_attn_variant_t;

/* The part of a [rows, cols] tensor a rank holds: rows [row0, row0 +
 * n_rows) x columns [col0, col0 + n_cols) (a vector: cols 0, its
 * elements [row0, row0 + n_rows), col0 and n_cols 0). */
typedef struct {
    uint64_t rows, cols;
    uint64_t row0, n_rows, col0, n_cols;
} nvl_tensor_part_t;

/* The part of t that shard s of model c holds, by t's split. */
nvl_tensor_part_t nvl_layer_tensor_part(const nvl_layer_tensor_t *t,
                                        const nvl_model_config_t *c,
                                        const nvl_shard_t *s);

/* The model's variant (its config's attn; the variants, one file each,
 * are rows of layer_tensors.c's table). */
const nvl_attn_variant_t *nvl_attn_variant_of(const nvl_model_config_t *c);

#endif
