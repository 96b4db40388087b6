#!/bin/bash
# run-suite.sh BIN — run one e2e suite under the host-wide test lock ($LOCK), its output
# streamed as usual and kept in $LOGS (build/logs). When it fails, end with a digest: for each
# failed test, the first lines it printed. A CI log often shows only its tail, and the
# test that failed first (the cause) may be pages above the last one.
set -uo pipefail
bin=$1
logs=${LOGS:-build/logs}
mkdir -p "$logs"
log=$logs/$(basename "$bin").log
# shellcheck disable=SC2086
${LOCK:-} "$bin" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# Its time, lock wait included: make test has a budget (30 min on this host).
echo "== $(basename "$bin"): ${SECONDS} s"
[ "$rc" -eq 0 ] && exit 0
echo "== $(basename "$bin") failed (exit $rc); each failed test's first lines (all: $log):"
awk '
	/ test\(s\), listed below:/ { exit }
	/^\[ RUN      \]/ { n = 0; buf = ""; next }
	/^\[  (FAILED  |ERROR   )\] / {
		print "-- " $0
		printf "%s", buf
		if (n > 15) print "   ... " (n - 15) " more lines"
		n = 0; buf = ""
		next
	}
	{ if (++n <= 15) buf = buf "   " $0 "\n" }
' "$log"
exit "$rc"
