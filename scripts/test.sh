#!/usr/bin/env bash
# `make test`: lint, then every suite in one pytest session, phase by phase (unit, model, e2e, api,
# browser, integration, swarm: tests/phases.py), which ends with the time of each phase and
# pytest's 20 slowest tests. Two workers at once (pytest-xdist; tests/parallel.py says how the
# work is shared): TEST_WORKERS=0 runs it in one process. Arguments go to pytest (PYTEST_ARGS="-x").
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
echo "== [$(date -u +%T)] lint: ruff and mypy =="
make -s lint || exit $?
export GAIAMESH_LINT_S=$((SECONDS - start))
echo "== [$(date -u +%T)] pytest: every suite =="
exec .venv/bin/pytest -ra --durations=20 -n "${TEST_WORKERS:-2}" "$@"
