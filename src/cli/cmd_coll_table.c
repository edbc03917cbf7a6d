/* nvlemu coll-table: NCCL's tuning table (what NCCL_DEBUG_SUBSYS=TUNING
 * prints) as the emulator's cost model predicts it for a job of N ranks on
 * a topology: per collective, algorithm and protocol, the latency (us) and
 * algorithm bandwidth (GB/s) of
 *
 *   time(B) = latency + B / bandwidth        (B: NCCL's nBytes)
 *   latency   = the predicted time of a 1-byte call (0 bytes cost nothing)
 *   bandwidth = BIG / (time(BIG) - latency), BIG = 4 GiB
 *
 * 0.0/0.0 where the pair cannot run the collective here or NCCL_ALGO /
 * NCCL_PROTO / NCCL_NVLS_ENABLE disable it.  No MPI job is needed: the
 * table comes from a prediction-only communicator (nvl_comm_create_virtual)
 * in one process; under mpirun every rank checks its input and rank 0
 * prints. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "nvlemu/coll.h"
#include "nvlemu/json.h"
#include "nvlemu/runtime.h"
#include "nvlemu/topo.h"
#include "nvlemu/units.h"

#define BIG_BYTES ((size_t)4 << 30)
#define N_TABLE_COLLS (NVL_COLL_ALLREDUCE + 1) /* NCCL's five, in order */
#define ALGOS_PER_BLOCK 3                      /* as NCCL prints them */

typedef struct {
    nvl_cli_common_t common;
    long ranks;
    nvl_comm_t *comm; /* the prediction-only communicator */
} table_args_t;

#define USAGE "nvlemu coll-table --topo FILE [--ranks N] [--json FILE] " \
              "[--set K=V]...   (honours NCCL_ALGO, NCCL_PROTO, "       \
              "NCCL_NVLS_ENABLE, NCCL_MAX_NCHANNELS)"

static const nvl_opt_t table_opts[] = {
    NVL_CLI_OPT_TOPO(table_args_t, NULL, true),
    NVL_CLI_OPT_RANKS(table_args_t, "model a job of N ranks, GPUs 0..N-1 "
                                    "(default: every GPU)"),
    NVL_CLI_OPT_JSON(table_args_t, "write the table as JSON to FILE ('-': "
                                   "standard output) instead"),
    NVL_CLI_OPT_SET(table_args_t),
    NVL_CLI_OPT_SET_FILE(table_args_t),
    NVL_CLI_OPT_RANK_PLAYS(table_args_t),
    NVL_CLI_OPT_HELP(table_args_t),
};

typedef enum { CELL_OK, CELL_UNSUPPORTED, CELL_DISABLED } cell_state_t;
static const char *const cell_state_names[] = {
    [CELL_OK] = "ok", [CELL_UNSUPPORTED] = "unsupported",
    [CELL_DISABLED] = "disabled"};

typedef struct {
    cell_state_t state;
    int64_t lat_ps;
    double algbw_bytes_per_s;
} cell_t;

typedef cell_t table_t[N_TABLE_COLLS][NVL_ALGO_COUNT][NVL_PROTO_COUNT];

static void fill_table(const nvl_comm_t *comm, table_t table)
{
    const nvl_tuner_cfg_t *cfg = nvl_comm_tuner(comm);
    for (int c = 0; c < N_TABLE_COLLS; c++)
        for (int a = 0; a < NVL_ALGO_COUNT; a++)
            for (int p = 0; p < NVL_PROTO_COUNT; p++) {
                cell_t *cell = &table[c][a][p];
                nvl_coll_info_t zero, big;
                *cell = (cell_t){CELL_DISABLED, 0, 0};
                if (!cfg->algo_enabled[a] || !cfg->proto_enabled[p])
                    continue;
                cell->state = CELL_UNSUPPORTED;
                if (nvl_coll_predict(comm, (nvl_coll_t)c, 1, (nvl_algo_t)a,
                                     (nvl_proto_t)p, &zero) != NVL_OK ||
                    nvl_coll_predict(comm, (nvl_coll_t)c, BIG_BYTES,
                                     (nvl_algo_t)a, (nvl_proto_t)p,
                                     &big) != NVL_OK)
                    continue;
                cell->state = CELL_OK;
                cell->lat_ps = zero.time_ps;
                if (big.time_ps > zero.time_ps)
                    cell->algbw_bytes_per_s =
                        (double)BIG_BYTES /
                        ((double)(big.time_ps - zero.time_ps) * 1e-12);
            }
}

/* The line NCCL prints above its table, with what the model knows. */
static void print_summary(const nvl_topo_t *topo, const nvl_comm_t *comm,
                          const table_t table)
{
    int n = nvl_comm_size(comm);
    const nvl_tuner_cfg_t *cfg = nvl_comm_tuner(comm);
    uint32_t channels = topo->nccl.channels;
    if (cfg->max_channels > 0 && (uint32_t)cfg->max_channels < channels)
        channels = (uint32_t)cfg->max_channels;
    uint32_t domains = 1;
    double nvlink = nvl_topo_nvlink_bw(topo, 0), nic = nvl_topo_nic_bw(topo, 0);
    for (int i = 1; i < n; i++) {
        uint32_t g = nvl_comm_gpu(comm, i);
        if (nvl_topo_domain_of(topo, g) != nvl_topo_domain_of(topo, g - 1))
            domains++;
        double bw = nvl_topo_nvlink_bw(topo, g), nb = nvl_topo_nic_bw(topo, g);
        nvlink = bw < nvlink ? bw : nvlink;
        nic = nb < nic ? nb : nic;
    }
    char nv[32], net[32];
    nvl_qty_format(NVL_QTY_BW, nvlink, nv, sizeof nv);
    nvl_qty_format(NVL_QTY_BW, nic, net, sizeof net);
    const cell_t *nvls = &table[NVL_COLL_ALLREDUCE][NVL_ALGO_NVLS]
                               [NVL_PROTO_SIMPLE];
    const char *algo = getenv("NCCL_ALGO"), *proto = getenv("NCCL_PROTO");
    printf("nvlemu model of NCCL tuning for %s, %d rank%s: %u coll "
           "channels; %u NVLink domain%s, NVLink %s per GPU%s%s; NVLS %s; "
           "NCCL_ALGO=%s NCCL_PROTO=%s.\n",
           topo->name, n, n == 1 ? "" : "s", channels, domains,
           domains == 1 ? "" : "s", nv, domains > 1 ? ", scale-out " : "",
           domains > 1 ? net : "",
           nvls->state == CELL_OK            ? "available"
           : nvls->state == CELL_DISABLED    ? "disabled"
                                             : "unavailable",
           algo != NULL && *algo ? algo : "(all)",
           proto != NULL && *proto ? proto : "(all)");
    if (topo->die_view) { /* --rank-plays die */
        char dl[32];
        nvl_qty_format(NVL_QTY_BW, topo->gpu.die_link_bw_bytes_per_s, dl,
                       sizeof dl);
        printf("Ranks play dies: the NVLink figure is one die's share; the "
               "two dies of a package talk over the die link, %s each way "
               "(docs/collectives.md, \"Die pairs\").\n", dl);
    }
    printf("Each cell: predicted latency (us) / algorithm bandwidth (GB/s): "
           "latency = time of a 1-byte call, bandwidth = 4 GiB / (time(4 "
           "GiB) - latency); 0.0/0.0: unsupported or disabled.\n");
}

static void print_table(const table_t table)
{
    for (int first = 0; first < NVL_ALGO_COUNT; first += ALGOS_PER_BLOCK) {
        int end = first + ALGOS_PER_BLOCK < NVL_ALGO_COUNT
                      ? first + ALGOS_PER_BLOCK
                      : NVL_ALGO_COUNT;
        printf("  Algorithm   |");
        for (int a = first; a < end; a++)
            printf(" %14s   %14s   %14s |", "", nvl_algo_name((nvl_algo_t)a), "");
        printf("\n  Protocol    |");
        for (int a = first; a < end; a++)
            for (int p = 0; p < NVL_PROTO_COUNT; p++)
                printf(" %14s |", nvl_proto_name((nvl_proto_t)p));
        printf("\n");
        for (int c = 0; c < N_TABLE_COLLS; c++) {
            printf("%13s |", nvl_coll_name((nvl_coll_t)c));
            for (int a = first; a < end; a++)
                for (int p = 0; p < NVL_PROTO_COUNT; p++)
                    printf(" %7.1f/%6.1f |",
                           (double)table[c][a][p].lat_ps / 1e6,
                           table[c][a][p].algbw_bytes_per_s / 1e9);
            printf("\n");
        }
    }
}

/* The sizes the allreduce table probes: bf16 rows of 8192 (Qwen2.5-72B's
 * hidden size) at 1, 8, 64 and 512 tokens. */
static const size_t probe_bytes[] = {16384, 131072, 1048576, 8388608};
#define N_PROBES (sizeof probe_bytes / sizeof probe_bytes[0])

/* One implementation's row: 1-byte latency, bandwidth, probe times (ps);
 * false when it cannot run on comm. */
static bool impl_row(const nvl_comm_t *comm, nvl_ar_impl_t impl,
                     int64_t *lat_ps, double *algbw, int64_t *probe_ps,
                     nvl_ar_impl_t *picked)
{
    nvl_coll_info_t one, big, at;
    if (nvl_ar_predict(comm, impl, 1, &one) != NVL_OK ||
        nvl_ar_predict(comm, impl, BIG_BYTES, &big) != NVL_OK)
        return false;
    *lat_ps = one.time_ps;
    *algbw = big.time_ps > one.time_ps
                 ? (double)BIG_BYTES / ((double)(big.time_ps - one.time_ps) *
                                        1e-12)
                 : 0;
    for (size_t i = 0; i < N_PROBES; i++) {
        nvl_ar_predict(comm, impl, probe_bytes[i], &at);
        probe_ps[i] = at.time_ps;
        picked[i] = (nvl_ar_impl_t)at.impl;
    }
    return true;
}

static void print_impls(const nvl_comm_t *comm)
{
    printf("\nAllReduce implementations (--allreduce): latency (us) / "
           "algorithm bandwidth (GB/s), and time (us) at 16 KB, 128 KB, "
           "1 MB, 8 MB (auto: what it runs there)\n");
    for (int i = 0; i < (int)nvl_ar_impl_family.n_rows; i++) {
        int64_t lat, t[N_PROBES];
        double bw;
        nvl_ar_impl_t picked[N_PROBES];
        printf("%13s |", nvl_ar_impl_name((nvl_ar_impl_t)i));
        if (!impl_row(comm, (nvl_ar_impl_t)i, &lat, &bw, t, picked)) {
            printf(" unavailable: %s\n",
                   nvl_ar_impl_unsupported(comm, (nvl_ar_impl_t)i));
            continue;
        }
        printf(" %7.1f/%6.1f |", (double)lat / 1e6, bw / 1e9);
        bool chooses = false; /* auto: another implementation runs */
        for (size_t k = 0; k < N_PROBES; k++) {
            printf(" %8.1f", (double)t[k] / 1e6);
            chooses = chooses || picked[k] != (nvl_ar_impl_t)i;
        }
        if (chooses)
            for (size_t k = 0; k < N_PROBES; k++)
                printf("%s%s", k ? ", " : "  (", nvl_ar_impl_name(picked[k]));
        printf("%s\n", chooses ? ")" : "");
    }
}

static json_t *impls_json(const nvl_comm_t *comm)
{
    json_t *arr = json_array();
    for (int i = 0; i < (int)nvl_ar_impl_family.n_rows; i++) {
        int64_t lat = 0, t[N_PROBES];
        double bw = 0;
        nvl_ar_impl_t picked[N_PROBES];
        json_t *o = json_object();
        json_object_set_new(o, "impl",
                            json_string(nvl_ar_impl_name((nvl_ar_impl_t)i)));
        bool ok = impl_row(comm, (nvl_ar_impl_t)i, &lat, &bw, t, picked);
        json_object_set_new(o, "state", json_string(ok ? "ok" : "unsupported"));
        if (ok) {
            json_t *probes = json_array();
            for (size_t k = 0; k < N_PROBES; k++) {
                json_t *p = json_object();
                json_object_set_new(p, "bytes",
                                    json_integer((json_int_t)probe_bytes[k]));
                json_object_set_new(p, "time_ps", json_integer(t[k]));
                json_object_set_new(p, "runs",
                                    json_string(nvl_ar_impl_name(picked[k])));
                json_array_append_new(probes, p);
            }
            json_object_set_new(o, "lat_ps", json_integer(lat));
            json_object_set_new(o, "algbw_bytes_per_s", json_real(bw));
            json_object_set_new(o, "probes", probes);
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

/* Base units, as nvlemu topo --json: ps and bytes/s. */
static nvl_status_t write_json(const nvl_topo_t *topo, const char *origin,
                               const nvl_comm_t *comm, const table_t table,
                               FILE *out)
{
    json_t *root = json_object(), *cells = json_array();
    json_object_set_new(root, "topology", json_string(topo->name));
    json_object_set_new(root, "file", json_string(origin));
    json_object_set_new(root, "ranks", json_integer(nvl_comm_size(comm)));
    json_object_set_new(root, "algbw_probe_bytes",
                        json_integer((json_int_t)BIG_BYTES));
    json_object_set_new(root, "units", json_string("lat: ps, algbw: bytes/s"));
    for (int c = 0; c < N_TABLE_COLLS; c++)
        for (int a = 0; a < NVL_ALGO_COUNT; a++)
            for (int p = 0; p < NVL_PROTO_COUNT; p++) {
                const cell_t *cell = &table[c][a][p];
                json_t *o = json_object();
                json_object_set_new(o, "coll",
                                    json_string(nvl_coll_name((nvl_coll_t)c)));
                json_object_set_new(o, "algo", json_string(nvl_algo_name((nvl_algo_t)a)));
                json_object_set_new(o, "proto", json_string(nvl_proto_name((nvl_proto_t)p)));
                json_object_set_new(o, "state",
                                    json_string(cell_state_names[cell->state]));
                json_object_set_new(o, "lat_ps", json_integer(cell->lat_ps));
                json_object_set_new(o, "algbw_bytes_per_s",
                                    json_real(cell->algbw_bytes_per_s));
                json_array_append_new(cells, o);
            }
    json_object_set_new(root, "cells", cells);
    json_object_set_new(root, "allreduce_impls", impls_json(comm));
    int rc = nvl_json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (rc != 0 || fputc('\n', out) == EOF) {
        nvl_report("cannot write the JSON table");
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

static nvl_status_t output(const table_args_t *args, const nvl_topo_t *topo,
                           const nvl_comm_t *comm, const table_t table)
{
    if (args->common.json == NULL) {
        print_summary(topo, comm, table);
        print_table(table);
        print_impls(comm);
        return NVL_OK;
    }
    FILE *out = nvl_cli_open_out("--json", args->common.json);
    if (out == NULL)
        return NVL_ERR_IO;
    nvl_status_t st = write_json(topo, args->common.topo, comm, table, out);
    nvl_status_t cst = nvl_cli_close_out("--json", args->common.json, out);
    return st != NVL_OK ? st : cst;
}

static nvl_status_t prepare(void *args, const nvl_cli_ctx_t *ctx)
{
    table_args_t *a = args;
    if (a->ranks > (long)ctx->topo->gpus) {
        nvl_report("--ranks %ld: topology '%s' has only %u GPUs", a->ranks,
                   ctx->topo->name, ctx->topo->gpus);
        return NVL_ERR_INVALID;
    }
    /* --rank-plays die: the modeled job fills whole packages too */
    if (nvl_topo_check_die_ranks(ctx->topo, a->ranks > 0
                                                ? (uint32_t)a->ranks
                                                : ctx->topo->gpus) != NVL_OK)
        return NVL_ERR_INVALID;
    return nvl_comm_create_virtual(
        ctx->topo, a->ranks > 0 ? (int)a->ranks : (int)ctx->topo->gpus, NULL,
        &a->comm);
}

/* Rank 0 computes and prints; the others only checked their input. */
static nvl_status_t body(void *args, const nvl_cli_ctx_t *ctx)
{
    const table_args_t *a = args;
    if (ctx->rt->rank != 0)
        return NVL_OK;
    static table_t table;
    fill_table(a->comm, table);
    nvl_status_t st = output(a, ctx->topo, a->comm, table);
    fflush(stdout);
    return st;
}

static void cleanup(void *args)
{
    nvl_comm_destroy(((table_args_t *)args)->comm);
}

const nvl_cli_command_t nvl_cli_table_command = {
    .args_size = sizeof(table_args_t),
    .opts = NVL_CLI_OPTS("coll-table", table_opts, USAGE, 0),
    .common_offset = offsetof(table_args_t, common),
    .prepare = prepare,
    .body = body,
    .cleanup = cleanup,
};

int nvl_cmd_coll_table(int argc, char **argv)
{
    table_args_t args = {0};
    return nvl_cli_command_run(&nvl_cli_table_command, &args, argc, argv);
}
