# setup.sh — sourced by run-suite.sh: Image.debianSlim('3.12')'s `FROM
# python:3.12.10-slim-bookworm` (the SDK pins the patch release) and create({ image:
# 'python:3.12-slim' }) pull the stand-in image from a local registry that `sandlot
# serve` uses as its --registry-mirror (tests/compat/mirror.sh).
# shellcheck source=../mirror.sh
. "$top/tests/compat/mirror.sh"
mirror_start python:3.12.10-slim-bookworm python:3.12-slim
suite_cleanup() { mirror_stop; }
