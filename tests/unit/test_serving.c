/* The serving module's parts that need no MPI job: the layout of the
 * job's ranks (its errors), the policy's defaults from the scheduler's
 * row, and the scheduler rows' CUDA-graph padding and names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nvlemu/serving.h"
#include "reports.h"

/* ---- the layout ------------------------------------------------------------ */

/* TensorRT-LLM's scheduler: its row, found by name. */
static nvl_serve_sched_t trtllm(void)
{
    int v = NVL_SCHED_VLLM;
    assert_int_equal(nvl_family_parse(&nvl_serve_sched_family, "trtllm", &v),
                     NVL_OK);
    return v;
}

static void test_layout_aggregated(void **state)
{
    (void)state;
    nvl_serving_layout_opts_t o = {.tp = 2, .replicas = 5};
    nvl_serving_layout_t l;
    assert_int_equal(nvl_serving_layout_plan(&o, false, 4, 3, &l), NVL_OK);
    assert_int_equal(l.n_pools, 1);
    assert_int_equal(l.pools[0].replicas, 2);
    assert_int_equal(l.pools[0].system_replicas, 5);
    assert_int_equal(l.replica, 1);
    assert_int_equal(l.rank_in_replica, 1);
    o = (nvl_serving_layout_opts_t){0}; /* one replica of every rank */
    assert_int_equal(nvl_serving_layout_plan(&o, true, 3, 2, &l), NVL_OK);
    assert_int_equal(l.pools[0].tp, 3);
    assert_int_equal(l.pools[0].system_replicas, 1);
    assert_int_equal(l.rank_in_replica, 2);
}

static void test_layout_disaggregated(void **state)
{
    (void)state;
    nvl_serving_layout_opts_t o = {.prefill_gpus = 2, .decode_gpus = 4,
                                   .prefill_tp = 1, .decode_tp = 2};
    nvl_serving_layout_t l;
    assert_int_equal(nvl_serving_layout_plan(&o, false, 6, 5, &l), NVL_OK);
    assert_int_equal(l.n_pools, 2);
    assert_string_equal(l.pools[0].name, "prefill");
    assert_int_equal(l.pools[0].replicas, 2);
    assert_int_equal(l.pools[1].first_rank, 2);
    assert_int_equal(l.pools[1].replicas, 2);
    assert_int_equal(l.pool, 1);
    assert_int_equal(l.replica_in_pool, 1);
    assert_int_equal(l.replica, 3); /* after the prefill pool's two */
    assert_int_equal(l.rank_in_replica, 1);
}

static void expect_layout_error(nvl_serving_layout_opts_t o, bool closed,
                                int size, const char *text)
{
    nvl_serving_layout_t l;
    reports.count = 0;
    assert_int_equal(nvl_serving_layout_plan(&o, closed, size, 0, &l),
                     NVL_ERR_INVALID);
    assert_int_equal(reports.count, 1);
    assert_non_null(strstr(reports.last, text));
}

static void test_layout_errors(void **state)
{
    (void)state;
    expect_layout_error((nvl_serving_layout_opts_t){.tp = 2}, false, 5,
                        "--tp 2 does not divide the job's 5 ranks");
    expect_layout_error((nvl_serving_layout_opts_t){.tp = 2, .replicas = 1},
                        false, 4, "--replicas 1: the job's 4 ranks already "
                                  "run 2 replicas of TP 2");
    expect_layout_error((nvl_serving_layout_opts_t){.decode_tp = 2}, false,
                        4, "--prefill-tp / --decode-tp need");
    expect_layout_error(
        (nvl_serving_layout_opts_t){.prefill_gpus = 1, .decode_gpus = 1},
        false, 3, "must be the job's 3 ranks");
    expect_layout_error(
        (nvl_serving_layout_opts_t){.prefill_gpus = 2, .decode_gpus = 2},
        true, 4, "--concurrency (a closed loop) with disaggregated");
    expect_layout_error((nvl_serving_layout_opts_t){.prefill_gpus = 1,
                                                    .decode_gpus = 3,
                                                    .decode_tp = 2},
                        false, 4, "--decode-tp 2 does not divide the "
                                  "pool's 3 GPUs");
    expect_layout_error((nvl_serving_layout_opts_t){.prefill_gpus = 2,
                                                    .decode_gpus = 2,
                                                    .replicas = 4},
                        false, 4, "--replicas is the aggregated layout's");
}

/* ---- the policy ------------------------------------------------------------ */

/* GB200 NVL72, qwen2.5-7b and four requests of 1000 + 200 tokens. */
static struct {
    nvl_topo_t *topo;
    nvl_model_config_t model;
    nvl_serve_req_t reqs[4];
} fx;

static int load_fixture(void **state)
{
    capture_reports(state);
    if (nvl_topo_load(NVL_TOPOLOGY_DIR "/gb200-nvl72.topo", &fx.topo) !=
            NVL_OK ||
        nvl_model_preset("qwen2.5-7b", &fx.model) != NVL_OK)
        return -1;
    for (uint32_t i = 0; i < 4; i++)
        fx.reqs[i] = (nvl_serve_req_t){.id = i, .input_tokens = 1000,
                                       .output_tokens = 200, .prefix = -1};
    return 0;
}

static int free_fixture(void **state)
{
    nvl_topo_free(fx.topo);
    return release_reports(state);
}

static void test_policy_vllm(void **state)
{
    (void)state;
    const nvl_model_config_t *m = &fx.model;
    nvl_serve_workload_t w = {.reqs = fx.reqs, .n = 4};
    nvl_serving_config_t c = {.policy = {.sched = NVL_SCHED_VLLM}};
    nvl_engine_opts_default(&c.engine, fx.topo);
    assert_int_equal(nvl_serving_policy_resolve(&c, m, &w, 2), NVL_OK);
    assert_int_equal(c.policy.max_batch, 1024);
    assert_int_equal(c.policy.max_tokens_per_step, 8192);
    assert_int_equal(c.policy.chunk, 8192); /* chunked to the budget */
    assert_int_equal(c.policy.block_tokens, 16);
    assert_false(c.policy.whole_prompts);
    assert_true(c.mem_fraction == 0.90);
    /* what the user gave stays */
    c = (nvl_serving_config_t){.policy = {.sched = NVL_SCHED_VLLM,
                                          .max_tokens_per_step = 2048,
                                          .chunk = 256, .block_tokens = 64},
                               .mem_fraction = 0.5};
    nvl_engine_opts_default(&c.engine, fx.topo);
    assert_int_equal(nvl_serving_policy_resolve(&c, m, &w, 2), NVL_OK);
    assert_int_equal(c.policy.max_tokens_per_step, 2048);
    assert_int_equal(c.policy.chunk, 256);
    assert_int_equal(c.policy.block_tokens, 64);
    assert_true(c.mem_fraction == 0.5);
}

/* trtllm: trtllm-bench's limits for the decode pool's TP, whole prompts. */
static void test_policy_trtllm(void **state)
{
    (void)state;
    const nvl_model_config_t *m = &fx.model;
    nvl_serve_workload_t w = {.reqs = fx.reqs, .n = 4};
    nvl_serving_config_t c = {.policy = {.sched = trtllm()},
                              .layout = {.prefill_gpus = 1,
                                         .decode_gpus = 4,
                                         .decode_tp = 2}};
    nvl_engine_opts_default(&c.engine, fx.topo);
    assert_int_equal(nvl_serving_policy_resolve(&c, m, &w, 5), NVL_OK);
    nvl_serve_trtllm_bench_in_t in = {
        .checkpoint_params = nvl_serve_checkpoint_params(
            (double)nvl_model_param_count(m),
            (double)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2), 2),
        .bytes_per_param = 2, .kv_bytes_per_elem = 2, .layers = m->layers,
        .kv_heads = m->kv_heads, .kv_head_elems = 2 * m->head_dim, .tp = 2,
        .gpu_mem_gib = (double)fx.topo->gpu.hbm_bytes / 1073741824.0,
        .kv_fraction = 0.90, .mean_isl = 1000, .mean_osl = 200,
        .max_isl = 1000, .chunked = false};
    uint32_t bs, tok;
    assert_int_equal(nvl_serve_trtllm_bench_limits(&in, &bs, &tok), NVL_OK);
    assert_int_equal(c.policy.max_batch, bs);
    assert_int_equal(c.policy.max_tokens_per_step, tok);
    assert_int_equal(c.policy.chunk, tok);
    assert_int_equal(c.policy.block_tokens, 32);
    assert_true(c.policy.whole_prompts);
}

/* ---- the scheduler rows ---------------------------------------------------- */

static void test_scheduler_rows(void **state)
{
    (void)state;
    int v;
    assert_int_equal(nvl_family_parse(&nvl_serve_sched_family, "trtllm", &v),
                     NVL_OK);
    assert_int_equal(v, trtllm());
    assert_int_equal(nvl_family_parse(&nvl_serve_sched_family, "sglang", &v),
                     NVL_ERR_INVALID);
    char names[64];
    nvl_family_names(&nvl_serve_sched_family, "|", "|", names, sizeof names);
    assert_string_equal(names, "vllm|trtllm");
    /* vLLM pads steps of up to 512 tokens to 1, 2, 4, 8k */
    const nvl_serve_scheduler_t *vllm = nvl_serve_scheduler(NVL_SCHED_VLLM);
    assert_int_equal(vllm->graph_rows(3, 3, 0, 1024), 4);
    assert_int_equal(vllm->graph_rows(2, 300, 290, 1024), 304);
    assert_int_equal(vllm->graph_rows(2, 513, 500, 1024), 0);
    /* TensorRT-LLM: decode-only steps, padded to its batch sizes, the
     * first size above the engine's largest decode batch replaced by it */
    const nvl_serve_scheduler_t *trt = nvl_serve_scheduler(trtllm());
    assert_int_equal(trt->graph_rows(300, 300, 0, 4096), 384);
    assert_int_equal(trt->graph_rows(3, 40, 37, 4096), 0);
    assert_int_equal(trt->graph_rows(9000, 9000, 0, 16384), 0);
    assert_int_equal(trt->graph_rows(3000, 3000, 0, 3840), 3840);
    assert_int_equal(trt->graph_rows(1500, 1500, 0, 3840), 2048);
    assert_int_equal(trt->graph_rows(3841, 3841, 0, 3840), 0);
    assert_true(trt->admit_to_completion && !trt->preempts);
    assert_true(!vllm->admit_to_completion && vllm->preempts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_aggregated),
        cmocka_unit_test(test_layout_disaggregated),
        cmocka_unit_test_setup_teardown(test_layout_errors, capture_reports,
                                        release_reports),
        cmocka_unit_test_setup_teardown(test_policy_vllm, load_fixture,
                                        free_fixture),
        cmocka_unit_test_setup_teardown(test_policy_trtllm, load_fixture,
                                        free_fixture),
        cmocka_unit_test(test_scheduler_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
