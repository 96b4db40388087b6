#!/bin/bash
# e2b-upstream.sh CHECKOUT [VITEST ARGS...] — run E2B's own JS test suites against sandlot:
# the SDK's (a checkout of github.com/e2b-dev/E2B: packages/js-sdk/tests) or the code
# interpreter's (github.com/e2b-dev/code-interpreter: js/tests). The checkout stays outside
# this project, its packages installed (docs/testing.md, "E2B's own suite").
#
# For the SDK, with no VITEST ARGS, four passes:
#  1. offline, `unit` project: the files that mock E2B's API with msw (and the two that
#     check the SDK's default cloud URLs, which E2B_API_URL/E2B_SANDBOX_URL would change),
#     with a dummy key and no daemon: they test the SDK alone, and a daemon's URL would
#     escape their mocks;
#  2. offline, `template` project: its files that build nothing (msw mocks, helpers);
#  3. the rest of `unit` against a throw-away daemon, through run-suite.sh and
#     tests/compat/e2b-upstream/setup.sh (takes the shared test lock);
#  4. the `template` files that build (tags.test.ts's builds too), against another, its
#     Docker Hub bases served by the local registry mirror (tests/compat/mirror.sh).
# The code interpreter's suite has only pass 3. With VITEST ARGS (test files, `-t NAME`,
# reporters), only a pass against a daemon, with those arguments (`--project template`
# starts the mirror). E2B_UPSTREAM_REPORT=FILE adds vitest's JSON report of pass 3 (or
# of the one pass) in FILE, of pass 4 in FILE's name with -template.json for .json.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 CHECKOUT [VITEST ARGS...]" >&2; exit 2; }
checkout=$(cd "$1" && pwd)
shift
if [ -f "$checkout/packages/js-sdk/vitest.config.mts" ]; then
	sdk=$checkout/packages/js-sdk kind=sdk
elif grep -qs '"name": "@e2b/code-interpreter"' "$checkout/js/package.json"; then
	sdk=$checkout/js kind=interpreter
else
	echo "e2b-upstream: $checkout: neither an e2b-dev/E2B nor an e2b-dev/code-interpreter checkout" >&2
	exit 2
fi
[ -x "$sdk/node_modules/.bin/vitest" ] || {
	echo "e2b-upstream: no vitest in $sdk/node_modules: install the checkout first (docs/testing.md)" >&2
	exit 2
}
top=$(cd "$(dirname "$0")/../.." && pwd)
# A vitest run with no daemon: E2B's default cloud URLs (which msw mocks) and a dummy key.
offline_vitest() {
	(cd "$sdk" && env -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_DOMAIN -u E2B_DEBUG \
		E2B_API_KEY="e2b_$(printf '0%.0s' {1..40})" npx --no-install vitest run "$@")
}
# A vitest run against a throw-away daemon (run-suite.sh + e2b-upstream/setup.sh), under
# the shared test lock; REPORT: vitest's JSON report there ("" for none).
daemon_vitest() {
	local report=$1
	shift
	[ -z "$report" ] || set -- "$@" --reporter=default --reporter=json --outputFile="$report"
	E2B_UPSTREAM_SDK=$sdk E2B_UPSTREAM_KIND=$kind E2B_UPSTREAM_ARGS=$(printf '%q ' "$@") \
		${LOCK:-flock -o /tmp/sandlot-test.lock} bash "$top/tests/compat/run-suite.sh" \
		"$top/tests/compat/e2b-upstream"
}
if [ $# -gt 0 ] || [ $kind != sdk ]; then
	daemon_vitest "${E2B_UPSTREAM_REPORT:-}" "$@"
	exit
fi
mapfile -t offline < <(cd "$sdk" && { grep -rl "from 'msw" tests --include='*.test.ts' | grep -v '^tests/template/'
	echo tests/sandbox/urls.test.ts; echo tests/connectionConfig.browser.test.ts; } | sort -u)
echo "== e2b-upstream: offline pass (${#offline[@]} files, no daemon)"
offline_vitest --project unit "${offline[@]}"
# The template project: the files whose tests build (through the suite's buildTemplate
# fixture, Template.exists, buildInBackground) against a daemon serving its bases from the
# local mirror (setup.sh); the rest (msw mocks, the SDK's helpers) offline. tags.test.ts
# holds both: its mocked block ("Template tags unit tests", whose msw server would refuse
# the daemon's requests) runs offline, its builds with tags against the daemon, picked by
# a name pattern that leaves that block out (it matches every test of the other files).
mapfile -t tpl_online < <(cd "$sdk" && find tests/template -name '*.test.ts' | sort |
	xargs grep -lE 'buildTemplate\(|Template\.exists|buildInBackground\(' | xargs grep -L "from 'msw")
mapfile -t tpl_offline < <(cd "$sdk" && find tests/template -name '*.test.ts' ! -name tags.test.ts |
	sort | grep -vxF -f <(printf '%s\n' "${tpl_online[@]}"))
echo "== e2b-upstream: offline pass, template project (${#tpl_offline[@]} files + tags' mocks)"
offline_vitest --project template "${tpl_offline[@]}"
offline_vitest --project template tests/template/tags.test.ts -t 'Template tags unit tests'
# The rest of the unit project by name (a project's own exclude list overrides
# vitest's --exclude).
mapfile -t online < <(cd "$sdk" && find tests -name '*.test.ts' ! -path 'tests/runtimes/*' \
	! -path 'tests/template/*' ! -name connectionConfig.test.ts | sort |
	grep -vxF -f <(printf '%s\n' "${offline[@]}"))
report=${E2B_UPSTREAM_REPORT:-}
echo "== e2b-upstream: unit project against sandlot (${#online[@]} files)"
rc=0
daemon_vitest "$report" --project unit "${online[@]}" || rc=$?
echo "== e2b-upstream: template project against sandlot (${#tpl_online[@]} files + tags' builds)"
daemon_vitest "${report:+${report%.json}-template.json}" --project template "${tpl_online[@]}" \
	tests/template/tags.test.ts -t '^(?!\s*Template tags unit tests)' || rc=$?
exit $rc
