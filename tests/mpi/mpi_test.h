/* The prologue and epilogue that the MPI test programs share: MPI up, a
 * topology loaded, a communicator over MPI_COMM_WORLD on its own virtual
 * clock; the job's failures summed; the reports that nvlemu prints
 * captured, to check that an error is reported exactly once per job.
 * Test code, not part of libnvlemu: names start with mpi_test_. */
#ifndef NVL_TESTS_MPI_TEST_H
#define NVL_TESTS_MPI_TEST_H

#include "nvlemu/coll.h"
#include "nvlemu/runtime.h"

typedef struct {
    nvl_runtime_t rt;    /* rank and size */
    nvl_topo_t *topo;    /* owned: freed by mpi_test_finish */
    nvl_vclock_t clock;  /* the communicator's clock, starting at 0 */
    nvl_comm_t *comm;    /* over MPI_COMM_WORLD; freed by mpi_test_finish */
    int failures;        /* this rank's, counted by the test */
} mpi_test_t;

/* Initialises MPI (argc, argv as for MPI_Init), loads topo_path and creates
 * t->comm.  Aborts the job (exit 1 on every rank) when any of it fails, so
 * that no rank waits for one that stopped. */
void mpi_test_init(mpi_test_t *t, int *argc, char ***argv,
                   const char *topo_path);

/* The failures of every rank, summed (a collective: every rank calls it). */
int mpi_test_all_failures(const mpi_test_t *t);

/* Frees the communicator and the topology and finalizes MPI.  Returns the
 * process's exit code: 0 when all_failures is 0, else 1. */
int mpi_test_finish(mpi_test_t *t, int all_failures);

/* Captures nvlemu's reports from now on (counted, the last one kept) and,
 * with echo, prints each as "rank R reported: ..." on stdout. */
void mpi_test_capture_reports(int echo);

/* Stops capturing: reports go to standard error again. */
void mpi_test_release_reports(void);

/* The reports this rank captured since the last mpi_test_expect_once or
 * mpi_test_clear_reports, and the text of the last one ("" if none). */
int mpi_test_reports(void);
const char *mpi_test_last_report(void);
void mpi_test_clear_reports(void);

/* A collective check of one bad call: every rank must have got want, and
 * the job as a whole exactly one report, containing text.  Rank 0 says
 * what differs on stderr (prefixed with what) and counts a failure in t;
 * clears the captured reports.  Returns 1 when it held. */
int mpi_test_expect_once(mpi_test_t *t, const char *what, nvl_status_t got,
                         nvl_status_t want, const char *text);

#endif
