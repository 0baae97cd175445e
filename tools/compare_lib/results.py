# SPDX-License-Identifier: BSD-3-Clause
"""Result rows: aggregation of repeated runs, and merging into compare.json.

Row schema (a contract, see docs/benchmarks.md):

    {"transport": "tcp", "benchmark": "latency", "size_bytes": 1024,
     "median": 6.1, "unit": "us", "runs": [6.0, 6.1, 6.3],
     "status": "ok", "failed_runs": 0,
     "pattern": "1:1",                       # burst / pingpong only
     "secondary": {"rtt_mean": {"median": 6.4, "unit": "us/rt"}},  # optional
     "host_cl_rt_ns": [55, 56, 340],  # optional: bench/host_probe before each run
     "commit": "bfd88c0", "date": "2026-11-23T23:50:00+00:00",   # provenance
     "run": "bfd88c0@2026-11-23T23:50:00+00:00"}   # the run (run_of)

A failed or skipped combination is one row with "size_bytes": null,
"median": null, "runs": [], "status": "failed"|"skipped" and "reason".
"""

import json
import os
import statistics
import tempfile

# Fields that identify a row.  A "combination" is the key without size_bytes;
# a runner that produces rows for a combination replaces all old rows of it.
# VARIANT_FIELDS are the extra fields later benchmarks name their variants
# by (halo: links; compute-burst: mode; relax: elements_per_packet, n,
# ranks; loss_pct for loss-injected runs; rdv: dpdk-memif-daemon's rendezvous
# path, "own-queue" or "daemon"; mtu: the MTU of the cluster's interfaces for
# the MTU rows (real networks); framing: the dpdk BTL's btl_dpdk_framing, "l2" or
# "udp"; mpi: the MPI of the libfabric rows, ompi4, ompi5 or
# mpich5 (rows without it ran under Debian's Open MPI 4.1); cluster:
# "hostfile" for rows measured across real hosts (compare.py --hostfile;
# rows without it ran on the emulated cluster or the local host); threads:
# mt-rate's threads per rank; thread_level: latency-mt's "single" (MPI_Init)
# or "multiple" (the job asked for MPI_THREAD_MULTIPLE); names: how the
# processes knew each other, "wire" (wire v3: named, first contact) or
# "ids" (wire v2: numbered), asked for explicitly (rows without it ran the
# default, which is wire)); a row without
# one has None there.
VARIANT_FIELDS = ("links", "mode", "elements_per_packet", "n", "ranks", "loss_pct", "rdv", "mtu",
                  "framing", "mpi", "cluster", "threads", "thread_level", "names")
# Provenance: every row written from now on names the run that measured it
# (the runner's git commit, "-dirty" if tracked files outside results/ were
# modified, and the run's start date, ISO 8601 UTC).  Rows written before
# these fields existed get them from compare-meta.json (backfill_provenance)
# or stay without them ("not recorded").
PROVENANCE_FIELDS = ("commit", "date", "run")
# secondary columns whose median also becomes a plain row field (compute-burst's
# drops and retransmits)
PROMOTED_COLUMNS = ("drops", "retransmits")
KEY_FIELDS = ("transport", "benchmark", "pattern") + VARIANT_FIELDS + ("size_bytes",)
COMBO_FIELDS = ("transport", "benchmark", "pattern") + VARIANT_FIELDS


def row_key(row):
    return tuple(row.get(f) for f in KEY_FIELDS)


def combo_key(row):
    return tuple(row.get(f) for f in COMBO_FIELDS)


def median(values):
    if not values:
        raise ValueError("median of nothing")
    # rounded: the programs print 3 decimals; this only drops float noise
    return round(statistics.median(values), 6)


class RunOutcome:
    """What one repetition of one (transport, benchmark) produced."""

    def __init__(self, ok, table=None, reason=None, counters=None, host_cl_rt_ns=None):
        self.ok = ok
        # the host's CPU-to-CPU cache-line round trip just before the run
        # (bench/host_probe; None = not measured): which placement of the
        # VM's CPUs the run had (docs/benchmarks.md "Host placement")
        self.host_cl_rt_ns = host_cl_rt_ns
        self.table = table    # BenchTable when ok
        self.reason = reason  # short text when not ok
        # {name: int or None}: counters the run's processes printed (e.g. the
        # rudp BTL's spurious_retx, summed over ranks); None = not printed
        self.counters = counters


def _base(transport, benchmark, pattern, fields=None):
    row = {"transport": transport, "benchmark": benchmark}
    if pattern is not None:
        row["pattern"] = pattern
    for k, v in (fields or {}).items():
        row[k] = v
    return row


def status_row(transport, benchmark, pattern, unit, status, reason, fields=None):
    """The single row recorded for a failed or skipped combination.
    @p fields: extra fields (VARIANT_FIELDS and others) copied into the row."""
    row = _base(transport, benchmark, pattern, fields)
    row.update({"size_bytes": None, "median": None, "unit": unit, "runs": [],
                "status": status, "reason": reason})
    return row


def aggregate(transport, benchmark, pattern, unit, outcomes, fields=None):
    """Rows for one combination from its repetitions (list of RunOutcome).

    Medians are taken per size over the successful runs; if no run
    succeeded, one failed row carries the reasons.
    """
    good = [o for o in outcomes if o.ok]
    bad = [o for o in outcomes if not o.ok]
    if not good:
        reasons = "; ".join("run %d: %s" % (i + 1, o.reason)
                            for i, o in enumerate(outcomes) if not o.ok)
        return [status_row(transport, benchmark, pattern, unit, "failed",
                           "%d/%d runs failed: %s" % (len(bad), len(outcomes), reasons),
                           fields)]
    for o in good:
        if o.table.unit != unit:
            raise ValueError("benchmark %s reports unit %r, expected %r"
                             % (benchmark, o.table.unit, unit))
    sizes = []
    for o in good:
        for s in o.table.rows:
            if s not in sizes:
                sizes.append(s)
    sizes.sort()
    columns = good[0].table.columns
    rows = []
    for s in sizes:
        per_run = [o.table.rows[s] for o in good if s in o.table.rows]
        runs = [vals[0] for vals in per_run]
        row = _base(transport, benchmark, pattern, fields)
        row.update({"size_bytes": s, "median": median(runs), "unit": unit,
                    "runs": runs, "status": "ok", "failed_runs": len(bad)})
        probes = [o.host_cl_rt_ns for o in good if s in o.table.rows]
        if any(p is not None for p in probes):
            row["host_cl_rt_ns"] = probes  # one per run, in the order of "runs"
        secondary = {}
        for c, (metric, cunit) in enumerate(columns[1:], start=1):
            vals = [v[c] for v in per_run if len(v) > c]
            if vals:
                secondary[metric] = {"median": median(vals), "unit": cunit}
        if secondary:
            row["secondary"] = secondary
            for k in PROMOTED_COLUMNS:
                if k in secondary:
                    row[k] = secondary[k]["median"]
        row.update(_counter_fields(good))
        rows.append(row)
    return rows


def _counter_fields(good):
    """Run counters (RunOutcome.counters) as row fields: NAME = the sum over
    the successful repetitions, NAME_runs = each repetition's value.  A
    counter some run did not print (an older build) is null, never 0: a
    missing count is not a zero count."""
    names = []
    for o in good:
        for k in (o.counters or {}):
            if k not in names:
                names.append(k)
    out = {}
    for k in names:
        per_run = [(o.counters or {}).get(k) for o in good]
        out[k] = None if any(v is None for v in per_run) else sum(per_run)
        out[k + "_runs"] = per_run
    return out


def run_id(commit, date):
    """The id of a run: "<commit>@<date>" (the commit and start date of the
    run; "?" for an unrecorded commit); None without a date."""
    if not date:
        return None
    return "%s@%s" % (commit or "?", date)


def run_of(row):
    """The run that measured @p row.  "Same run" means: rows with equal
    run_of().  A run is one measuring session: one compare.py invocation,
    or the invocations of one tools/demo call, which hands them one id
    (compare.py --run-id), on one build of one commit.  Rows written before
    rows carried "run" count by (commit, date): one compare.py invocation
    stamped those.  None: nothing recorded (never the same run as another
    row)."""
    if row.get("run"):
        return row["run"]
    return run_id(row.get("commit"), row.get("date"))


def stamp(rows, commit, date, run=None):
    """Marks @p rows as measured by the run (@p commit, @p date); @p run:
    its id when it is not run_id(commit, date) (a tools/demo call that
    spans several compare.py invocations)."""
    for r in rows:
        r["commit"] = commit
        r["date"] = date
        r["run"] = run or run_id(commit, date)
    return rows


def spread(row):
    """(min, max) of the row's repeats ("runs"); None without repeats."""
    runs = [v for v in (row.get("runs") or []) if isinstance(v, (int, float))]
    if not runs:
        return None
    return min(runs), max(runs)


def row_label(row):
    """The runner's combination label (Benchmark.label) of a row:
    name[@pattern][,field=value...] over the variant fields it has."""
    base = row.get("benchmark", "")
    if row.get("pattern") is not None:
        base += "@%s" % row["pattern"]
    for f in sorted(f for f in VARIANT_FIELDS if row.get(f) is not None):
        base += ",%s=%s" % (f, row[f])
    return base


def backfill_provenance(rows, meta):
    """Rows without a date (written before rows carried provenance) get the
    commit and date that compare-meta.json recorded for their combination
    (its "combos", keyed transport|label, hold the run that last wrote
    it).  Returns how many rows were filled; others stay unrecorded."""
    combos = (meta or {}).get("combos") if isinstance(meta, dict) else None
    if not isinstance(combos, dict):
        return 0
    n = 0
    for r in rows:
        if r.get("date"):
            continue
        c = combos.get("%s|%s" % (r.get("transport"), row_label(r)))
        if not isinstance(c, dict) or not c.get("date"):
            continue
        env = c.get("environment") if isinstance(c.get("environment"), dict) else {}
        r["date"] = c["date"]
        r["commit"] = env.get("git_commit")
        if env.get("run"):
            r["run"] = env["run"]
        n += 1
    return n


def provenance(row):
    """(commit, date) of the run that measured @p row; None where unknown."""
    return row.get("commit"), row.get("date")


def promote(rows, names):
    """Copies the medians of the named secondary columns to the rows' top
    level (e.g. halo-app's "compute_s" next to the primary sync time)."""
    for r in rows:
        for n in names:
            sec = (r.get("secondary") or {}).get(n)
            if sec is not None:
                r[n] = sec["median"]
    return rows


def merge(existing, new):
    """Rows of `existing` whose combination is not in `new`, then `new`.

    Replacing whole combinations (not just equal keys) keeps a combination
    from holding a stale failed row next to fresh results, or sizes from an
    older sweep that the new one did not measure.
    """
    replaced = {combo_key(r) for r in new}
    kept = [r for r in existing if combo_key(r) not in replaced]
    return kept + list(new)


def sort_rows(rows, transport_order=(), benchmark_order=()):
    def rank(order, value):
        try:
            return (0, order.index(value), "")
        except ValueError:
            return (1, 0, str(value))

    def key(r):
        size = r.get("size_bytes")
        return (rank(list(benchmark_order), r.get("benchmark")),
                str(r.get("pattern") or ""),
                rank(list(transport_order), r.get("transport")),
                -1 if size is None else size)
    return sorted(rows, key=key)


def load_rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, list):
        raise ValueError("%s: expected a JSON list of rows" % path)
    for r in data:
        if not isinstance(r, dict) or "transport" not in r or "benchmark" not in r:
            raise ValueError("%s: malformed row %r" % (path, r))
    return data


def write_json_atomic(path, data):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".compare-", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
