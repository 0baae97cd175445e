# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# ompi.sh - Open MPI's component directory (pkglibdir), asked of ompi_info,
# for the test scripts that load our BTLs next to Open MPI's own components
# (--mca mca_base_component_path "$OMPI_SYS_COMPONENTS:<build>/ompi/btl/X").
# ompi/meson.build asks the same question at configure time.  Sourced.
#
#   em_ompi_components   sets OMPI_SYS_COMPONENTS (and exports
#                        EM_OMPI_PKGLIBDIR, so scripts it starts do not ask
#                        again); on failure leaves it empty, sets
#                        EM_OMPI_ERROR (the cause) and returns 1
#   em_ompi_require      returns 0 when OMPI_SYS_COMPONENTS is set, else
#                        prints "<script>: <cause>" on stderr, returns 1
#
# EM_OMPI_PKGLIBDIR, when set, is used as is (another Open MPI, or a
# machine without ompi_info in PATH).  Call em_ompi_components before a
# script puts another MPI's bin directory first in PATH: the BTLs are
# built against the Open MPI pkg-config names.

em_ompi_components() {
	local out
	OMPI_SYS_COMPONENTS=""
	EM_OMPI_ERROR=""
	if [[ -z ${EM_OMPI_PKGLIBDIR:-} ]]; then
		if ! command -v ompi_info >/dev/null 2>&1; then
			EM_OMPI_ERROR="ompi_info not found in PATH: cannot ask Open MPI for its component directory (install openmpi-bin, or set EM_OMPI_PKGLIBDIR)"
			return 1
		fi
		out=$(ompi_info --path pkglibdir --parsable 2>&1)
		if [[ $out != path:pkglibdir:?* ]]; then
			EM_OMPI_ERROR="'ompi_info --path pkglibdir --parsable' said '${out:0:200}', not 'path:pkglibdir:<dir>'"
			return 1
		fi
		EM_OMPI_PKGLIBDIR=${out#path:pkglibdir:}
		export EM_OMPI_PKGLIBDIR
	fi
	if [[ ! -d $EM_OMPI_PKGLIBDIR ]]; then
		EM_OMPI_ERROR="Open MPI's component directory '$EM_OMPI_PKGLIBDIR' does not exist"
		return 1
	fi
	OMPI_SYS_COMPONENTS=$EM_OMPI_PKGLIBDIR
	return 0
}

em_ompi_require() {
	[[ -n ${OMPI_SYS_COMPONENTS:-} ]] && return 0
	echo "${0##*/}: ${EM_OMPI_ERROR:-em_ompi_components was not called}" >&2
	return 1
}
