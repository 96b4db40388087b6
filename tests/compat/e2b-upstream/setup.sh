# setup.sh — sourced by run-suite.sh for E2B's own JS suites (run them through
# tests/compat/e2b-upstream.sh, which names the checkout): vitest in the checkout's
# packages/js-sdk (or code-interpreter's js/) against this daemon, as an E2B user points
# the SDK at it (E2B_API_URL, E2B_SANDBOX_URL, an e2b_-prefixed key). The daemon runs with
# --provider-defaults, so E2B-made sandboxes get E2B's defaults (internet on, public
# ports, signed URLs without an expiry), which the suites assume. Templates "base" and
# "code-interpreter-v1" are the default image (the code interpreter's suite runs on the
# code-interpreter image when it is built: below).
SERVE_ARGS+=(--provider-defaults)
# The code interpreter's suite: its template is the code-interpreter image (R and Java
# contexts) when that is built (../ci-image.sh), imported as "e2b-ci", unless the caller
# names one in E2B_TESTS_TEMPLATE; else the default image, on which its R and Java tests
# fail with LanguageUnavailable.
if [ -f "$E2B_UPSTREAM_SDK/package.json" ] && grep -qs '"name": "@e2b/code-interpreter"' "$E2B_UPSTREAM_SDK/package.json" &&
	[ -z "${E2B_TESTS_TEMPLATE:-}" ]; then
	# shellcheck source=../ci-image.sh
	. "$dir/../ci-image.sh"
	if f=$(ci_image_import e2b-ci); then
		echo "== e2b-upstream: template e2b-ci, the code-interpreter image from $f"
		export E2B_TESTS_TEMPLATE=e2b-ci
	else
		echo "== e2b-upstream: NO code-interpreter image (build/images/code-interpreter.tar.zst): template code-interpreter-v1 is the default image, without R or Java" >&2
	fi
fi
# The SDK's `template` project builds FROM ubuntu:22.04 and e2bdev/base (fromBaseImage),
# Docker Hub names this host cannot reach: the shared local mirror serves its stand-in
# under them (../mirror.sh; a Debian 12 rootfs, whatever the name says).
if [[ $E2B_UPSTREAM_ARGS == *"--project template"* ]]; then
	# shellcheck source=../mirror.sh
	. "$dir/../mirror.sh"
	mirror_start ubuntu:22.04 e2bdev/base
	suite_cleanup() {
		mirror_stop
	}
fi
suite_run() {
	local args=()
	eval "args=($E2B_UPSTREAM_ARGS)"
	(cd "$E2B_UPSTREAM_SDK" &&
		env -u E2B_DEBUG -u E2B_DOMAIN -u E2B_ACCESS_TOKEN E2B_API_URL="$SANDLOT_URL" \
			E2B_SANDBOX_URL="$SANDLOT_URL" E2B_API_KEY="e2b_$SANDLOT_API_KEY" \
			npx --no-install vitest run "${args[@]}")
}
