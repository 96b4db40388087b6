#!/bin/sh
# customize.sh ROOT — the code-interpreter image's customize hook, after the default
# image's: the Python packages' own test suites go (pandas, sympy, numpy, matplotlib...:
# ~120 MiB that nothing imports; a dpkg path-exclude cannot do it, as the packages'
# byte-compiling postinst wants every file it shipped; `dpkg -V` lists them as missing),
# and matplotlib's font cache is made once here, for root (the code interpreter's REPLs
# run as root) and for the user, so a sandbox's first `import matplotlib.pyplot` does
# not spend seconds scanning fonts.
set -eu
root=$1

echo "I: removing the Python packages' test suites..."
find "$root/usr/lib/python3/dist-packages" -xdev -mindepth 2 -type d -name tests -prune \
	-exec rm -rf -- {} +

echo "I: matplotlib's font cache..."
chroot "$root" env HOME=/root MPLBACKEND=Agg python3 -c 'import matplotlib.pyplot'
chroot --userspec=1000:1000 "$root" env HOME=/home/user MPLBACKEND=Agg \
	python3 -c 'import matplotlib.pyplot'
