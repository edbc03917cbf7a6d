/* The MPI test programs' shared prologue, epilogue and report checks
 * (mpi_test.h). */
#include "mpi_test.h"

#include <stdio.h>
#include <string.h>

static int reports, echo_reports;
static char last[512];

static void sink(void *ctx, const char *message)
{
    (void)ctx;
    reports++;
    snprintf(last, sizeof last, "%s", message);
    if (echo_reports) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        printf("rank %d reported: %s\n", rank, message);
    }
}

void mpi_test_init(mpi_test_t *t, int *argc, char ***argv,
                   const char *topo_path)
{
    memset(t, 0, sizeof *t);
    if (nvl_runtime_init(argc, argv, &t->rt) != NVL_OK)
        nvl_runtime_abort(1);
    if (nvl_topo_load(topo_path, &t->topo) != NVL_OK ||
        nvl_comm_create(MPI_COMM_WORLD, t->topo, &t->clock, &t->comm) != NVL_OK)
        nvl_runtime_abort(1);
}

int mpi_test_all_failures(const mpi_test_t *t)
{
    int all = 0;
    MPI_Allreduce(&t->failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

int mpi_test_finish(mpi_test_t *t, int all_failures)
{
    nvl_comm_destroy(t->comm);
    nvl_topo_free(t->topo);
    nvl_runtime_finalize();
    return all_failures == 0 ? 0 : 1;
}

void mpi_test_capture_reports(int echo)
{
    echo_reports = echo;
    mpi_test_clear_reports();
    nvl_report_set_sink(sink, NULL);
}

void mpi_test_release_reports(void)
{
    nvl_report_set_sink(NULL, NULL);
}

int mpi_test_reports(void)
{
    return reports;
}

const char *mpi_test_last_report(void)
{
    return last;
}

void mpi_test_clear_reports(void)
{
    reports = 0;
    last[0] = '\0';
}

int mpi_test_expect_once(mpi_test_t *t, const char *what, nvl_status_t got,
                         nvl_status_t want, const char *text)
{
    int bad = got != want, any_bad, total, any_has;
    int has = reports > 0 && strstr(last, text) != NULL;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&reports, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&has, &any_has, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int held = !any_bad && total == 1 && any_has;
    if (t->rt.rank == 0 && !held) {
        fprintf(stderr, "%s: status %s on some rank, %d report(s), text '%s' "
                        "%s\n", what, any_bad ? "wrong" : "right", total,
                text, any_has ? "found" : "missing");
        t->failures++;
    }
    mpi_test_clear_reports();
    return held;
}
