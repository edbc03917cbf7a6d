/* The skeleton every MPI command of nvlemu runs in (cli.h): start, capture,
 * parse, load, check, agree, run, agree, finalize; with --points, the middle
 * once per line of a file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wordexp.h>

#include "cli.h"

/* common.topo with common.set_files and then common.sets applied, in
 * order, then its die view under --rank-plays die (a job of `ranks` ranks
 * must fill whole packages; 0: no job to check).  The default topology
 * is relative to the repository root; run from elsewhere, the checkout's
 * copy is used (the binary knows where its sources are). */
static nvl_status_t load_topo(nvl_cli_common_t *common, int ranks,
                              nvl_topo_t **topo_out)
{
    if (common->topo != NULL &&
        strcmp(common->topo, NVL_CLI_DEFAULT_TOPO) == 0 &&
        access(common->topo, F_OK) != 0)
        common->topo = NVL_SOURCE_DIR "/" NVL_CLI_DEFAULT_TOPO;
    nvl_topo_t *topo = NULL;
    nvl_status_t st = nvl_topo_load(common->topo, &topo);
    for (int i = 0; st == NVL_OK && i < common->set_files.n; i++)
        st = nvl_topo_set_file(topo, common->set_files.items[i]);
    for (int i = 0; st == NVL_OK && i < common->sets.n; i++)
        st = nvl_topo_set(topo, common->sets.items[i]);
    if (st == NVL_OK && common->rank_plays == NVL_PLAYS_DIE)
        st = nvl_topo_split_dies(topo);
    if (st == NVL_OK && ranks > 0)
        st = nvl_topo_check_die_ranks(topo, (uint32_t)ranks);
    if (st != NVL_OK) {
        nvl_topo_free(topo);
        return st;
    }
    *topo_out = topo;
    return NVL_OK;
}

/* One run of the command on argv: parse, check, topology, families,
 * prepare (reports captured and agreed), body; the exit code every rank
 * agrees on (0: each rank succeeded). */
static int run_once(const nvl_cli_command_t *cmd, void *args,
                    const nvl_runtime_t *rt, int argc, char **argv)
{
    memset(args, 0, cmd->args_size);
    nvl_cli_common_t *common =
        (nvl_cli_common_t *)((char *)args + cmd->common_offset);
    nvl_cli_ctx_t ctx = {.rt = rt, .topo = NULL, .validation = NULL};
    int code = 1, first;

    nvl_runtime_capture_begin();
    nvl_status_t st = nvl_opts_parse(&cmd->opts, argc, argv, args, &first);
    if (st == NVL_OK && common->points != NULL) {
        nvl_report("--points %s: a point's line may not name --points",
                   common->points);
        st = NVL_ERR_INVALID;
    }
    bool go = st == NVL_OK && !common->help;
    if (go && cmd->check != NULL)
        st = cmd->check(args, argc, argv, first);
    if (go && st == NVL_OK && common->topo != NULL)
        st = load_topo(common, cmd->world_is_job ? rt->size : 0, &ctx.topo);
    /* rank 0 alone reports: the families (0.66 MB of parsed JSON) stay
     * off the other ranks' heaps */
    if (go && st == NVL_OK && cmd->provenance && rt->rank == 0)
        st = nvl_validation_load(NULL, NVL_SOURCE_DIR, &ctx.validation);
    if (go && st == NVL_OK && cmd->prepare != NULL)
        st = cmd->prepare(args, &ctx);
    if (nvl_runtime_capture_end(st) != NVL_OK)
        goto out;
    if (common->help) {
        if (rt->rank == 0)
            nvl_opts_help(&cmd->opts, stdout);
        code = 0;
        goto out;
    }
    if (cmd->check_ranks && ctx.topo != NULL &&
        nvl_runtime_check_topo(ctx.topo) != NVL_OK)
        goto out;
    st = cmd->body(args, &ctx);
    int ok = st == NVL_OK, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    code = all_ok ? 0 : 1;
out:
    if (cmd->cleanup != NULL)
        cmd->cleanup(args);
    nvl_opts_free(&cmd->opts, args);
    nvl_topo_free(ctx.topo);
    nvl_validation_free(ctx.validation);
    return code;
}

/* The FILE of --points FILE or --points=FILE in argv, which is then taken
 * off argv (*argc shrinks); NULL when argv has none. */
static const char *take_points(int *argc, char **argv)
{
    for (int i = 1; i < *argc; i++) {
        const char *file = NULL;
        int n = 0;
        if (strcmp(argv[i], "--points") == 0 && i + 1 < *argc)
            file = argv[i + 1], n = 2;
        else if (strncmp(argv[i], "--points=", 9) == 0)
            file = argv[i] + 9, n = 1;
        if (file == NULL)
            continue;
        memmove(argv + i, argv + i + n,
                (size_t)(*argc - i - n + 1) * sizeof *argv);
        *argc -= n;
        return file;
    }
    return NULL;
}

/* The lines of path, in *lines_out (each without its newline; blank
 * lines and '#' comment lines kept empty so that numbers stay the file's);
 * reports an unreadable file. */
static nvl_status_t read_points(const char *path, char ***lines_out,
                                size_t *n_out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        nvl_report("--points %s: cannot open: %s", path, strerror(errno));
        return NVL_ERR_IO;
    }
    char **lines = NULL, *line = NULL;
    size_t n = 0, cap = 0, len = 0;
    nvl_status_t st = NVL_OK;
    while (st == NVL_OK && getline(&line, &len, f) >= 0) {
        line[strcspn(line, "\r\n")] = '\0';
        const char *p = line + strspn(line, " \t");
        char **grown = n < cap ? lines
                               : realloc(lines, (cap = 2 * cap + 16) *
                                                    sizeof *lines);
        char *copy = strdup(*p == '#' ? "" : line);
        if (grown == NULL || copy == NULL) {
            free(copy);
            nvl_report("--points %s: out of memory", path);
            st = NVL_ERR_NOMEM;
            break;
        }
        lines = grown;
        lines[n++] = copy;
    }
    free(line);
    fclose(f);
    *lines_out = lines;
    *n_out = n;
    return st;
}

/* Point `line` (number lineno of file) as an argv: argv's argc words, then
 * the line's words (shell word splitting, no command substitution);
 * reports a line that does not split. */
static nvl_status_t point_argv(const char *file, size_t lineno,
                               const char *line, int argc, char **argv,
                               wordexp_t *we, char ***pargv_out)
{
    int rc = wordexp(line, we, WRDE_NOCMD | WRDE_UNDEF);
    if (rc != 0) {
        nvl_report("--points %s:%zu: cannot split the line into words (%s)",
                   file, lineno,
                   rc == WRDE_BADCHAR ? "an unquoted |&;<>(){}"
                   : rc == WRDE_CMDSUB ? "a command substitution"
                   : rc == WRDE_BADVAL ? "an unset variable"
                   : rc == WRDE_SYNTAX ? "unbalanced quotes"
                                       : "out of memory");
        if (rc == WRDE_NOSPACE)
            wordfree(we);
        return NVL_ERR_INVALID;
    }
    char **pargv = malloc(((size_t)argc + we->we_wordc + 1) * sizeof *pargv);
    if (pargv == NULL) {
        wordfree(we);
        nvl_report("--points %s: out of memory", file);
        return NVL_ERR_NOMEM;
    }
    memcpy(pargv, argv, (size_t)argc * sizeof *pargv);
    memcpy(pargv + argc, we->we_wordv, we->we_wordc * sizeof *pargv);
    pargv[(size_t)argc + we->we_wordc] = NULL;
    *pargv_out = pargv;
    return NVL_OK;
}

/* The command once per non-blank line of file (take_points). */
static int run_points(const nvl_cli_command_t *cmd, void *args,
                      const nvl_runtime_t *rt, int argc, char **argv,
                      const char *file)
{
    char **lines = NULL;
    size_t n = 0;
    nvl_runtime_capture_begin();
    nvl_status_t st = read_points(file, &lines, &n);
    int code = nvl_runtime_capture_end(st) == NVL_OK ? 0 : 1;
    for (size_t i = 0; code == 0 && i < n; i++) {
        if (lines[i][strspn(lines[i], " \t")] == '\0')
            continue;
        wordexp_t we;
        char **pargv = NULL;
        nvl_runtime_capture_begin();
        st = point_argv(file, i + 1, lines[i], argc, argv, &we, &pargv);
        if (nvl_runtime_capture_end(st) != NVL_OK) {
            if (st == NVL_OK) { /* another rank failed */
                free(pargv);
                wordfree(&we);
            }
            code = 1;
            break;
        }
        /* on standard error, as the point's reports: Open MPI forwards a
         * rank's two streams apart, so only there is the header sure to
         * come before what the point reports */
        if (rt->rank == 0) {
            fflush(stdout);
            fprintf(stderr, "# point %s:%zu: %s\n", file, i + 1, lines[i]);
            fflush(stderr);
        }
        code = run_once(cmd, args, rt, argc + (int)we.we_wordc, pargv);
        if (code != 0 && rt->rank == 0)
            nvl_report("--points %s:%zu: this point failed (above); the "
                       "points after it were not run", file, i + 1);
        free(pargv);
        wordfree(&we);
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    return code;
}

int nvl_cli_command_run(const nvl_cli_command_t *cmd, void *args, int argc,
                        char **argv)
{
    nvl_runtime_t rt;
    if (nvl_runtime_init(&argc, &argv, &rt) != NVL_OK)
        return 1;
    const char *points = cmd->points ? take_points(&argc, argv) : NULL;
    int code = points != NULL ? run_points(cmd, args, &rt, argc, argv, points)
                              : run_once(cmd, args, &rt, argc, argv);
    nvl_runtime_finalize();
    return code;
}
