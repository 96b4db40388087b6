#!/bin/sh
# packages_internet.sh up|down DIR NETNS — the package sources tests install from, without
# a real outside address. up: builds the fixtures into DIR (packages_fixtures.py: a wheel
# directory, a static npm registry, a flat apt repository), makes the netns NETNS with a
# veth from the host (203.0.113.254 here, 203.0.113.1 there: TEST-NET-3, routed only into
# it; also 10.78.1.1 there, a private address closed to sandboxes but for a mirror's
# install, routed the same way) and serves DIR/www from it with python's http.server on
# port 8080 (pid in DIR/server.pid). down: stops the server (by that pid) and deletes the netns and veth.
# Sources then (as `sandlot serve` flags; SANDLOT_* for the CLI):
#   --pip-wheels DIR/wheels   (needs no network)
#   --npm-registry http://203.0.113.1:8080/npm/
#   --apt-mirror 'deb [trusted=yes] http://203.0.113.1:8080/apt ./'
# Packages: pip sandlot-tiny 1.0 (import sandlot_tiny; .ANSWER == 42), npm sandlot-tiny
# 1.0.0 (require(...).answer == 42, command `sandlot-tiny` prints "tiny 42"), apt
# sandlot-tiny 1.0 (command `sandlot-tiny` prints "tiny deb").
set -eu
cmd=$1 dir=$2 ns=$3
# The host end of the veth: interface names are at most 15 bytes.
veth=slv$(printf '%s' "$ns" | cksum | cut -d' ' -f1 | cut -c1-10)
url=http://203.0.113.1:8080

case $cmd in
up)
	# Half an up is undone.
	trap 'sh "$0" down "$dir" "$ns"' EXIT
	mkdir -p "$dir"
	python3 "$(dirname "$0")/packages_fixtures.py" "$dir" "$url"
	# `ip netns add` makes /run/netns a mount (and the dir) when it is not one yet, and
	# `ip netns del` leaves both: down takes back what was ours.
	[ -d /run/netns ] || : >"$dir/netns-dir-made"
	mountpoint -q /run/netns 2>/dev/null || : >"$dir/netns-mount-made"
	ip netns add "$ns"
	ip link add "$veth" type veth peer name eth0 netns "$ns"
	ip addr add 203.0.113.254/24 dev "$veth"
	ip link set "$veth" up
	ip -n "$ns" addr add 203.0.113.1/24 dev eth0
	ip -n "$ns" addr add 10.78.1.1/32 dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set lo up
	ip route add 10.78.1.1/32 via 203.0.113.1 dev "$veth"
	ip netns exec "$ns" python3 -m http.server 8080 --bind 0.0.0.0 \
		--directory "$dir/www" </dev/null >/dev/null 2>&1 &
	echo $! >"$dir/server.pid"
	for _ in $(seq 100); do
		if curl -sf -o /dev/null "$url/apt/Packages"; then
			trap - EXIT
			exit 0
		fi
		sleep 0.1
	done
	echo "packages_internet: the server in $ns did not answer" >&2
	exit 1
	;;
down)
	if [ -f "$dir/server.pid" ]; then
		kill "$(cat "$dir/server.pid")" 2>/dev/null || true
		rm -f "$dir/server.pid"
	fi
	ip link del "$veth" 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
	if [ -f "$dir/netns-mount-made" ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
		umount /run/netns 2>/dev/null || true
		rm -f "$dir/netns-mount-made"
		if [ -f "$dir/netns-dir-made" ]; then
			rmdir /run/netns 2>/dev/null || true
			rm -f "$dir/netns-dir-made"
		fi
	fi
	;;
*)
	echo "usage: packages_internet.sh up|down DIR NETNS" >&2
	exit 2
	;;
esac
