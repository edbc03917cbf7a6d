/* Private to src/cli: the model-options block, the engine's options as
 * every command that runs a model takes them (run, generate, serve): one
 * struct each command's arguments embed, one set of option rows, and the
 * one function that turns them into nvl_engine_opts_t (model_opts.c). */
#ifndef NVLEMU_CLI_MODEL_OPTS_H
#define NVLEMU_CLI_MODEL_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "nvlemu/coll.h"
#include "nvlemu/cost.h"
#include "nvlemu/engine.h"
#include "nvlemu/opts.h"
#include "nvlemu/quant.h"

/* --pp-layers: layers per stage, as given (n 0: not given). */
typedef struct {
    uint32_t n;
    uint32_t layers[NVL_ENGINE_PP_MAX];
} nvl_cli_pp_layers_t;

typedef struct {
    nvl_wdtype_t dtype, kv_dtype; /* --dtype, --kv-dtype */
    int attn_choice;       /* --attn: -1 auto (the stack's), else
                              nvl_attn_impl_t */
    nvl_stack_t stack;     /* --stack (or --fusion) */
    nvl_launch_t launch;   /* --launch */
    int allreduce;         /* --allreduce: nvl_ar_impl_t */
    int fuse_ar_norm;      /* --fuse-allreduce-norm */
    nvl_overlap_t overlap; /* --overlap */
    int a2a_onesided;      /* --a2a: 1 for onesided */
    int ep_comm;           /* --ep-comm: nvl_ep_comm_t */
    double kv_host, weights_host; /* --kv-host, --weights-host: a share,
                                     or NVL_HOST_AUTO */
    long ep;               /* --ep: expert-parallel degree (1: none) */
    int attn_dp;           /* --attn-parallel: 1 for dp */
    long layers;           /* --layers: 0 for all */
    double route_skew;     /* --route-skew (timing mode's routing) */
    long pp;               /* --pp: pipeline stages (1: none) */
    nvl_cli_pp_layers_t pp_layers; /* --pp-layers */
    int act_quant;         /* --act-quant: 0 auto, 1 none */
    /* each GEMM class's weight type (nvl_cli_model_opts_resolve) */
    nvl_wdtype_t gemm_dtype[NVL_QCLASS_COUNT];
    /* the layers whose class stays bf16 (nvl_model_formats_t's) */
    uint64_t gemm_bf16_layers[NVL_QCLASS_COUNT][NVL_FORMAT_LAYER_WORDS];
    /* the layers whose class takes another group's type (the engine's
     * gemm_layer_dtype: type + 1, 0 none) */
    uint8_t gemm_layer_dtype[NVL_QCLASS_COUNT][NVL_FORMAT_LAYERS];
    /* a block scale's bytes as the checkpoint stores them (its
     * nvl_quant_config_t's scale_bytes; 0: the format's own) */
    uint32_t weight_scale_bytes;
} nvl_cli_model_opts_t;

/* Parsers of the rows below (cost's parsers under the option's label; an
 * fp4 KV cache refused; "auto" or a fraction from 0 to 1). */
nvl_status_t nvl_cli_parse_wdtype(const char *label, const char *text,
                                  void *dtype_out);
nvl_status_t nvl_cli_parse_kv_dtype(const char *label, const char *text,
                                    void *dtype_out);
/* The same, or "auto" (NVL_CLI_DTYPE_AUTO; --dtype's parser takes it too) */
nvl_status_t nvl_cli_parse_kv_dtype_auto(const char *label,
                                         const char *text, void *dtype_out);
nvl_status_t nvl_cli_parse_launch(const char *label, const char *text,
                                  void *launch_out);
nvl_status_t nvl_cli_parse_attn(const char *label, const char *text,
                                void *choice_out);
nvl_status_t nvl_cli_parse_host_share(const char *label, const char *text,
                                      void *share_out);
/* A comma-separated list of layer counts, each at least 1, at most
 * NVL_ENGINE_PP_MAX of them (into an nvl_cli_pp_layers_t). */
nvl_status_t nvl_cli_parse_pp_layers(const char *label, const char *text,
                                     void *list_out);

/* The rows of the block: for an arguments struct `type` holding an
 * nvl_cli_model_opts_t named `m`.  Values, --help and error texts come
 * from the owners' families (family.h). */
#define NVL_CLI_MO_AT(type, m, field) offsetof(type, m.field)
#define NVL_CLI_MODEL_OPTS(type, m)                                         \
    {.name = "dtype", .kind = NVL_OPT_CUSTOM,                               \
     .offset = NVL_CLI_MO_AT(type, m, dtype), .family = &nvl_wdtype_family, \
     .also = "auto", .def = "auto", .parse = nvl_cli_parse_wdtype,          \
     .doc = "weight type of the projections (auto: a quantized "           \
            "checkpoint's format, else bf16)"},                             \
    {.name = "kv-dtype", .kind = NVL_OPT_CUSTOM,                            \
     .offset = NVL_CLI_MO_AT(type, m, kv_dtype),                            \
     .family = &nvl_kv_dtype_family, .also = "auto", .def = "auto",         \
     .parse = nvl_cli_parse_kv_dtype_auto,                                  \
     .doc = "KV cache type (auto: fp8 where the checkpoint states "         \
            "ModelOpt's kv_cache_quant_algo FP8, else bf16)"},              \
    {.name = "launch", .kind = NVL_OPT_CUSTOM,                              \
     .offset = NVL_CLI_MO_AT(type, m, launch),                              \
     .family = &nvl_launch_family, .def = "graph",                          \
     .parse = nvl_cli_parse_launch,                                         \
     .doc = "how the host launches kernels"},                               \
    {.name = "attn", .kind = NVL_OPT_CUSTOM,                                \
     .offset = NVL_CLI_MO_AT(type, m, attn_choice),                         \
     .family = &nvl_attn_family, .also = "auto", .def = "auto",             \
     .parse = nvl_cli_parse_attn,                                           \
     .doc = "attention kernel (auto: sdpa under --stack torch, else fa4 "   \
            "on GPUs with FP4 units, else fa3)"},                           \
    {.name = "stack", .kind = NVL_OPT_ENUM,                                 \
     .offset = NVL_CLI_MO_AT(type, m, stack), .def = "fused",               \
     .family = &nvl_stack_family,                                           \
     .doc = "the software stack whose kernels a step runs: torch "          \
            "(PyTorch with CUDA graphs, one kernel per F.* call), fused "    \
            "(a serving engine's fused kernels) or compiled (the torch "     \
            "layer under torch.compile: Inductor's kernels)"},              \
    {.name = "fusion", .kind = NVL_OPT_ENUM,                                \
     .offset = NVL_CLI_MO_AT(type, m, stack),                               \
     .family = &nvl_fusion_family,                                          \
     .doc = "older spelling of --stack: none = torch, typical = fused"},    \
    {.name = "allreduce", .kind = NVL_OPT_ENUM,                             \
     .offset = NVL_CLI_MO_AT(type, m, allreduce), .def = "nccl",            \
     .family = &nvl_ar_impl_family,                                         \
     .doc = "the tensor-parallel allreduce: NCCL's, or a serving engine's " \
            "kernel (auto: as TensorRT-LLM's AUTO strategy picks per "      \
            "call; docs/collectives.md)"},                                  \
    {.name = "fuse-allreduce-norm", .kind = NVL_OPT_FLAG,                   \
     .offset = NVL_CLI_MO_AT(type, m, fuse_ar_norm),                        \
     .doc = "run the residual add + RMSNorm after each allreduce inside "   \
            "the allreduce kernel (TensorRT-LLM RESIDUAL_RMS_NORM; needs "  \
            "--allreduce other than nccl)"},                                \
    {.name = "overlap", .kind = NVL_OPT_ENUM,                               \
     .offset = NVL_CLI_MO_AT(type, m, overlap), .def = "none",              \
     .family = &nvl_overlap_family,                                         \
     .doc = "tensor-parallel allreduces overlapped with the row-parallel "  \
            "GEMMs (o_proj, down_proj) in chunks, as async TP / FLUX "     \
            "(none: one after the other)"},                                 \
    {.name = "a2a", .kind = NVL_OPT_ENUM,                                   \
     .offset = NVL_CLI_MO_AT(type, m, a2a_onesided), .def = "nccl",         \
     .family = &nvl_engine_a2a_family,                                      \
     .doc = "expert parallelism's dispatch and combine: NCCL send/recv "    \
            "groups, or one-sided NVLink writes into the peers' buffers "   \
            "(DeepEP-style: low-latency mode in decode, high-throughput in " \
            "prefill)"},                                                    \
    {.name = "ep-comm", .kind = NVL_OPT_ENUM,                               \
     .offset = NVL_CLI_MO_AT(type, m, ep_comm), .def = "auto",              \
     .family = &nvl_engine_ep_comm_family,                                  \
     .doc = "an expert-parallel layer's exchange under attention DP: "     \
            "allgather (TensorRT-LLM's CUTLASS MoE: rows allgathered, "     \
            "outputs reduce-scattered), alltoall (dispatch and combine), "  \
            "auto (allgather with --attn-parallel dp)"},                    \
    {.name = "kv-host", .kind = NVL_OPT_CUSTOM,                             \
     .offset = NVL_CLI_MO_AT(type, m, kv_host), .arg = "auto|FRACTION",     \
     .def = "0", .parse = nvl_cli_parse_host_share,                         \
     .doc = "keep this share of every sequence's KV cache in the host "     \
            "CPU's memory, read over NVLink-C2C every step (auto: what "    \
            "does not fit in HBM)"},                                        \
    {.name = "weights-host", .kind = NVL_OPT_CUSTOM,                        \
     .offset = NVL_CLI_MO_AT(type, m, weights_host),                        \
     .arg = "auto|FRACTION", .def = "0",                                    \
     .parse = nvl_cli_parse_host_share,                                     \
     .doc = "stream this share of each layer's weights from the host "      \
            "CPU's memory over NVLink-C2C every pass (auto: what does not " \
            "fit in HBM)"},                                                 \
    {.name = "ep", .kind = NVL_OPT_LONG,                                    \
     .offset = NVL_CLI_MO_AT(type, m, ep), .arg = "N", .def = "1",          \
     .min = 1, .max = 1 << 20,                                              \
     .doc = "mixture of experts: spread the experts over N groups of "      \
            "ranks (expert parallelism; N divides the rank count; 1: "      \
            "experts tensor-parallel)"},                                    \
    {.name = "attn-parallel", .kind = NVL_OPT_ENUM,                         \
     .offset = NVL_CLI_MO_AT(type, m, attn_dp), .def = "tp",                \
     .family = &nvl_attn_parallel_family,                                   \
     .doc = "mixture of experts: attention tensor-parallel over all "       \
            "ranks, or data-parallel (each rank its own sequences, at "     \
            "least one each)"},                                             \
    {.name = "act-quant", .kind = NVL_OPT_ENUM,                             \
     .offset = NVL_CLI_MO_AT(type, m, act_quant), .def = "auto",            \
     .family = &nvl_act_quant_family,                                       \
     .doc = "quantized weights: quantize each GEMM's input as the serving " \
            "engines run the format (auto: NVFP4 W4A4, FP8 W8A8, MX-FP4 "   \
            "weight-only; docs/quantization.md) or not at all (none)"},     \
    {.name = "layers", .kind = NVL_OPT_LONG,                                \
     .offset = NVL_CLI_MO_AT(type, m, layers), .arg = "N", .min = 1,        \
     .max = 100000, .doc = "run only the first N layers"},                 \
    {.name = "pp", .kind = NVL_OPT_LONG,                                    \
     .offset = NVL_CLI_MO_AT(type, m, pp), .arg = "N", .def = "1",          \
     .min = 1, .max = NVL_ENGINE_PP_MAX,                                    \
     .doc = "pipeline parallelism: the ranks as N stages of ranks/N "       \
            "(TP within a stage), the layers split over them "              \
            "(docs/pipeline.md)"},                                          \
    {.name = "pp-layers", .kind = NVL_OPT_CUSTOM,                           \
     .offset = NVL_CLI_MO_AT(type, m, pp_layers), .arg = "L1,L2,..",        \
     .parse = nvl_cli_parse_pp_layers,                                      \
     .doc = "layers of each pipeline stage, one count per stage, "          \
            "summing to the layers run (default: an even split)"}

/* --route-skew, for the commands that run timing mode (run, serve):
 * generate runs the model's own router. */
#define NVL_CLI_MODEL_OPT_ROUTE_SKEW(type, m)                               \
    {.name = "route-skew", .kind = NVL_OPT_DOUBLE,                          \
     .offset = NVL_CLI_MO_AT(type, m, route_skew), .arg = "S", .def = "0",  \
     .min_d = 0, .max_d = 100,                                              \
     .doc = "timing mode, mixture of experts: tokens pick experts "         \
            "Zipf-distributed with exponent S (0: uniform)"}

/* --dtype auto / --kv-dtype auto before nvl_cli_model_opts_resolve. */
#define NVL_CLI_DTYPE_AUTO NVL_WDT_COUNT

/* The model's own types where the options say auto (their default):
 * for a Hugging Face directory `model` whose checkpoint is quantized
 * (nvl_quant_config_read: quantization_config / hf_quant_config.json)
 * --dtype becomes its format (nvfp4, fp4 for MX-FP4, fp8, fp8-block) and
 * --kv-dtype fp8 where it states ModelOpt's kv_cache_quant_algo "FP8";
 * for a preset its released checkpoint's format (gpt-oss: fp4); else
 * bf16.  Each GEMM class's type (m->gemm_dtype): under auto the
 * checkpoint's or preset's format for the classes it quantizes
 * (nvl_model_gemm_formats), bf16 for the rest; an explicit --dtype on a
 * preset or a bf16 checkpoint: that type for attention, MLP and experts
 * (the router and lm_head stay bf16).  Reports an explicit --dtype that
 * contradicts a quantized checkpoint's format, an unreadable model or
 * quantization config and an exclusion list splitting a class:
 * NVL_ERR_INVALID. */
nvl_status_t nvl_cli_model_opts_resolve(nvl_cli_model_opts_t *m,
                                        const char *model);

/* The weights' types for a report's header: --dtype's name when every
 * GEMM class cfg has runs it (the router and lm_head bf16), else each
 * class with its type ("attention bf16 / experts fp4 / router bf16 /
 * lm_head bf16"), truncated to len. */
void nvl_cli_weights_name(const nvl_model_config_t *cfg,
                          const nvl_cli_model_opts_t *m, char *buf,
                          size_t len);

/* The engine's options of a model run on topo: nvl_engine_opts_default,
 * then the block (--attn auto resolved to the stack's kernel on topo's
 * GPUs); the command sets what is its own (mode, weights_dir, seed).
 * Checks the options together once (nvl_engine_opts_check): reports and
 * returns NVL_ERR_INVALID; *o_out is set either way. */
nvl_status_t nvl_cli_model_opts_engine(const nvl_cli_model_opts_t *m,
                                       const nvl_topo_t *topo,
                                       nvl_engine_opts_t *o_out);

/* "TP N", or "EP e x expert-TP N/e, attention TP|DP N": how `ranks`
 * ranks hold the model, for report headers; at most len bytes with the
 * terminating zero into name_out. */
void nvl_cli_placement_name(int ranks, long ep, bool attn_dp, size_t len,
                            char *name_out);

#endif
