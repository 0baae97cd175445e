# SPDX-License-Identifier: BSD-3-Clause
"""Library behind tools/compare.py (ethermpi transport comparison runner).

table    -- parser for the "# em-bench <name> transport-neutral v1" tables
results  -- medians over repetitions, row schema, merge into compare.json,
            provenance (each row's commit and date)
report   -- markdown tables (columns from earlier runs marked)
figures  -- one PNG per question (ratios to tcp per wire and MTU, bar charts)
btlstats -- counters the ethermpi BTLs print at finalize (spurious_retx)
runner   -- transport / benchmark tables (MTU rows), timeouts, process-tree
            cleanup
"""

from .table import BenchTable, ParseError, parse_bench_output  # noqa: F401
from .results import (RunOutcome, aggregate, merge, status_row,  # noqa: F401
                      row_key, combo_key, load_rows, write_json_atomic)
