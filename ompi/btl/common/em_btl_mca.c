/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file em_btl_mca.c
 * The BTLs' MCA parameters, produced from the one settings table
 * (src/transport/settings.h): every row a component offers becomes
 * btl_<component>_<name>, with the table's default, help and level.  No
 * default is written here (as Open MPI's usnic passes each default inside
 * its registration call, the table carries them).
 */
#include "em_btl.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/show_help.h"

static mca_base_var_type_t mca_type(em_set_type_t t)
{
    switch (t) {
    case EM_SET_INT: return MCA_BASE_VAR_TYPE_INT;
    case EM_SET_BOOL: return MCA_BASE_VAR_TYPE_BOOL;
    case EM_SET_DOUBLE: return MCA_BASE_VAR_TYPE_DOUBLE;
    case EM_SET_STRING: break;
    }
    return MCA_BASE_VAR_TYPE_STRING;
}

int em_btl_register_params(mca_base_component_t *c, em_btl_params_t *p, unsigned front)
{
    size_t n;
    if (!EM_SETTINGS_ABI_OK()) {
        /* a component of another release than the installed libethermpi */
        opal_show_help(EM_BTL_HELP_FILE, "build-mismatch", true, c->mca_component_name,
                       opal_process_info.nodename ? opal_process_info.nodename : "?");
        return OPAL_ERROR;
    }
    const em_setting_t *t = em_settings_table(&n);
    em_settings_default(&p->s);
    p->front = front;
    for (size_t i = 0; i < n; i++) {
        if (!(t[i].fronts & front))
            continue;
        /* read-only: the engine is built from them once, at init; the
         * storage holds the default and receives the value */
        (void)mca_base_component_var_register(
            c, t[i].name, t[i].help, mca_type(t[i].type), NULL, 0, 0,
            (mca_base_var_info_lvl_t)(OPAL_INFO_LVL_1 + (t[i].level - 1)),
            MCA_BASE_VAR_SCOPE_READONLY, em_setting_ptr(&p->s, &t[i]));
    }
    return OPAL_SUCCESS;
}
