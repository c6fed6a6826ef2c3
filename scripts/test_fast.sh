#!/usr/bin/env bash
# The fast lane: what a change to the code can be checked against in a few minutes, with no server,
# worker, PostgreSQL, frontend build or browser (the machine's Redis, which the webapp tests' cache
# uses, as `make test` does). Called by `make test-fast`.
#
# Lint and import boundaries, the frontend's type check and unit tests (vitest), and the engine's,
# the webapp's (SQLite default database) and the client's unit tests, less those marked `slow`
# (training example specs to their targets, torch.compile, a light install in a new virtualenv, a
# worker processing an upload). `make test` (scripts/test.sh) runs everything: these, the slow ones,
# the live stack (tests/stack), the PostgreSQL pass, the generated types and the browser tests.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
export PYTHONUNBUFFERED=1
failed=()
step() { echo; echo "==> $*"; }
run() { local name=$1; shift; "$@" || failed+=("$name"); }

step "lint (ruff) and import boundaries (import-linter)"
run ruff $BIN/ruff check engine webapp workers tests bench client deploy
run import-linter $BIN/lint-imports

step "frontend type check (tsc --noEmit) and unit tests (vitest)"
run tsc bash -c "cd frontend && npx --no-install tsc --noEmit"
run vitest bash -c "cd frontend && npx --no-install vitest run"

# One pytest process per core: unlike the live stack's tests, these compute rather than wait.
XDIST=${NETLOOM_TEST_PROCESSES:-2}

step "engine, webapp and client unit tests, not slow (SQLite default database)"
run python $BIN/python -m pytest -q -p no:cacheprovider -n "$XDIST" --durations=10 -m "not slow" \
  tests/engine tests/webapp tests/client tests/test_repository.py

echo
if [ ${#failed[@]} -eq 0 ]; then echo "the fast lane passed (\`make test\` runs the whole suite)"; exit 0; fi
echo "FAILED: ${failed[*]}"; exit 1
