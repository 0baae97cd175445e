# SPDX-License-Identifier: BSD-3-Clause
"""Markdown tables and the plot, built from (merged) compare.json rows."""

import math

from .results import VARIANT_FIELDS

HIGHER_IS_BETTER_UNITS = {"MB/s", "GB/s", "Gb/s", "Mb/s", "msg/s", "rt/s"}

# Known benchmarks: display order and a one-line description.
BENCH_TITLES = {
    "latency": "one-way latency (ping-pong RTT/2)",
    "bw": "uni-directional bandwidth (window 64)",
    "bibw": "bi-directional bandwidth (window 64, both directions summed)",
    "burst": "one-way burst, time per message at the receiver",
    "pingpong": "request/reply round trip (median)",
    "halo-oneway": "seed 002 boundary exchange, one-way (10 items per repetition)",
    "halo-twoway": "seed 002 boundary exchange, two-way (both directions summed)",
    "halo-alternating": "seed 002 boundary exchange, alternating (both directions summed)",
    "halo-app": "DDM-BDS Jacobi (seed 002 Fig. 15): synchronisation time, size = plane bytes",
}
BENCH_ORDER = ["latency", "latency-eager", "latency-rndv", "bw", "bibw", "burst", "pingpong", "sockets",
               "halo-oneway", "halo-twoway", "halo-alternating", "halo-app"]
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
}


def variant_of(row):
    """The row's variant: ((field, value), ...) for the VARIANT_FIELDS it has."""
    return tuple((f, row[f]) for f in VARIANT_FIELDS if row.get(f) is not None)


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
        by.setdefault((r.get("benchmark"), r.get("pattern"), variant_of(r)), []).append(r)
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


def _value_table(values, sizes, cols, baseline):
    """Lines of one markdown table: sizes down, cols across, ratio columns."""
    lines = []
    ratio_cols = [t for t in cols if t != baseline] if baseline in cols else []
    header = ["size"] + cols + ["%s/%s" % (t, baseline) for t in ratio_cols]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---:|" * len(header))
    for s in sizes:
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


def markdown(rows, transport_order=(), baseline="tcp", title=None):
    """Markdown text: one table per (benchmark, pattern); sizes down,
    transports across, plus a ratio column per transport vs the baseline."""
    lines = []
    if title:
        lines += ["# " + title, ""]
    for bench, pattern, transports, g in groups(rows, transport_order):
        ok = [r for r in g if r.get("size_bytes") is not None and r.get("median") is not None]
        notes = [r for r in g if r.get("size_bytes") is None or r.get("median") is None]
        unit = (ok or g)[0].get("unit", "")
        hib = higher_is_better(unit)
        head = "## %s" % bench
        if pattern:
            head += " %s" % pattern
        vlabel = variant_label(variant_of(g[0]))
        if vlabel:
            head += " (%s)" % vlabel
        desc = BENCH_TITLES.get(bench, bench)
        lines.append(head)
        lines.append("")
        lines.append("%s, %s (%s is better)." % (desc, unit, "higher" if hib else "lower"))
        lines.append("")
        cols = [t for t in transports if any(r["transport"] == t for r in ok)]
        if cols:
            values = {}
            for r in ok:
                values[(r["transport"], r["size_bytes"])] = r["median"]
            sizes = sorted({r["size_bytes"] for r in ok})
            lines += _value_table(values, sizes, cols, baseline)
            for metric in SHOW_SECONDARY.get(bench, []):
                sec = {}
                sunit = None
                for r in ok:
                    m = (r.get("secondary") or {}).get(metric)
                    if m is not None:
                        sec[(r["transport"], r["size_bytes"])] = m["median"]
                        sunit = m.get("unit")
                if sec:
                    lines.append("%s, %s:" % (metric, sunit or ""))
                    lines.append("")
                    lines += _value_table(sec, sizes, cols, baseline)
            partial = [r for r in ok if r.get("failed_runs")]
            for t in cols:
                fr = max([r.get("failed_runs", 0) for r in partial if r["transport"] == t] or [0])
                if fr:
                    n = max(len(r.get("runs", [])) for r in ok if r["transport"] == t)
                    lines.append("- %s: %d run(s) failed; medians over %d successful run(s)."
                                 % (t, fr, n))
        for r in notes:
            lines.append("- %s: **%s** - %s" % (r["transport"], r.get("status", "failed"),
                                                r.get("reason", "no reason recorded")))
        if lines[-1] != "":
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def plot(rows, path, transport_order=(), title=None):
    """Writes a PNG with one panel per (benchmark) and one line per
    transport (and pattern).  Returns False if matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ok = [r for r in rows if r.get("size_bytes") is not None and r.get("median") is not None
          and r.get("benchmark") not in OWN_REPORT]
    benches = _order({r["benchmark"] for r in ok}, BENCH_ORDER)
    n = max(1, len(benches))
    ncols = min(3, n)
    nrows = int(math.ceil(n / float(ncols)))
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.9 * nrows), squeeze=False)
    transports = _order({r["transport"] for r in ok}, list(transport_order))
    cmap = plt.get_cmap("tab10")
    color = {t: cmap(i % 10) for i, t in enumerate(transports)}
    styles = ["-", "--", ":", "-."]
    for idx, bench in enumerate(benches):
        ax = axes[idx // ncols][idx % ncols]
        g = [r for r in ok if r["benchmark"] == bench]
        unit = g[0].get("unit", "")
        # one line style per (pattern, variant), e.g. 1 link solid, 2 links dashed
        pats = sorted({(r.get("pattern"), variant_of(r)) for r in g},
                      key=lambda pv: (str(pv[0]), _variant_sort_key(pv[1])))
        for t in transports:
            for pi, (p, v) in enumerate(pats):
                pts = sorted((r["size_bytes"], r["median"]) for r in g
                             if r["transport"] == t and r.get("pattern") == p
                             and variant_of(r) == v
                             and r["size_bytes"] > 0 and r["median"] > 0)
                if not pts:
                    continue
                label = " ".join(x for x in (t, p, variant_label(v)) if x)
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", markersize=3,
                        linestyle=styles[pi % len(styles)], color=color[t], label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title("%s (%s)" % (bench, unit), fontsize=10)
        ax.set_xlabel("message size (bytes; 0 B not shown)", fontsize=8)
        ax.set_ylabel(unit, fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        ax.tick_params(labelsize=7)
        if ax.get_lines():
            ax.legend(fontsize=7)
    for idx in range(len(benches), nrows * ncols):
        axes[idx // ncols][idx % ncols].axis("off")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
