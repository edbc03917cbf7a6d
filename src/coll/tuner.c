/* Choosing like NCCL: the environment decides what is enabled; within an
 * algorithm whose row carries NCCL's own rating (rating_s: Ring and Tree,
 * NVLS allreduce, tuning.cc's formula) the protocol NCCL's rating puts
 * first runs, as in NCCL's topoGetAlgoInfo; otherwise the protocol the
 * cost model predicts fastest.  The rated algorithms compete by their
 * ratings (NCCL's own pick among them); that pick and the algorithms
 * without a rating (NVLS allgather and reduce-scatter, NVLSTree, PAT) by
 * the cost model's predictions, the fastest wins (ties
 * go to the earlier algorithm, then protocol, as in NCCL's loop).  An
 * algorithm that NCCL's own rating never picks for a call (its row's
 * nccl_declines: NVLS allgather and reduce-scatter where a ring protocol
 * rates faster) does not compete for it. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "coll_impl.h"

/* NCCL's algorithm names; CollNet ones are accepted and never modeled
 * (no topology here has an in-network reduction fabric). */
static const char *const collnet_names[] = {"CollNetDirect", "CollNetChain",
                                            "CollNet"};

void nvl_tuner_cfg_default(nvl_tuner_cfg_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int a = 0; a < NVL_ALGO_COUNT; a++)
        cfg->algo_enabled[a] = true;
    for (int p = 0; p < NVL_PROTO_COUNT; p++)
        cfg->proto_enabled[p] = true;
}

/* Parses NCCL's list syntax ("ring,tree" or "^ll,ll128") over family's
 * names (any case) into enabled[] (one entry per member); the algorithms
 * also accept CollNet's names, which enable nothing. */
static nvl_status_t parse_list(const char *var, const char *text,
                               const nvl_family_t *family, bool *enabled)
{
    bool exclude = text[0] == '^';
    bool algos = family == &nvl_algo_family;
    for (size_t i = 0; i < family->n_rows; i++)
        enabled[i] = exclude;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", exclude ? text + 1 : text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        int found = 0;
        for (size_t i = 0; i < family->n_rows; i++) {
            if (strcasecmp(tok, nvl_family_name(family, (int)i)) == 0) {
                enabled[i] = !exclude;
                found = 1;
            }
        }
        for (size_t j = 0; !found && algos &&
                           j < sizeof collnet_names / sizeof collnet_names[0];
             j++)
            found = strcasecmp(tok, collnet_names[j]) == 0;
        if (!found) {
            char accepted[160];
            nvl_family_names(family, ", ", ", ", accepted, sizeof accepted);
            nvl_report("%s=%s: unknown name '%s' (expected a comma-separated "
                       "list of %s%s, optionally after '^' to exclude them)",
                       var, text, tok, accepted,
                       algos ? " (CollNetDirect, CollNetChain accepted, never "
                               "used)"
                             : "");
            return NVL_ERR_INVALID;
        }
    }
    return NVL_OK;
}

static nvl_status_t env_int(const char *var, int *out)
{
    const char *v = getenv(var);
    if (v == NULL || *v == '\0')
        return NVL_OK;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end != '\0' || x < 0 || x > 1024) {
        nvl_report("%s=%s: expected a whole number from 0 to 1024", var, v);
        return NVL_ERR_INVALID;
    }
    *out = (int)x;
    return NVL_OK;
}

/* NCCL_ALGO or NCCL_PROTO, when set, over family into enabled[]; the text
 * kept in env_out (for reports). */
static nvl_status_t env_list(const char *var, const nvl_family_t *family,
                             bool *enabled, char *env_out, size_t len)
{
    const char *v = getenv(var);
    if (v == NULL || *v == '\0')
        return NVL_OK;
    nvl_status_t st = parse_list(var, v, family, enabled);
    if (st == NVL_OK)
        snprintf(env_out, len, "%s", v);
    return st;
}

nvl_status_t nvl_tuner_cfg_from_env(nvl_tuner_cfg_t *cfg_out)
{
    nvl_tuner_cfg_t cfg;
    nvl_tuner_cfg_default(&cfg);
    nvl_status_t st;
    if ((st = env_list("NCCL_ALGO", &nvl_algo_family, cfg.algo_enabled,
                       cfg.algo_env, sizeof cfg.algo_env)) != NVL_OK ||
        (st = env_list("NCCL_PROTO", &nvl_proto_family, cfg.proto_enabled,
                       cfg.proto_env, sizeof cfg.proto_env)) != NVL_OK)
        return st;
    /* an algorithm's own switch (NCCL_NVLS_ENABLE, NCCL_PAT_ENABLE) */
    for (int a = 0; a < NVL_ALGO_COUNT; a++) {
        const char *var = nvl_coll_algo((nvl_algo_t)a)->enable_env;
        int on = 1;
        if (var != NULL && (st = env_int(var, &on)) != NVL_OK)
            return st;
        if (!on)
            cfg.algo_enabled[a] = false;
    }
    if ((st = env_int("NCCL_MAX_NCHANNELS", &cfg.max_channels)) != NVL_OK ||
        (st = env_int("NCCL_MAX_CTAS", &cfg.max_channels)) != NVL_OK ||
        (st = env_int("NCCL_MIN_NCHANNELS", &cfg.min_channels)) != NVL_OK ||
        (st = env_int("NCCL_MIN_CTAS", &cfg.min_channels)) != NVL_OK)
        return st;
    *cfg_out = cfg;
    return NVL_OK;
}

nvl_status_t nvl_coll_predict(const nvl_comm_t *comm, nvl_coll_t coll,
                              size_t bytes, nvl_algo_t algo,
                              nvl_proto_t proto, nvl_coll_info_t *info_out)
{
    if (algo >= NVL_ALGO_COUNT || proto >= NVL_PROTO_COUNT)
        return NVL_ERR_RANGE;
    const nvl_coll_algo_t *a = nvl_coll_algo(algo);
    if (!a->supports(comm, coll, proto))
        return NVL_ERR_RANGE;
    nvl_coll_info_t info = {.coll = coll, .algo = algo, .proto = proto,
                            .bytes = bytes};
    double channels = nvl_coll_model_channels(comm, algo, proto, bytes);
    info.channels = (int)channels; /* NCCL's count: the whole channels */
    /* one rank, or nothing to move: NCCL returns without a kernel */
    info.time_ps = nvl_ps_from_s(
        comm->size > 1 && bytes > 0
            ? a->predict_s(comm, coll, bytes, proto, channels)
            : 0.0);
    *info_out = info;
    return NVL_OK;
}

bool nvl_coll_nccl_declines(const nvl_comm_t *comm, nvl_coll_t coll,
                            size_t bytes, nvl_algo_t algo)
{
    const nvl_coll_algo_t *a = nvl_coll_algo(algo);
    return a->nccl_declines != NULL && a->nccl_declines(comm, coll, bytes);
}

double nvl_coll_nccl_rating_s(const nvl_comm_t *comm, nvl_coll_t coll,
                              size_t bytes, nvl_algo_t algo,
                              nvl_proto_t proto)
{
    if (algo >= NVL_ALGO_COUNT || proto >= NVL_PROTO_COUNT)
        return -1.0;
    const nvl_coll_algo_t *a = nvl_coll_algo(algo);
    if (a->rating_s == NULL || !a->supports(comm, coll, proto))
        return -1.0;
    return comm->size > 1 && bytes > 0 ? a->rating_s(comm, coll, bytes, proto)
                                       : 0.0;
}

/* The protocol NCCL runs algo with for coll of `bytes`: the enabled one
 * of lowest NCCL rating where the algorithm has one (rating_s), else of
 * lowest modeled time; its prediction in *info_out, its rating in
 * *rating_out (negative: none).  False: none. */
static bool best_proto(const nvl_comm_t *comm, nvl_coll_t coll, size_t bytes,
                       nvl_algo_t algo, nvl_coll_info_t *info_out,
                       double *rating_out)
{
    double best_key = 0;
    bool found = false;
    for (int p = 0; p < NVL_PROTO_COUNT; p++) {
        nvl_coll_info_t info;
        if (!comm->tuner.proto_enabled[p] ||
            nvl_coll_predict(comm, coll, bytes, algo, (nvl_proto_t)p,
                             &info) != NVL_OK)
            continue;
        double rating = nvl_coll_nccl_rating_s(comm, coll, bytes, algo,
                                               (nvl_proto_t)p);
        double key = rating >= 0 ? rating : (double)info.time_ps;
        if (!found || key < best_key) {
            best_key = key;
            *info_out = info;
            *rating_out = rating;
            found = true;
        }
    }
    return found;
}

nvl_status_t nvl_coll_choose_quiet(const nvl_comm_t *comm, nvl_coll_t coll,
                                   size_t bytes, nvl_coll_info_t *info_out)
{
    /* the algorithms NCCL's rating covers compete by it, as in NCCL's
     * topoGetAlgoInfo; their winner and the others by the model's time */
    nvl_coll_info_t best = {0}, rated = {0};
    double rated_key = -1;
    int found = 0;
    for (int a = 0; a < NVL_ALGO_COUNT; a++) {
        nvl_coll_info_t info = {0};
        double r;
        if (!comm->tuner.algo_enabled[a] ||
            nvl_coll_nccl_declines(comm, coll, bytes, (nvl_algo_t)a) ||
            !best_proto(comm, coll, bytes, (nvl_algo_t)a, &info, &r))
            continue;
        if (r >= 0) {
            if (rated_key < 0 || r < rated_key) {
                rated = info;
                rated_key = r;
            }
            continue;
        }
        if (!found || info.time_ps < best.time_ps) {
            best = info;
            found = 1;
        }
    }
    if (rated_key >= 0 && (!found || rated.time_ps <= best.time_ps)) {
        best = rated;
        found = 1;
    }
    if (!found)
        return NVL_ERR_INVALID;
    *info_out = best;
    return NVL_OK;
}

nvl_status_t nvl_coll_choose(const nvl_comm_t *comm, nvl_coll_t coll,
                             size_t bytes, nvl_coll_info_t *info_out)
{
    nvl_status_t st = nvl_coll_choose_quiet(comm, coll, bytes, info_out);
    if (st != NVL_OK) {
        if (comm->rank == 0)
            nvl_report("%s: no enabled algorithm/protocol can run it on %d "
                       "rank(s) (check NCCL_ALGO, NCCL_PROTO, "
                       "NCCL_NVLS_ENABLE)",
                       nvl_coll_name(coll), comm->size);
    }
    return st;
}

/* The algorithm row that gives info's call a kernel time of its own, or
 * NULL: a row with kernel_s (Ring, Tree; not NVLS, NVLSTree, PAT), run by
 * NCCL (not a serving engine's kernel), on more than one rank, for some
 * bytes. */
static const nvl_coll_algo_t *kernel_row(const nvl_comm_t *comm,
                                         const nvl_coll_info_t *info)
{
    const nvl_coll_algo_t *a = info->algo < NVL_ALGO_COUNT
                                   ? nvl_coll_algo(info->algo)
                                   : NULL;
    if (a == NULL || a->kernel_s == NULL || info->impl != NVL_AR_NCCL ||
        comm->size < 2 || info->bytes == 0)
        return NULL;
    return a;
}

bool nvl_coll_has_kernel(const nvl_comm_t *comm, const nvl_coll_info_t *info)
{
    return kernel_row(comm, info) != NULL;
}

int64_t nvl_coll_kernel_ps(const nvl_comm_t *comm,
                           const nvl_coll_info_t *info)
{
    const nvl_coll_algo_t *a = kernel_row(comm, info);
    if (a == NULL)
        return info->time_ps;
    double channels = nvl_coll_model_kernel_channels(
        comm, nvl_coll_model_channels(comm, info->algo, info->proto,
                                      info->bytes));
    return nvl_ps_from_s(a->kernel_s(comm, info->coll, info->bytes,
                                     info->proto, channels));
}

int64_t nvl_coll_kernel_time_ps(const nvl_comm_t *comm, nvl_coll_t coll,
                                size_t bytes)
{
    nvl_coll_info_t info;
    if (coll > NVL_COLL_ALLREDUCE ||
        nvl_coll_choose_quiet(comm, coll, bytes, &info) != NVL_OK)
        return -1;
    return nvl_coll_kernel_ps(comm, &info);
}

/* A call's device time under a harness: the kernel's alone when graph_calls
 * calls are captured in one CUDA graph, else the eager call's. */
static int64_t device_ps(const nvl_comm_t *comm, const nvl_coll_info_t *info,
                         int graph_calls)
{
    return graph_calls > 1 ? nvl_coll_kernel_ps(comm, info) : info->time_ps;
}

int64_t nvl_coll_loop_time_ps(const nvl_comm_t *comm,
                              const nvl_coll_info_t *info, int host_gpus,
                              int graph_calls)
{
    const nvl_nccl_spec_t *n = &comm->topo->nccl;
    /* enqueue.cc taskAppend: "Empty collectives can be discarded" (count
     * 0 returns before a task exists; p2p keeps a zero-byte task) */
    bool empty = info->bytes == 0 && info->coll != NVL_COLL_SENDRECV &&
                 info->coll != NVL_COLL_ALLTOALL;
    if (empty)
        return host_gpus * n->empty_call_ps;
    int64_t host = host_gpus * n->launch_overhead_ps /
                   (graph_calls > 1 ? graph_calls : 1);
    int64_t device = device_ps(comm, info, graph_calls);
    return device > host ? device : host;
}

int64_t nvl_coll_blocking_time_ps(const nvl_comm_t *comm,
                                  const nvl_coll_info_t *info, int host_gpus,
                                  int graph_calls, bool torch_eager)
{
    const nvl_nccl_spec_t *n = &comm->topo->nccl;
    int64_t torch = torch_eager ? comm->topo->gpu.launch_overhead_ps : 0;
    bool empty = info->bytes == 0 && info->coll != NVL_COLL_SENDRECV &&
                 info->coll != NVL_COLL_ALLTOALL;
    int64_t t = empty ? torch + host_gpus * n->empty_call_ps
                      : torch +
                            host_gpus * n->launch_overhead_ps /
                                (graph_calls > 1 ? graph_calls : 1) +
                            device_ps(comm, info, graph_calls);
    /* torch records the end after the call returns: never before its
     * whole host path */
    return torch_eager && t < n->torch_call_ps ? n->torch_call_ps : t;
}
