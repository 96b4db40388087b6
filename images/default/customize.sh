#!/bin/sh
# customize.sh ROOT — mmdebstrap's customize hook for the default image: the non-root
# user, sandlot's metadata, the TypeScript runner, sandlot's sudo, and host details that
# must not leak in.
set -eu
root=$1
here=$(dirname -- "$0")

echo "I: adding the user \"user\" (1000:1000, /home/user)..."
chroot "$root" groupadd --gid 1000 user
chroot "$root" useradd --uid 1000 --gid 1000 --create-home --home-dir /home/user \
	--shell /bin/bash user
# Readable by any uid a caller picks with --user, like the home of a docker image's user.
chmod 0755 "$root/home/user"

install -d -m 0755 "$root/etc/sandlot"
install -m 0644 "$here/image.json" "$root/etc/sandlot/image.json"
install -m 0755 "$here/ts-run" "$root/usr/local/bin/ts-run"
# sandlot's sudo (docs/isolation.md, "sudo"): init serves it only in images that have
# /usr/lib/sandlot/sudo, a path only the sandbox's root can make.
install -D -m 0755 "$here/sudo" "$root/usr/lib/sandlot/sudo"
ln -sf ../lib/sandlot/sudo "$root/usr/bin/sudo"

# A sandbox is the user's own machine: `pip install` (for the user, or as root) should
# work as in the python images, without --break-system-packages.
rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED

# The essential packages were extracted before dpkg.cfg's excludes applied: drop their
# manuals, docs and translations now (copyright files and locale.alias stay).
sed -n 's|^path-exclude=\(/.*\)/\*$|\1|p' "$here/dpkg.cfg" | while read -r dir; do
	[ -d "$root$dir" ] || continue
	find "$root$dir" -xdev -mindepth 1 ! -type d ! -name copyright ! -name locale.alias -delete
	find "$root$dir" -xdev -mindepth 1 -type d -empty -delete
done

# mmdebstrap copies the build host's name and resolver in; the runtime provides its own.
printf '' >"$root/etc/hostname"
printf '' >"$root/etc/resolv.conf"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
chmod 0644 "$root/etc/hostname" "$root/etc/resolv.conf" "$root/etc/hosts"
