# SPDX-License-Identifier: BSD-3-Clause
"""Parser for the table every bench/mpi program prints.

Format (docs/benchmarks.md):

    # any comment lines
    # em-bench <name> transport-neutral v1
    # size_bytes <metric> <unit> [<metric> <unit> ...]
    <size> <value> [<value> ...]

Lines that do not start with a digit (MPI warnings, comments) are ignored;
a line that starts with a digit but does not fit the declared columns is an
error, so a garbled table is never taken for a result.
"""

import math
import re

HEADER_RE = re.compile(r"^#\s*em-bench\s+(\S+)\s+transport-neutral\s+v(\d+)\s*$")
FORMAT_VERSION = 1


class ParseError(ValueError):
    """The output holds no usable em-bench table."""


class BenchTable:
    """One parsed table: benchmark name, value columns and rows by size."""

    def __init__(self, name, columns, rows, comments):
        self.name = name          # e.g. "latency"
        self.columns = columns    # [(metric, unit), ...]; [0] is primary
        self.rows = rows          # {size_bytes: [v0, v1, ...]} in file order
        self.comments = comments  # comment lines before the header

    @property
    def unit(self):
        return self.columns[0][1]

    @property
    def metric(self):
        return self.columns[0][0]

    def primary(self):
        """{size: primary value}"""
        return {size: vals[0] for size, vals in self.rows.items()}

    def __repr__(self):
        return "BenchTable(%r, %r, %d rows)" % (self.name, self.columns, len(self.rows))


def parse_bench_output(text):
    """Parses program output; returns a BenchTable or raises ParseError."""
    name = None
    columns = None
    rows = {}
    comments = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        m = HEADER_RE.match(line)
        if m:
            if name is not None:
                raise ParseError("more than one em-bench header")
            name = m.group(1)
            version = int(m.group(2))
            if version != FORMAT_VERSION:
                raise ParseError("unsupported table version v%d" % version)
            if i >= len(lines):
                raise ParseError("header without a column line")
            colline = lines[i].strip()
            i += 1
            toks = colline.lstrip("#").split()
            if not colline.startswith("#") or not toks or toks[0] != "size_bytes":
                raise ParseError("expected '# size_bytes ...' after the header, got %r" % colline)
            rest = toks[1:]
            if not rest or len(rest) % 2:
                raise ParseError("column line must list <metric> <unit> pairs: %r" % colline)
            columns = [(rest[k], rest[k + 1]) for k in range(0, len(rest), 2)]
            continue
        if name is None:
            if line.startswith("#"):
                comments.append(line)
            continue
        if not line or not line[0].isdigit():
            continue
        toks = line.split()
        if len(toks) != 1 + len(columns):
            raise ParseError("row %r has %d fields, expected %d" % (line, len(toks), 1 + len(columns)))
        try:
            size = int(toks[0])
            vals = [float(t) for t in toks[1:]]
        except ValueError:
            raise ParseError("row %r is not numeric" % line) from None
        if any(not math.isfinite(v) for v in vals):
            raise ParseError("row %r has a non-finite value" % line)
        if size in rows:
            raise ParseError("size %d appears twice" % size)
        rows[size] = vals
    if name is None:
        raise ParseError("no '# em-bench' header in output")
    if not rows:
        raise ParseError("em-bench %s table has no rows" % name)
    return BenchTable(name, columns, rows, comments)
