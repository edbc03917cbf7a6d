/* Topology files: any text either loads or is refused with a report; one
 * that loads exports to a file that loads to an equal topology with the
 * same hash (nvl_topo_export's contract), and exporting that again gives
 * the same text. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char *text = fuzz_string(data, size);
    nvl_topo_t *t = NULL;
    if (nvl_topo_load_string(text, "fuzz.topo", &t) == NVL_OK) {
        char *out = fuzz_topo_export(t);
        nvl_topo_t *back = NULL;
        FUZZ_REQUIRE(nvl_topo_load_string(out, "export", &back) == NVL_OK,
                     "the export of a loaded topology loads");
        FUZZ_REQUIRE(nvl_topo_equal(t, back), "export/reload is equal");
        FUZZ_REQUIRE(nvl_topo_hash(t) == nvl_topo_hash(back),
                     "export/reload keeps the hash");
        char *again = fuzz_topo_export(back);
        FUZZ_REQUIRE(strcmp(out, again) == 0, "the export is canonical");
        free(again);
        free(out);
        nvl_topo_free(back);
        nvl_topo_free(t);
    }
    free(text);
    return 0;
}
