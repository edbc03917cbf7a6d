/* Canonical export of a topology: every key of the table in table order,
 * then [gpu.A-B] sections for runs of GPUs with the same overrides.  The
 * hash and equality of topologies are defined on this text. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "nvlemu/hash.h"

static int override_is_none(const nvl_gpu_override_t *o)
{
    return memcmp(o, &nvl_topo_override_none, sizeof *o) == 0;
}

static int override_equal(const nvl_gpu_override_t *a,
                          const nvl_gpu_override_t *b)
{
    for (size_t i = 0; i < nvl_topo_gpu_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_gpu_keys[i];
        if (memcmp((const char *)a + k->offset, (const char *)b + k->offset,
                   k->size) != 0)
            return 0;
    }
    return 1;
}

nvl_status_t nvl_topo_export(const nvl_topo_t *t, FILE *out)
{
    const char *section = "";
    char value[512]; /* more than the longest text field holds */
    fprintf(out, "# nvlemu topology, canonical export of '%s'\n", t->name);
    if (t->die_view) /* a comment: it reloads as packages of these dies */
        fprintf(out, "# die view (--rank-plays die): every GPU below is one "
                     "die of a package of [gpu] dies\n");
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        if (strcmp(k->section, section) != 0) {
            section = k->section;
            fprintf(out, "\n[%s]\n", section);
        }
        nvl_topo_key_format(k, t, value, sizeof value);
        if (k->field == NVL_FIELD_STR && value[0] == '\0')
            continue; /* empty optional text */
        fprintf(out, "%s = %s\n", k->key, value);
    }
    for (uint32_t g = 0; g < t->gpus;) {
        const nvl_gpu_override_t *o = &t->overrides[g];
        uint32_t last = g;
        while (last + 1 < t->gpus && override_equal(&t->overrides[last + 1], o))
            last++;
        if (!override_is_none(o)) {
            if (last == g)
                fprintf(out, "\n[gpu.%" PRIu32 "]\n", g);
            else
                fprintf(out, "\n[gpu.%" PRIu32 "-%" PRIu32 "]\n", g, last);
            for (size_t i = 0; i < nvl_topo_gpu_key_count; i++) {
                const nvl_topo_key_t *k = &nvl_topo_gpu_keys[i];
                if (memcmp((const char *)o + k->offset,
                           (const char *)&nvl_topo_override_none + k->offset,
                           k->size) == 0)
                    continue;
                nvl_topo_key_format(k, o, value, sizeof value);
                fprintf(out, "%s = %s\n", k->key, value);
            }
        }
        g = last + 1;
    }
    if (ferror(out)) {
        nvl_report("cannot write the topology export");
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

bool nvl_topo_equal(const nvl_topo_t *a, const nvl_topo_t *b)
{
    if (a->gpus != b->gpus || a->die_view != b->die_view)
        return false;
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        const char *fa = (const char *)a + k->offset;
        const char *fb = (const char *)b + k->offset;
        if (k->field == NVL_FIELD_STR ? strcmp(fa, fb) != 0
                                      : memcmp(fa, fb, k->size) != 0)
            return false;
    }
    for (uint32_t g = 0; g < a->gpus; g++)
        if (!override_equal(&a->overrides[g], &b->overrides[g]))
            return false;
    return true;
}

uint64_t nvl_topo_hash(const nvl_topo_t *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (mem == NULL)
        return 0;
    nvl_topo_export(t, mem);
    fclose(mem);
    uint64_t h = nvl_fnv1a64(text, len);
    free(text);
    return h;
}
