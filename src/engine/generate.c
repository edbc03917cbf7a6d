/* Generation: the prompts checked, one prefill over the batch, then
 * decode steps with greedy sampling; outputs gathered under data-parallel
 * attention. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "nvlemu/runtime.h"

static nvl_status_t check_prompts(const nvl_engine_t *e, const int32_t *ids,
                                  const int *lens, int batch, int max_new)
{
    size_t at = 0;
    for (int b = 0; b < batch; b++) {
        if (lens[b] < 1) {
            nvl_report("prompt %d is empty", b);
            return NVL_ERR_INVALID;
        }
        uint64_t need = (uint64_t)lens[b] + (uint64_t)(max_new - 1);
        const nvl_model_config_t *c = &e->cfg;
        if (need > nvl_model_max_context(c)) {
            char why[160];
            if (c->rope_yarn_factor > 0)
                snprintf(why, sizeof why, "YaRN rope scaling: factor %g x "
                         "%u pretrained positions", c->rope_yarn_factor,
                         c->rope_original_positions);
            else if (c->rope_llama3_factor > 0)
                snprintf(why, sizeof why, "max_position_embeddings %u, "
                         "with llama3 rope scaling: factor %g over %u "
                         "pretrained positions", c->max_positions,
                         c->rope_llama3_factor, c->rope_original_positions);
            else
                snprintf(why, sizeof why, "max_position_embeddings %u; "
                         "YaRN rope scaling, --rope-scaling yarn:FACTOR, "
                         "stretches it FACTOR times",
                         c->max_positions);
            nvl_report("prompt %d: %d tokens + %d new need %llu positions, "
                       "more than model '%s' allows (%s)", b, lens[b],
                       max_new, (unsigned long long)need, c->name, why);
            return NVL_ERR_INVALID;
        }
        for (int t = 0; ids != NULL && t < lens[b]; t++, at++)
            if (ids[at] < 0 || (uint32_t)ids[at] >= e->cfg.vocab) {
                nvl_report("token id %d (prompt %d, position %d) is outside "
                           "the vocabulary (0..%u)", (int)ids[at], b, t,
                           e->cfg.vocab - 1);
                return NVL_ERR_INVALID;
            }
    }
    if (e->data && ids == NULL) {
        nvl_report("data mode needs prompt token ids");
        return NVL_ERR_INVALID;
    }
    int ranks = nvl_comm_size(e->tp);
    if (e->shard.attn_dp && batch < ranks) {
        nvl_report("data-parallel attention on %d ranks needs at least one "
                   "sequence per rank: batch %d", ranks, batch);
        return NVL_ERR_INVALID;
    }
    return NVL_OK;
}

/* Data-parallel attention: every rank's new tokens and logits (rows of
 * `per` values, rank r's from row share.first) gathered on every rank. */
static void gather_outputs(nvl_engine_t *e, int batch, void *buf, int per,
                           MPI_Datatype type)
{
    int n = nvl_comm_size(e->tp);
    int *counts = malloc(2 * (size_t)n * sizeof *counts);
    if (counts == NULL) {
        nvl_report("out of memory gathering the outputs");
        nvl_runtime_abort(1);
    }
    for (int r = 0; r < n; r++) {
        nvl_range_t sh = nvl_range_split((uint32_t)batch, n, r);
        counts[r] = (int)sh.count * per;
        counts[n + r] = (int)sh.first * per;
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, type, buf, counts, counts + n, type,
                   nvl_comm_mpi(e->tp));
    free(counts);
}

/* Collective: fails every rank, with one report, when a rank's clock
 * passed the emulator's range (issue.c held it there) during the run. */
static nvl_status_t check_clock(const nvl_engine_t *e, nvl_status_t st)
{
    nvl_runtime_capture_begin();
    if (st == NVL_OK && e->time_overflow) {
        nvl_report("emulated time passed %.0f days (2^62 ps, the clock's "
                   "range) at %s (layer %d, pass %d): this run lasts longer "
                   "than the emulator can time; lower --batch or the context "
                   "(--ctx, --prompt-len, --gen-len), or undo the --set that "
                   "slows the GPUs (clock_scale, hbm_bw_scale)",
                   (double)NVL_PS_MAX_CLOCK / 1e12 / 86400.0,
                   e->overflow_name, (int)e->overflow_layer,
                   (int)e->overflow_pass);
        st = NVL_ERR_RANGE;
    }
    return nvl_runtime_capture_end_on(nvl_comm_mpi(e->job), st);
}

/* A generation's state on this rank: its nb sequences (from sequence
 * `first` of the batch) in `mbs` microbatches, their caches, the new
 * tokens each pass runs, and each microbatch's logits and the clock at
 * which the last stage ended its last pass. */
typedef struct {
    int nb, mbs, max_new;
    int batch;          /* the whole batch's sequences */
    uint32_t first;
    const int32_t *ids;
    const int *lens;
    int32_t *out;
    float *last_logits;
    nvl_kv_cache_t *caches;
    uint64_t *T;
    uint64_t *row;      /* [nb + 1]: a sequence's first prompt row */
    int32_t *tok;
    float *logits;      /* nb x vocab (data mode) */
    int64_t *end_ps;    /* [mbs] */
} gen_t;

static void gen_alloc(nvl_engine_t *e, gen_t *g)
{
    size_t nb = (size_t)g->nb + 1;
    g->mbs = g->nb < e->stages ? g->nb : e->stages;
    if (g->mbs < 1)
        g->mbs = 1;
    e->microbatches = g->mbs;
    g->caches = calloc(nb, sizeof *g->caches);
    g->T = malloc(nb * sizeof *g->T);
    g->row = malloc(nb * sizeof *g->row);
    g->tok = malloc(nb * sizeof *g->tok);
    g->end_ps = calloc((size_t)g->mbs, sizeof *g->end_ps);
    g->logits = e->data ? malloc((nb * e->cfg.vocab) * sizeof *g->logits)
                        : NULL;
    if (!g->caches || !g->T || !g->row || !g->tok || !g->end_ps ||
        (e->data && !g->logits)) {
        nvl_report("out of memory for a batch of %d", g->nb);
        nvl_runtime_abort(1);
    }
    uint64_t r = 0;
    for (uint32_t b = 0; b < g->first; b++)
        r += (uint64_t)g->lens[b];
    for (int b = 0; b <= g->nb; b++) {
        g->row[b] = r;
        if (b < g->nb) {
            g->T[b] = (uint64_t)g->lens[g->first + (uint32_t)b];
            r += g->T[b];
        }
    }
}

static void gen_free(nvl_engine_t *e, gen_t *g)
{
    for (int b = 0; b < g->nb; b++)
        nvl_engine_kv_free(&g->caches[b], e->layers);
    free(g->caches);
    free(g->T);
    free(g->row);
    free(g->tok);
    free(g->end_ps);
    free(g->logits);
}

/* Data-parallel attention: every member's rows of step s of microbatch m
 * (its sequences' prompts at s 0, one row each after), from its first
 * row of the batch's, handed to the engine (nvl_engine_ep_rows). */
static void member_rows(nvl_engine_t *e, const gen_t *g, int m, int s)
{
    int n = nvl_comm_size(e->tp);
    uint64_t *rows = nvl_engine_moe_alloc(2 * (size_t)n, sizeof *rows);
    for (int q = 0; q < n; q++) {
        nvl_range_t seqs = nvl_range_split((uint32_t)g->batch, n, q);
        int mbs = (int)seqs.count < e->stages ? (int)seqs.count : e->stages;
        nvl_range_t r = nvl_range_split(seqs.count, mbs < 1 ? 1 : mbs, m);
        uint64_t at = 0, len = 0;
        for (uint32_t b = 0; s == 0 && b < seqs.first + r.first; b++)
            at += (uint64_t)g->lens[b];
        for (uint32_t b = 0; s == 0 && b < r.count; b++)
            len += (uint64_t)g->lens[seqs.first + r.first + b];
        rows[q] = s == 0 ? len : r.count;
        rows[n + q] = s == 0 ? at : seqs.first + r.first;
    }
    nvl_engine_ep_rows(e, rows, rows + n);
    free(rows);
}

/* Step s of microbatch m on this rank: the prefill (s 0) of its prompts
 * or a decode step of its last tokens. */
static nvl_status_t forward_one(nvl_engine_t *e, gen_t *g, int m, int s)
{
    nvl_range_t r = nvl_range_split((uint32_t)g->nb, g->mbs, m);
    const int32_t *tok = g->tok + r.first;
    e->row0 = g->first + r.first;
    if (s == 0) {
        e->row0 = g->row[r.first];
        tok = g->ids != NULL ? g->ids + g->row[r.first] : NULL;
    }
    if (e->shard.attn_dp)
        member_rows(e, g, m, s);
    nvl_status_t st = nvl_engine_forward(
        e, (int)r.count, g->caches + r.first, tok, g->T + r.first,
        e->data ? g->logits + (size_t)r.first * e->cfg.vocab : NULL);
    g->end_ps[m] = nvl_engine_clock(e)->now_ps;
    return st;
}

/* Step s of microbatch m.  With a pipeline, collective over the job: an
 * error on any stage (passed on stage to stage by pipe.c) fails every
 * rank, reported once by the first failing rank; g->end_ps[m] becomes the
 * last stage's end on every rank (the same reduction). */
static nvl_status_t forward_mb(nvl_engine_t *e, gen_t *g, int m, int s)
{
    if (e->stages == 1)
        return forward_one(e, g, m, s);
    nvl_runtime_capture_begin();
    nvl_status_t st = forward_one(e, g, m, s);
    /* the last stage's end rides the agreement: when the microbatch's
     * tokens are sampled, for every rank (pipe.c's deliver) */
    if (e->stage != e->stages - 1)
        g->end_ps[m] = -1;
    return nvl_runtime_capture_end_max(nvl_comm_mpi(e->job), st,
                                       &g->end_ps[m]);
}

/* Microbatch m's logits of step s from the last stage; its sequences'
 * next tokens sampled (greedy). */
static void collect_mb(nvl_engine_t *e, gen_t *g, int m, int s)
{
    nvl_range_t r = nvl_range_split((uint32_t)g->nb, g->mbs, m);
    uint32_t V = e->cfg.vocab;
    float *lg = e->data ? g->logits + (size_t)r.first * V : NULL;
    nvl_engine_pipe_deliver(e, (int)r.count, lg, g->end_ps[m]);
    if (s == 0 && g->last_logits != NULL && e->data)
        memcpy(g->last_logits + (size_t)(g->first + r.first) * V, lg,
               (size_t)r.count * V * sizeof *lg);
    for (uint32_t b = r.first; b < r.first + r.count; b++) {
        g->tok[b] = e->data ? nvl_engine_argmax(g->logits + (size_t)b * V, V)
                            : -1;
        g->out[(size_t)(g->first + b) * g->max_new + s] = g->tok[b];
        g->T[b] = 1;
    }
}

/* Step s of microbatch m in a step agreed once (run_steps): the pass, or,
 * once this rank's stage has failed earlier in the step (st), the skip
 * that keeps its neighbours from waiting; g->end_ps[m] the last stage's
 * end (-1 elsewhere), agreed at the step's end. */
static nvl_status_t forward_in_step(nvl_engine_t *e, gen_t *g, int m, int s,
                                    nvl_status_t st)
{
    if (st == NVL_OK) {
        st = forward_one(e, g, m, s);
    } else {
        nvl_range_t r = nvl_range_split((uint32_t)g->nb, g->mbs, m);
        uint64_t M = 0;
        for (uint32_t b = r.first; b < r.first + r.count; b++)
            M += g->T[b];
        st = nvl_engine_pipe_skip(e, M, st);
    }
    if (st != NVL_OK || e->stage != e->stages - 1)
        g->end_ps[m] = -1;
    return st;
}

/* How a pipeline's steps agree (timing mode): each recorded whole and
 * agreed in one exchange (STEP_WHOLE: every stage records its passes,
 * pipe_agree.c), or its passes' ends in one agreement over the job
 * (STEP_ONCE, where passes are recorded one by one or stages are of one
 * rank: a pass's status must be the same on every rank of a stage, so
 * that its ranks skip the step's later passes alike, forward_in_step:
 * agreed in the stage's settlement when its passes are recorded, pipe.c,
 * trivially in a stage of one rank), else each microbatch's pass in its
 * own (STEP_EACH, data mode).  Collective over the job, which agrees on
 * the answer. */
enum { STEP_EACH, STEP_ONCE, STEP_WHOLE };

static int step_agreement(nvl_engine_t *e)
{
    if (e->stages == 1)
        return STEP_EACH;
    /* asked of every rank, data mode too: a rank of another mode makes
     * the answer STEP_EACH, and its first collective reports the
     * difference */
    bool once = !e->data &&
                (nvl_engine_records(e) || nvl_comm_size(e->tp) == 1);
    int mine = nvl_engine_pipe_can_record_step(e) ? STEP_WHOLE
               : once                              ? STEP_ONCE
                                                   : STEP_EACH,
        all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, nvl_comm_mpi(e->job));
    return all;
}

/* Step s recorded whole on this rank (every microbatch's pass; no peer
 * is waited for) and agreed in one exchange over the job, which gives
 * each microbatch's last-stage end. */
static nvl_status_t step_whole(nvl_engine_t *e, gen_t *g, int s,
                               int64_t *ends_ps)
{
    nvl_runtime_capture_begin();
    nvl_engine_step_record(e);
    nvl_status_t st = NVL_OK;
    for (int m = 0; m < g->mbs && st == NVL_OK; m++) {
        if (s > 0)
            collect_mb(e, g, m, s - 1);
        st = forward_one(e, g, m, s);
    }
    st = nvl_engine_pipe_settle_step(e, st, ends_ps, g->mbs);
    for (int m = 0; m < g->mbs; m++)
        g->end_ps[m] = ends_ps[(e->stages - 1) * g->mbs + m];
    return st;
}

/* The prefill and the decode steps, microbatch after microbatch: with a
 * pipeline each stage works on a different microbatch, and a
 * microbatch's next step starts when the last stage has sampled its
 * tokens (vLLM's virtual engines, one per stage: vllm/engine/
 * llm_engine.py, LLMEngine.step(virtual_engine)).  In timing mode a step
 * is agreed once over the job where it can (step_agreement), in data
 * mode each microbatch's pass (its logits follow, pipe.c's deliver). */
static nvl_status_t run_steps(nvl_engine_t *e, gen_t *g)
{
    int how = step_agreement(e);
    bool once = how == STEP_ONCE;
    int64_t *ends = NULL;
    if (how == STEP_WHOLE &&
        (ends = malloc((size_t)(e->stages * g->mbs) * sizeof *ends)) ==
            NULL) {
        nvl_report("out of memory for %d stages' ends", e->stages);
        nvl_runtime_abort(1);
    }
    nvl_status_t st = NVL_OK;
    for (int s = 0; s < g->max_new && st == NVL_OK; s++) {
        if (how == STEP_WHOLE) {
            st = step_whole(e, g, s, ends);
            continue;
        }
        if (once)
            nvl_runtime_capture_begin();
        for (int m = 0; m < g->mbs && (once || st == NVL_OK); m++) {
            if (s > 0)
                collect_mb(e, g, m, s - 1);
            st = once ? forward_in_step(e, g, m, s, st)
                      : forward_mb(e, g, m, s);
        }
        if (once)
            st = nvl_runtime_capture_end_maxn(nvl_comm_mpi(e->job), st,
                                              g->end_ps, g->mbs);
    }
    free(ends);
    for (int m = 0; m < g->mbs && st == NVL_OK; m++)
        collect_mb(e, g, m, g->max_new - 1);
    return st;
}

nvl_status_t nvl_engine_generate(nvl_engine_t *e, const int32_t *ids,
                                 const int *lens, int batch, int max_new,
                                 int32_t *new_tokens_out,
                                 float *last_logits_out)
{
    /* the same on every rank: reported once */
    nvl_runtime_capture_begin();
    nvl_status_t st = batch < 1 || max_new < 1 ? NVL_ERR_INVALID : NVL_OK;
    if (st != NVL_OK)
        nvl_report("generate: batch %d and new tokens %d must be >= 1", batch,
                   max_new);
    else
        st = check_prompts(e, ids, lens, batch, max_new);
    if (st == NVL_OK) { /* the same on every rank, so all plan or none */
        uint64_t longest = 0, rows = 0;
        for (int b = 0; b < batch; b++) {
            rows += (uint64_t)lens[b];
            if ((uint64_t)lens[b] > longest)
                longest = (uint64_t)lens[b];
        }
        st = nvl_engine_plan_memory(e, (uint64_t)batch,
                                    longest + (uint64_t)max_new - 1,
                                    rows > (uint64_t)batch ? rows
                                                           : (uint64_t)batch);
    }
    st = nvl_runtime_capture_end_on(nvl_comm_mpi(e->job), st);
    if (st != NVL_OK)
        return st;
    /* this rank's sequences: all, or its share (data-parallel attention) */
    nvl_range_t mine = {0, (uint32_t)batch};
    if (e->shard.attn_dp)
        mine = nvl_range_split((uint32_t)batch, nvl_comm_size(e->tp),
                               nvl_comm_rank(e->tp));
    gen_t g = {.nb = (int)mine.count, .first = mine.first, .batch = batch,
               .max_new = max_new, .ids = ids, .lens = lens,
               .out = new_tokens_out, .last_logits = last_logits_out};
    gen_alloc(e, &g);
    st = run_steps(e, &g);
    st = check_clock(e, st);
    uint32_t V = e->cfg.vocab;
    if (st == NVL_OK && mine.count != (uint32_t)batch) {
        gather_outputs(e, batch, new_tokens_out, max_new, MPI_INT32_T);
        if (last_logits_out != NULL && e->data)
            gather_outputs(e, batch, last_logits_out, (int)V, MPI_FLOAT);
    }
    gen_free(e, &g);
    return st;
}

nvl_status_t nvl_engine_last_logits(nvl_engine_t *e, const int32_t *ids,
                                    int batch, int len, float *logits_out)
{
    int *lens = malloc(((size_t)batch + 1) * sizeof *lens);
    int32_t *toks = malloc(((size_t)batch + 1) * sizeof *toks);
    if (lens == NULL || toks == NULL) {
        nvl_report("out of memory for a batch of %d", batch);
        nvl_runtime_abort(1);
    }
    for (int b = 0; b < batch; b++)
        lens[b] = len;
    nvl_status_t st =
        nvl_engine_generate(e, ids, lens, batch, 1, toks, logits_out);
    free(lens);
    free(toks);
    return st;
}
