/* Hugging Face config.json: any text either loads or is refused with a
 * report; a loaded configuration is one the engine can shard (every size
 * positive, heads dividing as the architecture needs, the experts of a
 * mixture consistent). */
#include "fuzz.h"
#include "nvlemu/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char dir[4096];
    fuzz_tmpdir(dir, sizeof dir);
    fuzz_write(dir, "config.json", data, size);
    nvl_model_config_t c;
    if (nvl_model_config_load(dir, &c) == NVL_OK) {
        FUZZ_REQUIRE(c.hidden > 0 && c.layers > 0 && c.vocab > 0 &&
                         c.q_heads > 0 && c.kv_heads > 0 && c.head_dim > 0,
                     "sizes are positive");
        FUZZ_REQUIRE(c.q_heads % c.kv_heads == 0,
                     "query heads are a multiple of KV heads");
        if (c.num_experts > 0)
            FUZZ_REQUIRE(c.top_k >= 1 &&
                             c.top_k <= c.num_experts &&
                             c.moe_intermediate > 0,
                         "a mixture's experts are consistent");
        (void)nvl_model_param_count(&c);
    }
    static const char *const names[] = {"config.json"};
    fuzz_rmdir(dir, names, 1);
    return 0;
}
