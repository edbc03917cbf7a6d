/* FNV-1a 64 against the published test vectors (draft-eastlake-fnv's
 * test suite; e.g. "foobar" -> 0x85944171f73967e8). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/hash.h"

static void test_vectors(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        uint64_t h;
    } v[] = {
        {"", 0xcbf29ce484222325ull}, {"a", 0xaf63dc4c8601ec8cull},
        {"b", 0xaf63df4c8601f1a5ull}, {"foo", 0xdcb27518fed9d577ull},
        {"foobar", 0x85944171f73967e8ull},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        assert_int_equal(nvl_fnv1a64(v[i].in, strlen(v[i].in)), v[i].h);
    assert_int_equal(NVL_FNV1A64_BASIS, 14695981039346656037ull);
}

static void test_update_continues(void **state)
{
    (void)state;
    uint64_t h = nvl_fnv1a64_update(NVL_FNV1A64_BASIS, "foo", 3);
    assert_int_equal(nvl_fnv1a64_update(h, "bar", 3),
                     nvl_fnv1a64("foobar", 6));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_update_continues),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
