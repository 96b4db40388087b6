#!/bin/sh
# build.sh OUT.tar — a tiny rootfs from Debian's busybox-static, with no network at run
# time; byte-for-byte reproducible (sorted, mtime 0, owner 0:0) so its digest is stable.
set -eu

if [ $# -ne 1 ]; then
	echo "usage: $0 OUT.tar" >&2
	exit 2
fi
out=$1
outdir=$(dirname -- "$out")
mkdir -p -- "$outdir"

# The static binary is what makes the image self-contained: no libc inside.
if ! dpkg -s busybox-static >/dev/null 2>&1 || [ ! -x /bin/busybox ]; then
	echo "busybox image: installing busybox-static (the only step needing a network)" >&2
	apt-get install -y busybox-static >&2
fi
bb=/bin/busybox
if ! dpkg -S "$bb" 2>/dev/null | grep -q '^busybox-static:'; then
	echo "busybox image: $bb does not come from busybox-static" >&2
	exit 1
fi

work=$(mktemp -d "$outdir/.busybox-build.XXXXXX")
trap 'rm -rf -- "$work"' EXIT INT TERM
root=$work/root
mkdir -m 0755 "$root"

# Directories, including the mount points the runtime mounts over.
for d in bin sbin usr usr/bin usr/sbin etc etc/sandlot home mnt proc sys dev dev/pts \
	dev/shm run .sandlot; do
	mkdir -m 0755 "$root/$d"
done
mkdir -m 0700 "$root/root"
mkdir -m 1777 "$root/tmp"

cp "$bb" "$root/bin/busybox"
chmod 0755 "$root/bin/busybox"

# One relative symlink per applet, so the links also make sense when the tree is
# looked at from the host.
"$bb" --list-full | while read -r applet; do
	case $applet in
	bin/busybox | linuxrc | */*/*/*) continue ;; # itself; initramfs-only; unexpected depth
	*/*/*) target=../../bin/busybox ;;
	bin/*) target=busybox ;;
	*/*) target=../bin/busybox ;;
	*) continue ;;
	esac
	[ -e "$root/$applet" ] || [ -L "$root/$applet" ] || ln -s "$target" "$root/$applet"
done
[ -L "$root/bin/sh" ] || ln -s busybox "$root/bin/sh"

put() { # put MODE PATH CONTENT
	printf '%s' "$3" >"$root/$2"
	chmod "$1" "$root/$2"
}
put 0644 etc/passwd 'root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
'
put 0644 etc/group 'root:x:0:
nogroup:x:65534:
'
put 0644 etc/hostname ''
put 0644 etc/hosts '127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
'
put 0644 etc/resolv.conf ''
put 0644 etc/sandlot/image.json '{"user":"root","workingDirectory":"/"}
'

# GNU format: no pax headers carrying pids or atimes, so the bytes depend only on
# the tree.
tar --create --file="$work/image.tar" --directory="$root" --format=gnu --sort=name \
	--mtime=@0 --owner=0 --group=0 --numeric-owner --no-acls --no-xattrs --no-selinux .
mv -f -- "$work/image.tar" "$out"
echo "busybox image: $out ($(sha256sum "$out" | cut -d' ' -f1))" >&2
