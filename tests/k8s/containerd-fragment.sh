#!/bin/sh
# containerd's own reading of deploy/k8s/containerd-sandlot.toml: a config importing it,
# dumped (`containerd config dump` starts no daemon), shows the sandlot handler with the
# runc shim, BinaryName and the pod annotations it passes.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/config.toml" <<EOT
version = 2
root = "$tmp/root"
state = "$tmp/state"
imports = ["$here/deploy/k8s/containerd-sandlot.toml"]
EOT
containerd --config "$tmp/config.toml" config dump > "$tmp/dump.toml"
fail=0
for want in '\[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.sandlot\]' \
	'runtime_type = "io.containerd.runc.v2"' \
	'BinaryName = "/usr/local/bin/sandlot-oci"' \
	'pod_annotations = \["sandlot.dev/\*"\]'; do
	if grep -q "$want" "$tmp/dump.toml"; then echo "ok   containerd config dump: $want"
	else echo "FAIL containerd config dump lacks: $want"; fail=1; fi
done
exit $fail
