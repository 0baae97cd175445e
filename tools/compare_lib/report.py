# SPDX-License-Identifier: BSD-3-Clause
"""Markdown tables built from (merged) compare.json rows; the figures are
figures.py's."""

import statistics

from .results import VARIANT_FIELDS, run_id, run_of, spread

HIGHER_IS_BETTER_UNITS = {"MB/s", "GB/s", "Gb/s", "Mb/s", "msg/s", "rt/s"}

# Known benchmarks: display order and a one-line description.
BENCH_TITLES = {
    "latency": "one-way latency (ping-pong RTT/2)",
    "bw": "uni-directional bandwidth (window 64)",
    "bibw": "bi-directional bandwidth (window 64, both directions summed)",
    "burst": "one-way burst, time per message at the receiver",
    "pingpong": "request/reply round trip (median)",
    "halo-oneway": "[bds] boundary exchange, one-way (10 items per repetition)",
    "halo-twoway": "[bds] boundary exchange, two-way (both directions summed)",
    "halo-alternating": "[bds] boundary exchange, alternating (both directions summed)",
    "halo-app": "DDM-BDS Jacobi ([bds] Fig. 15): synchronisation time, size = plane bytes",
    "latency-mt": "one-way latency of a single-threaded job, after MPI_Init (single) or "
                  "MPI_Init_thread(MPI_THREAD_MULTIPLE) (multiple): what the locks cost",
    "mt-rate": "message rate of threads on their own communicators (MPI_THREAD_MULTIPLE, "
               "window 64, all threads summed)",
    "osc-put": "one-sided MPI_Put + MPI_Win_flush, passive target (tcp: osc pt2pt)",
    "osc-get": "one-sided MPI_Get + MPI_Win_flush, passive target (tcp: osc pt2pt)",
    "osc-fop": "one-sided MPI_Fetch_and_op (int64, MPI_SUM) + MPI_Win_flush (tcp: osc pt2pt)",
    "osc-cas": "one-sided MPI_Compare_and_swap (int64) + MPI_Win_flush (tcp: osc pt2pt)",
    "compute-burst": "[dpdk-btl] §4: completion time of a 256 B burst while the receiver computes "
                     "100 ms (row fields drops, retransmits)",
}
BENCH_ORDER = ["latency", "latency-eager", "latency-rndv", "latency-mt", "bw", "bibw", "mt-rate",
               "osc-put", "osc-get", "osc-fop", "osc-cas", "burst", "pingpong", "sockets",
               "halo-oneway", "halo-twoway", "halo-alternating", "halo-app", "compute-burst"]
# secondary columns shown as a table of their own under the primary one
SHOW_SECONDARY = {"halo-app": ["compute_s"]}
# benchmarks with a report of their own, left out of compare.md/png:
# relax -> results/relax.{md,png} (compare_lib/relax.py)
OWN_REPORT = {"relax"}

# how a variant field reads in a heading or a legend
_VARIANT_FMT = {
    "links": lambda v: "%s link%s" % (v, "" if v == 1 else "s"),
    "mode": lambda v: "%s mode" % v,
    "elements_per_packet": lambda v: "%s elements/packet" % v,
    "n": lambda v: "n = %s" % v,
    "ranks": lambda v: "%s ranks" % v,
    "loss_pct": lambda v: "%s %% loss" % v,
    "rdv": lambda v: "rendezvous %s" % ("on own queue" if v == "own-queue" else "through the daemon"),
    "mtu": lambda v: "MTU %s" % v,
    "cluster": lambda v: "real hosts (%s)" % v,
    "threads": lambda v: "%s thread%s per rank" % (v, "" if v == 1 else "s"),
    "thread_level": lambda v: "MPI_THREAD_%s" % str(v).upper(),
    "names": lambda v: "wire v3, named" if v == "wire" else "wire v2, numbered",
}
# the marker of a column (or a failed/skipped note) not measured in this run
OLD_MARK = "\u2020"


def variant_of(row):
    """The row's variant: ((field, value), ...) for the VARIANT_FIELDS it has."""
    return tuple((f, row[f]) for f in VARIANT_FIELDS if row.get(f) is not None)


def group_variant(row):
    """variant_of(), but an MTU row counts by the MTU it was asked for
    (mtu_requested): AF_XDP's row for MTU 9000, run at its largest MTU,
    sits in the MTU 9000 table next to tcp's."""
    v = variant_of(row)
    if row.get("mtu_requested") is None:
        return v
    return tuple((f, row["mtu_requested"] if f == "mtu" else x) for f, x in v)


def provenance_text(prov):
    """"2026-11-22 03:05 UTC, commit dea1e94" for (commit, date)."""
    commit, date = prov
    if not date:
        return "date and commit not recorded"
    d = str(date).replace("T", " ")
    if d.endswith("+00:00"):
        d = d[:-6] + " UTC"
    return "%s, commit %s" % (d, commit or "not recorded")


def as_run(this_run):
    """A run id from @p this_run: a run id already, or the (commit, date)
    pair older callers pass."""
    if isinstance(this_run, (tuple, list)):
        return run_id(*this_run)
    return this_run


def current_run(rows, this_run=None):
    """The run compare.md calls "this run": @p this_run, or without one
    the run of the newest dated row (None when no row has a date)."""
    if this_run:
        return as_run(this_run)
    dated = [r for r in rows if r.get("date")]
    if not dated:
        return None
    return run_of(max(dated, key=lambda r: str(r["date"])))


def is_fresh(row, this_run):
    """Measured by the run @p this_run (a run id or (commit, date))?  Rows
    of one run have equal results.run_of(); a row without provenance is
    fresh only when there is no run to compare with either (a table of
    unstamped rows, as tests build)."""
    return run_of(row) == as_run(this_run)


def run_text(run):
    """"2026-11-22 03:05 UTC, commit dea1e94" for a run id."""
    if not run or "@" not in run:
        return provenance_text((None, None))
    commit, date = run.split("@", 1)
    return provenance_text((None if commit == "?" else commit, date))


def run_date(run):
    """The start date of a run id, for ordering ("" when unknown)."""
    return run.split("@", 1)[1] if run and "@" in run else ""


def variant_label(variant):
    """"2 links, daemon mode" for (("links", 2), ("mode", "daemon")); "" for ()."""
    return ", ".join(_VARIANT_FMT.get(f, lambda v, f=f: "%s=%s" % (f, v))(v) for f, v in variant)


def _variant_sort_key(variant):
    return tuple((f, (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v)))
                 for f, v in variant)


def fmt_size(n):
    if n is None:
        return "-"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= (1 << shift) and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def fmt_value(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1000:
        return "%.0f" % v
    if a >= 100:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    return "%.3f" % v


def higher_is_better(unit):
    return unit in HIGHER_IS_BETTER_UNITS


def _order(values, preferred):
    pref = [v for v in preferred if v in values]
    rest = sorted(v for v in values if v not in preferred)
    return pref + rest


def groups(rows, transport_order=(), bench_order=BENCH_ORDER):
    """[(benchmark, pattern, transports, rows_of_group)] in display order;
    rows of different variants (variant_of) are different groups."""
    by = {}
    for r in rows:
        if r.get("benchmark") in OWN_REPORT:
            continue
        by.setdefault((r.get("benchmark"), r.get("pattern"), group_variant(r)), []).append(r)
    benches = _order({b for b, _, _ in by}, list(bench_order))
    out = []
    for b in benches:
        keys = sorted(((p, v) for bb, p, v in by if bb == b),
                      key=lambda pv: (pv[0] is not None, str(pv[0]), _variant_sort_key(pv[1])))
        for p, v in keys:
            g = by[(b, p, v)]
            transports = _order({r["transport"] for r in g}, list(transport_order))
            out.append((b, p, transports, g))
    return out


def _value_table(values, sizes, cols, baseline, names=None):
    """Lines of one markdown table: sizes down, cols across, a ratio column
    per column against @p baseline when that is one of @p cols (None: no
    ratios).  The caller passes the columns of one run only: a ratio is
    never taken between runs.  @p names: {col: header text} (a column's
    marks)."""
    lines = []
    names = names or {}
    ratio_cols = [t for t in cols if t != baseline] if baseline in cols else []
    header = ["size"] + [names.get(t, t) for t in cols] + ["%s/%s" % (t, baseline) for t in ratio_cols]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---:|" * len(header))
    for s in sizes:
        if all(values.get((t, s)) is None for t in cols):
            continue
        cells = [fmt_size(s)] + [fmt_value(values.get((t, s))) for t in cols]
        base = values.get((baseline, s))
        for t in ratio_cols:
            v = values.get((t, s))
            if v is None or base is None or base == 0:
                cells.append("-")
            else:
                cells.append("%.2fx" % (v / base))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def runs_of_group(ok, transports, current):
    """[(run, [transport, ...])] of a table's ok rows: the columns each run
    measured, this run (@p current) first, then the earlier runs newest
    first, unrecorded last."""
    by = {}
    for t in transports:
        for r in ok:
            if r["transport"] == t:
                cols = by.setdefault(run_of(r), [])
                if t not in cols:
                    cols.append(t)
    older = sorted((k for k in by if k != current and k is not None), key=run_date, reverse=True)
    older += [None] if None in by and current is not None else []
    return ([(current, by[current])] if current in by else []) + [(k, by[k]) for k in older]


def _column_names(g, cols, fresh, mtu):
    """{transport: header} with OLD_MARK on the columns of an earlier run
    (@p fresh False) and "@ MTU m" on a column run at another MTU than the
    table's; and the footnote lines that explain the MTU marks."""
    names, notes = {}, []
    for t in cols:
        rows = [r for r in g if r["transport"] == t]
        name = t
        mtus = sorted({r.get("mtu") for r in rows if r.get("mtu") is not None})
        if mtu is not None and mtus and mtus != [mtu]:
            name += " @ MTU %s" % "/".join(str(m) for m in mtus)
            note = next((r.get("mtu_note") for r in rows if r.get("mtu_note")), None)
            if note:
                notes.append("- %s: %s." % (t, note.rstrip(".")))
        names[t] = name if fresh else name + OLD_MARK
    return names, notes


def spread_note(rows):
    """One line on how far the repeats of @p rows lie apart: (max - min) /
    median per size and column, the median and the largest of them."""
    rel = []
    for r in rows:
        sp = spread(r)
        if sp and len(r.get("runs") or []) > 1 and r.get("median"):
            rel.append(((sp[1] - sp[0]) / abs(r["median"]), r))
    if not rel:
        return "- spread: one repeat per size, none to show."
    worst = max(rel, key=lambda x: x[0])
    reps = sorted({len(r.get("runs") or []) for _, r in rel})
    return ("- spread of the repeats, (max - min) / median per size: median %.0f %%, largest "
            "%.0f %% (%s, %s); %s repeat(s) per size." % (
                100 * statistics.median(x for x, _ in rel), 100 * worst[0],
                worst[1]["transport"], fmt_size(worst[1]["size_bytes"]),
                "/".join(str(n) for n in reps)))


def run_tables(ok, g, transports, current, baseline, mtu, value_of):
    """The tables of one group: this run's columns with their ratios to
    @p baseline (only when this run measured the baseline too), then one
    table per earlier run with its date and commit and no ratios.
    @p value_of(row): the cell value (None: no cell)."""
    lines, mtu_notes = [], []
    per_run = runs_of_group(ok, transports, current)
    if per_run and per_run[0][0] != current:
        lines += ["No column of this table was measured in this run, so it has no ratio "
                  "columns (a ratio is only taken between columns of one run).", ""]
    for run, cols in per_run:
        fresh = run == current
        rows = [r for r in ok if run_of(r) == run and r["transport"] in cols]
        values = {}
        for r in rows:
            v = value_of(r)
            if v is not None:
                values[(r["transport"], r["size_bytes"])] = v
        if not values:
            continue
        names, notes = _column_names(g, cols, fresh, mtu)
        mtu_notes += [n for n in notes if n not in mtu_notes]
        if fresh and baseline not in cols and len(cols) > 1:
            lines += ["No ratio columns: %s was not measured in this run." % baseline, ""]
        if not fresh:
            lines += ["%s Earlier run, %s (not this run: no ratios):"
                      % (OLD_MARK, run_text(run)), ""]
        lines += _value_table(values, sorted({r["size_bytes"] for r in rows}), cols,
                              baseline if fresh else None, names)
        lines += [spread_note(rows), ""]
    return lines, mtu_notes


def _counter_notes(ok, cols):
    """Lines for the run counters of the rows (bw's spurious_retx)."""
    lines = []
    for t in cols:
        rows = [r for r in ok if r["transport"] == t and "spurious_retx" in r]
        if not rows:
            continue
        r = rows[0]
        runs = r.get("spurious_retx_runs") or []
        if r["spurious_retx"] is None:
            lines.append("- %s: spurious retransmissions not reported (this build's "
                         "print_stats has no spurious_retx): recorded as null." % t)
        else:
            lines.append("- %s: spurious retransmissions (the receiver already had the frame), "
                         "both ranks, every size, summed over %d run(s): **%d** (per run: %s)."
                         % (t, len(runs), r["spurious_retx"], ", ".join(str(x) for x in runs)))
    return lines


# sizes whose latency is "small-message latency" in the framing note
FRAMING_SMALL_MAX = 256


def _pair_notes(rows, bench, cols, field, base, other, what):
    """What variant @p other costs against @p base (values of @p field) for
    each transport that has both in one run: the median (and range) over
    0-256 B of other - base for latency, of other / base over all sizes
    for the others."""
    lines = []
    for t in cols:
        by = {}
        for r in rows:
            if (r["transport"] == t and r["benchmark"] == bench and r.get("median") is not None
                    and r.get("size_bytes") is not None and r.get(field) in (base, other)
                    and r.get("mtu") is None):
                by.setdefault(r[field], {})[r["size_bytes"]] = r
        b, o = by.get(base, {}), by.get(other, {})
        same = [s for s in sorted(o) if s in b and run_of(o[s]) == run_of(b[s])]
        if bench.startswith("latency"):
            d = [o[s]["median"] - b[s]["median"] for s in same if s <= FRAMING_SMALL_MAX]
            if d:
                lines.append("- %s: %s costs %+.2f us over %s (median of %s - %s over "
                             "0-%d B, same run; range %+.2f to %+.2f)."
                             % (t, what[1], statistics.median(d), what[0], other, base,
                                FRAMING_SMALL_MAX, min(d), max(d)))
        else:
            q = [o[s]["median"] / b[s]["median"] for s in same if b[s]["median"]]
            if q:
                lines.append("- %s: %s / %s %.2fx (median over %d sizes, same run; "
                             "range %.2fx to %.2fx)." % (t, other, base, statistics.median(q),
                                                          len(q), min(q), max(q)))
    return lines


def _framing_notes(rows, bench, gv, cols):
    """Under a framing=udp table: what udp framing costs against l2."""
    if dict(gv).get("framing") != "udp":
        return []
    return _pair_notes(rows, bench, cols, "framing", "l2", "udp", ("l2", "udp framing"))


def _names_notes(rows, bench, gv, cols):
    """Under a names=wire table: what wire v3 (named) costs against wire v2
    (numbered, names=ids), same run."""
    if dict(gv).get("names") != "wire":
        return []
    return _pair_notes(rows, bench, cols, "names", "ids", "wire", ("wire v2", "wire v3"))


def _header_lines(title, this_run, figures, default_mtu, afxdp_mtu, run_name):
    lines = []
    if title:
        lines += ["# " + title, ""]
    if this_run:
        lines += ["%s: %s. Ratio columns (`x/tcp`) divide columns of this run only. A "
                  "column of an earlier run (marked %s) stands in a table of its own under "
                  "the current one, headed by that run's date and commit, and is never in a "
                  "ratio; every row of compare.json carries its own `commit`, `date` and "
                  "`run`.  Cells are medians over the repeats; the spread line under each "
                  "table says how far the repeats lie apart (docs/benchmarks.md)."
                  % (run_name, run_text(this_run), OLD_MARK), ""]
    if default_mtu:
        lines += ["Tables without an MTU in their heading ran on the emulated cluster's "
                  "default MTU, %d (the AF_XDP transports at %s, the largest MTU they "
                  "open on a veth); the \"(MTU 1500)\" and \"(MTU 9000)\" tables ran on a "
                  "cluster brought up at that MTU." % (default_mtu, afxdp_mtu or "?"), ""]
    if figures:
        lines += ["Figures: " + "; ".join("[%s](%s) (%s)" % (f, f, what) for f, what in figures)
                  + ".", ""]
    return lines


def _secondary_lines(ok, g, cols, current, baseline, mtu, bench):
    lines = []
    for metric in SHOW_SECONDARY.get(bench, []):
        found = [r for r in ok if (r.get("secondary") or {}).get(metric) is not None]
        if not found:
            continue
        sunit = found[0]["secondary"][metric].get("unit")
        lines += ["%s, %s:" % (metric, sunit or ""), ""]
        lines += run_tables(found, g, cols, current, baseline, mtu,
                            lambda r: r["secondary"][metric]["median"])[0]
    return lines


def _status_notes(notes, current):
    lines = []
    for r in notes:
        mark = ""
        if not is_fresh(r, current):
            mark = " %s(earlier run: %s)" % (OLD_MARK, run_text(run_of(r)))
        lines.append("- %s: **%s** - %s%s" % (r["transport"], r.get("status", "failed"),
                                              r.get("reason", "no reason recorded"), mark))
    return lines


def markdown(rows, transport_order=(), baseline="tcp", title=None, this_run=None, figures=(),
             default_mtu=None, afxdp_mtu=None, run_name="This run"):
    """Markdown text: per (benchmark, pattern, variant) one table of the
    columns this run measured (sizes down, transports across, a ratio
    column per transport against the baseline when this run measured the
    baseline too), then one table per earlier run, without ratios.
    @p this_run: the run id (or (commit, date)) whose rows are "this run";
    default current_run(); @p figures = [(file, what)] are listed at the
    top."""
    current = current_run(rows, this_run)
    lines = _header_lines(title, current, figures, default_mtu, afxdp_mtu, run_name)
    for bench, pattern, transports, g in groups(rows, transport_order):
        ok = [r for r in g if r.get("size_bytes") is not None and r.get("median") is not None]
        notes = [r for r in g if r.get("size_bytes") is None or r.get("median") is None]
        unit = (ok or g)[0].get("unit", "")
        hib = higher_is_better(unit)
        head = "## %s" % bench
        if pattern:
            head += " %s" % pattern
        gv = group_variant(g[0])
        vlabel = variant_label(gv)
        if vlabel:
            head += " (%s)" % vlabel
        desc = BENCH_TITLES.get(bench, bench)
        lines += [head, "", "%s, %s (%s is better)." % (desc, unit, "higher" if hib else "lower"), ""]
        cols = [t for t in transports if any(r["transport"] == t for r in ok)]
        mtu = dict(gv).get("mtu")
        if cols:
            tables, mtu_notes = run_tables(ok, g, cols, current, baseline, mtu,
                                           lambda r: r["median"])
            lines += tables
            lines += _secondary_lines(ok, g, cols, current, baseline, mtu, bench)
            lines += mtu_notes
            lines += _counter_notes(ok, cols)
            lines += _framing_notes(rows, bench, gv, cols)
            lines += _names_notes(rows, bench, gv, cols)
            partial = [r for r in ok if r.get("failed_runs")]
            for t in cols:
                fr = max([r.get("failed_runs", 0) for r in partial if r["transport"] == t] or [0])
                if fr:
                    n = max(len(r.get("runs", [])) for r in ok if r["transport"] == t)
                    lines.append("- %s: %d run(s) failed; medians over %d successful run(s)."
                                 % (t, fr, n))
        lines += _status_notes(notes, current)
        if lines[-1] != "":
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
