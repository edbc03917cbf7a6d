#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "nvlemu/status.h"

void nvl_cli_longopts(const nvl_cli_opt_t *opts, size_t n,
                      struct option *longopts)
{
    for (size_t i = 0; i < n; i++)
        longopts[i] = (struct option){opts[i].name, opts[i].has_arg, NULL,
                                      opts[i].id};
    longopts[n] = (struct option){NULL, 0, NULL, 0};
}

void nvl_cli_help(FILE *out, const char *usage, const nvl_cli_opt_t *opts,
                  size_t n)
{
    fprintf(out, "usage: %s\n\noptions:\n", usage);
    for (size_t i = 0; i < n; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", opts[i].name,
                 opts[i].arg ? " " : "", opts[i].arg ? opts[i].arg : "");
        fprintf(out, "  %-24s %s\n", left, opts[i].doc);
    }
}

long nvl_cli_positive(const char *option, const char *text, long max)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < 1 || v > max) {
        nvl_report("%s %s: expected a whole number from 1 to %ld", option,
                   text, max);
        return -1;
    }
    return v;
}

void nvl_cli_placement_name(char *buf, size_t len, int ranks, long ep,
                            bool attn_dp)
{
    if (ep == 1 && !attn_dp)
        snprintf(buf, len, "TP %d", ranks);
    else
        snprintf(buf, len, "EP %ld x expert-TP %ld, attention %s %d", ep,
                 ranks / ep, attn_dp ? "DP" : "TP", ranks);
}

nvl_status_t nvl_cli_attn_parallel_parse(const char *text, bool *dp_out)
{
    if (strcmp(text, "tp") == 0 || strcmp(text, "dp") == 0) {
        *dp_out = strcmp(text, "dp") == 0;
        return NVL_OK;
    }
    nvl_report("--attn-parallel: unknown value '%s' (expected tp or dp)",
               text);
    return NVL_ERR_INVALID;
}

nvl_status_t nvl_cli_parse(const char *command, int argc, char **argv,
                           const nvl_cli_opt_t *opts, size_t n,
                           nvl_cli_on_opt_t on_opt, void *ctx,
                           int *first_arg_out)
{
    struct option *longopts = calloc(n + 1, sizeof *longopts);
    if (longopts == NULL) {
        nvl_report("%s: out of memory", command);
        return NVL_ERR_NOMEM;
    }
    nvl_cli_longopts(opts, n, longopts);
    optind = 1;
    opterr = 0;
    nvl_status_t st = NVL_OK;
    int c;
    while (st == NVL_OK &&
           (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (c == ':') {
            nvl_report("%s: option %s needs a value", command,
                       argv[optind - 1]);
            st = NVL_ERR_INVALID;
        } else if (c == '?') {
            nvl_report("%s: unknown option '%s' (see nvlemu %s --help)",
                       command, argv[optind - 1], command);
            st = NVL_ERR_INVALID;
        } else {
            st = on_opt(c, optarg, ctx);
        }
    }
    free(longopts);
    *first_arg_out = optind;
    return st;
}
