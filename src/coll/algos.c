/* The algorithm table: one row per NCCL algorithm, in NCCL's order. */
#include "coll_impl.h"

const nvl_coll_algo_t *const nvl_coll_algos[NVL_ALGO_COUNT] = {
    [NVL_ALGO_TREE] = &nvl_coll_algo_tree,
    [NVL_ALGO_RING] = &nvl_coll_algo_ring,
    [NVL_ALGO_NVLS] = &nvl_coll_algo_nvls,
    [NVL_ALGO_NVLS_TREE] = &nvl_coll_algo_nvls_tree,
    [NVL_ALGO_PAT] = &nvl_coll_algo_pat,
};
