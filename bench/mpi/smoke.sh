#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# smoke.sh BINDIR -- quick host-only check of the MPI benchmark programs:
# every program runs in quick mode over Open MPI's tcp BTL (no shared memory)
# (2 ranks; 3 for the 2:1 patterns) and must print a well-formed table,
# and the -C self-test (one received byte corrupted on purpose) must make
# every program exit non-zero.  Used by 'meson test --suite bench'.
set -u
bindir=${1:?usage: smoke.sh BINDIR}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi="mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,tcp"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

check() { # name np args...
	name=$1 np=$2
	shift 2
	if ! timeout 60 $mpi -np "$np" "$bindir/$name" "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL: $name -np $np $*: exit status $?"; sed 's/^/  /' "$tmp/err" | head -20
		fail=1
		return
	fi
	bench=$(printf '%s' "${name#em_}" | tr _ -) # em_mt_rate prints mt-rate
	if ! grep -q "^# em-bench $bench transport-neutral v1\$" "$tmp/out" ||
		! grep -q '^# size_bytes ' "$tmp/out" ||
		[ "$(grep -c '^[0-9]' "$tmp/out")" -lt 3 ]; then
		echo "FAIL: $name -np $np $*: malformed table"; sed 's/^/  /' "$tmp/out"
		fail=1
		return
	fi
	echo "ok: $name -np $np $* ($(grep -c '^[0-9]' "$tmp/out") sizes)"
}

must_fail() { # name np args...
	name=$1 np=$2
	shift 2
	if timeout 60 $mpi -np "$np" "$bindir/$name" "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL: $name -np $np $*: corrupted content was not detected"
		fail=1
	elif ! grep -q 'content mismatch' "$tmp/err"; then
		echo "FAIL: $name -np $np $*: failed, but not with a content mismatch"
		sed 's/^/  /' "$tmp/err" | head -20
		fail=1
	else
		echo "ok: $name -np $np $* fails as it must"
	fi
}

for b in em_latency em_bw em_bibw em_burst em_pingpong; do
	check "$b" 2 -q -m 0:64K
	must_fail "$b" 2 -q -m 1:16 -C
done
for t in 1 2; do
	check em_mt_rate 2 -q -T "$t"
done
must_fail em_mt_rate 2 -q -T 2 -m 8:64 -C
check em_burst 3 -q -m 0:1K
check em_pingpong 3 -q -m 0:1K
for b in em_allreduce em_alltoall; do
	check "$b" 4 -q -m 4:64K
	must_fail "$b" 3 -q -m 4:64 -C
done
one_table() { # label table rows name args...: exactly ROWS rows of TABLE
	label=$1 table=$2 rows=$3 name=$4
	shift 4
	if timeout 60 $mpi -np 2 "$bindir/$name" "$@" >"$tmp/out" 2>"$tmp/err" &&
		grep -q "^# em-bench $table transport-neutral v1\$" "$tmp/out" &&
		[ "$(grep -c '^[0-9]' "$tmp/out")" -eq "$rows" ]; then
		echo "ok: $label"
	else
		echo "FAIL: $label: exit status or table wrong"
		sed 's/^/  /' "$tmp/out" "$tmp/err" | head -20
		fail=1
	fi
}

# em_compute_burst (daemon mode): one size, table compute-burst, counters -1 over tcp
one_table "em_compute_burst -q" compute-burst 1 em_compute_burst -q -n 200
must_fail em_compute_burst 2 -q -n 50 -C
# em_halo (the boundary-exchange benchmark, [bds]): one table per pattern, named halo-<pattern>
for p in oneway twoway alternating; do
	one_table "em_halo -p $p -q" "halo-$p" 5 em_halo -p "$p" -q -n 200
	must_fail em_halo 2 -p "$p" -q -n 10 -s 64 -C
done
# em_osc (one-sided latency): put and get over sizes, fop and cas on one int64
# (table osc-<operation>; quick sizes 8 B - 4 KiB)
for op in put get; do
	one_table "em_osc -q $op" "osc-$op" 10 em_osc -q "$op"
	must_fail em_osc 2 -q -m 8:64 -C "$op"
done
for op in fop cas; do
	one_table "em_osc -q -m 8:8 $op" "osc-$op" 1 em_osc -q -m 8:8 "$op"
	must_fail em_osc 2 -q -m 8:8 -C "$op"
done
exit $fail
