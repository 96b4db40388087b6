# setup.sh — sourced by run-suite.sh: the template tests build FROM python:3.12-slim, a
# Docker Hub name this host cannot reach, served by the shared local mirror (../mirror.sh).
# shellcheck source=../mirror.sh
. "$dir/../mirror.sh"
mirror_start python:3.12-slim
export E2B_TEMPLATE_BASE=python:3.12-slim
suite_cleanup() {
	mirror_stop
}
# The code-interpreter image (R, Java) as template "e2b-ci", when built: the R and Java
# context tests skip loudly without it.
# shellcheck source=../ci-image.sh
. "$dir/../ci-image.sh"
if f=$(ci_image_import e2b-ci); then
	echo "== compat/e2b: the code-interpreter image from $f is template e2b-ci"
	export E2B_CI_TEMPLATE=e2b-ci
fi
