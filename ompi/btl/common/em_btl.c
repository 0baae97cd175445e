/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl.c
 * BTL 3.1 component side over the ethermpi engine (see em_btl.h): checks
 * the parameters, opens the links with one engine each, publishes the
 * modex entry.  The module functions are in em_btl_ops.c, the engine
 * callbacks in em_btl_peer.c.
 */
#include "em_btl_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "opal/mca/btl/base/base.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

bool em_btl_named(const char *name)
{
    const char *sel = opal_btl_base_framework.framework_selection;
    if (!sel || !*sel || sel[0] == '^')
        return false;
    size_t n = strlen(name);
    for (const char *p = sel; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && 0 == strncmp(p, name, n))
            return true;
        p += k;
        if (*p == ',')
            p++;
    }
    return false;
}

void em_btl_add_help_dir(const void *symbol_in_component)
{
    Dl_info info;
    if (dladdr(symbol_in_component, &info) && info.dli_fname) {
        char *copy = strdup(info.dli_fname);
        if (copy) {
            opal_show_help_add_dir(dirname(copy));
            free(copy);
        }
    }
}

/* One link's module: engine, endpoints, fragment sizes. */
static int module_setup(em_btl_module_t *m, em_link_t *link, uint32_t jsize, char *err,
                        size_t errlen)
{
    em_btl_params_t *params = m->params;
    m->link = link;
    em_proto_cfg_t cfg;
    /* window, recovery, timers, congestion control, receive budget: the
     * settings, applied as every front end applies them */
    if (em_transport_proto_cfg(&params->s, params->kind, link->mtu, &cfg, err, errlen) != 0)
        return -1;
    /* every peer's key and ISN come from its handshake (named links) or its
     * modex entry (em_btl_set_peer_from): none is known, and no frame
     * accepted, before that */
    cfg.peers_need_set = 1;
    cfg.bind_source = 1;
    cfg.job_key = m->secret;
    cfg.isn = m->isn;
    /* receiver budget: no message longer than a sender of ours makes (+ the
     * order number) */
    cfg.max_msg = (uint32_t)m->super.btl_max_send_size + EM_ORDER_HDR;
    m->named = em_btl_link_named(m, link);
    if (m->named) {
        /* the handshake table's slots: one per other process of the job,
         * fixed (no ops.grow: the job's size is known); the engine's own
         * number lies above every slot (engine/contact.h "Self") */
        m->nslots = jsize > 1 ? jsize - 1 : 1;
        cfg.self = EM_PROTO_SELF_OUTSIDE;
        cfg.npeers = m->nslots;
    } else {
        m->nslots = jsize;
        cfg.self = OPAL_PROC_MY_NAME.vpid;
        cfg.npeers = jsize;
    }
    int e;
    m->engine = em_engine_create(link, &cfg, &em_btl_engine_ops, m, &e);
    if (!m->engine && e != EM_ENOMEM) {
        snprintf(err, errlen, "engine: %s (check rto/rto_max/window parameters)", em_strerror(e));
        return -1;
    }
    m->npeers = jsize;
    m->eps = m->engine ? calloc(jsize, sizeof *m->eps) : NULL;
    if (!m->eps) {
        /* the per-peer tables are the job size's only bound: say what was asked */
        size_t per = em_engine_peer_bytes(&cfg) + sizeof *m->eps;
        snprintf(err, errlen,
                 "out of memory for the per-peer tables of a job of %u processes: %.1f MiB "
                 "asked for link %u (%zu bytes per peer, idle; a peer's window comes on "
                 "first use); give each process more memory (ulimit -v, cgroup limits) "
                 "or run fewer processes per node",
                 jsize, (double)per * jsize / (1024.0 * 1024.0), m->index, per);
        return -1;
    }
    for (uint32_t i = 0; i < jsize; i++) {
        m->eps[i].vpid = i;
        m->eps[i].peer = m->named ? EM_BTL_NO_PEER : i;
    }
    if (m->named && em_btl_name_open(m, err, errlen) != 0)
        return -1;
    m->frag_cap[0] = (uint32_t)em_engine_frame_payload(m->engine);
    m->frag_cap[1] = (uint32_t)m->super.btl_max_send_size;
    if (m->frag_cap[1] < m->frag_cap[0])
        m->frag_cap[1] = m->frag_cap[0];
    if (m->super.btl_put_limit > em_engine_max_msg(m->engine))
        m->super.btl_put_limit = em_engine_max_msg(m->engine);
    em_btl_rma_limits(m);
    /* ob1 then asks prepare_src for every eager message; em_prepare_src()
     * decides which leave in place and which are copied */
    if (m->params->s.inplace_min > 0)
        m->super.btl_flags |= MCA_BTL_FLAGS_SEND_INPLACE;
    return 0;
}

/* finalize and free the sibling modules of @p first (init failed) */
static void drop_modules(em_btl_module_t *first)
{
    em_btl_module_t *n = first->next;
    first->next = NULL;
    em_btl_finalize(&first->super);
    while (n) {
        em_btl_module_t *k = n->next;
        em_btl_finalize(&n->super);
        free(n);
        n = k;
    }
}

/* Every setting of the component, checked against the table's ranges
 * and choices.  @return 0, or -1 after a help message naming the setting. */
static int check_params(const char *name, em_btl_params_t *params)
{
    char err[256];
    em_settings_normalize(&params->s); /* Open MPI's empty value is NULL: the default */
    if (em_settings_check(&params->s, params->front, err, sizeof err) != 0) {
        opal_show_help(HELP_FILE, "bad-setting", true, name, opal_process_info.nodename, err);
        return -1;
    }
    return 0;
}

/* This process's secret and first sequence number: from the kernel's
 * generator only (a guessable fallback would defeat their purpose).
 * @return 0, or -1 after a help message. */
static int draw_secret(em_btl_module_t *m, const char *name)
{
    char err[256];
    uint8_t rnd[12];
    ssize_t got;
    do {
        got = getrandom(rnd, sizeof rnd, 0);
    } while (got < 0 && errno == EINTR);
    if (got != (ssize_t)sizeof rnd) {
        snprintf(err, sizeof err,
                 "getrandom() failed (%s): the per-job secret cannot be drawn; "
                 "this kernel or sandbox must allow getrandom(2)",
                 got < 0 ? strerror(errno) : "short read");
        opal_show_help(HELP_FILE, "link-open-failed", true, name, opal_process_info.nodename, err,
                       name);
        return -1;
    }
    memcpy(&m->secret, rnd, 8);
    memcpy(&m->isn, rnd + 8, 4);
    if (!m->params->s.random_isn)
        m->isn = 0;
    return 0;
}

/* Striping over two or more links: one message order per peer, shared by
 * every module of the component (docs/design.md, "Open MPI BTL glue"). */
static int setup_order(em_btl_module_t *m, uint32_t jsize, const em_btl_params_t *params)
{
    m->order = calloc(jsize, sizeof *m->order);
    if (!m->order)
        return -1;
    for (uint32_t i = 0; i < jsize; i++) {
        m->order[i].o.max_held = params->s.order_max_held > 0 ? (uint32_t)params->s.order_max_held
                                                              : 0;
        m->order[i].o.max_bytes = params->s.order_max_mb > 0 ? (size_t)params->s.order_max_mb << 20
                                                             : 0;
    }
    for (em_btl_module_t *it = m; it; it = it->next) {
        it->order = m->order;
        /* a one-frame message stays one frame with its order number */
        if (it->frag_cap[0] > EM_ORDER_HDR)
            it->frag_cap[0] -= EM_ORDER_HDR;
    }
    return 0;
}

mca_btl_base_module_t **em_btl_init(em_btl_module_t *m, mca_btl_base_component_t *comp,
                                    const char *name, em_btl_params_t *params,
                                    em_btl_link_open_fn open_link, int *num_btls,
                                    bool enable_mpi_threads)
{
    char err[512] = "";
    int rc;

    *num_btls = 0;
    m->name = name;
    m->params = params;
    m->super.btl_component = comp;
    m->index = 0;
    m->next = NULL;
    m->order = NULL;
    m->lk = NULL;
    if (check_params(name, params) != 0)
        return NULL;
    /* MPI_THREAD_MULTIPLE: the locked module functions, installed before
     * the sibling modules copy m->super (docs/design.md, "Threads") */
    if (enable_mpi_threads && em_btl_use_lock(m) != 0) {
        opal_show_help(HELP_FILE, "link-open-failed", true, name, opal_process_info.nodename,
                       "pthread_mutex_init failed for the MPI_THREAD_MULTIPLE lock "
                       "(out of memory?)",
                       name);
        return NULL;
    }

    /* job size: peers are numbered by vpid, 32 bits as the protocol's peer
     * numbers and the wire's index are (EM_SRC_UNKNOWN, 2^32 - 1, is never a
     * vpid below the size); memory is the bound (module_setup says how much
     * the per-peer tables asked for when it is short) */
    opal_process_name_t wild = { .jobid = OPAL_PROC_MY_NAME.jobid, .vpid = OPAL_VPID_WILDCARD };
    uint32_t jsize = 0, *jsp = &jsize;
    OPAL_MODEX_RECV_VALUE(rc, OPAL_PMIX_JOB_SIZE, &wild, &jsp, OPAL_UINT32);
    if (OPAL_SUCCESS != rc || jsize == 0) {
        char v[32];
        snprintf(v, sizeof v, "%u", jsize);
        opal_show_help(HELP_FILE, "job-size", true, name, opal_process_info.nodename, v);
        return NULL;
    }

    if (draw_secret(m, name) != 0)
        return NULL;
    m->drop_tag = m->order_overflow = 0;
    m->packed_bytes = m->inplace_msgs = m->inplace_bytes = 0;

    /* one module per link: link 0 is @p m, the others are copies of its
     * (registered) parameters; a failure on any link disqualifies the
     * component, since the peers expect every link they were told of */
    struct em_btl_modex mx;
    memset(&mx, 0, sizeof mx);
    mx.version = EM_BTL_MODEX_VERSION;
    mx.secret = m->secret;
    mx.isn = m->isn;
    em_btl_module_t *last = NULL;
    unsigned n = 0, numbered = 0;
    for (; n < EM_BTL_MAX_LINKS; n++) {
        err[0] = 0;
        em_link_t *link = open_link(n, err, sizeof err);
        if (!link) {
            if (n > 0 && !err[0])
                break; /* no more links */
            if (!err[0])
                snprintf(err, sizeof err, "no link");
            goto fail_open;
        }
        em_btl_module_t *mod = m;
        if (n > 0) {
            mod = calloc(1, sizeof *mod);
            if (!mod) {
                em_link_close(link);
                snprintf(err, sizeof err, "out of memory");
                goto fail_open;
            }
            mod->super = m->super;
            mod->name = name;
            mod->params = params;
            mod->index = n;
            mod->secret = m->secret;
            mod->isn = m->isn;
            mod->lk = m->lk;
            last->next = mod;
        }
        last = mod;
        if (module_setup(mod, link, jsize, err, sizeof err) != 0)
            goto fail_open;
        mx.link[n].frame_max = link->mtu;
        mx.link[n].addr = link->local;
        mx.link[n].ep = mod->named ? mod->ep_index : 0;
        mx.link[n].nonce = mod->named ? mod->nonce : 0;
        numbered += !mod->named;
    }
    mx.count = n;
    if (!numbered) /* keys come from the handshakes: no key material published */
        mx.secret = mx.isn = 0;
    if (n >= 2 && setup_order(m, jsize, params) != 0) {
        snprintf(err, sizeof err,
                 "out of memory for the message order of a job of %u processes: %.1f MiB "
                 "asked (%zu bytes per peer); give each process more memory or stripe over "
                 "one link",
                 jsize, (double)sizeof *m->order * jsize / (1024.0 * 1024.0), sizeof *m->order);
        goto fail_open;
    }
    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &comp->btl_version, &mx, sizeof mx);
    if (OPAL_SUCCESS != rc)
        goto fail;

    mca_btl_base_module_t **mods = malloc(n * sizeof *mods);
    if (!mods)
        goto fail;
    unsigned k = 0;
    for (em_btl_module_t *it = m; it; it = it->next)
        mods[k++] = &it->super;
    *num_btls = (int)k;
    return mods;

fail_open:
    opal_show_help(HELP_FILE, "link-open-failed", true, name, opal_process_info.nodename, err,
                   name);
fail:
    drop_modules(m);
    return NULL;
}

int em_btl_progress(em_btl_module_t *m)
{
    /* several threads in opal_progress: one drives the engines, the others
     * return at once instead of queueing behind it */
    em_lock_t *lk = m->lk;
    if (lk && !em_lock_try(lk))
        return 0;
    int n = 0;
    for (; m; m = m->next)
        if (m->engine)
            n += em_engine_progress(m->engine);
    if (lk)
        em_lock_drop(lk);
    return n;
}
