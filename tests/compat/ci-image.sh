# ci-image.sh — sourced by a suite's setup.sh (with $bin and $build set): import the
# code-interpreter image (`make images-code-interpreter`, not part of `make images`) when
# it is built, and export SANDLOT_CI_IMAGE=1; otherwise say loudly what is skipped ($1).
if [ -f "$build/images/code-interpreter.tar.zst" ]; then
	"$bin" image import code-interpreter "$build/images/code-interpreter.tar.zst" >/dev/null
	export SANDLOT_CI_IMAGE=1
else
	echo "!! $build/images/code-interpreter.tar.zst is not built: $1;" \
		"make images-code-interpreter to run them" >&2
fi
