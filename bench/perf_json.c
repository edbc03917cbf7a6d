/* nccl-tests' -J FILE for the emulator's benchmarks: the JSON layout of
 * nccl-tests 2.19.6 (src/util.cu, JSON_FILE_VERSION 3), key for key, with
 * the emulator's own numbers in an "nvlemu" object beside them:
 *
 *   {"version": 3, "start_time", "args": [argv], "env": ["K=V", ...],
 *    "nccl_version",
 *    "config": {"nthreads", "ngpus", "minimum_bytes", "maximum_bytes",
 *               "step_factor" | "step_bytes", "warmup_iters", "iterations",
 *               "aggregated_iterations", "validation", "graph",
 *               "blocking_collectives", "per_iter_timing", "per_iter_skip",
 *               "parallel_init",
 *               "devices": [{"rank", "group", "pid", "hostname", "device",
 *                            "device_hex", "device_info"}]},
 *    "results": [{"size", "count", "type", "redop", "root",
 *                 "out_of_place": {"time", "alg_bw", "bus_bw", "nwrong"},
 *                 "in_place": {...}, "actual_iterations",
 *                 "experiment_name",
 *                 "nvlemu": {"wall_time_us", "algorithm", "protocol",
 *                            "channels", "mode"}}],
 *    "out_of_bounds": {"count", "okay"},
 *    "average_bus_bandwidth": {"bandwidth", "okay"},
 *    "end_time", "nvlemu": {"version", "commit", "topology", ...}}
 *
 * As nccl-tests does, an existing FILE is never overwritten: FILE.0,
 * FILE.1, ... are tried in turn.  Written by rank 0 only. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nvlemu/json.h"
#include "nvlemu/status.h"
#include "perf.h"

extern char **environ;

struct nvl_bench_json {
    FILE *file;
    char *path;
    json_t *root, *config, *results;
};

static json_t *now_text(void)
{
    char buf[64];
    time_t t = time(NULL);
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", localtime(&t));
    return json_string(buf);
}

nvl_status_t nvl_bench_json_open(const char *path, int argc, char **argv,
                                 nvl_bench_json_t **json_out)
{
    nvl_bench_json_t *j = calloc(1, sizeof *j);
    size_t cap = strlen(path) + 16;
    char *try_path = malloc(cap);
    if (j == NULL || try_path == NULL) {
        free(j);
        free(try_path);
        nvl_report("-J %s: out of memory", path);
        return NVL_ERR_NOMEM;
    }
    snprintf(try_path, cap, "%s", path);
    int fd;
    for (int n = 0; (fd = open(try_path, O_WRONLY | O_CREAT | O_EXCL, 0666)) < 0 &&
                    errno == EEXIST && n < 1000;
         n++)
        snprintf(try_path, cap, "%s.%d", path, n);
    if (fd < 0 || (j->file = fdopen(fd, "w")) == NULL) {
        nvl_report("-J %s: cannot create: %s", try_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(try_path);
        free(j);
        return NVL_ERR_IO;
    }
    j->path = try_path;
    j->root = json_object();
    json_object_set_new(j->root, "version", json_integer(3));
    json_object_set_new(j->root, "start_time", now_text());
    json_t *args = json_array(), *env = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(args, json_string(argv[i]));
    for (char **e = environ; e != NULL && *e != NULL; e++)
        json_array_append_new(env, json_string(*e));
    json_object_set_new(j->root, "args", args);
    json_object_set_new(j->root, "env", env);
    /* the NCCL whose tuning the model follows (docs/collectives.md: NCCL
     * 2.28.9 on the calibration machine), as NCCL_VERSION_CODE */
    json_object_set_new(j->root, "nccl_version", json_integer(22809));
    *json_out = j;
    return NVL_OK;
}

const char *nvl_bench_json_path(const nvl_bench_json_t *j)
{
    return j->path;
}

void nvl_bench_json_config(nvl_bench_json_t *j, const nvl_bench_config_t *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "nthreads", json_integer(c->nthreads));
    json_object_set_new(o, "ngpus", json_integer(c->ngpus));
    json_object_set_new(o, "minimum_bytes", json_integer((json_int_t)c->min_bytes));
    json_object_set_new(o, "maximum_bytes", json_integer((json_int_t)c->max_bytes));
    if (c->step_factor > 1)
        json_object_set_new(o, "step_factor", json_integer(c->step_factor));
    else
        json_object_set_new(o, "step_bytes", json_integer((json_int_t)c->step_bytes));
    json_object_set_new(o, "warmup_iters", json_integer(c->warmup));
    json_object_set_new(o, "iterations", json_integer(c->iters));
    json_object_set_new(o, "aggregated_iterations", json_integer(1));
    json_object_set_new(o, "validation", json_integer(c->check ? 1 : 0));
    json_object_set_new(o, "graph", json_integer(c->graph_calls));
    json_object_set_new(o, "blocking_collectives", json_false());
    json_object_set_new(o, "per_iter_timing", json_false());
    json_object_set_new(o, "per_iter_skip", json_integer(0));
    json_object_set_new(o, "parallel_init", json_false());
    json_object_set_new(o, "devices", json_array());
    json_object_set_new(j->root, "config", o);
    j->config = o;
    j->results = json_array();
    json_object_set_new(j->root, "results", j->results);
    json_t *emu = json_object();
    json_object_set_new(emu, "version", json_string(c->version));
    json_object_set_new(emu, "commit", json_string(c->commit));
    json_object_set_new(emu, "topology", json_string(c->topology));
    json_object_set_new(emu, "topology_file", json_string(c->topology_file));
    json_object_set_new(emu, "data_max_bytes", json_integer((json_int_t)c->data_max));
    json_object_set_new(emu, "average", json_integer(c->average));
    json_object_set_new(emu, "time", json_string(
        "emulated time per call (virtual clock), at least the host's "
        "enqueue time; wall_time_us is the host's"));
    json_object_set_new(j->root, "nvlemu", emu);
}

void nvl_bench_json_device(nvl_bench_json_t *j, int rank, int pid,
                           const char *host, int device, const char *hex,
                           const char *info)
{
    json_t *d = json_object();
    json_object_set_new(d, "rank", json_integer(rank));
    json_object_set_new(d, "group", json_integer(0));
    json_object_set_new(d, "pid", json_integer(pid));
    json_object_set_new(d, "hostname", json_string(host));
    json_object_set_new(d, "device", json_integer(device));
    json_object_set_new(d, "device_hex", json_string(hex));
    json_object_set_new(d, "device_info", json_string(info));
    json_array_append_new(json_object_get(j->config, "devices"), d);
}

static json_t *phase(const nvl_bench_row_t *r, int i)
{
    json_t *o = json_object();
    json_object_set_new(o, "time", json_real(r->time_us[i]));
    json_object_set_new(o, "alg_bw", json_real(r->algbw[i]));
    json_object_set_new(o, "bus_bw", json_real(r->busbw[i]));
    json_object_set_new(o, "nwrong", r->wrong[i] >= 0
                                         ? json_real((double)r->wrong[i])
                                         : json_null());
    return o;
}

void nvl_bench_json_row(nvl_bench_json_t *j, const nvl_bench_row_t *r)
{
    json_t *o = json_object();
    char root[16];
    snprintf(root, sizeof root, "%6i", r->root); /* nccl-tests: "%6i" */
    json_object_set_new(o, "size", json_integer((json_int_t)r->bytes));
    json_object_set_new(o, "count", json_integer((json_int_t)r->count));
    json_object_set_new(o, "type", json_string(r->type));
    json_object_set_new(o, "redop", json_string(r->redop));
    json_object_set_new(o, "root", json_string(root));
    json_object_set_new(o, "out_of_place", phase(r, 0));
    json_object_set_new(o, "in_place", phase(r, 1));
    json_object_set_new(o, "actual_iterations", json_integer(r->iters));
    json_object_set_new(o, "experiment_name", json_string(""));
    json_t *emu = json_object();
    json_object_set_new(emu, "wall_time_us", json_real(r->wall_us));
    json_object_set_new(emu, "algorithm", json_string(r->algo));
    json_object_set_new(emu, "protocol", json_string(r->proto));
    json_object_set_new(emu, "channels", json_integer(r->channels));
    json_object_set_new(emu, "mode", json_string(r->data ? "data" : "timing"));
    json_object_set_new(o, "nvlemu", emu);
    json_array_append_new(j->results, o);
}

nvl_status_t nvl_bench_json_close(nvl_bench_json_t *j, int64_t wrong,
                                  double avg_busbw, json_t *validation)
{
    if (j == NULL) {
        json_decref(validation);
        return NVL_OK;
    }
    json_t *oob = json_object(), *bw = json_object();
    json_object_set_new(oob, "count", json_integer(wrong));
    json_object_set_new(oob, "okay", json_boolean(wrong == 0));
    json_object_set_new(bw, "bandwidth", json_real(avg_busbw));
    json_object_set_new(bw, "okay", json_string("unchecked"));
    json_object_set_new(j->root, "out_of_bounds", oob);
    json_object_set_new(j->root, "average_bus_bandwidth", bw);
    json_object_set_new(j->root, "end_time", now_text());
    json_object_set_new(j->root, "validation", validation);
    nvl_status_t st = NVL_OK;
    if (nvl_json_dumpf(j->root, j->file, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 ||
        fputc('\n', j->file) == EOF || fclose(j->file) != 0) {
        nvl_report("-J %s: cannot write: %s", j->path, strerror(errno));
        st = NVL_ERR_IO;
    }
    nvl_bench_json_free(j, false);
    return st;
}

void nvl_bench_json_free(nvl_bench_json_t *j, bool remove_file)
{
    if (j == NULL)
        return;
    if (remove_file) {
        if (j->file != NULL)
            fclose(j->file);
        unlink(j->path);
    }
    json_decref(j->root);
    free(j->path);
    free(j);
}
