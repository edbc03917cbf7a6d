/* What-ifs on a loaded topology: `--set section.key=value` and
 * `--set-file FILE` (one assignment a line), each applied to a copy,
 * validated, and committed only when valid. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

/* The section and key that name (buf, "section.key" or a bare key)
 * means: a table's section.key or bare key whole (keys may contain dots:
 * nccl's ring.ll.base_lat), else split at the last dot (a [gpu...]
 * override).  buf may be cut at that dot. */
static nvl_status_t resolve_key(char *buf, const char *origin,
                                const char **section_out,
                                const char **key_out)
{
    const char *section = NULL, *key = buf;
    int bare = 0;
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        size_t len = strlen(k->section);
        if (strncmp(buf, k->section, len) == 0 && buf[len] == '.' &&
            strcmp(buf + len + 1, k->key) == 0) {
            section = k->section;
            key = k->key;
            bare = 0;
            break;
        }
        if (strcmp(k->key, buf) == 0) {
            section = k->section;
            bare++;
        }
    }
    if (bare > 1) {
        /* a bare key is accepted only when exactly one section has it */
        nvl_report("%s: key '%s' is in several sections; write section.%s",
                   origin, key, key);
        return NVL_ERR_INVALID;
    }
    if (section == NULL) {
        char *dot = strrchr(buf, '.');
        if (dot == NULL) {
            nvl_report("%s: unknown key '%s' (expected section.key, e.g. "
                       "nvlink.link_bw)", origin, key);
            return NVL_ERR_INVALID;
        }
        *dot = '\0';
        section = buf;
        key = dot + 1;
    }
    *section_out = section;
    *key_out = key;
    return NVL_OK;
}

/* nvl_topo_set, with reports prefixed "<where> <assignment>" ("--set",
 * "FILE:LINE:"). */
static nvl_status_t set_from(nvl_topo_t *topo, const char *assignment,
                             const char *where)
{
    char buf[256];
    const char *eq = strchr(assignment, '=');
    if (eq == NULL || eq == assignment ||
        (size_t)(eq - assignment) >= sizeof buf) {
        nvl_report("%s %s: expected section.key=value (e.g. "
                   "nvlink.link_bw=100GB/s or gpu[17].clock_scale=0.8)",
                   where, assignment);
        return NVL_ERR_INVALID;
    }
    memcpy(buf, assignment, (size_t)(eq - assignment));
    buf[eq - assignment] = '\0';
    const char *value = eq + 1;
    while (*value == ' ')
        value++;
    const char *section, *key;
    char origin[4400];
    snprintf(origin, sizeof origin, "%s %s", where, assignment);
    if (resolve_key(buf, origin, &section, &key) != NVL_OK)
        return NVL_ERR_INVALID;
    /* apply to a copy, validate, then commit */
    nvl_topo_t copy = *topo;
    copy.overrides = malloc(topo->gpus * sizeof *copy.overrides);
    if (copy.overrides == NULL) {
        nvl_report("%s: out of memory", origin);
        return NVL_ERR_NOMEM;
    }
    memcpy(copy.overrides, topo->overrides,
           topo->gpus * sizeof *copy.overrides);
    nvl_status_t st = nvl_topo_assign(&copy, origin, section, key, value);
    if (st == NVL_OK)
        st = nvl_topo_validate(&copy, origin, NULL, NULL);
    if (st != NVL_OK) {
        free(copy.overrides);
        return st;
    }
    free(topo->overrides);
    *topo = copy;
    return NVL_OK;
}

nvl_status_t nvl_topo_set(nvl_topo_t *topo, const char *assignment)
{
    return set_from(topo, assignment, "--set");
}

nvl_status_t nvl_topo_set_file(nvl_topo_t *topo, const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        nvl_report("--set-file %s: cannot open: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    char line[4096], where[4200];
    nvl_status_t st = NVL_OK;
    for (int no = 1; st == NVL_OK && fgets(line, sizeof line, f) != NULL;
         no++) {
        /* a comment: '#' or ';' at the start or after a blank, as inih */
        for (char *c = line; *c != '\0'; c++)
            if ((*c == '#' || *c == ';') &&
                (c == line || c[-1] == ' ' || c[-1] == '\t')) {
                *c = '\0';
                break;
            }
        char *a = line, *end = line + strlen(line);
        while (*a == ' ' || *a == '\t')
            a++;
        while (end > a && (end[-1] == '\n' || end[-1] == '\r' ||
                           end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (*a == '\0')
            continue;
        snprintf(where, sizeof where, "%s:%d:", path, no);
        st = set_from(topo, a, where);
    }
    fclose(f);
    return st;
}
