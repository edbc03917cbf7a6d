/* Serving engines' allreduces beside NCCL's: the table of implementations
 * (one row per file: oneshot.c, twoshot.c, nvls_oneshot.c,
 * nvls_twoshot.c; auto's rules in ar_auto.c), their names, where they can
 * run, the shared pieces of their cost, and the dispatch of a prediction.
 * docs/collectives.md, "Serving engines' allreduces", derives each cost. */
#include <math.h>
#include <string.h>

#include "coll_impl.h"

/* The kernels' rows, each defined in its own file. */
extern const nvl_ar_row_t nvl_ar_oneshot, nvl_ar_twoshot,
    nvl_ar_nvls_oneshot, nvl_ar_nvls_twoshot;

/* The implementations, nvl_ar_impl_t being a row's index: a row each
 * (the kernels' cost rows live in their files; NCCL and auto have none:
 * NCCL's is the tuner's choice, auto picks another row per call).  A new
 * kernel is its file, its row here and its extern line above. */
typedef struct {
    nvl_member_t id;
    const nvl_ar_row_t *kernel;
    /* when set, the kernel's row that runs an allreduce of `bytes`
     * (NULL: NCCL's) */
    const nvl_ar_row_t *(*pick)(const nvl_comm_t *comm, size_t bytes);
    /* the kernel reduces a buffer registered with every peer, which the
     * engine fills with a copy of its input first (torch's symmetric-
     * memory ops, as vLLM's SymmMemCommunicator calls them) */
    bool copies_input;
} impl_row_t;

static const impl_row_t impls[] = {
    [NVL_AR_NCCL] = {.id = {"nccl", "ncclAllReduce, algorithm and protocol "
                                    "as NCCL's tuner picks them"},
                     .kernel = NULL},
    {.id = {"oneshot", "every GPU loads all peers' buffers and sums "
                       "(TensorRT-LLM oneShotAllReduceKernel, vLLM "
                       "cross_device_reduce_1stage)"},
     .kernel = &nvl_ar_oneshot,
     .copies_input = true},
    {.id = {"twoshot", "reduce-scatter by loads, allgather by stores "
                       "(torch symmetric memory two_shot_all_reduce, "
                       "TensorRT-LLM twoShotAllReduceKernel)"},
     .kernel = &nvl_ar_twoshot,
     .copies_input = true},
    {.id = {"nvls-oneshot", "multimem.ld_reduce of the whole buffer "
                            "through the NVLink SHARP switch"},
     .kernel = &nvl_ar_nvls_oneshot},
    {.id = {"nvls-twoshot", "multimem.ld_reduce of a block, multimem.st "
                            "of its sum (TensorRT-LLM mnnvl two-shot)"},
     .kernel = &nvl_ar_nvls_twoshot},
    {.id = {"auto", "per call, as TensorRT-LLM's AUTO strategy picks "
                    "(ar_auto.c)"},
     .kernel = NULL, .pick = nvl_ar_auto_pick},
};

const nvl_family_t nvl_ar_impl_family =
    NVL_FAMILY("allreduce", "allreduce implementations: NCCL's and the "
                            "serving engines' kernels (--allreduce)", impls);

const char *nvl_ar_impl_name(nvl_ar_impl_t impl)
{
    return nvl_family_name(&nvl_ar_impl_family, (int)impl);
}

bool nvl_ar_impl_copies_input(nvl_ar_impl_t impl)
{
    return (unsigned)impl < sizeof impls / sizeof impls[0] &&
           impls[impl].copies_input;
}

nvl_status_t nvl_ar_impl_parse(const char *name, nvl_ar_impl_t *impl_out)
{
    int v;
    nvl_status_t st = nvl_family_parse(&nvl_ar_impl_family, name, &v);
    if (st == NVL_OK)
        *impl_out = (nvl_ar_impl_t)v;
    return st;
}

const char *nvl_ar_impl_unsupported(const nvl_comm_t *comm,
                                    nvl_ar_impl_t impl)
{
    if ((unsigned)impl >= sizeof impls / sizeof impls[0])
        return "unknown allreduce implementation";
    if (impls[impl].kernel != NULL && comm->domains > 1)
        return "needs every member in one NVLink domain (the kernels load "
               "and store peers' memory over NVLink)";
    if (impls[impl].kernel != NULL && impls[impl].kernel->needs_nvls && !comm->nvls)
        return "needs NVLink SHARP (multimem) switches, and every member "
               "in one NVLink domain, as NCCL's NVLS does";
    return NULL;
}

nvl_status_t nvl_comm_set_allreduce(nvl_comm_t *comm, nvl_ar_impl_t impl)
{
    const char *why = nvl_ar_impl_unsupported(comm, impl);
    if (why != NULL) {
        if (comm->rank == 0)
            nvl_report("--allreduce %s on %d rank(s) of %s: %s",
                       nvl_ar_impl_name(impl), comm->size, comm->topo->name,
                       why);
        return NVL_ERR_INVALID;
    }
    comm->ar_impl = impl;
    comm->choice_valid = false;
    return NVL_OK;
}

nvl_ar_impl_t nvl_comm_allreduce(const nvl_comm_t *comm)
{
    return comm->ar_impl;
}

/* Seconds from the topology's picoseconds. */
static double sec(int64_t ps)
{
    return (double)ps * 1e-12;
}

int nvl_ar_serial_loads(int n)
{
    return n == 2 || n == 4 || n == 8 ? 1 : n - 1;
}

/* The blocks a kernel launches over its slice (as many blocks of
 * `threads` as the slice fills at 16 bytes a thread, up to max_blocks) and
 * the iterations of their grid-stride loop. */
static double blocks_of(const nvl_ar_cost_t *k, double *iters_out)
{
    double per_block = 16.0 * k->threads;
    double blocks = ceil(k->slice_bytes / per_block);
    if (blocks < 1)
        blocks = 1;
    if (blocks > k->max_blocks)
        blocks = k->max_blocks;
    *iters_out = ceil(k->slice_bytes / (blocks * per_block));
    return blocks;
}

double nvl_ar_model_s(const nvl_comm_t *c, const nvl_ar_cost_t *k)
{
    const nvl_nvlink_spec_t *l = &c->topo->nvlink;
    const nvl_gpu_spec_t *g = &c->topo->gpu;
    /* [nvlink] flag_lat, load_lat, fence_lat: measured on the kernels
     * (docs/collectives.md, "Calibration of the engine kernels"); hop_lat
     * where no flag_lat is set */
    double flag = sec(l->flag_lat_ps > 0 ? l->flag_lat_ps : l->hop_lat_ps);
    double load = l->load_lat_ps > 0 ? sec(l->load_lat_ps) : 2 * flag;
    double fence = sec(l->fence_lat_ps);
    /* a barrier: each block's threads CAS a flag into every peer (a round
     * trip, all peers at once) and spin on their flags in its own pad */
    double open = (k->open_fence ? fence : 0.0) + 2 * flag;
    double close = (k->stores_peers && 2 * flag > fence ? 2 * flag : fence) +
                   2 * flag;
    /* the data: each iteration waits for its loads; the call for its
     * busier port direction and for its busiest SM, after a first load */
    double iters;
    double blocks = blocks_of(k, &iters);
    double eff = l->peer_efficiency > 0 ? l->peer_efficiency
                                        : NVL_NVLINK_DATA_EFF;
    double rate = c->nvlink_bw * eff;
    double sw = l->nvls_bw_bytes_per_s;
    if (k->switch_reduce) {
        rate = c->nvlink_bw * NVL_NVLINK_DATA_EFF;
        if (sw > 0 && sw < rate)
            rate = sw;
    }
    double data = iters * k->serial_loads * load;
    double port = load + k->port_bytes / rate;
    if (port > data)
        data = port;
    if (l->sm_peer_bw_bytes_per_s > 0) {
        double sm = load + ceil(k->slice_bytes / blocks) * k->sm_bytes /
                               l->sm_peer_bw_bytes_per_s;
        if (sm > data)
            data = sm;
    }
    return sec(g->kernel_floor_ps + g->mem_latency_ps) + open + data + close;
}

/* The implementation whose kernel is `kernel` (NULL: NCCL's). */
static nvl_ar_impl_t impl_of(const nvl_ar_row_t *kernel)
{
    nvl_ar_impl_t i = 0;
    while (impls[i].kernel != kernel || impls[i].pick != NULL)
        i++; /* every kernel auto picks has its row */
    return i;
}

nvl_status_t nvl_ar_predict(const nvl_comm_t *comm, nvl_ar_impl_t impl,
                            size_t bytes, nvl_coll_info_t *info_out)
{
    if (nvl_ar_impl_unsupported(comm, impl) != NULL)
        return NVL_ERR_RANGE;
    if (impls[impl].pick != NULL)
        impl = impl_of(impls[impl].pick(comm, bytes));
    if (impls[impl].kernel == NULL) /* NCCL's: the tuner's choice */
        return nvl_coll_choose_quiet(comm, NVL_COLL_ALLREDUCE, bytes,
                                     info_out) == NVL_OK
                   ? NVL_OK
                   : NVL_ERR_RANGE;
    /* a kernel of the engine's own: no NCCL algorithm, one channel per
     * SM block is not modeled (channels 0) */
    nvl_coll_info_t info = {.coll = NVL_COLL_ALLREDUCE,
                            .algo = NVL_ALGO_COUNT,
                            .proto = NVL_PROTO_SIMPLE,
                            .bytes = bytes,
                            .impl = (int)impl};
    info.time_ps = nvl_ps_from_s(comm->size > 1 && bytes > 0
                                     ? impls[impl].kernel->predict_s(comm,
                                                             (double)bytes)
                                     : 0.0);
    *info_out = info;
    return NVL_OK;
}

/* The order data mode reduces in, for a resolved implementation. */
nvl_ar_order_t nvl_ar_order(nvl_ar_impl_t impl)
{
    return impls[impl].kernel != NULL ? impls[impl].kernel->order : NVL_AR_ORDER_MEMBER;
}
