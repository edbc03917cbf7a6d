/* Loading a topology: inih reads the INI syntax; this file maps sections and
 * keys onto the key table, tracks line numbers for reports, and applies the
 * [gpu.N] overrides once the GPU count is known. */
#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

/* inih's line buffer (INI_MAX_LINE in ini.h): longer lines would be split. */
#define LINE_MAX_CHARS 199

typedef struct {
    uint32_t first, last;  /* GPU range */
    size_t key;            /* index into nvl_topo_gpu_keys */
    nvl_gpu_override_t value;
    int line;
} pending_override_t;

typedef struct {
    const char *origin;
    const char *next;      /* reader position in the text */
    int line;              /* line last handed to inih */
    nvl_topo_t *topo;
    int seen_line[NVL_TOPO_MAX_KEYS]; /* per main key: line where set, 0 if not */
    char section[64];      /* current section name, as the handler saw it */
    int section_line[16];  /* per main section: line of first header */
    pending_override_t *pending;
    size_t n_pending, cap_pending;
    int failed;            /* the handler reported an error */
} load_ctx_t;

static char *reader(char *str, int num, void *stream)
{
    load_ctx_t *ctx = stream;
    if (*ctx->next == '\0')
        return NULL;
    const char *nl = strchr(ctx->next, '\n');
    size_t n = nl ? (size_t)(nl - ctx->next) : strlen(ctx->next);
    /* hand inih the line without its "\n" or "\r\n": a line of
     * LINE_MAX_CHARS characters then fits inih's buffer whole, instead of
     * leaving its "\n" to be read as one more line (which shifted every
     * later line number by one) */
    size_t copy = n > 0 && ctx->next[n - 1] == '\r' ? n - 1 : n;
    if (copy > (size_t)num - 1)
        copy = (size_t)num - 1; /* cannot happen: lines are checked first */
    memcpy(str, ctx->next, copy);
    str[copy] = '\0';
    ctx->next += nl ? n + 1 : n;
    ctx->line++;
    /* remember where main sections start, for "section lacks key" reports */
    const char *p = str;
    if (*p == '[') {
        for (size_t s = 0; nvl_topo_sections[s] != NULL; s++) {
            size_t len = strlen(nvl_topo_sections[s]);
            if (strncmp(p + 1, nvl_topo_sections[s], len) == 0 &&
                p[1 + len] == ']' && ctx->section_line[s] == 0)
                ctx->section_line[s] = ctx->line;
        }
    }
    return str;
}

static const char *section_list(void)
{
    return "system, gpu, nvlink, c2c, host_memory, host, scaleout, node, "
           "nccl, or "
           "gpu.N / gpu.A-B for per-GPU overrides";
}

static void list_keys(const char *section, const nvl_topo_key_t *tab,
                      size_t n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
        if (strcmp(tab[i].section, section) != 0)
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                         tab[i].key);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Parses "gpu.N" or "gpu.A-B" (also "gpu[N]" for --set); 1 when it is an
 * override section, with the range in first/last. */
static int parse_gpu_section(const char *s, uint32_t *first, uint32_t *last,
                             int *malformed)
{
    *malformed = 0;
    const char *p;
    char close = '\0';
    if (strncmp(s, "gpu.", 4) == 0)
        p = s + 4;
    else if (strncmp(s, "gpu[", 4) == 0) {
        p = s + 4;
        close = ']';
    } else
        return 0;
    char *end;
    errno = 0;
    unsigned long a = strtoul(p, &end, 10), b = a;
    if (end == p || errno != 0)
        goto bad;
    if (*end == '-') {
        p = end + 1;
        b = strtoul(p, &end, 10);
        if (end == p || errno != 0)
            goto bad;
    }
    if (close != '\0') {
        if (*end != close)
            goto bad;
        end++;
    }
    if (*end != '\0' || b < a || b >= NVL_TOPO_MAX_GPUS)
        goto bad;
    *first = (uint32_t)a;
    *last = (uint32_t)b;
    return 1;
bad:
    *malformed = 1;
    return 1;
}

static int add_pending(load_ctx_t *ctx, const pending_override_t *p)
{
    if (ctx->n_pending == ctx->cap_pending) {
        size_t cap = ctx->cap_pending ? 2 * ctx->cap_pending : 16;
        pending_override_t *n = realloc(ctx->pending, cap * sizeof *n);
        if (n == NULL)
            return 0;
        ctx->pending = n;
        ctx->cap_pending = cap;
    }
    ctx->pending[ctx->n_pending++] = *p;
    return 1;
}

/* Reports a section that is neither a main section nor a well-formed GPU
 * override section; where is "file:line" or "--set ...". */
static nvl_status_t check_section(const char *where, const char *section)
{
    uint32_t first, last;
    int malformed;
    if (parse_gpu_section(section, &first, &last, &malformed)) {
        if (!malformed)
            return NVL_OK;
        nvl_report("%s: malformed GPU override section [%s] (expected "
                   "[gpu.N] or [gpu.A-B] with 0 <= A <= B < %u)",
                   where, section, NVL_TOPO_MAX_GPUS);
        return NVL_ERR_INVALID;
    }
    for (size_t s = 0; nvl_topo_sections[s] != NULL; s++)
        if (strcmp(nvl_topo_sections[s], section) == 0)
            return NVL_OK;
    nvl_report("%s: unknown section [%s] (expected %s)", where, section,
               section_list());
    return NVL_ERR_INVALID;
}

/* Checks a "[section]" line of n characters at p where it stands, so that
 * an unknown or empty section is reported on its own line. */
static nvl_status_t check_header(const char *p, size_t n, const char *origin,
                                 int line)
{
    /* the name as inih reads it: up to ']', or up to a " ;" comment */
    size_t e = 1;
    while (e < n && p[e] != ']' &&
           !(p[e] == ';' && (p[e - 1] == ' ' || p[e - 1] == '\t')))
        e++;
    if (e == n || p[e] != ']') {
        nvl_report("%s:%d: unclosed section header '%.*s' (expected "
                   "'[section]')", origin, line, (int)n, p);
        return NVL_ERR_INVALID;
    }
    char where[512], name[64];
    snprintf(where, sizeof where, "%s:%d", origin, line);
    if (e - 1 >= sizeof name) {
        nvl_report("%s: unknown section [%.*s] (expected %s)", where,
                   (int)(e - 1), p + 1, section_list());
        return NVL_ERR_INVALID;
    }
    memcpy(name, p + 1, e - 1);
    name[e - 1] = '\0';
    return check_section(where, name);
}

/* Sets section.key = value; line 0 means "from --set". */
static nvl_status_t apply(load_ctx_t *ctx, const char *section,
                          const char *key, const char *value)
{
    char where[512], why[512], keys[1024];
    if (ctx->line > 0)
        snprintf(where, sizeof where, "%s:%d", ctx->origin, ctx->line);
    else
        snprintf(where, sizeof where, "%s", ctx->origin);

    uint32_t first, last;
    int malformed;
    if (check_section(where, section) != NVL_OK)
        return NVL_ERR_INVALID;
    if (parse_gpu_section(section, &first, &last, &malformed)) {
        for (size_t i = 0; i < nvl_topo_gpu_key_count; i++) {
            const nvl_topo_key_t *k = &nvl_topo_gpu_keys[i];
            if (strcmp(k->key, key) != 0)
                continue;
            pending_override_t p = {first, last, i, nvl_topo_override_none,
                                    ctx->line};
            if (nvl_topo_key_parse(k, value, &p.value, why, sizeof why) !=
                NVL_OK) {
                nvl_report("%s: [%s] %s = %s: %s", where, section, key, value,
                           why);
                return NVL_ERR_INVALID;
            }
            if (!add_pending(ctx, &p)) {
                nvl_report("%s: out of memory", where);
                return NVL_ERR_NOMEM;
            }
            return NVL_OK;
        }
        list_keys("gpu.N", nvl_topo_gpu_keys, nvl_topo_gpu_key_count, keys,
                  sizeof keys);
        nvl_report("%s: unknown key '%s' in GPU override section [%s] "
                   "(expected one of: %s)",
                   where, key, section, keys);
        return NVL_ERR_INVALID;
    }

    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        if (strcmp(k->section, section) != 0 || strcmp(k->key, key) != 0)
            continue;
        if (ctx->line > 0 && ctx->seen_line[i] > 0) {
            nvl_report("%s: duplicate key '%s' in [%s] (first set on line %d)",
                       where, key, section, ctx->seen_line[i]);
            return NVL_ERR_INVALID;
        }
        if (nvl_topo_key_parse(k, value, ctx->topo, why, sizeof why) !=
            NVL_OK) {
            nvl_report("%s: [%s] %s = %s: %s", where, section, key, value,
                       why);
            return NVL_ERR_INVALID;
        }
        ctx->seen_line[i] = ctx->line > 0 ? ctx->line : -1;
        return NVL_OK;
    }
    list_keys(section, nvl_topo_keys, nvl_topo_key_count, keys, sizeof keys);
    nvl_report("%s: unknown key '%s' in [%s] (expected one of: %s)", where,
               key, section, keys);
    return NVL_ERR_INVALID;
}

static int handler(void *user, const char *section, const char *name,
                   const char *value)
{
    load_ctx_t *ctx = user;
    if (ctx->failed)
        return 0;
    if (section[0] == '\0') {
        nvl_report("%s:%d: key '%s' before any [section] header", ctx->origin,
                   ctx->line, name);
        ctx->failed = 1;
        return 0;
    }
    if (value[0] == '\0') {
        nvl_report("%s:%d: [%s] %s has no value", ctx->origin, ctx->line,
                   section, name);
        ctx->failed = 1;
        return 0;
    }
    if (apply(ctx, section, name, value) != NVL_OK) {
        ctx->failed = 1;
        return 0;
    }
    return 1;
}

/* Checks what inih would silently accept or split. */
static nvl_status_t prescan(const char *text, const char *origin)
{
    int line = 1;
    const char *p = text;
    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n > 0 && p[n - 1] == '\r')
            n--;
        if (n > LINE_MAX_CHARS) {
            nvl_report("%s:%d: line is %zu characters long (at most %d)",
                       origin, line, n, LINE_MAX_CHARS);
            return NVL_ERR_INVALID;
        }
        if (n > 0 && (p[0] == ' ' || p[0] == '\t')) {
            size_t i = 0;
            while (i < n && (p[i] == ' ' || p[i] == '\t'))
                i++;
            if (i < n && p[i] != '#' && p[i] != ';') {
                nvl_report("%s:%d: indented line (continuation lines are not "
                           "allowed; start keys and sections at column 1)",
                           origin, line);
                return NVL_ERR_INVALID;
            }
        }
        if (n > 0 && p[0] == '[' && check_header(p, n, origin, line) != NVL_OK)
            return NVL_ERR_INVALID;
        if (memchr(p, '\0', n) != NULL) {
            nvl_report("%s:%d: NUL byte in text", origin, line);
            return NVL_ERR_INVALID;
        }
        if (nl == NULL)
            break;
        p = nl + 1;
        line++;
    }
    return NVL_OK;
}

static nvl_status_t finish(load_ctx_t *ctx)
{
    nvl_topo_t *t = ctx->topo;
    char keys[1024];
    /* required keys and missing sections */
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        if (ctx->seen_line[i] != 0 || k->dflt != NULL)
            continue;
        size_t s = 0;
        while (strcmp(nvl_topo_sections[s], k->section) != 0)
            s++;
        if (ctx->section_line[s] == 0) {
            list_keys(k->section, nvl_topo_keys, nvl_topo_key_count, keys,
                      sizeof keys);
            nvl_report("%s: missing section [%s] (keys: %s)", ctx->origin,
                       k->section, keys);
        } else {
            nvl_report("%s:%d: section [%s] lacks required key '%s' (%s, e.g. "
                       "%s = %s)",
                       ctx->origin, ctx->section_line[s], k->section, k->key,
                       k->doc, k->key, k->example);
        }
        return NVL_ERR_INVALID;
    }
    t->overrides = malloc(t->gpus * sizeof *t->overrides);
    if (t->overrides == NULL) {
        nvl_report("%s: out of memory for %" PRIu32 " GPUs", ctx->origin,
                   t->gpus);
        return NVL_ERR_NOMEM;
    }
    /* per GPU, the line that set its links_down, for validation reports */
    int *links_down_lines = calloc(t->gpus, sizeof *links_down_lines);
    if (links_down_lines == NULL) {
        nvl_report("%s: out of memory for %" PRIu32 " GPUs", ctx->origin,
                   t->gpus);
        return NVL_ERR_NOMEM;
    }
    for (uint32_t g = 0; g < t->gpus; g++)
        t->overrides[g] = nvl_topo_override_none;
    nvl_status_t st = NVL_OK;
    for (size_t i = 0; i < ctx->n_pending; i++) {
        const pending_override_t *p = &ctx->pending[i];
        if (p->last >= t->gpus) {
            nvl_report("%s:%d: GPU override for GPU %" PRIu32 " but the system "
                       "has %" PRIu32 " GPUs (0..%" PRIu32 ")",
                       ctx->origin, p->line, p->last, t->gpus, t->gpus - 1);
            st = NVL_ERR_INVALID;
            break;
        }
        const nvl_topo_key_t *k = &nvl_topo_gpu_keys[p->key];
        for (uint32_t g = p->first; g <= p->last; g++) {
            memcpy((char *)&t->overrides[g] + k->offset,
                   (const char *)&p->value + k->offset, k->size);
            if (k->offset == offsetof(nvl_gpu_override_t, links_down))
                links_down_lines[g] = p->line;
        }
    }
    if (st == NVL_OK)
        st = nvl_topo_validate(t, ctx->origin, ctx->seen_line,
                               links_down_lines);
    free(links_down_lines);
    return st;
}

static void set_defaults(nvl_topo_t *t)
{
    char why[256];
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        if (k->dflt != NULL && k->field != NVL_FIELD_STR)
            nvl_topo_key_parse(k, k->dflt, t, why, sizeof why);
    }
}

nvl_status_t nvl_topo_load_string(const char *text, const char *origin,
                                  nvl_topo_t **topo_out)
{
    nvl_status_t st = prescan(text, origin);
    if (st != NVL_OK)
        return st;
    load_ctx_t ctx = {.origin = origin, .next = text};
    ctx.topo = calloc(1, sizeof *ctx.topo);
    if (ctx.topo == NULL) {
        nvl_report("%s: out of memory", origin);
        return NVL_ERR_NOMEM;
    }
    set_defaults(ctx.topo);
    int rc = ini_parse_stream(reader, &ctx, handler, &ctx);
    if (ctx.failed) {
        st = NVL_ERR_INVALID;
    } else if (rc != 0) {
        nvl_report("%s:%d: malformed line (expected '[section]', "
                   "'key = value' or a comment starting with # or ;)",
                   origin, rc);
        st = NVL_ERR_INVALID;
    } else {
        st = finish(&ctx);
    }
    free(ctx.pending);
    if (st != NVL_OK) {
        nvl_topo_free(ctx.topo);
        return st;
    }
    *topo_out = ctx.topo;
    return NVL_OK;
}

nvl_status_t nvl_topo_load(const char *path, nvl_topo_t **topo_out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        nvl_report("%s: cannot open topology file: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len < cap - 1)
            break;
        cap *= 2;
        char *n = realloc(buf, cap);
        if (n == NULL) {
            free(buf);
            buf = NULL;
        }
        buf = n;
    }
    int err = ferror(f);
    fclose(f);
    if (buf == NULL) {
        nvl_report("%s: out of memory reading the file", path);
        return NVL_ERR_NOMEM;
    }
    if (err) {
        free(buf);
        nvl_report("%s: read error", path);
        return NVL_ERR_IO;
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        nvl_report("%s: file contains a NUL byte (not a text file?)", path);
        return NVL_ERR_INVALID;
    }
    nvl_status_t st = nvl_topo_load_string(buf, path, topo_out);
    free(buf);
    return st;
}

void nvl_topo_free(nvl_topo_t *topo)
{
    if (topo == NULL)
        return;
    free(topo->overrides);
    free(topo);
}

nvl_status_t nvl_topo_assign(nvl_topo_t *topo, const char *origin,
                             const char *section, const char *key,
                             const char *value)
{
    uint32_t gpus = topo->gpus;
    load_ctx_t ctx = {.origin = origin, .topo = topo};
    nvl_status_t st = apply(&ctx, section, key, value);
    if (st == NVL_OK && strcmp(section, "system") == 0 &&
        strcmp(key, "gpus") == 0 && topo->gpus != gpus) {
        nvl_report("%s: the GPU count cannot be changed by --set", origin);
        st = NVL_ERR_INVALID;
    }
    for (size_t i = 0; st == NVL_OK && i < ctx.n_pending; i++) {
        const pending_override_t *p = &ctx.pending[i];
        if (p->last >= topo->gpus) {
            nvl_report("%s: GPU %" PRIu32 " does not exist (the system has "
                       "%" PRIu32 " GPUs)", origin, p->last, topo->gpus);
            st = NVL_ERR_INVALID;
            break;
        }
        const nvl_topo_key_t *k = &nvl_topo_gpu_keys[p->key];
        for (uint32_t g = p->first; g <= p->last; g++)
            memcpy((char *)&topo->overrides[g] + k->offset,
                   (const char *)&p->value + k->offset, k->size);
    }
    free(ctx.pending);
    return st;
}
