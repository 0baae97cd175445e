/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wildcards.c - wildcard matching with messages from several sources, on 3
 * or 4 ranks spread over two nodes (with --map-by node ranks 0,2 share a
 * node and 1,3 the other one, so a receiver sees messages from the BTL under
 * test and from shared memory at the same time), or up to MAXRANKS over
 * more nodes.
 *
 * Every sub-check runs twice, with receiver ("root") rank 0 and rank 1.
 * Messages: the length is a function of (source, tag) - 0 B .. 300 KB, eager
 * and rendezvous mixed - and the content a pattern seeded by (source, tag,
 * length, sub-check), so the receiver verifies MPI_SOURCE, MPI_TAG,
 * MPI_Get_count and every byte of each message.
 *
 *   any-any       MPI_Recv(MPI_ANY_SOURCE, MPI_ANY_TAG) of 6 messages per
 *                 sender; each (source, tag) exactly once and, per source,
 *                 in send order (non-overtaking)
 *   any-source    Isend tag 1 then tag 2 from every sender; root receives all
 *                 tag 2 first, then all tag 1, with MPI_ANY_SOURCE
 *   any-tag       root receives from specific sources (highest rank first)
 *                 with MPI_ANY_TAG; order per source kept
 *   probe         MPI_Probe(ANY, ANY) + MPI_Get_count sizes the buffer, then
 *                 MPI_Recv from status.MPI_SOURCE/MPI_TAG
 *   iprobe        MPI_Iprobe is false before anything is sent, then polled
 *                 until every message has been seen and received
 *   mprobe        MPI_Improbe/MPI_Mprobe + MPI_Mrecv (matched probe)
 *   waitany       MPI_ANY_SOURCE receives pre-posted, completed by
 *                 MPI_Waitany; an unmatched MPI_ANY_SOURCE receive is
 *                 cancelled (MPI_Test_cancelled)
 *
 * Run: mpirun -np 4 --map-by node ./wildcards
 */
#include "emt_common.h"

#define NMSG   6 /* messages per sender in any-any */
#define MAXLEN 300000
#define GUARD  64

#define MAXRANKS 16 /* 8 nodes x 2 (run-mpi-tests --nodes 8) */

enum { SC_ANYANY = 1, SC_ANYSRC, SC_ANYTAG, SC_PROBE, SC_IPROBE, SC_MPROBE, SC_WAITANY };

static const int lens[] = { 0, 5, 900, 9000, 70000, MAXLEN };

static size_t len_for(int src, int tag)
{
    return (size_t)lens[(unsigned)(src * 7 + tag) % (sizeof(lens) / sizeof(lens[0]))];
}

static uint64_t seed_for(int src, int tag, int sc)
{
    return emt_seed((uint64_t)src, (uint64_t)tag, len_for(src, tag), (uint64_t)sc);
}

/* a message buffer for (this rank as source, tag) */
static uint8_t *make_msg(int tag, int sc)
{
    size_t len = len_for(emt.rank, tag);
    uint8_t *b = emt_alloc(len);

    emt_fill(b, len, seed_for(emt.rank, tag, sc));
    return b;
}

static void send_msg(int dst, int tag, int sc)
{
    uint8_t *b = make_msg(tag, sc);

    emt_mpi(MPI_Send(b, (int)len_for(emt.rank, tag), MPI_BYTE, dst, tag, MPI_COMM_WORLD),
            "MPI_Send");
    free(b);
}

/* a received message against what (status source, status tag) says */
static void check_msg(const MPI_Status *st, const uint8_t *buf, int sc, const char *ctx)
{
    int src = st->MPI_SOURCE, tag = st->MPI_TAG, count = -1;
    char what[96];

    if (src < 0 || src >= emt.size || src == emt.rank) {
        emt_detail("%s: status.MPI_SOURCE %d is not a sender", ctx, src);
        return;
    }
    MPI_Get_count(st, MPI_BYTE, &count);
    if (count < 0 || (size_t)count != len_for(src, tag)) {
        emt_detail("%s: from %d tag %d: MPI_Get_count %d, want %zu", ctx, src, tag, count,
                   len_for(src, tag));
        return;
    }
    snprintf(what, sizeof(what), "%s: from %d tag %d", ctx, src, tag);
    emt_verify(buf, (size_t)count, seed_for(src, tag, sc), what);
    emt_verify_poison(buf + count, GUARD, what);
}

/* A message received after a probe: it must be the one probed (st), and
 * its content right. */
static void check_probed(const MPI_Status *st, MPI_Status *st2, const uint8_t *b, int sc,
                         const char *what)
{
    if (st2->MPI_SOURCE != st->MPI_SOURCE || st2->MPI_TAG != st->MPI_TAG)
        emt_detail("%s: probed %d/%d, received %d/%d", what, st->MPI_SOURCE, st->MPI_TAG,
                   st2->MPI_SOURCE, st2->MPI_TAG);
    check_msg(st2, b, sc, what);
}

static void recv_any(uint8_t *buf, int src, int tag, MPI_Status *st, int sc, const char *ctx)
{
    memset(buf, EMT_POISON, MAXLEN + GUARD);
    if (emt_mpi(MPI_Recv(buf, MAXLEN + GUARD, MPI_BYTE, src, tag, MPI_COMM_WORLD, st),
                "MPI_Recv") == MPI_SUCCESS)
        check_msg(st, buf, sc, ctx);
    else
        st->MPI_SOURCE = -1;
}

static void any_any(int root, uint8_t *buf)
{
    if (emt.rank != root) {
        for (int k = 0; k < NMSG; k++)
            send_msg(root, 1000 + emt.rank * 10 + k, SC_ANYANY);
    } else {
        int next[MAXRANKS] = { 0 };
        int total = (emt.size - 1) * NMSG;

        for (int i = 0; i < total; i++) {
            MPI_Status st;

            recv_any(buf, MPI_ANY_SOURCE, MPI_ANY_TAG, &st, SC_ANYANY, "any-any");
            int s = st.MPI_SOURCE;
            if (s < 0 || s >= emt.size || s == root)
                continue;
            int k = st.MPI_TAG - 1000 - s * 10;
            if (k != next[s])
                emt_detail("any-any: from %d got tag %d, want %d (lost, duplicated or overtaken)",
                           s, st.MPI_TAG, 1000 + s * 10 + next[s]);
            next[s] = k + 1;
        }
        for (int s = 0; s < emt.size; s++)
            if (s != root && next[s] != NMSG)
                emt_detail("any-any: %d messages from %d, want %d", next[s], s, NMSG);
    }
    emt_report("any-any     root %d: MPI_ANY_SOURCE+MPI_ANY_TAG, %d msgs from each of %d ranks",
               root, NMSG, emt.size - 1);
}

static void any_source(int root, uint8_t *buf)
{
    if (emt.rank != root) {
        uint8_t *a = make_msg(1, SC_ANYSRC), *b = make_msg(2, SC_ANYSRC);
        MPI_Request rq[2];

        MPI_Isend(a, (int)len_for(emt.rank, 1), MPI_BYTE, root, 1, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(b, (int)len_for(emt.rank, 2), MPI_BYTE, root, 2, MPI_COMM_WORLD, &rq[1]);
        emt_mpi(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), "MPI_Waitall");
        free(a);
        free(b);
    } else {
        for (int tag = 2; tag >= 1; tag--) {
            int seen[MAXRANKS] = { 0 };

            for (int i = 0; i < emt.size - 1; i++) {
                MPI_Status st;

                recv_any(buf, MPI_ANY_SOURCE, tag, &st, SC_ANYSRC, "any-source");
                if (st.MPI_SOURCE < 0)
                    continue;
                if (st.MPI_TAG != tag)
                    emt_detail("any-source: asked for tag %d, got %d", tag, st.MPI_TAG);
                if (st.MPI_SOURCE < emt.size && seen[st.MPI_SOURCE]++)
                    emt_detail("any-source: tag %d from %d twice", tag, st.MPI_SOURCE);
            }
        }
    }
    emt_report("any-source  root %d: MPI_ANY_SOURCE with a given tag, later tag first", root);
}

static void any_tag(int root, uint8_t *buf)
{
    if (emt.rank != root) {
        for (int k = 0; k < 3; k++)
            send_msg(root, 3000 + ((emt.rank * 37 + k * 11) % 23) * 3 + k, SC_ANYTAG);
    } else {
        for (int s = emt.size - 1; s >= 0; s--) {
            if (s == root)
                continue;
            for (int k = 0; k < 3; k++) {
                MPI_Status st;
                int want = 3000 + ((s * 37 + k * 11) % 23) * 3 + k;

                recv_any(buf, s, MPI_ANY_TAG, &st, SC_ANYTAG, "any-tag");
                if (st.MPI_SOURCE >= 0 && (st.MPI_SOURCE != s || st.MPI_TAG != want))
                    emt_detail("any-tag: got source %d tag %d, want %d/%d", st.MPI_SOURCE,
                               st.MPI_TAG, s, want);
            }
        }
    }
    emt_report("any-tag     root %d: specific sources (last first), MPI_ANY_TAG", root);
}

static void probe(int root)
{
    if (emt.rank != root) {
        send_msg(root, 50 + emt.rank, SC_PROBE);
        send_msg(root, 60 + emt.rank, SC_PROBE);
    } else {
        for (int i = 0; i < 2 * (emt.size - 1); i++) {
            MPI_Status st, st2;
            int count = -1;

            if (emt_mpi(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st), "MPI_Probe") !=
                MPI_SUCCESS)
                break;
            MPI_Get_count(&st, MPI_BYTE, &count);
            if (count < 0 || count > MAXLEN) {
                emt_detail("probe: count %d from %d tag %d", count, st.MPI_SOURCE, st.MPI_TAG);
                break;
            }
            uint8_t *b = emt_alloc((size_t)count + GUARD);
            memset(b, EMT_POISON, (size_t)count + GUARD);
            if (emt_mpi(
                    MPI_Recv(b, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st2),
                    "MPI_Recv") == MPI_SUCCESS) {
                check_probed(&st, &st2, b, SC_PROBE, "probe");
            }
            free(b);
        }
    }
    emt_report("probe       root %d: MPI_Probe(ANY,ANY) + MPI_Get_count sized receive", root);
}

static void iprobe(int root, uint8_t *buf)
{
    int flag = 1;

    if (emt.rank == root) {
        MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (flag)
            emt_detail("iprobe: a message with tag 77 before anything was sent");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (emt.rank != root) {
        send_msg(root, 77, SC_IPROBE);
        send_msg(root, 78 + emt.rank, SC_IPROBE);
    } else {
        int got = 0;
        long polls = 0;
        double t0 = MPI_Wtime();

        while (got < 2 * (emt.size - 1)) {
            MPI_Status st, st2;

            flag = 0;
            polls++;
            if (emt_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st),
                        "MPI_Iprobe") != MPI_SUCCESS)
                break;
            if (!flag) {
                if (MPI_Wtime() - t0 > 60) {
                    emt_detail("iprobe: only %d messages seen after 60 s", got);
                    break;
                }
                continue;
            }
            recv_any(buf, st.MPI_SOURCE, st.MPI_TAG, &st2, SC_IPROBE, "iprobe");
            if (st2.MPI_SOURCE != st.MPI_SOURCE || st2.MPI_TAG != st.MPI_TAG)
                emt_detail("iprobe: probed %d/%d, received %d/%d", st.MPI_SOURCE, st.MPI_TAG,
                           st2.MPI_SOURCE, st2.MPI_TAG);
            got++;
        }
        flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (flag)
            emt_detail("iprobe: a message left over after all were received");
    }
    emt_report("iprobe      root %d: MPI_Iprobe false before sends, polled until all arrived",
               root);
}

static void mprobe(int root)
{
    if (emt.rank != root) {
        send_msg(root, 90, SC_MPROBE);
        send_msg(root, 91, SC_MPROBE);
    } else {
        for (int i = 0; i < 2 * (emt.size - 1); i++) {
            MPI_Message msg = MPI_MESSAGE_NULL;
            MPI_Status st, st2;
            int flag = 0, count = -1;
            double t0 = MPI_Wtime();

            if (i % 2 == 0) { /* matched probe, blocking */
                if (emt_mpi(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st),
                            "MPI_Mprobe") != MPI_SUCCESS)
                    break;
            } else { /* non-blocking, polled */
                while (!flag && MPI_Wtime() - t0 < 60)
                    if (emt_mpi(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                                            &msg, &st),
                                "MPI_Improbe") != MPI_SUCCESS)
                        break;
                if (!flag) {
                    emt_detail("mprobe: MPI_Improbe found nothing in 60 s");
                    break;
                }
            }
            MPI_Get_count(&st, MPI_BYTE, &count);
            if (count < 0 || count > MAXLEN) {
                emt_detail("mprobe: count %d", count);
                break;
            }
            uint8_t *b = emt_alloc((size_t)count + GUARD);
            memset(b, EMT_POISON, (size_t)count + GUARD);
            if (emt_mpi(MPI_Mrecv(b, count, MPI_BYTE, &msg, &st2), "MPI_Mrecv") == MPI_SUCCESS) {
                check_probed(&st, &st2, b, SC_MPROBE, "mprobe");
            }
            free(b);
        }
    }
    emt_report("mprobe      root %d: MPI_Mprobe/MPI_Improbe + MPI_Mrecv, ANY/ANY", root);
}

static void waitany(int root)
{
    int n = emt.size - 1;

    if (emt.rank == root) {
        uint8_t *bufs = emt_alloc((size_t)n * (MAXLEN + GUARD));
        MPI_Request rq[MAXRANKS], stray;
        MPI_Status st;
        int cancelled = 0;

        MPI_Irecv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &stray);
        memset(bufs, EMT_POISON, (size_t)n * (MAXLEN + GUARD));
        for (int i = 0; i < n; i++)
            MPI_Irecv(bufs + (size_t)i * (MAXLEN + GUARD), MAXLEN + GUARD, MPI_BYTE, MPI_ANY_SOURCE,
                      95, MPI_COMM_WORLD, &rq[i]);
        MPI_Barrier(MPI_COMM_WORLD); /* receives are posted before any send */
        for (int i = 0; i < n; i++) {
            int idx = MPI_UNDEFINED;

            if (emt_mpi(MPI_Waitany(n, rq, &idx, &st), "MPI_Waitany") != MPI_SUCCESS ||
                idx == MPI_UNDEFINED)
                break;
            check_msg(&st, bufs + (size_t)idx * (MAXLEN + GUARD), SC_WAITANY, "waitany");
        }
        MPI_Cancel(&stray);
        MPI_Wait(&stray, &st);
        MPI_Test_cancelled(&st, &cancelled);
        if (!cancelled)
            emt_detail("waitany: MPI_ANY_SOURCE receive with tag 999 not cancelled");
        free(bufs);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        send_msg(root, 95, SC_WAITANY);
    }
    emt_report("waitany     root %d: pre-posted MPI_ANY_SOURCE + MPI_Waitany, MPI_Cancel", root);
}

int main(int argc, char **argv)
{
    uint8_t *buf;

    emt_init(&argc, &argv, "wildcards");
    emt_need_ranks(3, MAXRANKS);
    buf = emt_alloc(MAXLEN + GUARD);
    emt_require_spread(2, 0, 1);
    for (int root = 0; root < 2; root++) {
        any_any(root, buf);
        any_source(root, buf);
        any_tag(root, buf);
        probe(root);
        iprobe(root, buf);
        mprobe(root);
        waitany(root);
    }
    free(buf);
    return emt_finish();
}
