# setup.sh — sourced by run-suite.sh: `dependencies` (apt) and npm `packages` come from
# the test's own sources, served from a network namespace at 203.0.113.1
# (tests/e2e/packages_internet.sh; never a real outside address).
pkgsrc=$root/pkgsrc
pkgns=sl-agy-$$
sh "$top/tests/e2e/packages_internet.sh" up "$pkgsrc" "$pkgns"
suite_cleanup() { sh "$top/tests/e2e/packages_internet.sh" down "$pkgsrc" "$pkgns"; }
SERVE_ARGS+=(--apt-mirror 'deb [trusted=yes] http://203.0.113.1:8080/apt ./'
	--npm-registry http://203.0.113.1:8080/npm/)
