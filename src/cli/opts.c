/* What the commands' option rows share (cli.h): the placement's names and
 * output files. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "nvlemu/coll.h"
#include "nvlemu/cost.h"
#include "nvlemu/engine.h"

const nvl_opt_name_t nvl_cli_attn_parallel_names[] = {
    {"tp", 0}, {"dp", 1}, {NULL, 0}};

const nvl_opt_name_t nvl_cli_stack_names[] = {
    {"torch", NVL_STACK_TORCH}, {"fused", NVL_STACK_FUSED}, {NULL, 0}};

nvl_status_t nvl_cli_check_allreduce(int impl, int fuse)
{
    if (fuse && impl == NVL_AR_NCCL) {
        /* TensorRT-LLM's NCCL strategies run ncclAllReduce and then a
         * residualRmsNorm kernel of their own (allreducePlugin.cpp) */
        nvl_report("--fuse-allreduce-norm needs --allreduce oneshot, "
                   "twoshot, nvls-oneshot, nvls-twoshot or auto: with nccl "
                   "the residual add and RMSNorm stay a kernel of their own, "
                   "as in TensorRT-LLM");
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

const nvl_opt_name_t nvl_cli_overlap_names[] = {
    {"none", NVL_OVERLAP_NONE}, {"async-tp", NVL_OVERLAP_ASYNC_TP},
    {NULL, 0}};

const nvl_opt_name_t nvl_cli_a2a_names[] = {
    {"nccl", 0}, {"onesided", 1}, {NULL, 0}};

const nvl_opt_name_t nvl_cli_fusion_names[] = {
    {"none", NVL_STACK_TORCH}, {"typical", NVL_STACK_FUSED}, {NULL, 0}};

nvl_status_t nvl_cli_parse_wdtype(const char *label, const char *text,
                                  void *dtype_out)
{
    return nvl_wdtype_parse(label, text, dtype_out);
}

nvl_status_t nvl_cli_parse_kv_dtype(const char *label, const char *text,
                                    void *dtype_out)
{
    nvl_wdtype_t dt;
    if (nvl_wdtype_parse(label, text, &dt) != NVL_OK)
        return NVL_ERR_INVALID;
    if (dt == NVL_WDT_FP4) {
        nvl_report("%s: fp4 is not a KV cache type (bf16, fp8)", label);
        return NVL_ERR_INVALID;
    }
    *(nvl_wdtype_t *)dtype_out = dt;
    return NVL_OK;
}

nvl_status_t nvl_cli_parse_launch(const char *label, const char *text,
                                  void *launch_out)
{
    return nvl_launch_parse(label, text, launch_out);
}

nvl_status_t nvl_cli_parse_attn(const char *label, const char *text,
                                void *choice_out)
{
    nvl_attn_impl_t attn;
    if (strcmp(text, "auto") == 0) {
        *(int *)choice_out = -1;
        return NVL_OK;
    }
    if (nvl_attn_parse(label, text, &attn) != NVL_OK)
        return NVL_ERR_INVALID;
    *(int *)choice_out = (int)attn;
    return NVL_OK;
}

/* --kv-host, --weights-host: "auto" or a share from 0 to 1. */
nvl_status_t nvl_cli_parse_host_share(const char *label, const char *text,
                                      void *share_out)
{
    if (strcmp(text, "auto") == 0) {
        *(double *)share_out = NVL_HOST_AUTO;
        return NVL_OK;
    }
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !(v >= 0 && v <= 1)) {
        nvl_report("%s %s: expected auto or a fraction from 0 to 1", label,
                   text);
        return NVL_ERR_INVALID;
    }
    *(double *)share_out = v;
    return NVL_OK;
}

void nvl_cli_placement_name(int ranks, long ep, bool attn_dp, size_t len,
                            char *name_out)
{
    if (ep == 1 && !attn_dp)
        snprintf(name_out, len, "TP %d", ranks);
    else
        snprintf(name_out, len, "EP %ld x expert-TP %ld, attention %s %d",
                 ep, ranks / ep, attn_dp ? "DP" : "TP", ranks);
}

FILE *nvl_cli_open_out(const char *option, const char *path)
{
    if (strcmp(path, "-") == 0)
        return stdout;
    FILE *f = fopen(path, "w");
    if (f == NULL)
        nvl_report("%s %s: cannot open for writing: %s", option, path,
                   strerror(errno));
    return f;
}

nvl_status_t nvl_cli_check_writable(const char *option, const char *path)
{
    if (path == NULL || strcmp(path, "-") == 0)
        return NVL_OK;
    bool existed = access(path, F_OK) == 0;
    FILE *f = fopen(path, "a");
    if (f == NULL) {
        nvl_report("%s %s: cannot write: %s", option, path, strerror(errno));
        return NVL_ERR_IO;
    }
    fclose(f);
    if (!existed)
        unlink(path);
    return NVL_OK;
}

nvl_status_t nvl_cli_close_out(const char *option, const char *path,
                               FILE *stream)
{
    if (stream == stdout)
        return NVL_OK;
    if (fclose(stream) != 0) {
        nvl_report("%s %s: write failed", option, path);
        return NVL_ERR_IO;
    }
    return NVL_OK;
}
