#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compare MPI transports on the emulated cluster.

Runs the bench/mpi programs (em_latency, em_bw, em_bibw, em_burst,
em_pingpong, ...) for several transports, repeats each, takes medians and
writes <out>/compare.json (merged with what is there; every row names the
commit, date and run id of the run that measured it), compare.md, one
figure per question (latency.png, latency-ratio.png, ...: figures.py) and
compare-meta.json.  Ratios are only taken between rows of one run
(report.py).  Progress goes to stderr as "[step k/N] ... about M min left",
estimated from the step times compare-meta.json kept of the last run
(compare_lib/timing.py).  See docs/benchmarks.md.

    tools/compare.py --quick --repeat 1
    tools/compare.py --only-transports tcp,ofi-rxd --only-benchmarks latency,burst@2:1
    tools/compare.py --mtu-rows --quick        # latency/bw/bibw at MTU 1500 and 9000
    tools/compare.py --mpi-rows                # libfabric rows under ompi4, ompi5, mpich5
    tools/compare.py --report-only             # compare.md and figures from compare.json
    tools/compare.py --hostfile hosts --only-transports tcp,rudp   # real hosts
    tools/compare.py --selftest
"""

import argparse
import json
import os
import re
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from compare_lib import figures, hostfile, mpis, report, results, runner, timing  # noqa: E402
from compare_lib.runner import BENCHMARKS, TRANSPORTS  # noqa: E402

SELFTEST = os.path.join(REPO, "bench", "mpi", "test_compare_lib.py")


class Interrupted(Exception):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", choices=["mpi", "relax"], default="mpi",
                   help="mpi: the MPI transport benchmarks (default); relax: the [relax-dpdk] "
                        "solver sweep, with its own options (must come first: "
                        "tools/compare.py --suite relax --help)")
    p.add_argument("--prefix", default="emc", help="emulated cluster prefix (default emc)")
    p.add_argument("--no-cluster", action="store_true",
                   help="use an already running cluster; do not bring it up or down")
    p.add_argument("--local", action="store_true",
                   help="no cluster at all: plain mpirun on this host (plumbing tests only; "
                        "ranks share one node)")
    p.add_argument("--hostfile", metavar="FILE", default=None,
                   help="run across the real hosts FILE lists (Open MPI hostfile), with "
                        "mpirun --hostfile FILE --map-by node from this host, instead of the "
                        "emulated cluster (compare_lib/hostfile.py says what it cannot run)")
    p.add_argument("--mpirun-args", default="", metavar="ARGS",
                   help="with --hostfile: more mpirun arguments, one string "
                        "(e.g. \"--mca btl_tcp_if_include eth1\")")
    p.add_argument("--nodes", type=int, default=None,
                   help="bring up one cluster of N nodes for everything (default: 2 nodes "
                        "for the 2-rank benchmarks, then 3 nodes for the 2:1 patterns)")
    p.add_argument("--links", type=int, default=None, help="passed to emcluster up")
    p.add_argument("--mtu", type=int, default=None,
                   help="passed to every emcluster up (overrides the MTU rows' own MTU: those "
                        "whose MTU the cluster then lacks are recorded as skipped)")
    p.add_argument("--mtu-rows", action="store_true",
                   help="only the MTU rows (latency, bw, bibw at MTU 1500 and 9000 for tcp, rudp, "
                        "dpdk-afxdp; combine with --only-benchmarks, --only-transports, --mtus)")
    p.add_argument("--no-mtu-rows", action="store_true", help="leave the MTU rows out")
    p.add_argument("--names-rows", action="store_true",
                   help="only the rows comparing wire v3 and v2 (field names: wire / ids, same "
                        "run) on the transports that run both (rudp, dpdk-memif; with "
                        "--mpi-rows the provider's ofi-ethermpi-udp and -memif)")
    p.add_argument("--mtus", default=None, metavar="LIST",
                   help="the MTU rows to run, e.g. 1500 (default: 1500,9000)")
    p.add_argument("--mpi-rows", action="store_true",
                   help="only the mpi rows (latency, bw, bibw of the libfabric "
                        "transports and each MPI's tcp path under Debian's Open MPI 4.1 and the "
                        "Open MPI 5 / MPICH 5 wheels; field mpi; needs 'make venv')")
    p.add_argument("--venv", default=os.environ.get("EM_VENV") or os.path.join(REPO, ".venv-mpi"),
                   help="directory of the wheels' venvs <venv>/ompi5, <venv>/mpich5 "
                        "(default $EM_VENV, else <repo>/.venv-mpi, as 'make venv' makes them)")
    p.add_argument("--iface", default="eth0", help="cluster interface name (default eth0)")
    p.add_argument("--emcluster", default=os.path.join(REPO, "tools", "emcluster"))
    p.add_argument("--quick", action="store_true", help="fewer sizes and iterations (-q)")
    p.add_argument("--repeat", type=int, default=3, help="runs per combination (default 3)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per run (default 120, 60 with --quick)")
    p.add_argument("--build", default=os.path.join(REPO, "build"),
                   help="meson build dir holding bench/mpi/em_* (default <repo>/build)")
    p.add_argument("--out", default=os.path.join(REPO, "results"),
                   help="output directory (default <repo>/results)")
    p.add_argument("--logs", default=None,
                   help="per-run stdout/stderr logs (default <build>/compare-logs)")
    p.add_argument("--only-transports", default=None, metavar="LIST",
                   help="comma list, e.g. tcp,ofi-rxd")
    p.add_argument("--only-benchmarks", default=None, metavar="LIST",
                   help="comma list of names or name@pattern, e.g. latency,burst@2:1")
    p.add_argument("--bench-args", action="append", default=[], metavar="NAME=ARGS",
                   help="extra program arguments for a benchmark (name or name@pattern), "
                        "e.g. 'latency=-m 0:64K'; repeatable")
    p.add_argument("--baseline", default="tcp", help="ratio columns are relative to this")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 if any combination failed")
    p.add_argument("--dry-run", action="store_true", help="print the commands only")
    p.add_argument("--list", action="store_true", help="list transports and benchmarks")
    p.add_argument("--render", "--report-only", action="store_true", dest="render",
                   help="only rewrite compare.md and the figures from <out>/compare.json "
                        "(nothing is measured; \"this run\" is the last one compare-meta.json "
                        "names)")
    p.add_argument("--run-id", default=None, metavar="ID",
                   help="the run id stamped on the rows (default <commit>@<start date>); "
                        "tools/demo hands its compare.py calls one id, so the rows of one "
                        "'make bench' are one run and divide each other")
    p.add_argument("--record-wall", default=None, metavar="KIND",
                   help="(tools/demo) record the wall time since --since of a whole "
                        "tools/demo call as KIND (demo, bench, bench-ofi) in "
                        "<out>/compare-meta.json, then exit")
    p.add_argument("--since", type=float, default=None, metavar="EPOCH",
                   help="with --record-wall: when the call started (make's start, the "
                        "'make' steps included)")
    p.add_argument("--demo-start", type=float, default=None, metavar="EPOCH",
                   help="with --record-wall: when tools/demo itself started (the time "
                        "before it is recorded as make_seconds)")
    p.add_argument("--selftest", action="store_true",
                   help="run the unit tests of the parsing/median/merge logic")
    return p.parse_args(argv)


def selftest():
    import importlib.util
    import unittest
    spec = importlib.util.spec_from_file_location("test_compare_lib", SELFTEST)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
    res = unittest.TextTestRunner(verbosity=1).run(suite)
    return 0 if res.wasSuccessful() else 1


def combo_name(t, b):
    return "%s|%s" % (t.name, b.label)


def bench_extra_args(args):
    extra = {}
    for item in args.bench_args:
        if "=" not in item:
            raise SystemExit("--bench-args wants NAME=ARGS, got %r" % item)
        k, v = item.split("=", 1)
        extra.setdefault(k.strip(), []).extend(v.split())
    return extra


def load_meta(out_dir):
    """<out>/compare-meta.json as a dict ({} if missing or unreadable)."""
    try:
        with open(os.path.join(out_dir, "compare-meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def write_reports(out_dir, rows, baseline, this_run, env_line, run_name="This run"):
    """compare.md and the figures from @p rows (merged compare.json);
    @p this_run = the run id (results.run_of) whose rows count as fresh:
    the only rows ratios are taken between."""
    tnames = [t.name for t in TRANSPORTS]
    figs = figures.write_all(rows, out_dir, tnames, baseline=baseline, this_run=this_run,
                             run_name="the last run" if run_name != "This run" else "this run")
    if figs is None:
        print("compare.py: matplotlib not available; figures not written (use /usr/bin/python3)",
              file=sys.stderr)
        figs = []
    md = report.markdown(rows, tnames, baseline=baseline, title="ethermpi transport comparison",
                         this_run=this_run, figures=[(os.path.basename(p), what) for p, what in figs],
                         default_mtu=runner.DEFAULT_MTU, afxdp_mtu=runner.AFXDP_MAX_MTU,
                         run_name=run_name)
    if env_line:
        md += "\n" + env_line + "\n"
    with open(os.path.join(out_dir, "compare.md"), "w") as f:
        f.write(md)
    print(md)


def render_only(out_dir, baseline):
    """compare.md and the figures from compare.json as it is (after removing
    rows by hand, or merging results of two machines).  "This run" is the
    last one compare-meta.json names."""
    rows = results.load_rows(os.path.join(out_dir, "compare.json"))
    meta = load_meta(out_dir)
    results.backfill_provenance(rows, meta)
    env = meta.get("environment") if isinstance(meta.get("environment"), dict) else {}
    this_run = env.get("run") or results.run_id(runner.run_commit(env), env.get("date"))
    line = None
    if env:
        line = "Environment of the last run: %s, kernel %s, %s CPU(s), %s. Details: compare-meta.json." % (
            env.get("date"), env.get("kernel"), env.get("cpu_count"), env.get("openmpi"))
    write_reports(out_dir, rows, baseline, this_run, line,
                  run_name="The last run (compare-meta.json, `compare.py --report-only`)")
    return 0


def record_wall(args):
    """--record-wall KIND: the wall time of a whole tools/demo call into
    compare-meta.json "wall_time" (timing.wall_record)."""
    if args.since is None:
        raise SystemExit("--record-wall needs --since EPOCH (when the call started)")
    out_dir = os.path.abspath(args.out)
    now = time.time()
    meta = load_meta(out_dir)
    env = runner.environment(REPO)
    make_s = None if args.demo_start is None else max(0.0, args.demo_start - args.since)
    key = timing.wall_record(meta, args.record_wall, now - args.since, make_s, env["date"],
                             runner.run_commit(env), args.run_id, args.quick, args.repeat)
    results.write_json_atomic(os.path.join(out_dir, "compare-meta.json"), meta)
    rec = meta["wall_time"][key]
    print("%s took %s (%s in make's build/deps/venv steps); recorded as wall_time.%s in "
          "%s" % (args.record_wall, timing.fmt_duration(rec["seconds"]),
                  timing.fmt_duration(rec["make_seconds"] or 0), key,
                  os.path.join(out_dir, "compare-meta.json")))
    return 0


def plan_phases(args, mode, pairs):
    """[((nodes, up_args), [(t, b), ...])]: one cluster per shape.  2-rank
    benchmarks on a 2-node cluster (one direct veth "cable", like the
    papers' two hosts), 3-rank ones on 3 nodes (through the emulated switch)
    so every rank has its own node; a benchmark or a transport may need its
    own shape too (up_args: --links 2, --mtu M).  --nodes N forces one
    cluster for everything."""
    if mode == "cluster" and not args.nodes:
        by_shape = {}
        for t, b in pairs:
            by_shape.setdefault((b.nodes or max(2, b.np), tuple(t.up_args_for(b))), []).append((t, b))
        return [(k, by_shape[k]) for k in sorted(by_shape)]
    return [((args.nodes if mode == "cluster" else None, ()), list(pairs))]


def aggregate_rows(pairs, skipped, outcomes, not_applicable, extra_fields=None):
    """The new rows of a run from its outcomes; @p extra_fields go into
    every row (the hostfile backend's cluster and hosts)."""
    new_rows = []
    for t, b in pairs:
        name = combo_name(t, b)
        fields = dict(t.row_fields(b), **(extra_fields or {}))
        if t.name in skipped:
            new_rows.append(results.status_row(t.name, b.name, b.pattern, b.unit,
                                               "skipped", skipped[t.name], fields))
        elif name in outcomes:
            new_rows += results.promote(
                results.aggregate(t.name, b.name, b.pattern, b.unit, outcomes[name], fields),
                b.top_fields)
        elif name in not_applicable:
            new_rows.append(results.status_row(t.name, b.name, b.pattern, b.unit,
                                               "skipped", not_applicable[name], fields))
    return new_rows


def write_meta(meta_path, meta, env_info, interrupted, pairs, sweep, mode, quick):
    meta["schema"] = "em-compare-meta v1"
    meta["environment"] = env_info
    meta["interrupted"] = interrupted
    combos = meta.setdefault("combos", {})
    if not isinstance(combos, dict):
        combos = meta["combos"] = {}
    skipped, meta_cmds = sweep.skipped, sweep.meta_cmds
    for t, b in pairs:
        name = combo_name(t, b)
        if t.name not in skipped and name not in meta_cmds:
            continue
        combos[name] = {"date": env_info["date"], "commit": runner.run_commit(env_info),
                        "np": b.np, "mode": mode,
                        "layout": sweep.layout.get(b.label,
                                                   "local host" if mode == "local" else None),
                        "cluster_mtu": sweep.cluster_mtus.get(name),
                        "quick": quick, "status": "skipped" if t.name in skipped else None,
                        "reason": skipped.get(t.name), "commands": meta_cmds.get(name, []),
                        "environment": env_info}
        if t.name not in skipped:
            oks = sum(1 for c in meta_cmds[name] if c["status"] == "ok")
            combos[name]["status"] = "ok" if oks else "failed"
    results.write_json_atomic(meta_path, meta)


def build_command(args, mode, ctx, bindir, extra, t, b):
    """(argv, environment) of one run of @p b over @p t."""
    if t.raw_vdev:
        cmd = [os.path.join(REPO, "tools", "raw-floor"), "--vdev", t.raw_vdev.format(**ctx)]
        return cmd + (["-q"] if args.quick else []), {"BUILD": ctx["build"]}
    if "mpi" in b.fields:
        mpi = b.fields["mpi"]
        tenv = b.env_for(t, ctx)
        # Open MPI takes the benchmark's mpirun arguments too (the
        # collectives' mpi_yield_when_idle); hydra has no --mca
        mca = b.mca_for(t, ctx) + (b.mpirun_args if mpi != "mpich5" else [])
        cmd, lenv = mpis.launch(mpi, args.emcluster, os.path.join(REPO, "tools", "emc-hydra"),
                                os.path.abspath(args.venv), b.np, tenv, mca)
        cmd.append(os.path.join(mpis.bindir_of(ctx["build"], mpi), b.program))
        cmd += b.args + (["-q"] if args.quick else []) + extra.get(b.name, [])
        return cmd, dict(tenv, **lenv)
    if mode == "hostfile":
        launch = hostfile.launch(args.hostfile, args.mpirun_args)
    elif mode == "local":
        launch = ["mpirun", "--oversubscribe"]
    else:
        launch = [args.emcluster, "mpirun", "--map-by", "node"]
    # Every node namespace believes it owns all cores, so Open MPI's
    # default bind-to-core pins rank 0 (node 0) and rank 1 (node 1) to
    # the same core 0; two busy-polling ranks then share one core and
    # ping-pong takes scheduler slices (~4 ms).  Never bind.
    tmca = b.mca_for(t, ctx)
    # a parameter the transport already sets (e.g. mpi_yield_when_idle
    # for the daemon transports) is not repeated: mpirun refuses that
    given = {tmca[i + 1] for i in range(len(tmca) - 1) if tmca[i] == "--mca"}
    bargs, i = [], 0
    while i < len(b.mpirun_args):
        a = b.mpirun_args[i]
        if a == "--mca" and i + 2 < len(b.mpirun_args) + 1 and b.mpirun_args[i + 1] in given:
            i += 3
            continue
        bargs.append(a)
        i += 1
    cmd = launch + ["--bind-to", "none", "-np", str(b.np)] + tmca + bargs
    for k, v in b.mca:
        cmd += ["--mca", k.format(btl=t.btl or ""), v]
    tenv = b.env_for(t, ctx)
    for k, v in sorted(tenv.items()):
        cmd += ["-x", "%s=%s" % (k, v)]
    cmd += [os.path.join(bindir, b.program)] + b.args
    if args.quick:
        cmd.append("-q")
    cmd += extra.get(b.label, []) if b.label != b.name else []
    cmd += extra.get(b.name, [])
    return cmd, tenv


class Sweep:
    """The measuring part of one invocation: brings up one cluster per
    phase, runs every combination of it `repeat` times, and collects the
    outcomes, command records, skip reasons and cluster facts."""

    def __init__(self, args, mode, ctx, base_env, logs, timeout, command):
        self.args, self.mode, self.ctx = args, mode, ctx
        self.base_env, self.logs, self.timeout, self.command = base_env, logs, timeout, command
        self.run = runner.Runner()
        self.outcomes = {}        # combo name -> [RunOutcome]
        self.meta_cmds = {}       # combo name -> [command records]
        self.skipped = {}         # transport name -> reason
        self.not_applicable = {}  # combo name -> reason (e.g. a memif cable on 3 nodes)
        self.cluster_mtus = {}    # combo name -> the MTU of the cluster it ran on
        self.layout = {}          # benchmark label -> where its ranks ran
        self.cluster_up = False
        self.progress = None      # timing.Progress, set by start_progress()
        self.hosts = hostfile.read_hosts(args.hostfile) if mode == "hostfile" else None

    def start_progress(self, phases, estimates, out=None):
        """Progress lines for @p phases (plan_phases) from @p estimates
        (timing.Estimates): the steps planned now, before a phase's
        cluster tells which apply."""
        plan = []
        for (nodes, _), phase_combos in phases:
            plan.append([(combo_name(t, b), b.name) for _ in range(self.args.repeat)
                         for t, b in phase_combos if t.name not in self.skipped
                         and not t.not_applicable(b, nodes)
                         and not (self.mode == "hostfile" and hostfile.not_applicable(t, b))])
        self.progress = timing.Progress(plan, estimates, out=out)
        print("compare.py: %d step(s) planned, %s (estimated from %s)"
              % (self.progress.total(), timing.fmt_left(self.progress.left_seconds()),
                 estimates.source), file=sys.stderr)

    def check_transports(self, transports):
        for t in transports:
            reason = t.skip_reason(self.ctx)
            if reason:
                self.skipped[t.name] = reason
                print("compare.py: %s skipped: %s" % (t.name, reason), file=sys.stderr)

    def bring_up(self, nodes, up_args):
        """(Re)creates the cluster for a phase; False if that failed."""
        args = self.args
        if self.cluster_up:
            self.run.run([args.emcluster, "down"], self.base_env, 120,
                         os.path.join(self.logs, "emcluster-down"), cwd=REPO)
        up = [args.emcluster, "up", "-n", str(nodes)] + list(up_args)
        if args.links:
            up += ["--links", str(args.links)]
        if args.mtu:
            up += ["--mtu", str(args.mtu)]
        print("compare.py: %s" % runner.shell_line(up, {"EMC_PREFIX": args.prefix}), file=sys.stderr)
        self.cluster_up = True  # bring it down even if 'up' half-worked
        t0 = time.monotonic()
        res = self.run.run(up, self.base_env, 180, os.path.join(self.logs, "emcluster-up"), cwd=REPO)
        if self.progress:
            self.progress.cluster_up.append(time.monotonic() - t0)
        if res["rc"] != 0 or res["timed_out"]:
            print("compare.py: emcluster up failed: %s (log %s.err)"
                  % (runner.failure_reason(res, 180), res["log"]), file=sys.stderr)
            return False
        return True

    def run_phase(self, nodes, up_args, phase_combos, index=0):
        """Measures one phase (@p index in the plan); False on a fatal
        cluster problem."""
        if all(t.name in self.skipped for t, _ in phase_combos):
            if self.progress:
                self.progress.plan_phase(index, [])
            return True
        if self.mode == "cluster" and not self.bring_up(nodes, up_args):
            return False
        have, phase_mtu = None, None
        if self.mode == "hostfile":
            have = self.hosts
            for _, b in phase_combos:
                self.layout[b.label] = "%d real hosts (%s), map-by node" % (
                    len(have), ",".join(have))
        elif self.mode != "local":
            have = runner.cluster_nodes(self.args.prefix)
            if len(have) < 2:
                print("compare.py: cluster %r has %d node(s); need 2 (start it, or drop "
                      "--no-cluster)" % (self.args.prefix, len(have)), file=sys.stderr)
                return False
            phase_mtu = runner.cluster_mtu(self.args.prefix, self.args.iface)
            topo = "direct veth" if len(have) == 2 else "switched"
            for _, b in phase_combos:
                self.layout[b.label] = ("%d nodes (%s), one rank per node" % (len(have), topo)
                                        if b.np <= len(have) else
                                        "%d ranks on %d nodes (%s, map-by node)"
                                        % (b.np, len(have), topo))
        todo = []
        for t, b in phase_combos:
            if t.name in self.skipped:
                continue
            why = t.not_applicable(b, len(have) if have is not None else None)
            if not why and self.mode == "hostfile":
                why = hostfile.not_applicable(t, b)
            if not why and "mtu" in b.fields:
                why = ("the MTU rows need the emulated cluster (emcluster up --mtu M)"
                       if self.mode == "local" else runner.mtu_mismatch(t, b, phase_mtu))
            if why:
                self.not_applicable[combo_name(t, b)] = why
                continue
            self.cluster_mtus[combo_name(t, b)] = phase_mtu
            todo.append((t, b))
        if self.progress:
            self.progress.plan_phase(index, [(combo_name(t, b), b.name)
                                             for _ in range(self.args.repeat) for t, b in todo])
        for rep in range(self.args.repeat):
            # every other repeat in reverse: two combinations compared in
            # one run (names wire / ids, framing l2 / udp) each go first
            # as often, so neither carries what running first or second
            # does to it (the machine's state after the one before)
            for t, b in (todo if rep % 2 == 0 else todo[::-1]):
                self.run_one(t, b, rep, index)
        return True

    def run_one(self, t, b, rep, index=0):
        name = combo_name(t, b)
        if self.progress:
            self.progress.begin(index, name, b.name, "%s over %s (repeat %d/%d)"
                                % (b.label, t.name, rep + 1, self.args.repeat))
        t0 = time.monotonic()
        cmd, tenv = self.command(t, b)
        env = dict(self.base_env)
        env.update(tenv)
        env.update(b.env)
        logp = os.path.join(self.logs, "%s-%s-r%d" % (
            t.name, re.sub(r"[^A-Za-z0-9_.=-]+", "_", b.label.replace(":", "to")), rep + 1))
        probe = runner.host_probe(self.args.build)
        res = self.run.run(cmd, env, self.timeout, logp, cwd=REPO)
        oc = runner.outcome_of(res, b, self.timeout, t)
        oc.host_cl_rt_ns = probe
        self.outcomes.setdefault(name, []).append(oc)
        shown = dict(tenv)
        if self.mode not in ("local", "hostfile"):
            shown["EMC_PREFIX"] = self.args.prefix
        rec = {"repeat": rep + 1, "cmd": runner.shell_line(cmd, shown),
               "rc": res["rc"], "seconds": round(res["seconds"], 2),
               "status": "ok" if oc.ok else "failed", "log": res["log"]}
        if not oc.ok:
            rec["reason"] = oc.reason
        if oc.counters:
            rec["counters"] = oc.counters
        self.meta_cmds.setdefault(name, []).append(rec)
        print("[%d/%d] %-8s %-14s %s (%.1f s)%s" % (
            rep + 1, self.args.repeat, t.name, b.label, rec["status"],
            res["seconds"], "" if oc.ok else ": " + oc.reason), file=sys.stderr)
        if self.progress:
            self.progress.end(index, name, b.name, time.monotonic() - t0)

    def finish(self):
        """Ends the running job and brings the cluster down."""
        self.run.abort_current()
        if self.cluster_up:
            res = self.run.run([self.args.emcluster, "down"], self.base_env, 120,
                               os.path.join(self.logs, "emcluster-down"), cwd=REPO)
            if res["rc"] != 0:
                print("compare.py: emcluster down failed: %s" % runner.failure_reason(res, 120),
                      file=sys.stderr)


def select_pairs(args):
    """The (transport, benchmark) pairs the options select."""
    only_t = args.only_transports
    if args.mtu_rows and not only_t:
        only_t = ",".join(t.name for t in TRANSPORTS if t.mtu_variants)
    if args.names_rows and not only_t:
        only_t = ",".join(t.name for t in TRANSPORTS if t.names_variants)
    transports = runner.select(TRANSPORTS, only_t, lambda t: [t.name], "transport")
    benches = runner.select(BENCHMARKS, args.only_benchmarks, lambda b: [b.name, b.label],
                            "benchmark")
    benches = runner.select_mtu_rows(benches, args.mtu_rows, args.mtus, args.no_mtu_rows)
    benches = runner.select_mpi_rows(benches, args.mpi_rows)
    benches = runner.select_names_rows(benches, args.names_rows)
    if not benches:
        raise SystemExit("nothing to run: no names row (--names-rows) among the benchmarks "
                         "selected")
    pairs = runner.combos(transports, benches)
    if not pairs:
        raise SystemExit("nothing to run: no selected transport has the selected benchmarks "
                         "(the MTU rows are for %s)"
                         % ", ".join(t.name for t in TRANSPORTS if t.mtu_variants))
    return transports, pairs


def dry_run(args, mode, ctx, phases, command):
    for (nodes, up_args), phase_pairs in phases:
        if mode == "cluster":
            print("# " + runner.shell_line(
                [args.emcluster, "up", "-n", str(nodes)] + list(up_args) +
                (["--links", str(args.links)] if args.links else []) +
                (["--mtu", str(args.mtu)] if args.mtu else []), {"EMC_PREFIX": args.prefix}))
        for t, b in phase_pairs:
            reason = t.skip_reason(ctx) or (hostfile.not_applicable(t, b)
                                            if mode == "hostfile" else None)
            cmd, tenv = command(t, b)
            if mode not in ("local", "hostfile"):
                tenv = dict(tenv, EMC_PREFIX=args.prefix)
            print(("# skipped (%s): " % reason if reason else "") + runner.shell_line(cmd, tenv))
    return 0


def main(argv):
    # [relax-dpdk]'s relaxation-solver sweep: not MPI BTL benchmarks, so it has
    # its own options and runner (compare_lib/relax.py, docs/relax.md)
    if argv[:1] == ["--suite"] and argv[1:2] == ["relax"] or argv[:1] == ["--suite=relax"]:
        from compare_lib import relax
        return relax.main(argv[1:] if argv[0] == "--suite=relax" else argv[2:], REPO)
    args = parse_args(argv)
    if args.selftest:
        return selftest()
    if args.render:
        return render_only(os.path.abspath(args.out), args.baseline)
    if args.record_wall:
        return record_wall(args)
    if args.list:
        for t in TRANSPORTS:
            print("transport %-10s %s" % (t.name, t.note))
        for b in BENCHMARKS:
            print("benchmark %-14s %s -np %d (%s)" % (b.label, b.program, b.np, b.unit))
        return 0
    if args.repeat < 1:
        raise SystemExit("--repeat must be >= 1")

    build = os.path.abspath(args.build)
    out_dir = os.path.abspath(args.out)
    logs = os.path.abspath(args.logs or os.path.join(build, "compare-logs"))
    timeout = args.timeout if args.timeout else (60.0 if args.quick else 120.0)
    transports, pairs = select_pairs(args)
    extra = bench_extra_args(args)
    bindir = os.path.join(build, "bench", "mpi")
    missing = [b.program for _, b in pairs if b.fields.get("mpi", "ompi4") == "ompi4"
               and not os.access(os.path.join(bindir, b.program), os.X_OK)]
    # the wheels' programs (mpi rows): compiled here; an MPI that cannot
    # be had makes its rows skipped rows with the reason
    for mpi in sorted({b.fields["mpi"] for _, b in pairs if "mpi" in b.fields}):
        if args.dry_run:
            continue
        why = mpis.prepare(REPO, build, os.path.abspath(args.venv), mpi,
                           log=os.path.join(build, "compare-mpicc.log"))
        if why:
            runner.MPI_UNAVAILABLE[mpi] = why
            print("compare.py: rows under %s skipped: %s" % (mpi, why), file=sys.stderr)
    if missing and not args.dry_run:
        print("compare.py: missing programs in %s: %s\n  build them: meson setup %s && "
              "ninja -C %s" % (bindir, ", ".join(sorted(set(missing))), build, build),
              file=sys.stderr)
        return 2

    ctx = {"build": build, "iface": args.iface, "prefix": args.prefix}
    # our BTLs load next to Open MPI's components: its directory, asked of
    # ompi_info now, so a missing ompi_info stops the run before any phase
    if any(runner.SYSTEM_MCA_DIR in v for t in transports for _, v in t.mca):
        try:
            ctx["ompi_pkglibdir"] = runner.ompi_pkglibdir()
        except RuntimeError as e:
            print("compare.py: %s" % e, file=sys.stderr)
            return 2
    mode = "local" if args.local else ("cluster-external" if args.no_cluster else "cluster")
    if args.hostfile:
        mode = "hostfile"
        try:
            hostfile.read_hosts(args.hostfile)
        except (OSError, ValueError) as e:
            print("compare.py: --hostfile: %s" % e, file=sys.stderr)
            return 2
    base_env = dict(os.environ)
    base_env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    if mode not in ("local", "hostfile"):
        base_env["EMC_PREFIX"] = args.prefix
        # the node daemons (daemon-mode transports) from the same build as
        # the BTL: the contract is versioned, a mix is refused
        base_env.setdefault("EMC_EMD", os.path.join(build, "src", "emd"))
    env_info = runner.environment(REPO)
    env_info["run"] = args.run_id or results.run_id(runner.run_commit(env_info), env_info["date"])
    env_info.update({"runner_argv": [sys.argv[0]] + list(argv), "mode": mode,
                     "prefix": args.prefix if mode not in ("local", "hostfile") else None,
                     "hostfile": os.path.abspath(args.hostfile) if args.hostfile else None,
                     "quick": args.quick, "repeat": args.repeat, "timeout_s": timeout,
                     "build": build})

    def command(t, b):
        return build_command(args, mode, ctx, bindir, extra, t, b)

    phases = plan_phases(args, mode, pairs)
    if args.dry_run:
        return dry_run(args, mode, ctx, phases, command)

    sweep = Sweep(args, mode, ctx, base_env, logs, timeout, command)
    interrupted = False

    def on_signal(signum, frame):
        raise Interrupted("signal %d" % signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        sweep.check_transports(transports)
        sweep.start_progress(phases, timing.Estimates(load_meta(out_dir), args.quick))
        for i, ((nodes, up_args), phase_combos) in enumerate(phases):
            if not sweep.run_phase(nodes, up_args, phase_combos, i):
                return 2
    except Interrupted as e:
        interrupted = True
        print("compare.py: interrupted (%s); writing what was measured" % e, file=sys.stderr)
    finally:
        # no more signals-as-exceptions while cleaning up
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        sweep.finish()
        for s, h in old.items():
            signal.signal(s, h)

    # ---- aggregate, merge, write ----
    prov = (runner.run_commit(env_info), env_info["date"])
    this_run = env_info["run"]
    new_rows = results.stamp(aggregate_rows(
        pairs, sweep.skipped, sweep.outcomes, sweep.not_applicable,
        hostfile.row_fields(sweep.hosts) if mode == "hostfile" else None), *prov, run=this_run)
    json_path = os.path.join(out_dir, "compare.json")
    tnames = [t.name for t in TRANSPORTS]
    meta = load_meta(out_dir)
    old_rows = results.load_rows(json_path)
    # rows from before rows carried provenance: the run compare-meta.json
    # recorded for their combination (read before this run's entries land)
    results.backfill_provenance(old_rows, meta)
    merged = results.sort_rows(results.merge(old_rows, new_rows), tnames, report.BENCH_ORDER)
    results.write_json_atomic(json_path, merged)
    if sweep.progress:
        sweep.progress.record(meta, env_info["date"], prov[0])
    write_meta(os.path.join(out_dir, "compare-meta.json"), meta, env_info, interrupted, pairs,
               sweep, mode, args.quick)
    write_reports(out_dir, merged, args.baseline, this_run,
                  "Environment of this run: %s, kernel %s, %s CPU(s), %s; mode %s%s. Details: "
                  "compare-meta.json." % (env_info["date"], env_info["kernel"],
                                          env_info["cpu_count"], env_info["openmpi"], mode,
                                          ", quick" if args.quick else ""))
    if interrupted:
        return 130
    if args.strict and any(r.get("status") == "failed" or r.get("failed_runs") for r in new_rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
