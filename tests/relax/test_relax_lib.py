#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Unit tests of tools/compare_lib/relax.py (parsing the solver's output,
rows, report, the scaling model).  Stdlib unittest only."""

import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))

from compare_lib import relax, results  # noqa: E402

OUT = """some MPI noise
# em-relax v1
relax transport=dpdk-bcast n=8000 ranks=2 elements_per_packet=1 sparse=0 loss_pct=0 time_s=0.5 iter_s=0.4 verify_s=0.08 iterations=12.00 restarts=0 residual=2.1e-11 tol=1.0e-06 verified=1 sent=10 send_full=0 received=9 dropped=1 gaps=1 rejected=0 late=0 own=0 err_direct=-1
"""


def out(t, k, time_s, it=12.0, ranks=2, n=8000, iter_s=None):
    return relax.parse_output(OUT.replace("dpdk-bcast", t).replace("elements_per_packet=1", "elements_per_packet=%d" % k)
                              .replace("time_s=0.5", "time_s=%g" % time_s)
                              .replace("iter_s=0.4", "iter_s=%g" % (iter_s or time_s * 0.8))
                              .replace("iterations=12.00", "iterations=%g" % it)
                              .replace("ranks=2", "ranks=%d" % ranks).replace("n=8000", "n=%d" % n))


class ParseTest(unittest.TestCase):
    def test_fields(self):
        d = relax.parse_output(OUT)
        self.assertEqual(d["transport"], "dpdk-bcast")
        self.assertEqual(d["n"], 8000)
        self.assertEqual(d["verified"], 1)
        self.assertAlmostEqual(d["residual"], 2.1e-11)

    def test_rejects(self):
        for bad in ("", "relax transport=x time_s=1", OUT.replace("# em-relax v1", ""),
                    OUT.replace("time_s=0.5", "time_s=abc"), OUT.replace(" iterations=12.00", "")):
            with self.assertRaises(relax.RelaxParseError):
                relax.parse_output(bad)


class RowsTest(unittest.TestCase):
    def test_aggregate_and_failed(self):
        c = relax.Case("dpdk-bcast", 8000, 2, 1)
        r = relax.aggregate(c, [out("dpdk-bcast", 1, 0.5), None, out("dpdk-bcast", 1, 0.7)],
                            ["run 2: timeout"])
        self.assertEqual(r["median"], 0.6)
        self.assertEqual(r["failed_runs"], 1)
        self.assertEqual(r["elements_per_packet"], 1)
        self.assertEqual(r["size_bytes"], 8)
        self.assertAlmostEqual(r["secondary"]["residual"]["median"], 2.1e-11)
        f = relax.aggregate(c, [None], ["run 1: exit 1: relax: NOT converged"])
        self.assertEqual(f["status"], "failed")
        self.assertIn("NOT converged", f["reason"])
        m = relax.aggregate(relax.Case("mpi-allgather", 8000, 2, 5), [out("mpi-allgather", 0, 1.0)], [])
        self.assertIsNone(m["elements_per_packet"])
        # rows of different variants are different combinations when merged
        merged = results.merge([r], [m, f])
        self.assertEqual(len(merged), 2)

    def test_cases_dedup(self):
        a = relax.parse_args(["--quick"])
        cs = relax.build_cases(a)
        self.assertEqual(len({c.key() for c in cs}), len(cs))
        self.assertTrue(any(c.loss for c in cs))
        self.assertTrue(all(c.ranks <= 2 for c in cs))

    def test_report_and_model(self):
        rows = []
        for t, base in (("udp-bcast", 1.0), ("dpdk-bcast", 0.5)):
            for k, extra in ((1, 1.0), (4, 0.3), (20, 0.1)):
                c = relax.Case(t, 8000, 2, k)
                rows.append(relax.aggregate(c, [out(t, k, base + extra * (2 if t == "udp-bcast" else 1))], []))
            rows.append(relax.aggregate(relax.Case(t, 8000, 1, 20), [out(t, 20, 1.6, ranks=1)], []))
        md = relax.markdown(rows)
        self.assertIn("At 1 element per packet", md)
        self.assertIn("Best of each", md)
        self.assertIn("Model for more iterative ranks", md)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "relax.png")
            if relax.plot(rows, p):
                self.assertGreater(os.path.getsize(p), 1000)


if __name__ == "__main__":
    unittest.main()
