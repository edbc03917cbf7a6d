/* Human and JSON descriptions of a topology, for `nvlemu topo`. */
#include <inttypes.h>
#include <jansson.h>

#include "nvlemu/json.h"
#include <string.h>

#include "keys.h"

#define FMT(kind, v, buf) nvl_qty_format(kind, v, buf, sizeof buf)

static uint64_t pairs_over(const nvl_topo_t *t, uint32_t ranks,
                           nvl_fabric_t fabric)
{
    /* unordered pairs: per domain n(n-1)/2 for NVLink; the rest cross */
    uint64_t total = (uint64_t)ranks * (ranks - 1) / 2, nvlink = 0;
    for (uint32_t first = 0; first < ranks; first += t->nvlink.domain_gpus) {
        uint64_t n = ranks - first < t->nvlink.domain_gpus
                         ? ranks - first
                         : t->nvlink.domain_gpus;
        nvlink += n * (n - 1) / 2;
    }
    return fabric == NVL_FABRIC_NVLINK ? nvlink : total - nvlink;
}

static double min_over(const nvl_topo_t *t, uint32_t ranks,
                       double (*f)(const nvl_topo_t *, uint32_t))
{
    double m = f(t, 0);
    for (uint32_t g = 1; g < ranks; g++) {
        double v = f(t, g);
        if (v < m)
            m = v;
    }
    return m;
}

static int has_overrides(const nvl_topo_t *t, uint32_t g)
{
    return memcmp(&t->overrides[g], &nvl_topo_override_none,
                  sizeof nvl_topo_override_none) != 0;
}

/* The GPU lines: memory, SMs, dies (and, in the die view, the die
 * link), compute rates, overheads. */
static void describe_gpu(const nvl_topo_t *t, FILE *out)
{
    char a[48], b[48], c[48], d[48], e[48];
    const nvl_gpu_spec_t *g = &t->gpu;
    if (t->die_view) { /* --rank-plays die */
        FMT(NVL_QTY_BW, g->die_link_bw_bytes_per_s, a);
        FMT(NVL_QTY_TIME, (double)g->die_link_lat_ps, b);
        fprintf(out, "dies       each GPU below is one die of a package of "
                     "%" PRIu32 " (--rank-plays die): its share of the "
                     "package; a package's dies share a die link of %s per "
                     "direction, latency %s (DL)\n", g->dies, a, b);
    }
    FMT(NVL_QTY_BYTES, (double)g->hbm_bytes, a);
    FMT(NVL_QTY_BW, g->hbm_bw_bytes_per_s, b);
    fprintf(out, "GPU        %s HBM at %s; %" PRIu32 " SMs, %" PRIu32
                 " die(s)\n", a, b, g->sm_count, g->dies);
    FMT(NVL_QTY_FLOPS, g->bf16_flops_per_s, a);
    FMT(NVL_QTY_FLOPS, g->fp8_flops_per_s, b);
    if (g->fp4_flops_per_s > 0)
        FMT(NVL_QTY_FLOPS, g->fp4_flops_per_s, c);
    else
        snprintf(c, sizeof c, "none");
    FMT(NVL_QTY_FREQ, g->clock_hz, d);
    FMT(NVL_QTY_RATE, g->exp_ops_per_s, e);
    fprintf(out, "           dense bf16 %s, fp8 %s, fp4 %s; clock %s; exp %s\n",
            a, b, c, d, e);
    FMT(NVL_QTY_TIME, (double)g->kernel_overhead_ps, a);
    FMT(NVL_QTY_TIME, (double)g->launch_overhead_ps, b);
    fprintf(out, "           kernel overhead %s, launch overhead %s\n", a, b);
}

/* The NVLink lines: links, switches, NVLS, the job's bisection. */
static void describe_nvlink(const nvl_topo_t *t, uint32_t ranks, FILE *out)
{
    char a[48], b[48], c[48];
    const nvl_nvlink_spec_t *nv = &t->nvlink;
    FMT(NVL_QTY_BW, nv->link_bw_bytes_per_s, a);
    FMT(NVL_QTY_BW, min_over(t, ranks, nvl_topo_nvlink_bw), b);
    FMT(NVL_QTY_TIME, (double)nv->hop_lat_ps, c);
    fprintf(out, "NVLink     %" PRIu32 " links x %s per GPU per direction; "
                 "the job's slowest GPU has %s; latency %s\n",
            nv->links_per_gpu, a, b, c);
    if (nv->switch_trays > 0)
        fprintf(out, "           %" PRIu32 " switch tray(s) x %" PRIu32
                     " NVSwitch chip(s), %" PRIu32 " down\n",
                nv->switch_trays, nv->switch_chips_per_tray,
                nv->switch_trays_down);
    else
        fprintf(out, "           GPUs linked directly (no NVSwitch)\n");
    if (nv->nvls) {
        FMT(NVL_QTY_BW, nv->nvls_bw_bytes_per_s, a);
        fprintf(out, "           NVLS (NVLink SHARP): yes, %s per GPU\n", a);
    } else {
        fprintf(out, "           NVLS (NVLink SHARP): no\n");
    }
    FMT(NVL_QTY_BW, nvl_topo_bisection_bw(t, ranks, NVL_FABRIC_NVLINK), a);
    fprintf(out, "           bisection of the job over NVLink: %s per "
                 "direction\n", a);
}

/* NVLink-C2C, host memory and the scale-out network. */
static void describe_beyond_nvlink(const nvl_topo_t *t, uint32_t ranks,
                                   uint32_t job_domains, FILE *out)
{
    char a[48], b[48];
    if (t->c2c.bw_bytes_per_s > 0) {
        FMT(NVL_QTY_BW, t->c2c.bw_bytes_per_s, a);
        FMT(NVL_QTY_TIME, (double)t->c2c.lat_ps, b);
        fprintf(out, "C2C        %s per direction, latency %s\n", a, b);
    } else {
        fprintf(out, "C2C        not modeled\n");
    }
    if (t->host_memory.bytes > 0) {
        FMT(NVL_QTY_BYTES, (double)t->host_memory.bytes, a);
        FMT(NVL_QTY_BW, t->host_memory.bw_bytes_per_s, b);
        fprintf(out, "host mem   %s per GPU at %s\n", a, b);
    }
    if (t->scaleout.nic_bw_bytes_per_s <= 0) {
        fprintf(out, "scale-out  none\n");
        return;
    }
    FMT(NVL_QTY_BW, t->scaleout.nic_bw_bytes_per_s, a);
    FMT(NVL_QTY_TIME, (double)t->scaleout.lat_ps, b);
    fprintf(out, "scale-out  %s per GPU per direction, latency %s, "
                 "oversubscription %g\n",
            a, b, t->scaleout.oversubscription);
    if (job_domains > 1) {
        FMT(NVL_QTY_BW, nvl_topo_bisection_bw(t, ranks, NVL_FABRIC_SCALEOUT),
            a);
        fprintf(out, "           bisection of the job over scale-out: %s "
                     "per direction\n", a);
    }
}

/* Which fabric joins the job's ranks: pair counts, domains, and for up to
 * 16 ranks the matrix. */
static void describe_fabrics(const nvl_topo_t *t, uint32_t ranks,
                             uint32_t job_domains, FILE *out)
{
    uint32_t dom = t->nvlink.domain_gpus;
    fprintf(out, "fabrics    rank pairs: %" PRIu64 " over NVLink, %" PRIu64
                 " over scale-out\n",
            pairs_over(t, ranks, NVL_FABRIC_NVLINK),
            pairs_over(t, ranks, NVL_FABRIC_SCALEOUT));
    for (uint32_t dI = 0; dI < job_domains; dI++) {
        uint32_t last = (dI + 1) * dom - 1;
        if (last >= ranks)
            last = ranks - 1;
        fprintf(out, "           domain %" PRIu32 ": ranks %" PRIu32 "-%" PRIu32
                     " reach each other over NVLink%s\n",
                dI, dI * dom, last,
                job_domains > 1 ? ", other domains over scale-out" : "");
    }
    if (ranks > 16)
        return;
    /* as nvidia-smi topo -m: NV = NVLink, SO = scale-out, DL = die link */
    fprintf(out, "               ");
    for (uint32_t j = 0; j < ranks; j++)
        fprintf(out, " %4" PRIu32, j);
    fprintf(out, "\n");
    for (uint32_t i = 0; i < ranks; i++) {
        fprintf(out, "           %4" PRIu32, i);
        for (uint32_t j = 0; j < ranks; j++) {
            nvl_fabric_t f = nvl_topo_fabric(t, i, j);
            fprintf(out, " %4s", f == NVL_FABRIC_LOCAL    ? "X"
                                 : f == NVL_FABRIC_DIE    ? "DL"
                                 : f == NVL_FABRIC_NVLINK ? "NV"
                                                          : "SO");
        }
        fprintf(out, "\n");
    }
}

/* The what-ifs in force: GPU overrides, switch trays down. */
static void describe_whatifs(const nvl_topo_t *t, FILE *out)
{
    const nvl_nvlink_spec_t *nv = &t->nvlink;
    int any = 0;
    for (uint32_t gi = 0; gi < t->gpus; gi++) {
        if (!has_overrides(t, gi))
            continue;
        const nvl_gpu_override_t *o = &t->overrides[gi];
        fprintf(out, "%s GPU %" PRIu32 ": clock x%g, HBM bw x%g, %" PRIu32
                     " link(s) down, link bw x%g, NIC bw x%g\n",
                any ? "          " : "what-if   ", gi, o->clock_scale,
                o->hbm_bw_scale, o->links_down, o->link_bw_scale,
                o->nic_bw_scale);
        any = 1;
    }
    if (nv->switch_trays_down > 0) {
        fprintf(out, "%s %" PRIu32 " of %" PRIu32 " switch trays down: every "
                     "GPU loses %" PRIu32 " of its %" PRIu32 " links\n",
                any ? "          " : "what-if   ", nv->switch_trays_down,
                nv->switch_trays,
                nv->switch_trays_down * (nv->links_per_gpu / nv->switch_trays),
                nv->links_per_gpu);
        any = 1;
    }
    if (!any)
        fprintf(out, "what-if    none (no GPU overrides, no switch tray down)\n");
}

void nvl_topo_describe(const nvl_topo_t *t, uint32_t ranks,
                       const char *origin, FILE *out)
{
    uint32_t dom = t->nvlink.domain_gpus;
    uint32_t job_domains = (ranks + dom - 1) / dom;
    fprintf(out, "topology   %s: %s\n", t->name, t->description);
    fprintf(out, "file       %s (model hash %016" PRIx64 ")\n", origin,
            nvl_topo_hash(t));
    fprintf(out, "GPUs       %" PRIu32 " in %" PRIu32 " NVLink domain(s) of %"
                 PRIu32 "; %" PRIu32 " compute trays of %" PRIu32
                 ", %" PRIu32 " GPU(s) per host CPU\n",
            t->gpus, nvl_topo_domains(t), dom, t->gpus / t->node.gpus_per_tray,
            t->node.gpus_per_tray, t->node.gpus_per_superchip);
    fprintf(out, "job        %" PRIu32 " rank(s): GPUs 0-%" PRIu32
                 " (rank r plays GPU r), in %" PRIu32 " domain(s)\n",
            ranks, ranks - 1, job_domains);
    describe_gpu(t, out);
    describe_nvlink(t, ranks, out);
    describe_beyond_nvlink(t, ranks, job_domains, out);
    describe_fabrics(t, ranks, job_domains, out);
    describe_whatifs(t, out);
}

static json_t *field_json(const nvl_topo_key_t *k, const void *base)
{
    const char *f = (const char *)base + k->offset;
    switch (k->field) {
    case NVL_FIELD_STR: return json_string(f);
    case NVL_FIELD_U32: return json_integer(*(const uint32_t *)f);
    case NVL_FIELD_U64: return json_integer((json_int_t) * (const uint64_t *)f);
    case NVL_FIELD_I64: return json_integer(*(const int64_t *)f);
    case NVL_FIELD_F64: return json_real(*(const double *)f);
    case NVL_FIELD_BOOL: return json_boolean(*(const bool *)f);
    }
    return json_null();
}

nvl_status_t nvl_topo_describe_json(const nvl_topo_t *t, uint32_t ranks,
                                    const char *origin, FILE *out)
{
    json_t *root = json_object();
    char hash[24];
    snprintf(hash, sizeof hash, "%016" PRIx64, nvl_topo_hash(t));
    json_object_set_new(root, "file", json_string(origin));
    json_object_set_new(root, "hash", json_string(hash));
    json_object_set_new(root, "units",
                        json_string("bytes, bytes/s per direction, ps, "
                                    "FLOP/s, op/s, Hz"));
    json_t *spec = json_object();
    for (size_t i = 0; i < nvl_topo_key_count; i++) {
        const nvl_topo_key_t *k = &nvl_topo_keys[i];
        json_t *sec = json_object_get(spec, k->section);
        if (sec == NULL) {
            sec = json_object();
            json_object_set_new(spec, k->section, sec);
        }
        json_object_set_new(sec, k->key, field_json(k, t));
    }
    json_object_set_new(root, "spec", spec);

    json_t *job = json_object();
    uint32_t dom = t->nvlink.domain_gpus;
    json_object_set_new(job, "ranks", json_integer(ranks));
    json_object_set_new(job, "domains", json_integer((ranks + dom - 1) / dom));
    json_object_set_new(job, "nvlink_bw_per_gpu_min",
                        json_real(min_over(t, ranks, nvl_topo_nvlink_bw)));
    json_object_set_new(job, "nvlink_bisection_bw",
                        json_real(nvl_topo_bisection_bw(t, ranks,
                                                        NVL_FABRIC_NVLINK)));
    json_object_set_new(job, "scaleout_bisection_bw",
                        json_real(nvl_topo_bisection_bw(t, ranks,
                                                        NVL_FABRIC_SCALEOUT)));
    json_object_set_new(job, "nvls_available", json_boolean(t->nvlink.nvls));
    json_t *pairs = json_object();
    json_object_set_new(pairs, "nvlink",
                        json_integer((json_int_t)pairs_over(t, ranks,
                                                            NVL_FABRIC_NVLINK)));
    json_object_set_new(pairs, "scaleout",
                        json_integer((json_int_t)pairs_over(
                            t, ranks, NVL_FABRIC_SCALEOUT)));
    json_object_set_new(job, "rank_pairs", pairs);
    json_t *doms = json_array();
    for (uint32_t first = 0; first < ranks; first += dom) {
        uint32_t last = first + dom - 1 < ranks ? first + dom - 1 : ranks - 1;
        json_t *d = json_object();
        json_object_set_new(d, "domain", json_integer(first / dom));
        json_object_set_new(d, "first_rank", json_integer(first));
        json_object_set_new(d, "last_rank", json_integer(last));
        json_array_append_new(doms, d);
    }
    json_object_set_new(job, "nvlink_domains", doms);
    json_object_set_new(root, "job", job);

    json_t *ov = json_array();
    for (uint32_t g = 0; g < t->gpus; g++) {
        if (!has_overrides(t, g))
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "gpu", json_integer(g));
        for (size_t i = 0; i < nvl_topo_gpu_key_count; i++)
            json_object_set_new(o, nvl_topo_gpu_keys[i].key,
                                field_json(&nvl_topo_gpu_keys[i],
                                           &t->overrides[g]));
        json_object_set_new(o, "links_up",
                            json_integer(nvl_topo_links_up(t, g)));
        json_array_append_new(ov, o);
    }
    json_object_set_new(root, "overrides", ov);
    int rc = nvl_json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    fputc('\n', out);
    if (rc != 0 || ferror(out)) {
        nvl_report("cannot write the JSON description");
        return NVL_ERR_IO;
    }
    return NVL_OK;
}

void nvl_topo_keys_markdown(FILE *out)
{
    fprintf(out, "| section | key | kind | default | example | meaning |\n"
                 "|---|---|---|---|---|---|\n");
    for (int pass = 0; pass < 2; pass++) {
        const nvl_topo_key_t *tab = pass ? nvl_topo_gpu_keys : nvl_topo_keys;
        size_t n = pass ? nvl_topo_gpu_key_count : nvl_topo_key_count;
        for (size_t i = 0; i < n; i++) {
            const nvl_topo_key_t *k = &tab[i];
            fprintf(out, "| %s | `%s` | %s | %s | `%s` | %s |\n",
                    pass ? "gpu.N, gpu.A-B" : k->section, k->key,
                    k->field == NVL_FIELD_STR ? "text"
                                              : nvl_qty_kind_name(k->kind),
                    k->dflt == NULL ? "required"
                    : k->dflt[0] == '\0' ? "(empty)" : k->dflt,
                    k->example, k->doc);
        }
    }
}
