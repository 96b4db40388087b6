#!/bin/bash
# bench/oci.sh — `ctr run --rm` of /bin/true through containerd's runc shim with
# --runc-binary sandlot-oci against the same with runc: same containerd, same rootfs,
# alternating, N runs each; then `podman run --rm` of the same image the same way (podman's
# overlay storage, conmon, `--runtime` runc or sandlot-oci); p50 and p90 in ms
# (docs/bench.md, "sandlot-oci").
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
PM="podman --root $T/pm-root --runroot $T/pm-run --storage-driver overlay --cgroup-manager=cgroupfs --events-backend=file --tmpdir $T/pm-tmp"
mkdir -p "$T/pm-tmp"
trap '$PM rm -af -t 0 > /dev/null 2>&1; oci_containerd_stop; oci_cgroups_rm sl libpod_parent; rm -rf "$T"' EXIT
RUNC=$(command -v runc)
$PM import "$BUILD/images/busybox.tar" localhost/sl-busybox > /dev/null 2>&1
for i in $(seq "$N"); do
	for rt in "$RUNC" "$O"; do
		s=$(date +%s%N)
		$C run --rm --runc-binary "$rt" --runc-root "$T/shim-root" --rootfs "$T/rootfs" "b$i" /bin/true
		e=$(date +%s%N)
		echo "ctr $(basename "$rt") $(( (e - s) / 1000 ))" >> "$T/times"
		s=$(date +%s%N)
		$PM --runtime "$rt" run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 localhost/sl-busybox /bin/true
		e=$(date +%s%N)
		echo "podman $(basename "$rt") $(( (e - s) / 1000 ))" >> "$T/times"
	done
done
python3 - "$T/times" <<'PY'
import sys, statistics
t = {}
for line in open(sys.argv[1]):
    eng, rt, us = line.split()
    t.setdefault((eng, rt), []).append(int(us) / 1000)
p50 = lambda v: sorted(v)[len(v)//2]
for eng in ("ctr", "podman"):
    for rt in ("runc", "sandlot-oci"):
        v = sorted(t[(eng, rt)])
        print(f"{eng} run --rm /bin/true  {rt:12s} n={len(v)} p50={p50(v):.1f} ms p90={v[int(len(v)*0.9)]:.1f} ms")
    r = p50(t[(eng, "sandlot-oci")]) / p50(t[(eng, "runc")])
    print(f"{eng}: sandlot-oci / runc p50: {r:.2f}x" + (" (goal <= 1.0x)" if eng == "ctr" else ""))
PY
