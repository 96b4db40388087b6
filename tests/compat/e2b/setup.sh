# setup.sh — sourced by run-suite.sh: the template tests build FROM python:3.12-slim, a
# Docker Hub name this host cannot reach, served by the shared local mirror (../mirror.sh).
# shellcheck source=../mirror.sh
. "$dir/../mirror.sh"
mirror_start python:3.12-slim
export E2B_TEMPLATE_BASE=python:3.12-slim
suite_cleanup() {
	mirror_stop
}
# A template's ready check that never passes fails its build after 8 s, not E2B's 5
# minutes (template-start.test.mjs).
export SANDLOT_READY_TIMEOUT=8
