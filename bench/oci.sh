#!/bin/bash
# bench/oci.sh — `ctr run --rm` of /bin/true through containerd's runc shim with
# --runc-binary sandlot-oci against the same with runc: same containerd, same rootfs,
# alternating, N runs each; p50 and p90 in ms (docs/bench.md, "sandlot-oci").
set -eu
BUILD=${SANDLOT_BUILD:-build}
N=${OCI_BENCH_RUNS:-30}
O=$(cd "$BUILD" && pwd)/sandlot-oci
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/sandlot-oci-bench.XXXXXX)
export SANDLOT_STATE_DIR=$T/sl-state SANDLOT_RUN_DIR=$T/sl-run
export SANDLOT_SECCOMP_PROFILE=$SRC/seccomp/default.json
mkdir -p "$T/rootfs"
tar xf "$BUILD/images/busybox.tar" -C "$T/rootfs"
. "$SRC/tests/e2e/oci-lib.sh"
oci_containerd_start
trap 'oci_containerd_stop; oci_cgroups_rm sl; rm -rf "$T"' EXIT
RUNC=$(command -v runc)
for i in $(seq "$N"); do
	for rt in "$RUNC" "$O"; do
		s=$(date +%s%N)
		$C run --rm --runc-binary "$rt" --runc-root "$T/shim-root" --rootfs "$T/rootfs" "b$i" /bin/true
		e=$(date +%s%N)
		echo "$(basename "$rt") $(( (e - s) / 1000 ))" >> "$T/times"
	done
done
python3 - "$T/times" <<'PY'
import sys, statistics
t = {}
for line in open(sys.argv[1]):
    rt, us = line.split()
    t.setdefault(rt, []).append(int(us) / 1000)
for rt, v in sorted(t.items()):
    v.sort()
    print(f"ctr run --rm /bin/true  {rt:12s} n={len(v)} p50={v[len(v)//2]:.1f} ms p90={v[int(len(v)*0.9)]:.1f} ms")
r = sorted(t["sandlot-oci"])[len(t["sandlot-oci"])//2] / sorted(t["runc"])[len(t["runc"])//2]
print(f"sandlot-oci / runc p50: {r:.2f}x (goal <= 1.0x)")
PY
