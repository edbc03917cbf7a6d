/* Choosing like NCCL: the environment decides what is enabled, the cost
 * model predicts each enabled (algorithm, protocol), the fastest wins (ties
 * go to the earlier algorithm, then protocol, as in NCCL's loop). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "coll_impl.h"

static const char *const proto_names[NVL_PROTO_COUNT] = {"LL", "LL128",
                                                         "Simple"};
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

/* Parses NCCL's list syntax ("ring,tree" or "^ll,ll128") into enabled[]. */
static nvl_status_t parse_list(const char *var, const char *text,
                               bool *enabled, int n, const char *(*name)(int),
                               const char *accepted)
{
    bool exclude = text[0] == '^';
    for (int i = 0; i < n; i++)
        enabled[i] = exclude;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", exclude ? text + 1 : text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        int found = 0;
        for (int i = 0; i < n; i++) {
            if (strcasecmp(tok, name(i)) == 0) {
                enabled[i] = !exclude;
                found = 1;
            }
        }
        for (size_t j = 0; !found && enabled != NULL &&
                           j < sizeof collnet_names / sizeof collnet_names[0] &&
                           n == NVL_ALGO_COUNT;
             j++)
            found = strcasecmp(tok, collnet_names[j]) == 0;
        if (!found) {
            nvl_report("%s=%s: unknown name '%s' (expected a comma-separated "
                       "list of %s, optionally after '^' to exclude them)",
                       var, text, tok, accepted);
            return NVL_ERR_INVALID;
        }
    }
    return NVL_OK;
}

#define NAME(id, key, name, ll, ll128, simple) [NVL_ALGO_##id] = name,
static const char *const algo_names[NVL_ALGO_COUNT] = {NVL_ALGO_TABLE(NAME)};
#undef NAME

const char *nvl_algo_name(nvl_algo_t a)
{
    return a < NVL_ALGO_COUNT ? algo_names[a] : "P2P";
}

const char *nvl_proto_name(nvl_proto_t p)
{
    return p < NVL_PROTO_COUNT ? proto_names[p] : "?";
}

static const char *algo_name(int a) { return nvl_algo_name((nvl_algo_t)a); }
static const char *proto_name(int p) { return nvl_proto_name((nvl_proto_t)p); }

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

nvl_status_t nvl_tuner_cfg_from_env(nvl_tuner_cfg_t *cfg_out)
{
    nvl_tuner_cfg_t cfg;
    nvl_tuner_cfg_default(&cfg);
    const char *v = getenv("NCCL_ALGO");
    nvl_status_t st;
    if (v != NULL && *v != '\0') {
        char accepted[160] = "";
        for (int a = 0; a < NVL_ALGO_COUNT; a++)
            snprintf(accepted + strlen(accepted),
                     sizeof accepted - strlen(accepted), "%s%s",
                     a > 0 ? ", " : "", algo_names[a]);
        snprintf(accepted + strlen(accepted),
                 sizeof accepted - strlen(accepted),
                 " (CollNetDirect, CollNetChain accepted, never used)");
        st = parse_list("NCCL_ALGO", v, cfg.algo_enabled, NVL_ALGO_COUNT,
                        algo_name, accepted);
        if (st != NVL_OK)
            return st;
        snprintf(cfg.algo_env, sizeof cfg.algo_env, "%s", v);
    }
    v = getenv("NCCL_PROTO");
    if (v != NULL && *v != '\0') {
        st = parse_list("NCCL_PROTO", v, cfg.proto_enabled, NVL_PROTO_COUNT,
                        proto_name, "LL, LL128, Simple");
        if (st != NVL_OK)
            return st;
        snprintf(cfg.proto_env, sizeof cfg.proto_env, "%s", v);
    }
    int nvls = 1, pat = 1;
    if ((st = env_int("NCCL_NVLS_ENABLE", &nvls)) != NVL_OK ||
        (st = env_int("NCCL_PAT_ENABLE", &pat)) != NVL_OK ||
        (st = env_int("NCCL_MAX_NCHANNELS", &cfg.max_channels)) != NVL_OK ||
        (st = env_int("NCCL_MAX_CTAS", &cfg.max_channels)) != NVL_OK ||
        (st = env_int("NCCL_MIN_NCHANNELS", &cfg.min_channels)) != NVL_OK ||
        (st = env_int("NCCL_MIN_CTAS", &cfg.min_channels)) != NVL_OK)
        return st;
    if (!nvls) {
        cfg.algo_enabled[NVL_ALGO_NVLS] = false;
        cfg.algo_enabled[NVL_ALGO_NVLS_TREE] = false;
    }
    if (!pat)
        cfg.algo_enabled[NVL_ALGO_PAT] = false;
    *cfg_out = cfg;
    return NVL_OK;
}

nvl_status_t nvl_coll_predict(const nvl_comm_t *comm, nvl_coll_t coll,
                              size_t bytes, nvl_algo_t algo,
                              nvl_proto_t proto, nvl_coll_info_t *info_out)
{
    if (algo >= NVL_ALGO_COUNT || proto >= NVL_PROTO_COUNT)
        return NVL_ERR_RANGE;
    const nvl_coll_algo_t *a = nvl_coll_algos[algo];
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

nvl_status_t nvl_coll_choose_quiet(const nvl_comm_t *comm, nvl_coll_t coll,
                                   size_t bytes, nvl_coll_info_t *info_out)
{
    nvl_coll_info_t best = {0};
    int found = 0;
    for (int a = 0; a < NVL_ALGO_COUNT; a++) {
        if (!comm->tuner.algo_enabled[a])
            continue;
        for (int p = 0; p < NVL_PROTO_COUNT; p++) {
            nvl_coll_info_t info;
            if (!comm->tuner.proto_enabled[p] ||
                nvl_coll_predict(comm, coll, bytes, (nvl_algo_t)a,
                                 (nvl_proto_t)p, &info) != NVL_OK)
                continue;
            if (!found || info.time_ps < best.time_ps) {
                best = info;
                found = 1;
            }
        }
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
    return info->time_ps > host ? info->time_ps : host;
}
