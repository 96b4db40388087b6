#!/bin/bash
# e2b-upstream.sh CHECKOUT [VITEST ARGS...] — run E2B's own JS test suites against sandlot:
# the SDK's (a checkout of github.com/e2b-dev/E2B: packages/js-sdk/tests) or the code
# interpreter's (github.com/e2b-dev/code-interpreter: js/tests). The checkout stays outside
# this project, its packages installed (docs/testing.md, "E2B's own suite").
#
# For the SDK, with no VITEST ARGS, two passes of its `unit` project:
#  1. offline: the files that mock E2B's API with msw (and the two that check the SDK's
#     default cloud URLs, which E2B_API_URL/E2B_SANDBOX_URL would change), with a dummy key
#     and no daemon: they test the SDK alone, and a daemon's URL would escape their mocks;
#  2. the rest against a throw-away daemon, through run-suite.sh and
#     tests/compat/e2b-upstream/setup.sh (takes the shared test lock).
# The code interpreter's suite has only pass 2. With VITEST ARGS (test files, `-t NAME`,
# reporters), only pass 2, with those arguments. E2B_UPSTREAM_REPORT=FILE adds vitest's
# JSON report of pass 2 in FILE.
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
if [ $# -eq 0 ] && [ $kind = sdk ]; then
	mapfile -t offline < <(cd "$sdk" && { grep -rl "from 'msw" tests --include='*.test.ts' | grep -v '^tests/template/'
		echo tests/sandbox/urls.test.ts; echo tests/connectionConfig.browser.test.ts; } | sort -u)
	echo "== e2b-upstream: offline pass (${#offline[@]} files, no daemon)"
	(cd "$sdk" && env -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_DOMAIN -u E2B_DEBUG \
		E2B_API_KEY="e2b_$(printf '0%.0s' {1..40})" npx --no-install vitest run --project unit "${offline[@]}")
	# The rest of the unit project by name (a project's own exclude list overrides
	# vitest's --exclude).
	mapfile -t online < <(cd "$sdk" && find tests -name '*.test.ts' ! -path 'tests/runtimes/*' \
		! -path 'tests/template/*' ! -name connectionConfig.test.ts | sort |
		grep -vxF -f <(printf '%s\n' "${offline[@]}"))
	set -- --project unit "${online[@]}"
fi
[ -z "${E2B_UPSTREAM_REPORT:-}" ] ||
	set -- "$@" --reporter=default --reporter=json --outputFile="$E2B_UPSTREAM_REPORT"
E2B_UPSTREAM_SDK=$sdk
E2B_UPSTREAM_ARGS=$(printf '%q ' "$@")
export E2B_UPSTREAM_SDK E2B_UPSTREAM_ARGS
${LOCK:-flock -o /tmp/sandlot-test.lock} bash "$top/tests/compat/run-suite.sh" "$top/tests/compat/e2b-upstream"
