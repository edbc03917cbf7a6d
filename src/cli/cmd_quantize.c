/* nvlemu quantize --format F IN_DIR OUT_DIR: a float Hugging Face
 * checkpoint rewritten in a quantized format, as the format's writer lays
 * it out (docs/quantization.md).  One process: not an MPI program. */
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "nvlemu/quant.h"
#include "nvlemu/weights.h"

typedef struct {
    int format;
    int help;
} quantize_args_t;

static const nvl_opt_t quantize_opts[] = {
    {.name = "format", .kind = NVL_OPT_ENUM,
     .offset = offsetof(quantize_args_t, format), .arg = "FORMAT",
     .family = &nvl_quant_format_family, .required = true,
     .doc = "the format to write (`nvlemu --list quant-format`)"},
    {.name = "help", .kind = NVL_OPT_HELP,
     .offset = offsetof(quantize_args_t, help), .doc = "this help"},
};

static const nvl_opts_t quantize_set = {
    .prefix = "quantize",
    .help_hint = "nvlemu quantize --help",
    .usage = "nvlemu quantize --format nvfp4|mxfp4|fp8|fp8-block IN_DIR "
             "OUT_DIR",
    .intro = "Writes the float checkpoint IN_DIR (model.safetensors or an "
             "index, config.json) to OUT_DIR in a quantized format, weight "
             "only, as the format's writer does: ModelOpt's NVFP4 and FP8, "
             "OCP MX-FP4, FP8 in 128 x 128 blocks (docs/quantization.md).",
    .opts = quantize_opts,
    .n_opts = sizeof quantize_opts / sizeof quantize_opts[0],
    .max_args = 2,
};

int nvl_cmd_quantize(int argc, char **argv)
{
    quantize_args_t a = {0};
    int first = argc;
    nvl_status_t st = nvl_opts_parse(&quantize_set, argc, argv, &a, &first);
    if (st == NVL_OK && a.help) {
        nvl_opts_help(&quantize_set, stdout);
        return 0;
    }
    if (st == NVL_OK && argc - first != 2) {
        nvl_report("quantize: expected IN_DIR and OUT_DIR (usage: %s)",
                   quantize_set.usage);
        st = NVL_ERR_INVALID;
    }
    if (st == NVL_OK)
        st = nvl_weights_quantize(argv[first], argv[first + 1],
                                  (nvl_quant_format_t)a.format);
    nvl_opts_free(&quantize_set, &a);
    return st == NVL_OK ? 0 : 1;
}
