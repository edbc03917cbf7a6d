/* Shortest-real JSON: jansson lays the tree out, then every real of its
 * text is rewritten in the shortest form that reads back exactly. */
#include "nvlemu/json.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void nvl_json_format_real(double v, char *buf, size_t len)
{
    /* the fewest significant digits that read back as v: at most 17 */
    char sci[40];
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(sci, sizeof sci, "%.*e", digits - 1, v);
        if (strtod(sci, NULL) == v)
            break;
    }
    snprintf(sci, sizeof sci, "%.*e", digits - 1, v);
    /* sci: [-]d[.ddd]e[+-]xx -> the digits and the decimal exponent */
    const char *p = sci;
    bool neg = *p == '-';
    if (neg)
        p++;
    char d[24];
    size_t nd = 0;
    for (; *p != 'e'; p++)
        if (*p != '.')
            d[nd++] = *p;
    d[nd] = '\0';
    int exp = atoi(p + 1);
    char out[48], *o = out;
    if (neg)
        *o++ = '-';
    if (exp >= -4 && exp < 16) {
        if (exp < 0) { /* 0.000ddd */
            *o++ = '0';
            *o++ = '.';
            for (int i = -1; i > exp; i--)
                *o++ = '0';
            memcpy(o, d, nd);
            o += nd;
        } else { /* ddd.ddd, padded with zeros up to the point */
            for (int i = 0; i <= exp; i++)
                *o++ = (size_t)i < nd ? d[i] : '0';
            *o++ = '.';
            if ((size_t)exp + 1 < nd) {
                memcpy(o, d + exp + 1, nd - (size_t)exp - 1);
                o += nd - (size_t)exp - 1;
            } else {
                *o++ = '0';
            }
        }
        *o = '\0';
    } else { /* d[.ddd]e+XX, at least two exponent digits as Python */
        *o++ = d[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, d + 1, nd - 1);
            o += nd - 1;
        }
        snprintf(o, sizeof out - (size_t)(o - out), "e%c%02d",
                 exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
    snprintf(buf, len, "%s", out);
}

/* Writes text with each real number (outside strings) in its shortest
 * form. */
static int rewrite(const char *text, FILE *out)
{
    bool in_string = false;
    for (const char *s = text; *s != '\0';) {
        if (in_string) {
            if (*s == '\\' && s[1] != '\0') {
                fputc(*s++, out);
            } else if (*s == '"') {
                in_string = false;
            }
            fputc(*s++, out);
            continue;
        }
        if (*s == '"') {
            in_string = true;
            fputc(*s++, out);
            continue;
        }
        if (*s == '-' || (*s >= '0' && *s <= '9')) {
            size_t n = strspn(s, "-+0123456789.eE");
            if (strcspn(s, ".eE") < n) { /* a real */
                char buf[48];
                nvl_json_format_real(strtod(s, NULL), buf, sizeof buf);
                fputs(buf, out);
            } else {
                fwrite(s, 1, n, out);
            }
            s += n;
            continue;
        }
        fputc(*s++, out);
    }
    return ferror(out) ? -1 : 0;
}

int nvl_json_dumpf(const json_t *root, FILE *out, size_t flags)
{
    /* 17 digits: jansson's text then holds every real exactly */
    flags = (flags & ~(size_t)JSON_REAL_PRECISION(31)) | JSON_REAL_PRECISION(17);
    char *text = json_dumps(root, flags);
    if (text == NULL)
        return -1;
    int rc = rewrite(text, out);
    free(text);
    return rc;
}

int nvl_json_dump_file(const json_t *root, const char *path, size_t flags)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    int rc = nvl_json_dumpf(root, f, flags);
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}
