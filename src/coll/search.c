/* NCCL's topology search within one NVLink domain (NCCL src/graph/search.cc
 * ncclTopoCompute): the speeds it tries per channel and the bandwidth of
 * the graphs it finds, nChannels x bwIntra, by which its tuner rates the
 * ring (ring.c) and NVLS (nvls.c).  Only the rating reads these: NCCL's
 * kernels do not run at the graph's speed, and neither does the model's
 * time (model.c).
 *
 * The speeds, by the compute capability NCCL sees ([nccl] compcap), the
 * first row whose min_compcap it reaches: NCCL v2.27.7-1 src/graph/topo.h
 * SM90_NVLINK_BW 20.6 and SM100_NVLINK_BW 40.1 GB/s per link,
 * search.cc:957 sm90SpeedArrayIntra and :962 sm100SpeedArrayIntra,
 * unchanged in v2.28.9-1 (search.cc:981, :986). */
#include <math.h>

#include "coll_impl.h"
#include "search.h"

#define SEARCH_SPEEDS 11
typedef struct {
    uint32_t min_compcap;
    double link_bytes_per_s;
    double speed_bytes_per_s[SEARCH_SPEEDS];
} search_row_t;

#define GBS 1e9
static const search_row_t search_rows[] = {
    {.min_compcap = 100,
     .link_bytes_per_s = 40.1 * GBS,
     .speed_bytes_per_s = {90 * GBS, 80 * GBS, 70 * GBS, 60 * GBS, 50 * GBS,
                           40 * GBS, 30 * GBS, 24 * GBS, 20 * GBS, 19 * GBS,
                           18 * GBS}},
    {.min_compcap = 90,
     .link_bytes_per_s = 20.6 * GBS,
     .speed_bytes_per_s = {60 * GBS, 50 * GBS, 40 * GBS, 30 * GBS, 24 * GBS,
                           20 * GBS, 15 * GBS, 12 * GBS, 11 * GBS, 6 * GBS,
                           3 * GBS}},
};
#undef GBS

/* NCCL's ring graph holds at most MAXCHANNELS/2 channels (v2.28.9-1
 * init.cc:1019, device.h MAXCHANNELS 64). */
#define RING_MAX_CHANNELS 32

/* The row for c's [nccl] compcap, or NULL (compcap 0: no search). */
static const search_row_t *search_row(const nvl_comm_t *c)
{
    for (size_t i = 0; i < sizeof search_rows / sizeof search_rows[0]; i++)
        if (c->topo->nccl.compcap >= search_rows[i].min_compcap)
            return &search_rows[i];
    return NULL;
}

/* NCCL's maxBw: a GPU's NVLink links x NCCL's rate per link. */
static double search_max_bw(const nvl_comm_t *c, const search_row_t *row)
{
    double links = c->nvlink_bw / c->topo->nvlink.link_bw_bytes_per_s;
    return links * row->link_bytes_per_s;
}

double nvl_coll_search_nvls_bw(const nvl_comm_t *c, double heads)
{
    const search_row_t *row = search_row(c);
    if (row == NULL)
        return c->nvlink_bw * NVL_NVLINK_DATA_EFF;
    double max_bw = search_max_bw(c, row);
    double speed = row->speed_bytes_per_s[SEARCH_SPEEDS - 1];
    for (int i = 0; i < SEARCH_SPEEDS; i++) {
        double s = row->speed_bytes_per_s[i];
        if (s <= max_bw && (heads + 1) * s <= max_bw) {
            speed = s;
            break;
        }
    }
    return heads * speed;
}

double nvl_coll_search_ring_bw(const nvl_comm_t *c)
{
    const search_row_t *row = search_row(c);
    if (row == NULL || c->domains > 1 || c->die_edges > 0)
        return nvl_coll_model_path_bw(c) * NVL_NVLINK_DATA_EFF;
    double max_bw = search_max_bw(c, row);
    double best = 0, best_speed = 0;
    for (int i = 0; i < SEARCH_SPEEDS; i++) {
        double s = row->speed_bytes_per_s[i];
        if (s > max_bw)
            continue; /* the first speed tried is at most maxBw */
        if (best_speed > 0 && (!(s / best_speed > 0.49) || best >= max_bw))
            break;
        /* every channel takes s of each GPU's port out and in; the small
         * tolerance keeps an exact fit (9 x 80 of 721.8) from rounding */
        double channels = floor(max_bw / s + 1e-9);
        if (channels > RING_MAX_CHANNELS)
            channels = RING_MAX_CHANNELS;
        if (channels * s > best) { /* ncclTopoCompareGraphs: strictly more */
            best = channels * s;
            best_speed = s;
        }
    }
    return best;
}
