#!/usr/bin/env bash
# The bench-only virtualenv for the serving library comparison (bench/serving_libraries.py,
# docs/decisions/0015-serving-library.md): the candidates at exact pins, apart from the project's
# dependencies (never in pyproject.toml). torch's CPU wheel at the project's version.
#
#     bench/serving_venv.sh [FOLDER]        # default bench/.venv-serving
set -euo pipefail
cd "$(dirname "$0")/.."
V=${1:-bench/.venv-serving}
[ -x "$V/bin/python" ] || python3.11 -m venv "$V"
"$V/bin/pip" install -q --disable-pip-version-check torch==2.13.0 \
  kserve==0.21.0 litserve==0.2.19 "ray[serve]==2.60.0" bentoml==1.4.40 2>&1 | grep -v "is ignored" || true
