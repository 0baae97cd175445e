/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pvars COMPONENT: the BTL's counters are MPI_T performance variables.
 * Every rank looks up btl_COMPONENT_frames_sent, _bytes_sent and
 * _messages_sent (class COUNTER), reads them through an MPI_T session and
 * handle, ping-pongs 200 messages of 4 KiB between ranks 0 and 1 (which the
 * test places on different nodes, so the traffic crosses the BTL), and
 * reads them again.  Fails when a variable is missing (the component is
 * in use but exports nothing) or when a counter of rank 0 or 1 did not
 * move.  Prints "pvars: N sub-checks, M failed" (tests/mpi/emt_common.h
 * conventions) with the values seen.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define NCOUNTERS 3
static const char *const counters[NCOUNTERS] = { "frames_sent", "bytes_sent", "messages_sent" };

static int read_all(MPI_T_pvar_session s, MPI_T_pvar_handle *h, unsigned long long *out)
{
    for (int i = 0; i < NCOUNTERS; i++)
        if (MPI_T_pvar_read(s, h[i], &out[i]) != MPI_SUCCESS)
            return -1;
    return 0;
}

static void traffic(int rank)
{
    static char buf[4096];
    for (int i = 0; i < 200; i++) {
        if (rank == 0) {
            MPI_Send(buf, sizeof buf, MPI_CHAR, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, sizeof buf, MPI_CHAR, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, sizeof buf, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, sizeof buf, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
        }
    }
}

int main(int argc, char **argv)
{
    int rank, provided, errors = 0, checks = 0;
    const char *comp = argc > 1 ? argv[1] : "rudp";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);

    MPI_T_pvar_session session;
    MPI_T_pvar_handle h[NCOUNTERS];
    int found = 1;
    MPI_T_pvar_session_create(&session);
    for (int i = 0; i < NCOUNTERS; i++) {
        char name[128];
        int idx, count;
        snprintf(name, sizeof name, "btl_%s_%s", comp, counters[i]);
        checks++;
        if (MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx) != MPI_SUCCESS) {
            fprintf(stderr, "pvars: rank %d: no MPI_T counter %s (is btl %s in use?)\n", rank, name,
                    comp);
            errors++;
            found = 0;
            continue;
        }
        if (MPI_T_pvar_handle_alloc(session, idx, NULL, &h[i], &count) != MPI_SUCCESS ||
            count != 1) {
            fprintf(stderr, "pvars: rank %d: %s: handle_alloc failed (count %d)\n", rank, name,
                    count);
            errors++;
            found = 0;
        }
    }

    unsigned long long before[NCOUNTERS] = { 0 }, after[NCOUNTERS] = { 0 };
    if (found && read_all(session, h, before) != 0) {
        fprintf(stderr, "pvars: rank %d: MPI_T_pvar_read failed\n", rank);
        errors++;
        found = 0;
    }
    traffic(rank);
    if (found && read_all(session, h, after) != 0) {
        fprintf(stderr, "pvars: rank %d: MPI_T_pvar_read failed\n", rank);
        errors++;
        found = 0;
    }
    if (found && rank <= 1) {
        printf("pvars: rank %d btl_%s", rank, comp);
        for (int i = 0; i < NCOUNTERS; i++) {
            printf(" %s %llu->%llu", counters[i], before[i], after[i]);
            checks++;
            if (after[i] <= before[i]) {
                fprintf(stderr,
                        "pvars: rank %d: btl_%s_%s did not move (%llu) over 200 round "
                        "trips\n",
                        rank, comp, counters[i], after[i]);
                errors++;
            }
        }
        printf("\n");
        fflush(stdout);
    }
    if (found)
        for (int i = 0; i < NCOUNTERS; i++)
            MPI_T_pvar_handle_free(session, &h[i]);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();

    int total_err = 0, total_checks = 0;
    MPI_Reduce(&errors, &total_err, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&checks, &total_checks, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("pvars: %d sub-checks, %d failed\n", total_checks, total_err);
    MPI_Finalize();
    return total_err ? 1 : 0;
}
