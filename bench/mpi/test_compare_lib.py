#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Unit tests for tools/compare_lib (parsing, medians, merge, report,
timeouts).  Stdlib unittest only:

    /usr/bin/python3 bench/mpi/test_compare_lib.py
    tools/compare.py --selftest
"""

import json
import os
import sys
import tempfile
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))

from compare_lib import report, results, runner  # noqa: E402
from compare_lib.table import ParseError, parse_bench_output  # noqa: E402
from compare_lib.results import RunOutcome  # noqa: E402

LATENCY_OUT = """\
# em_latency: 2 ranks (0 <-> 1 measured), iterations 200:20, quick
# em-bench latency transport-neutral v1
# size_bytes latency us
0                   6.089
1                   5.628
[vm:01234] some Open MPI warning on stdout
1024                5.752
"""

PINGPONG_OUT = """\
# em-bench pingpong transport-neutral v1
# size_bytes rtt_median us/rt rtt_mean us/rt
0   10.0  11.0
64  12.0  13.5
"""


def table(name, unit, rows, extra_cols=()):
    cols = " ".join("%s %s" % c for c in extra_cols)
    text = "# em-bench %s transport-neutral v1\n# size_bytes v %s %s\n" % (name, unit, cols)
    for size, vals in rows:
        text += "%d %s\n" % (size, " ".join(repr(float(v)) for v in vals))
    return parse_bench_output(text)


def ok(name, unit, rows, extra_cols=()):
    return RunOutcome(True, table=table(name, unit, rows, extra_cols))


class ParseTests(unittest.TestCase):
    def test_latency_table(self):
        t = parse_bench_output(LATENCY_OUT)
        self.assertEqual(t.name, "latency")
        self.assertEqual(t.columns, [("latency", "us")])
        self.assertEqual(t.unit, "us")
        self.assertEqual(sorted(t.rows), [0, 1, 1024])
        self.assertAlmostEqual(t.primary()[1024], 5.752)
        self.assertEqual(len(t.comments), 1)

    def test_two_columns(self):
        t = parse_bench_output(PINGPONG_OUT)
        self.assertEqual(t.columns, [("rtt_median", "us/rt"), ("rtt_mean", "us/rt")])
        self.assertEqual(t.rows[64], [12.0, 13.5])

    def test_errors(self):
        bad = {
            "no header": "0 1.0\n",
            "no column line": "# em-bench latency transport-neutral v1\n",
            "column line not size_bytes": "# em-bench latency transport-neutral v1\n# size x us\n0 1\n",
            "odd column tokens": "# em-bench latency transport-neutral v1\n# size_bytes latency\n0 1\n",
            "too few fields": "# em-bench latency transport-neutral v1\n# size_bytes l us\n0\n",
            "too many fields": "# em-bench latency transport-neutral v1\n# size_bytes l us\n0 1 2\n",
            "non-numeric": "# em-bench latency transport-neutral v1\n# size_bytes l us\n0 abc\n",
            "nan": "# em-bench latency transport-neutral v1\n# size_bytes l us\n0 nan\n",
            "duplicate": "# em-bench latency transport-neutral v1\n# size_bytes l us\n0 1\n0 2\n",
            "empty": "# em-bench latency transport-neutral v1\n# size_bytes l us\n",
            "version": "# em-bench latency transport-neutral v2\n# size_bytes l us\n0 1\n",
            "two headers": LATENCY_OUT + LATENCY_OUT,
        }
        for what, text in bad.items():
            with self.subTest(what=what):
                with self.assertRaises(ParseError):
                    parse_bench_output(text)


class AggregateTests(unittest.TestCase):
    def test_median_odd_and_even(self):
        runs = [ok("latency", "us", [(0, [3.0]), (8, [10.0])]),
                ok("latency", "us", [(0, [1.0]), (8, [30.0])]),
                ok("latency", "us", [(0, [2.0]), (8, [20.0])])]
        rows = results.aggregate("tcp", "latency", None, "us", runs)
        self.assertEqual([r["size_bytes"] for r in rows], [0, 8])
        self.assertEqual(rows[0]["median"], 2.0)
        self.assertEqual(rows[0]["runs"], [3.0, 1.0, 2.0])
        self.assertEqual(rows[1]["median"], 20.0)
        self.assertNotIn("pattern", rows[0])
        self.assertEqual(rows[0]["status"], "ok")
        self.assertEqual(rows[0]["failed_runs"], 0)
        rows = results.aggregate("tcp", "latency", None, "us", runs[:2])
        self.assertEqual(rows[0]["median"], 2.0)   # mean of the middle two
        self.assertEqual(rows[1]["median"], 20.0)

    def test_failed_runs_are_left_out(self):
        runs = [ok("bw", "MB/s", [(1, [100.0])]),
                RunOutcome(False, reason="timeout after 60 s"),
                ok("bw", "MB/s", [(1, [300.0])])]
        rows = results.aggregate("ofi-rxd", "bw", None, "MB/s", runs)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["median"], 200.0)
        self.assertEqual(rows[0]["runs"], [100.0, 300.0])
        self.assertEqual(rows[0]["failed_runs"], 1)

    def test_all_failed_gives_one_failed_row(self):
        runs = [RunOutcome(False, reason="timeout after 60 s"),
                RunOutcome(False, reason="exit 1: em_bibw: content mismatch")]
        rows = results.aggregate("ofi-rxd", "bibw", None, "MB/s", runs)
        self.assertEqual(len(rows), 1)
        r = rows[0]
        self.assertIsNone(r["median"])
        self.assertIsNone(r["size_bytes"])
        self.assertEqual(r["status"], "failed")
        self.assertIn("2/2 runs failed", r["reason"])
        self.assertIn("content mismatch", r["reason"])

    def test_pattern_and_secondary(self):
        runs = [ok("pingpong", "us/rt", [(0, [10.0, 11.0])], [("mean", "us/rt")]),
                ok("pingpong", "us/rt", [(0, [12.0, 15.0])], [("mean", "us/rt")])]
        rows = results.aggregate("tcp", "pingpong", "2:1", "us/rt", runs)
        self.assertEqual(rows[0]["pattern"], "2:1")
        self.assertEqual(rows[0]["median"], 11.0)
        self.assertEqual(rows[0]["secondary"]["mean"], {"median": 13.0, "unit": "us/rt"})

    def test_size_missing_in_one_run(self):
        runs = [ok("latency", "us", [(0, [1.0]), (4, [5.0])]),
                ok("latency", "us", [(0, [3.0])])]
        rows = results.aggregate("tcp", "latency", None, "us", runs)
        self.assertEqual(rows[1]["runs"], [5.0])
        self.assertEqual(rows[1]["median"], 5.0)

    def test_unit_mismatch_raises(self):
        with self.assertRaises(ValueError):
            results.aggregate("tcp", "latency", None, "us", [ok("latency", "ms", [(0, [1.0])])])


class MergeTests(unittest.TestCase):
    def setUp(self):
        self.old = [
            {"transport": "tcp", "benchmark": "latency", "size_bytes": 0, "median": 9.0, "unit": "us", "runs": [9.0]},
            {"transport": "tcp", "benchmark": "latency", "size_bytes": 8, "median": 9.5, "unit": "us", "runs": [9.5]},
            {"transport": "tcp", "benchmark": "burst", "pattern": "1:1", "size_bytes": 0, "median": 5.0, "unit": "us/msg", "runs": [5.0]},
            {"transport": "tcp", "benchmark": "burst", "pattern": "2:1", "size_bytes": 0, "median": 7.0, "unit": "us/msg", "runs": [7.0]},
            {"transport": "dpdk-memif", "benchmark": "bds-oneway", "size_bytes": 512, "median": 3.0, "unit": "us", "runs": [3.0], "links": 2},
            results.status_row("ofi-rxd", "bibw", None, "MB/s", "failed", "timeout"),
        ]

    def test_replace_same_combo_keep_others(self):
        new = [{"transport": "tcp", "benchmark": "latency", "size_bytes": 0, "median": 6.0, "unit": "us", "runs": [6.0]}]
        merged = results.merge(self.old, new)
        lat = [r for r in merged if r["transport"] == "tcp" and r["benchmark"] == "latency"]
        # the whole combination is replaced: size 8 from the old sweep is gone
        self.assertEqual(lat, new)
        self.assertEqual(len(merged), len(self.old) - 2 + 1)
        self.assertTrue(any(r["benchmark"] == "bds-oneway" for r in merged))

    def test_pattern_is_part_of_the_key(self):
        new = [{"transport": "tcp", "benchmark": "burst", "pattern": "2:1", "size_bytes": 0, "median": 8.0, "unit": "us/msg", "runs": [8.0]}]
        merged = results.merge(self.old, new)
        burst = sorted((r["pattern"], r["median"]) for r in merged if r["benchmark"] == "burst")
        self.assertEqual(burst, [("1:1", 5.0), ("2:1", 8.0)])

    def test_success_replaces_failed_row_and_back(self):
        new = [{"transport": "ofi-rxd", "benchmark": "bibw", "size_bytes": 1, "median": 2.0, "unit": "MB/s", "runs": [2.0]}]
        merged = results.merge(self.old, new)
        rxd = [r for r in merged if r["transport"] == "ofi-rxd"]
        self.assertEqual(rxd, new)
        failed = [results.status_row("ofi-rxd", "bibw", None, "MB/s", "failed", "again")]
        merged2 = results.merge(merged, failed)
        self.assertEqual([r for r in merged2 if r["transport"] == "ofi-rxd"], failed)

    def test_json_round_trip(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "sub", "compare.json")
            self.assertEqual(results.load_rows(p), [])
            results.write_json_atomic(p, self.old)
            self.assertEqual(results.load_rows(p), self.old)
            with open(p, "w") as f:
                json.dump({"not": "a list"}, f)
            with self.assertRaises(ValueError):
                results.load_rows(p)

    def test_row_keys(self):
        none = (None,) * len(results.VARIANT_FIELDS)
        self.assertEqual(results.row_key(self.old[2]), ("tcp", "burst", "1:1") + none + (0,))
        self.assertEqual(results.combo_key(self.old[0]), ("tcp", "latency", None) + none)

    def test_variant_fields_are_separate_combinations(self):
        one = results.aggregate("dpdk-memif", "halo-oneway", None, "MB/s",
                                [ok("halo-oneway", "MB/s", [(64, [10.0])])], {"links": 1})
        two = results.aggregate("dpdk-memif", "halo-oneway", None, "MB/s",
                                [ok("halo-oneway", "MB/s", [(64, [19.0])])], {"links": 2})
        self.assertEqual(one[0]["links"], 1)
        merged = results.merge(one, two)
        self.assertEqual(sorted(r["links"] for r in merged), [1, 2])
        again = results.merge(merged, results.aggregate(
            "dpdk-memif", "halo-oneway", None, "MB/s",
            [ok("halo-oneway", "MB/s", [(64, [11.0])])], {"links": 1}))
        self.assertEqual(sorted((r["links"], r["median"]) for r in again), [(1, 11.0), (2, 19.0)])


class ReportTests(unittest.TestCase):
    def test_markdown_ratio_and_notes(self):
        rows = [
            {"transport": "tcp", "benchmark": "latency", "size_bytes": 1024, "median": 10.0, "unit": "us", "runs": [10.0]},
            {"transport": "ofi-rxd", "benchmark": "latency", "size_bytes": 1024, "median": 25.0, "unit": "us", "runs": [25.0]},
            results.status_row("rudp", "latency", None, "us", "skipped", "mca_btl_rudp.so not found"),
            {"transport": "tcp", "benchmark": "bw", "size_bytes": 1 << 20, "median": 4000.0, "unit": "MB/s", "runs": [4000.0]},
        ]
        md = report.markdown(rows, ["tcp", "rudp", "ofi-rxd"])
        self.assertIn("| size | tcp | ofi-rxd | ofi-rxd/tcp |", md)
        self.assertIn("| 1 KiB | 10.00 | 25.00 | 2.50x |", md)
        self.assertIn("rudp: **skipped**", md)
        self.assertIn("| 1 MiB | 4000 |", md)
        self.assertIn("higher is better", md)
        self.assertLess(md.index("## latency"), md.index("## bw"))

    def test_fmt(self):
        self.assertEqual(report.fmt_size(0), "0 B")
        self.assertEqual(report.fmt_size(3000), "3000 B")
        self.assertEqual(report.fmt_size(4 << 20), "4 MiB")
        self.assertEqual(report.fmt_value(0.1234), "0.123")


class RunnerTests(unittest.TestCase):
    def test_outcome_checks(self):
        b = runner.Benchmark("latency", "em_latency", 2, "us")
        res = {"rc": 0, "timed_out": False, "stdout": LATENCY_OUT, "stderr": "", "log": "x"}
        self.assertTrue(runner.outcome_of(res, b, 60).ok)
        wrong = runner.Benchmark("bw", "em_bw", 2, "MB/s")
        self.assertFalse(runner.outcome_of(res, wrong, 60).ok)
        res2 = dict(res, rc=3, stderr="em_latency: rank 1: content mismatch: byte 4\n")
        oc = runner.outcome_of(res2, b, 60)
        self.assertFalse(oc.ok)
        self.assertIn("content mismatch", oc.reason)
        res3 = dict(res, timed_out=True, rc=-9, stdout="")
        self.assertEqual(runner.outcome_of(res3, b, 60).reason, "timeout after 60 s")
        res3b = dict(res, timed_out=True, rc=-9)
        self.assertEqual(runner.outcome_of(res3b, b, 60).reason,
                         "timeout after 60 s (sizes up to 1024 B had completed)")
        res4 = dict(res, stdout="garbage\n")
        self.assertIn("bad output", runner.outcome_of(res4, b, 60).reason)

    def test_select(self):
        names = [b.label for b in runner.select(runner.BENCHMARKS, "burst@2:1,latency",
                                                lambda b: [b.name, b.label], "benchmark")]
        # (a name selects its variants too: latency's rdv rows, issue 5)
        self.assertEqual(names, ["latency", "burst@2:1", "latency,rdv=own-queue", "latency,rdv=daemon"])
        self.assertEqual(len(runner.select(runner.BENCHMARKS, None, lambda b: [b.name], "b")),
                         len(runner.BENCHMARKS))
        with self.assertRaises(SystemExit):
            runner.select(runner.TRANSPORTS, "nosuch", lambda t: [t.name], "transport")

    def test_transport_templates(self):
        rudp = [t for t in runner.TRANSPORTS if t.name == "rudp"][0]
        ctx = {"build": "/nonexistent/build", "iface": "eth0"}
        self.assertIn("not found", rudp.skip_reason(ctx))
        args = rudp.mca_args(ctx)
        self.assertIn(runner.SYSTEM_MCA_DIR + ":/nonexistent/build/ompi/btl/rudp", args)
        rxd = [t for t in runner.TRANSPORTS if t.name == "ofi-rxd"][0]
        self.assertEqual(rxd.env_vars(ctx)["FI_UDP_IFACE"], "eth0")
        self.assertIn("udp;ofi_rxd", rxd.mca_args(ctx))

    def test_timeout_kills_the_whole_tree(self):
        with tempfile.TemporaryDirectory() as d:
            pidfile = os.path.join(d, "pids")
            # a child in its own process group, like a remote orted
            cmd = ["/bin/sh", "-c",
                   "setsid sleep 60 & echo $! > %s; sleep 60 & echo $! >> %s; wait" % (pidfile, pidfile)]
            t0 = time.time()
            res = runner.Runner().run(cmd, dict(os.environ), 1.0, os.path.join(d, "log"))
            self.assertTrue(res["timed_out"])
            self.assertLess(time.time() - t0, 15)
            with open(pidfile) as f:
                pids = [int(x) for x in f.read().split()]
            self.assertEqual(len(pids), 2)
            time.sleep(0.2)
            for p in pids:
                alive = os.path.exists("/proc/%d" % p) and not runner._is_zombie(p)
                self.assertFalse(alive, "pid %d survived the timeout" % p)

    def test_run_ok(self):
        with tempfile.TemporaryDirectory() as d:
            res = runner.Runner().run(["/bin/sh", "-c", "echo hi; echo err >&2; exit 3"],
                                      dict(os.environ), 10, os.path.join(d, "log"))
            self.assertEqual((res["rc"], res["stdout"], res["stderr"], res["timed_out"]),
                             (3, "hi\n", "err\n", False))
            self.assertIn("exit 3: err", runner.failure_reason(res, 10))


HALO_APP_OUT = """\
# em_halo_app: 2 ranks, grid 64 x 64 x 34 doubles split along z, 50 steps
# rank 0: sync 0.001399 s, compute 0.001931 s
# verify: identical to the single-process reference (bit-exact, tolerance 0)
# em-bench halo-app transport-neutral v1
# size_bytes sync_s s compute_s s
32768            0.001389       0.001939
"""


class HaloTests(unittest.TestCase):
    """Seed 002 rows: variants by link count, halo-app's compute_s."""

    def halo_rows(self):
        rows = []
        for t, links, v in (("tcp", 1, 100.0), ("dpdk-memif", 1, 150.0),
                            ("tcp", 2, 180.0), ("dpdk-memif", 2, 400.0)):
            rows += results.aggregate(t, "halo-oneway", None, "MB/s",
                                      [ok("halo-oneway", "MB/s", [(512, [v])])], {"links": links})
        return rows

    def test_markdown_one_table_per_link_count(self):
        md = report.markdown(self.halo_rows(), ["tcp", "rudp", "dpdk-memif"])
        self.assertIn("## halo-oneway (1 link)", md)
        self.assertIn("## halo-oneway (2 links)", md)
        self.assertLess(md.index("## halo-oneway (1 link)"), md.index("## halo-oneway (2 links)"))
        one = md[md.index("(1 link)"):md.index("(2 links)")]
        two = md[md.index("(2 links)"):]
        self.assertIn("| 512 B | 100.0 | 150.0 | 1.50x |", one)
        self.assertIn("| 512 B | 180.0 | 400.0 | 2.22x |", two)
        self.assertNotIn("180.0", one)

    def test_variant_label(self):
        self.assertEqual(report.variant_label(()), "")
        self.assertEqual(report.variant_label((("links", 1),)), "1 link")
        self.assertEqual(report.variant_label((("links", 2), ("mode", "daemon"))),
                         "2 links, daemon mode")
        self.assertEqual(report.variant_of({"links": 2, "pattern": "1:1", "mode": None}),
                         (("links", 2),))

    def test_plot_with_variants(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("no matplotlib")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.png")
            self.assertTrue(report.plot(self.halo_rows(), path, ["tcp", "dpdk-memif"]))
            self.assertGreater(os.path.getsize(path), 1000)

    def test_halo_app_compute_s(self):
        b = [x for x in runner.BENCHMARKS if x.name == "halo-app"][0]
        res = {"rc": 0, "timed_out": False, "stdout": HALO_APP_OUT, "stderr": "", "log": "x"}
        oc = runner.outcome_of(res, b, 60)
        self.assertTrue(oc.ok, oc.reason)
        rows = results.promote(results.aggregate("tcp", b.name, b.pattern, b.unit, [oc, oc],
                                                 b.fields), b.top_fields)
        self.assertEqual(len(rows), 1)
        r = rows[0]
        self.assertEqual((r["size_bytes"], r["median"], r["unit"]), (32768, 0.001389, "s"))
        self.assertEqual(r["compute_s"], 0.001939)
        self.assertEqual(r["secondary"]["compute_s"], {"median": 0.001939, "unit": "s"})
        md = report.markdown(rows, ["tcp"])
        self.assertIn("## halo-app 128x128x66 (1 link)", md)
        self.assertIn("compute_s, s:", md)
        # a failed row has nothing to promote
        self.assertNotIn("compute_s", results.promote(
            [results.status_row("tcp", "halo-app", None, "s", "failed", "x")], ["compute_s"])[0])

    def test_benchmarks_and_link_variants(self):
        by = {b.label: b for b in runner.BENCHMARKS}
        for pat in ("oneway", "twoway", "alternating"):
            one, two = by["halo-%s,links=1" % pat], by["halo-%s,links=2" % pat]
            self.assertEqual((one.table, one.unit, one.np), ("halo-" + pat, "MB/s", 2))
            self.assertEqual(one.up_args, [])
            self.assertEqual(two.up_args, ["--links", "2"])
        tr = {t.name: t for t in runner.TRANSPORTS}
        ctx = {"build": "/b", "iface": "eth0", "prefix": "h6"}
        two, one = by["halo-twoway,links=2"], by["halo-twoway,links=1"]
        for name in ("tcp", "rudp", "dpdk-memif"):
            self.assertIsNone(tr[name].not_applicable(two, 2))
            self.assertIsNone(tr[name].not_applicable(one, 2))
            self.assertEqual(one.mca_for(tr[name], ctx), tr[name].mca_args(ctx))
        # appended for tcp, replaced (not given twice) for dpdk
        args = two.mca_for(tr["tcp"], ctx)
        self.assertEqual(args[-3:], ["--mca", "btl_tcp_if_include", "eth0,eth1"])
        args = two.mca_for(tr["dpdk-memif"], ctx)
        self.assertEqual(args.count("btl_dpdk_vdev"), 1)
        self.assertEqual(args[args.index("btl_dpdk_vdev") + 1],
                         "@/run/ethermpi/h6/dpdk/%h.memif;@/run/ethermpi/h6/dpdk/%h.memif1")
        self.assertEqual(len(args), len(tr["dpdk-memif"].mca_args(ctx)))
        self.assertIn("several-link", tr["ofi-rxd"].not_applicable(two, 2))
        self.assertEqual(runner.select(runner.BENCHMARKS, "halo-oneway", lambda b: [b.name, b.label],
                                       "benchmark"), [by["halo-oneway,links=1"], by["halo-oneway,links=2"]])


if __name__ == "__main__":
    unittest.main()
