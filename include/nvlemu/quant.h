/* nvlemu: the numerics of quantized weights as users deploy them: NVIDIA
 * ModelOpt's NVFP4, OCP MX-FP4, FP8 per tensor and FP8 in 128 x 128
 * blocks (docs/quantization.md cites the specification or the writer's
 * source of every layout detail).
 *
 * A format is a row of one table (the family "quant-format"): the element
 * and scale codes, the block a scale covers, the stored tensors a weight
 * becomes (their name suffixes and safetensors dtypes) and the writer's
 * quantizer.  Dequantizing reads only these rows, so adding a format is
 * adding a row and its quantizer.  Pure: no files, no MPI (the checkpoint
 * reader, src/model/weights.c, does the I/O and calls in here). */
#ifndef NVLEMU_QUANT_H
#define NVLEMU_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvlemu/family.h"
#include "nvlemu/status.h"

struct json_t; /* jansson's */

typedef enum {
    NVL_QUANT_NVFP4,     /* ModelOpt NVFP4: E2M1 x E4M3 per 16 x FP32 */
    NVL_QUANT_MXFP4,     /* OCP MX-FP4: E2M1 x E8M0 per 32 */
    NVL_QUANT_FP8,       /* ModelOpt FP8: E4M3 x FP32 per tensor */
    NVL_QUANT_FP8_BLOCK, /* E4M3 x FP32 weight_scale_inv per 128 x 128 */
    NVL_QUANT_INT8,      /* compressed-tensors W8A8 int8: int8 x a scale
                            per output channel */
    NVL_QUANT_INT4,      /* compressed-tensors W4A16 int4 (pack-quantized):
                            int4 x a scale per 1 x 128 group */
    NVL_QUANT_COUNT
} nvl_quant_format_t;

/* How one element or one scale is coded. */
typedef enum {
    NVL_QCODE_E2M1, /* 4 bits, two per byte: element 2i in the low nibble */
    NVL_QCODE_E4M3, /* OCP FP8 E4M3 "fn": bias 7, no infinities,
                       S.1111.111 NaN */
    NVL_QCODE_E8M0, /* OCP MX scale: 2^(code - 127), 0xFF NaN */
    NVL_QCODE_F32,  /* IEEE binary32, little-endian */
    NVL_QCODE_BF16, /* bfloat16, little-endian (compressed-tensors' scales
                       in a bf16 model's dtype) */
    NVL_QCODE_F16,  /* IEEE binary16, little-endian (a float16 model's) */
    NVL_QCODE_I8,   /* two's complement int8 */
    NVL_QCODE_I4    /* int4 as compressed-tensors' pack_to_int32 stores it:
                       q + 8 in 4 bits, eight to a little-endian int32,
                       element 8w + j in bits 4j..4j+3 of word w (so
                       element 2i in the low nibble of byte i) */
} nvl_qcode_t;

/* A stored tensor of a quantized weight "P.weight": "P." + suffix. */
typedef struct {
    const char *suffix; /* "weight", "weight_scale", ...; NULL: none */
    const char *dtype;  /* its safetensors dtype: "U8", "F8_E4M3", "F32" */
    nvl_qcode_t code;
    /* other dtypes the writer may store it in (NULL: none) and their
     * codes: compressed-tensors writes scales in the model's dtype */
    const char *dtype_alt, *dtype_alt2;
    nvl_qcode_t code_alt, code_alt2;
} nvl_quant_part_t;

/* What a format's quantizer writes for one weight: its parts in the
 * order of the row (data, scale, scale2), each with its shape and bytes
 * (owned; nvl_quant_tensor_free releases them). */
typedef struct {
    int n_parts;
    struct {
        const char *suffix;
        const char *dtype;
        int ndim;
        uint64_t shape[4];
        unsigned char *bytes;
        uint64_t n_bytes;
    } part[3];
} nvl_quant_tensor_t;

typedef struct nvl_quant_row {
    nvl_member_t m;
    const char *algo;        /* the name the checkpoint's config gives it */
    uint32_t block_rows;     /* rows of the weight one scale covers (1: a
                                row's own scales; 0: all rows) */
    uint32_t block_cols;     /* columns one scale covers (0: all) */
    bool partial_blocks;     /* a dimension need not divide the block (the
                                last block is short), as vLLM reads
                                weight_scale_inv; else refused */
    nvl_quant_part_t data;   /* the codes */
    nvl_quant_part_t scale;  /* per block */
    nvl_quant_part_t scale2; /* per tensor, multiplied in last; suffix NULL
                                (left out of a row): none */
    /* scale2 divides instead (compressed-tensors' weight_global_scale,
     * 448 x 6 / amax, the reciprocal of ModelOpt's weight_scale_2) */
    bool scale2_divides;
    /* ModelOpt's export gives the parts of a fused GEMM (q/k/v, gate/up)
     * one per-tensor amax, the largest of theirs (NVFP4's weight_scale_2;
     * FP8 per tensor is left out of that fusion, and the block formats
     * have no per-tensor scale) */
    bool fused_amax;
    /* nvlemu quantize writes it as compressed-tensors does (quant_method
     * "compressed-tensors": `ignore` with a mixture of experts' router,
     * `kv_cache_scheme`, the attention's k_scale / v_scale), else as
     * ModelOpt or Qwen's FP8 releases do */
    bool compressed_tensors;
    /* The writer's quantizer of a rows x cols float32 weight, writing the
     * parts this row describes (row: itself); amax > 0: the per-tensor
     * amax its scale takes, else the weight's own max |w|.  Reports
     * (naming `name`) a shape the writer refuses: NVL_ERR_INVALID. */
    nvl_status_t (*quantize)(const struct nvl_quant_row *row, const char *name,
                             const float *w, uint64_t rows, uint64_t cols,
                             float amax, nvl_quant_tensor_t *out);
    /* The writer's configuration keys (nvl_quant_config_write). */
    void (*write_config)(struct json_t *exclude, struct json_t *qconfig,
                         struct json_t **hf_out);
} nvl_quant_row_t;

/* The family of formats (`nvlemu --list quant-format`), its rows indexed
 * by nvl_quant_format_t. */
extern const nvl_family_t nvl_quant_format_family;

/* The row of format f (0 <= f < NVL_QUANT_COUNT). */
const nvl_quant_row_t *nvl_quant_row(nvl_quant_format_t f);

/* ---- codes ---- */

/* Value of an E2M1 code (low 4 bits of c), as OCP MX v1.0 lists them. */
float nvl_e2m1_decode(uint8_t c);
/* E2M1 code of x, rounded to nearest, ties to even, saturating at +-6, as
 * ModelOpt's NVFP4QTensor._cast_fp4 (-0.0 and NaN: see quant/codes.c). */
uint8_t nvl_e2m1_encode(float x);
/* Value of an E4M3 (fn) code: NaN for 0x7F and 0xFF. */
float nvl_e4m3_decode(uint8_t c);
/* E4M3 (fn) code of x as torch's float32 -> float8_e4m3fn cast rounds:
 * nearest, ties to even, |x| < 480 rounds onto the grid (448 at most),
 * |x| >= 480, infinities and NaN give NaN (0x7F, sign kept). */
uint8_t nvl_e4m3_encode(float x);
/* Value of an E8M0 code: 2^(c - 127); NaN for 0xFF. */
float nvl_e8m0_decode(uint8_t c);

/* ---- dequantizing ---- */

/* A scale's value from its stored bytes (code: E4M3, E8M0, F32, BF16 or
 * F16). */
float nvl_quant_scale_value(nvl_qcode_t code, const unsigned char *bytes);

/* Bytes of one stored scale of code c (F32 4, BF16 and F16 2, else 1). */
uint32_t nvl_quant_code_bytes(nvl_qcode_t c);

/* Codes per stored element of a row's data: 2 for E2M1 (U8), 8 for I4
 * (I32), else 1. */
uint32_t nvl_quant_codes_per_elem(const nvl_quant_row_t *r);

/* The scale grid of a rows x cols weight stored as row r lays it out. */
void nvl_quant_row_grid(const nvl_quant_row_t *r, uint64_t rows,
                        uint64_t cols, uint64_t grid_out[2]);

/* A compressed-tensors layout's row by its name ("float-quantized/channel",
 * `nvl_quant_ct_layout`'s rows, src/quant/ct_layout.c); NULL: none. */
const nvl_quant_row_t *nvl_quant_ct_row(const char *name);

/* Columns [col0, col0 + cols) of one row of a weight stored as row r
 * describes (nvl_quant_row, or a checkpoint's own layout: the config's
 * `stored`): `data` holds that row's codes from column col0 on (col0 even
 * for E2M1), scales[k] the value of the scale of columns
 * col0 + k * block_cols .. (scales[0] only for one scale a row or a
 * tensor), scale2 the per-tensor second scale (1 when the format has
 * none).  Each value is the exact code x scale x scale2 (code x scale /
 * scale2 where r->scale2_divides) rounded once to float32. */
void nvl_quant_dequant_row(const nvl_quant_row_t *r, const unsigned char *data,
                           uint64_t col0, uint64_t cols, const float *scales,
                           float scale2, float *out);

/* Bytes of `cols` codes of a row (cols even for E2M1, a multiple of 8
 * for I4). */
uint64_t nvl_quant_data_bytes(nvl_quant_format_t f, uint64_t cols);

/* The scale grid of a rows x cols weight in format f: rows and columns of
 * scales (a per-tensor scale: 1 x 1). */
void nvl_quant_scale_grid(nvl_quant_format_t f, uint64_t rows, uint64_t cols,
                          uint64_t grid_out[2]);

/* ---- quantizing ---- */

/* Quantizes a rows x cols weight as format f's writer does; amax > 0:
 * the per-tensor amax of the GEMM it is fused in (the row's fused_amax),
 * 0: the weight's own (ignored by a format without a per-tensor scale). */
nvl_status_t nvl_quant_tensor(nvl_quant_format_t f, const char *name,
                              const float *w, uint64_t rows, uint64_t cols,
                              float amax, nvl_quant_tensor_t *out);

/* The weights an engine runs as one GEMM with weight `name` (vLLM's
 * merged QKV and gate_up layers, the parts ModelOpt's export fuses):
 * for P.{q,k,v}_proj.weight the three, for P.{gate,up}_proj.weight the
 * two (an expert's too), each at most 256 bytes, `name` among them;
 * else `name` alone.  Returns their number. */
int nvl_quant_fused_parts(const char *name, char parts_out[3][256]);

/* gpt-oss's MX-FP4 experts (src/quant/mxfp4_gptoss.c): the fused experts
 * tensor `name` w [experts, in, out] (float32, row-major) as its release
 * stores it, parts "_blocks" U8 [experts, out, in / 32, 16] and "_scales"
 * U8 [experts, out, in / 32] (suffixes appended to the tensor's name),
 * rounded as triton_kernels' downcast_to_mxfp_torch of the weights in
 * bf16, as transformers' quantize_to_mxfp4 runs it (the scale 2^ceil(log2(max
 * / 6))).  Reports `in` not a multiple of 32 or a non-finite group
 * (naming the tensor): NVL_ERR_INVALID. */
nvl_status_t nvl_quant_mxfp4_experts(const char *name, const float *w,
                                     uint64_t experts, uint64_t in,
                                     uint64_t out, nvl_quant_tensor_t *out_t);
/* openai/gpt-oss-20b's quantization_config keys into qconfig. */
void nvl_quant_gptoss_config(struct json_t *qconfig);
void nvl_quant_tensor_free(nvl_quant_tensor_t *t);

/* ---- checkpoint configuration ---- */

/* The classes of GEMM weights a checkpoint may store in different
 * formats (a weight format per class: the released gpt-oss keeps its
 * attention in bf16 and its experts in MX-FP4).  Rows of
 * nvl_quant_class_family (`nvlemu --list gemm-class`, src/quant/config.c:
 * each with the module names its weights sit under). */
typedef enum {
    NVL_QCLASS_ATTN,    /* q/k/v/o projections */
    NVL_QCLASS_MLP,     /* a dense MLP's gate/up/down */
    NVL_QCLASS_EXPERTS, /* a mixture of experts' experts */
    NVL_QCLASS_ROUTER,  /* a mixture of experts' router (gate) */
    NVL_QCLASS_LM_HEAD, /* the output projection */
    NVL_QCLASS_COUNT
} nvl_quant_class_t;

extern const nvl_family_t nvl_quant_class_family;

/* Whether format f's serving engines quantize class c's weights at all
 * (before a checkpoint's exclusions): MX-FP4 only the experts (vLLM's
 * Mxfp4Config gives every linear layer UnquantizedLinearMethod), the
 * others attention, dense MLPs and experts; the router and lm_head never
 * (vLLM builds the MoE gate with quant_config None, and its lm_head is a
 * ParallelLMHead, not a LinearBase the ModelOpt/FP8 configs quantize). */
bool nvl_quant_class_covered(nvl_quant_format_t f, nvl_quant_class_t c);

#define NVL_QUANT_EXCLUDE_MAX 64
#define NVL_QUANT_GROUP_MAX 8

/* One compressed-tensors config group as nvlemu reads it: its weights'
 * format, their layout, its activations (weight_only: input_activations
 * null; act_dynamic: FP8 per token) and its targets, entries
 * target0 .. target0 + n_target - 1 of its config's target list. */
typedef struct {
    char name[64];
    nvl_quant_format_t format;
    const nvl_quant_row_t *stored;
    bool weight_only, act_dynamic;
    int target0, n_target;
} nvl_quant_group_t;

typedef struct {
    bool quantized;
    nvl_quant_format_t format;
    /* FP8 per tensor without a static input scale (quant_method "fp8",
     * activation_scheme "dynamic", no weight_block_size): activations
     * quantized per token at run time, as vLLM's Fp8LinearMethod runs it */
    bool act_dynamic;
    /* the KV cache the checkpoint was calibrated for: ModelOpt's
     * kv_cache_quant_algo "FP8" */
    bool kv_fp8;
    char file[1024]; /* the file that said so */
    /* the modules left unquantized: ModelOpt's exclude_modules, or
     * modules_to_not_convert (fp8, mxfp4), as written (wildcards '*') */
    const char *exclude_key; /* the key read (a literal), NULL: none */
    int n_exclude;
    char exclude[NVL_QUANT_EXCLUDE_MAX][160];
    /* compressed-tensors (quant_method "compressed-tensors"): exclude is
     * its `ignore` list, target its groups' targets, each a module name
     * matched whole, "re:" and a regular expression matched from the
     * name's start, or "Linear" (targets: every GEMM); its tensors are
     * read in the layout `stored` names */
    bool compressed_tensors;
    int n_target;
    char target[NVL_QUANT_EXCLUDE_MAX][160];
    /* how a weight's tensors are stored where they differ from the
     * format's own row (compressed-tensors' layouts, src/quant/
     * ct_layout.c); NULL: nvl_quant_row(format) */
    const nvl_quant_row_t *stored;
    /* the checkpoint quantizes weights only (compressed-tensors'
     * input_activations null: W4A16, W8A16): --act-quant auto is none */
    bool weight_only;
    /* compressed-tensors' config groups in the file's order (format,
     * stored, weight_only and act_dynamic above are the first's; groups
     * of other schemes make the checkpoint mixed, each module read and
     * priced in its own group's: nvl_quant_config_group) */
    int n_group;
    nvl_quant_group_t group[NVL_QUANT_GROUP_MAX];
    /* the bytes of one stored scale where the layout takes the model's
     * dtype (compressed-tensors' weight_scale: F32, BF16 or F16, as
     * _initialize_scale_zero_point creates it in the weight's dtype):
     * config.json's "dtype" ("torch_dtype") bfloat16 or float16 2,
     * float32 4; 0 where the layout fixes it or the config names none */
    uint32_t scale_bytes;
} nvl_quant_config_t;

/* The config group of q that quantizes module `name` ("model.layers.0.
 * self_attn.q_proj"), as compressed-tensors' find_name_or_class_matches
 * orders a module's matching targets (whole names, then "re:"
 * expressions, each sorted, then a class name, "Linear"): its index, or
 * -1 (not compressed-tensors, no group targets it, or q ignores it).
 * *other_out: the group vLLM's find_matched_target picks instead (the
 * first matching target in the file's order) where the two differ, else
 * -1. */
int nvl_quant_config_group(const nvl_quant_config_t *q, const char *name,
                           int *other_out);

/* q read as its group g alone (0 <= g < q->n_group): g's format, layout
 * and activations in place of the first group's. */
void nvl_quant_config_as_group(const nvl_quant_config_t *q, int g,
                               nvl_quant_config_t *out);

/* Whether q's groups quantize in more than one scheme (format, layout or
 * activations). */
bool nvl_quant_config_mixed(const nvl_quant_config_t *q);

/* Whether q leaves module `name` unquantized: an entry of its exclusion
 * list names it (*entry_out its index; nvl_quant_module_excluded, or
 * compressed-tensors' whole-name / "re:" rule), or no target of a
 * compressed-tensors group covers it (*entry_out -1). */
bool nvl_quant_config_skips(const nvl_quant_config_t *q, const char *name,
                            int *entry_out);

/* Whether the module `name` ("model.layers.3.self_attn.q_proj") is
 * excluded by `pattern`: the pattern matches the name or one of its
 * dot-separated prefixes ("model.layers.3.self_attn"), as Python's
 * fnmatch matches (fnmatch(3) without escapes: '*' any run of characters,
 * dots included, '?' one, [...] a set; vLLM's ModelOpt configs match
 * exclude_modules so; gpt-oss lists parent modules, model.layers.*.self_attn). */
bool nvl_quant_module_excluded(const char *pattern, const char *name);

/* Reads the quantization a checkpoint directory declares: ModelOpt's
 * hf_quant_config.json ("quantization": {"quant_algo": "NVFP4" | "FP8",
 * "group_size"}), else config.json's "quantization_config" (quant_method
 * "modelopt" with quant_algo, "fp8" with or without weight_block_size
 * [128, 128], "mxfp4", "compressed-tensors" with up to
 * NVL_QUANT_GROUP_MAX config_groups, each of a scheme nvlemu reads:
 * src/quant/ct_config.c); neither: not quantized.  The exclusion list
 * (exclude_modules / modules_to_not_convert; null or absent: none) must
 * be an array of strings of fewer than 160 characters, at most
 * NVL_QUANT_EXCLUDE_MAX of them.  Reports an unknown
 * quant_algo / quant_method, a block size nvlemu does not read or a
 * malformed file, naming the file and the key: NVL_ERR_INVALID. */
nvl_status_t nvl_quant_config_read(const char *dir, nvl_quant_config_t *out);

/* Writes format f's configuration as its writer does: the keys of
 * config.json's "quantization_config" into qconfig (an empty object), and
 * hf_quant_config.json's whole object into *hf_out (NULL for formats
 * whose writer has none).  `exclude` names the modules left unquantized. */
void nvl_quant_config_write(nvl_quant_format_t f, struct json_t *exclude,
                            struct json_t *qconfig, struct json_t **hf_out);

/* ---- activations and the KV cache (src/quant/act.c) ---- */

/* How a quantized GEMM's input is quantized, as the serving engines run
 * each format (docs/quantization.md, "Activations"). */
typedef enum {
    NVL_ACT_NONE,        /* weight-only: the input stays as computed */
    NVL_ACT_NVFP4,       /* E2M1 x E4M3 per 16, global scale 1/input_scale */
    NVL_ACT_FP8_TENSOR,  /* E4M3 x the static per-tensor input_scale */
    NVL_ACT_FP8_GROUP,   /* E4M3 x a dynamic scale per 1 x 128 group */
    NVL_ACT_FP8_TOKEN,   /* E4M3 x a dynamic scale per token (row) */
    NVL_ACT_NVFP4_GS,    /* NVFP4 with compressed-tensors' input_global_scale
                            (the global scale itself, not its reciprocal) */
    NVL_ACT_INT8_TOKEN,  /* int8 x a dynamic scale per token (W8A8 int8) */
    NVL_ACT_COUNT
} nvl_act_quant_t;

#define NVL_NVFP4_ACT_BLOCK 16
#define NVL_FP8_ACT_GROUP 128

/* The family "act-quant" (--act-quant): auto (the format's own scheme,
 * nvl_act_quant_of) and none (weight-only); values index nothing else. */
extern const nvl_family_t nvl_act_quant_family;

/* The activation scheme the serving engines run with the weights of the
 * checkpoint q declares: NVFP4 W4A4 (vLLM ModelOptNvFp4LinearMethod,
 * TensorRT-LLM NVFP4 Linear; compressed-tensors' NVFP4 with its global
 * scales, CompressedTensorsW4A4Fp4), ModelOpt FP8 W8A8 with static input scales,
 * FP8 per tensor with activation_scheme "dynamic" per token and FP8
 * blocks with dynamic 1 x 128 groups (vLLM Fp8LinearMethod); MX-FP4
 * weight-only; NVL_ACT_NONE when q is not quantized or quantizes weights
 * only (q->weight_only). */
nvl_act_quant_t nvl_act_quant_of(const nvl_quant_config_t *q);

/* E4M3 rounding of x saturated at +-448 (CUDA's __NV_SATFINITE cast), as
 * a float. */
float nvl_e4m3_round_sat(float x);

/* The values a GEMM reads for n input elements of one row (the row's
 * first element on a block boundary; a short last block is its own):
 * NVFP4 per 16 with the checkpoint's input_scale; FP8 with the static
 * per-tensor scale; FP8 per group of `group` with a dynamic scale.  in
 * and out may be the same. */
void nvl_act_quant_nvfp4(const float *x, uint64_t n, float input_scale,
                         float *out);
/* NVFP4 with the global scale gs itself (compressed-tensors'
 * input_global_scale, which vLLM's CompressedTensorsW4A4Fp4 hands
 * scaled_fp4_quant as is): the blocks as nvl_act_quant_nvfp4 with
 * input_scale 1 / gs, without rounding gs through its reciprocal. */
void nvl_act_quant_nvfp4_gs(const float *x, uint64_t n, float gs,
                            float *out);
void nvl_act_quant_fp8_tensor(const float *x, uint64_t n, float scale,
                              float *out);
void nvl_act_quant_fp8_group(const float *x, uint64_t n, uint64_t group,
                             float *out);
/* One token's n input elements (the row this rank holds) with its own
 * dynamic scale max(amax / 448, 1 / (448 x 512)), as vLLM's per-token FP8
 * quantization (QuantFP8, dynamic_per_token_scaled_fp8_quant). */
void nvl_act_quant_fp8_token(const float *x, uint64_t n, float *out);
/* One token's n input elements in int8 with its own dynamic scale
 * amax / 127, as vLLM's dynamic_scaled_int8_quant (x x (127 / amax)
 * rounded to nearest even and saturated to int8; the GEMM reads
 * q x amax / 127); a zero row gives zeros. */
void nvl_act_quant_int8_token(const float *x, uint64_t n, float *out);

/* The values an FP8 (E4M3) KV cache returns for n keys or values stored
 * with scale (k_scale / v_scale; 1.0 without calibrated scales). */
void nvl_kv_quant_fp8(const float *x, uint64_t n, float scale, float *out);


/* ---- calibration (src/quant/calib.c) ---- */

/* What a calibration pass records per layer: the largest |x| of each
 * quantized GEMM's input (a fused GEMM's parts read one input: q/k/v,
 * gate/up) and of the keys (after RoPE) and values the KV cache stores,
 * as ModelOpt's input quantizers and k/v_bmm_quantizers see them. */
typedef enum {
    NVL_CALIB_QKV,
    NVL_CALIB_O,
    NVL_CALIB_GATE_UP,
    NVL_CALIB_DOWN,
    NVL_CALIB_K,
    NVL_CALIB_V,
    NVL_CALIB_COUNT
} nvl_calib_point_t;

/* A model's calibrated amax: amax[layer * NVL_CALIB_COUNT + point] for
 * layers 0 .. layers - 1 (borrowed by whoever is given it). */
typedef struct {
    uint32_t layers;
    const float *amax;
} nvl_quant_calib_t;

/* The static input scale ModelOpt exports for format f from the input's
 * amax: NVFP4 amax / (6 x 448), FP8 amax / 448; 0 for formats whose
 * activations are dynamic or unquantized (MX-FP4, FP8 blocks), which
 * store none. */
float nvl_quant_input_scale(nvl_quant_format_t f, float amax);

/* An FP8 KV cache's k_scale or v_scale from the keys' or values' amax:
 * max(amax / 448, 1), ModelOpt's export (postprocess_state_dict). */
float nvl_quant_kv_scale_fp8(float amax);

/* The same as compressed-tensors computes it for a static FP8 KV cache
 * (quantization/utils/helpers.py, calculate_qparams): amax / 448, float32's
 * epsilon where amax is 0. */
float nvl_quant_kv_scale_ct(float amax);

/* compressed-tensors' kv_cache_scheme for an FP8 KV cache with static
 * per-tensor scales (a new object, the caller's to free; tensor.c). */
struct json_t *nvl_quant_ct_kv_scheme(void);

/* The calibration point whose input the weight `name`
 * ("model.layers.N.<...>.{q,k,v,o,gate,up,down}_proj.weight") reads, and
 * its layer N in *layer_out; -1 for any other tensor. */
int nvl_quant_calib_point(const char *name, uint32_t *layer_out);

/* "q/k/v_proj input", ..., "keys", "values" for a calibration point. */
const char *nvl_quant_calib_point_name(int point);

#endif
