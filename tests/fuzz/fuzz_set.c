/* --set on a loaded topology: each line of the input is one assignment.  A
 * refused one leaves the topology unchanged (same hash, equal); after an
 * accepted one the topology exports and reloads to an equal one. */
#include "fuzz.h"

static char *base_text; /* the base topology, exported once */

static void reload_equal(const nvl_topo_t *t)
{
    char *buf = fuzz_topo_export(t);
    nvl_topo_t *back = NULL;
    FUZZ_REQUIRE(nvl_topo_load_string(buf, "export", &back) == NVL_OK,
                 "the export after --set loads");
    FUZZ_REQUIRE(nvl_topo_equal(t, back) && nvl_topo_hash(t) == nvl_topo_hash(back),
                 "the export after --set reloads equal");
    nvl_topo_free(back);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (base_text == NULL) {
        const char *path = getenv("NVL_FUZZ_TOPO");
        nvl_topo_t *base = NULL;
        FUZZ_REQUIRE(path != NULL && nvl_topo_load(path, &base) == NVL_OK,
                     "NVL_FUZZ_TOPO names a topology file");
        base_text = fuzz_topo_export(base);
        nvl_topo_free(base);
    }
    char *text = fuzz_string(data, size);
    /* a private copy of the base: its export reloaded */
    nvl_topo_t *t = NULL;
    FUZZ_REQUIRE(nvl_topo_load_string(base_text, "base", &t) == NVL_OK,
                 "base");
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        uint64_t before = nvl_topo_hash(t);
        if (nvl_topo_set(t, line) == NVL_OK)
            reload_equal(t);
        else
            FUZZ_REQUIRE(nvl_topo_hash(t) == before,
                         "a refused --set changes nothing");
    }
    nvl_topo_free(t);
    free(text);
    return 0;
}
