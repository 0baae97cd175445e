# SPDX-License-Identifier: BSD-3-Clause
"""Running the benchmark programs: transport and benchmark tables, command
lines, timeouts that kill the whole process tree, the emulated cluster."""

import datetime
import os
import platform
import re
import shlex
import signal
import subprocess
import time

from .table import ParseError, parse_bench_output
from .results import RunOutcome
from .btlstats import STATS_MCA, parse_counters
from .mpis import MPIS

# Open MPI's component directory in `mca` templates: filled in by
# Transport._subst with ompi_pkglibdir() unless the ctx names it
SYSTEM_MCA_DIR = "{ompi_pkglibdir}"
_OMPI_PKGLIBDIR = None


def ompi_pkglibdir():
    """Open MPI's component directory (pkglibdir), asked of
    `ompi_info --path pkglibdir --parsable` once (as ompi/meson.build does
    and tests/lib/ompi.sh for the shell scripts); EM_OMPI_PKGLIBDIR, when
    set, is used as is.  Raises RuntimeError naming the cause."""
    global _OMPI_PKGLIBDIR
    if _OMPI_PKGLIBDIR is None:
        d = os.environ.get("EM_OMPI_PKGLIBDIR")
        if not d:
            try:
                out = subprocess.run(["ompi_info", "--path", "pkglibdir", "--parsable"],
                                     capture_output=True, text=True, check=False).stdout.strip()
            except FileNotFoundError:
                raise RuntimeError("ompi_info not found in PATH: cannot ask Open MPI for its "
                                   "component directory (install openmpi-bin, or set "
                                   "EM_OMPI_PKGLIBDIR)") from None
            if not out.startswith("path:pkglibdir:") or out == "path:pkglibdir:":
                raise RuntimeError("'ompi_info --path pkglibdir --parsable' said %r, not "
                                   "'path:pkglibdir:<dir>'" % out[:200])
            d = out[len("path:pkglibdir:"):]
        _OMPI_PKGLIBDIR = d
    return _OMPI_PKGLIBDIR


class Transport:
    """One way of running MPI.  `mca` and `env` values may use {build}
    (absolute meson build dir), {iface} (the cluster's interface name) and
    {ompi_pkglibdir} (Open MPI's component directory, SYSTEM_MCA_DIR).
    `requires` lists files (templates too) that must exist, else the
    transport is recorded as skipped."""

    def __init__(self, name, mca, env=None, requires=(), note="", btl=None, max_nodes=None,
                 per_node=None, raw_vdev=None, up_args=(), mode=None, rdv_variants=False,
                 mtu_variants=False, max_mtu=None, max_mtu_note=None, framing_variants=False,
                 mpis=(), mpi_rows_only=False, names_variants=False):
        self.name = name
        self.mca = list(mca)
        self.env = dict(env or {})
        self.requires = list(requires)
        self.note = note
        self.btl = btl              # Open MPI BTL name, for per-BTL benchmark MCA ({btl})
        self.max_nodes = max_nodes  # e.g. a memif cable joins exactly 2 nodes
        self.per_node = per_node    # most ranks per node (dpdk direct mode: 1)
        self.raw_vdev = raw_vdev    # not MPI: tools/raw-floor on this DPDK device
        self.up_args = list(up_args)  # the cluster this transport needs (e.g. --mtu)
        self.mode = mode            # dpdk BTL mode ("direct"/"daemon"): benchmarks with a mode field
        self.rdv_variants = rdv_variants  # benchmarks with an rdv field (own queue vs daemon) apply
        # benchmarks with an mtu field (MTU 1500 and 9000) apply;
        # max_mtu: the largest MTU the transport can open (its rows for a
        # larger one run at this, and say so with max_mtu_note)
        self.mtu_variants = mtu_variants
        self.max_mtu = max_mtu
        self.max_mtu_note = max_mtu_note
        # benchmarks with a framing field (btl_dpdk_framing l2 / udp) apply
        self.framing_variants = framing_variants
        # the MPIs (mpis.MPIS) whose rows with field mpi this transport has
        # (the libfabric transports, each MPI's own tcp path, and
        # dpdk-memif under ompi4 as the goal's yardstick); mpi_rows_only: a
        # libfabric transport measured only in those rows (--mpi-rows)
        self.mpis = tuple(mpis)
        self.mpi_rows_only = mpi_rows_only
        # benchmarks with a names field (wire v3 "wire" against wire v2
        # "ids", same run) apply: the transports that can run both
        self.names_variants = names_variants

    def mtu_for(self, asked):
        """The MTU this transport's row for MTU @p asked runs at."""
        return min(asked, self.max_mtu) if self.max_mtu else asked

    def not_applicable(self, bench, nodes):
        """Why this transport cannot run `bench` on a cluster of `nodes`, or None."""
        if self.max_nodes and nodes and nodes > self.max_nodes:
            return "%s works on %d nodes at most (this phase has %d)" % (self.name, self.max_nodes, nodes)
        if self.per_node and nodes and bench.np > nodes * self.per_node:
            return "%s holds %d rank(s) per node; %s needs %d ranks on %d nodes" % (
                self.name, self.per_node, bench.label, bench.np, nodes)
        if self.raw_vdev and bench.name != "latency":
            return "%s is the raw L2 floor: latency only" % self.name
        if bench.mca and not self.btl:
            return "%s is not a BTL (%s sets BTL parameters)" % (self.name, bench.label)
        if (bench.fields.get("links") or 1) > 1 and self.name not in LINK_MCA:
            return "%s has no several-link setting (runner.LINK_MCA lists the transports that do)" % (
                self.name)
        if "mode" in bench.fields and bench.fields["mode"] != self.mode:
            return "%s is for the dpdk BTL in %s mode" % (bench.label, bench.fields["mode"])
        if "rdv" in bench.fields and not self.rdv_variants:
            return "%s compares dpdk-memif-daemon's rendezvous paths (own queue / through the daemon)" % (
                bench.label)
        if "framing" in bench.fields and not self.framing_variants:
            return "%s compares the dpdk BTL's framings (%s)" % (
                bench.label, ", ".join(t.name for t in TRANSPORTS if t.framing_variants))
        if "mpi" in bench.fields and bench.fields["mpi"] not in self.mpis:
            return "%s runs under %s only" % (self.name, ", ".join(self.mpis))
        if "mpi" in bench.fields and bench.fields["mpi"] in MPI_UNAVAILABLE:
            return MPI_UNAVAILABLE[bench.fields["mpi"]]
        if "names" in bench.fields and not self.names_variants:
            return "%s compares wire v3 and v2 (%s)" % (
                bench.label, ", ".join(t.name for t in TRANSPORTS if t.names_variants))
        if "mtu" in bench.fields and not self.mtu_variants:
            return "%s: the MTU rows are for the wires of a real network (%s)" % (
                bench.label, ", ".join(t.name for t in TRANSPORTS if t.mtu_variants))
        return None

    def up_args_for(self, bench):
        """`emcluster up` arguments of the cluster (@p bench on this
        transport) needs: the benchmark's, then the transport's; for a row
        with an mtu field, one --mtu (the transport's limit applied)."""
        own = list(self.up_args)
        if "mtu" not in bench.fields:
            return list(bench.up_args) + own
        out = []
        for args in (bench.up_args, own):
            i = 0
            while i < len(args):
                if args[i] == "--mtu":
                    i += 2
                    continue
                out.append(args[i])
                i += 1
        return out + ["--mtu", str(self.mtu_for(bench.fields["mtu"]))]

    def row_fields(self, bench):
        """The variant fields of this transport's rows of @p bench: the
        benchmark's, with mtu = the MTU the row runs at, mtu_requested = the
        MTU of the comparison it belongs to and, where they differ, why."""
        fields = dict(bench.fields)
        if "mtu" in fields:
            asked = fields["mtu"]
            fields["mtu"] = self.mtu_for(asked)
            fields["mtu_requested"] = asked
            if fields["mtu"] != asked:
                fields["mtu_note"] = self.max_mtu_note or "largest MTU %s opens" % self.name
        return fields

    def _subst(self, s, ctx):
        if "{ompi_pkglibdir}" in s and "ompi_pkglibdir" not in ctx:
            ctx = dict(ctx, ompi_pkglibdir=ompi_pkglibdir())
        return s.format(**ctx)

    def mca_args(self, ctx):
        out = []
        for k, v in self.mca:
            out += ["--mca", k, self._subst(v, ctx)]
        return out

    def env_vars(self, ctx):
        return {k: self._subst(v, ctx) for k, v in self.env.items()}

    def skip_reason(self, ctx):
        for req in self.requires:
            path = self._subst(req, ctx)
            if not os.path.exists(path):
                return "%s not found (component not built)" % path
        return None


def _dpdk(name, mca, requires=(), **kw):
    """A transport over our dpdk BTL: the common selection plus @p mca."""
    return Transport(name,
                     [("pml", "ob1"), ("btl", "self,vader,dpdk"),
                      ("mca_base_component_path", SYSTEM_MCA_DIR + ":{build}/ompi/btl/dpdk")]
                     + list(mca),
                     requires=["{build}/ompi/btl/dpdk/mca_btl_dpdk.so"] + list(requires),
                     btl="dpdk", **kw)


# daemon mode: the node's emd socket; the ranks yield when idle (on 2
# shared cores a spinning rank starves its node's daemon: ms latencies)
DAEMON_MCA = [("btl_dpdk_mode", "daemon"),
              ("btl_dpdk_emd_socket", "/run/ethermpi/{prefix}/emd/%h.sock"),
              ("mpi_yield_when_idle", "1")]


# emcluster's default MTU: the rows without an mtu field ran at this
# (AF_XDP transports at AFXDP_MAX_MTU)
DEFAULT_MTU = 9000
# the MTUs of the MTU rows: Ethernet's default and jumbo frames
MTUS = (1500, 9000)
# The largest MTU AF_XDP opens on a veth today: a frame plus the kernel's
# XDP headroom must fit one page-sized UMEM chunk (src/link/dpdk/port.c).  Raise it
# here when the link learns to open more.
AFXDP_MAX_MTU = 3402
AFXDP_MTU_NOTE = ("AF_XDP on a veth opens at most MTU %d (a frame and the kernel's XDP "
                  "headroom must fit one 4 KiB UMEM chunk): its row for MTU 9000 ran at %d"
                  % (AFXDP_MAX_MTU, AFXDP_MAX_MTU))


# the libfabric provider: the MPIs the mpi rows cannot run under in this invocation
# ({mpi: reason}, e.g. a wheel not installed); filled by compare.py
MPI_UNAVAILABLE = {}

# a libfabric transport under Open MPI: pml cm + mtl ofi.  Open MPI's default
# provider exclude list names tcp and udp (and so the layered tcp;ofi_rxm):
# only shm is kept out, FI_PROVIDER chooses (docs/ofi.md).  MPICH ignores
# these and runs ch4's ofi netmod (mpis.launch).
OFI_MCA = [("pml", "cm"), ("mtl", "ofi"), ("mtl_ofi_provider_exclude", "shm")]
# the ethermpi provider from the build dir (prov/): libfabric loads it from
# FI_PROVIDER_PATH, Debian's and the wheels' alike
ETHERMPI_ENV = {"FI_PROVIDER": "ethermpi", "FI_PROVIDER_PATH": "{build}/prov"}
# Open MPI's mtl ofi inserts a peer when it first sends to it; ethermpi
# accepts a first message from a peer in no AV (docs/ofi.md, "First
# contact"), so no mpi_add_procs_cutoff
ETHERMPI_MCA = list(OFI_MCA)


# The transport table: one entry per transport compared (the row names of
# results/compare.json are a contract: add entries, never rename one).
TRANSPORTS = [
    Transport("tcp", [("pml", "ob1"), ("btl", "self,vader,tcp")], btl="tcp", mtu_variants=True,
              mpis=("ompi4", "ompi5"),
              note="Open MPI tcp BTL over the kernel stack"),
    Transport("rudp",
              [("pml", "ob1"), ("btl", "self,vader,rudp"),
               ("mca_base_component_path", SYSTEM_MCA_DIR + ":{build}/ompi/btl/rudp")],
              requires=["{build}/ompi/btl/rudp/mca_btl_rudp.so"], btl="rudp", mtu_variants=True,
              names_variants=True,
              note="ethermpi reliable-UDP BTL ([dse-rudp])"),
    # [dpdk-btl]'s BTL on the memif "cable" of a 2-node cluster (emcluster
    # writes each node's end into <rundir>/dpdk/<node>.memif); direct mode:
    # each process owns its node's DPDK port, so one rank per node.
    _dpdk("dpdk-memif", [("btl_dpdk_vdev", "@/run/ethermpi/{prefix}/dpdk/%h.memif")],
              max_nodes=2, per_node=1, mode="direct", framing_variants=True, mpis=("ompi4",),
              names_variants=True,
              note="ethermpi dpdk BTL over a memif cable (kernel bypass, [dpdk-btl])"),
    # daemon mode (docs/daemon.md): one emd per node owns the cable end and
    # the ranks attach to it over shared memory; 'up --emd' starts the
    # daemons.  The ranks yield when idle: on 2 shared cores a spinning rank
    # starves its node's daemon (ms latencies; measured in docs/daemon.md).
    # Rendezvous (put) frames go on each rank's own queue of the port (the
    # rank a DPDK secondary of its daemon; btl_dpdk_bulk_queue auto): the
    # paper's design.  The rows with field rdv compare the two paths.
    _dpdk("dpdk-memif-daemon", DAEMON_MCA, requires=["{build}/src/emd"],
              max_nodes=2, up_args=["--emd", "memif"], mode="daemon", rdv_variants=True,
              note="ethermpi dpdk BTL, daemon mode: emd owns the memif cable end, rendezvous "
                   "data on each rank's own queue ([dpdk-btl] §4.1-4.2)"),
    Transport("raw-memif", [], raw_vdev="@/run/ethermpi/{prefix}/dpdk/%h.memif",
              requires=["{build}/bench/raw_pingpong"], max_nodes=2,
              note="raw L2 ping-pong on the same memif cable, no protocol: the floor"),
    # the same BTL over AF_XDP on the veth tcp uses: what a user without a
    # DPDK NIC runs.  The cluster's MTU is what one page-sized UMEM frame
    # holds (src/link/dpdk/port.c); the tcp rows come from the 9000-byte cluster,
    # which is tcp's better case (docs/benchmarks.md).
    # Its MTU rows: 1500, and for 9000 the largest MTU it opens on a veth.
    _dpdk("dpdk-afxdp", [("btl_dpdk_vdev", "@/run/ethermpi/{prefix}/dpdk/%h.afxdp")],
              per_node=1, up_args=["--mtu", str(AFXDP_MAX_MTU)], mode="direct",
              mtu_variants=True, max_mtu=AFXDP_MAX_MTU, max_mtu_note=AFXDP_MTU_NOTE,
              framing_variants=True,
              note="ethermpi dpdk BTL over AF_XDP on the veth (kernel carries the frames)"),
    # daemon mode over AF_XDP: emd is the only AF_XDP user of each veth
    # (one process per interface is all libxdp allows here), the ranks
    # attach to it; put frames go through the daemon too (docs/daemon.md)
    _dpdk("dpdk-afxdp-daemon", DAEMON_MCA, requires=["{build}/src/emd"],
              up_args=["--mtu", str(AFXDP_MAX_MTU), "--emd", "afxdp"], mode="daemon",
              note="ethermpi dpdk BTL, daemon mode: emd owns the AF_XDP socket of each veth"),
    Transport("raw-afxdp", [], raw_vdev="@/run/ethermpi/{prefix}/dpdk/%h.afxdp",
              requires=["{build}/bench/raw_pingpong"], max_nodes=2,
              up_args=["--mtu", str(AFXDP_MAX_MTU)],
              note="raw L2 ping-pong over AF_XDP on the same veth, no protocol: the floor"),
    # the rudp BTL on the native AF_XDP link (btl_rudp_link xdp, no DPDK):
    # one rank per node (the link binds the interface's queue), the cluster's
    # own MTU (multi-buffer frames), the filter from the build; measured in
    # the --mpi-rows runs (under ompi4), so the default run stays as it was
    Transport("rudp-xdp",
              [("pml", "ob1"), ("btl", "self,vader,rudp"),
               ("mca_base_component_path", SYSTEM_MCA_DIR + ":{build}/ompi/btl/rudp"),
               ("btl_rudp_link", "xdp"), ("btl_rudp_if_include", "{iface}"),
               ("btl_rudp_xdp_prog", "{build}/data/xdp_drop.o")],
              requires=["{build}/ompi/btl/rudp/mca_btl_rudp.so", "{build}/data/xdp_drop.o"],
              btl="rudp", per_node=1, mtu_variants=True, mpis=("ompi4",), mpi_rows_only=True,
              note="ethermpi rudp BTL on the native AF_XDP link (no DPDK)"),
    Transport("ofi-rxd",
              [("pml", "cm"), ("mtl", "ofi"), ("mtl_ofi_provider_include", "udp;ofi_rxd"),
               # libfabric 1.17 RxD segfaults (NULL deref in its progress) in
               # Open MPI's default recursive-doubling MPI_Barrier with 3 ranks;
               # the linear barrier works.  Barriers are never timed.
               ("coll_tuned_use_dynamic_rules", "1"), ("coll_tuned_barrier_algorithm", "1")],
              # Open MPI excludes udp unless named; FI_PROVIDER keeps libfabric
              # from falling back to another provider, FI_UDP_IFACE keeps the
              # udp provider off loopback inside the cluster namespaces.
              env={"FI_PROVIDER": "udp,ofi_rxd", "FI_UDP_IFACE": "{iface}"},
              note="libfabric RxD (reliable datagram) over the udp provider"),
    # the libfabric provider: libfabric's tcp;ofi_rxm, MPICH's own tcp path (ch4:ofi) and
    # the reference for the ethermpi provider under every MPI
    Transport("ofi-tcp", OFI_MCA, env={"FI_PROVIDER": "tcp;ofi_rxm", "FI_TCP_IFACE": "{iface}"},
              mpis=MPIS, mpi_rows_only=True, mtu_variants=True,
              note="libfabric tcp;ofi_rxm (Open MPI mtl ofi, MPICH ch4:ofi)"),
    # the ethermpi provider (prov/, docs/ofi.md) under every MPI: on kernel
    # UDP over the veth, on the memif cable (DPDK; one process owns its
    # node's end: one rank per node) and over AF_XDP on the veth
    Transport("ofi-ethermpi-udp", ETHERMPI_MCA,
              env=dict(ETHERMPI_ENV, FI_ETHERMPI_IF_INCLUDE="{iface}"),
              requires=["{build}/prov/libethermpi-fi.so"], mpis=MPIS, mpi_rows_only=True,
              mtu_variants=True, names_variants=True,
              note="ethermpi libfabric provider on kernel UDP"),
    Transport("ofi-ethermpi-memif", ETHERMPI_MCA,
              env=dict(ETHERMPI_ENV, FI_ETHERMPI_LINK="dpdk",
                       FI_ETHERMPI_VDEV="@/run/ethermpi/{prefix}/dpdk/%h.memif"),
              requires=["{build}/prov/libethermpi-fi.so"], mpis=MPIS, mpi_rows_only=True,
              max_nodes=2, per_node=1, names_variants=True,
              note="ethermpi libfabric provider on the memif cable (kernel bypass)"),
    Transport("ofi-ethermpi-afxdp", ETHERMPI_MCA,
              env=dict(ETHERMPI_ENV, FI_ETHERMPI_LINK="dpdk",
                       FI_ETHERMPI_VDEV="@/run/ethermpi/{prefix}/dpdk/%h.afxdp"),
              requires=["{build}/prov/libethermpi-fi.so"], mpis=MPIS, mpi_rows_only=True,
              per_node=1, up_args=["--mtu", str(AFXDP_MAX_MTU)],
              mtu_variants=True, max_mtu=AFXDP_MAX_MTU, max_mtu_note=AFXDP_MTU_NOTE,
              note="ethermpi libfabric provider over AF_XDP on the veth"),
    # the native AF_XDP link (no DPDK): multi-buffer frames, so the cluster's
    # own MTU (9000) and not AF_XDP-through-DPDK's one page
    Transport("ofi-ethermpi-xdp", ETHERMPI_MCA,
              env=dict(ETHERMPI_ENV, FI_ETHERMPI_LINK="xdp", FI_ETHERMPI_IF_INCLUDE="{iface}",
                       EM_XDP_PROG="{build}/data/xdp_drop.o"),
              requires=["{build}/prov/libethermpi-fi.so", "{build}/data/xdp_drop.o"],
              mpis=MPIS, mpi_rows_only=True, per_node=1, mtu_variants=True,
              note="ethermpi libfabric provider on the native AF_XDP link (no DPDK)"),
]


# Per transport: the MCA parameters that make it use both links of a
# `--links 2` cluster (one BTL module per interface or memif cable; ob1
# stripes over them).  A value replaces the transport's own value of the
# same parameter (btl_dpdk_vdev), templates as in Transport.  Benchmarks
# with a "links" field above 1 are skipped, with the reason, for transports
# not listed.
LINK_MCA = {
    "tcp": [("btl_tcp_if_include", "eth0,eth1")],
    "rudp": [("btl_rudp_if_include", "eth0,eth1")],
    "dpdk-memif": [("btl_dpdk_vdev",
                    "@/run/ethermpi/{prefix}/dpdk/%h.memif;@/run/ethermpi/{prefix}/dpdk/%h.memif1")],
    "dpdk-afxdp": [("btl_dpdk_vdev",
                    "@/run/ethermpi/{prefix}/dpdk/%h.afxdp;@/run/ethermpi/{prefix}/dpdk/%h.afxdp1")],
}


class Benchmark:
    def __init__(self, name, program, np, unit, pattern=None, args=(), nodes=None,
                 env=None, mpirun_args=(), mca=(), fields=None, up_args=(), transport_mca=None,
                 top_fields=(), counters=(), transport_env=None):
        self.name = name          # benchmark name in the JSON rows
        self.program = program    # executable in <build>/bench/mpi
        self.np = np
        self.unit = unit          # primary unit the program must report
        self.pattern = pattern
        self.args = list(args)
        self.nodes = nodes        # cluster size; default: one node per rank (>= 2)
        self.env = dict(env or {})            # e.g. EMC_SLOTS for several ranks per node
        self.mpirun_args = list(mpirun_args)
        self.mca = list(mca)      # (name, value) with {btl}: per-BTL parameters
        # extra row fields naming this variant (results.VARIANT_FIELDS, e.g.
        # {"links": 2}); part of the combination key
        self.fields = dict(fields or {})
        # extra `emcluster up` arguments this benchmark's cluster needs
        # (e.g. --links 2); benchmarks with different up_args run in
        # different phases
        self.up_args = list(up_args)
        # {transport name: [(name, value), ...]}: MCA parameters for one
        # transport only, replacing its own value of the same parameter (e.g.
        # the interface or device list on a 2-link cluster); see mca_for()
        self.transport_mca = {k: list(v) for k, v in (transport_mca or {}).items()}
        # {transport name: {VAR: value}}: environment for one transport only
        # (the provider's FI_ETHERMPI_* settings), over the transport's own
        self.transport_env = {k: dict(v) for k, v in (transport_env or {}).items()}
        # secondary columns also copied to the row's top level (halo-app:
        # compute_s next to the primary sync time)
        self.top_fields = list(top_fields)
        # BTL counters (btlstats) to read from the ranks' print_stats lines
        # on the transports that print them (btlstats.STATS_MCA), as row
        # fields: e.g. rudp bw's spurious_retx
        self.counters = list(counters)
        # the table name the program prints (variants reuse a program)
        self.table = name.split("-")[0] if name.startswith("latency-") else name

    def mca_for(self, transport, ctx):
        """The transport's "--mca NAME VALUE" arguments with this benchmark's
        transport_mca entries for it applied: a parameter the transport sets
        gets the new value (Open MPI refuses a parameter given twice), others
        are appended."""
        args = transport.mca_args(ctx)
        extra = list(self.transport_mca.get(transport.name, []))
        if self.counters:
            extra += STATS_MCA.get(transport.name, [])
        for k, v in extra:
            v = v.format(**ctx)
            for i in range(1, len(args), 3):     # "--mca", name, value
                if args[i] == k:
                    args[i + 1] = v
                    break
            else:
                args += ["--mca", k, v]
        return args

    def env_for(self, transport, ctx):
        """The transport's environment with this benchmark's transport_env
        entries for it applied."""
        env = transport.env_vars(ctx)
        env.update({k: v.format(**ctx) for k, v in self.transport_env.get(transport.name, {}).items()})
        return env

    @property
    def label(self):
        base = self.name if self.pattern is None else "%s@%s" % (self.name, self.pattern)
        for k, v in sorted(self.fields.items()):
            base += ",%s=%s" % (k, v)
        return base


# bw rows count the receiver's spurious retransmissions (frames it already
# had) where the BTL prints them: the goal at zero loss is 0
BW_COUNTERS = ("spurious_retx",)

# the names rows' variants: wire v3 (named) and wire v2 (numbered)
NAMES = ("wire", "ids")

# the collectives' rows (name, program) and their pattern: 4 ranks, 2 per node
COLL_BENCHMARKS = (("allreduce", "em_allreduce"), ("alltoall", "em_alltoall"))
COLL_PATTERN = "4 ranks/2 nodes"

BENCHMARKS = [
    Benchmark("latency", "em_latency", 2, "us"),
    Benchmark("bw", "em_bw", 2, "MB/s", counters=BW_COUNTERS),
    Benchmark("bibw", "em_bibw", 2, "MB/s"),
    Benchmark("burst", "em_burst", 2, "us/msg", pattern="1:1"),
    Benchmark("burst", "em_burst", 3, "us/msg", pattern="2:1"),
    Benchmark("pingpong", "em_pingpong", 2, "us/rt", pattern="1:1"),
    Benchmark("pingpong", "em_pingpong", 3, "us/rt", pattern="2:1"),
    # [dpdk-btl] Fig. 11: every size forced through one protocol.  Eager up to
    # 64 KiB (the largest eager message both tcp and our BTLs take by
    # default); rendezvous from 0 B (eager limit = ob1's header alone).
    Benchmark("latency-eager", "em_latency", 2, "us", args=["-m", "0:65536"],
              mca=[("btl_{btl}_eager_limit", "65664"), ("btl_{btl}_max_send_size", "65664")]),
    Benchmark("latency-rndv", "em_latency", 2, "us",
              mca=[("btl_{btl}_eager_limit", "128"), ("btl_{btl}_rndv_eager_limit", "128")]),
    # [dse-rudp]'s scaling argument: descriptors per process with 16 ranks on
    # 2 nodes (8 per node, so tcp needs a connection per remote rank); the
    # ranks oversubscribe 2 cores, so they yield when idle.
    Benchmark("sockets", "em_sockets", 16, "count", pattern="16 ranks/2 nodes", nodes=2,
              env={"EMC_SLOTS": "8"}, mpirun_args=["--mca", "mpi_yield_when_idle", "1"]),
    # [dpdk-btl]'s argument for the daemon: the receiver computes 100 ms
    # without MPI calls while the sender bursts 10,000 eager messages;
    # median = completion seconds, plus drops and retransmits
    # (the daemon transport makes its ranks yield when idle; direct mode's
    # two ranks on two cores do not need to)
    Benchmark("compute-burst", "em_compute_burst", 2, "s", fields={"mode": "direct"}),
    Benchmark("compute-burst", "em_compute_burst", 2, "s", fields={"mode": "daemon"}),
] + [
    # collectives with 2 ranks per node (OSU's osu_allreduce / osu_alltoall;
    # the brief: part of every comparison): 4 ranks on 2 nodes share this
    # machine's 2 cores, so they yield when idle, as the sockets row's do
    Benchmark(name, prog, 4, "us", pattern=COLL_PATTERN, nodes=2, env={"EMC_SLOTS": "2"},
              mpirun_args=["--mca", "mpi_yield_when_idle", "1"])
    for name, prog in COLL_BENCHMARKS
] + [
    # threads (docs/design.md "Threads"): the message rate of 1 and 2
    # threads per rank, each on its own communicator under
    # MPI_THREAD_MULTIPLE (field threads), 8 B - 4 KiB.  Two threads per
    # rank on two nodes are 4 threads on this machine's 2 cores, so the
    # ranks yield when idle (as the collectives' 4 ranks do); the 1-thread
    # rows too, so that the two compare
    Benchmark("mt-rate", "em_mt_rate", 2, "msg/s", args=["-T", str(n)], fields={"threads": n},
              mpirun_args=["--mca", "mpi_yield_when_idle", "1"])
    for n in (1, 2)
] + [
    # ... and what asking for MPI_THREAD_MULTIPLE costs a single-threaded
    # ping-pong (field thread_level): the same program with MPI_Init
    # ("single") and with MPI_Init_thread(MULTIPLE) ("multiple"), in the
    # same run, so that the two compare (the transports lock only when a
    # job asks for threads)
    Benchmark("latency-mt", "em_latency", 2, "us", args=["-m", "0:4096"],
              mpirun_args=["-x", "EM_BENCH_THREAD=%s" % level],
              fields={"thread_level": level})
    for level in ("single", "multiple")
] + [
    # one-sided MPI (docs/design.md "One-sided MPI"): the latency of one
    # operation and its MPI_Win_flush on a window of rank 1's, passive
    # target, each MPI's default one-sided component; tcp and ofi-rxd (the
    # cm PML) with osc pt2pt, the best they can do (Debian's Open MPI turns
    # pt2pt off, and osc rdma cannot span nodes without a BTL with atomics)
    Benchmark("osc-" + op, "em_osc", 2, "us", args=sizes + [op],
              transport_mca={t: [("osc", "pt2pt")] for t in ("tcp", "ofi-rxd")})
    for op, sizes in (("put", ["-m", "8:65536"]), ("get", ["-m", "8:65536"]),
                      ("fop", ["-m", "8:8"]), ("cas", ["-m", "8:8"]))
] + [
    # daemon mode: dpdk-memif-daemon's rendezvous data on the rank's own queue
    # (required: btl_dpdk_bulk_queue on) against the old path through both
    # daemons (off); field rdv = own-queue / daemon
    Benchmark(name, prog, 2, unit, fields={"rdv": rdv},
              transport_mca={"dpdk-memif-daemon": [("btl_dpdk_bulk_queue", val)]})
    for name, prog, unit in (("latency", "em_latency", "us"), ("bw", "em_bw", "MB/s"))
    for rdv, val in (("own-queue", "on"), ("daemon", "off"))
] + [
    # [bds] (docs/halo.md): 10 boundary items x 10,000 repetitions of
    # 64 B - 9,000 B with em_halo's persistent requests, on 1 and on 2 links
    # between the two nodes.  tcp stripes over both interfaces when given
    # both (LINK_MCA), our BTLs open one module per interface / memif cable.
    Benchmark("halo-" + pat, "em_halo", 2, "MB/s", args=["-p", pat], fields={"links": links},
              up_args=["--links", "2"] if links == 2 else [],
              transport_mca=LINK_MCA if links == 2 else None)
    for pat in ("oneway", "twoway", "alternating") for links in (1, 2)
] + [
    # the DDM-BDS sample program ([bds] Fig. 15): median = synchronisation
    # seconds, compute_s = computation seconds (means over the ranks)
    # Two grids: the default one computes ~5x longer than it synchronises,
    # so its sync time is mostly the two ranks' skew on 2 shared cores (the
    # same for every transport); the 256x256x18 one (8 planes of 512 KiB
    # per rank) has tcp synchronising about as long as it computes, like
    # [bds]'s program, where halving sync cut the run by 14 %.
    Benchmark("halo-app", "../../apps/halo/em_halo_app", 2, "s", pattern="128x128x66",
              fields={"links": 1}, top_fields=["compute_s"]),
    Benchmark("halo-app", "../../apps/halo/em_halo_app", 2, "s", pattern="256x256x18",
              args=["-x", "256", "-y", "256", "-z", "18"], fields={"links": 1},
              top_fields=["compute_s"]),
] + [
    # the wires of a real network at Ethernet's default MTU and
    # with jumbo frames, each on a cluster brought up at that MTU (the
    # transport's max_mtu applied: Transport.up_args_for / row_fields).
    # The rows without mtu keep their meaning: DEFAULT_MTU, AF_XDP at its max.
    Benchmark(name, prog, 2, unit, fields={"mtu": mtu}, up_args=["--mtu", str(mtu)],
              counters=BW_COUNTERS if name == "bw" else ())
    for name, prog, unit in (("latency", "em_latency", "us"), ("bw", "em_bw", "MB/s"),
                             ("bibw", "em_bibw", "MB/s"))
    for mtu in MTUS
] + [
    # the dpdk BTL's framings (l2 and UDP/IPv4) on the flat cluster, l2 (raw
    # Ethernet, the rows without a framing field) against udp (UDP/IPv4
    # headers and checksums on every frame: what a routed or cloud network
    # needs); the target is <= 0.1 us of small-message latency on memif
    Benchmark(name, prog, 2, unit, fields={"framing": f},
              transport_mca={t: [("btl_dpdk_framing", f)] for t in ("dpdk-memif", "dpdk-afxdp")},
              counters=BW_COUNTERS if name == "bw" else ())
    for name, prog, unit in (("latency", "em_latency", "us"), ("bw", "em_bw", "MB/s"))
    for f in ("l2", "udp")
] + [
    # the libfabric provider beside each MPI's own tcp path, under
    # Debian's Open MPI 4.1, the Open MPI 5 and the MPICH 5 wheels (field
    # mpi; mpis.py compiles the wheels' programs).  Only with --mpi-rows.
    Benchmark(name, prog, 2, unit, fields={"mpi": mpi})
    for name, prog, unit in (("latency", "em_latency", "us"), ("bw", "em_bw", "MB/s"),
                             ("bibw", "em_bibw", "MB/s"))
    for mpi in MPIS
] + [
    # ... and the collectives with 2 ranks per node under each MPI
    Benchmark(name, prog, 4, "us", pattern=COLL_PATTERN, nodes=2, env={"EMC_SLOTS": "2"},
              mpirun_args=["--mca", "mpi_yield_when_idle", "1"], fields={"mpi": mpi})
    for name, prog in COLL_BENCHMARKS
    for mpi in MPIS
] + [
    # ... and at MTU 1500, Ethernet's default, on the transports with MTU
    # rows (the rows without mtu ran at DEFAULT_MTU).  With --mpi-rows.
    Benchmark(name, prog, 2, unit, fields={"mpi": mpi, "mtu": 1500}, up_args=["--mtu", "1500"])
    for name, prog, unit in (("latency", "em_latency", "us"), ("bw", "em_bw", "MB/s"),
                             ("bibw", "em_bibw", "MB/s"))
    for mpi in MPIS
] + [
    # wire v3 (names wire: named by address, first contact) against wire
    # v2 (names ids: numbered, keys from the launcher's exchange), both
    # asked for explicitly, alternating in one run (only with --names-rows,
    # runner.select_names_rows): the BTLs
    # (latency, windowed bandwidth, and the collectives with 2 ranks per
    # node where the transport holds them) ...
    Benchmark(name, prog, np, unit, pattern=pat, nodes=2, fields={"names": n},
              env={"EMC_SLOTS": "2"} if np > 2 else None,
              mpirun_args=["--mca", "mpi_yield_when_idle", "1"] if np > 2 else (),
              transport_mca={"rudp": [("btl_rudp_names", n)],
                             "dpdk-memif": [("btl_dpdk_names", n)]})
    for name, prog, np, unit, pat in (("latency", "em_latency", 2, "us", None),
                                      ("bw", "em_bw", 2, "MB/s", None),
                                      ("allreduce", "em_allreduce", 4, "us", COLL_PATTERN))
    for n in NAMES
] + [
    # ... and the libfabric provider under the Open MPI 5 wheel (with
    # --mpi-rows too)
    Benchmark(name, prog, 2, unit, fields={"mpi": "ompi5", "names": n},
              transport_env={t: {"FI_ETHERMPI_NAMES": n}
                             for t in ("ofi-ethermpi-udp", "ofi-ethermpi-memif")})
    for name, prog, unit in (("latency", "em_latency", "us"), ("bw", "em_bw", "MB/s"))
    for n in NAMES
]


def select(items, spec, key, what):
    """Filters a table by a comma list (None = all).  Benchmarks match by
    name ("burst") or name@pattern ("burst@2:1")."""
    if not spec:
        return list(items)
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    out = []
    for w in wanted:
        hit = [it for it in items if w in key(it)]
        if not hit:
            raise SystemExit("unknown %s %r (known: %s)" % (
                what, w, ", ".join(sorted({k for it in items for k in key(it)}))))
        out += [h for h in hit if h not in out]
    return [it for it in items if it in out]


def combos(transports, benches):
    """The (transport, benchmark) pairs a run measures: every pair but the
    MTU rows of transports without them (not a skipped row each: those
    would only repeat that tcp, rudp and dpdk-afxdp are the ones with MTU
    rows under every MTU table), likewise the mpi rows of transports that
    do not run under that MPI, and the non-mpi rows of mpi_rows_only ones."""
    def has(t, b):
        if "names" in b.fields and not t.names_variants:
            return False
        if "mpi" in b.fields:
            return b.fields["mpi"] in t.mpis and ("mtu" not in b.fields or t.mtu_variants)
        return not t.mpi_rows_only and ("mtu" not in b.fields or t.mtu_variants)
    return [(t, b) for t in transports for b in benches if has(t, b)]


def select_mpi_rows(benches, only):
    """The mpi rows (field mpi, the libfabric provider's rows) run only when asked (@p only:
    --mpi-rows, and then nothing else): they need the wheels' venvs."""
    out = [b for b in benches if ("mpi" in b.fields) == bool(only)]
    if not out:
        raise SystemExit("no benchmark left after --mpi-rows (the mpi rows are %s)"
                         % ", ".join(sorted({b.name for b in BENCHMARKS if "mpi" in b.fields})))
    return out


def select_names_rows(benches, only):
    """The rows comparing wire v3 and v2 (field names) run only when asked
    (@p only: --names-rows, and then nothing else): a targeted comparison,
    kept out of the full run's time."""
    return [b for b in benches if ("names" in b.fields) == bool(only)]


def select_mtu_rows(benches, only, mtus, none):
    """The benchmarks after the MTU options: @p only = just the MTU rows,
    @p none = none of them, @p mtus = comma list of the MTUs to run (None =
    all of MTUS)."""
    if only and none:
        raise SystemExit("--mtu-rows and --no-mtu-rows contradict each other")
    keep = set(MTUS)
    if mtus:
        try:
            keep = {int(x) for x in mtus.split(",") if x.strip()}
        except ValueError:
            raise SystemExit("--mtus wants a comma list of numbers, got %r" % mtus) from None
        unknown = keep - set(MTUS)
        if unknown:
            raise SystemExit("--mtus: no MTU rows for %s (known: %s; other MTUs: --mtu M "
                             "for the whole run)" % (", ".join(map(str, sorted(unknown))),
                                                     ", ".join(map(str, MTUS))))
    out = []
    for b in benches:
        has = "mtu" in b.fields
        if (only and not has) or (none and has) or (has and b.fields["mtu"] not in keep):
            continue
        out.append(b)
    if not out:
        raise SystemExit("no benchmark left after the MTU options (the MTU rows are %s)"
                         % ", ".join(sorted({b.name for b in BENCHMARKS if "mtu" in b.fields})))
    return out


# ---- process handling --------------------------------------------------------

def _children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        # the command name may contain spaces and parentheses
        rest = stat[stat.rfind(")") + 2:].split()
        if len(rest) < 2:
            continue
        kids.setdefault(int(rest[1]), []).append(int(d))
    return kids


def descendants(pid):
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in kids.get(p, []):
            if c not in out:
                out.append(c)
                todo.append(c)
    return out


def kill_tree(proc, grace=3.0):
    """Ends a child started with start_new_session=True, its process group
    and every descendant (remote orteds started through the rsh agent run
    in other namespaces but are still our descendants)."""
    if proc.poll() is not None and not descendants(proc.pid):
        return
    victims = descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for p in victims + [proc.pid]:
            try:
                os.kill(p, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.time() + grace
        while time.time() < deadline:
            proc.poll()
            alive = [p for p in victims if os.path.exists("/proc/%d" % p)
                     and not _is_zombie(p)]
            if proc.returncode is not None and not alive:
                return
            time.sleep(0.1)
        victims = [p for p in victims if os.path.exists("/proc/%d" % p)] + descendants(proc.pid)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass


def _is_zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
        return s[s.rfind(")") + 2:].split()[0] == "Z"
    except OSError:
        return True


class Runner:
    """Runs commands with a timeout, output to log files; tracks the one
    child currently running so a signal handler can end it."""

    def __init__(self):
        self.current = None

    def run(self, cmd, env, timeout, log_prefix, cwd=None):
        out_path, err_path = log_prefix + ".out", log_prefix + ".err"
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        t0 = time.time()
        timed_out = False
        with open(out_path, "w") as out, open(err_path, "w") as err:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    env=env, cwd=cwd, start_new_session=True)
            self.current = proc
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                # also reaps stragglers a finished mpirun may leave behind
                kill_tree(proc)
                self.current = None
        with open(out_path, errors="replace") as f:
            stdout = f.read()
        with open(err_path, errors="replace") as f:
            stderr = f.read()
        return {"rc": proc.returncode, "timed_out": timed_out, "seconds": time.time() - t0,
                "stdout": stdout, "stderr": stderr, "log": log_prefix}

    def abort_current(self):
        if self.current is not None:
            kill_tree(self.current)


_NOISE = re.compile(r"^(-+|\s*)$")


def failure_reason(res, timeout):
    if res["timed_out"]:
        done = ""
        try:
            sizes = sorted(parse_bench_output(res["stdout"]).rows)
            done = " (sizes up to %d B had completed)" % sizes[-1]
        except ParseError:
            pass
        return "timeout after %g s%s" % (timeout, done)
    lines = [ln.strip() for ln in (res["stderr"] + "\n" + res["stdout"]).splitlines()
             if not _NOISE.match(ln)]
    pick = [ln for ln in lines if ln.startswith("em_")] or \
           [ln for ln in lines if re.search(r"error|abort|fail|unable|cannot|not", ln, re.I)] or lines
    text = pick[0] if pick else "no output"
    if len(text) > 240:
        text = text[:237] + "..."
    return "exit %s: %s" % (res["rc"], text)


def host_probe(build):
    """The CPU-to-CPU cache-line round trip in ns (bench/host_probe), or
    None when the program is missing or says it cannot tell."""
    exe = os.path.join(build, "bench", "host_probe")
    if not os.access(exe, os.X_OK):
        return None
    try:
        r = subprocess.run([exe], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"cl_rt_ns (\d+)$", r.stdout.strip())
    return int(m.group(1)) if r.returncode == 0 and m else None


def outcome_of(res, bench, timeout, transport=None):
    """What run @p res of @p bench gives: its table, or why it failed; with
    @p transport, also the BTL counters the benchmark collects."""
    if res["timed_out"] or res["rc"] != 0:
        return RunOutcome(False, reason=failure_reason(res, timeout))
    try:
        table = parse_bench_output(res["stdout"])
    except ParseError as e:
        return RunOutcome(False, reason="bad output: %s" % e)
    if table.name != bench.table:
        return RunOutcome(False, reason="program reported benchmark %r, expected %r"
                          % (table.name, bench.table))
    if table.unit != bench.unit:
        return RunOutcome(False, reason="program reported unit %r, expected %r"
                          % (table.unit, bench.unit))
    counters = None
    if bench.counters and transport is not None and transport.name in STATS_MCA:
        counters = parse_counters(res["stdout"] + "\n" + res["stderr"], transport.btl,
                                  bench.counters)
    return RunOutcome(True, table=table, counters=counters)


# ---- cluster -------------------------------------------------------------------

def cluster_nodes(prefix):
    """Node namespaces <prefix>-n<i> that exist now."""
    try:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    names = {ln.split()[0] for ln in out.splitlines() if ln.strip()}
    i, found = 0, []
    while "%s-n%d" % (prefix, i) in names:
        found.append("%s-n%d" % (prefix, i))
        i += 1
    return found


def cluster_mtu(prefix, iface):
    """The smallest MTU of @p iface over the cluster's node namespaces (what
    the rows measured on it ran at), or None if it cannot be read."""
    mtus = []
    for ns in cluster_nodes(prefix):
        try:
            out = subprocess.run(["ip", "-n", ns, "-o", "link", "show", "dev", iface],
                                 capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        m = re.search(r"\bmtu (\d+)", out)
        if not m:
            return None
        mtus.append(int(m.group(1)))
    return min(mtus) if mtus else None


def mtu_mismatch(transport, bench, mtu):
    """Why @p bench's MTU row on @p transport cannot run on a cluster whose
    MTU is @p mtu, or None (also None for rows without mtu)."""
    if "mtu" not in bench.fields:
        return None
    want = transport.mtu_for(bench.fields["mtu"])
    if mtu == want:
        return None
    return ("%s needs the cluster at MTU %d, it is at %s (the MTU rows bring up a cluster of "
            "their own unless --mtu, --nodes or --no-cluster is given; with --no-cluster, "
            "bring it up with --mtu %d)" % (
                bench.label, want, mtu if mtu is not None else "an unknown MTU", want))


# ---- environment -----------------------------------------------------------------

def _first_line(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        for ln in (r.stdout + r.stderr).splitlines():
            if ln.strip():
                return ln.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return None


def environment(repo):
    cpu_model = None
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    cpu_model = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    commit = _first_line(["git", "-C", repo, "rev-parse", "--short", "HEAD"])
    if commit and not re.match(r"^[0-9a-f]+$", commit):
        commit = None
    # modified tracked files outside results/ (which the runs rewrite): the
    # rows then come from code that is not exactly the commit
    dirty = None
    if commit:
        try:
            r = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no",
                                "--", ".", ":(exclude)results"],
                               capture_output=True, text=True, timeout=20)
            dirty = bool(r.stdout.strip()) if r.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            dirty = None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "kernel": platform.release(),
        "uname": " ".join(platform.uname()),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
        "openmpi": _first_line(["mpirun", "--version"]),
        "libfabric": _first_line(["fi_info", "--version"]),
        "python": platform.python_version(),
        "git_commit": commit,
        "git_dirty": dirty,
    }


def run_commit(env_info):
    """The commit the rows of a run carry: the hash, "-dirty" appended when
    tracked files outside results/ were modified."""
    c = env_info.get("git_commit")
    return c + "-dirty" if c and env_info.get("git_dirty") else c


def shell_line(cmd, env_delta):
    pre = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in sorted(env_delta.items()))
    return (pre + " " if pre else "") + " ".join(shlex.quote(c) for c in cmd)
