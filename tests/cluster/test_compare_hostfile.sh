#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_compare_hostfile.sh - tools/compare.py --hostfile across "real" hosts:
# the two emulated nodes named in a hostfile, mpirun started from a third
# host name in node 0's network (a login node), the ranks started through
# tools/rsh-agent as on a cluster through ssh.  Checks that the tcp and
# rudp latency rows are measured (status ok, sizes with values) and carry
# cluster=hostfile and the hosts, that the emulated cluster's row of the
# same name already in compare.json is kept, and that a transport needing
# the emulated wiring (dpdk-memif) is a skipped row with the reason.
# Needs root; exit 77 when skipped, 0 ok, 1 failed.
set -uo pipefail
HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
EMC=$ROOT/tools/emcluster
BUILD=${BUILD:-$ROOT/build}
P=${EMC_PREFIX_TEST:-emcmp}
[ "$(id -u)" = 0 ] || { echo "skipped: needs root"; exit 77; }
command -v mpirun >/dev/null || { echo "skipped: mpirun missing"; exit 77; }
[ -x "$BUILD/bench/mpi/em_latency" ] && [ -f "$BUILD/ompi/btl/rudp/mca_btl_rudp.so" ] ||
	{ echo "skipped: $BUILD has no em_latency or rudp component"; exit 77; }
export EMC_PREFIX=$P
D=$(mktemp -d /tmp/$P-cmp.XXXXXX)
cleanup() { "$EMC" down >/dev/null 2>&1; rm -rf "$D"; }
trap cleanup EXIT
"$EMC" down >/dev/null 2>&1
"$EMC" up >"$D/up.log" 2>&1 || { cat "$D/up.log"; echo "not ok - emcluster up"; exit 1; }
printf '# the emulated nodes as real hosts\n%s-n0 slots=1\n%s-n1 slots=1\n' "$P" "$P" >"$D/hosts"
mkdir -p "$D/out"
# an emulated-cluster row of the same combination: must survive
cat >"$D/out/compare.json" <<'J'
[{"transport": "tcp", "benchmark": "latency", "pattern": null, "size_bytes": 8, "median": 1.5,
  "unit": "us", "status": "ok", "commit": "0000000", "date": "2026-01-01T00:00:00+00:00"}]
J
ip netns exec "$P-n0" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$P-login" \
	/usr/bin/python3 "$ROOT/tools/compare.py" --build "$BUILD" --hostfile "$D/hosts" \
	--mpirun-args "--mca plm_rsh_agent $ROOT/tools/rsh-agent --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24" \
	--only-transports tcp,rudp,dpdk-memif --only-benchmarks latency --no-mtu-rows --quick --repeat 1 \
	--out "$D/out" --logs "$D/logs" >"$D/run.out" 2>&1
rc=$?
/usr/bin/python3 - "$D/out/compare.json" "$P" "$rc" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
p, rc = sys.argv[2], int(sys.argv[3])
fail = 0
def check(ok, what):
    global fail
    print(("ok - " if ok else "not ok - ") + what)
    fail |= not ok
check(rc == 0, "compare.py --hostfile exit 0 (got %d)" % rc)
for t in ("tcp", "rudp"):
    mine = [r for r in rows if r["transport"] == t and r["benchmark"] == "latency"
            and r.get("cluster") == "hostfile" and r.get("status") != "skipped"]
    good = [r for r in mine if r.get("status") == "ok" and r.get("median", 0) > 0
            and r.get("hosts") == "%s-n0,%s-n1" % (p, p)]
    check(len(good) >= 3 and len(good) == len(mine),
          "%s latency measured across the hostfile's hosts (%d sizes)" % (t, len(good)))
kept = [r for r in rows if r["transport"] == "tcp" and r.get("cluster") is None
        and r.get("commit") == "0000000"]
check(len(kept) == 1, "the emulated cluster's tcp latency row is kept")
memif = [r for r in rows if r["transport"] == "dpdk-memif" and r.get("cluster") == "hostfile"
         and r["benchmark"] == "latency" and not r.get("rdv") and not r.get("framing")]
check(memif and all(r.get("status") == "skipped" and "emulated cluster" in r.get("reason", "")
                    for r in memif), "dpdk-memif: skipped, the reason named")
sys.exit(fail)
PY
res=$?
[ $res = 0 ] || tail -30 "$D/run.out"
exit $res
