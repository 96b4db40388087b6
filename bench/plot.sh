#!/bin/bash
# bench/plot.sh — renders a bench result (latest.json) to its picture with gnuplot and
# bench/plot.gp; run by bench/run.sh, and by hand to redraw: bench/plot.sh [JSON [PNG]].
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
JSON=${1:-$HERE/results/latest.json}
PNG=${2:-${JSON%.json}.png}
TMP=$(mktemp -d /tmp/sandlot-plot.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# Bars: every measure with a ratio, but memory and growth rows (their goals are absolute
# and live in the density panel). Colour by the goal: green met, red missed, blue none.
jq -r '.measures[] | select(.ratio != null and .unit != "x" and .unit != "KiB") |
	[ "\"" + (.label | gsub("\""; "")) + "\"", .ratio,
	  (if (.goal // "") | test("[0-9.]+×") then (.goal | capture("(?<g>[0-9.]+)×") | .g) else "NaN" end),
	  (if .met == true then 2924588 elif .met == false then 14034728 else 3502768 end)
	] | @tsv' "$JSON" >"$TMP/ratios.dat"
# Density: n, ms per create (median), KiB by MemAvailable, KiB accounted.
for rt in sandlot crun; do
	jq -r --arg rt "$rt" '.density[] | select(.runtime == $rt) |
		[ .n, (.createMs.median // "NaN"), (.hostKiBPerSandbox // "NaN"), (.accountedKiB // "NaN") ] |
		@tsv' "$JSON" >"$TMP/dens-$rt.dat"
done
title=$(jq -r '"sandlot bench (\(.mode), \(.date[0:10]), commit \(.commit), load \(.host.loadavg1mStart) → \(.host.loadavg1mEnd) on \(.host.cpus) CPUs)"' "$JSON")
gnuplot -e "has_ratios=$([ -s "$TMP/ratios.dat" ] && echo 1 || echo 0); has_density=$([ -s "$TMP/dens-sandlot.dat" ] && echo 1 || echo 0); ratios='$TMP/ratios.dat'; dsl='$TMP/dens-sandlot.dat'; dcr='$TMP/dens-crun.dat'; out='$PNG'; title='$title'" \
	"$HERE/plot.gp"
