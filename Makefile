# Every target uses the virtualenv at .venv/ in the repository root.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PIP_FLAGS := -q --disable-pip-version-check
export PYTHONWARNINGS ?= ignore::DeprecationWarning

.PHONY: install frontend browser run test test-engine test-webapp test-e2e test-frontend lint bench gpu-check clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# Re-installs only when pyproject.toml changed since the last install.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install $(PIP_FLAGS) -e '.[dev]' 2>&1 | grep -v "is ignored: it is neither" || true
	$(BIN)/python -c "import torch, django, captum" && touch $@

install: $(VENV)/.installed frontend

frontend: frontend/dist/index.html

frontend/node_modules/.package-lock.json: frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund --loglevel=error

frontend/dist/index.html: frontend/node_modules/.package-lock.json $(shell find frontend/src frontend/index.html frontend/vite.config.ts -type f 2>/dev/null)
	cd frontend && npm run build --silent

# Debian's Chromium for the end-to-end tests (Playwright cannot download a browser here).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "install Debian's chromium (apt-get install chromium) for the e2e tests"; }

lint: $(VENV)/.installed
	$(BIN)/ruff check engine webapp workers tests bench
	$(BIN)/lint-imports

run: install
	$(BIN)/python -m webapp.devserver

test: install browser
	bash scripts/test.sh

bench: $(VENV)/.installed
	$(BIN)/python bench/validate_speed.py

gpu-check: $(VENV)/.installed
	$(BIN)/python -m pytest -m gpu -q tests

clean:
	rm -rf $(VENV) frontend/node_modules frontend/dist
