/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl_name.c
 * Named links: the BTL on wire v3's first contact (engine/contact.h;
 * docs/design.md "BTLs on first contact").
 *
 * By default (btl_<name>_names auto, or wire; ids keeps the numbered path,
 * docs/design.md "Wire v3"), on a link that can run the handshake
 * (em_link_has_contact: kernel UDP, AF_XDP, DPDK, the emd daemon's),
 * a module is named by its link address, its endpoint index behind it (0: a
 * module owns its link; the BTLs never share one through link_mux) and a
 * random nonce, and its modex entry carries that name and no key material.
 * Its engine is created with room for every other process of the job
 * (its own number outside that table, EM_PROTO_SELF_OUTSIDE; the table
 * does not grow: no ops.grow) and numbers its peers itself: add_procs
 * inserts a process's name and keeps the engine's number in its endpoint;
 * the handshake, run by the first operation to it, gives the pair its keys
 * and sequence numbers and tells the peer our number for it.
 *
 * Strangers.  Open MPI 4.1 calls add_procs for a remote process only when
 * it first sends to it (mpi_add_procs_cutoff 0), so a process that only
 * receives from a peer meets it first as a stranger: a handshake from a
 * name it never inserted.  Which process is it?  Decision: its name is
 * looked up in a map of the names the job's processes published in the
 * modex (name -> vpid, built at the first stranger and kept), and only a
 * stranger found there may bind (em_engine_ops_t::admit; hs_stranger
 * counts the others).  Why not carry the vpid in the handshake (e.g. as
 * the endpoint index): a vpid there is only claimed, by anyone who can
 * receive at some address of its own, and would let such a host pose as a
 * rank; the name is proven instead (the cookie binds the address, the
 * nonce is the one the process published, which only the job's processes
 * read), and the wire keeps numbers that are each side's own.  Building
 * the map reads every process's modex entry once, as the launcher already
 * holds them (Open MPI's full modex); processes of other jobs (spawn,
 * connect/accept) are not in it, and the BTLs do not reach them, as
 * before.
 *
 * Nothing here removes a peer: ompi_mpi_finalize calls del_procs for every
 * process before the BTLs finalize, and the drain at finalize must still
 * acknowledge their last frames; the engine's peers end with the module.
 */
#include "em_btl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "engine/contact.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

bool em_btl_link_named(const em_btl_module_t *m, const em_link_t *link)
{
    /* auto (the default) and wire: named wherever the link can run first
     * contact; ids: numbered (src/transport/settings.c) */
    const char *names = m->params->s.names;
    return em_link_has_contact(link) && !(names && strcmp(names, "ids") == 0);
}

int em_btl_name_open(em_btl_module_t *m, char *err, size_t errlen)
{
    em_engine_contact_cfg_t cc = {
        .ep = 0,
        /* strangers: the job's processes Open MPI has not added yet, each
         * checked against the modex by em_btl_cb_admit */
        .accept_strangers = true,
        .ep_max = 0, /* one module per address: an address names one stranger */
    };
    m->nonce = 0;
    while (!m->nonce)
        if (getrandom(&m->nonce, sizeof m->nonce, 0) != (ssize_t)sizeof m->nonce ||
            getrandom(cc.secret, sizeof cc.secret, 0) != (ssize_t)sizeof cc.secret) {
            snprintf(err, errlen,
                     "getrandom() failed: no nonce or cookie secret for link %u's name; this "
                     "kernel or sandbox must allow getrandom(2)",
                     m->index);
            return -1;
        }
    cc.nonce = m->nonce;
    m->ep_index = cc.ep;
    m->slot_vpid = malloc((size_t)m->nslots * sizeof *m->slot_vpid);
    if (!m->slot_vpid) {
        snprintf(err, errlen, "out of memory for link %u's table of %u peers", m->index, m->nslots);
        return -1;
    }
    for (uint32_t i = 0; i < m->nslots; i++)
        m->slot_vpid[i] = EM_BTL_NO_VPID;
    int rc = em_engine_contact_open(m->engine, &cc);
    if (rc != 0) {
        snprintf(err, errlen, "first contact on link %u: %s (btl_%s_names ids avoids it)", m->index,
                 em_strerror(rc), m->name);
        return -1;
    }
    return 0;
}

void em_btl_name_close(em_btl_module_t *m)
{
    free(m->slot_vpid);
    m->slot_vpid = NULL;
    em_name_map_destroy(m->names);
    m->names = NULL;
}

void em_btl_names_mismatch(em_btl_module_t *m, const opal_proc_t *proc)
{
    const char *named = "name (link address, endpoint, nonce)", *numbered = "vpid";
    /* rendered here and written to stderr, as the peer-failed message:
     * forwarded through opal_show_help, Open MPI 4.1's mpirun failed to
     * unpack it when the job aborted right after (ob1 finds the peer
     * unreachable) and printed only its own ORTE_ERROR_LOG lines */
    char *msg = opal_show_help_string(HELP_FILE, "names-mismatch", true, m->name,
                                      opal_process_info.nodename, OPAL_NAME_PRINT(proc->proc_name),
                                      m->index, m->named ? named : numbered,
                                      m->named ? numbered : named, m->name, m->name);
    if (msg) {
        fputs(msg, stderr);
        fflush(stderr);
        free(msg);
    }
}

/* the name link @p index of a modex entry publishes (nonce 0: numbered) */
static em_conn_name_t name_in(const struct em_btl_modex *mx, unsigned index)
{
    em_conn_name_t nm = { .addr_len = mx->link[index].addr.len,
                          .ep = mx->link[index].ep,
                          .nonce = mx->link[index].nonce };
    if (nm.addr_len > EM_CONN_ADDR_MAX)
        nm.addr_len = 0; /* refused by whoever takes it */
    memcpy(nm.addr, mx->link[index].addr.bytes, nm.addr_len);
    return nm;
}

/* The job's names on this module's link -> vpid, from every process's
 * modex entry (once).  Two processes that publish one name are a broken
 * or hostile launch: the first keeps it, the second is not found by it
 * (its own add_procs still inserts it, and the engine then has one peer
 * at that address: em_btl_insert_named refuses the second). */
static int build_names(em_btl_module_t *m)
{
    m->names = em_name_map_create(m->npeers);
    if (!m->names)
        return -1;
    for (uint32_t v = 0; v < m->npeers; v++) {
        if (v == OPAL_PROC_MY_NAME.vpid)
            continue;
        opal_process_name_t pn = { .jobid = OPAL_PROC_MY_NAME.jobid, .vpid = v };
        struct em_btl_modex *mx = em_btl_read_modex(m, &pn);
        if (mx && m->index < mx->count && mx->link[m->index].nonce) {
            em_conn_name_t nm = name_in(mx, m->index);
            (void)em_name_map_put(m->names, &nm, v);
        }
        free(mx);
    }
    return 0;
}

/* engine number @p slot is process @p vpid */
static void map_slot(em_btl_module_t *m, uint32_t slot, uint32_t vpid)
{
    struct mca_btl_base_endpoint_t *ep = &m->eps[vpid];
    m->slot_vpid[slot] = vpid;
    if (ep->peer == EM_BTL_NO_PEER) {
        ep->peer = slot;
        ep->resolved = 1;
    }
}

bool em_btl_cb_admit(void *u, const struct em_conn_name *name)
{
    em_btl_module_t *m = u;
    if (!m->named || m->finalizing)
        return false;
    if (!m->names && build_names(m) != 0)
        return false;
    uint32_t v;
    return em_name_map_get(m->names, name, &v) && v < m->npeers && v != OPAL_PROC_MY_NAME.vpid;
}

void em_btl_cb_contact(void *u, uint32_t peer, bool again)
{
    em_btl_module_t *m = u;
    /* again: the peer bound us anew (it removed us: no Open MPI process
     * does; our operations to it from before ended with -EM_ECANCELED);
     * its number and process stay */
    (void)again;
    if (!m->named || peer >= m->nslots || m->slot_vpid[peer] != EM_BTL_NO_VPID)
        return; /* inserted by add_procs, or named before */
    em_conn_name_t nm;
    uint32_t v;
    if (em_engine_contact_name(m->engine, peer, &nm) != 0 || (!m->names && build_names(m) != 0) ||
        !em_name_map_get(m->names, &nm, &v) || v >= m->npeers)
        return; /* admitted, so found: not reached; its frames count as drop_unnamed */
    map_slot(m, peer, v);
}

int em_btl_insert_named(em_btl_module_t *m, struct mca_btl_base_endpoint_t *ep,
                        const struct em_btl_modex *mx)
{
    if (!mx->link[m->index].nonce) {
        em_btl_names_mismatch(m, ep->proc);
        return -1;
    }
    em_conn_name_t nm = name_in(mx, m->index);
    uint32_t slot;
    int rc = em_engine_contact_insert(m->engine, &nm, &slot);
    if (rc == 0 && m->slot_vpid[slot] != EM_BTL_NO_VPID && m->slot_vpid[slot] != ep->vpid)
        rc = -EM_EINVAL; /* another process published the same name */
    if (rc != 0) {
        fprintf(stderr,
                "ethermpi btl_%s on %s: cannot add peer %s on link %u (%s): another process "
                "of the job published the same link address, or a process at that address "
                "restarted; every process needs an address of its own\n",
                m->name, opal_process_info.nodename, OPAL_NAME_PRINT(ep->proc->proc_name), m->index,
                em_strerror(rc));
        fflush(stderr);
        return -1;
    }
    map_slot(m, slot, ep->vpid);
    return 0;
}

void em_btl_name_stats(em_btl_module_t *m)
{
    char line[1024];
    if (!m->named)
        return;
    em_engine_contact_stats_format(m->engine, line, sizeof line);
    opal_output(0, "[%s] btl_%s first contact: %s drop_unnamed %llu", opal_process_info.nodename,
                m->name, line, (unsigned long long)m->drop_unnamed);
}
