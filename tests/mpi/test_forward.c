/* MPI test: the tensor-parallel forward pass against Hugging Face
 * transformers (tests/data/hf/<model>/reference.json): the last prompt
 * position's logits to 1e-4 relative (max |diff| / max |ref|), and 8 greedy
 * tokens exactly (decoded with the KV cache).  Run at TP 1 to 4. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test.h"
#include "nvlemu/engine.h"

/* The last prompt position's logits against the reference's: max |diff|
 * / max |ref| (ids: batch prompts of len tokens). */
static double logits_error(nvl_engine_t *e, const nvl_model_config_t *cfg,
                           json_t *ref, const int32_t *ids, int batch, int len,
                           int *failures)
{
    float *logits = malloc((size_t)batch * cfg->vocab * sizeof *logits);
    if (logits == NULL)
        nvl_runtime_abort(1);
    if (nvl_engine_last_logits(e, ids, batch, len, logits) != NVL_OK)
        (*failures)++;
    double max_diff = 0, max_ref = 0;
    for (int b = 0; b < batch; b++) {
        json_t *row = json_array_get(json_object_get(ref, "last_logits"),
                                     (size_t)b);
        for (uint32_t i = 0; i < cfg->vocab; i++) {
            double r = json_number_value(json_array_get(row, i));
            double d = fabs(r - logits[(size_t)b * cfg->vocab + i]);
            max_diff = d > max_diff ? d : max_diff;
            max_ref = fabs(r) > max_ref ? fabs(r) : max_ref;
        }
    }
    free(logits);
    double rel = max_diff / max_ref;
    if (!(rel <= 1e-4))
        (*failures)++;
    return rel;
}

/* Greedy decoding with the KV cache: the tokens that differ from the
 * reference's. */
static int wrong_greedy_tokens(nvl_engine_t *e, json_t *ref, int32_t *ids,
                               int batch, int len, int steps, int *failures)
{
    int wrong_tokens = 0;
    int *lens = malloc((size_t)batch * sizeof *lens);
    int32_t *got = malloc((size_t)batch * steps * sizeof *got);
    if (lens == NULL || got == NULL)
        nvl_runtime_abort(1);
    for (int b = 0; b < batch; b++)
        lens[b] = len;
    if (nvl_engine_generate(e, ids, lens, batch, steps, got, NULL) != NVL_OK)
        (*failures)++;
    for (int b = 0; b < batch; b++) {
        json_t *want = json_array_get(json_object_get(ref, "greedy_new_tokens"),
                                      (size_t)b);
        for (int s = 0; s < steps; s++)
            if (got[b * steps + s] !=
                (int32_t)json_integer_value(json_array_get(want, (size_t)s)))
                wrong_tokens++;
    }
    free(lens);
    free(got);
    return wrong_tokens;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_forward MODEL_DIR TOPOLOGY\n");
        return 1;
    }
    mpi_test_t t;
    mpi_test_init(&t, &argc, &argv, argv[2]);
    const char *dir = argv[1];
    char ref_path[1024];
    snprintf(ref_path, sizeof ref_path, "%s/reference.json", dir);
    json_error_t jerr;
    json_t *ref = json_load_file(ref_path, 0, &jerr);
    nvl_model_config_t cfg;
    nvl_engine_t *e;
    if (ref == NULL || nvl_model_config_load(dir, &cfg) != NVL_OK) {
        fprintf(stderr, "cannot load %s\n", dir);
        nvl_runtime_abort(1);
    }
    if (nvl_engine_load(&cfg, dir, t.comm, &e) != NVL_OK)
        nvl_runtime_abort(1);
    json_t *ids_j = json_object_get(ref, "input_ids");
    int batch = (int)json_array_size(ids_j);
    int len = (int)json_array_size(json_array_get(ids_j, 0));
    int steps = (int)json_array_size(
        json_array_get(json_object_get(ref, "greedy_new_tokens"), 0));
    int32_t *ids = malloc((size_t)batch * (len + steps) * sizeof *ids);
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < len; i++)
            ids[b * len + i] = (int32_t)json_integer_value(
                json_array_get(json_array_get(ids_j, (size_t)b), (size_t)i));
    double rel = logits_error(e, &cfg, ref, ids, batch, len, &t.failures);
    int wrong_tokens = wrong_greedy_tokens(e, ref, ids, batch, len, steps,
                                           &t.failures);
    t.failures += wrong_tokens > 0;
    int all = mpi_test_all_failures(&t);
    if (t.rt.rank == 0)
        printf("test_forward: %s at TP %d: last logits max|diff|/max|ref| = "
               "%.2e (bound 1e-4), %d of %d greedy tokens wrong; virtual time "
               "%.1f us: %s\n",
               dir, t.rt.size, rel, wrong_tokens, batch * steps,
               (double)t.clock.now_ps / 1e6, all ? "FAILED" : "ok");
    free(ids);
    json_decref(ref);
    nvl_engine_free(e);
    return mpi_test_finish(&t, all);
}
