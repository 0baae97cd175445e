#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Unit tests for tools/compare_lib (parsing, medians, merge, report,
timeouts, MTU rows, BTL counters, provenance, figures).  Stdlib unittest
only:

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

from compare_lib import btlstats, figures, hostfile, report, results, runner  # noqa: E402
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

    def test_host_probe_kept_per_run(self):
        runs = [ok("latency", "us", [(8, [1.3])]), ok("latency", "us", [(8, [2.1])]),
                RunOutcome(False, reason="timeout"), ok("latency", "us", [(8, [1.4])])]
        for o, p in zip(runs, [55, 340, 60, None]):
            o.host_cl_rt_ns = p
        rows = results.aggregate("tcp", "latency", None, "us", runs)
        self.assertEqual(rows[0]["runs"], [1.3, 2.1, 1.4])
        self.assertEqual(rows[0]["host_cl_rt_ns"], [55, 340, None])  # aligned with runs
        rows = results.aggregate("tcp", "latency", None, "us", [ok("latency", "us", [(8, [1.0])])])
        self.assertNotIn("host_cl_rt_ns", rows[0])  # never measured: no field

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

    def test_names_notes(self):
        def row(names, size, med, run="a@1"):
            return {"transport": "rudp", "benchmark": "latency", "size_bytes": size, "median": med,
                    "unit": "us", "runs": [med], "names": names, "run": run}
        rows = [row("ids", 8, 10.0), row("wire", 8, 10.5), row("ids", 64, 11.0),
                row("wire", 64, 11.0), row("ids", 1024, 20.0, "b@2"), row("wire", 1024, 99.0)]
        md = report.markdown(rows, ["rudp"])
        # over 0-256 B of the same run only: +0.5 and 0.0, median +0.25
        self.assertIn("rudp: wire v3 costs +0.25 us over wire v2 (median of wire - ids over "
                      "0-256 B, same run; range +0.00 to +0.50)", md)

    def test_cpu_cost_classes(self):
        from importlib.machinery import SourceFileLoader
        cc = SourceFileLoader("cpu_cost", os.path.join(REPO, "tools", "cpu-cost")).load_module()
        self.assertEqual(cc.classify("[k] _copy_to_iter"), "kernel_copy")
        self.assertEqual(cc.classify("[k] __pi_memcpy"), "kernel_copy")
        self.assertEqual(cc.classify("[k] tcp_sendmsg_locked"), "kernel_other")
        self.assertEqual(cc.classify("[.] __memmove_avx512_unaligned_erms"), "user_copy")
        self.assertEqual(cc.classify("[.] opal_progress"), "user_other")
        self.assertEqual(cc.classify("[k] pv_native_safe_halt"), "idle")
        self.assertEqual(cc.parse_size("1M"), 1 << 20)

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
        # (a name selects its variants too: latency's rdv rows, its
        # MTU rows, its framing rows, its mpi rows and its names rows)
        self.assertEqual(names, ["latency", "burst@2:1", "latency,rdv=own-queue", "latency,rdv=daemon",
                                 "latency,mtu=1500", "latency,mtu=9000", "latency,framing=l2",
                                 "latency,framing=udp", "latency,mpi=ompi4", "latency,mpi=ompi5",
                                 "latency,mpi=mpich5", "latency,mpi=ompi4,mtu=1500",
                                 "latency,mpi=ompi5,mtu=1500", "latency,mpi=mpich5,mtu=1500",
                                 "latency,names=wire", "latency,names=ids",
                                 "latency,mpi=ompi5,names=wire", "latency,mpi=ompi5,names=ids"])
        # the names rows run only when asked (--names-rows), then alone
        kept = runner.select_names_rows(runner.BENCHMARKS, False)
        self.assertFalse([b for b in kept if "names" in b.fields])
        only = runner.select_names_rows(runner.BENCHMARKS, True)
        self.assertTrue(only and all("names" in b.fields for b in only))
        rudp = [t for t in runner.TRANSPORTS if t.name == "rudp"][0]
        tcp = [t for t in runner.TRANSPORTS if t.name == "tcp"][0]
        pairs = runner.combos([rudp, tcp], only)
        self.assertTrue(pairs and all(t is rudp for t, _ in pairs))
        self.assertEqual(len(runner.select(runner.BENCHMARKS, None, lambda b: [b.name], "b")),
                         len(runner.BENCHMARKS))
        with self.assertRaises(SystemExit):
            runner.select(runner.TRANSPORTS, "nosuch", lambda t: [t.name], "transport")

    def test_transport_templates(self):
        rudp = [t for t in runner.TRANSPORTS if t.name == "rudp"][0]
        ctx = {"build": "/nonexistent/build", "iface": "eth0"}
        self.assertIn("not found", rudp.skip_reason(ctx))
        args = rudp.mca_args(dict(ctx, ompi_pkglibdir="/ompi/components"))
        self.assertIn("/ompi/components:/nonexistent/build/ompi/btl/rudp", args)
        rxd = [t for t in runner.TRANSPORTS if t.name == "ofi-rxd"][0]
        self.assertEqual(rxd.env_vars(ctx)["FI_UDP_IFACE"], "eth0")
        self.assertIn("udp;ofi_rxd", rxd.mca_args(ctx))

    def test_ompi_pkglibdir_asked_of_ompi_info(self):
        """Open MPI's component dir comes from ompi_info (a stand-in here),
        once; without ompi_info the error names the cause."""
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "ompi_info")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\necho path:pkglibdir:/some/openmpi/lib\n")
            os.chmod(fake, 0o755)
            saved = (os.environ.get("PATH"), os.environ.pop("EM_OMPI_PKGLIBDIR", None),
                     runner._OMPI_PKGLIBDIR)
            try:
                os.environ["PATH"] = d
                runner._OMPI_PKGLIBDIR = None
                self.assertEqual(runner.ompi_pkglibdir(), "/some/openmpi/lib")
                rudp = [t for t in runner.TRANSPORTS if t.name == "rudp"][0]
                self.assertIn("/some/openmpi/lib:/b/ompi/btl/rudp",
                              rudp.mca_args({"build": "/b", "iface": "eth0"}))
                os.remove(fake)
                runner._OMPI_PKGLIBDIR = None
                with self.assertRaisesRegex(RuntimeError, "ompi_info not found"):
                    runner.ompi_pkglibdir()
            finally:
                os.environ["PATH"] = saved[0]
                if saved[1] is not None:
                    os.environ["EM_OMPI_PKGLIBDIR"] = saved[1]
                runner._OMPI_PKGLIBDIR = saved[2]

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
    """[bds] rows: variants by link count, halo-app's compute_s."""

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

    def test_halo_figure_with_variants(self):
        built = figures.build_all(self.halo_rows(), ["tcp", "rudp", "dpdk-memif"])
        self.assertEqual([f for f, _, _ in built], ["halo-ratio.png"])
        (panel,) = built[0][2]
        got = {(s["label"], s.get("dashed", False)): s["y"] for s in panel["series"]}
        self.assertEqual(got, {("dpdk-memif, 1 link", False): [1.5],
                               ("dpdk-memif, 2 links", True): [400.0 / 180.0]})

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



def load_compare_py():
    """tools/compare.py as a module (plan_phases, render)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("compare_py", os.path.join(REPO, "tools", "compare.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TR = {t.name: t for t in runner.TRANSPORTS}
BY_LABEL = {b.label: b for b in runner.BENCHMARKS}
THIS_RUN = ("abc1234", "2026-11-24T00:10:00+00:00")
OLD_RUN = ("dea1e94", "2026-11-22T03:05:18+00:00")


def mtu_rows(bench, unit, values, prov=THIS_RUN, counters=None):
    """Rows of @p bench's MTU variants as the runner writes them:
    values = {(transport, mtu asked): {size: median}}."""
    rows = []
    for (t, mtu), by_size in values.items():
        b = BY_LABEL["%s,mtu=%d" % (bench, mtu)]
        oc = ok(bench, unit, sorted((s, [v]) for s, v in by_size.items()))
        oc.counters = (counters or {}).get((t, mtu))
        rows += results.stamp(results.aggregate(t, bench, None, unit, [oc], TR[t].row_fields(b)),
                              *prov)
    return rows


class MtuTests(unittest.TestCase):
    """The MTU rows: latency, bw, bibw at MTU 1500 and 9000 for the wires of a
    real network; AF_XDP at the largest MTU it opens."""

    def test_benchmarks(self):
        for name in ("latency", "bw", "bibw"):
            for mtu in (1500, 9000):
                b = BY_LABEL["%s,mtu=%d" % (name, mtu)]
                self.assertEqual((b.name, b.fields, b.up_args), (name, {"mtu": mtu}, ["--mtu", str(mtu)]))
        self.assertEqual(runner.MTUS, (1500, 9000))

    def test_only_three_transports_have_mtu_rows(self):
        pairs = runner.combos(runner.TRANSPORTS, [BY_LABEL["bw,mtu=1500"], BY_LABEL["bw"]])
        with_mtu = sorted(t.name for t, b in pairs if "mtu" in b.fields)
        self.assertEqual(with_mtu, ["dpdk-afxdp", "rudp", "tcp"])
        self.assertEqual(len([1 for _, b in pairs if "mtu" not in b.fields]),
                         len([t for t in runner.TRANSPORTS if not t.mpi_rows_only]))
        self.assertIn("MTU rows", TR["dpdk-memif"].not_applicable(BY_LABEL["bw,mtu=1500"], 2))

    def test_cluster_args_one_mtu(self):
        af = TR["dpdk-afxdp"]
        self.assertEqual(af.up_args_for(BY_LABEL["bw,mtu=9000"]), ["--mtu", "3402"])
        self.assertEqual(af.up_args_for(BY_LABEL["bw,mtu=1500"]), ["--mtu", "1500"])
        self.assertEqual(af.up_args_for(BY_LABEL["bw"]), ["--mtu", "3402"])
        self.assertEqual(TR["tcp"].up_args_for(BY_LABEL["latency,mtu=9000"]), ["--mtu", "9000"])
        self.assertEqual(TR["tcp"].up_args_for(BY_LABEL["latency"]), [])
        self.assertEqual(TR["tcp"].up_args_for(BY_LABEL["halo-oneway,links=2"]), ["--links", "2"])

    def test_row_fields_state_the_mtu(self):
        f = TR["dpdk-afxdp"].row_fields(BY_LABEL["latency,mtu=9000"])
        self.assertEqual((f["mtu"], f["mtu_requested"]), (3402, 9000))
        self.assertIn("3402", f["mtu_note"])
        self.assertEqual(TR["tcp"].row_fields(BY_LABEL["latency,mtu=1500"]),
                         {"mtu": 1500, "mtu_requested": 1500})
        self.assertEqual(TR["dpdk-afxdp"].row_fields(BY_LABEL["latency,mtu=1500"]),
                         {"mtu": 1500, "mtu_requested": 1500})
        self.assertEqual(TR["tcp"].row_fields(BY_LABEL["latency"]), {})
        # mtu is part of the key: the MTU rows never replace the default ones
        plain = results.aggregate("tcp", "latency", None, "us", [ok("latency", "us", [(8, [5.0])])])
        merged = results.merge(plain, mtu_rows("latency", "us", {("tcp", 1500): {8: 6.0}}))
        self.assertEqual(sorted((r.get("mtu") or 0, r["median"]) for r in merged),
                         [(0, 5.0), (1500, 6.0)])

    def test_mtu_mismatch(self):
        b = BY_LABEL["bw,mtu=9000"]
        self.assertIsNone(runner.mtu_mismatch(TR["dpdk-afxdp"], b, 3402))
        self.assertIn("MTU 3402, it is at 9000", runner.mtu_mismatch(TR["dpdk-afxdp"], b, 9000))
        self.assertIsNone(runner.mtu_mismatch(TR["tcp"], b, 9000))
        self.assertIn("unknown", runner.mtu_mismatch(TR["tcp"], b, None))
        self.assertIsNone(runner.mtu_mismatch(TR["tcp"], BY_LABEL["bw"], 1500))

    def test_select_mtu_rows(self):
        allb = runner.BENCHMARKS
        only = runner.select_mtu_rows(allb, True, None, False)
        # the MTU rows, and the mpi rows at MTU 1500 (--mpi-rows picks those)
        self.assertEqual(sorted(b.label for b in only), sorted(
            ["%s,mtu=%d" % (n, m) for n in ("latency", "bw", "bibw") for m in (1500, 9000)] +
            ["%s,mpi=%s,mtu=1500" % (n, m) for n in ("latency", "bw", "bibw")
             for m in ("ompi4", "ompi5", "mpich5")]))
        self.assertEqual([b.label for b in runner.select_mpi_rows(only, False)
                          if b.name == "bw"], ["bw,mtu=1500", "bw,mtu=9000"])
        self.assertEqual([b.label for b in runner.select_mtu_rows(
            runner.select_mpi_rows(runner.select(allb, "bw", lambda b: [b.name, b.label], "b"),
                                   False), True, "1500", False)],
            ["bw,mtu=1500"])
        none = runner.select_mtu_rows(allb, False, None, True)
        self.assertFalse(any("mtu" in b.fields for b in none))
        self.assertEqual(len(runner.select_mtu_rows(allb, False, None, False)), len(allb))
        for bad in ("4000", "x"):
            with self.assertRaises(SystemExit):
                runner.select_mtu_rows(allb, True, bad, False)
        with self.assertRaises(SystemExit):
            runner.select_mtu_rows(allb, True, None, True)

    def test_phases_share_a_cluster_per_mtu(self):
        cp = load_compare_py()
        args = cp.parse_args(["--mtu-rows"])
        trs = [TR[n] for n in ("tcp", "rudp", "dpdk-afxdp")]
        pairs = runner.combos(trs, [BY_LABEL["latency,mtu=1500"], BY_LABEL["latency,mtu=9000"]])
        phases = {k: sorted(t.name for t, _ in v) for k, v in cp.plan_phases(args, "cluster", pairs)}
        self.assertEqual(phases, {(2, ("--mtu", "1500")): ["dpdk-afxdp", "rudp", "tcp"],
                                  (2, ("--mtu", "3402")): ["dpdk-afxdp"],
                                  (2, ("--mtu", "9000")): ["rudp", "tcp"]})

    def test_markdown_mtu_tables(self):
        rows = mtu_rows("bw", "MB/s", {("tcp", 1500): {65536: 1000.0}, ("rudp", 1500): {65536: 500.0},
                                       ("tcp", 9000): {65536: 2000.0},
                                       ("dpdk-afxdp", 9000): {65536: 1000.0}})
        md = report.markdown(rows, [t.name for t in runner.TRANSPORTS], this_run=THIS_RUN)
        t1500 = md[md.index("## bw (MTU 1500)"):md.index("## bw (MTU 9000)")]
        t9000 = md[md.index("## bw (MTU 9000)"):]
        self.assertIn("| size | tcp | rudp | rudp/tcp |", t1500)
        self.assertIn("| 64 KiB | 1000 | 500.0 | 0.50x |", t1500)
        # AF_XDP's row for 9000 sits next to tcp's at 9000 and says it ran at 3402
        self.assertIn("| size | tcp | dpdk-afxdp @ MTU 3402 | dpdk-afxdp/tcp |", t9000)
        self.assertIn("| 64 KiB | 2000 | 1000 | 0.50x |", t9000)
        self.assertIn("its row for MTU 9000 ran at 3402", t9000)
        self.assertNotIn("\u2020", md[md.index("## "):])   # all measured in this run


STATS_LINE = ("[emc-n%d] btl_rudp stats: tx 900 frames (800 data, 100 acks, %d retransmits, 2 timeouts), "
              "rx 850 frames (%d dups, %d spurious_retx, 0 out-of-order), msgs 64/64, puts placed 0 "
              "rejected 0, drops: key 0 magic 0 malformed 0 window 0, backpressure 0")
OLD_STATS_LINE = ("[emc-n%d] btl_rudp stats: tx 900 frames (800 data, 100 acks, 5 retransmits, 2 timeouts), "
                  "rx 850 frames (5 dups, 0 out-of-order), msgs 64/64")
BW_OUT = "# em-bench bw transport-neutral v1\n# size_bytes bw MB/s\n65536 1500.0\n"


class MpiRowsTests(unittest.TestCase):
    """The provider rows: latency/bw/bibw with field mpi (ompi4, ompi5, mpich5)."""

    def test_which_transports_run_under_which_mpi(self):
        pairs = runner.combos(runner.TRANSPORTS, [b for b in runner.BENCHMARKS
                                                  if b.name == "latency" and "mpi" in b.fields])
        got = {}
        for t, b in pairs:
            got.setdefault(b.fields["mpi"], []).append(t.name)
        self.assertIn("ofi-tcp", got["mpich5"])
        self.assertIn("tcp", got["ompi5"])
        self.assertNotIn("tcp", got["mpich5"])     # MPICH's tcp path is ofi-tcp
        self.assertIn("dpdk-memif", got["ompi4"])  # the BTL under the MPI it loads into
        self.assertNotIn("dpdk-memif", got["ompi5"])
        self.assertIn("runs under", TR["tcp"].not_applicable(BY_LABEL["latency,mpi=mpich5"], 2))

    def test_mpi_rows_at_mtu_1500_are_for_the_real_wires(self):
        b = BY_LABEL["latency,mpi=mpich5,mtu=1500"]
        names = {t.name for t, _ in runner.combos(runner.TRANSPORTS, [b])}
        self.assertEqual(names, {"ofi-tcp", "ofi-ethermpi-udp", "ofi-ethermpi-afxdp",
                                 "ofi-ethermpi-xdp"})
        b4 = BY_LABEL["bw,mpi=ompi4,mtu=1500"]
        self.assertIn("tcp", {t.name for t, _ in runner.combos(runner.TRANSPORTS, [b4])})
        # the memif cable has no MTU to choose; the row's cluster is at 1500
        self.assertNotIn("ofi-ethermpi-memif",
                         {t.name for t, _ in runner.combos(runner.TRANSPORTS, [b4])})
        self.assertEqual(TR["ofi-ethermpi-udp"].up_args_for(b4)[-2:], ["--mtu", "1500"])
        self.assertEqual(TR["ofi-ethermpi-udp"].row_fields(b4)["mtu"], 1500)

    def test_mpi_rows_only_with_the_option(self):
        allb = list(runner.BENCHMARKS)
        self.assertFalse(any("mpi" in b.fields for b in runner.select_mpi_rows(allb, False)))
        only = runner.select_mpi_rows(allb, True)
        self.assertEqual(sorted({b.name for b in only}),
                         ["allreduce", "alltoall", "bibw", "bw", "latency"])
        self.assertTrue(all("mpi" in b.fields for b in only))
        # a libfabric transport has no rows outside them
        self.assertEqual(runner.combos([TR["ofi-tcp"]], [BY_LABEL["latency"]]), [])

    def test_rows_of_different_mpis_do_not_replace_each_other(self):
        a = results.status_row("ofi-tcp", "latency", None, "us", "skipped", "x", {"mpi": "ompi5"})
        b = results.status_row("ofi-tcp", "latency", None, "us", "skipped", "y", {"mpi": "mpich5"})
        old = results.status_row("tcp", "latency", None, "us", "skipped", "z")
        merged = results.merge([old, a], [b])
        self.assertEqual(len(merged), 3)
        self.assertIsNone(old.get("mpi"))          # the rows from before keep their key

    def test_commands(self):
        cp = load_compare_py()
        args = cp.parse_args(["--mpi-rows", "--prefix", "t", "--venv", "/v"])
        ctx = {"build": "/b", "iface": "eth0", "prefix": "t"}
        cmd, env = cp.build_command(args, "cluster", ctx, "/b/bench/mpi", {}, TR["ofi-tcp"],
                                    BY_LABEL["latency,mpi=mpich5"])
        self.assertTrue(cmd[0].endswith("tools/emc-hydra"))
        self.assertEqual(cmd[-1], "/b/bench/mpi-mpich5/em_latency")
        self.assertEqual((env["EMC_SLOTS"], env["MPICH_CH4_NETMOD"], env["FI_PROVIDER"]),
                         ("1", "ofi", "tcp;ofi_rxm"))
        cmd, env = cp.build_command(args, "cluster", ctx, "/b/bench/mpi", {}, TR["ofi-tcp"],
                                    BY_LABEL["bw,mpi=ompi5"])
        self.assertIn("mtl_ofi_provider_exclude", cmd)
        self.assertIn("-x", cmd)
        self.assertTrue(env["PATH"].startswith("/v/ompi5/bin:"))
        self.assertEqual(cmd[-1], "/b/bench/mpi-ompi5/em_bw")
        cmd, env = cp.build_command(args, "cluster", ctx, "/b/bench/mpi", {}, TR["tcp"],
                                    BY_LABEL["bibw,mpi=ompi4"])
        self.assertEqual(cmd[-1], "/b/bench/mpi/em_bibw")
        self.assertNotIn("PATH", env)
        # the collectives: 4 ranks; Open MPI's ranks yield when idle (they
        # share cores), MPICH's always do and hydra takes no --mca
        coll = BY_LABEL["allreduce@4 ranks/2 nodes,mpi=ompi5"]
        cmd, env = cp.build_command(args, "cluster", ctx, "/b/bench/mpi", {},
                                    TR["ofi-ethermpi-udp"], coll)
        self.assertEqual(cmd[cmd.index("-np") + 1], "4")
        self.assertIn("mpi_yield_when_idle", cmd)
        self.assertEqual(cmd[-1], "/b/bench/mpi-ompi5/em_allreduce")
        coll = BY_LABEL["alltoall@4 ranks/2 nodes,mpi=mpich5"]
        cmd, env = cp.build_command(args, "cluster", ctx, "/b/bench/mpi", {},
                                    TR["ofi-ethermpi-udp"], coll)
        self.assertNotIn("mpi_yield_when_idle", cmd)
        self.assertEqual(cmd[cmd.index("-n") + 1], "4")
        self.assertEqual(cmd[-1], "/b/bench/mpi-mpich5/em_alltoall")

    def test_missing_wheel_skips_its_rows(self):
        from compare_lib import mpis
        with tempfile.TemporaryDirectory() as d:
            why = mpis.prepare(REPO, d, os.path.join(d, "novenv"), "mpich5")
            self.assertIn("make venv", why)
            self.assertIsNone(mpis.prepare(REPO, d, os.path.join(d, "novenv"), "ompi4"))


class CounterTests(unittest.TestCase):
    """rudp bw's spurious_retx from the ranks' print_stats lines."""

    def test_parse(self):
        text = "\n".join([STATS_LINE % (0, 7, 7, 3), "noise 12 spurious_retx",
                          "[emc-n0] btl_rudp links: 0 messages kept until their turn, 0 dropped",
                          STATS_LINE % (1, 0, 0, 4)])
        self.assertEqual(btlstats.parse_counters(text, "rudp", ["spurious_retx", "retransmits"]),
                         {"spurious_retx": 7, "retransmits": 7})
        self.assertEqual(btlstats.parse_counters("btl_rudp stats: rx 1 frames, spurious_retx=5\n",
                                                 "rudp", ["spurious_retx"]), {"spurious_retx": 5})

    def test_rudp_live_format(self):
        # the exact line rudp-live's print_stats prints (commit 672a002)
        line = ("[hD-n1:10362] [hD-n1] btl_rudp stats: tx 13645 frames (2138 data, 11360 acks, 147 "
                "retransmits, 35 timeouts), rx 238564 frames (17514 dups, 0 out-of-order, 17490 "
                "spurious_retx), msgs 651/3675, puts placed 186874 rejected 0, drops: key 0 magic 0 "
                "malformed 0 window 0, backpressure 0; payload bytes copied by ethermpi: tx 58188 "
                "(sent from the user's memory: 2174630), rx reassembly/out-of-order 46299334, rx put "
                "placement 262012928 (handed over in place: 46332306)")
        self.assertEqual(btlstats.parse_counters(line, "rudp", ["spurious_retx", "dups"]),
                         {"spurious_retx": 17490, "dups": 17514})

    def test_absent_is_none_never_zero(self):
        old = OLD_STATS_LINE % 0 + "\n" + OLD_STATS_LINE % 1
        self.assertEqual(btlstats.parse_counters(old, "rudp", ["spurious_retx"]), {"spurious_retx": None})
        mixed = STATS_LINE % (0, 0, 0, 0) + "\n" + OLD_STATS_LINE % 1
        self.assertEqual(btlstats.parse_counters(mixed, "rudp", ["spurious_retx"]), {"spurious_retx": None})
        self.assertEqual(btlstats.parse_counters("no stats at all\n", "rudp", ["spurious_retx"]),
                         {"spurious_retx": None})
        # another BTL's line does not count for rudp
        self.assertEqual(btlstats.parse_counters((STATS_LINE % (0, 0, 0, 9)).replace("btl_rudp", "btl_dpdk"),
                                                 "rudp", ["spurious_retx"]), {"spurious_retx": None})

    def test_bw_runs_ask_rudp_for_stats(self):
        ctx = {"build": "/b", "iface": "eth0", "prefix": "hD"}
        for label in ("bw", "bw,mtu=1500", "bw,mtu=9000"):
            args = BY_LABEL[label].mca_for(TR["rudp"], ctx)
            self.assertEqual(args[args.index("btl_rudp_print_stats") + 1], "1")
            self.assertNotIn("btl_rudp_print_stats", BY_LABEL[label].mca_for(TR["tcp"], ctx))
        self.assertNotIn("btl_rudp_print_stats", BY_LABEL["latency"].mca_for(TR["rudp"], ctx))

    def test_outcome_and_rows(self):
        b = BY_LABEL["bw,mtu=1500"]
        res = {"rc": 0, "timed_out": False, "stdout": BW_OUT,
               "stderr": STATS_LINE % (0, 4, 4, 2) + "\n" + STATS_LINE % (1, 0, 0, 1) + "\n", "log": "x"}
        oc = runner.outcome_of(res, b, 60, TR["rudp"])
        self.assertEqual(oc.counters, {"spurious_retx": 3})
        self.assertIsNone(runner.outcome_of(res, b, 60, TR["tcp"]).counters)
        self.assertIsNone(runner.outcome_of(res, BY_LABEL["latency"], 60, TR["rudp"]).counters)
        old = dict(res, stderr=OLD_STATS_LINE % 0)
        oc_old = runner.outcome_of(old, b, 60, TR["rudp"])
        rows = results.aggregate("rudp", "bw", None, "MB/s", [oc, oc], TR["rudp"].row_fields(b))
        self.assertEqual((rows[0]["spurious_retx"], rows[0]["spurious_retx_runs"]), (6, [3, 3]))
        rows = results.aggregate("rudp", "bw", None, "MB/s", [oc, oc_old], TR["rudp"].row_fields(b))
        self.assertIsNone(rows[0]["spurious_retx"])
        self.assertEqual(rows[0]["spurious_retx_runs"], [3, None])
        # a failed run has no counters and does not count
        rows = results.aggregate("rudp", "bw", None, "MB/s",
                                 [oc, RunOutcome(False, reason="timeout")], TR["rudp"].row_fields(b))
        self.assertEqual(rows[0]["spurious_retx"], 3)
        rows = results.aggregate("tcp", "bw", None, "MB/s", [runner.outcome_of(res, b, 60, TR["tcp"])])
        self.assertNotIn("spurious_retx", rows[0])

    def test_markdown_counts(self):
        rows = mtu_rows("bw", "MB/s", {("tcp", 1500): {65536: 1000.0}, ("rudp", 1500): {65536: 900.0},
                                       ("tcp", 9000): {65536: 1000.0}, ("rudp", 9000): {65536: 900.0}},
                        counters={("rudp", 1500): {"spurious_retx": 0},
                                  ("rudp", 9000): {"spurious_retx": None}})
        md = report.markdown(rows, ["tcp", "rudp"])
        t1500 = md[md.index("(MTU 1500)"):md.index("(MTU 9000)")]
        self.assertIn("summed over 1 run(s): **0**", t1500)
        self.assertIn("spurious retransmissions not reported", md[md.index("(MTU 9000)"):])


class ProvenanceTests(unittest.TestCase):
    """Every row names the run that measured it; compare.md marks the
    columns not measured in this run."""

    def rows(self):
        fresh = results.stamp(results.aggregate("tcp", "latency", None, "us",
                                                [ok("latency", "us", [(8, [10.0])])]), *THIS_RUN)
        old = results.stamp(results.aggregate("rudp", "latency", None, "us",
                                              [ok("latency", "us", [(8, [5.0])])]), *OLD_RUN)
        skipped = results.stamp([results.status_row("ofi-rxd", "latency", None, "us", "failed",
                                                    "timeout")], *OLD_RUN)
        return fresh, old, skipped

    def test_stamp_and_merge_keep_old_provenance(self):
        fresh, old, skipped = self.rows()
        self.assertEqual((fresh[0]["commit"], fresh[0]["date"]), THIS_RUN)
        merged = results.merge(old + skipped, fresh)
        self.assertEqual(sorted(results.provenance(r) for r in merged),
                         sorted([THIS_RUN, OLD_RUN, OLD_RUN]))

    def test_markdown_marks_old_columns_only(self):
        fresh, old, skipped = self.rows()
        md = report.markdown(fresh + old + skipped, ["tcp", "rudp", "ofi-rxd"], this_run=THIS_RUN)
        # this run's tcp alone; rudp of the earlier run in a table of its own, in no ratio
        self.assertIn("| size | tcp |\n", md)
        self.assertIn("\u2020 Earlier run, 2026-11-22 03:05:18 UTC, commit dea1e94 (not this run: "
                      "no ratios):\n\n| size | rudp\u2020 |\n", md)
        self.assertNotIn("rudp/tcp", md)
        self.assertIn("ofi-rxd: **failed** - timeout \u2020(earlier run: 2026-11-22 03:05:18 UTC, "
                      "commit dea1e94)", md)
        self.assertIn("This run: 2026-11-24 00:10:00 UTC, commit abc1234", md)
        # a row from another commit at the same date is not this run's either
        other = results.stamp(results.aggregate("tcp", "latency", None, "us",
                                                [ok("latency", "us", [(8, [10.0])])]), "fff0000", THIS_RUN[1])
        self.assertFalse(report.is_fresh(other[0], THIS_RUN))
        # without a run named, the newest run is this run
        self.assertIn("| size | rudp\u2020 |", report.markdown(fresh + old, ["tcp", "rudp"]))
        # rows without any provenance are one table, with ratios (tests build those)
        plain = [dict(r) for r in fresh + old]
        for r in plain:
            del r["commit"], r["date"], r["run"]
        self.assertIn("| size | tcp | rudp | rudp/tcp |", report.markdown(plain, ["tcp", "rudp"]))

    def test_unrecorded_rows_are_marked(self):
        plain = results.aggregate("tcp", "bw", None, "MB/s", [ok("bw", "MB/s", [(8, [10.0])])])
        md = report.markdown(plain, ["tcp"], this_run=THIS_RUN)
        self.assertIn("| size | tcp\u2020 |", md)
        self.assertIn("Earlier run, date and commit not recorded", md)

    def test_backfill_from_meta(self):
        rows = [{"transport": "tcp", "benchmark": "halo-app", "pattern": "128x128x66", "links": 1,
                 "size_bytes": 1, "median": 1.0},
                {"transport": "tcp", "benchmark": "latency", "size_bytes": 1, "median": 1.0},
                {"transport": "rudp", "benchmark": "latency", "size_bytes": 1, "median": 1.0,
                 "commit": "abc1234", "date": THIS_RUN[1]},
                {"transport": "ofi-rxd", "benchmark": "bw", "size_bytes": 1, "median": 1.0}]
        meta = {"combos": {
            "tcp|halo-app@128x128x66,links=1": {"date": OLD_RUN[1], "environment": {"git_commit": "dea1e94"}},
            "tcp|latency": {"date": "2026-11-22T05:50:26+00:00", "environment": {"git_commit": "21a5b78"}},
            "rudp|latency": {"date": OLD_RUN[1], "environment": {"git_commit": "dea1e94"}}}}
        self.assertEqual(results.row_label(rows[0]), "halo-app@128x128x66,links=1")
        self.assertEqual(results.backfill_provenance(rows, meta), 2)
        self.assertEqual(results.provenance(rows[0]), OLD_RUN)
        self.assertEqual(results.provenance(rows[1]), ("21a5b78", "2026-11-22T05:50:26+00:00"))
        self.assertEqual(results.provenance(rows[2]), THIS_RUN)   # its own is kept
        self.assertEqual(results.provenance(rows[3]), (None, None))
        self.assertEqual(results.backfill_provenance(rows, {"combos": "garbage"}), 0)

    def test_run_commit(self):
        self.assertEqual(runner.run_commit({"git_commit": "abc1234", "git_dirty": True}), "abc1234-dirty")
        self.assertEqual(runner.run_commit({"git_commit": "abc1234", "git_dirty": False}), "abc1234")
        self.assertIsNone(runner.run_commit({}))


class SweepTests(unittest.TestCase):
    """compare.py's measuring loop with a stand-in program (no MPI, no
    cluster): counters reach the rows, MTU rows without a cluster are
    skipped with the reason, every new row is stamped."""

    def test_local_sweep(self):
        cp = load_compare_py()
        args = cp.parse_args(["--local", "--repeat", "2", "--only-transports", "tcp,rudp",
                              "--only-benchmarks", "bw"])
        transports, pairs = cp.select_pairs(args)
        calls = []

        def command(t, b):
            calls.append((t.name, b.label))
            n = len(calls)
            script = "printf '%s'; printf '%s\\n%s\\n' >&2" % (
                BW_OUT.replace("\n", "\\n"), STATS_LINE % (0, n, n, n), STATS_LINE % (1, 0, 0, 1))
            return ["/bin/sh", "-c", script], {}

        with tempfile.TemporaryDirectory() as d:
            sweep = cp.Sweep(args, "local", {"build": d, "iface": "eth0", "prefix": "hD"},
                             dict(os.environ), d, 30, command)
            old, sys.stderr = sys.stderr, open(os.devnull, "w")
            try:
                for (nodes, up_args), combos in cp.plan_phases(args, "local", pairs):
                    self.assertTrue(sweep.run_phase(nodes, up_args, combos))
            finally:
                sys.stderr.close()
                sys.stderr = old
        # the MTU rows and the rdv rows are not run here
        self.assertEqual(sorted(set(calls)), [("rudp", "bw"), ("tcp", "bw")])
        rows = results.stamp(cp.aggregate_rows(pairs, sweep.skipped, sweep.outcomes,
                                               sweep.not_applicable), *THIS_RUN)
        by = {(r["transport"], r.get("mtu"), r.get("rdv"), r.get("framing")): r for r in rows}
        rudp = by[("rudp", None, None, None)]
        # run k of rudp printed k + 1 on rank 0 and 1 on rank 1
        ks = [i + 1 for i, c in enumerate(calls) if c[0] == "rudp"]
        self.assertEqual(rudp["spurious_retx_runs"], [k + 1 for k in ks])
        self.assertEqual(rudp["spurious_retx"], sum(k + 1 for k in ks))
        self.assertNotIn("spurious_retx", by[("tcp", None, None, None)])
        self.assertEqual(by[("tcp", 1500, None, None)]["status"], "skipped")
        self.assertIn("emulated cluster", by[("rudp", 9000, None, None)]["reason"])
        # the framing rows are the dpdk BTL's only
        self.assertEqual(by[("rudp", None, None, "udp")]["status"], "skipped")
        self.assertIn("framings", by[("rudp", None, None, "udp")]["reason"])
        self.assertEqual(by[("rudp", 9000, None, None)]["mtu_requested"], 9000)
        self.assertTrue(all(results.provenance(r) == THIS_RUN for r in rows))


def synthetic_rows():
    """Every kind of row the figures draw: MTU rows (fresh), default-cluster
    rows (old), sockets, halo-app, compute-burst."""
    rows = mtu_rows("latency", "us", {(t, m): {0: v, 8: v, 65536: 4 * v}
                                      for t, v in (("tcp", 6.0), ("rudp", 4.8), ("dpdk-afxdp", 3.4))
                                      for m in (1500, 9000)})
    rows += mtu_rows("bw", "MB/s", {(t, m): {65536: v, 1 << 20: v}
                                    for t, v in (("tcp", 2000.0), ("rudp", 1000.0), ("dpdk-afxdp", 800.0))
                                    for m in (1500, 9000)},
                     counters={("rudp", 1500): {"spurious_retx": 12}, ("rudp", 9000): {"spurious_retx": 0}})
    for t, v in (("tcp", 6.0), ("dpdk-memif", 0.5), ("raw-memif", 0.1)):
        rows += results.stamp(results.aggregate(t, "latency", None, "us",
                                                [ok("latency", "us", [(8, [v]), (64, [v])])]), *OLD_RUN)
    for t, v in (("tcp", 11.0), ("rudp", 2.0)):
        rows += results.stamp(results.aggregate(t, "sockets", "16 ranks/2 nodes", "count",
                                                [ok("sockets", "count", [(0, [v])])]), *THIS_RUN)
    for t, sync, comp in (("tcp", 0.012, 0.068), ("dpdk-memif", 0.013, 0.066)):
        oc = ok("halo-app", "s", [(131072, [sync, comp])], [("compute_s", "s")])
        rows += results.promote(results.aggregate(t, "halo-app", "128x128x66", "s", [oc], {"links": 1}),
                                ["compute_s"])
    for t, mode, v, retx in (("dpdk-memif", "direct", 0.115, 192.0), ("dpdk-memif-daemon", "daemon", 0.12, 128.0)):
        oc = ok("compute-burst", "s", [(256, [v, 0.0, retx])], [("drops", "count"), ("retransmits", "count")])
        rows += results.aggregate(t, "compute-burst", None, "s", [oc], {"mode": mode})
    rows.append(results.status_row("dpdk-memif", "sockets", "16 ranks/2 nodes", "count", "skipped", "1 per node"))
    return rows


class FigureTests(unittest.TestCase):
    """One figure per question; what each panel shows, and that the PNGs
    are written (and stale ones removed)."""

    ORDER = [t.name for t in runner.TRANSPORTS]

    def built(self, rows=None):
        return {f: panels for f, _, panels in figures.build_all(rows or synthetic_rows(), self.ORDER)}

    def test_latency_ratio_per_mtu(self):
        panels = self.built()["latency-ratio.png"]
        # the default-cluster rows are an earlier run's: no ratio panel of theirs
        self.assertEqual([p["title"] for p in panels], ["latency, MTU 1500", "latency, MTU 9000"])
        s1500 = {s["label"]: (s["x"], s["y"]) for s in panels[0]["series"]}
        # ratio to tcp at the same size and MTU; 0 B left out of the log axis
        self.assertEqual(s1500["rudp"][0], [8, 65536])
        self.assertAlmostEqual(s1500["rudp"][1][0], 0.8)
        self.assertIn("dpdk-afxdp (at MTU 3402)", {s["label"] for s in panels[1]["series"]})
        self.assertIn("dpdk-afxdp", s1500)
        self.assertEqual(panels[0]["refs"], [(1.0, "= tcp")])
        # with the earlier run named as this run, only its panel is left
        (old,) = {f: ps for f, _, ps in figures.build_all(synthetic_rows(), self.ORDER,
                                                           this_run=OLD_RUN)}["latency-ratio.png"]
        self.assertEqual(sorted(s["label"] for s in old["series"]), ["dpdk-memif", "raw-memif"])

    def test_bandwidth_ratio_and_bars(self):
        b = self.built()
        self.assertEqual([p["title"] for p in b["bandwidth-ratio.png"]], ["bw, MTU 1500", "bw, MTU 9000"])
        (sock,) = b["sockets.png"]
        self.assertEqual((sock["kind"], sock["groups"], sock["series"][0]["values"]),
                         ("bars", ["tcp", "rudp"], [11.0, 2.0]))
        (app,) = b["halo-app.png"]
        self.assertEqual((app["kind"], app["groups"]), ("bars", ["tcp", "dpdk-memif"]))
        self.assertEqual([s["values"] for s in app["series"]], [[0.012, 0.013], [0.068, 0.066]])
        cb = b["compute-burst.png"]
        self.assertEqual([p["kind"] for p in cb], ["bars", "bars"])
        self.assertEqual(cb[1]["series"][0]["values"], [192.0, 128.0])
        (sp,) = b["spurious-retx.png"]
        self.assertEqual((sp["groups"], sp["series"][0]["values"]), (["MTU 1500", "MTU 9000"], [12, 0]))

    def test_no_empty_panel_no_empty_figure(self):
        for f, panels in self.built().items():
            for p in panels:
                with self.subTest(figure=f, panel=p["title"]):
                    self.assertTrue(p["series"])
                    if p["kind"] == "lines":
                        self.assertTrue(all(s["x"] for s in p["series"]))
        only_tcp = [r for r in synthetic_rows() if r["transport"] == "tcp"]
        self.assertNotIn("latency-ratio.png", self.built(only_tcp))

    def test_null_spurious_count_is_shown_not_dropped(self):
        rows = mtu_rows("bw", "MB/s", {("tcp", 1500): {65536: 1.0}, ("rudp", 1500): {65536: 1.0}},
                        counters={("rudp", 1500): {"spurious_retx": None}})
        (sp,) = self.built(rows)["spurious-retx.png"]
        self.assertEqual(sp["series"][0]["values"], [None])

    def test_write_all(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("no matplotlib")
        with tempfile.TemporaryDirectory() as d:
            stale = os.path.join(d, "halo-ratio.png")
            with open(stale, "w") as f:
                f.write("old")
            out = figures.write_all(synthetic_rows(), d, self.ORDER, this_run=THIS_RUN)
            names = sorted(os.path.basename(p) for p, _ in out)
            self.assertEqual(names, sorted(["latency-ratio.png", "bandwidth-ratio.png", "sockets.png",
                                            "latency.png", "bandwidth.png",
                                            "halo-app.png", "compute-burst.png", "spurious-retx.png"]))
            for p, _ in out:
                with open(p, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertFalse(os.path.exists(stale))   # no halo exchange rows: no such figure

    def test_render_the_committed_results(self):
        """compare.py --render on results/compare.json (+ its meta) and the
        synthetic MTU rows: tables and figures for both MTUs."""
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("no matplotlib")
        cp = load_compare_py()
        with tempfile.TemporaryDirectory() as d:
            rows = results.load_rows(os.path.join(REPO, "results", "compare.json"))
            results.write_json_atomic(os.path.join(d, "compare.json"), rows + synthetic_rows())
            with open(os.path.join(d, "compare-meta.json"), "w") as f:
                json.dump({"environment": {"date": THIS_RUN[1], "git_commit": THIS_RUN[0]}}, f)
            with open(os.devnull, "w") as null:
                old, sys.stdout = sys.stdout, null
                try:
                    self.assertEqual(cp.render_only(d, "tcp"), 0)
                finally:
                    sys.stdout = old
            with open(os.path.join(d, "compare.md")) as f:
                md = f.read()
            self.assertIn("## latency (MTU 1500)", md)
            self.assertIn("## bw (MTU 9000)", md)
            self.assertIn("[latency-ratio.png](latency-ratio.png)", md)
            self.assertIn("tcp\u2020", md)           # the committed rows are an earlier run's
            self.assertTrue(os.path.exists(os.path.join(d, "bandwidth-ratio.png")))
            self.assertFalse(os.path.exists(os.path.join(d, "compare.png")))


class HostfileTests(unittest.TestCase):
    """compare.py --hostfile: the command lines it builds, what it refuses
    on real hosts, and that its rows never replace the emulated ones."""

    def setUp(self):
        import importlib.util
        spec = importlib.util.spec_from_file_location("compare_main",
                                                      os.path.join(REPO, "tools", "compare.py"))
        self.compare = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.compare)
        self.tmp = tempfile.TemporaryDirectory()
        self.hf = os.path.join(self.tmp.name, "hosts")
        with open(self.hf, "w") as f:
            f.write("# two nodes\nnodeA slots=2\n\nnodeB slots=2  # second\nnodeA\n")

    def tearDown(self):
        self.tmp.cleanup()

    def T(self, name):
        return [t for t in runner.TRANSPORTS if t.name == name][0]

    def B(self, name):
        return [b for b in runner.BENCHMARKS if b.label == name][0]

    def test_read_hosts(self):
        self.assertEqual(hostfile.read_hosts(self.hf), ["nodeA", "nodeB"])
        empty = os.path.join(self.tmp.name, "empty")
        with open(empty, "w") as f:
            f.write("# nothing\n\n")
        with self.assertRaisesRegex(ValueError, "names no host"):
            hostfile.read_hosts(empty)

    def test_command_line(self):
        args = self.compare.parse_args(["--hostfile", self.hf, "--mpirun-args",
                                        "--mca btl_rudp_if_include 'eth1'", "--quick"])
        ctx = {"build": "/b", "iface": "eth0", "prefix": "emc", "ompi_pkglibdir": "/ompi"}
        cmd, env = self.compare.build_command(args, "hostfile", ctx, "/b/bench/mpi", {},
                                              self.T("rudp"), self.B("latency"))
        self.assertEqual(cmd[:7], ["mpirun", "--hostfile", os.path.abspath(self.hf), "--map-by",
                                   "node", "--mca", "btl_rudp_if_include"])
        self.assertEqual(cmd[7], "eth1")
        self.assertNotIn(args.emcluster, cmd)
        self.assertIn("self,vader,rudp", cmd)
        self.assertIn("/ompi:/b/ompi/btl/rudp", cmd)
        self.assertEqual(cmd[-2:], ["/b/bench/mpi/em_latency", "-q"])
        # the emulated cluster's launcher otherwise
        cmd, _ = self.compare.build_command(args, "cluster", ctx, "/b/bench/mpi", {},
                                            self.T("rudp"), self.B("latency"))
        self.assertEqual(cmd[:2], [args.emcluster, "mpirun"])

    def test_not_on_real_hosts(self):
        self.assertIsNone(hostfile.not_applicable(self.T("tcp"), self.B("latency")))
        self.assertIsNone(hostfile.not_applicable(self.T("rudp"), self.B("bw")))
        for t in ("dpdk-memif", "dpdk-memif-daemon", "raw-memif", "dpdk-afxdp"):
            self.assertIn("emulated cluster", hostfile.not_applicable(self.T(t), self.B("latency")))
        mtu = [b for b in runner.BENCHMARKS if "mtu" in b.fields][0]
        self.assertIn("not on real hosts", hostfile.not_applicable(self.T("tcp"), mtu))

    def test_rows_are_their_own_combination(self):
        t, b = self.T("tcp"), self.B("latency")
        oc = {self.compare.combo_name(t, b): [ok("latency", "us", [(8, [5.0])])]}
        real = self.compare.aggregate_rows([(t, b)], {}, oc, {},
                                           hostfile.row_fields(["nodeA", "nodeB"]))
        emu = self.compare.aggregate_rows([(t, b)], {}, oc, {})
        self.assertEqual((real[0]["cluster"], real[0]["hosts"]), ("hostfile", "nodeA,nodeB"))
        self.assertNotIn("cluster", emu[0])
        merged = results.merge(emu, real)
        self.assertEqual(len(merged), 2)
        self.assertNotEqual(results.combo_key(real[0]), results.combo_key(emu[0]))

    def test_dry_run(self):
        import contextlib
        import io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = self.compare.main(["--hostfile", self.hf, "--dry-run", "--only-transports",
                                    "tcp,dpdk-memif", "--only-benchmarks", "latency"])
        self.assertEqual(rc, 0)
        lines = out.getvalue().splitlines()
        self.assertTrue(any(ln.startswith("mpirun --hostfile ") and "self,vader,tcp" in ln
                            for ln in lines), lines)
        self.assertFalse(any("emcluster" in ln and not ln.startswith("# skipped") for ln in lines))
        self.assertTrue(any(ln.startswith("# skipped (dpdk-memif needs the emulated cluster")
                            for ln in lines), lines)
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(self.compare.main(["--hostfile", self.hf + ".missing", "--dry-run"]),
                             2)


if __name__ == "__main__":
    unittest.main()
