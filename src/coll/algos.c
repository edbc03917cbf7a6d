/* The table of algorithm models: one row per row of NVL_ALGO_TABLE
 * (include/nvlemu/topo.h), in NCCL's order. */
#include "coll_impl.h"

#define ROW(id, key, name, ll, ll128, simple)                              \
    [NVL_ALGO_##id] = &nvl_coll_algo_##key,
const nvl_coll_algo_t *const nvl_coll_algos[NVL_ALGO_COUNT] = {
    NVL_ALGO_TABLE(ROW)};
#undef ROW
