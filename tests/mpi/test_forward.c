/* MPI test: the tensor-parallel forward pass against Hugging Face
 * transformers (tests/data/hf/<model>/reference.json): the last prompt
 * position's logits to 1e-4 relative (max |diff| / max |ref|), and 8 greedy
 * tokens exactly (decoded with the KV cache).  Run at TP 1 to 4. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvlemu/engine.h"
#include "nvlemu/runtime.h"

int main(int argc, char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK || argc < 3)
        return 1;
    const char *dir = argv[1], *topo_path = argv[2];
    char ref_path[1024];
    snprintf(ref_path, sizeof ref_path, "%s/reference.json", dir);
    json_error_t jerr;
    json_t *ref = json_load_file(ref_path, 0, &jerr);
    nvl_model_config_t cfg;
    nvl_topo_t *topo;
    if (ref == NULL || nvl_model_config_load(dir, &cfg) != NVL_OK ||
        nvl_topo_load(topo_path, &topo) != NVL_OK) {
        fprintf(stderr, "cannot load %s\n", dir);
        nvl_runtime_abort(1);
    }
    nvl_vclock_t clock = {0};
    nvl_comm_t *tp;
    nvl_engine_t *e;
    if (nvl_comm_create(MPI_COMM_WORLD, topo, &clock, &tp) != NVL_OK ||
        nvl_engine_load(&cfg, dir, tp, &e) != NVL_OK)
        nvl_runtime_abort(1);
    json_t *ids_j = json_object_get(ref, "input_ids");
    int batch = (int)json_array_size(ids_j);
    int len = (int)json_array_size(json_array_get(ids_j, 0));
    int steps = (int)json_array_size(
        json_array_get(json_object_get(ref, "greedy_new_tokens"), 0));
    int32_t *ids = malloc((size_t)batch * (len + steps) * sizeof *ids);
    for (int b = 0; b < batch; b++)
        for (int t = 0; t < len; t++)
            ids[b * len + t] = (int32_t)json_integer_value(
                json_array_get(json_array_get(ids_j, (size_t)b), (size_t)t));
    float *logits = malloc((size_t)batch * cfg.vocab * sizeof *logits);
    int failures = 0;
    if (nvl_engine_last_logits(e, ids, batch, len, logits) != NVL_OK)
        failures++;
    double max_diff = 0, max_ref = 0;
    for (int b = 0; b < batch; b++) {
        json_t *row = json_array_get(json_object_get(ref, "last_logits"),
                                     (size_t)b);
        for (uint32_t i = 0; i < cfg.vocab; i++) {
            double r = json_number_value(json_array_get(row, i));
            double d = fabs(r - logits[(size_t)b * cfg.vocab + i]);
            max_diff = d > max_diff ? d : max_diff;
            max_ref = fabs(r) > max_ref ? fabs(r) : max_ref;
        }
    }
    double rel = max_diff / max_ref;
    if (!(rel <= 1e-4))
        failures++;
    /* greedy decoding with the KV cache */
    int wrong_tokens = 0;
    int *lens = malloc((size_t)batch * sizeof *lens);
    int32_t *got = malloc((size_t)batch * steps * sizeof *got);
    for (int b = 0; b < batch; b++)
        lens[b] = len;
    if (nvl_engine_generate(e, ids, lens, batch, steps, got, NULL) != NVL_OK)
        failures++;
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
    failures += wrong_tokens > 0;
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rt.rank == 0)
        printf("test_forward: %s at TP %d: last logits max|diff|/max|ref| = "
               "%.2e (bound 1e-4), %d of %d greedy tokens wrong; virtual time "
               "%.1f us: %s\n",
               dir, rt.size, rel, wrong_tokens, batch * steps,
               (double)clock.now_ps / 1e6, all ? "FAILED" : "ok");
    free(ids);
    free(logits);
    json_decref(ref);
    nvl_engine_free(e);
    nvl_comm_destroy(tp);
    nvl_topo_free(topo);
    nvl_runtime_finalize();
    return all == 0 ? 0 : 1;
}
