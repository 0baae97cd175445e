# SPDX-License-Identifier: BSD-3-Clause
"""[relax-dpdk] sweep: the asynchronous relaxation solver (apps/relax) over
udp-bcast, dpdk-bcast (memif cable) and mpi-allgather, on a 2-node emulated
cluster.  Run through `tools/compare.py --suite relax [options]`.

Rows (merged into <out>/compare.json, docs/benchmarks.md schema):

    {"transport": "dpdk-bcast", "benchmark": "relax", "elements_per_packet": 1,
     "n": 8000, "ranks": 2, "loss_pct": 0, "size_bytes": 8,
     "median": 0.61, "unit": "s", "runs": [...], "iterations": 12.5,
     "status": "ok", "failed_runs": 0,
     "secondary": {"iter_s": {...}, "dropped": {...}, "residual": {...}}}

median = time to solution (judge's clock, from the end of setup to the
verified answer); iterations = median of the mean sweeps per iterative rank
(the paper's Table 2); size_bytes = update payload per frame (8 x elements
per packet; for mpi-allgather 8 x rows per rank).  Also writes relax.md
(tables, the paper-style comparisons, a scaling model) and relax.png
(the paper's Figs. 5-12 in one figure).
"""

import argparse
import os
import re
import shlex
import signal
import statistics
import sys

from . import results, runner

BENCH = "relax"
UNIT = "s"
TRANSPORTS = ["udp-bcast", "dpdk-bcast", "mpi-allgather"]
ASYNC = ("udp-bcast", "dpdk-bcast")
LINE_RE = re.compile(r"^relax\s+(\S+=\S+(\s+\S+=\S+)*)\s*$")
NUMERIC = ("n", "ranks", "elements_per_packet", "sparse", "loss_pct", "time_s", "iter_s",
           "verify_s", "iterations", "sweeps_judged", "restarts", "residual", "tol", "verified", "sent",
           "send_full", "received", "dropped", "gaps", "rejected", "late", "own", "err_direct")


class RelaxParseError(ValueError):
    pass


def parse_output(text):
    """The solver's result line ('# em-relax v1' then 'relax k=v ...') as a dict."""
    if "# em-relax v1" not in text:
        raise RelaxParseError("no '# em-relax v1' header")
    for line in text.splitlines():
        m = LINE_RE.match(line.strip())
        if not m:
            continue
        d = {}
        for kv in m.group(1).split():
            k, v = kv.split("=", 1)
            if k in NUMERIC:
                try:
                    d[k] = float(v)
                except ValueError:
                    raise RelaxParseError("field %s=%r is not a number" % (k, v))
            else:
                d[k] = v
        for need in ("transport", "time_s", "verified", "residual", "iterations"):
            if need not in d:
                raise RelaxParseError("result line lacks %s" % need)
        return d
    raise RelaxParseError("no result line")


class Case:
    def __init__(self, transport, n, ranks, k, loss=0.0, sparse=0, sweep=""):
        self.transport = transport
        self.n = n
        self.ranks = ranks          # iterative ranks (the judge is one more)
        self.k = k if transport in ASYNC else None
        self.loss = loss
        self.sparse = sparse
        self.sweep = sweep          # which figure asked for it (for the report)

    def key(self):
        return (self.transport, self.n, self.ranks, self.k, self.loss, self.sparse)

    def fields(self):
        return {"elements_per_packet": self.k, "n": self.n, "ranks": self.ranks,
                "loss_pct": self.loss}

    def label(self):
        s = "%s n=%d ranks=%d" % (self.transport, self.n, self.ranks)
        if self.k is not None:
            s += " k=%d" % self.k
        if self.loss:
            s += " loss=%g%%" % self.loss
        if self.sparse:
            s += " sparse=%d" % self.sparse
        return s


def build_cases(a):
    """The sweeps of the paper (Figs. 5/8/11: elements per packet; 6/9/12:
    rank count; 7/10: matrix size) plus loss, as a de-duplicated list."""
    cases, seen = [], set()

    def add(c):
        if c.key() not in seen:
            seen.add(c.key())
            cases.append(c)
    want = set(a.sweeps.split(","))
    if "k" in want:
        for t in ASYNC:
            for k in a.ks:
                add(Case(t, a.n, a.max_ranks, k, sweep="k"))
        add(Case("mpi-allgather", a.n, a.max_ranks, None, sweep="k"))
    if "ranks" in want:
        for r in range(1, a.max_ranks + 1):
            for t in TRANSPORTS:
                add(Case(t, a.n, r, a.k_default, sweep="ranks"))
    if "n" in want:
        for n in a.ns:
            for t in TRANSPORTS:
                add(Case(t, n, a.max_ranks, a.k_default, sweep="n"))
    if "loss" in want:
        for k in (1, a.k_default):
            for t in ASYNC:
                add(Case(t, a.n, a.max_ranks, k, sweep="loss"))
                add(Case(t, a.n, a.max_ranks, k, loss=a.loss, sweep="loss"))
    if "sparse" in want:
        for t in TRANSPORTS:
            add(Case(t, a.n_sparse, a.max_ranks, a.k_default, sparse=16, sweep="sparse"))
    return cases


def parse_args(argv):
    p = argparse.ArgumentParser(prog="compare.py --suite relax",
                                description="[relax-dpdk] relaxation-solver sweep (docs/relax.md)")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p.add_argument("--prefix", default="emrelax", help="cluster prefix (default emrelax)")
    p.add_argument("--no-cluster", action="store_true", help="use a running 2-node cluster")
    p.add_argument("--emcluster", default=os.path.join(repo, "tools", "emcluster"))
    p.add_argument("--mtu", type=int, default=None, help="passed to emcluster up")
    p.add_argument("--build", default=os.path.join(repo, "build"))
    p.add_argument("--out", default=os.path.join(repo, "results"))
    p.add_argument("--logs", default=None)
    p.add_argument("--quick", action="store_true",
                   help="smaller system and fewer points (n=4000, k in 1,4,20,max)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeout", type=float, default=90.0, help="seconds per run")
    p.add_argument("--sweeps", default="k,ranks,n,loss",
                   help="comma list of k, ranks, n, loss, sparse (default k,ranks,n,loss)")
    p.add_argument("--n", type=int, default=None, help="unknowns (default 8000; quick 4000)")
    p.add_argument("--ks", default=None, help="elements per packet for the k sweep; 0 = max")
    p.add_argument("--ns", default=None, help="sizes for the n sweep")
    p.add_argument("--k-default", type=int, default=20,
                   help="elements per packet for the rank and size sweeps (paper: 20)")
    p.add_argument("--max-ranks", type=int, default=None,
                   help="iterative ranks (default: cores, at most 2 = the memif cable's nodes)")
    p.add_argument("--loss", type=float, default=5.0, help="loss %% for the loss sweep")
    p.add_argument("--solver-time-limit", type=float, default=60.0)
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--strict", action="store_true")
    a = p.parse_args(argv)
    a.n = a.n or (4000 if a.quick else 8000)
    a.n_sparse = a.n * 8
    a.ks = [int(x) for x in (a.ks or ("1,4,20,0" if a.quick else "1,2,4,8,20,60,120,0")).split(",")]
    a.ns = [int(x) for x in (a.ns or ("2000,4000" if a.quick else "2000,4000,8000,12000")).split(",")]
    cores = os.cpu_count() or 1
    a.max_ranks = a.max_ranks or max(1, min(2, cores))
    if a.repeat < 1:
        raise SystemExit("--repeat must be >= 1")
    return a


def command(a, c, relax_bin):
    memif = "@/run/ethermpi/%s/dpdk/%%h.memif" % a.prefix
    cmd = [a.emcluster, "mpirun", "--map-by", "node", "--bind-to", "none", "-np", str(c.ranks + 1),
           "--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp",
           relax_bin, "-q", "-t", c.transport, "-n", str(c.n),
           "-T", "%g" % a.solver_time_limit]
    if c.k is not None:
        cmd += ["-k", str(c.k)]
    if c.sparse:
        cmd += ["-s", str(c.sparse)]
    if c.transport == "dpdk-bcast":
        cmd += ["-d", memif]
    if c.loss:
        cmd += ["--loss", "%g" % c.loss]   # dpdk: rx_loss; udp: reported (xdploss does it)
    return cmd


def set_xdploss(run, a, env, logs, pct):
    ok = True
    for node in (0, 1):
        res = run.run([a.emcluster, "xdploss", str(node), "%g" % pct if pct else "off"], env, 60,
                      os.path.join(logs, "xdploss-%d" % node))
        ok = ok and res["rc"] == 0
    return ok


def aggregate(c, outs, reasons):
    fields = c.fields()
    good = [o for o in outs if o is not None]
    if c.k == 0 and good:
        # "as many as a frame holds": record the number the wire allowed
        # (udp at MTU 9000: 1118; memif: 184)
        fields["elements_per_packet"] = int(good[0].get("elements_per_packet", 0))
    if not good:
        return results.status_row(c.transport, BENCH, None, UNIT, "failed",
                                  "%d/%d runs failed: %s" % (len(outs), len(outs), "; ".join(reasons)),
                                  fields)
    row = {"transport": c.transport, "benchmark": BENCH}
    row.update(fields)
    if c.sparse:
        row["sparse_nnz"] = c.sparse
    per_frame = fields["elements_per_packet"] if c.k is not None else max(1, c.n // max(1, c.ranks))
    row.update({"size_bytes": 8 * per_frame,
                "median": results.median([o["time_s"] for o in good]), "unit": UNIT,
                "runs": [o["time_s"] for o in good], "status": "ok",
                "failed_runs": len(outs) - len(good),
                "iterations": results.median([o["iterations"] for o in good])})
    sec = {}
    for key, unit in (("iter_s", "s"), ("verify_s", "s"), ("sweeps_judged", "sweeps"), ("residual", "rel"), ("sent", "frames"),
                      ("received", "frames"), ("dropped", "frames"), ("send_full", "frames"),
                      ("restarts", "count")):
        vals = [o[key] for o in good if key in o]
        if vals:
            # residuals are ~1e-9: results.median rounds to 6 decimals
            med = statistics.median(vals) if key == "residual" else results.median(vals)
            sec[key] = {"median": med, "unit": unit}
    row["secondary"] = sec
    if reasons:
        row["reason"] = "; ".join(reasons)
    return row


def main(argv, repo):
    a = parse_args(argv)
    build = os.path.abspath(a.build)
    out_dir = os.path.abspath(a.out)
    logs = os.path.abspath(a.logs or os.path.join(build, "compare-logs", "relax"))
    relax_bin = os.path.join(build, "apps", "relax", "relax")
    cases = build_cases(a)
    # the run's provenance, carried by every row it writes (results.stamp)
    run_env = runner.environment(repo) if not a.dry_run else None
    if a.dry_run:
        for c in cases:
            pre = "EMC_PREFIX=%s " % a.prefix
            if c.loss and c.transport == "udp-bcast":
                pre = "(xdploss %g%% on both nodes) " % c.loss + pre
            print(pre + " ".join(shlex.quote(x) for x in command(a, c, relax_bin)))
        return 0
    if not os.access(relax_bin, os.X_OK):
        print("compare.py --suite relax: %s not built (meson setup %s && ninja -C %s)"
              % (relax_bin, build, build), file=sys.stderr)
        return 2
    env = dict(os.environ, EMC_PREFIX=a.prefix, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run = runner.Runner()
    outs = {c.key(): [] for c in cases}
    reasons = {c.key(): [] for c in cases}
    cluster_up = False
    interrupted = False

    def on_signal(signum, frame):
        raise KeyboardInterrupt()
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        if not a.no_cluster:
            up = [a.emcluster, "up", "-n", "2"] + (["--mtu", str(a.mtu)] if a.mtu else [])
            cluster_up = True
            res = run.run(up, env, 180, os.path.join(logs, "emcluster-up"), cwd=repo)
            if res["rc"] != 0:
                print("compare.py --suite relax: emcluster up failed: %s"
                      % runner.failure_reason(res, 180), file=sys.stderr)
                return 2
        # loss-free cases first, then the udp cases that need xdploss
        order = [c for c in cases if not (c.loss and c.transport == "udp-bcast")]
        lossy_udp = [c for c in cases if c.loss and c.transport == "udp-bcast"]
        for rep in range(a.repeat):
            for group, loss in ((order, 0), (lossy_udp, a.loss)):
                if not group:
                    continue
                if loss and not set_xdploss(run, a, env, logs, loss):
                    for c in group:
                        reasons[c.key()].append("emcluster xdploss failed")
                        outs[c.key()].append(None)
                    continue
                for c in group:
                    logp = os.path.join(logs, re.sub(r"[^A-Za-z0-9_.=-]+", "_", c.label()) +
                                        "-r%d" % (rep + 1))
                    res = run.run(command(a, c, relax_bin), env, a.timeout, logp, cwd=repo)
                    o, why = None, None
                    if res["timed_out"] or res["rc"] != 0:
                        why = runner.failure_reason(res, a.timeout)
                        lines = [ln for ln in res["stderr"].splitlines() if ln.startswith("relax")]
                        if lines:
                            why = "exit %s: %s" % (res["rc"], lines[-1][:200])
                    else:
                        try:
                            o = parse_output(res["stdout"])
                            if o.get("verified") != 1:
                                why, o = "not verified (residual %g)" % o["residual"], None
                        except RelaxParseError as e:
                            why = "bad output: %s" % e
                    outs[c.key()].append(o)
                    if why:
                        reasons[c.key()].append("run %d: %s" % (rep + 1, why))
                    print("[%d/%d] %-40s %s" % (rep + 1, a.repeat, c.label(),
                                               "%.3f s, %.1f sweeps" % (o["time_s"], o["iterations"])
                                               if o else "FAILED: " + why), file=sys.stderr)
                if loss:
                    set_xdploss(run, a, env, logs, 0)
    except KeyboardInterrupt:
        interrupted = True
        print("compare.py --suite relax: interrupted; writing what was measured", file=sys.stderr)
    finally:
        run.abort_current()
        if cluster_up:
            run.run([a.emcluster, "down"], env, 120, os.path.join(logs, "emcluster-down"), cwd=repo)
        for s, h in old.items():
            signal.signal(s, h)

    rows = results.stamp([aggregate(c, outs[c.key()], reasons[c.key()])
                          for c in cases if outs[c.key()]],
                         runner.run_commit(run_env), run_env["date"])
    json_path = os.path.join(out_dir, "compare.json")
    merged = results.merge(results.load_rows(json_path), rows)
    results.write_json_atomic(json_path, merged)
    relax_rows = [r for r in merged if r.get("benchmark") == BENCH]
    md = markdown(relax_rows, cases)
    with open(os.path.join(out_dir, "relax.md"), "w") as f:
        f.write(md)
    print(md)
    if not plot(relax_rows, os.path.join(out_dir, "relax.png"), a):
        print("compare.py --suite relax: matplotlib missing; relax.png not written", file=sys.stderr)
    if interrupted:
        return 130
    if a.strict and any(r.get("status") != "ok" or r.get("failed_runs") for r in rows):
        return 1
    return 0


# ---- report -------------------------------------------------------------------

def _ok(rows):
    return [r for r in rows if r.get("status") == "ok" and r.get("median") is not None]


def _pick(rows, **kw):
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def _fmt(v, nd=3):
    return "-" if v is None else ("%.*f" % (nd, v))


def markdown(rows, cases=None):
    ok = _ok(rows)
    L = ["# Asynchronous relaxation ([relax-dpdk]): time to solution", "",
         "Median seconds from the end of setup to the judge's verified answer "
         "(residual ||b-Ax||/||b|| recomputed by the judge from the generator); "
         "sweeps = mean full sweeps per iterative rank (paper's Table 2). "
         "mpi-allgather is synchronous Jacobi (no elements per packet).", ""]
    # elements per packet (Figs. 5, 8, 11)
    for (n, ranks) in sorted({(r["n"], r["ranks"]) for r in ok if not r.get("loss_pct")
                              and not r.get("sparse_nnz") and r.get("elements_per_packet")}):
        ks = sorted({r["elements_per_packet"] for r in ok if r["n"] == n and r["ranks"] == ranks
                     and r.get("elements_per_packet") and not r.get("loss_pct")
                     and not r.get("sparse_nnz")})
        if len(ks) < 2:
            continue
        L += ["## Elements per packet (n = %d, %d iterative ranks; Figs. 5/8/11)" % (n, ranks), "",
              "| k | udp-bcast s | dpdk-bcast s | dpdk/udp | udp sweeps | dpdk sweeps |",
              "|---:|---:|---:|---:|---:|---:|"]
        best = {}
        for k in ks:
            u = _pick(ok, transport="udp-bcast", n=n, ranks=ranks, elements_per_packet=k, loss_pct=0)
            d = _pick(ok, transport="dpdk-bcast", n=n, ranks=ranks, elements_per_packet=k, loss_pct=0)
            u = [r for r in u if not r.get("sparse_nnz")]
            d = [r for r in d if not r.get("sparse_nnz")]
            uv = u[0]["median"] if u else None
            dv = d[0]["median"] if d else None
            for t, v in (("udp-bcast", uv), ("dpdk-bcast", dv)):
                if v is not None and (t not in best or v < best[t][1]):
                    best[t] = (k, v)
            L.append("| %d | %s | %s | %s | %s | %s |" % (
                k, _fmt(uv), _fmt(dv), "%.2fx" % (dv / uv) if uv and dv else "-",
                _fmt(u[0]["iterations"], 1) if u else "-", _fmt(d[0]["iterations"], 1) if d else "-"))
        m = [r for r in _pick(ok, transport="mpi-allgather", n=n, ranks=ranks) if not r.get("sparse_nnz")]
        L.append("")
        if m:
            L.append("mpi-allgather (synchronous Jacobi): %.3f s, %.1f sweeps." % (m[0]["median"], m[0]["iterations"]))
        u1 = _pick(ok, transport="udp-bcast", n=n, ranks=ranks, elements_per_packet=1, loss_pct=0)
        d1 = _pick(ok, transport="dpdk-bcast", n=n, ranks=ranks, elements_per_packet=1, loss_pct=0)
        if u1 and d1:
            L.append("At 1 element per packet: dpdk-bcast %.3f s vs udp-bcast %.3f s: **%+.1f %%** "
                     "(paper: -37.5 %%, -40.1 %% on 7 hosts)." % (
                         d1[0]["median"], u1[0]["median"], 100 * (d1[0]["median"] / u1[0]["median"] - 1)))
        if "udp-bcast" in best and "dpdk-bcast" in best:
            (ku, vu), (kd, vd) = best["udp-bcast"], best["dpdk-bcast"]
            L.append("Best of each: dpdk-bcast %.3f s (k = %d) vs udp-bcast %.3f s (k = %d): "
                     "**%+.1f %%** (paper: -10.5 %%)." % (vd, kd, vu, ku, 100 * (vd / vu - 1)))
        L.append("")
    # ranks (Figs. 6, 9, 12)
    rk = sorted({r["ranks"] for r in ok})
    if len(rk) > 1:
        L += ["## Iterative ranks (Figs. 6/9/12)", "",
              "| n | k | ranks | " + " | ".join(TRANSPORTS) + " |", "|---:|---:|---:|" + "---:|" * len(TRANSPORTS)]
        combos = sorted({(r["n"], r["elements_per_packet"]) for r in ok if r["ranks"] == 1
                         and r["transport"] in ASYNC and r.get("elements_per_packet")})
        for n, k in combos:
            for ranks in rk:
                vals = []
                for t in TRANSPORTS:
                    kk = k if t in ASYNC else None   # mpi-allgather: same row for every k
                    v = [r for r in _pick(ok, transport=t, n=n, ranks=ranks, elements_per_packet=kk)
                         if not r.get("loss_pct") and not r.get("sparse_nnz")]
                    vals.append(_fmt(v[0]["median"]) if v else "-")
                L.append("| %d | %d | %d | %s |" % (n, k, ranks, " | ".join(vals)))
        L.append("")
    # size (Figs. 7, 10)
    ns = sorted({r["n"] for r in ok if not r.get("sparse_nnz")})
    if len(ns) > 1:
        L += ["## Matrix size (Figs. 7/10)", "", "| n | ranks | k | " + " | ".join(TRANSPORTS) + " |",
              "|---:|---:|---:|" + "---:|" * len(TRANSPORTS)]
        for (ranks, k) in sorted({(r["ranks"], r.get("elements_per_packet") or 0) for r in ok
                                  if r["transport"] == "udp-bcast"}):
            if len({r["n"] for r in _pick(ok, transport="udp-bcast", ranks=ranks, elements_per_packet=k)}) < 2:
                continue
            for n in ns:
                vals = []
                for t in TRANSPORTS:
                    v = [r for r in _pick(ok, transport=t, n=n, ranks=ranks,
                                          elements_per_packet=k if t in ASYNC else None)
                         if not r.get("loss_pct") and not r.get("sparse_nnz")]
                    vals.append(_fmt(v[0]["median"]) if v else "-")
                L.append("| %d | %d | %d | %s |" % (n, ranks, k, " | ".join(vals)))
        L.append("")
    # loss
    lossy = [r for r in ok if r.get("loss_pct")]
    if lossy:
        L += ["## Injected loss", "",
              "| transport | n | k | loss % | s | sweeps | frames dropped | same without loss | slowdown |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in sorted(lossy, key=lambda r: (r["transport"], r["elements_per_packet"] or 0)):
            base = [b for b in _pick(ok, transport=r["transport"], n=r["n"], ranks=r["ranks"],
                                     elements_per_packet=r["elements_per_packet"]) if not b.get("loss_pct")]
            bv = base[0]["median"] if base else None
            L.append("| %s | %d | %d | %g | %.3f | %.1f | %d | %s | %s |" % (
                r["transport"], r["n"], r["elements_per_packet"] or 0, r["loss_pct"], r["median"],
                r["iterations"], int(r["secondary"].get("dropped", {}).get("median", 0)),
                _fmt(bv), "%.2fx" % (r["median"] / bv) if bv else "-"))
        L.append("")
    sparse = [r for r in ok if r.get("sparse_nnz")]
    if sparse:
        L += ["## Sparse system", "", "| transport | n | nnz/row | k | s | sweeps |", "|---|---:|---:|---:|---:|---:|"]
        for r in sparse:
            L.append("| %s | %d | %d | %s | %.3f | %.1f |" % (r["transport"], r["n"], r["sparse_nnz"],
                     r.get("elements_per_packet") or "-", r["median"], r["iterations"]))
        L.append("")
    model = scaling_model(ok)
    if model:
        L += model
    bad = [r for r in rows if r.get("status") != "ok"]
    for r in bad:
        L.append("- %s n=%s ranks=%s k=%s loss=%s: **%s** - %s" % (
            r["transport"], r.get("n"), r.get("ranks"), r.get("elements_per_packet"),
            r.get("loss_pct"), r.get("status"), r.get("reason")))
    return "\n".join(L).rstrip() + "\n"


def scaling_model(ok):
    """Ranks beyond the cores: T(P) = S * (n/P * t_row + f(P) * (t_tx + (P-1) * t_rx)),
    f(P) = n/(P*k) frames a rank sends per sweep.  t_row from the 1-rank run
    (no channel), t_tx + t_rx from the 2-rank runs over 1/k, split t_tx = t_rx
    (a 2-rank run cannot tell them apart).  S = sweeps of the largest run."""
    out = []
    for t in ASYNC:
        one = [r for r in _pick(ok, transport=t, ranks=1) if not r.get("loss_pct") and not r.get("sparse_nnz")]
        two = [r for r in _pick(ok, transport=t, ranks=2) if not r.get("loss_pct")
               and not r.get("sparse_nnz") and r.get("elements_per_packet")]
        if not one or len(two) < 2:
            continue
        n = one[0]["n"]
        two = [r for r in two if r["n"] == n]
        if len(two) < 2:
            continue
        s1 = one[0]["secondary"].get("iter_s", {}).get("median", one[0]["median"])
        t_row = s1 / (one[0]["iterations"] * n)
        # per-sweep time at P=2 = n/2 t_row + n/(2k) c  ->  c from a least-squares fit over 1/k
        xs, ys = [], []
        for r in two:
            it = r["secondary"].get("iter_s", {}).get("median", r["median"])
            per_sweep = it / max(r["iterations"], 1)
            xs.append(n / (2.0 * r["elements_per_packet"]))
            ys.append(per_sweep - n / 2.0 * t_row)
        c = sum(x * y for x, y in zip(xs, ys)) / max(sum(x * x for x in xs), 1e-30)
        c = max(c, 0.0)
        t_tx = t_rx = c / 2
        S = statistics.median([r["iterations"] for r in two])
        if not out:
            out += ["## Model for more iterative ranks than cores", "",
                    "T(P) = S x (n/P x t_row + n/(P k) x (t_tx + (P-1) t_rx)), fitted per transport "
                    "from the measured runs (t_row from 1 rank, t_tx + t_rx from the 2-rank k sweep, "
                    "split evenly; S = median sweeps at 2 ranks). Verification time not included.", "",
                    "| transport | n | t_row us | t_tx+t_rx us/frame | k | P=1 | P=2 | P=4 | P=7 | P=16 |",
                    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for k in (1, 20):
            vals = []
            for P in (1, 2, 4, 7, 16):
                f = n / (P * float(k))
                vals.append("%.3f" % (S * (n / P * t_row + (f * (t_tx + (P - 1) * t_rx) if P > 1 else 0))))
            out.append("| %s | %d | %.3f | %.3f | %d | %s |" % (t, n, t_row * 1e6, c * 1e6, k, " | ".join(vals)))
    if out:
        out.append("")
    return out


def plot(rows, path, a=None):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ok = _ok(rows)
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    colors = {"udp-bcast": "tab:blue", "dpdk-bcast": "tab:red", "mpi-allgather": "tab:gray"}
    plain = [r for r in ok if not r.get("loss_pct") and not r.get("sparse_nnz")]
    # (a) elements per packet (Figs. 5/8/11)
    ax = axes[0][0]
    nr = sorted({(r["n"], r["ranks"]) for r in plain if r.get("elements_per_packet")},
                key=lambda x: -len([r for r in plain if (r["n"], r["ranks"]) == x]))
    if nr:
        n, ranks = nr[0]
        for t in ASYNC:
            pts = sorted((r["elements_per_packet"], r["median"]) for r in
                         _pick(plain, transport=t, n=n, ranks=ranks) if r.get("elements_per_packet"))
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=colors[t], label=t)
        m = _pick(plain, transport="mpi-allgather", n=n, ranks=ranks)
        if m:
            ax.axhline(m[0]["median"], color=colors["mpi-allgather"], ls="--", label="mpi-allgather")
        ax.set_xscale("log")
        ax.set_title("time vs elements per packet (n=%d, %d ranks)" % (n, ranks), fontsize=9)
    ax.set_xlabel("elements per packet")
    ax.set_ylabel("time to solution (s)")
    k_default = a.k_default if a else 20

    def loglog(ax, x, keep, title, xlabel):
        """time against row field @p x, one line per transport, over the
        rows @p keep accepts (async transports at the default k only)"""
        for t in TRANSPORTS:
            pts = sorted((r[x], r["median"]) for r in plain if r["transport"] == t and keep(r)
                         and (t not in ASYNC or r.get("elements_per_packet") == k_default))
            if len(pts) > 1:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=colors[t], label=t)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)

    # (b) ranks (Figs. 6/9/12), (c) size (Figs. 7/10)
    loglog(axes[0][1], "ranks", lambda r: a is None or r["n"] == a.n,
           "time vs iterative ranks (log-log)", "iterative ranks")
    loglog(axes[1][0], "n", lambda r: r["ranks"] == (a.max_ranks if a else 2),
           "time vs matrix size (log-log)", "n")
    # (d) sweeps per rank (Table 2) and loss
    ax = axes[1][1]
    for t in ASYNC:
        for loss, style in ((0, "o-"), (None, "s--")):
            sel = [r for r in ok if r["transport"] == t and not r.get("sparse_nnz")
                   and r.get("elements_per_packet") and (a is None or r["n"] == a.n)
                   and r["ranks"] == (a.max_ranks if a else 2)
                   and ((not r.get("loss_pct")) if loss == 0 else bool(r.get("loss_pct")))]
            pts = sorted((r["elements_per_packet"], r["iterations"]) for r in sel)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colors[t],
                        label="%s%s" % (t, "" if loss == 0 else " (loss %g%%)" % sel[0]["loss_pct"]))
    ax.set_xscale("log")
    ax.set_title("sweeps per iterative rank (Table 2), with and without loss", fontsize=9)
    ax.set_xlabel("elements per packet")
    for row in axes:
        for ax in row:
            ax.grid(True, which="both", alpha=0.3)
            if ax.get_lines():
                ax.legend(fontsize=7)
            else:
                ax.text(0.5, 0.5, "no data in this run", ha="center", va="center",
                        transform=ax.transAxes, fontsize=9, color="gray")
    fig.suptitle("[relax-dpdk]: asynchronous relaxation, lossy broadcast", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
