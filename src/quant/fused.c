/* The parts of a fused GEMM by their Hugging Face names: vLLM's
 * QKVParallelLinear and MergedColumnParallelLinear load q/k/v_proj and
 * gate/up_proj as one layer (packed_modules_mapping), and ModelOpt's HF
 * export (unified_export_hf.py, requantize_resmooth_fused_llm_layers)
 * fuses the same modules, an expert's gate/up among them. */
#include <stdio.h>
#include <string.h>

#include "nvlemu/quant.h"

static const char *const groups[2][3] = {
    {"q_proj.weight", "k_proj.weight", "v_proj.weight"},
    {"gate_proj.weight", "up_proj.weight", NULL},
};

int nvl_quant_fused_parts(const char *name, char parts_out[3][256])
{
    size_t n = strlen(name);
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < 3 && groups[g][k] != NULL; k++) {
            size_t m = strlen(groups[g][k]);
            /* P.part: P ends in '.' (or is empty) */
            if (n < m || strcmp(name + n - m, groups[g][k]) != 0 ||
                (n > m && name[n - m - 1] != '.'))
                continue;
            int c = 0;
            for (int i = 0; i < 3 && groups[g][i] != NULL; i++)
                snprintf(parts_out[c++], 256, "%.*s%s", (int)(n - m), name,
                         groups[g][i]);
            return c;
        }
    snprintf(parts_out[0], 256, "%s", name);
    return 1;
}
