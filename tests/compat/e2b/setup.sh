# setup.sh — sourced by run-suite.sh: the template tests build FROM python:3.12-slim, a
# Docker Hub name this host cannot reach, served by the shared local mirror (../mirror.sh).
# The code-interpreter image (`make images-code-interpreter`, not part of `make images`)
# is imported when it is built; test/rich.test.mjs needs it and is skipped without it.
# shellcheck source=../mirror.sh
. "$dir/../mirror.sh"
mirror_start python:3.12-slim
export E2B_TEMPLATE_BASE=python:3.12-slim
# shellcheck source=../ci-image.sh
. "$dir/../ci-image.sh" "compat/e2b's test/rich.test.mjs (figures, charts, DataFrames) is SKIPPED"
suite_cleanup() {
	mirror_stop
}
# A template's ready check that never passes fails its build after 8 s, not E2B's 5
# minutes (template-start.test.mjs).
export SANDLOT_READY_TIMEOUT=8
