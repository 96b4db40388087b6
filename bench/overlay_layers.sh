#!/bin/bash
# bench/overlay_layers.sh — the measurement behind docs/images.md, "Layers: merged at
# import": what a sandbox's root would cost as an overlayfs stack of an image's 10 layers
# (lowerdir=l10:...:l1) against one merged tree, for the mount and for path lookups that
# miss (each is tried in every layer). Root;
# runs in a private mount namespace under a temp dir it removes. Usage: overlay_layers.sh [N]
set -euo pipefail
N=${1:-200}
T=$(mktemp -d /var/tmp/sandlot-ovl-XXXXXX)
trap 'rm -rf "$T"' EXIT
REPO=$(cd "$(dirname "$0")/.." && pwd)
BB=${SANDLOT_BUILD:-$REPO/build}/images/busybox.tar
mkdir -p "$T/flat" "$T/up" "$T/work" "$T/mnt"
# Ten layers: busybox, then 20 files each in tree/; the flat tree holds them all.
for i in $(seq 1 10); do
	mkdir -p "$T/l$i/tree"
	if [ "$i" = 1 ]; then tar -C "$T/l1" -xf "$BB"; fi
	for f in $(seq $(((i - 1) * 20)) $((i * 20 - 1))); do echo "$f" >"$T/l$i/tree/f$f"; done
done
for i in $(seq 1 10); do cp -a "$T/l$i/." "$T/flat/"; done
stack=$(for i in $(seq 10 -1 1); do printf '%s:' "$T/l$i"; done)
stack=${stack%:}

unshare -m --propagation private bash -s "$T" "$N" "$stack" <<'EOF'
T=$1 N=$2 STACK=$3
ms() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.3f", (b - a) / 1e6 / n }'; }
cycle() { # LOWERDIR -> ms per mount (the umounts, which wait for RCU, not counted)
	local t0 t1 sum=0
	rm -rf "$T/up" "$T/work" && mkdir "$T/up" "$T/work"
	for _ in $(seq "$N"); do
		t0=$(date +%s%N)
		mount -t overlay overlay -o "lowerdir=$1,upperdir=$T/up,workdir=$T/work" "$T/mnt"
		t1=$(date +%s%N)
		sum=$((sum + t1 - t0))
		umount "$T/mnt"
	done
	ms 0 "$sum" "$N"
}
lookups() { # LOWERDIR -> ms per 1000 lookups of missing names (PATH searches, ld.so probes)
	local t0 t1
	rm -rf "$T/up" "$T/work" && mkdir "$T/up" "$T/work"
	mount -t overlay overlay -o "lowerdir=$1,upperdir=$T/up,workdir=$T/work" "$T/mnt"
	t0=$(date +%s%N)
	"$T/mnt/bin/busybox" sh -c 'i=0; while [ $i -lt 1000 ]; do [ -e /nonexistent-$i ] ; \
		[ -e '"$T"'/mnt/tree/missing-$i ]; [ -e '"$T"'/mnt/usr/lib/missing-$i ]; i=$((i+1)); done'
	t1=$(date +%s%N)
	umount "$T/mnt"
	ms "$t0" "$t1" 3
}
echo "mount (mount(8) included), 1 lower (merged): $(cycle "$T/flat") ms"
echo "mount (mount(8) included), 10 lowers:        $(cycle "$STACK") ms"
echo "1000 missing lookups, 1 lower:  $(lookups "$T/flat") ms"
echo "1000 missing lookups, 10 lowers: $(lookups "$STACK") ms"
EOF
