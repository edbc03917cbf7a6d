/* Private to src/cli: the statistics of an `nvlemu run`, as one table.
 *
 * Every number a rank contributes to the report is one row of
 * nvl_run_stats (run_stats.c): where the rank reads it (a field of the
 * engine's per-pass statistics, summed over the prefill or the decode
 * passes; its shard; its process), how the ranks' values are reduced, its
 * unit and the JSON key the report shows it under.  nvl_run_stats_reduce gathers and
 * reduces every row once, outside the report; the text and JSON reports
 * (run_report.c) then read the reduced values by row, and do no MPI.
 *
 * The per-layer numbers of a mixture of experts are a second, smaller table
 * (nvl_run_layer_stats) over nvl_moe_layer_stats_t, reduced to the mean
 * rank in the same call and written to JSON experts.per_layer by its keys. */
#ifndef NVLEMU_CLI_RUN_STATS_H
#define NVLEMU_CLI_RUN_STATS_H

#include <mpi.h>
#include <stddef.h>

#include "nvlemu/engine.h"

/* How the ranks' values of a row are combined into the value the report
 * reads (nvl_run_stat).  Every row also keeps its minimum, maximum and the
 * ranks holding them (lowest rank on ties). */
typedef enum {
    NVL_RED_MEAN,  /* mean over the ranks */
    NVL_RED_MAX,   /* largest rank's */
    NVL_RED_RANK0, /* rank 0's (the same on every rank) */
    NVL_RED_SUM,   /* summed over the ranks */
} nvl_run_red_t;

/* The rows; a row may hold one value per part of the time (NVL_PART_*). */
typedef enum {
    NVL_RS_PREFILL_MS,        /* per part, the prefill */
    NVL_RS_DECODE_MS,         /* per part, per decode step */
    NVL_RS_DECODE_LAYER_MS,   /* per part, inside the layers, per decode
                                 step and layer */
    NVL_RS_DECODE_IDLE_MS,    /* launch + group wait, per decode step */
    NVL_RS_DECODE_BUSY_MS,    /* the rest of a decode step */
    NVL_RS_DECODE_FLOPS,
    NVL_RS_DECODE_HBM_BYTES,
    NVL_RS_Q_HEADS,           /* this rank's shard */
    NVL_RS_ATTN_IDLE,         /* 1 if the rank holds no query head */
    NVL_RS_INTERMEDIATE,
    NVL_RS_VOCAB,
    NVL_RS_EXPERTS,
    NVL_RS_PEAK_RSS_BYTES,
    NVL_RS_MOE_LAYERS,        /* MoE layers per pass */
    /* decode, per MoE layer: */
    NVL_RS_EXPERT_PAIRS,      /* (token, expert) pairs computed */
    NVL_RS_EXPERT_PAIRS_MAX,  /* the busiest rank's */
    NVL_RS_EXPERT_PAIRS_MEAN, /* the mean rank's */
    NVL_RS_DISPATCH_MS,
    NVL_RS_COMBINE_MS,
    NVL_RS_DISPATCH_BYTES,
    NVL_RS_COMBINE_BYTES,
    NVL_RS_COMBINE_WAIT_MS,   /* idle before the combine, per decode step */
    NVL_RS_C2C_H2D_BYTES,     /* NVLink-C2C, host to GPU, per decode step */
    NVL_RS_C2C_D2H_BYTES,     /* GPU to host, per decode step */
    NVL_RS_C2C_H2D_MS,        /* the host-to-GPU queue busy, per step */
    NVL_RS_DISPATCH_ALT_MS,   /* the all-to-alls as the implementation the */
    NVL_RS_COMBINE_ALT_MS,    /* run does not use would take, per MoE layer */
    NVL_RS_A2A_ALT_USABLE,    /* 1 if that one can run here */
    NVL_RS_OVERLAP_COMM_MS,   /* --overlap async-tp: communication stream */
    NVL_RS_OVERLAP_HIDDEN_MS, /* busy, and of it hidden, per decode step */
    NVL_RS_PREFILL_HIDDEN_MS, /* hidden in the prefill */
    NVL_RS_PP_BUBBLE_MS,      /* pipeline: idle waiting on it, per step */
    NVL_RS_PP_XFER_MS,        /* its sends and receives, per step */
    NVL_RS_PP_BYTES,          /* their bytes, per step */
    NVL_RS_PP_PREFILL_BUBBLE_MS, /* the same in the prefill */
    NVL_RS_PP_PREFILL_XFER_MS,
    NVL_RS_COUNT
} nvl_run_stat_id_t;

/* Where a rank reads a row. */
typedef enum {
    NVL_SRC_PREFILL, /* a field of the prefill's nvl_pass_stats_t */
    NVL_SRC_DECODE,  /* a field of nvl_pass_stats_t summed over the steps */
    NVL_SRC_SHARD,   /* an nvl_range_t of the rank's nvl_shard_t: its count */
    NVL_SRC_OTHER,   /* computed by the row's own function */
} nvl_run_src_t;

/* The field types a row may read. */
typedef enum { NVL_F64, NVL_I64, NVL_U32 } nvl_run_field_t;

/* The unit a rank's value is brought to before the ranks combine, as the
 * report shows it: each rank's value is converted and divided first, and a
 * mean is the sum of each rank's share, so that every reported number keeps
 * the bits it had when the report averaged the ranks itself. */
typedef enum {
    NVL_PER_NONE,          /* as read */
    NVL_PER_MS,            /* ps -> ms */
    NVL_PER_MS_STEP,       /* ps -> ms per decode step */
    NVL_PER_STEP,          /* per decode step */
    NVL_PER_MS_STEP_LAYER, /* ps -> ms per decode step and layer */
    NVL_PER_MS_MOE_LAYER,  /* ps -> ms per MoE layer of the decode steps */
    NVL_PER_MOE_LAYER,     /* per MoE layer of the decode steps */
} nvl_run_per_t;

typedef struct {
    const char *name;         /* for messages and docs */
    nvl_run_src_t src;
    size_t offset;            /* offsetof the field in its source struct */
    nvl_run_field_t type;
    int width;                /* values in the row (NVL_PART_COUNT for the
                                 parts, else 1) */
    /* NVL_SRC_OTHER: value i of the row for this rank */
    double (*other)(const nvl_engine_t *e, int i);
    nvl_run_red_t red;
    const char *unit;         /* of the value as held: ms per decode step,
                                 bytes, FLOP, ... */
    /* Where the JSON report shows it, "object.key": the report writes the
     * key (the last part: nvl_run_stat_key), with _min and _max for a
     * shard's size; the fastest rank's object repeats the slowest's keys,
     * an all_to_all implementation's those of the run's own */
    const char *json;
    nvl_run_per_t per;        /* from the field's unit to `unit` (0 where
                                 there is nothing to divide by: no decode
                                 step or no MoE layer) */
} nvl_run_stat_t;

/* Indexed by nvl_run_stat_id_t. */
extern const nvl_run_stat_t nvl_run_stats[NVL_RS_COUNT];

/* One row of the per-layer table: a double field of nvl_moe_layer_stats_t
 * summed over the decode steps, reduced to the mean rank, shown per step
 * under JSON key `key` after multiplying by `scale` (ps -> ms: 1e-9). */
typedef struct {
    const char *key;
    size_t offset;
    double scale;
} nvl_run_layer_stat_t;

extern const nvl_run_layer_stat_t nvl_run_layer_stats[];
extern const size_t nvl_run_n_layer_stats;

/* The reduced statistics: complete on rank 0, empty elsewhere. */
typedef struct {
    int ranks;
    double *value;  /* ranks x width of every row, rank-major */
    double *red;    /* per slot: the row's reduction */
    double *min, *max;
    int *argmin, *argmax;
    uint32_t layers;
    double *layer;  /* layers x nvl_run_n_layer_stats, the mean rank's */
} nvl_run_totals_t;

/* Collective over comm (the engine's ranks): reads every row on this rank,
 * gathers and reduces them on rank 0 into *totals_out (one MPI_Gather and
 * one MPI_Reduce).  Reports and returns NVL_ERR_NOMEM if memory runs out
 * (on the rank that ran out; the caller aborts the job).  Free with
 * nvl_run_totals_free. */
nvl_status_t nvl_run_stats_reduce(const nvl_engine_t *e, MPI_Comm comm,
                                  nvl_run_totals_t *totals_out);
void nvl_run_totals_free(nvl_run_totals_t *t);

/* Row id's JSON key: the last part of its .json. */
const char *nvl_run_stat_key(nvl_run_stat_id_t id);

/* Value i of row id, reduced as the row says; its minimum, maximum, and
 * the rank holding the minimum / maximum; and rank `rank`'s own value. */
double nvl_run_stat(const nvl_run_totals_t *t, nvl_run_stat_id_t id, int i);
double nvl_run_stat_min(const nvl_run_totals_t *t, nvl_run_stat_id_t id);
double nvl_run_stat_max(const nvl_run_totals_t *t, nvl_run_stat_id_t id);
int nvl_run_stat_argmin(const nvl_run_totals_t *t, nvl_run_stat_id_t id);
int nvl_run_stat_argmax(const nvl_run_totals_t *t, nvl_run_stat_id_t id);
double nvl_run_stat_at(const nvl_run_totals_t *t, nvl_run_stat_id_t id,
                       int rank);

/* Per-layer value k (index into nvl_run_layer_stats) of layer l, summed
 * over the decode steps, the mean rank's. */
double nvl_run_layer_stat(const nvl_run_totals_t *t, uint32_t l, size_t k);

#endif
