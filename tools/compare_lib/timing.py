# SPDX-License-Identifier: BSD-3-Clause
"""How long a comparison takes: progress lines with the time left, the
per-step durations compare-meta.json keeps for the next run's estimate,
and the wall time of a whole tools/demo call (make demo).

compare-meta.json keys written here:

    "timing": {"full"|"quick": {"step_seconds": {"tcp|latency": 4.1, ...},
                                "cluster_up_seconds": 9.5,
                                "date": ..., "commit": ...}}
        step_seconds: wall seconds of one repeat of a combination (the
        program and the host probe before it), the median of the last run
        that measured it; kept per mode, --quick runs are shorter
    "wall_time": {"demo": {"seconds": 1500, "minutes": 25.0, "date": ...,
                           "commit": ..., "run": ..., "make_seconds": 4,
                           "quick": false, "repeat": 3}, "bench": ...}
        the whole tools/demo call, 'make' steps included (Makefile passes
        the time make started); "demo" is only a full make demo (no
        --quick, the default repeat): README.md's time comes from it
        (tests/hygiene/run-hygiene-check compares them)
"""

import statistics
import sys
import time

# a first run's estimate (no compare-meta.json yet): wall seconds of one
# repeat per benchmark.  The program times recorded up to 2026-11-28 on
# the 2-core emulated cluster (medians, mpirun start-up included) times
# BUILTIN_OVERHEAD: those sum to about 14 minutes for make demo's 267 runs,
# while a fresh make demo took 25 (timeouts, slow repeats, the host probe)
BUILTIN_OVERHEAD = 1.7
BUILTIN_SECONDS = {k: v * BUILTIN_OVERHEAD for k, v in {
    "latency": 4.0, "latency-eager": 2.5, "latency-rndv": 5.5, "bw": 2.5, "bibw": 3.0,
    "burst": 2.0, "pingpong": 2.5, "sockets": 1.0, "allreduce": 3.0, "alltoall": 3.0,
    "halo-oneway": 7.0, "halo-twoway": 8.5, "halo-alternating": 14.0, "halo-app": 1.0,
    "compute-burst": 1.0, "latency-mt": 3.0, "mt-rate": 3.0,
    "osc-put": 3.0, "osc-get": 3.0, "osc-fop": 1.0, "osc-cas": 1.0}.items()}
BUILTIN_OTHER = 4.0 * BUILTIN_OVERHEAD
QUICK_FACTOR = 0.5        # --quick: fewer sizes and iterations
BUILTIN_CLUSTER_UP = 15.0  # emcluster up + down per phase


def mode_key(quick):
    return "quick" if quick else "full"


def fmt_duration(seconds):
    """"12 s", "3 min 05 s", "1 h 02 min"."""
    s = int(round(max(0.0, seconds)))
    if s < 60:
        return "%d s" % s
    if s < 3600:
        return "%d min %02d s" % (s // 60, s % 60)
    return "%d h %02d min" % (s // 3600, (s % 3600) // 60)


def fmt_left(seconds):
    """"about 14 min left" (rounded up to whole minutes past one)."""
    if seconds < 60:
        return "under a minute left"
    return "about %d min left" % int((seconds + 59) // 60)


class Estimates:
    """Seconds per step from the last run's record (compare-meta.json
    "timing"), else BUILTIN_SECONDS."""

    def __init__(self, meta, quick):
        t = (meta or {}).get("timing") if isinstance(meta, dict) else None
        rec = t.get(mode_key(quick)) if isinstance(t, dict) else None
        rec = rec if isinstance(rec, dict) else {}
        steps = rec.get("step_seconds")
        self.steps = steps if isinstance(steps, dict) else {}
        up = rec.get("cluster_up_seconds")
        self.cluster_up = float(up) if isinstance(up, (int, float)) else BUILTIN_CLUSTER_UP
        self.quick = quick
        self.source = "the last run (compare-meta.json)" if self.steps else "a built-in table"

    def step(self, combo, benchmark):
        v = self.steps.get(combo)
        if isinstance(v, (int, float)):
            return float(v)
        v = BUILTIN_SECONDS.get(benchmark, BUILTIN_OTHER)
        return v * (QUICK_FACTOR if self.quick else 1.0)


class Progress:
    """Numbered progress lines with the time left.

    The plan is a list of phases, each a list of (combo, benchmark) steps;
    a phase's list may be replaced when it starts (plan_phase: the steps
    that turned out not to apply are dropped).  The time left is the
    estimate of the steps still to run, times how far the finished steps
    were off their estimate (clamped to 0.5..3), plus a cluster bring-up
    per phase still to start."""

    def __init__(self, phases, estimates, out=None, clock=time.monotonic):
        self.est = estimates
        self.out = out or sys.stderr
        self.clock = clock
        self.t0 = clock()
        self.phases = [list(p) for p in phases]
        self.started = [False] * len(self.phases)
        self.done = 0
        self.done_est = 0.0
        self.done_real = 0.0
        self.durations = {}    # combo -> [seconds]
        self.cluster_up = []   # seconds per bring-up

    def plan_phase(self, i, steps):
        self.phases[i] = list(steps)
        self.started[i] = True

    def total(self):
        return self.done + sum(len(p) for p in self.phases)

    def left_seconds(self):
        rest = sum(self.est.step(c, b) for p in self.phases for c, b in p)
        f = 1.0
        if self.done_est > 0:
            f = min(3.0, max(0.5, self.done_real / self.done_est))
        ups = sum(1 for s in self.started if not s) * self.est.cluster_up
        return rest * f + ups

    def begin(self, i, combo, benchmark, text):
        """Prints "[step k/N] text ... elapsed, about M min left"."""
        print("[step %d/%d] %s ... %s elapsed, %s" % (
            self.done + 1, self.total(), text, fmt_duration(self.clock() - self.t0),
            fmt_left(self.left_seconds())), file=self.out, flush=True)

    def end(self, i, combo, benchmark, seconds):
        p = self.phases[i]
        if (combo, benchmark) in p:
            p.remove((combo, benchmark))
        self.done += 1
        self.done_est += self.est.step(combo, benchmark)
        self.done_real += seconds
        self.durations.setdefault(combo, []).append(seconds)

    def record(self, meta, date, commit):
        """This run's step durations into @p meta["timing"] (combinations
        it did not run keep their earlier ones)."""
        timing = meta.get("timing") if isinstance(meta.get("timing"), dict) else {}
        rec = timing.get(mode_key(self.est.quick))
        rec = rec if isinstance(rec, dict) else {}
        steps = rec.get("step_seconds") if isinstance(rec.get("step_seconds"), dict) else {}
        for combo, secs in self.durations.items():
            steps[combo] = round(statistics.median(secs), 2)
        rec["step_seconds"] = steps
        if self.cluster_up:
            rec["cluster_up_seconds"] = round(statistics.median(self.cluster_up), 1)
        rec.update({"date": date, "commit": commit})
        timing[mode_key(self.est.quick)] = rec
        meta["timing"] = timing


def wall_record(meta, kind, seconds, make_seconds, date, commit, run, quick, repeat,
                default_repeat=3):
    """Stores the wall time of a whole tools/demo call in @p meta
    ["wall_time"]; a --quick call or another --repeat is stored under
    "<kind>-quick" / "<kind>-repeat<N>", so "demo" stays the full make
    demo.  Returns the key written."""
    key = kind
    if quick:
        key += "-quick"
    elif repeat != default_repeat:
        key += "-repeat%d" % repeat
    wall = meta.get("wall_time") if isinstance(meta.get("wall_time"), dict) else {}
    wall[key] = {"seconds": round(seconds, 1), "minutes": round(seconds / 60.0, 1),
                 "make_seconds": None if make_seconds is None else round(make_seconds, 1),
                 "date": date, "commit": commit, "run": run, "quick": quick, "repeat": repeat}
    meta["wall_time"] = wall
    return key
