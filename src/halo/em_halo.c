/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_halo.c - boundary exchange with persistent MPI requests (em_halo.h).
 *
 * Setup (em_halo_commit) runs three collective rounds over the handle's
 * private communicator, each ending in an agreement (MPI_Allreduce) so that
 * every rank returns the same success/failure and no rank is left waiting
 * for a peer that gave up:
 *   1. local checks + symmetric-neighbour check (MPI_Alltoall of flags);
 *   2. table descriptions exchanged with each neighbour (halo_table.h format,
 *      tag EM_HALO_SETUP_TAG) and compared on both ends;
 *   3. persistent requests created (item i uses tag i).
 * Steps then only MPI_Startall / MPI_Waitall those requests.
 */
#include "halo/em_halo.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Above every item tag (items use 0 .. EM_HALO_MAX_ITEMS-1); MPI
 * guarantees MPI_TAG_UB >= 32767. */
#define EM_HALO_SETUP_TAG 32767

enum halo_state { ST_BUILDING, ST_READY, ST_FAILED };

struct halo_nb {
    int rank;
    int nsend, nrecv;
    em_halo_item_t *send, *recv;
};

struct em_halo {
    MPI_Comm comm;
    int me, size;
    enum halo_state state;
    int nnb, capnb;
    struct halo_nb *nb;
    /* persistent requests: receives [0, nr), sends [nr, nr + ns) */
    MPI_Request *req;
    MPI_Status *st;
    int nr, ns;
    int recvs_active, sends_active;
    size_t send_bytes, recv_bytes;
    long waits;
    int build_rc; /* first em_halo_add_neighbor error: commit fails with it */
    char build_err[640];
    char err[640];
};

_Static_assert(EM_HALO_MAX_ITEMS < EM_HALO_SETUP_TAG, "item tags must stay below the setup tag");

static int set_err(em_halo_t *h, int rc, const char *fmt, ...)
{
    va_list ap;
    int n;

    n = snprintf(h->err, sizeof(h->err), "em_halo: rank %d: ", h->me);
    if (n < 0 || (size_t)n >= sizeof(h->err))
        n = 0;
    va_start(ap, fmt);
    vsnprintf(h->err + n, sizeof(h->err) - (size_t)n, fmt, ap);
    va_end(ap);
    return rc;
}

static int mpi_err(em_halo_t *h, int mrc, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(mrc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof(text), "MPI error %d", mrc);
    return set_err(h, EM_HALO_EMPI, "%s failed: %s", what, text);
}

const char *em_halo_strerror(int rc)
{
    switch (rc) {
    case EM_HALO_OK: return "success";
    case EM_HALO_EINVAL: return "invalid argument or table";
    case EM_HALO_ENOMEM: return "out of memory";
    case EM_HALO_EMISMATCH: return "boundary table does not match the neighbour's";
    case EM_HALO_ENEIGHBOR: return "neighbour lists are not symmetric";
    case EM_HALO_EPEER: return "the table check failed on another rank";
    case EM_HALO_EPROTO: return "malformed table description from a neighbour";
    case EM_HALO_ESTATE: return "call not allowed in this state";
    case EM_HALO_EMPI: return "MPI call failed";
    default: return "unknown em_halo error";
    }
}

const char *em_halo_errmsg(const em_halo_t *h) { return h ? h->err : "em_halo: no handle"; }

int em_halo_create(MPI_Comm comm, em_halo_t **out)
{
    em_halo_t *h;
    int mrc;

    if (out == NULL)
        return EM_HALO_EINVAL;
    *out = NULL;
    h = calloc(1, sizeof(*h));
    if (h == NULL)
        return EM_HALO_ENOMEM;
    mrc = MPI_Comm_dup(comm, &h->comm);
    if (mrc != MPI_SUCCESS) {
        free(h);
        return EM_HALO_EMPI;
    }
    /* every error comes back as a return code, the application decides */
    MPI_Comm_set_errhandler(h->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(h->comm, &h->me);
    MPI_Comm_size(h->comm, &h->size);
    h->state = ST_BUILDING;
    *out = h;
    return EM_HALO_OK;
}

static int check_items(em_halo_t *h, int rank, const char *kind, const em_halo_item_t *it, int n)
{
    if (n < 0 || n > EM_HALO_MAX_ITEMS)
        return set_err(h, EM_HALO_EINVAL, "neighbour rank %d: %d %s items (allowed 0..%d)", rank, n,
                       kind, EM_HALO_MAX_ITEMS);
    if (n > 0 && it == NULL)
        return set_err(h, EM_HALO_EINVAL, "neighbour rank %d: %d %s items but no array", rank, n,
                       kind);
    for (int i = 0; i < n; i++) {
        if (it[i].size == 0 || it[i].size > (size_t)INT_MAX)
            return set_err(h, EM_HALO_EINVAL,
                           "neighbour rank %d: %s item %d has size %zu (allowed 1..%d)", rank, kind,
                           i, it[i].size, INT_MAX);
        if (it[i].addr == NULL)
            return set_err(h, EM_HALO_EINVAL, "neighbour rank %d: %s item %d has a NULL address",
                           rank, kind, i);
    }
    return EM_HALO_OK;
}

static em_halo_item_t *copy_items(const em_halo_item_t *it, int n)
{
    em_halo_item_t *c = malloc(sizeof(*c) * (size_t)(n > 0 ? n : 1));

    if (c != NULL && n > 0)
        memcpy(c, it, sizeof(*c) * (size_t)n);
    return c;
}

static int add_neighbor(em_halo_t *h, int rank, const em_halo_item_t *send, int nsend,
                        const em_halo_item_t *recv, int nrecv);

/* An add error also makes the (collective) commit fail on every rank, so a
 * program that goes on to em_halo_commit anyway cannot leave a neighbour
 * with half a pair. */
int em_halo_add_neighbor(em_halo_t *h, int rank, const em_halo_item_t *send, int nsend,
                         const em_halo_item_t *recv, int nrecv)
{
    int rc = add_neighbor(h, rank, send, nsend, recv, nrecv);

    if (rc != EM_HALO_OK && h != NULL && h->state == ST_BUILDING && h->build_rc == EM_HALO_OK) {
        h->build_rc = rc;
        snprintf(h->build_err, sizeof(h->build_err), "%s", h->err);
    }
    return rc;
}

static int add_neighbor(em_halo_t *h, int rank, const em_halo_item_t *send, int nsend,
                        const em_halo_item_t *recv, int nrecv)
{
    struct halo_nb *nb;
    int rc;

    if (h == NULL)
        return EM_HALO_EINVAL;
    if (h->state != ST_BUILDING)
        return set_err(h, EM_HALO_ESTATE, "em_halo_add_neighbor after em_halo_commit");
    if (rank < 0 || rank >= h->size)
        return set_err(h, EM_HALO_EINVAL,
                       "neighbour rank %d is not in the communicator "
                       "(size %d)",
                       rank, h->size);
    for (int i = 0; i < h->nnb; i++)
        if (h->nb[i].rank == rank)
            return set_err(h, EM_HALO_EINVAL,
                           "neighbour rank %d given twice "
                           "(one table per neighbour)",
                           rank);
    if (nsend == 0 && nrecv == 0)
        return set_err(h, EM_HALO_EINVAL, "neighbour rank %d: no items at all", rank);
    if ((rc = check_items(h, rank, "send", send, nsend)) != EM_HALO_OK ||
        (rc = check_items(h, rank, "receive", recv, nrecv)) != EM_HALO_OK)
        return rc;
    if (h->nnb == h->capnb) {
        int cap = h->capnb ? 2 * h->capnb : 4;
        struct halo_nb *n2 = realloc(h->nb, sizeof(*n2) * (size_t)cap);

        if (n2 == NULL)
            return set_err(h, EM_HALO_ENOMEM, "out of memory");
        h->nb = n2;
        h->capnb = cap;
    }
    nb = &h->nb[h->nnb];
    nb->rank = rank;
    nb->nsend = nsend;
    nb->nrecv = nrecv;
    nb->send = copy_items(send, nsend);
    nb->recv = copy_items(recv, nrecv);
    if (nb->send == NULL || nb->recv == NULL) {
        free(nb->send);
        free(nb->recv);
        return set_err(h, EM_HALO_ENOMEM, "out of memory");
    }
    h->nnb++;
    return EM_HALO_OK;
}

/*
 * The end of every setup round: all ranks learn whether any rank failed.
 * A rank that failed keeps its own code and message; the others get
 * EM_HALO_EPEER naming the lowest failing rank.
 */
static int agree(em_halo_t *h, int rc, const char *round)
{
    int first = rc != EM_HALO_OK ? h->me : h->size, low = h->size;
    int mrc = MPI_Allreduce(&first, &low, 1, MPI_INT, MPI_MIN, h->comm);

    if (mrc != MPI_SUCCESS)
        return mpi_err(h, mrc, "MPI_Allreduce (setup agreement)");
    if (rc != EM_HALO_OK)
        return rc;
    if (low < h->size)
        return set_err(h, EM_HALO_EPEER,
                       "%s failed on rank %d (see its em_halo_errmsg); "
                       "no data was exchanged",
                       round, low);
    return EM_HALO_OK;
}

static int local_checks(em_halo_t *h)
{
    size_t n = 0, k = 0;
    struct em_halo_span *sp;
    int rc;

    for (int i = 0; i < h->nnb; i++)
        n += (size_t)h->nb[i].nsend + (size_t)h->nb[i].nrecv;
    sp = malloc(sizeof(*sp) * (n ? n : 1));
    if (sp == NULL)
        return set_err(h, EM_HALO_ENOMEM, "out of memory");
    for (int i = 0; i < h->nnb; i++) {
        const struct halo_nb *nb = &h->nb[i];

        for (int j = 0; j < nb->nsend; j++)
            sp[k++] = (struct em_halo_span){ (uintptr_t)nb->send[j].addr, nb->send[j].size,
                                             nb->rank, j, 0 };
        for (int j = 0; j < nb->nrecv; j++)
            sp[k++] = (struct em_halo_span){ (uintptr_t)nb->recv[j].addr, nb->recv[j].size,
                                             nb->rank, j, 1 };
    }
    {
        char msg[512];

        rc = em_halo_check_overlap(sp, n, msg, sizeof(msg));
        if (rc != EM_HALO_OK)
            set_err(h, rc, "%s", msg);
    }
    free(sp);
    return rc;
}

static int check_neighbors(em_halo_t *h, int rc)
{
    int *mine = calloc((size_t)h->size, sizeof(int));
    int *theirs = calloc((size_t)h->size, sizeof(int));
    int mrc;

    if (mine == NULL || theirs == NULL) {
        free(mine);
        free(theirs);
        /* cannot take part in the Alltoall: the job cannot go on consistently */
        fprintf(stderr, "em_halo: rank %d: out of memory in em_halo_commit\n", h->me);
        MPI_Abort(h->comm, 1);
        return EM_HALO_ENOMEM;
    }
    /* 1 = "I have a table for you"; a rank whose own checks already
	 * failed sends 2 to everyone ("don't judge me"), so that its
	 * neighbours report its error (EM_HALO_EPEER) rather than a confusing
	 * asymmetry caused by a table it could not add */
    for (int i = 0; i < h->nnb; i++)
        mine[h->nb[i].rank] = 1;
    if (rc != EM_HALO_OK)
        for (int r = 0; r < h->size; r++)
            mine[r] = 2;
    mrc = MPI_Alltoall(mine, 1, MPI_INT, theirs, 1, MPI_INT, h->comm);
    if (mrc != MPI_SUCCESS) {
        rc = mpi_err(h, mrc, "MPI_Alltoall (neighbour check)");
    } else if (rc == EM_HALO_OK) {
        for (int r = 0; r < h->size; r++) {
            if (theirs[r] == 2)
                continue;
            if (mine[r] && !theirs[r]) {
                rc = set_err(h, EM_HALO_ENEIGHBOR,
                             "rank %d has a boundary table for neighbour rank %d, but "
                             "rank %d has none for rank %d",
                             h->me, r, r, h->me);
                break;
            }
            if (!mine[r] && theirs[r]) {
                rc = set_err(h, EM_HALO_ENEIGHBOR,
                             "rank %d has a boundary table for neighbour rank %d, but "
                             "rank %d has none for rank %d",
                             r, h->me, h->me, r);
                break;
            }
        }
    }
    free(mine);
    free(theirs);
    return rc;
}

static void sizes_of(const struct halo_nb *nb, uint64_t *buf, struct em_halo_sizes *t)
{
    for (int j = 0; j < nb->nsend; j++)
        buf[j] = nb->send[j].size;
    for (int j = 0; j < nb->nrecv; j++)
        buf[nb->nsend + j] = nb->recv[j].size;
    t->nsend = (uint32_t)nb->nsend;
    t->nrecv = (uint32_t)nb->nrecv;
    t->send = buf;
    t->recv = buf + nb->nsend;
}

/* Round 2: every pair exchanges and compares its descriptions.  Every
 * message sent is also received, whatever is found, so nothing is left in
 * flight when the round fails. */
static int compare_tables(em_halo_t *h)
{
    const size_t maxlen = EM_HALO_DESC_LEN(EM_HALO_MAX_ITEMS, EM_HALO_MAX_ITEMS);
    uint8_t **out = calloc((size_t)h->nnb + 1, sizeof(*out));
    MPI_Request *sreq = calloc((size_t)h->nnb + 1, sizeof(*sreq));
    uint64_t *mysz = malloc(sizeof(uint64_t) * 2 * EM_HALO_MAX_ITEMS);
    uint64_t *theirsz = malloc(sizeof(uint64_t) * 2 * EM_HALO_MAX_ITEMS);
    uint8_t *in = malloc(maxlen);
    int rc = EM_HALO_OK, mrc, nsent = 0;

    if (out == NULL || sreq == NULL || mysz == NULL || theirsz == NULL || in == NULL) {
        fprintf(stderr, "em_halo: rank %d: out of memory in em_halo_commit\n", h->me);
        MPI_Abort(h->comm, 1);
    }
    for (int i = 0; i < h->nnb; i++) {
        struct em_halo_sizes t;
        size_t len;

        sizes_of(&h->nb[i], mysz, &t);
        out[i] = malloc(EM_HALO_DESC_LEN(t.nsend, t.nrecv));
        if (out[i] == NULL) {
            fprintf(stderr, "em_halo: rank %d: out of memory in em_halo_commit\n", h->me);
            MPI_Abort(h->comm, 1);
        }
        len = em_halo_desc_encode(&t, out[i], EM_HALO_DESC_LEN(t.nsend, t.nrecv));
        mrc = MPI_Isend(out[i], (int)len, MPI_BYTE, h->nb[i].rank, EM_HALO_SETUP_TAG, h->comm,
                        &sreq[i]);
        if (mrc != MPI_SUCCESS) {
            /* the neighbour will wait for this message: cannot recover */
            mpi_err(h, mrc, "MPI_Isend (table description)");
            fprintf(stderr, "%s\n", h->err);
            MPI_Abort(h->comm, 1);
        }
        nsent++;
    }
    for (int i = 0; i < h->nnb; i++) {
        const struct halo_nb *nb = &h->nb[i];
        struct em_halo_sizes mine, theirs;
        MPI_Status st;
        int count = 0;
        uint8_t *buf = in;
        char why[256];
        int drc;

        mrc = MPI_Probe(nb->rank, EM_HALO_SETUP_TAG, h->comm, &st);
        if (mrc == MPI_SUCCESS)
            mrc = MPI_Get_count(&st, MPI_BYTE, &count);
        if (mrc != MPI_SUCCESS) {
            mpi_err(h, mrc, "MPI_Probe (table description)");
            fprintf(stderr, "%s\n", h->err);
            MPI_Abort(h->comm, 1);
        }
        if (count < 0)
            count = 0;
        if ((size_t)count > maxlen) {
            buf = malloc((size_t)count);
            if (buf == NULL) {
                fprintf(stderr, "em_halo: rank %d: out of memory in em_halo_commit\n", h->me);
                MPI_Abort(h->comm, 1);
            }
        }
        mrc = MPI_Recv(buf, count, MPI_BYTE, nb->rank, EM_HALO_SETUP_TAG, h->comm,
                       MPI_STATUS_IGNORE);
        if (mrc != MPI_SUCCESS) {
            if (rc == EM_HALO_OK)
                rc = mpi_err(h, mrc, "MPI_Recv (table description)");
        } else if (rc == EM_HALO_OK) {
            drc = em_halo_desc_decode(buf, (size_t)count, &theirs, theirsz, 2 * EM_HALO_MAX_ITEMS,
                                      why, sizeof(why));
            if (drc != EM_HALO_OK) {
                rc = set_err(h, drc,
                             "neighbour rank %d sent a malformed table "
                             "description: %s",
                             nb->rank, why);
            } else {
                char msg[512];

                sizes_of(nb, mysz, &mine);
                drc = em_halo_table_compare(h->me, nb->rank, &mine, &theirs, msg, sizeof(msg));
                if (drc != EM_HALO_OK)
                    rc = set_err(h, drc, "%s", msg);
            }
        }
        if (buf != in)
            free(buf);
    }
    mrc = MPI_Waitall(nsent, sreq, MPI_STATUSES_IGNORE);
    if (mrc != MPI_SUCCESS && rc == EM_HALO_OK)
        rc = mpi_err(h, mrc, "MPI_Waitall (table descriptions)");
    for (int i = 0; i < h->nnb; i++)
        free(out[i]);
    free(out);
    free(sreq);
    free(mysz);
    free(theirsz);
    free(in);
    return rc;
}

static int create_requests(em_halo_t *h)
{
    int nr = 0, ns = 0, k, mrc;

    for (int i = 0; i < h->nnb; i++) {
        nr += h->nb[i].nrecv;
        ns += h->nb[i].nsend;
    }
    h->req = calloc((size_t)(nr + ns) + 1, sizeof(*h->req));
    h->st = calloc((size_t)(nr + ns) + 1, sizeof(*h->st));
    if (h->req == NULL || h->st == NULL)
        return set_err(h, EM_HALO_ENOMEM, "out of memory");
    for (int i = 0; i < nr + ns; i++)
        h->req[i] = MPI_REQUEST_NULL;
    /* receives first, then sends (the layout of h->req) */
    k = 0;
    for (int send = 0; send < 2; send++) {
        for (int i = 0; i < h->nnb; i++) {
            const struct halo_nb *nb = &h->nb[i];
            const em_halo_item_t *it = send ? nb->send : nb->recv;
            int n = send ? nb->nsend : nb->nrecv;

            for (int j = 0; j < n; j++, k++) {
                if (send)
                    mrc = MPI_Send_init(it[j].addr, (int)it[j].size, MPI_BYTE, nb->rank, j, h->comm,
                                        &h->req[k]);
                else
                    mrc = MPI_Recv_init(it[j].addr, (int)it[j].size, MPI_BYTE, nb->rank, j, h->comm,
                                        &h->req[k]);
                if (mrc != MPI_SUCCESS)
                    return mpi_err(h, mrc, send ? "MPI_Send_init" : "MPI_Recv_init");
                if (send)
                    h->send_bytes += it[j].size;
                else
                    h->recv_bytes += it[j].size;
            }
        }
    }
    h->nr = nr;
    h->ns = ns;
    return EM_HALO_OK;
}

int em_halo_commit(em_halo_t *h)
{
    int rc;

    if (h == NULL)
        return EM_HALO_EINVAL;
    if (h->state != ST_BUILDING)
        return set_err(h, EM_HALO_ESTATE, "em_halo_commit called twice");
    h->state = ST_FAILED; /* until everything below succeeded */
    h->err[0] = '\0';
    if (h->build_rc != EM_HALO_OK) {
        rc = h->build_rc;
        snprintf(h->err, sizeof(h->err), "%s", h->build_err);
    } else {
        rc = local_checks(h);
    }
    rc = check_neighbors(h, rc);
    rc = agree(h, rc, "the boundary-table check");
    if (rc != EM_HALO_OK)
        return rc;
    rc = compare_tables(h);
    rc = agree(h, rc, "the boundary-table check");
    if (rc != EM_HALO_OK)
        return rc;
    rc = create_requests(h);
    rc = agree(h, rc, "creating the persistent requests");
    if (rc != EM_HALO_OK)
        return rc;
    h->state = ST_READY;
    return EM_HALO_OK;
}

static int need_ready(em_halo_t *h, const char *what)
{
    if (h == NULL)
        return EM_HALO_EINVAL;
    if (h->state != ST_READY)
        return set_err(h, EM_HALO_ESTATE, "%s before a successful em_halo_commit", what);
    return EM_HALO_OK;
}

/* Starts one set of persistent requests (the receives or the sends) unless
 * it is active already; api names the caller, set the set in messages (h
 * may be NULL: need_ready refuses it before anything is read). */
static int start_set(em_halo_t *h, const char *api, int *active, int n, MPI_Request *req,
                     const char *set, const char *already)
{
    int rc = need_ready(h, api), mrc;

    if (rc != EM_HALO_OK)
        return rc;
    if (*active)
        return set_err(h, EM_HALO_ESTATE, "%s are already %s (em_halo_wait first)", set, already);
    if (n > 0) {
        mrc = MPI_Startall(n, req);
        if (mrc != MPI_SUCCESS) {
            char what[48];

            snprintf(what, sizeof(what), "MPI_Startall (%s)", set);
            return mpi_err(h, mrc, what);
        }
    }
    *active = 1;
    return EM_HALO_OK;
}

int em_halo_post_recvs(em_halo_t *h)
{
    return start_set(h, "em_halo_post_recvs", h ? &h->recvs_active : NULL, h ? h->nr : 0,
                     h ? h->req : NULL, "receives", "posted");
}

int em_halo_start_sends(em_halo_t *h)
{
    return start_set(h, "em_halo_start_sends", h ? &h->sends_active : NULL, h ? h->ns : 0,
                     h ? h->req + h->nr : NULL, "sends", "started");
}

/* Names the request behind a failed status, for the message. */
static void describe_req(const em_halo_t *h, int k, char *out, size_t len)
{
    int recv = k < h->nr, idx = recv ? k : k - h->nr;

    for (int i = 0; i < h->nnb; i++) {
        int n = recv ? h->nb[i].nrecv : h->nb[i].nsend;

        if (idx < n) {
            snprintf(out, len, "%s item %d of neighbour rank %d", recv ? "receive" : "send", idx,
                     h->nb[i].rank);
            return;
        }
        idx -= n;
    }
    snprintf(out, len, "request %d", k);
}

int em_halo_wait(em_halo_t *h)
{
    int rc = need_ready(h, "em_halo_wait"), mrc, lo, hi;

    if (rc != EM_HALO_OK)
        return rc;
    if (!h->recvs_active && !h->sends_active)
        return set_err(h, EM_HALO_ESTATE, "em_halo_wait with nothing started");
    lo = h->recvs_active ? 0 : h->nr;
    hi = h->sends_active ? h->nr + h->ns : h->nr;
    mrc = hi > lo ? MPI_Waitall(hi - lo, h->req + lo, h->st + lo) : MPI_SUCCESS;
    h->recvs_active = 0;
    h->sends_active = 0;
    if (mrc == MPI_ERR_IN_STATUS) {
        for (int k = lo; k < hi; k++) {
            if (h->st[k].MPI_ERROR != MPI_SUCCESS && h->st[k].MPI_ERROR != MPI_ERR_PENDING) {
                char what[96];

                describe_req(h, k, what, sizeof(what));
                return mpi_err(h, h->st[k].MPI_ERROR, what);
            }
        }
    }
    if (mrc != MPI_SUCCESS)
        return mpi_err(h, mrc, "MPI_Waitall");
    h->waits++;
    return EM_HALO_OK;
}

int em_halo_exchange(em_halo_t *h)
{
    int rc = need_ready(h, "em_halo_exchange");

    if (rc != EM_HALO_OK)
        return rc;
    if (!h->recvs_active && (rc = em_halo_post_recvs(h)) != EM_HALO_OK)
        return rc;
    if ((rc = em_halo_start_sends(h)) != EM_HALO_OK)
        return rc;
    return em_halo_wait(h);
}

int em_halo_get_info(const em_halo_t *h, struct em_halo_info *info)
{
    if (h == NULL || info == NULL)
        return EM_HALO_EINVAL;
    memset(info, 0, sizeof(*info));
    info->neighbors = h->nnb;
    for (int i = 0; i < h->nnb; i++) {
        info->send_items += h->nb[i].nsend;
        info->recv_items += h->nb[i].nrecv;
    }
    info->send_bytes = h->send_bytes;
    info->recv_bytes = h->recv_bytes;
    info->waits = h->waits;
    return EM_HALO_OK;
}

int em_halo_free(em_halo_t **hp)
{
    em_halo_t *h;

    if (hp == NULL || *hp == NULL)
        return EM_HALO_OK;
    h = *hp;
    if (h->recvs_active || h->sends_active)
        return set_err(h, EM_HALO_ESTATE,
                       "em_halo_free with operations still started "
                       "(em_halo_wait first)");
    if (h->req != NULL) {
        for (int k = 0; k < h->nr + h->ns; k++)
            if (h->req[k] != MPI_REQUEST_NULL)
                MPI_Request_free(&h->req[k]);
    }
    for (int i = 0; i < h->nnb; i++) {
        free(h->nb[i].send);
        free(h->nb[i].recv);
    }
    free(h->nb);
    free(h->req);
    free(h->st);
    MPI_Comm_free(&h->comm);
    free(h);
    *hp = NULL;
    return EM_HALO_OK;
}
