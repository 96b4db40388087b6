#!/bin/bash
# build.sh OUT.tar.zst — build the `code-interpreter` image: the default image's recipe
# plus this directory's packages (numpy, PIL, matplotlib, pandas for the E2B code
# interpreter's rich results; R and a JDK for its R and Java contexts) and customize.sh.
# Skipped when OUT was built from these very recipe files (both directories').
# See docs/code-interpreter-image.md.
set -euo pipefail
if [ $# -ne 1 ]; then
	echo "usage: $0 OUT.tar.zst" >&2
	exit 2
fi
here=$(cd "$(dirname -- "$0")" && pwd)
exec bash "$here/../default/build.sh" "$1" "$here"
