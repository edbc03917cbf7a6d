/* `nvlemu --list [FAMILY] [--json]`: the members of every family that a
 * command-line option or a script chooses from, read from the owners'
 * tables (family.h).  One row per family; an owner adds its family here. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "nvlemu/coll.h"
#include "nvlemu/cost.h"
#include "nvlemu/engine.h"
#include "nvlemu/family.h"
#include "nvlemu/json.h"
#include "nvlemu/opts.h"
#include "nvlemu/model.h"
#include "nvlemu/quant.h"
#include "nvlemu/serve.h"
#include "nvlemu/topo.h"

static const nvl_family_t *const families[] = {
    &nvl_ar_impl_family,
    &nvl_stack_family,
    &nvl_fusion_family,
    &nvl_attn_family,
    &nvl_launch_family,
    &nvl_wdtype_family,
    &nvl_kv_dtype_family,
    &nvl_gemm_lib_family,
    &nvl_gemm_harness_family,
    &nvl_copy_path_family,
    &nvl_overlap_family,
    &nvl_engine_a2a_family,
    &nvl_engine_ep_comm_family,
    &nvl_attn_parallel_family,
    &nvl_serve_sched_family,
    &nvl_serve_preempt_family,
    &nvl_quant_format_family,
    &nvl_quant_class_family,
    &nvl_algo_family,
    &nvl_proto_family,
    &nvl_data_path_family,
    &nvl_model_type_family,
    &nvl_model_preset_family,
    &nvl_act_quant_family,
    &nvl_rank_plays_family,
};
#define N_FAMILIES (sizeof families / sizeof families[0])

static json_t *family_json(const nvl_family_t *f)
{
    json_t *members = json_array();
    for (size_t i = 0; i < f->n_rows; i++) {
        const nvl_member_t *m = nvl_family_member(f, (int)i);
        json_array_append_new(members, json_pack("{s:s, s:s}", "name",
                                                 m->name, "doc", m->doc));
    }
    return json_pack("{s:s, s:s, s:o}", "family", f->name, "doc", f->doc,
                     "members", members);
}

static void family_text(const nvl_family_t *f, FILE *out)
{
    int width = 0;
    for (size_t i = 0; i < f->n_rows; i++) {
        int len = (int)strlen(nvl_family_member(f, (int)i)->name);
        width = len > width ? len : width;
    }
    fprintf(out, "%s: %s\n", f->name, f->doc);
    for (size_t i = 0; i < f->n_rows; i++) {
        const nvl_member_t *m = nvl_family_member(f, (int)i);
        fprintf(out, "  %-*s  %s\n", width, m->name, m->doc);
    }
}

typedef struct {
    int json, help;
} list_args_t;

static const nvl_opt_t list_opts[] = {
    {.name = "json", .kind = NVL_OPT_FLAG,
     .offset = offsetof(list_args_t, json),
     .doc = "print JSON: {\"family\", \"doc\", \"members\": [{\"name\", "
            "\"doc\"}]}, or {\"families\": [...]} for all"},
    {.name = "help", .kind = NVL_OPT_HELP,
     .offset = offsetof(list_args_t, help), .doc = "print this help"},
};
static const nvl_opts_t list_set = {
    .prefix = "--list", .help_hint = "nvlemu --list --help",
    .usage = "nvlemu --list [FAMILY] [--json]",
    .intro = "The members of every family an option picks from, or of one.",
    .opts = list_opts, .n_opts = sizeof list_opts / sizeof list_opts[0],
    .max_args = 1};

int nvl_cmd_list(int argc, char **argv)
{
    list_args_t a = {0, 0};
    int first;
    if (nvl_opts_parse(&list_set, argc, argv, &a, &first) != NVL_OK)
        return 2;
    if (a.help) {
        nvl_opts_help(&list_set, stdout);
        return 0;
    }
    const char *name = first < argc ? argv[first] : NULL;
    int json = a.json;
    const nvl_family_t *only = NULL;
    for (size_t i = 0; name != NULL && i < N_FAMILIES; i++)
        if (strcmp(name, families[i]->name) == 0)
            only = families[i];
    if (name != NULL && only == NULL) {
        char known[512] = "";
        for (size_t i = 0; i < N_FAMILIES; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known),
                     "%s%s", i ? ", " : "", families[i]->name);
        nvl_report("--list: unknown family '%s' (one of %s)", name, known);
        return 2;
    }
    if (json) {
        json_t *root;
        if (only != NULL)
            root = family_json(only);
        else {
            json_t *all = json_array();
            for (size_t i = 0; i < N_FAMILIES; i++)
                json_array_append_new(all, family_json(families[i]));
            root = json_pack("{s:o}", "families", all);
        }
        int rc = nvl_json_dumpf(root, stdout, JSON_INDENT(2));
        json_decref(root);
        printf("\n");
        return rc == 0 ? 0 : 1;
    }
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (only == NULL || only == families[i]) {
            if (only == NULL && i > 0)
                printf("\n");
            family_text(families[i], stdout);
        }
    return 0;
}
