#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What results/compare.md and the figures may show (tools/compare_lib):

  - a ratio column divides columns of one run only: compare.json with two
    runs, rendered by `compare.py --report-only`, never shows a ratio
    between them, and a table whose tcp this run did not measure has no
    ratio column at all; rows without a "run" field count by (commit, date);
  - the committed results/compare.md keeps that rule (no marked column of
    an earlier run in a table with ratio columns);
  - the ratio figures take this run's rows only; the absolute figures
    carry each row's min-max of the repeats;
  - progress lines and the time left (compare_lib/timing.py), the wall
    time record, and the hygiene check of README.md's make demo time.

    /usr/bin/python3 tests/results/test_results_report.py
"""

import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))

from compare_lib import figures, report, results, timing  # noqa: E402

OLD = ("1111111", "2026-11-20T10:00:00+00:00")
NEW = ("2222222", "2026-11-28T10:00:00+00:00")
NEW_RUN = results.run_id(*NEW)
SIZES = (8, 64, 1024)


def rows_of(transport, bench, unit, values, prov, with_run=True, runs=None):
    """One row per size; values = {size: median}; runs: the repeats."""
    out = []
    for s, v in values.items():
        r = {"transport": transport, "benchmark": bench, "size_bytes": s, "median": v,
             "unit": unit, "runs": list(runs or (v * 0.9, v, v * 1.2)), "status": "ok",
             "failed_runs": 0, "commit": prov[0], "date": prov[1]}
        if with_run:
            r["run"] = results.run_id(*prov)
        out.append(r)
    return out


def two_runs():
    """latency: tcp and rudp of the OLD run (rows without "run", as written
    before rows had it), dpdk-memif and ofi-rxd of the NEW one (no tcp in
    NEW); bw: tcp and rudp of NEW, dpdk-memif of OLD."""
    rows = []
    rows += rows_of("tcp", "latency", "us", {s: 10.0 for s in SIZES}, OLD, with_run=False)
    rows += rows_of("rudp", "latency", "us", {s: 5.0 for s in SIZES}, OLD, with_run=False)
    rows += rows_of("dpdk-memif", "latency", "us", {s: 2.0 for s in SIZES}, NEW)
    rows += rows_of("ofi-rxd", "latency", "us", {s: 40.0 for s in SIZES}, NEW)
    rows += rows_of("tcp", "bw", "MB/s", {s: 1000.0 for s in SIZES}, NEW)
    rows += rows_of("rudp", "bw", "MB/s", {s: 500.0 for s in SIZES}, NEW)
    rows += rows_of("dpdk-memif", "bw", "MB/s", {s: 4000.0 for s in SIZES}, OLD)
    return rows


def tables(md):
    """[(heading, caption lines, header cells, body rows)] of a compare.md."""
    out, heading, caption = [], None, []
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            heading, caption = line, []
        elif line.startswith("| size |"):
            header = [c.strip() for c in line.strip("|").split("|")]
            body = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                body.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            out.append((heading, caption, header, body))
            caption = []
            continue
        elif line.strip():
            caption.append(line)
        i += 1
    return out


def render(rows, meta):
    """compare.py --report-only on @p rows in a scratch dir: compare.md."""
    with tempfile.TemporaryDirectory() as d:
        results.write_json_atomic(os.path.join(d, "compare.json"), rows)
        with open(os.path.join(d, "compare-meta.json"), "w") as f:
            json.dump(meta, f)
        p = subprocess.run(["/usr/bin/python3", os.path.join(REPO, "tools", "compare.py"),
                            "--report-only", "--out", d], capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            raise AssertionError("compare.py --report-only failed: %s" % p.stderr[-2000:])
        with open(os.path.join(d, "compare.md")) as f:
            return f.read(), sorted(os.listdir(d))


class SameRunRatios(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        meta = {"environment": {"date": NEW[1], "git_commit": NEW[0], "run": NEW_RUN}}
        cls.md, cls.files = render(two_runs(), meta)
        cls.tables = tables(cls.md)

    def test_no_ratio_across_runs(self):
        """Every table with a ratio column holds columns of this run only,
        and each ratio is the quotient of that table's own cells."""
        with_ratio = [t for t in self.tables if any("/" in c for c in t[2])]
        self.assertTrue(with_ratio, "no table with a ratio column: the bw one should have one")
        measured = {(r["benchmark"], r["transport"]) for r in two_runs()
                    if results.run_of(r) == NEW_RUN}
        for heading, caption, header, body in with_ratio:
            with self.subTest(table=heading):
                self.assertFalse(any(report.OLD_MARK in c for c in header), header)
                bench = heading.split()[1]
                for c in header[1:]:
                    for t in c.split("/"):
                        self.assertIn((bench, t), measured,
                                      "%s: column %s holds a transport this run did not measure"
                                      % (heading, c))
                self.assertFalse(any("Earlier run" in c for c in caption), caption)
                col = {c: k for k, c in enumerate(header)}
                for cells in body:
                    for c in header:
                        if "/" not in c:
                            continue
                        num, base = c.split("/")
                        want = float(cells[col[num]]) / float(cells[col[base]])
                        self.assertAlmostEqual(float(cells[col[c]].rstrip("x")), want, places=2)

    def test_bw_ratio_of_this_run(self):
        bw = [t for t in self.tables if t[0] == "## bw"]
        self.assertEqual(bw[0][2], ["size", "tcp", "rudp", "rudp/tcp"])
        self.assertEqual(bw[0][3][0][-1], "0.50x")
        # the older dpdk-memif column stands in its own table, dated, no ratio
        self.assertEqual(bw[1][2], ["size", "dpdk-memif" + report.OLD_MARK])
        self.assertIn("Earlier run, 2026-11-20 10:00:00 UTC, commit 1111111", bw[1][1][-1])
        self.assertNotIn("dpdk-memif/tcp", self.md)

    def test_no_ratio_without_this_runs_tcp(self):
        """latency: this run has no tcp, so no ratio column anywhere."""
        lat = [t for t in self.tables if t[0] == "## latency"]
        self.assertEqual(lat[0][2], ["size", "dpdk-memif", "ofi-rxd"])
        self.assertIn("No ratio columns: tcp was not measured in this run.", lat[0][1])
        # the old run's tcp and rudp: a table of their own (rows without a
        # "run" field count by commit and date), no ratio even between them
        self.assertEqual(lat[1][2], ["size", "tcp" + report.OLD_MARK, "rudp" + report.OLD_MARK])
        self.assertNotIn("rudp/tcp", self.md.split("## bw")[0])

    def test_spread_line(self):
        self.assertIn("- spread of the repeats, (max - min) / median per size: median 30 %", self.md)

    def test_figures(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("no matplotlib: figures not drawn")
        self.assertIn("latency.png", self.files)
        self.assertIn("bandwidth.png", self.files)
        self.assertIn("bandwidth-ratio.png", self.files)
        self.assertNotIn("latency-ratio.png", self.files)   # this run has no latency tcp

    def test_ratio_figures_take_this_run_only(self):
        built = {f: p for f, _, p in figures.build_all(two_runs(), ["tcp", "rudp", "dpdk-memif"],
                                                       this_run=NEW)}
        self.assertNotIn("latency-ratio.png", built)
        (bw,) = built["bandwidth-ratio.png"]
        self.assertEqual([(s["transport"], s["y"]) for s in bw["series"]],
                         [("rudp", [0.5, 0.5, 0.5])])
        # the old run named as this run: its latency ratio, no bw ratio
        old = {f: p for f, _, p in figures.build_all(two_runs(), ["tcp", "rudp", "dpdk-memif"],
                                                     this_run=OLD)}
        self.assertEqual([s["transport"] for s in old["latency-ratio.png"][0]["series"]], ["rudp"])
        self.assertNotIn("bandwidth-ratio.png", old)

    def test_absolute_figures_carry_the_spread(self):
        built = {f: p for f, _, p in figures.build_all(two_runs(), ["tcp", "rudp", "dpdk-memif"],
                                                       this_run=NEW)}
        (lat,) = built["latency.png"]
        by = {(s["transport"], s["rows"][0]["date"]): s for s in lat["series"]}
        s = by[("dpdk-memif", NEW[1])]
        self.assertEqual((s["y"][0], s["lo"][0], s["hi"][0]), (2.0, 1.8, 2.4))
        self.assertIn(("tcp", OLD[1]), by)     # earlier runs are drawn too (faded)
        (bw, ) = built["bandwidth.png"]
        self.assertEqual(bw["series"][0]["unit"], "GB/s")
        self.assertEqual(bw["series"][0]["y"][0], 1.0)

    def test_legacy_rows_group_by_commit_and_date(self):
        a = {"commit": "c", "date": "d1"}
        self.assertEqual(results.run_of(a), "c@d1")
        self.assertEqual(results.run_of(dict(a, run="c@d1")), results.run_of(a))
        self.assertNotEqual(results.run_of({"commit": "c", "date": "d2"}), results.run_of(a))
        self.assertIsNone(results.run_of({}))


class CommittedReport(unittest.TestCase):
    def test_committed_compare_md_keeps_the_rule(self):
        path = os.path.join(REPO, "results", "compare.md")
        if not os.path.exists(path):
            raise unittest.SkipTest("no results/compare.md in this tree")
        with open(path) as f:
            md = f.read()
        n = 0
        for heading, caption, header, _ in tables(md):
            if any("/" in c for c in header):
                n += 1
                with self.subTest(table=heading):
                    self.assertFalse(any(report.OLD_MARK in c for c in header),
                                     "%s: a ratio next to a column of an earlier run: %s"
                                     % (heading, header))


class Timing(unittest.TestCase):
    def test_progress_lines_and_time_left(self):
        now = [0.0]
        est = timing.Estimates({"timing": {"full": {"step_seconds": {"tcp|latency": 10.0},
                                                    "cluster_up_seconds": 20.0}}}, False)
        self.assertEqual(est.step("tcp|latency", "latency"), 10.0)
        self.assertEqual(est.step("rudp|bw", "bw"), timing.BUILTIN_SECONDS["bw"])
        out = io.StringIO()
        p = timing.Progress([[("tcp|latency", "latency")] * 3, [("tcp|latency", "latency")]],
                            est, out=out, clock=lambda: now[0])
        self.assertEqual(p.total(), 4)
        self.assertEqual(p.left_seconds(), 4 * 10.0 + 2 * 20.0)
        p.plan_phase(0, [("tcp|latency", "latency")] * 3)
        p.begin(0, "tcp|latency", "latency", "latency over tcp (repeat 1/3)")
        now[0] = 20.0
        p.end(0, "tcp|latency", "latency", 20.0)   # twice the estimate
        p.begin(0, "tcp|latency", "latency", "latency over tcp (repeat 2/3)")
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], "[step 1/4] latency over tcp (repeat 1/3) ... 0 s elapsed, "
                                   "about 1 min left")
        # 3 steps left at 2 x 10 s, one cluster to bring up: 80 s
        self.assertEqual(lines[1], "[step 2/4] latency over tcp (repeat 2/3) ... 20 s elapsed, "
                                   "about 2 min left")
        meta = {}
        p.record(meta, NEW[1], NEW[0])
        self.assertEqual(meta["timing"]["full"]["step_seconds"], {"tcp|latency": 20.0})

    def test_wall_record_keys(self):
        meta = {}
        self.assertEqual(timing.wall_record(meta, "demo", 1500, 4, NEW[1], NEW[0], NEW_RUN,
                                            False, 3), "demo")
        self.assertEqual(meta["wall_time"]["demo"]["minutes"], 25.0)
        self.assertEqual(timing.wall_record(meta, "demo", 60, 1, NEW[1], NEW[0], NEW_RUN,
                                            True, 1), "demo-quick")
        self.assertEqual(meta["wall_time"]["demo"]["minutes"], 25.0)   # the full one stays


def hygiene():
    path = os.path.join(REPO, "tests", "hygiene", "run-hygiene-check")
    loader = importlib.machinery.SourceFileLoader("hygiene_check", path)
    spec = importlib.util.spec_from_loader("hygiene_check", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class ReadmeDemoTime(unittest.TestCase):
    README = ("# x\n\n- `make demo` runs the benchmarks.  It takes\n  about %d minutes end to "
              "end.\n- `make test` takes about 99 minutes.\n")

    def check(self, stated, recorded):
        mod = hygiene()
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "README.md"), "w") as f:
                f.write(self.README % stated)
            if recorded is not None:
                os.makedirs(os.path.join(d, "results"))
                with open(os.path.join(d, "results", "compare-meta.json"), "w") as f:
                    json.dump({"wall_time": {"demo": {"minutes": recorded, "date": NEW[1],
                                                      "commit": NEW[0]}}}, f)
            out = []
            note = mod.demo_time(d, out)
        return out, note

    def test_within_twenty_percent_passes(self):
        self.assertEqual(self.check(25, 25.0)[0], [])
        self.assertEqual(self.check(22, 26.0)[0], [])

    def test_off_by_more_fails_naming_both(self):
        out, _ = self.check(13, 25.0)
        self.assertEqual(len(out), 1)
        self.assertTrue(re.search(r"about 13 minutes.*25\.0 minutes", out[0]), out[0])

    def test_no_record_is_said_not_passed_silently(self):
        out, note = self.check(13, None)
        self.assertEqual(out, [])
        self.assertIn("not checked", note)

    def test_the_real_tree(self):
        mod = hygiene()
        out = []
        with contextlib.redirect_stdout(io.StringIO()):
            note = mod.demo_time(REPO, out)
        if note:
            raise unittest.SkipTest(note)
        self.assertEqual(out, [])


if __name__ == "__main__":
    unittest.main()
