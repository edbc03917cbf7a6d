#include "nvlemu/hash.h"

uint64_t nvl_fnv1a64_update(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * NVL_FNV1A64_PRIME;
    return h;
}

uint64_t nvl_fnv1a64(const void *data, size_t len)
{
    return nvl_fnv1a64_update(NVL_FNV1A64_BASIS, data, len);
}
