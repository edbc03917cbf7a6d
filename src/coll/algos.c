/* The algorithms as a family: one row per row of NVL_ALGO_TABLE
 * (include/nvlemu/topo.h: its NCCL name), in NCCL's order, each pointing
 * at the algorithm's model row in src/coll/<key>.c, whose doc string
 * describes it.  NCCL_ALGO's names, `nvlemu --list algorithm` and every
 * algorithm name printed come from here. */
#include "coll_impl.h"

#define ROW(id, key, name, ll, ll128, simple)                              \
    [NVL_ALGO_##id] = {{name, nvl_coll_algo_doc_##key},                    \
                       &nvl_coll_algo_##key},
const nvl_coll_algo_row_t nvl_coll_algo_rows[NVL_ALGO_COUNT] = {
    NVL_ALGO_TABLE(ROW)};
#undef ROW

const nvl_family_t nvl_algo_family =
    NVL_FAMILY("algorithm", "NCCL's algorithms (NCCL_ALGO; \"P2P\" names "
                            "the point-to-point operations)",
               nvl_coll_algo_rows);

const char *nvl_algo_name(nvl_algo_t a)
{
    return a < NVL_ALGO_COUNT ? nvl_coll_algo_rows[a].id.name : "P2P";
}
