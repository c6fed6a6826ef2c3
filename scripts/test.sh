#!/usr/bin/env bash
# Runs every test this machine can run. Called by `make test` (which installs first).
# The webapp suite runs twice: on PostgreSQL when one is reachable, and on the SQLite default.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
export PYTHONUNBUFFERED=1
export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
PG_URL=${NETLOOM_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}
failed=()
step() { echo; echo "==> $*"; }
run() { local name=$1; shift; "$@" || failed+=("$name"); }

# Services the tests talk to. CI's machine starts them; start Redis here if it is not up.
if ! $BIN/python -c "import redis,os; redis.Redis.from_url(os.environ['REDIS_URL']).ping()" 2>/dev/null; then
  if command -v redis-server >/dev/null; then
    step "starting a private Redis on 127.0.0.1:6379"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
    sleep 1
  else
    echo "Redis is not reachable at $REDIS_URL and redis-server is not installed (apt-get install redis-server)"; exit 1
  fi
fi
pg_ok=0
$BIN/python scripts/pg_reachable.py "$PG_URL" 2>/dev/null && pg_ok=1

step "lint (ruff) and import boundaries (import-linter)"
run ruff $BIN/ruff check engine webapp workers tests bench client deploy
run import-linter $BIN/lint-imports

# Three pytest processes on two cores: much of the stack tests' time is waiting (a step delay, a
# lease running out, a server starting), and a third process fills it (SQLite pass 10:00 -> 7:50).
XDIST=${NETLOOM_TEST_PROCESSES:-3}

step "engine, webapp, the live stack and the rest (SQLite default database)"
run python-sqlite $BIN/python -m pytest -q -p no:cacheprovider -n "$XDIST" --durations=15 --ignore=tests/e2e tests

if [ $pg_ok = 1 ]; then
  step "webapp and the live stack on PostgreSQL ($PG_URL)"
  # Tests marked one_database (Redis outages, multi-process ranks, fine-tuning and export maths on a
  # real stack) check nothing the database kind changes: the SQLite pass above runs them.
  DATABASE_URL=$PG_URL run python-postgres $BIN/python -m pytest -q -p no:cacheprovider -n "$XDIST" --durations=15 \
    -m "not one_database" tests/webapp tests/stack
else
  echo "PostgreSQL is not reachable at $PG_URL: the webapp suite ran on SQLite only"
fi

step "generated wire types are current (frontend/src/api/*.gen.ts; \`make gen-types\` rewrites them)"
# Regenerates into a temporary folder from the engine and `manage.py spectacular` (no server) and
# compares: a model, serializer or op changed without regenerating fails here.
check_generated() {
  local tmp file stale=0
  if [ ! -d frontend/scripts/codegen/node_modules ]; then
    (cd frontend/scripts/codegen && npm ci --no-audit --no-fund --loglevel=error) || return 1
  fi
  tmp=$(mktemp -d)
  if ! PYTHON=$BIN/python node frontend/scripts/gen-types.mjs --out "$tmp" >/dev/null; then rm -rf "$tmp"; return 1; fi
  for file in spec.gen.ts api.gen.ts; do
    if ! diff -u "frontend/src/api/$file" "$tmp/$file" >"$tmp/$file.diff"; then
      echo "frontend/src/api/$file is stale: run \`make gen-types\` and commit the result"
      head -n 40 "$tmp/$file.diff"
      stale=1
    fi
  done
  rm -rf "$tmp"
  return $stale
}
run generated-types check_generated

step "generated client types are current (client/netloom/api_types.py; \`make gen-client-types\` rewrites it)"
# The Python client's TypedDicts, from `manage.py spectacular` (no server): stale -> the diff, fail.
run client-types $BIN/python client/tools/gen_types.py --check

step "frontend unit tests (vitest) and type check"
run vitest bash -c "cd frontend && npx --no-install vitest run && npx --no-install tsc --noEmit"

step "end-to-end tests in Debian's Chromium"
if [ -x /usr/bin/chromium ]; then
  # Two processes, each with its own server, worker and browser (session fixtures): 5:17 -> 2:28.
  run e2e $BIN/python -m pytest -q -p no:cacheprovider -n 2 --durations=15 tests/e2e
else
  echo "chromium is not installed: the e2e tests cannot run (apt-get install chromium)"; failed+=(e2e)
fi

echo
if [ ${#failed[@]} -eq 0 ]; then echo "all test suites passed"; exit 0; fi
echo "FAILED suites: ${failed[*]}"; exit 1
