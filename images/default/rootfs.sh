#!/bin/bash
# rootfs.sh WORK OUT.tar.zst [EXTRA] — the default image's actual build: mmdebstrap from
# the Debian mirror this host's apt sources name, into WORK/root, then packed into OUT.
# EXTRA's `packages` are installed too, its `dpkg.cfg` applies after ours and its
# `customize.sh ROOT` runs after ours.
# Run by build.sh, which owns WORK, the cache, progress and cleanup; prints a log.
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 WORK OUT.tar.zst [EXTRA-RECIPE-DIR]" >&2
	exit 2
fi
work=$1
out=$2
extra=${3:-}
here=$(cd "$(dirname -- "$0")" && pwd)
suite=bookworm
root=$work/root

# The mirror is whatever the host's apt uses for this suite (sandboxes never reach
# anything else), read afresh on every build and written nowhere but into the image.
set --
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] && set -- "$@" "$f"
done
if [ $# -gt 0 ]; then
	awk -v suite="$suite" -f "$here/apt-sources.awk" "$@" >"$work/sources.list"
else
	: >"$work/sources.list"
fi
if [ ! -s "$work/sources.list" ]; then
	echo "E: no enabled \"deb\" entry for Debian $suite in /etc/apt/sources.list or" \
		"/etc/apt/sources.list.d/; add the mirror you use for $suite there" >&2
	exit 1
fi
echo "I: Debian $suite from the host's apt sources ($(wc -l <"$work/sources.list") entries)"

lists=("$here/packages")
hooks=(--customize-hook="sh '$here/customize.sh' \"\$1\"")
if [ -n "$extra" ]; then
	[ -f "$extra/packages" ] && lists+=("$extra/packages")
	[ -f "$extra/dpkg.cfg" ] &&
		hooks+=(--setup-hook="install -D -m 0644 '$extra/dpkg.cfg' \"\$1/etc/dpkg/dpkg.cfg.d/51sandlot-$(basename -- "$extra")\"")
	[ -f "$extra/customize.sh" ] && hooks+=(--customize-hook="sh '$extra/customize.sh' \"\$1\"")
	echo "I: with $(basename -- "$extra")'s recipe ($extra)"
fi
pkgs=$(sed -e 's/#.*//' "${lists[@]}" | tr -s ' \t\n' '\n' | grep . | paste -sd, -)

# A private mount namespace holds every mount mmdebstrap makes in the chroot, so they
# vanish with its last process even when the build is killed outright. dpkg.cfg goes in
# by a setup hook rather than --dpkgopt, which would run a perl filter costing ~0.6 s
# per essential package while extracting them.
unshare --mount --propagation private \
	mmdebstrap --mode=root --variant=minbase --format=directory --verbose \
	--aptopt='APT::Install-Recommends "false"' --aptopt='Acquire::Languages "none"' \
	--setup-hook="install -D -m 0644 '$here/dpkg.cfg' \"\$1/etc/dpkg/dpkg.cfg.d/50sandlot\"" \
	--include="$pkgs" \
	"${hooks[@]}" \
	"$suite" "$root" "$work/sources.list"

echo "I: preparing the tree for sandlot..."
# No mounts are left in this namespace, and -xdev would stop at one anyway. Device
# nodes go (the runtime makes /dev itself and imports refuse them), and so do apt's
# partial dirs owned by _apt (apt makes them again when it runs).
find "$root/dev" -xdev -mindepth 1 -delete
rm -rf -- "$root/var/cache/apt/archives/partial" "$root/var/lib/apt/lists/partial"
for d in proc sys dev dev/pts dev/shm run; do
	mkdir -p "$root/$d"
	chmod 0755 "$root/$d"
done
mkdir -p "$root/tmp"
chmod 1777 "$root/tmp"
bad=$(cd "$root" && find . -xdev ! -uid 0 ! -path ./home/user ! -path './home/user/*' | head -5)
if [ -n "$bad" ]; then
	echo "E: files not owned by root outside /home/user:" "$bad" >&2
	exit 1
fi
echo "I: unpacked size: $(du -sbx "$root" | cut -f1) bytes"

echo "I: packing..."
# Sorted, numeric owners, GNU format (no pax headers with times or pids); mtimes kept,
# since the byte-compiled Python files check their sources' mtimes. zstd -9 with a
# 128 MiB window: ~20% smaller than the default level, and quick to unpack.
tar --create --directory="$root" --format=gnu --sort=name --numeric-owner \
	--no-acls --no-xattrs --no-selinux . |
	zstd -q -T0 -9 --long=27 -o "$out"
echo "I: packed: $(stat -c %s "$out") bytes"
