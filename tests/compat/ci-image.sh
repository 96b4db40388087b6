# ci-image.sh — sourced by compat setup.sh files: ci_image_import NAME imports the
# code-interpreter image (the default image with R and a JDK, for E2B's R and Java
# contexts: docs/e2b.md, "Code interpreter") under NAME into the suite's daemon state
# when its tarball is there: $E2B_CI_IMAGE, else build/images/code-interpreter.tar.zst,
# else /var/tmp/ci-image/code-interpreter.tar.zst. Prints the tarball used; nothing (and
# returns 1) when there is none, so the tests that need it skip, saying so.
ci_image_import() {
	local name=$1 f
	for f in "${E2B_CI_IMAGE:-}" "$build/images/code-interpreter.tar.zst" \
		/var/tmp/ci-image/code-interpreter.tar.zst; do
		[ -n "$f" ] && [ -f "$f" ] || continue
		"$bin" image import "$name" "$f" >/dev/null
		echo "$f"
		return 0
	done
	return 1
}
