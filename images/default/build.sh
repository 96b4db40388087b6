#!/bin/bash
# build.sh OUT.tar.zst [EXTRA] — build the `default` image (Debian 12, python3, node,
# TypeScript, git, curl) unless OUT was already built from these very recipe files. See
# docs/default-image.md. EXTRA is a recipe directory that adds to this one (its
# `packages`, its `customize.sh`), as images/code-interpreter does: the image is then
# named after it. Progress on a terminal, one summary line otherwise; the build's temp
# tree, processes and mounts are gone when it exits, however it exits.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 OUT.tar.zst [EXTRA-RECIPE-DIR]" >&2
	exit 2
fi
here=$(cd "$(dirname -- "$0")" && pwd)
extra=""
name=default
if [ $# -eq 2 ]; then
	extra=$(cd "$2" && pwd)
	name=$(basename -- "$extra")
fi
mkdir -p -- "$(dirname -- "$1")"
outdir=$(cd "$(dirname -- "$1")" && pwd)
out=$outdir/$(basename -- "$1")
stem=$(basename -- "$out" .tar.zst)
stamp=$outdir/$stem.recipe-sha256
log=$outdir/$stem.build.log
tty=false
cols=80
if [ -t 1 ]; then
	tty=true
	cols=$(tput cols 2>/dev/null || echo 80)
fi

# The cache key: every file of the recipe (and of EXTRA's), by name and content.
recipe_files() {
	(
		cd "$1"
		find . -type f ! -name '*~' ! -name '.*.sw?' -print0 | LC_ALL=C sort -z |
			while IFS= read -r -d '' f; do
				printf '%s\0%s\0' "$f" "$(stat -c %s -- "$f")"
				cat -- "$f"
			done
	)
}
recipe_hash() {
	{
		recipe_files "$here"
		if [ -n "$extra" ]; then
			printf 'extra\0%s\0' "$name"
			recipe_files "$extra"
		fi
	} | sha256sum | cut -c1-64
}
hash=$(recipe_hash)
current() { [ -s "$out" ] && [ "$(cat -- "$stamp" 2>/dev/null)" = "$hash" ]; }
if current; then
	$tty && echo "$name image: $out is up to date (recipe ${hash:0:12})"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "$name image: building needs root (mmdebstrap --mode=root); run as root" >&2
	exit 1
fi

# One build per output at a time: a second one waits, then finds the first one's result.
exec 9>"$outdir/.$stem.lock"
if ! flock -n 9; then
	echo "$name image: another build of $out is running; waiting for it" >&2
	flock 9
fi
if current; then
	exit 0
fi

pid=""
work=""
# Deletes a build tree without ever crossing into a mount: anything still mounted
# under it in this namespace (nothing, normally) is detached first.
remove_tree() {
	local m mounts
	mounts=$(findmnt -rn -o TARGET | grep -F -- "$1/" | sort -r || true)
	for m in $mounts; do
		umount -l -- "$m" || true
	done
	rm -rf --one-file-system -- "$1"
}
# The members of session $1 (the inner build and everything it started).
session_pids() {
	local f st p sid=$1
	for f in /proc/[0-9]*/stat; do
		read -r st 2>/dev/null <"$f" || continue
		# After the command name: state ppid pgrp session ...
		# shellcheck disable=SC2086 # split into fields on purpose
		set -- ${st##*) }
		if [ "${4:-}" = "$sid" ]; then
			p=${f#/proc/}
			echo "${p%/stat}"
		fi
	done
}
stop_session() {
	local p
	[ -n "$pid" ] || return 0
	kill -TERM -- "-$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		[ -z "$(session_pids "$pid")" ] && break
		sleep 0.2
	done
	for p in $(session_pids "$pid"); do
		kill -KILL "$p" 2>/dev/null || true
	done
	wait "$pid" 2>/dev/null || true
	pid=""
}
cleanup() {
	trap '' INT TERM HUP
	stop_session
	if [ -n "$work" ]; then
		[ -f "$work/log" ] && cp -f -- "$work/log" "$log" 2>/dev/null
		remove_tree "$work"
		work=""
	fi
}
trap cleanup EXIT
trap '$tty && echo; echo "$name image: interrupted; cleaning up" >&2; cleanup; exit 130' INT TERM HUP

# Trees left by a build that was killed outright (the lock is free, so none is running).
for old in "$outdir/.$stem-build."*; do
	[ -d "$old" ] && remove_tree "$old"
done

if ! command -v mmdebstrap >/dev/null; then
	echo "$name image: installing mmdebstrap" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends mmdebstrap >&2 ||
		{ apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends mmdebstrap >&2; }
fi

work=$(mktemp -d "$outdir/.$stem-build.XXXXXX")
start=$(date +%s)
# Its own session: a Ctrl-C on the terminal reaches only this script, which stops the
# whole build (mmdebstrap, apt, dpkg, maintainer scripts) by session and cleans up. It
# inherits the lock, so if this script is killed outright, the next build waits for
# the orphan to end before it deletes the orphan's tree.
setsid bash "$here/rootfs.sh" "$work" "$work/out.tar.zst" ${extra:+"$extra"} </dev/null >"$work/log" 2>&1 &
pid=$!

# Bytes the build has written: its live processes' write_bytes, which include those
# of the children they have reaped.
written=0
session_written() {
	local p k v sum=0
	for p in $(session_pids "$pid"); do
		while read -r k v; do
			[ "$k" = write_bytes: ] && sum=$((sum + v))
		done 2>/dev/null <"/proc/$p/io" || true
	done
	[ "$sum" -gt "$written" ] && written=$sum
	return 0
}
mib() { echo "$(($1 / 1048576)) MiB"; }
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

while kill -0 "$pid" 2>/dev/null; do
	if $tty; then
		IFS=$'\037' read -r phase act n total < <(awk -f "$here/progress.awk" "$work/log")
		session_written
		pk=""
		[ "${total:-0}" -gt 0 ] && pk="  $act $n/$total"
		printf -v line '[%s] %-.28s%s  %s written' "$(mmss $(($(date +%s) - start)))" \
			"${phase:-starting}" "$pk" "$(mib "$written")"
		# One line, never wrapped, so the carriage return redraws it in place.
		printf '\r\033[K%s' "${line:0:cols-1}"
	fi
	sleep 0.5
done
rc=0
wait "$pid" || rc=$?
pid=""
$tty && printf '\r\033[K'
elapsed=$(($(date +%s) - start))
if [ "$rc" -ne 0 ]; then
	echo "$name image: build failed after $(mmss "$elapsed") (exit $rc); the end of its log" \
		"($log):" >&2
	tail -n 25 "$work/log" >&2
	exit 1
fi

mv -f -- "$work/out.tar.zst" "$out"
printf '%s\n' "$hash" >"$stamp.tmp"
mv -f -- "$stamp.tmp" "$stamp"
unpacked=$(sed -n 's/^I: unpacked size: \([0-9]*\) bytes$/\1/p' "$work/log")
npkg=$(awk -f "$here/progress.awk" "$work/log" | cut -d$'\037' -f4)
echo "$name image: built $out in $(mmss "$elapsed"): $(mib "$(stat -c %s "$out")")," \
	"$(mib "${unpacked:-0}") unpacked, $npkg packages"
