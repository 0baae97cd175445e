#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/cluster/test_emcluster.sh - checks tools/emcluster for real: builds
# emulated clusters (prefix emt1, plus emt1b for the isolation check), pings,
# launches MPI jobs across namespaces (tcp BTL and libfabric udp;ofi_rxd),
# injects loss with tc-bpf and XDP, tears everything down.
#
# Exit status: 0 pass, 1 fail, 77 skip (not root, no 'ip netns', or a tool
# missing).  Every command that could hang runs under 'timeout'; the whole
# run takes well under a minute on 2 cores.  Cleans up on any exit.
# shellcheck disable=SC2015 # 'test && pass || fail': pass never fails
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
EMC=$ROOT/tools/emcluster
export EMC_PREFIX=emt1
OTHER=emt1b # a second cluster that must survive everything done to emt1
TMP=""
FAILS=0
CHECKS=0

# ------------------------------------------------------------ framework --

skip() {
	echo "SKIP: $*"
	exit 77
}

pass() {
	CHECKS=$((CHECKS + 1))
	echo "  ok    $*"
}

fail() {
	CHECKS=$((CHECKS + 1))
	FAILS=$((FAILS + 1))
	echo "  FAIL  $*"
}

section() {
	echo "== $*"
}

# run a command with a time limit, output to $TMP/out (shown on failure)
t() { # seconds cmd...
	local s=$1
	shift
	timeout -k 5 "$s" "$@" >"$TMP/out" 2>&1
}

show_out() {
	sed 's/^/        | /' "$TMP/out" | tail -n 25
}

# check "description" seconds cmd...: the command must succeed
check() {
	local what=$1
	shift
	if t "$@"; then
		pass "$what"
	else
		fail "$what (exit $?)"
		show_out
	fi
}

# the output of the last t/check must contain a fixed string
out_has() { # description string
	if grep -qF -- "$2" "$TMP/out"; then
		pass "$1"
	else
		fail "$1 (no '$2' in output)"
		show_out
	fi
}

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	EMC_PREFIX=emt1 timeout -k 5 30 "$EMC" down >/dev/null 2>&1 || true
	EMC_PREFIX=$OTHER timeout -k 5 30 "$EMC" down >/dev/null 2>&1 || true
	[[ -n $TMP ]] && rm -rf -- "$TMP"
	exit "$rc"
}

# percentage of lost echo requests/replies: ping -c COUNT -i 0.002 from node A
ping_loss() { # from-node address count
	timeout -k 5 30 "$EMC" exec "$1" ping -q -n -c "$3" -i 0.002 -W 1 "$2" 2>&1 |
		awk '/packet loss/ {for (i = 1; i <= NF; i++) if ($i ~ /%$/) {sub(/%/, "", $i); print $i}}' ||
		true # ping exits 1 when replies are missing
}

check_loss_between() { # description lo hi from-node address
	local what=$1 lo=$2 hi=$3 loss
	loss=$(ping_loss "$4" "$5" 200)
	if [[ -n $loss ]] && awk -v l="$loss" -v a="$lo" -v b="$hi" 'BEGIN {exit !(l >= a && l <= b)}'; then
		pass "$what: $loss % lost (expected $lo..$hi)"
	else
		fail "$what: '${loss:-no ping result}' % lost (expected $lo..$hi)"
	fi
}

rx_bytes() { # node ifname
	timeout 10 "$EMC" exec "$1" cat "/sys/class/net/$2/statistics/rx_bytes"
}

# -------------------------------------------------------------- preflight --

[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces)"
ip netns list >/dev/null 2>&1 || skip "'ip netns' does not work here"
missing=""
for tool in timeout unshare tc ping mpirun mpicc clang-14 fi_info awk; do
	command -v "$tool" >/dev/null 2>&1 || missing+=" $tool"
done
[[ -z $missing ]] || skip "missing tools:$missing (iputils-ping, openmpi-bin, libopenmpi-dev, clang-14, libfabric-bin)"
[[ -x $EMC && -x $ROOT/tools/rsh-agent ]] || { echo "FAIL: $EMC or rsh-agent not executable"; exit 1; }

TMP=$(mktemp -d /tmp/emt1.XXXXXX)
trap cleanup EXIT
trap 'exit 1' INT TERM
export OMPI_MCA_btl_base_warn_component_unused=0

# --------------------------------------------------------------- 2 nodes --

section "two nodes, one direct link (prefix emt1)"
t 30 "$EMC" down || true
check "a second cluster '$OTHER' can coexist" 30 env EMC_PREFIX=$OTHER "$EMC" up -n 2
check "up (default: 2 nodes, 1 link, MTU 9000)" 30 "$EMC" up
check "nodes" 10 "$EMC" nodes
if [[ $(cat "$TMP/out") == $'emt1-n0\nemt1-n1' ]]; then pass "nodes prints emt1-n0, emt1-n1"; else fail "nodes output: $(tr '\n' ' ' <"$TMP/out")"; fi
check "env" 10 "$EMC" env
out_has "env has EMC_ADDR_1_0" "EMC_ADDR_1_0=10.77.0.2"
out_has "env has EMC_SUBNET_0" "EMC_SUBNET_0=10.77.0.0/24"
out_has "env has EMC_RUNDIR" "EMC_RUNDIR=/run/ethermpi/emt1"
check "status" 10 "$EMC" status
out_has "status shows node 1's address" "10.77.0.2/24"
[[ -d /run/ethermpi/emt1/memif ]] && pass "run dir with memif/ exists" || fail "no /run/ethermpi/emt1/memif"
for n in 0 1; do
	check "lo is up in emt1-n$n" 10 ip -n "emt1-n$n" -o link show dev lo
	out_has "lo state in emt1-n$n" "LOWER_UP"
	check "eth0 MTU in emt1-n$n" 10 ip -n "emt1-n$n" -o link show dev eth0
	out_has "eth0 of emt1-n$n has MTU 9000" "mtu 9000"
	check "routes of emt1-n$n" 10 ip -n "emt1-n$n" route show
	if grep -qE '^default|10\.77\.[0-9]+\.0/24 via' "$TMP/out"; then fail "emt1-n$n has a route out: $(cat "$TMP/out")"; else pass "emt1-n$n has only its link routes (no default route)"; fi
done
check "ping emt1-n0 -> emt1-n1 over link 0" 20 "$EMC" exec 0 ping -c 3 -i 0.2 -W 2 10.77.0.2
check "ping emt1-n1 -> emt1-n0 over link 0" 20 "$EMC" exec emt1-n1 ping -c 3 -i 0.2 -W 2 10.77.0.1
check "exec 0 hostname" 10 "$EMC" exec 0 hostname
[[ $(cat "$TMP/out") == emt1-n0 ]] && pass "hostname in node 0 is emt1-n0" || fail "hostname in node 0: $(cat "$TMP/out")"
check "exec emt1-n1 hostname" 10 "$EMC" exec emt1-n1 hostname
[[ $(cat "$TMP/out") == emt1-n1 ]] && pass "hostname in node 1 is emt1-n1" || fail "hostname in node 1: $(cat "$TMP/out")"
if t 10 "$EMC" exec 7 true; then fail "exec on a node that does not exist succeeded"; else pass "exec on a missing node fails"; fi
check "host hostname unchanged" 5 hostname
[[ $(cat "$TMP/out") != emt1-n* ]] && pass "the host's own hostname was not changed" || fail "host hostname is now $(cat "$TMP/out")"

section "mpirun across the namespaces"
check "mpirun -np 2 --map-by node hostname" 60 "$EMC" mpirun -np 2 --map-by node hostname
out_has "rank on emt1-n0" "emt1-n0"
out_has "rank on emt1-n1" "emt1-n1"
mkdir -p "$TMP/work dir"
# shellcheck disable=SC2016 # expanded by the remote shell
check "cwd and user env reach the remote ranks" 60 \
	env -C "$TMP/work dir" EMT_MARK=m4rk-42 OMPI_MCA_emt_dummy=1 \
	"$EMC" mpirun -np 2 --map-by node sh -c 'echo "ENV $(hostname) $EMT_MARK $OMPI_MCA_emt_dummy [$PWD]"'
out_has "env+cwd on emt1-n1" "ENV emt1-n1 m4rk-42 1 [$TMP/work dir]"
out_has "env+cwd on emt1-n0" "ENV emt1-n0 m4rk-42 1 [$TMP/work dir]"

check "compile tests/cluster/mpi_xnode.c with mpicc" 120 mpicc -O2 -o "$TMP/mpi_xnode" "$HERE/mpi_xnode.c"
cd "$TMP"
rx0=$(rx_bytes 1 eth0)
check "MPI over the tcp BTL (pml ob1, btl tcp,self), 2 nodes" 90 \
	"$EMC" mpirun -np 2 --map-by node --mca pml ob1 --mca btl tcp,self ./mpi_xnode
out_has "mpi_xnode tcp result" "mpi_xnode: OK ranks=2 hosts=2"
rx1=$(rx_bytes 1 eth0)
if ((rx1 - rx0 > 3 * 1048576)); then pass "the MPI traffic crossed eth0 ($(((rx1 - rx0) / 1024)) KiB into emt1-n1)"; else fail "only $((rx1 - rx0)) bytes reached emt1-n1 eth0"; fi
check "MPI over tcp, 4 ranks (2 per node)" 90 "$EMC" mpirun -np 4 --mca pml ob1 --mca btl tcp,self,vader ./mpi_xnode
out_has "mpi_xnode tcp 4 ranks" "mpi_xnode: OK ranks=4 hosts=2"

section "libfabric udp;ofi_rxd (pml cm, mtl ofi) across the namespaces"
rx0=$(rx_bytes 1 eth0)
check "MPI over mtl ofi with provider udp;ofi_rxd" 90 \
	"$EMC" mpirun -np 2 --map-by node --mca pml cm --mca mtl ofi \
	--mca mtl_ofi_provider_include 'udp;ofi_rxd' ./mpi_xnode
out_has "mpi_xnode udp;ofi_rxd result" "mpi_xnode: OK ranks=2 hosts=2"
rx1=$(rx_bytes 1 eth0)
if ((rx1 - rx0 > 3 * 1048576)); then pass "the ofi_rxd traffic crossed eth0 ($(((rx1 - rx0) / 1024)) KiB into emt1-n1)"; else fail "only $((rx1 - rx0)) bytes reached emt1-n1 eth0"; fi

section "loss injection"
check "loss 0 20 (tc egress on emt1-n0 eth0)" 30 "$EMC" loss 0 20
check_loss_between "ping n0->n1 with 20 % egress loss on n0" 8 35 0 10.77.0.2
check "loss shows in status" 10 "$EMC" status
out_has "status reports the tc loss" "egress-loss(tc): 20% [attached]"
check "MPI over tcp still works with 20 % loss" 90 \
	"$EMC" mpirun -np 2 --map-by node --mca pml ob1 --mca btl tcp,self ./mpi_xnode
out_has "mpi_xnode tcp under loss" "mpi_xnode: OK ranks=2 hosts=2"
check "MPI over udp;ofi_rxd still works with 20 % loss" 90 \
	"$EMC" mpirun -np 2 --map-by node --mca pml cm --mca mtl ofi \
	--mca mtl_ofi_provider_include 'udp;ofi_rxd' ./mpi_xnode
out_has "mpi_xnode udp;ofi_rxd under loss" "mpi_xnode: OK ranks=2 hosts=2"
check "loss 0 off" 30 "$EMC" loss 0 off
check_loss_between "ping n0->n1 after 'loss 0 off'" 0 0 0 10.77.0.2
check "loss 0 20 --seed 7, then loss 0 0" 30 sh -c "'$EMC' loss 0 20 --seed 7 && '$EMC' loss 0 0"
check_loss_between "ping n0->n1 after 'loss 0 0'" 0 0 0 10.77.0.2
check "xdploss 1 20 (XDP ingress on emt1-n1 eth0)" 30 "$EMC" xdploss 1 20
check_loss_between "ping n0->n1 with 20 % XDP ingress loss on n1" 8 35 0 10.77.0.2
check "xdploss 1 off" 30 "$EMC" xdploss 1 off
check_loss_between "ping n0->n1 after 'xdploss 1 off'" 0 0 0 10.77.0.2
if t 10 "$EMC" loss 0 120; then fail "loss 120 % accepted"; else pass "loss 120 % refused"; fi

section "two links"
check "up --links 2 (replaces the running cluster)" 30 "$EMC" up --links 2
check "ping n0 -> n1 over link 0" 20 "$EMC" exec 0 ping -c 2 -i 0.2 -W 2 10.77.0.2
check "ping n0 -> n1 over link 1" 20 "$EMC" exec 0 ping -c 2 -i 0.2 -W 2 10.77.1.2
check "ping n1 -> n0 over link 1" 20 "$EMC" exec 1 ping -c 2 -i 0.2 -W 2 10.77.1.1
check "loss on link 1 only" 30 "$EMC" loss 0 20 --link 1
check_loss_between "link 0 is not affected by loss on link 1" 0 0 0 10.77.0.2
check_loss_between "link 1 drops about 20 %" 8 35 0 10.77.1.2

section "four nodes behind bridges"
check "up -n 4" 30 "$EMC" up -n 4
allok=1
for a in 0 1 2 3; do
	for b in 0 1 2 3; do
		((a == b)) && continue
		if ! t 10 "$EMC" exec "$a" ping -c 1 -W 2 "10.77.0.$((b + 1))"; then
			allok=0
			fail "ping emt1-n$a -> 10.77.0.$((b + 1))"
		fi
	done
done
((allok)) && pass "all 12 node pairs ping each other through br0"
check "mpirun -np 4 --map-by node hostname" 60 "$EMC" mpirun -np 4 --map-by node hostname
for n in 0 1 2 3; do out_has "a rank on emt1-n$n" "emt1-n$n"; done

section "crash recovery and down"
ip netns add emt1-n9 # a stray namespace as a crash would leave it
rm -f /run/ethermpi/emt1/state
check "up after a simulated crash" 30 "$EMC" up
if ip netns list | grep -qw emt1-n9; then fail "stray namespace emt1-n9 survived up"; else pass "up removed the stray namespace emt1-n9"; fi
# a process that ignores TERM, started inside node 1
(timeout 120 "$EMC" exec 1 sh -c 'trap "" TERM; sleep 100' >/dev/null 2>&1 &)
sleep 0.5
pids=$(ip netns pids emt1-n1 | tr '\n' ' ')
[[ -n $pids ]] && pass "a test process runs in emt1-n1 (pids $pids)" || fail "test process did not start"
check "down" 30 "$EMC" down
left=$(ip netns list | awk '{print $1}' | grep -E '^emt1-(n[0-9]+|sw)$' || true)
[[ -z $left ]] && pass "no emt1 namespace left" || fail "namespaces left: $left"
[[ ! -e /run/ethermpi/emt1 ]] && pass "run dir removed" || fail "/run/ethermpi/emt1 still exists"
alive=""
for p in $pids; do
	# a zombie has exited already; it only waits for its parent to reap it
	st=$(awk '{sub(/^.*\) /, ""); print $1}' "/proc/$p/stat" 2>/dev/null || true)
	[[ -n $st && $st != Z ]] && alive+=" $p($st)"
done
[[ -z $alive ]] && pass "processes of the cluster were killed" || fail "still alive:$alive"
check "down when nothing exists exits 0" 30 "$EMC" down
check "status when down" 10 "$EMC" status
out_has "status says down" "down"
if ip netns list | grep -qw "$OTHER-n0"; then pass "cluster $OTHER was left alone"; else fail "cluster $OTHER was damaged"; fi
check "$OTHER still pings" 20 env EMC_PREFIX=$OTHER "$EMC" exec 0 ping -c 1 -W 2 10.77.0.2
check "down $OTHER" 30 env EMC_PREFIX=$OTHER "$EMC" down

section "down removes only this cluster's DPDK files, and none in use"
# fake hugepage and EAL runtime dirs (EMC_HUGEPAGE_DIR, EMC_DPDK_RUN_DIR):
# 'down' of emt1 (a prefix of $OTHER's name) removes its nodes' and daemons'
# files and dead ranks' ones, nothing of $OTHER, of live processes, or in use
HP=$TMP/hugepages
RD=$TMP/dpdk
mkdir -p "$HP" "$RD"
dead_pid=999999999   # beyond pid_max: never alive
ours_f=(emt1-n0map_0 emt1-n1map_3 emd-emt1-n0map_0 "em${dead_pid}map_0")
theirs_f=(emd-emt1b-n0map_0 emt1b-n0map_0 emt1-n0xmap_0 emrelax1map_0 emt1-n1map_9)
ours_d=(emt1-n0 emd-emt1-n1 "em${dead_pid}" "emd${dead_pid}")
theirs_d=(emd-emt1b-n0 emt1b-n0 emt1-n0-other "em$$")
for f in "${ours_f[@]}" "${theirs_f[@]}"; do echo x >"$HP/$f"; done
for d in "${ours_d[@]}" "${theirs_d[@]}"; do mkdir -p "$RD/$d"; echo x >"$RD/$d/config"; done
# a live process still has one of our files open (emt1-n1map_9): kept
(exec 3<"$HP/emt1-n1map_9"; exec sleep 60) &
holder=$!
sleep 0.3
check "down with fake DPDK files" 30 env EMC_HUGEPAGE_DIR="$HP" EMC_DPDK_RUN_DIR="$RD" "$EMC" down
kept="" gone=""
for f in "${ours_f[@]}"; do [[ -e $HP/$f ]] && kept+=" $f"; done
for d in "${ours_d[@]}"; do [[ -e $RD/$d ]] && kept+=" $d"; done
[[ -z $kept ]] && pass "this cluster's (and dead ranks') DPDK files removed" || fail "left over:$kept"
for f in "${theirs_f[@]}"; do [[ -e $HP/$f ]] || gone+=" $f"; done
for d in "${theirs_d[@]}"; do [[ -e $RD/$d ]] || gone+=" $d"; done
[[ -z $gone ]] && pass "other prefixes', live processes' and in-use files kept" || fail "wrongly removed:$gone"
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null || true

section "one emcluster per prefix"
mkdir -p /run/ethermpi/locks
(exec 7>>/run/ethermpi/locks/emcluster-emt1.lock; flock 7; sleep 5) &
holder=$!
sleep 0.3
if EMC_LOCK_WAIT=1 timeout -k 5 20 "$EMC" down >"$TMP/out" 2>&1; then
	fail "down ran while another emcluster held the prefix lock"
else
	out_has "a second emcluster on the prefix waits, then says why" "another emcluster is changing cluster 'emt1'"
fi
check "another prefix is not blocked" 20 env EMC_PREFIX=emt1c EMC_LOCK_WAIT=1 "$EMC" down
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null || true
check "down once the lock is free" 20 env EMC_LOCK_WAIT=10 "$EMC" down

echo
if ((FAILS > 0)); then
	echo "FAILED: $FAILS of $CHECKS checks"
	exit 1
fi
echo "PASSED: all $CHECKS checks"
exit 0
