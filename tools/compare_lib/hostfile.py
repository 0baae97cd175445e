# SPDX-License-Identifier: BSD-3-Clause
"""The hostfile backend of compare.py (--hostfile FILE): the MPI
benchmarks across real hosts, launched by `mpirun --hostfile FILE --map-by
node` from this host, instead of on the emulated cluster.

What it cannot run, with the reason in the row: transports and benchmarks
that need the emulated cluster's own wiring (a memif cable, AF_XDP on its
veths, its node daemons, the raw floor, a second link or another MTU
brought up by `emcluster up`), and the libfabric rows under the MPI
wheels (they launch through emcluster and tools/emc-hydra).  The rows it
writes carry cluster = "hostfile" (a variant field: they never replace the
emulated cluster's rows of the same name) and hosts = the hosts it read.

The programs and the build directory must be at the same path on every
host (a shared file system, or the same build copied), as mpirun starts
them by that path."""

import os
import shlex

CLUSTER_FIELD = "hostfile"


def read_hosts(path):
    """The host names of an Open MPI hostfile ("host [slots=N] ...", '#'
    comments), in order, each once.  Raises ValueError naming the file
    when it names no host, OSError when it cannot be read."""
    hosts = []
    with open(path) as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words and words[0] not in hosts:
                hosts.append(words[0])
    if not hosts:
        raise ValueError("hostfile %s names no host" % path)
    return hosts


def launch(hostfile, mpirun_args):
    """The argv prefix of one benchmark run: mpirun across the hostfile's
    hosts, one rank per host first (--map-by node), plus @p mpirun_args
    (one shell-quoted string: e.g. "--mca btl_tcp_if_include eth1")."""
    return (["mpirun", "--hostfile", os.path.abspath(hostfile), "--map-by", "node"]
            + shlex.split(mpirun_args or ""))


def not_applicable(transport, bench):
    """Why @p transport cannot run @p bench across real hosts, or None."""
    templates = [v for _, v in transport.mca] + list(transport.env.values())
    if transport.raw_vdev or transport.up_args or any("{prefix}" in v for v in templates):
        return ("%s needs the emulated cluster's wiring (memif cable, AF_XDP veth, node "
                "daemons or the raw floor): not on real hosts" % transport.name)
    if bench.up_args or "mtu" in bench.fields:
        return ("%s needs a cluster brought up for it (emcluster up %s): not on real hosts"
                % (bench.label, " ".join(transport.up_args_for(bench))))
    if "mpi" in bench.fields:
        return "%s launches through emcluster / emc-hydra: not on real hosts" % bench.label
    return None


def row_fields(hosts):
    """The fields every row of a hostfile run carries."""
    return {"cluster": CLUSTER_FIELD, "hosts": ",".join(hosts)}
