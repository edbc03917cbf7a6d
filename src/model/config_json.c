/* Readers of config.json's values (model_impl.h): each reports a wrong
 * value with the file and the key. */
#include "model_impl.h"

int nvl_cfg_count(json_t *root, const char *file, const char *key,
                  uint32_t dflt, uint32_t *out)
{
    json_t *v = json_object_get(root, key);
    if (v == NULL || json_is_null(v)) {
        if (dflt == 0) {
            nvl_report("%s: missing '%s' (a positive integer)", file, key);
            return 0;
        }
        *out = dflt;
        return 1;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > UINT32_MAX) {
        nvl_report("%s: '%s' must be a positive integer", file, key);
        return 0;
    }
    *out = (uint32_t)json_integer_value(v);
    return 1;
}

int nvl_cfg_real(json_t *obj, const char *file, const char *key,
                 double *out)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return -1; /* absent */
    if (!json_is_number(v) || json_number_value(v) <= 0) {
        nvl_report("%s: '%s' must be a positive number", file, key);
        return 0;
    }
    *out = json_number_value(v);
    return 1;
}

int nvl_cfg_bool(json_t *root, const char *file, const char *key,
                 bool dflt, bool *out)
{
    json_t *v = json_object_get(root, key);
    if (v == NULL || json_is_null(v)) {
        *out = dflt;
        return 1;
    }
    if (!json_is_boolean(v)) {
        nvl_report("%s: '%s' must be true or false", file, key);
        return 0;
    }
    *out = json_is_true(v);
    return 1;
}
