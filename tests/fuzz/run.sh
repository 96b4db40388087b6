#!/bin/bash
# tests/fuzz/run.sh — one fuzz target's pass: replay every committed input (corpus and
# crashes) as a plain run, then fuzz for $FUZZ_SECONDS; one summary line, the log on failure.
# Usage: run.sh BUILD_FUZZ_DIR TARGET
set -u
dir=$1 t=$2 secs=${FUZZ_SECONDS:-60}
bin=$dir/fuzz_$t
corpus=tests/fuzz/corpus/$t crashes=tests/fuzz/crashes/$t
work=$dir/work/$t art=$dir/artifacts/$t/ log=$dir/logs/$t.log
mkdir -p "$work" "$art" "$dir/logs"

fail() {
	echo "fuzz $t: FAILED ($1); log: $log" >&2
	tail -n 40 "$log" >&2
	exit 1
}

# The committed inputs, each run once: a crash that comes back fails here, every time.
inputs=()
for d in "$corpus" "$crashes"; do
	[ -d "$d" ] && while IFS= read -r -d '' f; do inputs+=("$f"); done \
		< <(find "$d" -type f ! -name '.*' -print0 | sort -z)
done
if [ ${#inputs[@]} -gt 0 ]; then
	"$bin" -runs=1 "${inputs[@]}" > "$log" 2>&1 || fail "a committed input"
fi

# New corpus entries go to build/ ($work), not to the committed seeds. With $FUZZ_RUNS
# (make fuzz-short, in make test) the pass is a fixed number of inputs from a fixed seed,
# from the committed corpus alone: the same inputs on every machine, so CI fails only
# for what a change did, never for what a lucky draw found; `make fuzz` draws afresh.
if [ -n "${FUZZ_RUNS:-}" ]; then
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	budget=(-seed="${FUZZ_SEED:-1}" -runs="$FUZZ_RUNS")
	what="$FUZZ_RUNS inputs from seed ${FUZZ_SEED:-1}"
else
	budget=(-max_total_time="$secs")
	what="${secs}s"
fi
"$bin" "${budget[@]}" -timeout=20 -print_final_stats=1 -artifact_prefix="$art" \
	"$work" "$corpus" >> "$log" 2>&1 || fail "a new crash, saved under $art"
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
echo "fuzz $t: ${#inputs[@]} committed inputs replayed, ${execs:-?} executions ($what), no crash"
