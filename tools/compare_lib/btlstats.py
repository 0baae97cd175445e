# SPDX-License-Identifier: BSD-3-Clause
"""Counters the ethermpi BTLs print at MPI_Finalize (`--mca
btl_<name>_print_stats 1`), read from a run's output.

Each module of each rank prints one line (ompi/btl/common/em_btl.c,
print_stats()), through opal_output, so on mpirun's stderr:

    [node0] btl_rudp stats: tx 123 frames (100 data, 23 acks, 0 retransmits,
    0 timeouts), rx 120 frames (0 dups, 0 out-of-order), ...

A counter is printed as "<number> <name>".  The benchmark rows want the
run's total over every rank and module; a counter no line carries (a build
that does not print it yet) is None, never 0.
"""

import re

# the BTLs whose print_stats lines the runner reads, and the MCA setting
# that makes them print (tools/compare_lib/runner.py applies it to the
# benchmarks that collect counters)
STATS_MCA = {
    "rudp": [("btl_rudp_print_stats", "1")],
}


def _line_re(btl):
    return re.compile(r"\bbtl_%s stats:" % re.escape(btl))


def _counter_re(name):
    # "<n> spurious_retx" (the print format), also "spurious_retx <n>" /
    # "spurious_retx=<n>" so a reordered print still reads right
    n = re.escape(name).replace("_", "[_ ]")
    return re.compile(r"(?:\b(\d+)\s+%s\b|\b%s\s*[=:]?\s*(\d+)\b)" % (n, n))


def parse_counters(text, btl, names):
    """{name: total over every `btl_<btl> stats:` line, or None} for each of
    @p names.  None when no stats line was printed or one line lacks the
    counter (the sum would be a guess)."""
    lines = [ln for ln in text.splitlines() if _line_re(btl).search(ln)]
    out = {}
    for name in names:
        rx = _counter_re(name)
        total = 0 if lines else None
        for ln in lines:
            m = rx.search(ln)
            if not m:
                total = None
                break
            total += int(m.group(1) or m.group(2))
        out[name] = total
    return out
