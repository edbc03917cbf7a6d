/* What a run or a serving job answered, as queries for its validation
 * families (cli.h, include/nvlemu/validation.h). */
#include <string.h>

#include "cli.h"
#include "nvlemu/coll.h"

static nvl_vquery_t *add(nvl_cli_queries_t *qs, const char *cls,
                         const char *what, const nvl_cli_step_t *s,
                         uint32_t ranks)
{
    size_t i = qs->n++;
    snprintf(qs->cls[i], sizeof qs->cls[i], "%s", cls);
    snprintf(qs->what[i], sizeof qs->what[i], "%s", what);
    qs->q[i] = (nvl_vquery_t){.what = qs->what[i], .cls = qs->cls[i],
                              .hardware = s->topo->name, .ranks = ranks};
    return &qs->q[i];
}

static void sized(nvl_vquery_t *q, double lo, double hi)
{
    q->sized = true;
    q->size_lo = lo;
    q->size_hi = hi;
}

void nvl_cli_step_queries(const nvl_cli_step_t *s, nvl_cli_queries_t *qs)
{
    const nvl_model_config_t *m = s->cfg;
    double batch = (double)s->batch, prompt = (double)s->prompt_len;
    double hidden = (double)m->hidden, tp = (double)s->tp;
    char what[96];
    qs->n = 0;
    const char *stack = nvl_stack_name(s->stack);
    if (s->decode) {
        snprintf(what, sizeof what, "decode step, batch %.0f", batch);
        nvl_vquery_t *q = add(qs, "decode", what, s, (uint32_t)s->tp);
        sized(q, batch, batch);
        q->attrs[0].key = "stack";
        q->attrs[0].value = stack;
    }
    snprintf(what, sizeof what, "prefill, batch %.0f x %.0f tokens", batch,
             prompt);
    nvl_vquery_t *q = add(qs, "prefill", what, s, (uint32_t)s->tp);
    sized(q, batch, batch);
    q->attrs[0].key = "stack";
    q->attrs[0].value = stack;
    if (s->tp > 1) {
        /* the layers' allreduces: a decode step's batch x hidden bf16
         * activations up to the prefill's */
        char cls[48];
        if (s->allreduce == NVL_AR_NCCL)
            snprintf(cls, sizeof cls, "all_reduce");
        else
            snprintf(cls, sizeof cls, "allreduce-%s",
                     nvl_ar_impl_name((nvl_ar_impl_t)s->allreduce));
        snprintf(what, sizeof what, "%s of the layers", cls);
        q = add(qs, cls, what, s, (uint32_t)s->tp);
        sized(q, 2 * batch * hidden, 2 * batch * prompt * hidden);
    }
    /* the GEMMs, from the decode step's o_proj (hidden x hidden / tp) to
     * the prefill's gate_up (2 intermediate / tp x hidden) */
    nvl_cost_cfg_t cc = {.topo = s->topo, .weight_dtype = s->dtype};
    nvl_stack_cost(s->stack, &cc);
    double rel;
    q = add(qs, "gemm", "the layers' GEMMs", s, 1);
    sized(q, 2 * batch * hidden * hidden / tp,
          2 * batch * prompt * hidden * 2 * (double)m->intermediate / tp);
    q->attrs[0].key = "library";
    q->attrs[0].value = nvl_gemm_lib_name(nvl_gemm_lib_choose(&cc, s->dtype, &rel));
    q->attrs[1].key = "dtype";
    q->attrs[1].value = nvl_wdtype_name(s->dtype);
}
