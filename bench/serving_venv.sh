#!/usr/bin/env bash
# The bench-only virtualenv for the serving library comparison (docs/decisions/0015-serving-library.md).
# It sees the project's .venv (torch, numpy, ...) through a .pth file and adds the candidates only.
set -euo pipefail
cd "$(dirname "$0")/.."
V=bench/.venv-serving
if [ ! -x "$V/bin/python" ]; then
  python3.11 -m venv "$V"
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$site" > "$V/lib/python3.11/site-packages/project-venv.pth"
fi
"$V/bin/pip" install -q --disable-pip-version-check kserve==0.21.0 litserve==0.2.19 2>&1 | grep -v "is ignored" || true
