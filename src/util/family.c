/* Families of named members (family.h): a view by stride over an owner's
 * row table. */
#include <stdio.h>
#include <string.h>

#include "nvlemu/family.h"
#include "nvlemu/status.h"

const nvl_member_t *nvl_family_member(const nvl_family_t *family, int value)
{
    if (value < 0 || (size_t)value >= family->n_rows)
        return NULL;
    return (const nvl_member_t *)((const char *)family->rows +
                                  (size_t)value * family->stride);
}

const char *nvl_family_name(const nvl_family_t *family, int value)
{
    const nvl_member_t *m = nvl_family_member(family, value);
    return m != NULL ? m->name : "?";
}

nvl_status_t nvl_family_parse(const nvl_family_t *family, const char *name,
                              int *value_out)
{
    for (size_t i = 0; i < family->n_rows; i++)
        if (strcmp(name, nvl_family_member(family, (int)i)->name) == 0) {
            *value_out = (int)i;
            return NVL_OK;
        }
    return NVL_ERR_INVALID;
}

nvl_status_t nvl_family_parse_report(const nvl_family_t *family,
                                     const char *what, const char *name,
                                     int *value_out)
{
    if (nvl_family_parse(family, name, value_out) == NVL_OK)
        return NVL_OK;
    char list[256];
    nvl_family_names(family, ", ", ", ", list, sizeof list);
    nvl_report("%s: unknown value '%s' (expected one of: %s)", what, name,
               list);
    return NVL_ERR_INVALID;
}

void nvl_family_names(const nvl_family_t *family, const char *sep,
                      const char *last_sep, char *buf, size_t len)
{
    size_t used = 0, n = family->n_rows;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 i == 0 ? "" : i + 1 == n ? last_sep : sep,
                                 nvl_family_member(family, (int)i)->name);
}
