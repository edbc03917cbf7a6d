/* Communicators: which GPUs the members play, and what the cost model needs
 * to know about them (domains spanned, slowest ports, NVLS). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "host_paths.h"

/* Die view: the ring edges NCCL's ring (a package's dies adjacent) runs
 * over die links: one per package with two or more members (a package of
 * d members adds d - 1), or all of them when one package holds every
 * member.  Members of a package are counted in member order, which lists
 * a package's dies together whenever the communicator does. */
static void derive_dies(nvl_comm_t *c)
{
    const nvl_topo_t *t = c->topo;
    c->die_edges = 0;
    c->die_link_bw = 0;
    if (!t->die_view || c->size < 2)
        return;
    int packages = 0;
    for (int i = 0; i < c->size; i++) {
        uint32_t p = nvl_topo_package_of(t, c->gpus[i]);
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = nvl_topo_package_of(t, c->gpus[j]) == p;
        if (seen)
            c->die_edges++;
        else
            packages++;
    }
    if (packages == 1)
        c->die_edges = c->size;
    if (c->die_edges > 0)
        c->die_link_bw = t->gpu.die_link_bw_bytes_per_s;
}

static nvl_status_t derive(nvl_comm_t *c)
{
    const nvl_topo_t *t = c->topo;
    uint32_t ndom = nvl_topo_domains(t);
    int *per_dom = calloc(ndom, sizeof *per_dom);
    if (per_dom == NULL) {
        nvl_report("out of memory creating a communicator");
        return NVL_ERR_NOMEM;
    }
    c->domains = 0;
    c->max_per_domain = 0;
    c->nvlink_bw = 0;
    c->nic_bw = 0;
    for (int i = 0; i < c->size; i++) {
        uint32_t g = c->gpus[i];
        uint32_t d = nvl_topo_domain_of(t, g);
        if (per_dom[d]++ == 0)
            c->domains++;
        if (per_dom[d] > c->max_per_domain)
            c->max_per_domain = per_dom[d];
        double nv = nvl_topo_nvlink_bw(t, g);
        double nic = nvl_topo_nic_bw(t, g) / t->scaleout.oversubscription;
        if (i == 0 || nv < c->nvlink_bw)
            c->nvlink_bw = nv;
        if (i == 0 || nic < c->nic_bw)
            c->nic_bw = nic;
    }
    free(per_dom);
    derive_dies(c);
    c->log2_domains = 0;
    while ((1 << (c->log2_domains + 1)) <= c->domains)
        c->log2_domains++;
    c->nvls = t->nvlink.nvls && t->nvlink.switch_trays > 0 && c->domains == 1;
    return NVL_OK;
}

/* The fields every communicator has; the caller fills c->gpus (size
 * entries) and then calls finish().  NULL (reported) when out of memory. */
static nvl_comm_t *comm_alloc(MPI_Comm mpi, int rank, int size,
                              const nvl_topo_t *topo, nvl_vclock_t *clock,
                              const nvl_tuner_cfg_t *tuner, nvl_mode_t mode)
{
    nvl_comm_t *c = calloc(1, sizeof *c);
    uint32_t *gpus = malloc((size_t)size * sizeof *gpus);
    int *members = malloc((size_t)size * sizeof *members);
    if (c == NULL || gpus == NULL || members == NULL) {
        free(members);
        free(gpus);
        free(c);
        nvl_report("out of memory creating a communicator");
        return NULL;
    }
    for (int i = 0; i < size; i++)
        members[i] = i;
    c->members = members;
    c->mpi = mpi;
    c->rank = rank;
    c->size = size;
    c->gpus = gpus;
    c->topo = topo;
    c->clock = clock;
    c->mode = mode;
    c->tuner = *tuner;
    return c;
}

/* Checks that every member plays a GPU of the topology (member 0 reports)
 * and derives what the cost model needs.  Frees c on error. */
static nvl_status_t comm_finish(nvl_comm_t *c, nvl_comm_t **comm_out)
{
    nvl_status_t st = NVL_OK;
    for (int i = 0; i < c->size; i++) {
        if (c->gpus[i] >= c->topo->gpus) {
            if (c->rank == 0)
                nvl_report("rank %u has no GPU in topology '%s' (%u GPUs)",
                           c->gpus[i], c->topo->name, c->topo->gpus);
            st = NVL_ERR_INVALID;
            break;
        }
    }
    if (st == NVL_OK)
        st = derive(c);
    if (st != NVL_OK) {
        free(c->members);
        free(c->gpus);
        free(c);
        return st;
    }
    *comm_out = c;
    return NVL_OK;
}

static nvl_status_t build(MPI_Comm mpi, const nvl_topo_t *topo,
                          nvl_vclock_t *clock, const nvl_tuner_cfg_t *tuner,
                          nvl_mode_t mode, nvl_comm_t **comm_out)
{
    int rank, size, world;
    MPI_Comm_rank(mpi, &rank);
    MPI_Comm_size(mpi, &size);
    nvl_comm_t *c = comm_alloc(mpi, rank, size, topo, clock, tuner, mode);
    if (c == NULL)
        return NVL_ERR_NOMEM;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    uint32_t mine = (uint32_t)world;
    MPI_Allgather(&mine, 1, MPI_UINT32_T, c->gpus, 1, MPI_UINT32_T, mpi);
    return comm_finish(c, comm_out);
}

static void quiet_sink(void *ctx, const char *message)
{
    (void)ctx;
    (void)message;
}

nvl_status_t nvl_comm_create(MPI_Comm mpi_comm, const nvl_topo_t *topo,
                             nvl_vclock_t *clock, nvl_comm_t **comm_out)
{
    nvl_tuner_cfg_t cfg;
    /* every rank reads the same environment; agree so that a bad variable
     * is reported once and fails everywhere */
    int rank;
    MPI_Comm_rank(mpi_comm, &rank);
    nvl_status_t st;
    if (rank != 0)
        nvl_report_set_sink(quiet_sink, NULL); /* only rank 0 reports */
    st = nvl_tuner_cfg_from_env(&cfg);
    if (rank != 0)
        nvl_report_set_sink(NULL, NULL);
    int bad = st != NVL_OK, any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, mpi_comm);
    if (any_bad)
        return NVL_ERR_INVALID;
    MPI_Comm dup;
    MPI_Comm_dup(mpi_comm, &dup);
    st = build(dup, topo, clock, &cfg, NVL_MODE_DATA, comm_out);
    if (st != NVL_OK)
        MPI_Comm_free(&dup);
    return st;
}

nvl_status_t nvl_comm_split(nvl_comm_t *comm, int color, int key,
                            nvl_comm_t **comm_out)
{
    MPI_Comm sub;
    MPI_Comm_split(comm->mpi, color, key, &sub);
    nvl_status_t st = build(sub, comm->topo, comm->clock, &comm->tuner,
                            comm->mode, comm_out);
    if (st != NVL_OK)
        MPI_Comm_free(&sub);
    else /* a subgroup of a group with NVLS has it too */
        (*comm_out)->ar_impl = comm->ar_impl;
    return st;
}

nvl_status_t nvl_comm_create_virtual(const nvl_topo_t *topo, int nranks,
                                     nvl_vclock_t *clock,
                                     nvl_comm_t **comm_out)
{
    if (nranks < 1 || (uint32_t)nranks > topo->gpus) {
        nvl_report("a virtual communicator of %d rank(s): topology '%s' has "
                   "GPUs for 1 to %u",
                   nranks, topo->name, topo->gpus);
        return NVL_ERR_INVALID;
    }
    nvl_tuner_cfg_t cfg;
    nvl_status_t st = nvl_tuner_cfg_from_env(&cfg);
    if (st != NVL_OK)
        return st;
    nvl_comm_t *c = comm_alloc(MPI_COMM_NULL, 0, nranks, topo, clock, &cfg,
                               NVL_MODE_TIMING);
    if (c == NULL)
        return NVL_ERR_NOMEM;
    for (int i = 0; i < nranks; i++)
        c->gpus[i] = (uint32_t)i;
    return comm_finish(c, comm_out);
}

void nvl_comm_destroy(nvl_comm_t *comm)
{
    if (comm == NULL)
        return;
    nvl_agree_free(comm);
    nvl_wide_free(comm);
    nvl_ar_window_free(comm);
    if (comm->mpi != MPI_COMM_NULL) /* a virtual communicator has none */
        MPI_Comm_free(&comm->mpi);
    free(comm->gpus);
    free(comm->members);
    free(comm->scratch);
    free(comm->agree_buf);
    free(comm->ops);
    free(comm->op_time_bytes);
    free(comm->dcalls);
    free(comm);
}

int nvl_comm_rank(const nvl_comm_t *c) { return c->rank; }
int nvl_comm_size(const nvl_comm_t *c) { return c->size; }
uint32_t nvl_comm_gpu(const nvl_comm_t *c, int m) { return c->gpus[m]; }
const nvl_topo_t *nvl_comm_topo(const nvl_comm_t *c) { return c->topo; }
nvl_vclock_t *nvl_comm_clock(nvl_comm_t *c) { return c->clock; }
MPI_Comm nvl_comm_mpi(const nvl_comm_t *c) { return c->mpi; }
void nvl_comm_set_mode(nvl_comm_t *c, nvl_mode_t m) { c->mode = m; }
void nvl_comm_set_time_dtype(nvl_comm_t *c, nvl_dtype_t dtype)
{
    c->time_elem_bytes = dtype < NVL_DT_COUNT ? nvl_dtype_size(dtype) : 0;
}
void nvl_comm_set_time_bits(nvl_comm_t *c, double bits)
{
    c->time_bits = bits > 0 ? bits : 0;
}
void nvl_comm_set_time_rooted(nvl_comm_t *c, bool rooted)
{
    c->time_rooted = rooted;
}
nvl_mode_t nvl_comm_mode(const nvl_comm_t *c) { return c->mode; }
void nvl_comm_set_data_path(nvl_comm_t *c, nvl_data_path_t path)
{
    c->data_path = path;
}
void nvl_comm_set_tuner(nvl_comm_t *c, const nvl_tuner_cfg_t *cfg)
{
    c->tuner = *cfg;
    c->choice_valid = false;
}
const nvl_tuner_cfg_t *nvl_comm_tuner(const nvl_comm_t *c)
{
    return &c->tuner;
}
