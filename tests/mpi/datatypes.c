/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * datatypes.c - non-contiguous derived datatypes between two ranks on two
 * nodes, small and large (> 1 MiB of payload, so the BTL carries them in
 * many fragments / the rendezvous protocol packs them piecewise).
 *
 * Types (each built small and large):
 *   vector   MPI_Type_vector of doubles, blocklen 3, stride 5 / 7
 *   indexed  MPI_Type_indexed of ints, block lengths 1..7, gaps 1..3
 *   struct   {int32 id; double v[3]; char tag[5];} (MPI_Type_create_struct,
 *            resized to sizeof; padding holes inside and at the end)
 *   nested   MPI_Type_vector of that struct type taking every other record
 *
 * Sub-checks per type and size (one output line each):
 *   typed<->typed    Isend/Irecv of the type in both directions at once
 *   typed->packed    0 sends the type, 1 receives the same signature laid
 *                    out contiguously
 *   packed->typed    1 sends contiguous data, 0 receives into the type
 * Each received buffer is checked byte by byte: the bytes the type covers
 * carry the sender's pattern (seeded by type, size, direction), every other
 * byte of the receive buffer (the holes) keeps its poison value.
 *
 * Run: mpirun -np 2 --map-by node ./datatypes
 */
#include "emt_common.h"

struct rec {
    int32_t id;
    double v[3];
    char tag[5];
};

struct seg {
    size_t off, len;
};

struct dtcase {
    const char *name;
    MPI_Datatype type;  /* what the typed side sends/receives ... */
    int count;          /* ... count times */
    MPI_Datatype ptype; /* same signature, contiguous in memory */
    int pcount;
    size_t extent;    /* bytes of the typed buffer */
    size_t packed;    /* payload bytes */
    struct seg *segs; /* covered byte ranges of the typed buffer, in order */
    size_t nsegs;
};

static void add_seg(struct dtcase *c, size_t off, size_t len)
{
    c->segs[c->nsegs].off = off;
    c->segs[c->nsegs].len = len;
    c->nsegs++;
    c->packed += len;
}

/* record type (extent sizeof(struct rec)) and its packed twin (extent 33) */
static void rec_types(MPI_Datatype *rec_t, MPI_Datatype *packed_t)
{
    int bl[3] = { 1, 3, 5 };
    MPI_Aint d[3] = { offsetof(struct rec, id), offsetof(struct rec, v),
                      offsetof(struct rec, tag) };
    MPI_Aint pd[3] = { 0, 4, 28 };
    MPI_Datatype ty[3] = { MPI_INT32_T, MPI_DOUBLE, MPI_CHAR };
    MPI_Datatype tmp;

    MPI_Type_create_struct(3, bl, d, ty, &tmp);
    MPI_Type_create_resized(tmp, 0, sizeof(struct rec), rec_t);
    MPI_Type_free(&tmp);
    MPI_Type_create_struct(3, bl, pd, ty, &tmp);
    MPI_Type_create_resized(tmp, 0, 33, packed_t);
    MPI_Type_free(&tmp);
}

static void add_rec_segs(struct dtcase *c, size_t base)
{
    add_seg(c, base + offsetof(struct rec, id), 4);
    add_seg(c, base + offsetof(struct rec, v), 24);
    add_seg(c, base + offsetof(struct rec, tag), 5);
}

static void make_vector(struct dtcase *c, int count, int stride)
{
    const int bl = 3;

    c->name = "vector";
    c->segs = emt_alloc((size_t)count * sizeof(struct seg));
    MPI_Type_vector(count, bl, stride, MPI_DOUBLE, &c->type);
    c->count = 1;
    for (int i = 0; i < count; i++)
        add_seg(c, (size_t)i * (size_t)stride * 8, bl * 8);
    c->extent = ((size_t)(count - 1) * (size_t)stride + bl) * 8;
    c->ptype = MPI_DOUBLE;
    c->pcount = count * bl;
}

static void make_indexed(struct dtcase *c, int nblocks)
{
    int *bl = emt_alloc((size_t)nblocks * sizeof(int));
    int *disp = emt_alloc((size_t)nblocks * sizeof(int));
    int pos = 2, total = 0;

    c->name = "indexed";
    c->segs = emt_alloc((size_t)nblocks * sizeof(struct seg));
    for (int i = 0; i < nblocks; i++) {
        bl[i] = 1 + (i * 5) % 7;
        disp[i] = pos;
        pos += bl[i] + 1 + i % 3;
        total += bl[i];
        add_seg(c, (size_t)disp[i] * 4, (size_t)bl[i] * 4);
    }
    MPI_Type_indexed(nblocks, bl, disp, MPI_INT, &c->type);
    c->count = 1;
    c->extent = (size_t)pos * 4; /* includes a trailing hole */
    c->ptype = MPI_INT;
    c->pcount = total;
    free(bl);
    free(disp);
}

static void make_struct(struct dtcase *c, int nrec)
{
    c->name = "struct";
    c->segs = emt_alloc((size_t)nrec * 3 * sizeof(struct seg));
    rec_types(&c->type, &c->ptype);
    c->count = nrec;
    c->pcount = nrec;
    for (int r = 0; r < nrec; r++)
        add_rec_segs(c, (size_t)r * sizeof(struct rec));
    c->extent = (size_t)nrec * sizeof(struct rec);
}

static void make_nested(struct dtcase *c, int nsel)
{
    MPI_Datatype rec_t;

    c->name = "nested";
    c->segs = emt_alloc((size_t)nsel * 3 * sizeof(struct seg));
    rec_types(&rec_t, &c->ptype);
    MPI_Type_vector(nsel, 1, 2, rec_t, &c->type);
    MPI_Type_free(&rec_t);
    c->count = 1;
    c->pcount = nsel;
    for (int r = 0; r < nsel; r++)
        add_rec_segs(c, (size_t)r * 2 * sizeof(struct rec));
    c->extent = ((size_t)nsel * 2 - 1) * sizeof(struct rec);
}

static void free_case(struct dtcase *c)
{
    MPI_Type_free(&c->type);
    if (c->ptype != MPI_DOUBLE && c->ptype != MPI_INT)
        MPI_Type_free(&c->ptype);
    free(c->segs);
    memset(c, 0, sizeof(*c));
}

/* typed buffer received: covered bytes = pattern of the packed stream (when
 * packed_src) or of the sender's typed buffer at the same offsets; holes
 * must be poison */
static void check_typed(const struct dtcase *c, const uint8_t *buf, uint64_t seed, int packed_src,
                        const char *what)
{
    uint8_t *mask = emt_alloc(c->extent);
    size_t k = 0, bad = 0, holes = 0, first = 0, firsthole = 0;

    memset(mask, 0, c->extent);
    for (size_t s = 0; s < c->nsegs; s++) {
        const struct seg *g = &c->segs[s];

        for (size_t i = 0; i < g->len; i++, k++) {
            size_t off = g->off + i;
            uint8_t want = emt_byte(seed, packed_src ? k : off);

            mask[off] = 1;
            if (buf[off] != want && bad++ == 0)
                first = off;
        }
    }
    for (size_t off = 0; off < c->extent; off++)
        if (!mask[off] && buf[off] != EMT_POISON && holes++ == 0)
            firsthole = off;
    if (bad)
        emt_detail("%s: %zu covered bytes wrong, first at offset %zu", what, bad, first);
    if (holes)
        emt_detail("%s: %zu hole bytes overwritten, first at offset %zu", what, holes, firsthole);
    free(mask);
}

/* packed buffer received from a typed sender */
static void check_packed(const struct dtcase *c, const uint8_t *buf, uint64_t seed,
                         const char *what)
{
    size_t k = 0, bad = 0, first = 0;

    for (size_t s = 0; s < c->nsegs; s++)
        for (size_t i = 0; i < c->segs[s].len; i++, k++)
            if (buf[k] != emt_byte(seed, c->segs[s].off + i) && bad++ == 0)
                first = k;
    if (bad)
        emt_detail("%s: %zu bytes wrong, first at packed offset %zu", what, bad, first);
    emt_verify_poison(buf + c->packed, 64, what);
}

static void get_count_check(const MPI_Status *st, MPI_Datatype t, int want, const char *what)
{
    int n = -1;

    MPI_Get_count(st, t, &n);
    if (n != want)
        emt_detail("%s: MPI_Get_count %d, want %d", what, n, want);
}

static void run_case(struct dtcase *c, const char *sizename)
{
    int peer = 1 - emt.rank;
    uint8_t *tsend = emt_alloc(c->extent), *trecv = emt_alloc(c->extent);
    uint8_t *pbuf = emt_alloc(c->packed + 64);
    char what[128];
    MPI_Request rq[2];
    MPI_Status st[2];
    uint64_t base = emt_seed((uint64_t)c->name[0], c->packed, 0, 0);

    MPI_Type_commit(&c->type);
    if (c->ptype != MPI_DOUBLE && c->ptype != MPI_INT)
        MPI_Type_commit(&c->ptype);

    /* typed <-> typed, both directions at once */
    emt_fill(tsend, c->extent, base + (uint64_t)emt.rank);
    memset(trecv, EMT_POISON, c->extent);
    MPI_Irecv(trecv, c->count, c->type, peer, 10, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(tsend, c->count, c->type, peer, 10, MPI_COMM_WORLD, &rq[1]);
    snprintf(what, sizeof(what), "%s %s typed<->typed from %d", c->name, sizename, peer);
    if (emt_mpi(MPI_Waitall(2, rq, st), "MPI_Waitall") == MPI_SUCCESS) {
        get_count_check(&st[0], c->type, c->count, what);
        check_typed(c, trecv, base + (uint64_t)peer, 0, what);
    }
    emt_report("%-7s %-5s typed<->typed  %8zu B payload, extent %8zu B", c->name, sizename,
               c->packed, c->extent);

    /* typed (0) -> packed (1) */
    snprintf(what, sizeof(what), "%s %s typed->packed", c->name, sizename);
    if (emt.rank == 0) {
        emt_fill(tsend, c->extent, base + 7);
        emt_mpi(MPI_Send(tsend, c->count, c->type, 1, 11, MPI_COMM_WORLD), "MPI_Send");
    } else {
        memset(pbuf, EMT_POISON, c->packed + 64);
        if (emt_mpi(MPI_Recv(pbuf, c->pcount, c->ptype, 0, 11, MPI_COMM_WORLD, &st[0]),
                    "MPI_Recv") == MPI_SUCCESS) {
            get_count_check(&st[0], c->ptype, c->pcount, what);
            check_packed(c, pbuf, base + 7, what);
        }
    }
    emt_report("%-7s %-5s typed->packed  0->1", c->name, sizename);

    /* packed (1) -> typed (0) */
    snprintf(what, sizeof(what), "%s %s packed->typed", c->name, sizename);
    if (emt.rank == 1) {
        emt_fill(pbuf, c->packed, base + 9);
        emt_mpi(MPI_Send(pbuf, c->pcount, c->ptype, 0, 12, MPI_COMM_WORLD), "MPI_Send");
    } else {
        memset(trecv, EMT_POISON, c->extent);
        if (emt_mpi(MPI_Recv(trecv, c->count, c->type, 1, 12, MPI_COMM_WORLD, &st[0]),
                    "MPI_Recv") == MPI_SUCCESS) {
            get_count_check(&st[0], c->type, c->count, what);
            check_typed(c, trecv, base + 9, 1, what);
        }
    }
    emt_report("%-7s %-5s packed->typed  1->0", c->name, sizename);

    free(tsend);
    free(trecv);
    free(pbuf);
}

int main(int argc, char **argv)
{
    struct dtcase c;

    emt_init(&argc, &argv, "datatypes");
    emt_need_ranks(2, 2);
    emt_require_spread(2, 0, 1);

    memset(&c, 0, sizeof(c));
    make_vector(&c, 10, 5);
    run_case(&c, "small");
    free_case(&c);
    make_vector(&c, 65536, 7); /* 1.5 MiB payload, 3.5 MiB extent */
    run_case(&c, "large");
    free_case(&c);

    make_indexed(&c, 16);
    run_case(&c, "small");
    free_case(&c);
    make_indexed(&c, 80000); /* ~1.2 MiB payload */
    run_case(&c, "large");
    free_case(&c);

    make_struct(&c, 7);
    run_case(&c, "small");
    free_case(&c);
    make_struct(&c, 40000); /* 1.3 MB payload */
    run_case(&c, "large");
    free_case(&c);

    make_nested(&c, 5);
    run_case(&c, "small");
    free_case(&c);
    make_nested(&c, 40000);
    run_case(&c, "large");
    free_case(&c);

    return emt_finish();
}
