/* NCCL's environment as nvlemu reads it: the input's lines are the values
 * of NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE, NCCL_PAT_ENABLE,
 * NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS.  A configuration read without
 * error names its variables back and bounds its channels; with NVLS
 * disabled no NVLS algorithm is enabled. */
#include "fuzz.h"
#include "nvlemu/coll.h"

static const char *const vars[] = {"NCCL_ALGO",          "NCCL_PROTO",
                                   "NCCL_NVLS_ENABLE",   "NCCL_PAT_ENABLE",
                                   "NCCL_MAX_NCHANNELS", "NCCL_MIN_NCHANNELS"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char *text = fuzz_string(data, size);
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        if (line != NULL)
            setenv(vars[i], line, 1);
        else
            unsetenv(vars[i]);
        line = line != NULL ? strtok_r(NULL, "\n", &save) : NULL;
    }
    nvl_tuner_cfg_t cfg;
    if (nvl_tuner_cfg_from_env(&cfg) == NVL_OK) {
        FUZZ_REQUIRE(cfg.max_channels >= 0 && cfg.min_channels >= 0,
                     "channel bounds are not negative");
        const char *nvls = getenv("NCCL_NVLS_ENABLE");
        if (nvls != NULL && strcmp(nvls, "0") == 0)
            FUZZ_REQUIRE(!cfg.algo_enabled[NVL_ALGO_NVLS] &&
                             !cfg.algo_enabled[NVL_ALGO_NVLS_TREE],
                         "NCCL_NVLS_ENABLE=0 disables NVLS");
    }
    free(text);
    return 0;
}
