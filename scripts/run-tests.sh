#!/usr/bin/env bash
# Sets everything up and runs every test: unit and end-to-end tests with pytest, and the
# FileCheck tests of tests/lit through lit (driven from tests/unit/test_lit.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# One worker per CPU (pytest-xdist); module-scoped fixtures are built once per worker. An idle
# worker takes queued tests from the other (worksteal), so the slow ones do not finish alone;
# the slowest 25 are listed, to keep the run well inside CI's limit.
# A test skipped for a tool scripts/setup.sh installs fails instead (tests/conftest.py).
export GLOWMLIR_REQUIRE_TOOLS=1
exec .venv/bin/python -m pytest -q -n auto --dist worksteal --durations=25 "$@"
