#!/bin/bash
# run-suite.sh DIR — run one compatibility suite (tests/compat/<name>/) with the real SDK
# against a real daemon: a throw-away state root, the busybox and default images, `sandlot
# serve` on a loopback port (API key required there, as remote providers have), then
# `node --test` in DIR. The SDKs come from DIR's committed lockfile (`npm ci`, kept in
# DIR/node_modules while the lockfile is unchanged). The suite sees:
#   SANDLOT_URL=http://127.0.0.1:PORT  SANDLOT_API_KEY  SANDLOT_SOCKET  SANDLOT_BIN
#   SANDLOT_PREVIEW_PORT  SANDLOT_STATE_DIR  SANDLOT_RUN_DIR
# When DIR/setup.sh exists it is sourced first (with $root, $bin and $build set): it may
# prepare fixtures under $root and add `sandlot serve` flags to the SERVE_ARGS array
# (package sources, for example); it may define suite_cleanup, called at the end, and
# suite_run, called instead of `node --test` (a suite whose code is not in DIR, like
# E2B's own, tests/compat/e2b-upstream.sh). A DIR with no package-lock.json installs
# nothing.
# Afterwards every sandbox is removed, the daemon stopped (by its pid), its logs kept as
# ${LOGS:-BUILD/logs}/compat-NAME.serve.log, the state root unmounted and deleted, and the
# host checked for anything left behind (mounts; the bridge, table and ip_forward as found).
set -euo pipefail
dir=$(cd "$1" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${SANDLOT_BUILD:-$top/build}
bin=$build/sandlot
name=$(basename "$dir")

for f in "$bin" "$build/images/busybox.tar" "$build/images/default.tar.zst"; do
	[ -e "$f" ] || { echo "run-suite: $f is missing (make all images)" >&2; exit 1; }
done

# npm ci only when the lockfile changed since the last install.
if [ -f "$dir/package-lock.json" ]; then
	stamp=$dir/node_modules/.sandlot-lock-sha
	want=$(sha256sum "$dir/package-lock.json" | cut -c1-64)
	if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
		echo "$want" >"$stamp"
	fi
fi

# The network's host side as found (the bridge, our table, ip_forward): the suite's daemons
# must leave it so.
net_state() {
	printf 'bridge:%s table:%s ip_forward:%s' \
		"$(ip -br link show sandlot0 >/dev/null 2>&1 && echo yes || echo no)" \
		"$(nft list table inet sandlot0 >/dev/null 2>&1 && echo yes || echo no)" \
		"$(cat /proc/sys/net/ipv4/ip_forward)"
}
net_before=$(net_state)
root=$(mktemp -d /var/tmp/sandlot-compat-$name.XXXXXX)
export SANDLOT_STATE_DIR=$root/state SANDLOT_RUN_DIR=$root/run SANDLOT_BIN=$bin
mkdir -p "$SANDLOT_STATE_DIR" "$SANDLOT_RUN_DIR"
daemon=
ids() {
	"$bin" ls -a --format json 2>/dev/null |
		python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]' 2>/dev/null
}
SERVE_ARGS=()
cleanup() {
	set +e
	if declare -F suite_cleanup >/dev/null; then suite_cleanup; fi
	if [ -n "$daemon" ]; then
		for id in $(ids); do "$bin" rm -f "$id" >/dev/null 2>&1; done
		kill -TERM "$daemon" 2>/dev/null
		wait "$daemon" 2>/dev/null
	fi
	for id in $(ids); do "$bin" rm -f "$id" >/dev/null 2>&1; done
	# Deepest mounts first, then loop devices backed by files under the root.
	grep -F " $root" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do
		umount -l "$m"
	done
	losetup -j "$root/state/store.img" 2>/dev/null | cut -d: -f1 | while read -r d; do
		losetup -d "$d"
	done
	left=$(grep -cF " $root" /proc/self/mountinfo || true)
	# The daemons' log outlives the root: what a failed test's sandbox went through.
	mkdir -p "${LOGS:-$build/logs}"
	cat "$root/serve.err" "$root/state/sandlot.log" >"${LOGS:-$build/logs}/compat-$name.serve.log" 2>/dev/null
	rm -rf "$root"
	# The runtime's parent cgroup ("sandlot" in each hierarchy) outlives sandboxes; removed
	# when empty, as the e2e harness does (rmdir fails while any sandbox is left in it).
	for p in /sys/fs/cgroup/{cpu,cpuacct,memory,pids,freezer}/sandlot /sys/fs/cgroup/sandlot; do
		rmdir "$p" 2>/dev/null
	done
	echo "== compat/$name: ${SECONDS} s"
	if [ "${left:-0}" != 0 ]; then
		echo "run-suite: $left mounts under $root were left behind" >&2
		exit 1
	fi
	net_after=$(net_state)
	if [ "$net_after" != "$net_before" ]; then
		echo "run-suite: the network's host side was $net_before, is $net_after" >&2
		exit 1
	fi
}
trap cleanup EXIT

"$bin" image import busybox "$build/images/busybox.tar" >/dev/null
"$bin" image import default "$build/images/default.tar.zst" >/dev/null

if [ -f "$dir/setup.sh" ]; then
	# shellcheck disable=SC1091
	. "$dir/setup.sh"
fi

out=$root/serve.out
"$bin" serve --listen 127.0.0.1:0 --preview-port 0 "${SERVE_ARGS[@]}" >"$out" 2>"$root/serve.err" &
daemon=$!
for _ in $(seq 100); do
	grep -q "http://127.0.0.1:" "$out" 2>/dev/null && break
	kill -0 "$daemon" 2>/dev/null || { cat "$root/serve.err" >&2; exit 1; }
	sleep 0.1
done
url=$(grep -o 'http://127.0.0.1:[0-9]*' "$out" | head -1)
[ -n "$url" ] || { echo "run-suite: sandlot serve did not start" >&2; exit 1; }
export SANDLOT_URL=$url SANDLOT_SOCKET=$SANDLOT_RUN_DIR/sandlot.sock
SANDLOT_API_KEY=$("$bin" key)
export SANDLOT_API_KEY
SANDLOT_PREVIEW_PORT=$(curl -s --unix-socket "$SANDLOT_SOCKET" http://x/v1/health |
	sed -n 's/.*"previewPort":\([0-9]*\).*/\1/p')
export SANDLOT_PREVIEW_PORT

echo "== compat/$name against $url"
if declare -F suite_run >/dev/null; then
	suite_run
else
	(cd "$dir" && node --test --test-concurrency=1 ${COMPAT_FILTER:+--test-name-pattern "$COMPAT_FILTER"} test/)
fi
