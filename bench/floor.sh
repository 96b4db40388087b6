#!/bin/bash
# floor.sh — what the kernel alone charges the host for one idle isolated process, with no
# sandlot in it: the floor under the idle-memory row of `make bench` (docs/bench.md,
# "Session 25"). Not run by `make bench`; run it as root on a quiet host:
#
#   bash bench/floor.sh [N] [MODE]        N processes (default 1000), MODE:
#     net      each in a network namespace of its own (`unshare -n sleep`)
#     all      each in new net, ipc, uts, pid, mount and cgroup namespaces with its own
#              /proc (`unshare --fork`: two processes each)
#     all+cg   as all, and each in cgroups of its own in the five v1 hierarchies sandlot
#              uses (cpu with a CPU quota, cpuacct, memory, pids, freezer)
#     one+cg   as all+cg with one process each, as a sandbox has (its init): the outer
#              unshare, which only waits, is killed once its child (the namespaces' pid
#              1, the sleep) runs, and the sleep lives on by itself
#     memcg    no process: N empty v1 memory cgroups. Their slab is mostly the shrinker
#              map each gets, one kmalloc-1k unit per 64 shrinker ids the host has had at
#              once since boot (docs/bench.md): what host history adds to every sandbox
#
# Prints, per process, the drop of MemAvailable and the growth of Slab, PageTables,
# KernelStack and Percpu once the host settles. Everything it starts it kills by pid;
# every cgroup it makes it removes (cgroup v1 only, as on the reference host).
set -euo pipefail
N=${1:-1000}
MODE=${2:-all+cg}
case $MODE in net | all | all+cg | one+cg | memcg) ;; *)
	echo "floor.sh: MODE is net, all, all+cg, one+cg or memcg" >&2
	exit 2
	;;
esac
CTRLS="cpu cpuacct memory pids freezer"
[ "$MODE" != memcg ] || CTRLS=memory
CG=sandlot-floor-$$
PIDS=()
made=0

cleanup() {
	local p c i
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ "$made" = 1 ] || return 0
	sleep 1 # the namespaces' last processes leave their cgroups
	for c in $CTRLS; do
		for ((i = 0; i < N; i++)); do rmdir "/sys/fs/cgroup/$c/$CG/$i" 2>/dev/null || true; done
		rmdir "/sys/fs/cgroup/$c/$CG" 2>/dev/null || true
	done
}
trap cleanup EXIT

mem() {
	awk '/^MemAvailable:/ { a = $2 } /^Slab:/ { s = $2 } /^PageTables:/ { p = $2 }
	     /^KernelStack:/ { k = $2 } /^Percpu:/ { c = $2 } END { print a, s, p, k, c }' /proc/meminfo
}

# shellcheck source=bench/settle.sh
. "$(dirname "$0")/settle.sh"

if [ "$MODE" != net ] && [ "$MODE" != all ]; then
	[ -d /sys/fs/cgroup/memory ] || {
		echo "floor.sh: $MODE needs the v1 hierarchies ($CTRLS)" >&2
		exit 2
	}
	for c in $CTRLS; do mkdir "/sys/fs/cgroup/$c/$CG"; done
	made=1
fi
settle 120
read -r a0 s0 p0 k0 c0 < <(mem)
for ((i = 0; i < N; i++)); do
	case $MODE in
	memcg)
		mkdir "/sys/fs/cgroup/memory/$CG/$i"
		continue
		;;
	net) unshare -n sleep 100000 & ;;
	all) unshare -n -i -u -p -m -C --mount-proc --kill-child sleep 100000 & ;;
	all+cg | one+cg)
		for c in $CTRLS; do mkdir "/sys/fs/cgroup/$c/$CG/$i"; done
		echo 100000 >"/sys/fs/cgroup/cpu/$CG/$i/cpu.cfs_quota_us"
		# The shell joins the cgroups, then becomes unshare (exec): same pid. one+cg:
		# --fork without --kill-child (which implies --fork), so the sleep outlives
		# the unshare killed below.
		kc=--kill-child
		[ "$MODE" = all+cg ] || kc=--fork
		sh -c 'for c in $1; do echo $$ > /sys/fs/cgroup/$c/$2/cgroup.procs; done
		       exec unshare -n -i -u -p -m -C --mount-proc $3 sleep 100000' \
			sh "$CTRLS" "$CG/$i" "$kc" &
		;;
	esac
	PIDS+=($!)
	if [ "$MODE" = one+cg ]; then
		# The sleep (the unshare's one child, once it has exec'd: its comm says so)
		# takes the unshare's place in PIDS; the unshare is killed (both by pid).
		p=$!
		for ((t = 0; t < 500; t++)); do
			# (by /proc's PPid lines: not every kernel has /proc/PID/task/TID/children)
			child=$(grep -ls "^PPid:[[:space:]]*$p\$" /proc/[0-9]*/status 2>/dev/null |
				cut -d/ -f3 | head -1) || child=
			[ -n "$child" ] && [ "$(cat "/proc/$child/comm" 2>/dev/null)" = sleep ] && break
			child=
			sleep 0.01
		done
		[ -n "$child" ] || {
			echo "floor.sh: the sleep of $p did not start" >&2
			exit 1
		}
		PIDS[-1]=$child
		kill -KILL "$p"
		wait "$p" 2>/dev/null || true
	fi
done
sleep 3
settle 120
read -r a1 s1 p1 k1 c1 < <(mem)
awk -v n="$N" -v m="$MODE" -v a0="$a0" -v a1="$a1" -v s0="$s0" -v s1="$s1" -v p0="$p0" \
	-v p1="$p1" -v k0="$k0" -v k1="$k1" -v c0="$c0" -v c1="$c1" 'BEGIN {
	printf "%s N=%d: MemAvailable drop %.1f KiB each; slab %.1f, page tables %.1f, kernel stack %.1f, percpu %.1f\n",
		m, n, (a0 - a1) / n, (s1 - s0) / n, (p1 - p0) / n, (k1 - k0) / n, (c1 - c0) / n }'
