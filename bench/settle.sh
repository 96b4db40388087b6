# shellcheck shell=bash
# bench/settle.sh — sourced by bench/run.sh and bench/floor.sh.
#
# settle MAX: waits until MemAvailable moves less than 2 MiB in a second, two seconds in a
# row (at most MAX s); SETTLED is how long it waited. Memory freed just before (the
# removes of 1000 sandboxes, say) drains from the kernel's per-CPU free lists into
# MemFree for tens of seconds (docs/bench.md, session 27).
settle() { # MAX
	local max=$1 prev cur i quiet=0
	prev=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
	for ((i = 1; i <= max; i++)); do
		sleep 1
		cur=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
		if ((cur - prev < 2048 && prev - cur < 2048)); then
			quiet=$((quiet + 1))
			((quiet < 2)) || break
		else
			quiet=0
		fi
		prev=$cur
	done
	# shellcheck disable=SC2034 # read by the caller
	SETTLED=$((i > max ? max : i))
}
