/* nvlemu run --trace: a Chrome trace (the JSON Trace Event Format that
 * Perfetto and chrome://tracing open) of the recorded passes: one process,
 * one thread (track) per rank, one complete ("X") event per kernel,
 * collective, launch wait or group wait, in emulated microseconds; a
 * rank's NVLink-C2C copies and (--overlap async-tp) its communication
 * stream's chunked allreduces on tracks of their own, overlapping.
 *
 * Rank 0 receives each rank's events in turn and streams them out, one
 * event object at a time (jansson encodes each), so memory stays at one
 * rank's events. */
#include <jansson.h>
#include <string.h>

#include "nvlemu/runtime.h"
#include "nvlemu/json.h"
#include "run.h"

/* An event as it travels between ranks (the names are copied: pointers do
 * not survive the trip). */
typedef struct {
    char name[24], algo[16], proto[8];
    int32_t part, layer, pass, track;
    int64_t start_ps, dur_ps;
    double flops, bytes;
} wire_event_t;

static void copy_name(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src != NULL ? src : "");
}

/* Track (thread id) of rank's events: its GPU's stream, its C2C copy
 * engine after every rank's stream, its communication stream (--overlap
 * async-tp) after those. */
static int track_id(int rank, int size, int32_t track)
{
    return track * size + rank;
}

/* A track's name: Chrome's thread_name metadata event for tid. */
static void thread_name(FILE *out, int tid, const char *name, bool *first)
{
    json_t *ev = json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name",
                           "thread_name", "ph", "M", "pid", 0, "tid", tid,
                           "args", "name", name);
    fputs(*first ? "\n" : ",\n", out);
    nvl_json_dumpf(ev, out, JSON_COMPACT);
    json_decref(ev);
    *first = false;
}

/* The names of the tracks after the GPU's stream (nvl_op_event_t.track). */
static const char *const track_names[] = {"", " NVLink-C2C",
                                          " communication stream"};
#define N_TRACKS (int)(sizeof track_names / sizeof track_names[0])

static void write_event(FILE *out, int rank, int size, const wire_event_t *w,
                        bool *first)
{
    json_t *args = json_pack("{s:i, s:i, s:f, s:f}", "layer", w->layer,
                             "pass", w->pass, "flops", w->flops, "bytes",
                             w->bytes);
    if (w->algo[0] != '\0') {
        json_object_set_new(args, "algorithm", json_string(w->algo));
        json_object_set_new(args, "protocol", json_string(w->proto));
    }
    json_t *ev = json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name",
                           w->name, "cat", nvl_part_name((nvl_part_t)w->part),
                           "ph", "X", "ts", (double)w->start_ps / 1e6, "dur",
                           (double)w->dur_ps / 1e6, "pid", 0, "tid",
                           track_id(rank, size, w->track),
                           "args", args);
    fputs(*first ? "\n" : ",\n", out);
    nvl_json_dumpf(ev, out, JSON_COMPACT);
    json_decref(ev);
    *first = false;
}

static void write_track_name(FILE *out, const nvl_topo_t *topo, int tid,
                             int rank, uint32_t gpu, const char *what,
                             bool *first)
{
    char name[96];
    if (topo->die_view) /* --rank-plays die */
        snprintf(name, sizeof name, "rank %d (die %u of GPU %u)%s", rank,
                 gpu % topo->gpu.dies, nvl_topo_package_of(topo, gpu), what);
    else
        snprintf(name, sizeof name, "rank %d (GPU %u)%s", rank, gpu, what);
    thread_name(out, tid, name, first);
}

/* One slice of a stage's track: work on pass `pass`'s microbatch. */
static void stage_slice(FILE *out, const nvl_engine_pipe_t *pp, int stage,
                        int tid, int32_t pass, int64_t start, int64_t end)
{
    int mb = pp->microbatches > 0 ? pp->microbatches : 1;
    char what[64];
    if (pass / mb == 0)
        snprintf(what, sizeof what, "microbatch %d prefill",
                 (int)(pass % mb));
    else
        snprintf(what, sizeof what, "microbatch %d step %d",
                 (int)(pass % mb), (int)(pass / mb));
    json_t *ev = json_pack(
        "{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:{s:i, s:i}}", "name", what,
        "cat", "pipeline", "ph", "X", "ts", (double)start / 1e6, "dur",
        (double)(end - start) / 1e6, "pid", 0, "tid", tid, "args", "stage",
        stage, "pass", (int)pass);
    fputs(",\n", out);
    nvl_json_dumpf(ev, out, JSON_COMPACT);
    json_decref(ev);
}

/* A pipeline: stage k's track (one per stage, after every rank's), from
 * its first rank's events: a slice per run of work (between waits) of a
 * pass, named by the microbatch and step it ran, so that the
 * schedule shows each stage busy on a different microbatch and the
 * bubbles between them. */
static void write_stage_track(FILE *out, const nvl_engine_pipe_t *pp,
                              int stage, int tid, const wire_event_t *w,
                              long long cnt, bool *first)
{
    char name[96];
    snprintf(name, sizeof name, "pipeline stage %d (ranks %d-%d)", stage,
             stage * pp->tp, stage * pp->tp + pp->tp - 1);
    thread_name(out, tid, name, first);
    int64_t start = -1, end = 0;
    for (long long i = 0; i < cnt; i++) {
        if (w[i].track != 0 || w[i].part == NVL_PART_LAUNCH)
            continue;
        bool idle = w[i].part == NVL_PART_WAIT;
        if (!idle && start < 0)
            start = w[i].start_ps;
        if (!idle)
            end = w[i].start_ps + w[i].dur_ps;
        /* a run of work ends at a wait or with its pass */
        if (start >= 0 && (idle || i + 1 == cnt ||
                           w[i + 1].pass != w[i].pass)) {
            stage_slice(out, pp, stage, tid, w[i].pass, start, end);
            start = -1;
        }
    }
    *first = false;
}

/* Rank r's events (cnt_out of them; the caller frees them). */
static wire_event_t *recv_events(MPI_Comm comm, int r, long long *cnt_out)
{
    MPI_Recv(cnt_out, 1, MPI_LONG_LONG, r, 0, comm, MPI_STATUS_IGNORE);
    wire_event_t *w = malloc(((size_t)*cnt_out + 1) * sizeof *w);
    if (w == NULL) {
        nvl_report("out of memory for rank %d's trace", r);
        nvl_runtime_abort(1);
    }
    MPI_Recv(w, (int)((size_t)*cnt_out * sizeof *w), MPI_BYTE, r, 1, comm,
             MPI_STATUS_IGNORE);
    return w;
}

nvl_status_t nvl_run_trace_write(const nvl_engine_t *e, MPI_Comm comm,
                                 const nvl_topo_t *topo, FILE *out)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t n;
    const nvl_op_event_t *ev = nvl_engine_events(e, &n);
    wire_event_t *mine = calloc(n + 1, sizeof *mine);
    if (mine == NULL) {
        nvl_report("out of memory for %zu trace events", n);
        nvl_runtime_abort(1);
    }
    for (size_t i = 0; i < n; i++) {
        wire_event_t *w = &mine[i];
        copy_name(w->name, sizeof w->name, ev[i].name);
        copy_name(w->algo, sizeof w->algo, ev[i].algo);
        copy_name(w->proto, sizeof w->proto, ev[i].proto);
        w->part = (int32_t)ev[i].part;
        w->layer = ev[i].layer;
        w->track = ev[i].track;
        w->pass = ev[i].pass;
        w->start_ps = ev[i].start_ps;
        w->dur_ps = ev[i].dur_ps;
        w->flops = ev[i].flops;
        w->bytes = ev[i].bytes;
    }
    long long count = (long long)n;
    nvl_engine_pipe_t pp;
    nvl_engine_pipeline(e, &pp);
    if (rank != 0) {
        MPI_Send(&count, 1, MPI_LONG_LONG, 0, 0, comm);
        MPI_Send(mine, (int)(n * sizeof *mine), MPI_BYTE, 0, 1, comm);
        free(mine);
        return NVL_OK;
    }
    bool first = true;
    fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [", out);
    json_t *proc = json_pack("{s:s, s:s, s:i, s:{s:s}}", "name",
                             "process_name", "ph", "M", "pid", 0, "args",
                             "name", "nvlemu (emulated time)");
    fputs("\n", out);
    nvl_json_dumpf(proc, out, JSON_COMPACT);
    json_decref(proc);
    first = false;
    for (int r = 0; r < size; r++) {
        wire_event_t *w = mine;
        long long cnt = count;
        if (r != 0)
            w = recv_events(comm, r, &cnt);
        if (pp.stages > 1 && r % pp.tp == 0)
            write_stage_track(out, &pp, r / pp.tp,
                              size * N_TRACKS + r / pp.tp, w, cnt, &first);
        write_track_name(out, topo, r, r, (uint32_t)r, "", &first);
        bool named[N_TRACKS] = {true};
        for (long long i = 0; i < cnt; i++) {
            int t = w[i].track;
            if (t > 0 && t < N_TRACKS && !named[t]) {
                write_track_name(out, topo, track_id(r, size, t), r,
                                 (uint32_t)r, track_names[t], &first);
                named[t] = true;
            }
            write_event(out, r, size, &w[i], &first);
        }
        if (w != mine)
            free(w);
    }
    fputs("\n]}\n", out);
    free(mine);
    if (ferror(out)) {
        nvl_report("--trace: write error");
        return NVL_ERR_IO;
    }
    return NVL_OK;
}
