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
    return nvl_runtime_capture_end_on(nvl_comm_mpi(e->tp), st);
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
    st = nvl_runtime_capture_end_on(nvl_comm_mpi(e->tp), st);
    if (st != NVL_OK)
        return st;
    /* this rank's sequences: all, or its share (data-parallel attention);
     * prefill_row0: their first row in the whole batch's prefill */
    nvl_range_t mine = {0, (uint32_t)batch};
    uint64_t prefill_row0 = 0;
    if (e->shard.attn_dp)
        mine = nvl_range_split((uint32_t)batch, nvl_comm_size(e->tp),
                               nvl_comm_rank(e->tp));
    for (uint32_t b = 0; b < mine.first; b++)
        prefill_row0 += (uint64_t)lens[b];
    int nb = (int)mine.count;
    uint32_t V = e->cfg.vocab;
    nvl_kv_cache_t *caches = calloc((size_t)nb + 1, sizeof *caches);
    uint64_t *T = malloc(((size_t)nb + 1) * sizeof *T);
    int32_t *tok = malloc(((size_t)nb + 1) * sizeof *tok);
    float *logits = e->data ? malloc(((size_t)nb * V + 1) * sizeof *logits)
                            : NULL;
    if (caches == NULL || T == NULL || tok == NULL ||
        (e->data && logits == NULL)) {
        nvl_report("out of memory for a batch of %d", batch);
        nvl_runtime_abort(1);
    }
    for (int b = 0; b < nb; b++)
        T[b] = (uint64_t)lens[mine.first + (uint32_t)b];
    e->row0 = prefill_row0;
    st = nvl_engine_forward(e, nb, caches, ids != NULL ? ids + prefill_row0 : NULL, T,
                 logits);
    if (st == NVL_OK && last_logits_out != NULL && e->data)
        memcpy(last_logits_out + (size_t)mine.first * V, logits,
               (size_t)nb * V * sizeof *logits);
    for (int s = 0; s < max_new && st == NVL_OK; s++) {
        for (int b = 0; b < nb; b++) {
            tok[b] = e->data ? nvl_engine_argmax(logits + (size_t)b * V, V)
                             : -1; /* greedy */
            new_tokens_out[(size_t)(mine.first + (uint32_t)b) * max_new + s] =
                tok[b];
            T[b] = 1;
        }
        e->row0 = mine.first;
        if (s + 1 < max_new)
            st = nvl_engine_forward(e, nb, caches, tok, T, logits);
    }
    st = check_clock(e, st);
    if (st == NVL_OK && mine.count != (uint32_t)batch) {
        gather_outputs(e, batch, new_tokens_out, max_new, MPI_INT32_T);
        if (last_logits_out != NULL && e->data)
            gather_outputs(e, batch, last_logits_out, (int)V, MPI_FLOAT);
    }
    for (int b = 0; b < nb; b++)
        nvl_engine_kv_free(&caches[b], e->layers);
    free(caches);
    free(T);
    free(tok);
    free(logits);
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
