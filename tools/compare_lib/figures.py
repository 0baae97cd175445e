# SPDX-License-Identifier: BSD-3-Clause
"""The figures of the comparison: one PNG per question a reader asks of
compare.json, next to compare.md in the output directory.

    latency.png          latency in us per transport, wire and MTU: medians with
                         the min-max of the repeats as error bars
    bandwidth.png        bw and bibw in GB/s, the same way
    latency-ratio.png    latency / tcp per wire and MTU, size on a log axis
    bandwidth-ratio.png  bw and bibw / tcp per wire and MTU
    halo-ratio.png       [bds]'s halo exchange / tcp, 1 and 2 links
    halo-app.png         [bds]'s application: sync + compute seconds (bars)
    compute-burst.png    [dpdk-btl]'s compute-while-bursting: time, retransmits (bars)
    sockets.png          descriptors per process at 16 ranks on 2 nodes (bars)
    spurious-retx.png    rudp bw: spurious retransmissions per MTU (bars)

Each figure is built in two steps: a builder turns rows into panels (plain
dicts: no matplotlib, so the tests check what a figure shows), then
draw() renders them.  A panel without data is left out, a figure without
panels is not written (and a stale one of that name is removed).  Series
and bars of rows not measured in this run are drawn faded and marked with
report.OLD_MARK, as compare.md marks their columns.  The ratio figures
divide columns of this run only (report.current_run(): a ratio is never
taken between runs), so a transport this run did not measure, or a panel
whose tcp this run did not measure, is not on them; the absolute figures
show every run, earlier ones faded.
"""

import math
import os
import textwrap

from .report import (OLD_MARK, as_run, current_run, fmt_size, group_variant, is_fresh,
                     run_date, run_text, variant_of)
from .results import run_of, spread

# the MTU tables' panel titles; the rows without mtu are the default cluster
DEFAULT_PANEL = "default cluster: every transport"
# the real-network goals for rudp / tcp, drawn on the ratio panels
LATENCY_GOAL = [(0, 8192, 0.85), (8192, 1 << 22, 1.1)]   # (from, to, at most)
BW_GOAL_FROM = 64 << 10                                   # >= 1.0 from 64 KiB


def _ok(rows):
    return [r for r in rows if r.get("status", "ok") == "ok" and r.get("median") is not None
            and r.get("size_bytes") is not None]


def _series_label(t, rows, table_mtu):
    mtus = sorted({r.get("mtu") for r in rows if r.get("mtu") is not None})
    label = t
    if table_mtu is not None and mtus and mtus != [table_mtu]:
        label += " (at MTU %s)" % "/".join(map(str, mtus))
    return label


def ratio_series(rows, bench, variant, baseline, transport_order, run=None):
    """[{label, transport, x, y, rows}]: @p bench's median / the
    baseline's at the same size, for the rows of the run @p run (None:
    current_run() of @p rows) whose group_variant() is @p variant (the
    baseline from the same variant and the same run).  Sizes 0 B and
    sizes the baseline lacks are left out."""
    run = run or current_run(rows)
    g = [r for r in _ok(rows) if r.get("benchmark") == bench and group_variant(r) == variant
         and run_of(r) == run]
    base = {r["size_bytes"]: r["median"] for r in g if r["transport"] == baseline}
    out = []
    for t in transport_order:
        if t == baseline:
            continue
        tr = [r for r in g if r["transport"] == t]
        pts = sorted((r["size_bytes"], r["median"] / base[r["size_bytes"]]) for r in tr
                     if r["size_bytes"] > 0 and base.get(r["size_bytes"]))
        if not pts:
            continue
        table_mtu = dict(variant).get("mtu")
        out.append({"label": _series_label(t, tr, table_mtu), "transport": t,
                    "x": [p[0] for p in pts], "y": [p[1] for p in pts],
                    "rows": tr + [r for r in g if r["transport"] == baseline]})
    return out


def _mtu_variants(rows, bench):
    """The MTU tables of @p bench: sorted [(("mtu", m),) ...] present."""
    return sorted({group_variant(r) for r in _ok(rows) if r.get("benchmark") == bench
                   and r.get("mtu") is not None and len(variant_of(r)) == 1},
                  key=lambda v: v[0][1])


def _ratio_panels(rows, benches, baseline, order, what, goal, run):
    panels = []
    for bench in benches:
        variants = [(v, "MTU %s" % v[0][1]) for v in _mtu_variants(rows, bench)]
        variants.append(((), DEFAULT_PANEL))
        for v, vtitle in variants:
            series = ratio_series(rows, bench, v, baseline, order, run)
            if not series:
                continue
            panels.append({"kind": "lines", "title": "%s, %s" % (bench, vtitle), "row": bench,
                           "share_y": bool(v),
                           "ylabel": "%s / %s (%s)" % (bench, baseline, what),
                           "xlabel": "message size (log; 0 B not shown)", "logx": True,
                           "logy": True, "series": series,
                           "refs": [(1.0, "= %s" % baseline)], "goal": goal(bench)})
    return panels


def latency_ratio(rows, baseline, order, run=None):
    return _ratio_panels(rows, ["latency"], baseline, order, "below 1: faster",
                         lambda b: {"label": "rudp goal: at most", "steps": LATENCY_GOAL,
                                    "worse": "above"}, run)


def bandwidth_ratio(rows, baseline, order, run=None):
    return _ratio_panels(rows, ["bw", "bibw"], baseline, order, "above 1: faster",
                         lambda b: {"label": "rudp goal: at least, from 64 KiB",
                                    "steps": [(BW_GOAL_FROM, 1 << 22, 1.0)], "worse": "below"}
                         if b == "bw" else None, run)


# the absolute figures' units: a row unit -> (shown unit, factor)
ABS_UNITS = {"us": ("us", 1.0), "MB/s": ("GB/s", 1e-3)}


def absolute_series(rows, bench, variant, order, run):
    """[{label, transport, x, y, lo, hi, rows}]: @p bench's medians per
    transport and run for the rows whose group_variant() is @p variant,
    with the smallest and largest repeat (results.spread) as lo and hi;
    this run's series first, then earlier runs newest first.  0 B is left
    out (log axis)."""
    g = [r for r in _ok(rows) if r.get("benchmark") == bench and group_variant(r) == variant
         and r["size_bytes"] > 0]
    out = []
    have = {run_of(r) for r in g}
    runs = ([run] if run in have else []) + \
        sorted((k for k in have if k != run and k), key=run_date, reverse=True) + \
        ([None] if None in have and run is not None else [])
    for k in runs:
        for t in order:
            tr = sorted((r for r in g if r["transport"] == t and run_of(r) == k),
                        key=lambda r: r["size_bytes"])
            if not tr:
                continue
            unit, f = ABS_UNITS.get(tr[0].get("unit"), (tr[0].get("unit"), 1.0))
            sp = [spread(r) or (r["median"], r["median"]) for r in tr]
            label = _series_label(t, tr, dict(variant).get("mtu"))
            if k != run:
                # one transport may have several earlier runs in a panel
                label += " (%s)" % (run_date(k)[:16].replace("T", " ") or "not recorded")
            out.append({"label": label, "transport": t,
                        "x": [r["size_bytes"] for r in tr], "y": [r["median"] * f for r in tr],
                        "lo": [a * f for a, _ in sp], "hi": [b * f for _, b in sp],
                        "unit": unit, "rows": tr})
    return out


def _absolute_panels(rows, benches, order, run, what):
    panels = []
    for bench in benches:
        variants = [(v, "MTU %s" % v[0][1]) for v in _mtu_variants(rows, bench)]
        variants.append(((), DEFAULT_PANEL))
        for v, vtitle in variants:
            series = absolute_series(rows, bench, v, order, run)
            if not series:
                continue
            panels.append({"kind": "lines", "title": "%s, %s" % (bench, vtitle), "row": bench,
                           "share_y": bool(v),
                           "ylabel": "%s, %s (%s; bars: min-max of the repeats)"
                           % (bench, series[0]["unit"], what),
                           "xlabel": "message size (log; 0 B not shown)", "logx": True,
                           "logy": True, "series": series, "refs": []})
    return panels


def latency_abs(rows, baseline, order, run=None):
    return _absolute_panels(rows, ["latency"], order, run, "median, lower is faster")


def bandwidth_abs(rows, baseline, order, run=None):
    return _absolute_panels(rows, ["bw", "bibw"], order, run, "median, higher is faster")


def halo_ratio(rows, baseline, order, run=None):
    panels = []
    for bench in ("halo-oneway", "halo-twoway", "halo-alternating"):
        series = []
        for links in (1, 2):
            for s in ratio_series(rows, bench, (("links", links),), baseline, order, run):
                s["label"] += ", %d link%s" % (links, "" if links == 1 else "s")
                s["dashed"] = links == 2
                series.append(s)
        if series:
            panels.append({"kind": "lines", "title": bench, "logx": True, "logy": True,
                           "ylabel": "MB/s / %s on as many links (above 1: faster)" % baseline,
                           "xlabel": "boundary item size (log)", "series": series,
                           "refs": [(1.0, "= %s" % baseline)]})
    return panels


def _bar_panel(title, ylabel, groups, series, ref=None, logy=False):
    """groups: category labels; series: [{label, values: [v or None], rows}]."""
    series = [s for s in series if any(v is not None for v in s["values"])]
    if not series:
        return None
    return {"kind": "bars", "title": title, "ylabel": ylabel, "groups": groups,
            "series": series, "ref": ref, "logy": logy}


def _series(label, rs, key):
    """One bar series: field key of each row in rs."""
    return {"label": label, "values": [r.get(key) for r in rs], "rows": rs}


def _per_pattern(rows, bench, order):
    """(pattern, transports in order, their rows) for each pattern of bench."""
    ok = [r for r in _ok(rows) if r.get("benchmark") == bench]
    for pat in sorted({r.get("pattern") for r in ok}, key=str):
        g = {r["transport"]: r for r in ok if r.get("pattern") == pat}
        ts = [t for t in order if t in g]
        yield pat, ts, [g[t] for t in ts]


def halo_app(rows, baseline, order, run=None):
    panels = []
    for grid, ts, rs in _per_pattern(rows, "halo-app", order):
        p = _bar_panel("halo-app %s: seconds per run (medians, mean over ranks)" % grid, "s", ts,
                       [_series("synchronisation", rs, "median"),
                        _series("computation", rs, "compute_s")])
        if p:
            p["stacked"] = True
            panels.append(p)
    return panels


def compute_burst(rows, baseline, order, run=None):
    ok = [r for r in _ok(rows) if r.get("benchmark") == "compute-burst"]
    keys = [(t, m) for t in order for m in ("direct", "daemon")
            if any(r["transport"] == t and r.get("mode") == m for r in ok)]
    if not keys:
        return []
    by = {(r["transport"], r.get("mode")): r for r in ok}
    labels = ["%s\n(%s)" % k for k in keys]
    rs = [by[k] for k in keys]
    panels = [_bar_panel("completion of the burst (median)", "s", labels,
                         [_series("completion", rs, "median")],
                         ref=(0.1, "the receiver's 100 ms of computation")),
              _bar_panel("sender's retransmissions and drops (medians)", "count", labels,
                         [_series("retransmits", rs, "retransmits"),
                          _series("drops", rs, "drops")])]
    return [p for p in panels if p]


def sockets(rows, baseline, order, run=None):
    panels = []
    for pat, ts, rs in _per_pattern(rows, "sockets", order):
        p = _bar_panel("socket descriptors per process, %s" % pat, "count", ts,
                       [_series("sockets", rs, "median")])
        if p:
            panels.append(p)
    return panels


def spurious_retx(rows, baseline, order, run=None):
    """rudp bw's spurious retransmissions (goal: 0 at zero loss) per MTU;
    a null count (a build that does not print it) is shown as "n/a"."""
    cands = [r for r in _ok(rows) if r.get("benchmark") == "bw" and "spurious_retx" in r]
    panels = []
    for t in order:
        tr = [r for r in cands if r["transport"] == t]
        by = {}
        for r in tr:
            by.setdefault(r.get("mtu"), r)
        if not by:
            continue
        mtus = sorted(by, key=lambda m: (m is None, m or 0))
        labels = ["MTU %s" % m if m is not None else "default cluster" for m in mtus]
        rs = [by[m] for m in mtus]
        p = _bar_panel("%s bw: spurious retransmissions, summed over the runs (goal 0)" % t,
                       "count", labels,
                       [{"label": "spurious_retx", "values": [r["spurious_retx"] for r in rs],
                         "rows": rs, "na": "n/a (not printed)"}])
        if p is None:   # every count null: still say so rather than draw nothing
            p = {"kind": "bars", "title": "%s bw: spurious retransmissions" % t,
                 "ylabel": "count", "groups": labels, "ref": None, "logy": False,
                 "series": [{"label": "spurious_retx", "values": [None] * len(rs), "rows": rs,
                             "na": "n/a (not printed)"}]}
        panels.append(p)
    return panels


FIGURES = [
    ("latency.png", "latency per transport, wire and MTU (median, min-max of the repeats)",
     latency_abs),
    ("bandwidth.png", "bandwidth per transport, wire and MTU (median, min-max of the repeats)",
     bandwidth_abs),
    ("latency-ratio.png", "latency / tcp per wire and MTU", latency_ratio),
    ("bandwidth-ratio.png", "bandwidth / tcp per wire and MTU", bandwidth_ratio),
    ("halo-ratio.png", "halo exchange / tcp", halo_ratio),
    ("halo-app.png", "halo application times", halo_app),
    ("compute-burst.png", "compute-burst time and retransmissions", compute_burst),
    ("sockets.png", "sockets per process", sockets),
    ("spurious-retx.png", "rudp spurious retransmissions", spurious_retx),
]


def build_all(rows, transport_order, baseline="tcp", this_run=None):
    """[(file, what, panels)] for every figure with data; @p this_run: the
    run the ratio figures take their columns from (report.current_run)."""
    order = list(transport_order) + sorted({r["transport"] for r in rows} - set(transport_order))
    run = current_run(rows, this_run)
    out = []
    for fname, what, builder in FIGURES:
        panels = builder(rows, baseline, order, run)
        if panels:
            out.append((fname, what, panels))
    return out


def _stale(rows, this_run):
    return [r for r in rows if not is_fresh(r, this_run)]


def _size_ticks(ax, xs):
    lo, hi = min(xs), max(xs)
    ticks, v = [], 1
    while v <= hi * 2:
        if v >= lo / 2:
            ticks.append(v)
        v *= 2
    step = max(1, (len(ticks) + 7) // 8)
    ticks = ticks[::step]
    ax.set_xticks(ticks)
    ax.set_xticklabels([fmt_size(t).replace(" ", "\u2009") for t in ticks], fontsize=7)
    ax.minorticks_off()


def _draw_lines(ax, p, color, this_run, stale_notes):
    xs = []
    for s in p["series"]:
        stale = _stale(s["rows"], this_run)
        label = s["label"]
        if stale:
            label += " " + OLD_MARK
            stale_notes.update(run_text(run_of(r)) for r in stale)
        if "lo" in s:
            # the repeats' min-max around the median
            yerr = [[max(0.0, y - lo) for y, lo in zip(s["y"], s["lo"])],
                    [max(0.0, hi - y) for y, hi in zip(s["y"], s["hi"])]]
            ax.errorbar(s["x"], s["y"], yerr=yerr, marker="o", markersize=3, capsize=2,
                        elinewidth=0.8, color=color(s["transport"]),
                        linestyle=":" if stale else "-", alpha=0.45 if stale else 1.0,
                        label=label)
        else:
            ax.plot(s["x"], s["y"], marker="o", markersize=3, color=color(s["transport"]),
                    linestyle="--" if s.get("dashed") else "-", alpha=0.45 if stale else 1.0,
                    label=label)
        xs += s["x"]
    for y, text in p.get("refs", []):
        ax.axhline(y, color="black", linewidth=0.9, label=text)
    if p.get("logx"):
        ax.set_xscale("log", base=2)
        _size_ticks(ax, xs)
    if p.get("logy"):
        ax.set_yscale("log")
        # ratios read as plain numbers (0.5, 2), not 5 x 10^-1
        from matplotlib.ticker import FuncFormatter
        plain = FuncFormatter(lambda v, _: "%g" % float("%.2g" % v))
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(FuncFormatter(
            lambda v, _: plain(v, _) if v > 0 and round(v / 10 ** math.floor(math.log10(v)))
            in (2, 3, 5) else ""))
    goal = p.get("goal")
    if goal:
        # the goal's bound as a dotted step, the side that misses it shaded
        lo, hi = min(xs), max(xs)
        ylo, yhi = ax.get_ylim()
        steps = [y for _, _, y in goal["steps"]]
        ylo, yhi = min([ylo] + [y / 1.2 for y in steps]), max([yhi] + [y * 1.2 for y in steps])
        first = True
        for a, b, y in goal["steps"]:
            a, b = max(a, lo), min(b, hi)
            if a < b:
                ax.plot([a, b], [y, y], color="dimgrey", linestyle=":", linewidth=1.6,
                        label=goal["label"] if first else None)
                far = 1e3 if goal["worse"] == "above" else 1e-3
                ax.fill_between([a, b], [y, y], [far, far], color="grey", alpha=0.12,
                                linewidth=0, label="misses the goal" if first else None)
                first = False
        ax.set_ylim(ylo, yhi)
    ax.set_xlabel(p["xlabel"], fontsize=8)


def _draw_bars(ax, p, color, this_run, stale_notes):
    n, k = len(p["groups"]), len(p["series"])
    width = 0.8 / (1 if p.get("stacked") else k)
    bottoms = [0.0] * n
    top = max([v for s in p["series"] for v in s["values"] if v is not None] or [1.0])
    if p.get("stacked"):
        top = max(sum(s["values"][i] or 0 for s in p["series"]) for i in range(n)) or 1.0
    if p.get("ref"):
        top = max(top, p["ref"][0])
    shades = ["C0", "C1", "C2", "C3"]
    stale_groups = set()
    for j, s in enumerate(p["series"]):
        labelled = False
        for i, v in enumerate(s["values"]):
            x = i if p.get("stacked") else i - 0.4 + width * (j + 0.5)
            r = s["rows"][i]
            stale = not is_fresh(r, this_run)
            if stale:
                stale_groups.add(i)
                stale_notes.add(run_text(run_of(r)))
            if v is None:
                ax.text(x, top * 0.02, s.get("na", "n/a"), ha="center", va="bottom",
                        fontsize=7, rotation=90)
                continue
            ax.bar(x, v, width, bottom=bottoms[i] if p.get("stacked") else 0,
                   color=shades[j % len(shades)], alpha=0.45 if stale else 1.0,
                   hatch="//" if stale else None, edgecolor="white",
                   label=None if labelled else s["label"])
            labelled = True
            y, va = v, "bottom"
            if p.get("stacked"):
                # a segment too thin for its number gets it above its top
                small = v < 0.06 * top
                y, va = (bottoms[i] + v, "bottom") if small else (bottoms[i] + v / 2, "center")
            ax.text(x, y, "%g" % round(v, 4), ha="center", va=va, fontsize=7)
            if p.get("stacked"):
                bottoms[i] += v
    ax.set_xticks(range(n))
    ax.set_xticklabels([g + (" " + OLD_MARK if i in stale_groups else "")
                        for i, g in enumerate(p["groups"])], fontsize=7,
                       rotation=30 if n > 4 else 0, ha="right" if n > 4 else "center")
    if p.get("ref"):
        ax.axhline(p["ref"][0], color="black", linewidth=0.9, linestyle="--", label=p["ref"][1])
    ax.set_ylim(0, top * 1.18)
    # one legend entry per series
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for h, lab in zip(handles, labels):
        seen.setdefault(lab, h)
    if len(seen) > 1 or p.get("ref"):
        ax.legend(seen.values(), seen.keys(), fontsize=7)


def _layout(panels):
    """Rows of panels: the panels of one "row" key (a benchmark's MTU
    panels) side by side, the others three to a row."""
    rows, keyed = [], {}
    for p in panels:
        k = p.get("row")
        if k is None:
            if not rows or rows[-1][0].get("row") is not None or len(rows[-1]) == 3:
                rows.append([])
            rows[-1].append(p)
        elif k in keyed:
            keyed[k].append(p)
        else:
            keyed[k] = [p]
            rows.append(keyed[k])
    return rows


def draw(fname, what, panels, path, transport_order, this_run=None, run_name="this run"):
    """Renders @p panels into @p path; returns the panel titles drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    order = list(transport_order)
    cmap = plt.get_cmap("tab10")

    def color(t):
        return cmap((order.index(t) if t in order else len(order)) % 10)

    grid = _layout(panels)
    nrows, ncols = len(grid), max(len(r) for r in grid)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.4 * ncols, 4.0 * nrows + 0.6),
                             squeeze=False, layout="constrained")
    where = {id(p): (i, j) for i, r in enumerate(grid) for j, p in enumerate(r)}
    stale_notes = set()
    titles = []
    for p in panels:
        ax = axes[where[id(p)][0]][where[id(p)][1]]
        if p["kind"] == "lines":
            _draw_lines(ax, p, color, this_run, stale_notes)
        else:
            _draw_bars(ax, p, color, this_run, stale_notes)
        ax.set_title(p["title"], fontsize=9)
        ax.set_ylabel(p["ylabel"], fontsize=8)
        ax.grid(True, which="major", alpha=0.3)
        ax.tick_params(labelsize=7)
        titles.append(p["title"])
    for i, r in enumerate(grid):
        for j in range(len(r), ncols):
            axes[i][j].axis("off")
        # line panels: one legend per row, right of it (the colours and
        # styles mean the same in every panel; inside, it hid the lines),
        # and one y range per row, so the MTUs compare at a glance
        if r[0]["kind"] == "lines":
            share = [j for j in range(len(r)) if r[j].get("share_y")]
            lims = [axes[i][j].get_ylim() for j in share]
            for j in share:
                axes[i][j].set_ylim(min(a for a, _ in lims), max(b for _, b in lims))
            seen = {}
            for j in range(len(r)):
                for h, lab in zip(*axes[i][j].get_legend_handles_labels()):
                    seen.setdefault(lab, h)
            # the transports first, then the reference lines
            refs = {t for q in r for _, t in q.get("refs", [])}
            refs |= {q["goal"]["label"] for q in r if q.get("goal")} | {"misses the goal"}
            labels = [k for k in seen if k not in refs] + [k for k in seen if k in refs]
            axes[i][len(r) - 1].legend([seen[k] for k in labels], labels, fontsize=7,
                                       loc="upper left", bbox_to_anchor=(1.02, 1.0))
    title = "ethermpi: %s" % what
    if this_run:
        title += "\n%s: %s" % (run_name, run_text(as_run(this_run)))
    fig.suptitle(title, fontsize=10)
    if stale_notes:
        note = "%s faded: not measured in %s (%s); see compare.md" % (
            OLD_MARK, run_name, "; ".join(sorted(stale_notes)))
        fig.supxlabel("\n".join(textwrap.wrap(note, 60 * ncols)), fontsize=7)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return titles


def write_all(rows, out_dir, transport_order, baseline="tcp", this_run=None, run_name="this run"):
    """Writes every figure with data into @p out_dir, removes the stale
    file of a figure that has none; returns [(path, what)], or None when
    matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return None
    this_run = current_run(rows, this_run)
    built = build_all(rows, transport_order, baseline, this_run)
    have = {f for f, _, _ in built}
    for fname, _, _ in FIGURES:
        path = os.path.join(out_dir, fname)
        if fname not in have and os.path.exists(path):
            os.unlink(path)
    out = []
    for fname, what, panels in built:
        path = os.path.join(out_dir, fname)
        draw(fname, what, panels, path, transport_order, this_run, run_name)
        out.append((path, what))
    return out
