#!/bin/sh
# Put sandlot-oci on this node (run as root on the node, or by daemonset.yaml from its image
# with the host's / at $HOST): the binary, its link, sandlot-init, the seccomp profile,
# containerd's fragment (imported), then a containerd restart. The node is labelled
# sandlot.dev/runtime=installed by the DaemonSet (kubectl label) once this succeeds.
set -eu
HOST=${HOST:-}
SRC=${SRC:-$(dirname "$0")}
install -D -m 0755 "$SRC/sandlot" "$HOST/usr/local/bin/sandlot"
ln -sf sandlot "$HOST/usr/local/bin/sandlot-oci"
install -D -m 0755 "$SRC/sandlot-init" "$HOST/usr/local/bin/sandlot-init"
install -D -m 0644 "$SRC/seccomp.json" "$HOST/etc/sandlot/seccomp.json"
install -D -m 0644 "$SRC/containerd-sandlot.toml" "$HOST/etc/containerd/conf.d/sandlot.toml"
[ -f "$HOST/etc/sandlot/oci.json" ] || echo '{"allowSpecOnly": false}' > "$HOST/etc/sandlot/oci.json"
CFG="$HOST/etc/containerd/config.toml"
if ! grep -q 'conf.d/sandlot.toml' "$CFG" 2>/dev/null; then
	if grep -q '^imports' "$CFG" 2>/dev/null; then
		sed -i 's|^imports *= *\[|imports = ["/etc/containerd/conf.d/sandlot.toml", |' "$CFG"
	else
		tmp=$(mktemp); { echo 'imports = ["/etc/containerd/conf.d/sandlot.toml"]'; cat "$CFG" 2>/dev/null || true; } > "$tmp"
		mv "$tmp" "$CFG"
	fi
fi
# The host's containerd picks the handler up on restart (nsenter into pid 1's namespaces
# from the DaemonSet, which runs with hostPID).
if [ -n "$HOST" ]; then
	nsenter -t 1 -m -u -i -n -p -- systemctl restart containerd
else
	systemctl restart containerd
fi
