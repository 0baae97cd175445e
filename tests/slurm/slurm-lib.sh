# SPDX-License-Identifier: BSD-3-Clause
# slurm-lib.sh - Slurm on the emulated cluster, for tests (sourced by bash).
#
#   slurm_start DIR PREFIX   munged + slurmctld (node 0) + one slurmd per
#                            node of the 2-node cluster PREFIX (up already),
#                            config and state under DIR; exports SLURM_CONF;
#                            waits until both nodes are idle (0) or fails (1)
#   slurm_stop               stops what slurm_start started, by PID
#   innode NODE CMD...       CMD in NODE's network namespace with its host name
#
# Nothing in /etc is read or changed: a private munged (its socket is
# reachable from every network namespace, one serves all nodes; the host's
# /etc/munge/munge.key), a private slurm.conf.  slurmd runs as root and
# starts tasks as the submitting user.  Debian 12 (Slurm 22.05) notes:
# slurmd needs /sys/fs/cgroup, so the nodes are entered with nsenter, not
# 'ip netns exec' (which remounts /sys); the emulated nodes share one /tmp,
# so PMIx's per-step directories go under TmpFS=DIR/tmp-%n.
SLURM_PIDS=()

innode() { # node cmd...
	local n=$1; shift
	nsenter --net="/run/netns/$n" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$n" "$@"
}

slurm_start() { # dir prefix
	local D=$1 P=$2 n st cpus
	local N0=$P-n0 N1=$P-n1
	mkdir -p "$D/munge" && chmod 755 "$D" "$D/munge"
	setsid munged --force --foreground --socket="$D/munge/munge.sock" \
		--key-file=/etc/munge/munge.key --pid-file="$D/munge/munged.pid" \
		--log-file="$D/munge/munged.log" --seed-file="$D/munge/seed" >/dev/null 2>&1 &
	SLURM_PIDS+=($!)
	for _ in $(seq 50); do [ -S "$D/munge/munge.sock" ] && break; sleep 0.1; done
	[ -S "$D/munge/munge.sock" ] || { cat "$D/munge/munged.log"; echo "munged did not start"; return 1; }
	cpus=$(nproc)
	cat >"$D/slurm.conf" <<EOF2
ClusterName=$P
SlurmctldHost=$N0(10.77.0.1)
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/ctld
SlurmdSpoolDir=$D/spool-%n
TmpFS=$D/tmp-%n
SlurmctldPidFile=$D/ctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/ctld.log
SlurmdLogFile=$D/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$N0 NodeAddr=10.77.0.1 CPUs=$cpus State=UNKNOWN
NodeName=$N1 NodeAddr=10.77.0.2 CPUs=$cpus State=UNKNOWN
PartitionName=em Nodes=ALL Default=YES MaxTime=10 State=UP
EOF2
	printf 'CgroupPlugin=autodetect\n' >"$D/cgroup.conf"
	mkdir -p "$D/ctld" "$D/spool-$N0" "$D/spool-$N1" "$D/tmp-$N0" "$D/tmp-$N1"
	chmod 1777 "$D/tmp-$N0" "$D/tmp-$N1"
	export SLURM_CONF=$D/slurm.conf
	innode "$N0" setsid slurmctld -D -f "$SLURM_CONF" >"$D/ctld.out" 2>&1 &
	SLURM_PIDS+=($!)
	for n in "$N0" "$N1"; do
		innode "$n" setsid slurmd -D -N "$n" -f "$SLURM_CONF" >"$D/slurmd-$n.out" 2>&1 &
		SLURM_PIDS+=($!)
	done
	for _ in $(seq 150); do
		st=$(innode "$N0" sinfo -h -o '%T' -N 2>/dev/null | sort -u | tr '\n' ' ')
		[ "$st" = "idle " ] && return 0
		sleep 0.2
	done
	echo "Slurm did not come up (sinfo: ${st:-none})"
	tail -5 "$D"/ctld.log "$D"/slurmd-*.log "$D"/*.out 2>/dev/null
	return 1
}

slurm_stop() {
	local p
	for p in "${SLURM_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${SLURM_PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	SLURM_PIDS=()
}
