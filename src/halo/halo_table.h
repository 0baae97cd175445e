/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * halo_table.h - the MPI-free part of em_halo: boundary tables, their
 * description on the wire, and the checks made at setup.
 *
 * A boundary table lists the items one rank exchanges with one neighbour:
 * send items (address + size in the application's array) and receive items.
 * At setup both ends of a neighbour pair send each other a *description*
 * (item counts and sizes, no addresses) and each end compares it with its
 * own table: my send item i must have the size of the peer's receive item i,
 * and the other way round.
 *
 * Description wire format (version 1, big-endian, no padding):
 *
 *   0      4      6      8          12         16
 *   +------+------+------+----------+----------+------------------------+
 *   |magic |vers. |flags | nsend    | nrecv    | nsend x u64 send sizes |
 *   |"EMH1"| 1    | 0    | u32      | u32      | nrecv x u64 recv sizes |
 *   +------+------+------+----------+----------+------------------------+
 *
 * Everything here is pure C (no MPI, no I/O), so it is unit-tested and
 * fuzzed on its own (tests/unit/test_halo_table.c, tests/fuzz/fuzz_halo_desc.c).
 */
#ifndef EM_HALO_TABLE_H
#define EM_HALO_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define EM_HALO_DESC_MAGIC   0x454d4831u /* "EMH1" */
#define EM_HALO_DESC_VERSION 1
#define EM_HALO_DESC_HDR_LEN 16
/* Items per direction and neighbour.  Each item is one MPI message with the
 * item index as its tag; MPI guarantees tags up to 32767, and one tag above
 * the items is kept for the setup messages. */
#define EM_HALO_MAX_ITEMS 4096
/* An item is one MPI message of MPI_BYTEs: its size must fit an int. */
#define EM_HALO_MAX_ITEM_SIZE ((uint64_t)0x7fffffff)

/* Bytes of a description with these counts. */
#define EM_HALO_DESC_LEN(nsend, nrecv)                                                             \
    (EM_HALO_DESC_HDR_LEN + 8u * ((size_t)(nsend) + (size_t)(nrecv)))

/* Return codes shared with em_halo.h. */
enum em_halo_rc {
    EM_HALO_OK = 0,
    EM_HALO_EINVAL = 1,    /* bad argument (the message says which) */
    EM_HALO_ENOMEM = 2,    /* out of memory */
    EM_HALO_EMISMATCH = 3, /* this rank's table disagrees with a neighbour's */
    EM_HALO_ENEIGHBOR = 4, /* neighbour lists are not symmetric */
    EM_HALO_EPEER = 5,     /* another rank's setup failed (see its message) */
    EM_HALO_EPROTO = 6,    /* a neighbour sent a malformed description */
    EM_HALO_ESTATE = 7,    /* call not allowed in this state (e.g. exchange before commit) */
    EM_HALO_EMPI = 8,      /* an MPI call failed (the message has MPI's text) */
};

/* One side's view of a table, sizes only. */
struct em_halo_sizes {
    uint32_t nsend;
    uint32_t nrecv;
    const uint64_t *send; /* nsend sizes */
    const uint64_t *recv; /* nrecv sizes */
};

/*
 * Encodes a description into buf (cap bytes).  Returns the length written,
 * or 0 if it does not fit or a count exceeds EM_HALO_MAX_ITEMS.
 */
size_t em_halo_desc_encode(const struct em_halo_sizes *t, uint8_t *buf, size_t cap);

/*
 * Decodes a description of exactly len bytes.  On success fills *t with
 * counts and pointers into sizes_out (cap entries: send sizes first, then
 * receive sizes) and returns EM_HALO_OK.  On a malformed description
 * (short, wrong magic/version/flags, counts above EM_HALO_MAX_ITEMS, length
 * not matching the counts, a size of 0 or above EM_HALO_MAX_ITEM_SIZE, more
 * sizes than cap) returns EM_HALO_EPROTO and writes the reason into why.
 */
int em_halo_desc_decode(const uint8_t *buf, size_t len, struct em_halo_sizes *t,
                        uint64_t *sizes_out, size_t cap, char *why, size_t whylen);

/*
 * Compares this rank's table for neighbour `peer` with the description the
 * neighbour sent.  `me` and `peer` are ranks, used in the message only.
 * Returns EM_HALO_OK, or EM_HALO_EMISMATCH with a message naming the
 * neighbour, the first differing item and both sizes (or both counts).
 * Both ends run the same comparison from their side, so both report the
 * mismatch.
 */
int em_halo_table_compare(int me, int peer, const struct em_halo_sizes *mine,
                          const struct em_halo_sizes *theirs, char *msg, size_t msglen);

/* One item of a rank's tables, for the local checks. */
struct em_halo_span {
    uintptr_t addr;
    uint64_t size;
    int peer;    /* neighbour rank */
    int index;   /* item index in its table */
    int is_recv; /* 1 = receive item, 0 = send item */
};

/*
 * Local checks of all items of one rank: no receive item may overlap
 * another receive item or any send item (a receive writes its memory while
 * the sends of the same step read theirs); send items may overlap each
 * other.  Sorts `spans` in place.  Returns EM_HALO_OK or EM_HALO_EINVAL with
 * a message naming both items.
 */
int em_halo_check_overlap(struct em_halo_span *spans, size_t n, char *msg, size_t msglen);

#endif /* EM_HALO_TABLE_H */
