# tests/e2e/oci-lib.sh — sourced by tests/e2e/oci.sh and bench/oci.sh: a containerd of our
# own with its state under $T (cgroupfs, no CRI plugin), and its teardown.
# Needs T (a temp dir); sets CPID and C (ctr against it, namespace "sl").
oci_containerd_start() {
	cat > "$T/containerd.toml" <<EOT
version = 2
root = "$T/c-root"
state = "$T/c-state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$T/containerd.sock"
[ttrpc]
  address = "$T/containerd.ttrpc.sock"
EOT
	containerd --config "$T/containerd.toml" > "$T/containerd.log" 2>&1 &
	CPID=$!
	for _ in $(seq 200); do [ -S "$T/containerd.sock" ] && break; sleep 0.05; done
	C="ctr -a $T/containerd.sock -n sl"
}

# Every task and container gone, containerd stopped, the mounts under $T undone.
oci_containerd_stop() {
	local id
	for id in $($C task ls -q 2>/dev/null); do
		$C task kill -s KILL "$id" 2>/dev/null; sleep 0.2
		$C task delete -f "$id" > /dev/null 2>&1
	done
	for id in $($C containers ls -q 2>/dev/null); do $C containers delete "$id" 2>/dev/null; done
	kill "$CPID" 2>/dev/null; wait "$CPID" 2>/dev/null
	grep " $T" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do umount -l "$m"; done
}

# The empty cgroups named NAMEs (under every hierarchy) removed, deepest first.
oci_cgroups_rm() {
	local n d
	for n in "$@"; do
		for d in /sys/fs/cgroup/*/"$n" /sys/fs/cgroup/"$n"; do
			[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
		done
	done
	return 0
}
