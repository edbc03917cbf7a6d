/* The engine's private state, shared by its files: load.c (weights from a
 * checkpoint or synthetic), forward.c (the pass), moe.c (the mixture-of-
 * experts MLP), record.c (events and per-pass statistics). */
#ifndef NVLEMU_ENGINE_IMPL_H
#define NVLEMU_ENGINE_IMPL_H

#include "nvlemu/engine.h"
#include "nvlemu/shard.h"

typedef struct {
    float *in_norm, *post_norm;       /* hidden */
    float *wq, *bq;                   /* [qh*hd, hidden], [qh*hd] */
    float *wk, *bk, *wv, *bv;         /* [kvh*hd, hidden], [kvh*hd] */
    float *q_norm, *k_norm;           /* [hd] (Qwen3) */
    float *wo;                        /* [hidden, qh*hd] */
    float *wg, *wu;                   /* [inter, hidden] */
    float *wd;                        /* [hidden, inter] */
    /* mixture-of-experts layers (the dense wg, wu, wd stay NULL) */
    float *router;                    /* [experts, hidden], every rank */
    float *eg, *eu;                   /* [held experts][moe inter shard, hidden] */
    float *ed;                        /* [held experts][hidden, moe inter shard] */
} nvl_layer_weights_t;

struct nvl_engine {
    nvl_model_config_t cfg;
    nvl_engine_opts_t opts;
    nvl_shard_t shard;
    nvl_comm_t *tp;       /* the whole job */
    nvl_comm_t *dense;    /* attention, embedding, lm_head, dense MLPs: tp,
                             or this rank alone (data-parallel attention;
                             owned) */
    uint32_t layers;      /* layers run */
    uint64_t row0;        /* the pass's first row in the whole batch's
                             (seeds timing mode's routing) */
    bool data;            /* data mode: weights and arithmetic */
    /* data mode only */
    float *embed;   /* [vocab shard, hidden] */
    float *lm_head; /* [vocab shard, hidden] (the embedding when tied) */
    float *norm;    /* [hidden] */
    nvl_layer_weights_t *lw;
    /* time */
    nvl_stream_t stream;
    int32_t pass;         /* pass being run */
    nvl_pass_stats_t cur; /* its statistics */
    /* record.c */
    int32_t keep_passes;  /* record events of passes below this (-1: all) */
    double pass_wall_start;
    nvl_op_event_t *events;
    size_t n_events, cap_events;
    nvl_pass_stats_t *passes;
    size_t n_passes, cap_passes;
    nvl_moe_layer_stats_t *moe_decode; /* [layers] */
};

/* load.c: fills the weights of a data-mode engine (e->shard set). */
nvl_status_t nvl_engine_load_weights(nvl_engine_t *e);
void nvl_engine_free_weights(nvl_engine_t *e);

/* forward.c: issuing kernels (their modeled time advances the clock; a
 * kernel without work is skipped) and float32 arithmetic. */
void nvl_engine_kernel(nvl_engine_t *e, const char *name, nvl_part_t part,
                       int32_t layer, nvl_kernel_cost_t c);
void nvl_engine_matmul(nvl_engine_t *e, const char *name, int32_t layer,
                       uint64_t m, uint64_t n, uint64_t k);
/* A memory-bound kernel moving `elems` bf16 elements through HBM. */
void nvl_engine_elementwise(nvl_engine_t *e, const char *name, int32_t layer,
                            double elems);
/* y[t, o] = sum_i x[t, i] w[o, i] (+ b[o]) */
void nvl_engine_linear(const float *x, const float *w, const float *b,
                       float *y, uint64_t T, uint64_t O, uint64_t I);

/* forward.c: a collective's launch (returns this rank's clock on
 * entering the collective) and its accounting (the wait for the group,
 * then its time). */
int64_t nvl_engine_coll_begin(nvl_engine_t *e, int32_t layer);
void nvl_engine_coll_done(nvl_engine_t *e, const char *name, int32_t layer,
                          int64_t entry_ps, const nvl_coll_info_t *info);

/* moe.c: the mixture-of-experts MLP of layer li over M rows.  Data mode:
 * h holds the normed input [M, hidden] and receives this rank's partial
 * sum of the experts' output (the caller's allreduce completes it); timing
 * mode: h is NULL.  Issues the router, top-k, grouped expert GEMMs and
 * combine kernels, costed with the routing's per-expert token counts (data
 * mode: the real routing; timing mode: seeded, uniform or Zipf over the
 * experts, opts.route_skew). */
void nvl_engine_moe(nvl_engine_t *e, uint32_t li, uint64_t M, float *h);

/* moe.c, expert parallelism (e->shard.ep > 1 or attention data-parallel):
 * collective over e->tp.  This rank's R rows (the pass's rows row0 ..
 * row0 + R - 1 of the whole batch) are routed here, sent to the ranks
 * holding their experts (dispatch), computed there and sent back
 * (combine).  Data mode: h holds the normed input [R, hidden] and receives
 * the experts' complete weighted sum; timing mode: h is NULL. */
nvl_status_t nvl_engine_moe_ep(nvl_engine_t *e, uint32_t li, uint64_t R,
                               uint64_t row0, float *h);

/* Whether layer li's experts exchange tokens with all-to-alls. */
bool nvl_engine_moe_is_ep(const nvl_engine_t *e, uint32_t li);

/* record.c */
void nvl_engine_pass_begin(nvl_engine_t *e, uint64_t tokens);
void nvl_engine_pass_end(nvl_engine_t *e, uint64_t context);
/* Adds dur_ps of part to the current pass, and an event unless it is
 * idle time (launch, wait) or recording is off. */
void nvl_engine_account(nvl_engine_t *e, const char *name, nvl_part_t part,
                        int32_t layer, int64_t start_ps, int64_t dur_ps,
                        double flops, double bytes);
/* The last event accounted, or NULL (to add collective details). */
nvl_op_event_t *nvl_engine_last_event(nvl_engine_t *e);

#endif
