/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * em_forge's handshake classes (wire v3 first contact, src/proto/hs_wire.h):
 * the attacks on named endpoints' peer tables, from the forger node's own
 * UDP socket.  Kept out of em_forge.c (its data-frame classes).
 *
 *   hsmint    strangers that try to get into the victim's table without
 *             receiving at their address: CONFIRMs under a new name each
 *             (the forger's address, a random endpoint index and nonce)
 *             with guessed cookies (hs_cookie_bad), from endpoint indexes
 *             beyond what one address has (hs_bad_ep), and CHALLENGE /
 *             ACCEPT frames for handshakes the victim never started
 *             (hs_unexpected).  A stranger that does receive there gets
 *             in, bounded by the table (docs/ofi.md "Addresses"): not an
 *             attack, so not sent.
 *   hsrebind  frames naming the claimed rank's own address (its IPv4,
 *             receive and send ports, endpoint index 0, a new nonce: a
 *             "restart") sent from the forger's: INIT, CONFIRM, ACCEPT.
 *             Accepted, they would bind the live peer's name to another
 *             incarnation or fail it; the link's source check refuses
 *             them first (hs_bad_source).
 *
 * Both name the victim's own nonce where the type needs one: the forger
 * learns it as any stranger may, by an INIT from its own address, whose
 * CHALLENGE carries it (forge_hs_learn).
 */
#ifndef EM_FORGE_HS_H
#define EM_FORGE_HS_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

typedef struct forge_hs {
    int fd;                    /* the forger's UDP socket, bound: CHALLENGEs come back to it */
    struct sockaddr_in victim; /* the victim's receive socket */
    uint8_t own[8];            /* the forger's reply address: IPv4, port, port */
    uint8_t claimed[8];        /* the claimed rank's: IPv4, receive port, send port */
    uint64_t victim_nonce;     /* from the CHALLENGE (forge_hs_learn) */
    uint32_t victim_ep;        /* the victim's endpoint index (0 on a link of its own) */
    uint64_t (*rnd)(void);
} forge_hs_t;

/* Bind @p fd (an unbound UDP socket in the forger's namespace) to a port of
 * interface @p ifname's IPv4 and fill f->own.  @return 0, or -1 said why. */
int forge_hs_bind(forge_hs_t *f, int fd, const char *ifname);

/* Send an INIT from the forger's own address and read the victim's
 * CHALLENGE (up to @p timeout_s): its nonce.  @return 0, or -1 said why. */
int forge_hs_learn(forge_hs_t *f, double timeout_s);

/* Handshake frame @p k of class hsmint (@p rebind 0) or hsrebind (1) into
 * @p out (EM_HS_LEN bytes).  @return its length. */
size_t forge_hs_frame(const forge_hs_t *f, int rebind, unsigned k, uint8_t *out);

#endif
