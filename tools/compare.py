#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compare MPI transports on the emulated cluster.

Runs the bench/mpi programs (em_latency, em_bw, em_bibw, em_burst,
em_pingpong) for several transports, repeats each, takes medians and writes
<out>/compare.json (merged with what is there), compare.md, compare.png and
compare-meta.json.  See docs/benchmarks.md.

    tools/compare.py --quick --repeat 1
    tools/compare.py --only-transports tcp,ofi-rxd --only-benchmarks latency,burst@2:1
    tools/compare.py --selftest
"""

import argparse
import json
import os
import re
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from compare_lib import report, results, runner  # noqa: E402
from compare_lib.runner import BENCHMARKS, TRANSPORTS  # noqa: E402

SELFTEST = os.path.join(REPO, "bench", "mpi", "test_compare_lib.py")


class Interrupted(Exception):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", choices=["mpi", "relax"], default="mpi",
                   help="mpi: the MPI transport benchmarks (default); relax: the seed 003 "
                        "solver sweep, with its own options (must come first: "
                        "tools/compare.py --suite relax --help)")
    p.add_argument("--prefix", default="emc", help="emulated cluster prefix (default emc)")
    p.add_argument("--no-cluster", action="store_true",
                   help="use an already running cluster; do not bring it up or down")
    p.add_argument("--local", action="store_true",
                   help="no cluster at all: plain mpirun on this host (plumbing tests only; "
                        "ranks share one node)")
    p.add_argument("--nodes", type=int, default=None,
                   help="bring up one cluster of N nodes for everything (default: 2 nodes "
                        "for the 2-rank benchmarks, then 3 nodes for the 2:1 patterns)")
    p.add_argument("--links", type=int, default=None, help="passed to emcluster up")
    p.add_argument("--mtu", type=int, default=None, help="passed to emcluster up")
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
    p.add_argument("--render", action="store_true",
                   help="only rewrite compare.md and compare.png from <out>/compare.json")
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


def render_only(out_dir, baseline):
    """compare.md/png from compare.json as it is (after removing rows by
    hand, or merging results of two machines)."""
    rows = results.load_rows(os.path.join(out_dir, "compare.json"))
    tnames = [t.name for t in TRANSPORTS]
    title = "ethermpi transport comparison"
    md = report.markdown(rows, tnames, baseline=baseline, title=title)
    try:
        with open(os.path.join(out_dir, "compare-meta.json")) as f:
            env = json.load(f).get("environment", {})
        md += "\nEnvironment: %s, kernel %s, %s CPU(s), %s. Details: compare-meta.json.\n" % (
            env.get("date"), env.get("kernel"), env.get("cpu_count"), env.get("openmpi"))
    except (OSError, ValueError, AttributeError):
        pass
    with open(os.path.join(out_dir, "compare.md"), "w") as f:
        f.write(md)
    report.plot(rows, os.path.join(out_dir, "compare.png"), tnames, title=title)
    print(md)
    return 0


def main(argv):
    # seed 003's relaxation-solver sweep: not MPI BTL benchmarks, so it has
    # its own options and runner (compare_lib/relax.py, docs/relax.md)
    if argv[:1] == ["--suite"] and argv[1:2] == ["relax"] or argv[:1] == ["--suite=relax"]:
        from compare_lib import relax
        return relax.main(argv[1:] if argv[0] == "--suite=relax" else argv[2:], REPO)
    args = parse_args(argv)
    if args.selftest:
        return selftest()
    if args.render:
        return render_only(os.path.abspath(args.out), args.baseline)
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
    transports = runner.select(TRANSPORTS, args.only_transports, lambda t: [t.name], "transport")
    benches = runner.select(BENCHMARKS, args.only_benchmarks, lambda b: [b.name, b.label],
                            "benchmark")
    extra = bench_extra_args(args)
    bindir = os.path.join(build, "bench", "mpi")
    missing = [b.program for b in benches
               if not os.access(os.path.join(bindir, b.program), os.X_OK)]
    if missing and not args.dry_run:
        print("compare.py: missing programs in %s: %s\n  build them: meson setup %s && "
              "ninja -C %s" % (bindir, ", ".join(sorted(set(missing))), build, build),
              file=sys.stderr)
        return 2

    ctx = {"build": build, "iface": args.iface, "prefix": args.prefix}
    mode = "local" if args.local else ("cluster-external" if args.no_cluster else "cluster")
    base_env = dict(os.environ)
    base_env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    if mode != "local":
        base_env["EMC_PREFIX"] = args.prefix
        # the node daemons (daemon-mode transports) from the same build as
        # the BTL: the contract is versioned, a mix is refused
        base_env.setdefault("EMC_EMD", os.path.join(build, "src", "emd"))
    env_info = runner.environment(REPO)
    env_info.update({"runner_argv": [sys.argv[0]] + list(argv), "mode": mode,
                     "prefix": args.prefix if mode != "local" else None,
                     "quick": args.quick, "repeat": args.repeat, "timeout_s": timeout,
                     "build": build})

    def command(t, b):
        if t.raw_vdev:
            cmd = [os.path.join(REPO, "tools", "raw-floor"), "--vdev", t.raw_vdev.format(**ctx)]
            return cmd + (["-q"] if args.quick else []), {"BUILD": build}
        launch = ["mpirun", "--oversubscribe"] if mode == "local" else \
                 [args.emcluster, "mpirun", "--map-by", "node"]
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
        tenv = t.env_vars(ctx)
        for k, v in sorted(tenv.items()):
            cmd += ["-x", "%s=%s" % (k, v)]
        cmd += [os.path.join(bindir, b.program)] + b.args
        if args.quick:
            cmd.append("-q")
        cmd += extra.get(b.label, []) if b.label != b.name else []
        cmd += extra.get(b.name, [])
        return cmd, tenv

    if args.dry_run:
        for t in transports:
            reason = t.skip_reason(ctx)
            for b in benches:
                cmd, tenv = command(t, b)
                if mode != "local":
                    tenv = dict(tenv, EMC_PREFIX=args.prefix)
                print(("# skipped (%s): " % reason if reason else "") +
                      runner.shell_line(cmd, tenv))
        return 0

    run = runner.Runner()
    outcomes = {}   # combo name -> [RunOutcome]
    meta_cmds = {}  # combo name -> [command records]
    skipped = {}    # transport name -> reason
    not_applicable = {}  # combo name -> reason (e.g. a memif cable on 3 nodes)
    interrupted = False
    cluster_up = False
    layout = {}

    def on_signal(signum, frame):
        raise Interrupted("signal %d" % signum)

    # Phases by cluster size: 2-rank benchmarks on a 2-node cluster (one
    # direct veth "cable", like the papers' two hosts), 3-rank ones on a
    # 3-node cluster (through the emulated switch) so every rank has its own
    # node.  --nodes N forces one cluster for everything.
    if mode == "cluster" and not args.nodes:
        # a benchmark or a transport may need its own cluster shape too
        # (up_args: --links 2, --mtu 3402 for AF_XDP)
        by_shape = {}
        for t in transports:
            for b in benches:
                by_shape.setdefault((b.nodes or max(2, b.np), tuple(b.up_args) + tuple(t.up_args)),
                                    []).append((t, b))
        phases = [(k, by_shape[k]) for k in sorted(by_shape)]
    else:
        phases = [((args.nodes if mode == "cluster" else None, ()),
                   [(t, b) for t in transports for b in benches])]

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        for t in transports:
            reason = t.skip_reason(ctx)
            if reason:
                skipped[t.name] = reason
                print("compare.py: %s skipped: %s" % (t.name, reason), file=sys.stderr)
        for (nodes, up_args), phase_combos in phases:
            if all(t.name in skipped for t, _ in phase_combos):
                continue
            phase_benches = []
            for _, b in phase_combos:
                if b not in phase_benches:
                    phase_benches.append(b)
            if mode == "cluster":
                if cluster_up:
                    run.run([args.emcluster, "down"], base_env, 120,
                            os.path.join(logs, "emcluster-down"), cwd=REPO)
                up = [args.emcluster, "up", "-n", str(nodes)] + list(up_args)
                if args.links:
                    up += ["--links", str(args.links)]
                if args.mtu:
                    up += ["--mtu", str(args.mtu)]
                print("compare.py: %s" % runner.shell_line(up, {"EMC_PREFIX": args.prefix}),
                      file=sys.stderr)
                cluster_up = True  # bring it down even if 'up' half-worked
                res = run.run(up, base_env, 180, os.path.join(logs, "emcluster-up"), cwd=REPO)
                if res["rc"] != 0 or res["timed_out"]:
                    print("compare.py: emcluster up failed: %s (log %s.err)"
                          % (runner.failure_reason(res, 180), res["log"]), file=sys.stderr)
                    return 2
            if mode != "local":
                have = runner.cluster_nodes(args.prefix)
                if len(have) < 2:
                    print("compare.py: cluster %r has %d node(s); need 2 (start it, or drop "
                          "--no-cluster)" % (args.prefix, len(have)), file=sys.stderr)
                    return 2
                topo = "direct veth" if len(have) == 2 else "switched"
                for b in phase_benches:
                    layout[b.label] = ("%d nodes (%s), one rank per node" % (len(have), topo)
                                       if b.np <= len(have) else
                                       "%d ranks on %d nodes (%s, map-by node)"
                                       % (b.np, len(have), topo))
            for rep in range(args.repeat):
                for t, b in phase_combos:
                    if t.name in skipped:
                        continue
                    why = t.not_applicable(b, len(have) if mode != "local" else None)
                    if why:
                        not_applicable[combo_name(t, b)] = why
                        continue
                    cmd, tenv = command(t, b)
                    env = dict(base_env)
                    env.update(tenv)
                    env.update(b.env)
                    name = combo_name(t, b)
                    logp = os.path.join(logs, "%s-%s-r%d" % (
                        t.name, re.sub(r"[^A-Za-z0-9_.=-]+", "_", b.label.replace(":", "to")),
                        rep + 1))
                    res = run.run(cmd, env, timeout, logp, cwd=REPO)
                    oc = runner.outcome_of(res, b, timeout)
                    outcomes.setdefault(name, []).append(oc)
                    shown = dict(tenv)
                    if mode != "local":
                        shown["EMC_PREFIX"] = args.prefix
                    rec = {"repeat": rep + 1, "cmd": runner.shell_line(cmd, shown),
                           "rc": res["rc"], "seconds": round(res["seconds"], 2),
                           "status": "ok" if oc.ok else "failed", "log": res["log"]}
                    if not oc.ok:
                        rec["reason"] = oc.reason
                    meta_cmds.setdefault(name, []).append(rec)
                    print("[%d/%d] %-8s %-14s %s (%.1f s)%s" % (
                        rep + 1, args.repeat, t.name, b.label, rec["status"],
                        res["seconds"], "" if oc.ok else ": " + oc.reason),
                        file=sys.stderr)
    except Interrupted as e:
        interrupted = True
        print("compare.py: interrupted (%s); writing what was measured" % e, file=sys.stderr)
    finally:
        # no more signals-as-exceptions while cleaning up
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        run.abort_current()
        if cluster_up:
            down = [args.emcluster, "down"]
            res = run.run(down, base_env, 120, os.path.join(logs, "emcluster-down"), cwd=REPO)
            if res["rc"] != 0:
                print("compare.py: emcluster down failed: %s" % runner.failure_reason(res, 120),
                      file=sys.stderr)
        for s, h in old.items():
            signal.signal(s, h)

    # ---- aggregate, merge, write ----
    new_rows = []
    for t in transports:
        for b in benches:
            name = combo_name(t, b)
            if t.name in skipped:
                new_rows.append(results.status_row(t.name, b.name, b.pattern, b.unit,
                                                   "skipped", skipped[t.name], b.fields))
            elif name in outcomes:
                new_rows += results.promote(
                    results.aggregate(t.name, b.name, b.pattern, b.unit, outcomes[name], b.fields),
                    b.top_fields)
            elif name in not_applicable:
                new_rows.append(results.status_row(t.name, b.name, b.pattern, b.unit,
                                                   "skipped", not_applicable[name], b.fields))
    json_path = os.path.join(out_dir, "compare.json")
    meta_path = os.path.join(out_dir, "compare-meta.json")
    tnames = [t.name for t in TRANSPORTS]
    bnames = report.BENCH_ORDER
    merged = results.sort_rows(results.merge(results.load_rows(json_path), new_rows),
                               tnames, bnames)
    results.write_json_atomic(json_path, merged)

    meta = {}
    if os.path.exists(meta_path):
        try:
            with open(meta_path) as f:
                meta = json.load(f)
        except (OSError, ValueError):
            meta = {}
    if not isinstance(meta, dict):
        meta = {}
    meta["schema"] = "em-compare-meta v1"
    meta["environment"] = env_info
    meta["interrupted"] = interrupted
    combos = meta.setdefault("combos", {})
    for t in transports:
        for b in benches:
            name = combo_name(t, b)
            if t.name not in skipped and name not in meta_cmds:
                continue
            combos[name] = {"date": env_info["date"], "np": b.np, "mode": mode,
                            "layout": layout.get(b.label, "local host" if mode == "local" else None),
                            "quick": args.quick, "status": "skipped" if t.name in skipped else None,
                            "reason": skipped.get(t.name), "commands": meta_cmds.get(name, []),
                            "environment": env_info}
            if t.name not in skipped:
                oks = sum(1 for c in meta_cmds[name] if c["status"] == "ok")
                combos[name]["status"] = "ok" if oks else "failed"
    results.write_json_atomic(meta_path, meta)

    title = "ethermpi transport comparison"
    md = report.markdown(merged, tnames, baseline=args.baseline, title=title)
    md += "\nEnvironment: %s, kernel %s, %s CPU(s), %s; mode %s%s. Details: compare-meta.json.\n" % (
        env_info["date"], env_info["kernel"], env_info["cpu_count"], env_info["openmpi"],
        mode, ", quick" if args.quick else "")
    with open(os.path.join(out_dir, "compare.md"), "w") as f:
        f.write(md)
    print(md)
    png = os.path.join(out_dir, "compare.png")
    if not report.plot(merged, png, tnames, title=title):
        print("compare.py: matplotlib not available; %s not written (use /usr/bin/python3)"
              % png, file=sys.stderr)
    if interrupted:
        return 130
    if args.strict and any(r.get("status") == "failed" or r.get("failed_runs") for r in new_rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
