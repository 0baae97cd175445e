#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/cluster/test_routed.sh - the routed topology of tools/emcluster
# (up --routed) really is routed and IPv4-only: on 3 nodes (n0 and n2 on
# 10.77.0.0/24, n1 on 10.77.1.0/24, router <P>-rt between them)
#  - kernel UDP crosses the router, and the nodes learn the gateway by ARP;
#  - a hand-built Ethernet+IPv4+UDP frame (as link_dpdk's udp framing
#    builds it) sent raw to the gateway's MAC reaches n1's UDP socket;
#  - a raw 0x88B5 frame (ethermpi's L2 framing) reaches neither n1 (other
#    subnet, via the gateway's MAC) nor n2 (same subnet, to n2's own MAC);
#  - as a control, the same 0x88B5 frame does arrive once the router
#    port's filter is taken off (so the receiver can see it at all).
# Prefix: $EMC_PREFIX (default emrt1).  Exit 0 pass, 1 fail, 77 skip.
# Takes about 15 s.
set -uo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
EMC=$ROOT/tools/emcluster
RAW=$HERE/rawframe.py
export EMC_PREFIX=${EMC_PREFIX:-emrt1}
FAILS=0
CHECKS=0
PORT=29717

pass() { CHECKS=$((CHECKS + 1)); echo "  ok    $*"; }
fail() { CHECKS=$((CHECKS + 1)); FAILS=$((FAILS + 1)); echo "  FAIL  $*"; }

[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root"; exit 77; }
for tool in timeout python3 tc clang-14; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: missing $tool"; exit 77; }
done

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	timeout -k 5 30 "$EMC" down >/dev/null 2>&1 || true
	exit "$rc"
}
trap cleanup EXIT INT TERM

ex() { # node cmd... (bounded)
	local n=$1
	shift
	timeout -k 2 15 "$EMC" exec "$n" "$@"
}

# receiver on node $1 (a rawframe.py recv-* command), sender on node $2;
# prints what the receiver counted
exchange() { # rx-node "rx args" tx-node "tx args"
	local out
	out=$(mktemp)
	# shellcheck disable=SC2086 # argument lists
	ex "$1" python3 "$RAW" $2 >"$out" 2>&1 &
	local rx=$!
	sleep 0.5
	# shellcheck disable=SC2086
	ex "$3" python3 "$RAW" $4 >/dev/null 2>&1 || echo "sender failed" >>"$out"
	wait "$rx"
	tr -d '\n' <"$out"
	rm -f "$out"
}

echo "== routed topology ($EMC_PREFIX)"
if ! timeout -k 5 60 "$EMC" up --routed -n 3 >/dev/null 2>&1; then
	echo "FAIL: emcluster up --routed -n 3"
	exit 1
fi
eval "$("$EMC" env)"
GW0=$EMC_GW_MAC_0
A1=$EMC_ADDR_1_0
A0=$EMC_ADDR_0_0
M2=$EMC_MAC_2_0

# kernel UDP: the kernel resolves the gateway by ARP
out=$(ex 0 python3 -c "
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('$A1', 9))" 2>&1) ||
	fail "kernel UDP send from n0: $out"
if ex 0 ip neigh show dev eth0 | grep -q "10.77.0.254 .*lladdr $GW0"; then
	pass "n0 learned the gateway 10.77.0.254 = $GW0 by ARP"
else
	fail "n0 has no neighbour entry for its gateway: $(ex 0 ip neigh show dev eth0 | tr '\n' ';')"
fi

n=$(exchange 1 "recv-udp $PORT 3" 0 "$(printf 'send-ipudp eth0 %s %s %s %s 5' "$GW0" "$A0" "$A1" "$PORT")")
[[ $n == 5 ]] && pass "hand-built IPv4/UDP frame routed n0 -> n1 ($n of 5)" ||
	fail "hand-built IPv4/UDP frame routed n0 -> n1: '$n' of 5 arrived"

n=$(exchange 1 "recv-raw eth0 0x88B5 2" 0 "send-raw eth0 $GW0 0x88B5 5")
[[ $n == 0 ]] && pass "raw 0x88B5 frame n0 -> gateway MAC: not routed to n1" ||
	fail "raw 0x88B5 frame n0 -> gateway: '$n' arrived at n1 (expected 0)"

n=$(exchange 2 "recv-raw eth0 0x88B5 2" 0 "send-raw eth0 $M2 0x88B5 5")
[[ $n == 0 ]] && pass "raw 0x88B5 frame n0 -> n2 on the same subnet: dropped by the router's port" ||
	fail "raw 0x88B5 frame n0 -> n2 (same subnet): '$n' arrived (expected 0)"

# control: without the filter on n0's router port the bridge delivers it
timeout 10 tc -n "$EMC_ROUTER" qdisc del dev n0 clsact
n=$(exchange 2 "recv-raw eth0 0x88B5 2" 0 "send-raw eth0 $M2 0x88B5 5")
[[ $n == 5 ]] && pass "control: without the filter the same frame reaches n2 ($n of 5)" ||
	fail "control: without the filter, '$n' of 5 raw frames reached n2 (the receiver cannot see them?)"

# a name lookup in a node fails at once: the default route would carry it
# to a DNS server the router cannot reach (3 x 5 s of resolver timeouts
# before every mpirun), so emcluster gives the nodes no DNS (no_dns)
t0=$SECONDS
ex 0 getent hosts ethermpi-no-such-host.invalid >/dev/null 2>&1
if ((SECONDS - t0 <= 2)); then
	pass "a name lookup in n0 fails at once ($((SECONDS - t0)) s): no DNS through the router"
else
	fail "a name lookup in n0 took $((SECONDS - t0)) s (resolver timeouts: no_dns missing?)"
fi

echo "$((CHECKS - FAILS)) passed, $FAILS failed"
((FAILS == 0))
