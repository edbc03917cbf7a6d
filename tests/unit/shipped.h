/* Shared by the collective model's unit tests (test_tuner*.c): a shipped
 * topology (topology/NAME) loaded, failing the test where it does not. */
#ifndef NVLEMU_TEST_SHIPPED_H
#define NVLEMU_TEST_SHIPPED_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "nvlemu/topo.h"

static inline nvl_topo_t *load(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NVL_TOPOLOGY_DIR, name);
    nvl_topo_t *t = NULL;
    assert_int_equal(nvl_topo_load(path, &t), NVL_OK);
    return t;
}

#endif
