/* The compute-cost unit tests' fixture (test_cost*.c):
 * the 2 x H200 topology loaded once per group, and a cost configuration of
 * the fused stack on GPU 0 (bf16 weights and KV cache, FlashAttention 3)
 * with a given launch mode.  Header-only: each test file has its own. */
#ifndef NVLEMU_TEST_COST_FIXTURE_H
#define NVLEMU_TEST_COST_FIXTURE_H

#include "nvlemu/cost.h"
#include "nvlemu/engine.h"

static nvl_topo_t *topo;

/* cmocka group setup: loads topology/h200-nvl2.topo into topo. */
static int load(void **state)
{
    (void)state;
    return nvl_topo_load(NVL_TOPOLOGY_DIR "/h200-nvl2.topo", &topo) == NVL_OK
               ? 0
               : -1;
}

/* cmocka group teardown: frees topo. */
static int unload(void **state)
{
    (void)state;
    nvl_topo_free(topo);
    return 0;
}

/* The fused stack's cost configuration on GPU 0 with LAUNCH. */
static nvl_cost_cfg_t cfg_of(nvl_launch_t launch)
{
    nvl_cost_cfg_t c = {.topo = topo, .gpu = 0, .weight_dtype = NVL_WDT_BF16,
                        .kv_dtype = NVL_WDT_BF16, .attn = NVL_ATTN_FA3,
                        .launch = launch};
    nvl_stack_cost(NVL_STACK_FUSED, &c);
    return c;
}

#endif
