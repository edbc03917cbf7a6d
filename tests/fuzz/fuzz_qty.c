/* Quantities with units, and the name parsers (dtypes, reduction ops):
 * an accepted quantity is a finite, non-negative number in base units that
 * formats to text which parses back to the same double. */
#include <math.h>

#include "fuzz.h"
#include "nvlemu/coll.h"
#include "nvlemu/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char *text = fuzz_string(data, size);
    for (int k = 0; k < NVL_QTY_KIND_COUNT; k++) {
        double v = -1;
        char why[256];
        if (nvl_qty_parse((nvl_qty_kind_t)k, text, &v, why, sizeof why) != NVL_OK)
            continue;
        FUZZ_REQUIRE(isfinite(v) && v >= 0, "a parsed quantity is finite, >= 0");
        char buf[128];
        nvl_qty_format((nvl_qty_kind_t)k, v, buf, sizeof buf);
        double back = -1;
        FUZZ_REQUIRE(nvl_qty_parse((nvl_qty_kind_t)k, buf, &back, why,
                                   sizeof why) == NVL_OK,
                     "a formatted quantity parses");
        FUZZ_REQUIRE(back == v, "format/parse reads back the same double");
    }
    nvl_dtype_t dt;
    if (nvl_dtype_parse(text, &dt) == NVL_OK)
        FUZZ_REQUIRE(dt < NVL_DT_COUNT && nvl_dtype_size(dt) > 0, "a dtype");
    nvl_redop_t op;
    if (nvl_redop_parse(text, &op) == NVL_OK)
        FUZZ_REQUIRE(op < NVL_OP_COUNT, "a reduction op");
    free(text);
    return 0;
}
