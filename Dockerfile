# One image for every Netloom service (docker-compose.yml): the web server, the Celery workers and
# beat. `docker compose build` or `docker build -t netloom:latest .`; docs/deploy.md.
#
# The Python dependencies are pyproject.toml's own pins, installed from it (never a second list).
# torch comes from PyTorch's wheel index named by TORCH_INDEX: the CPU build by default, as the
# project pins it; for GPU nodes build with a CUDA index, e.g.
#   docker build --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 -t netloom:cuda .
# (pick the CUDA version of https://pytorch.org/get-started/locally/ that the nodes' driver runs).

FROM node:20-bookworm-slim AS frontend
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
# Only the sources: a checkout's node_modules/ or dist/ never reach the build.
COPY frontend/index.html frontend/tsconfig.json frontend/vite.config.ts ./
COPY frontend/src/ src/
# The starter graphs are bundled from ../examples/specs.
COPY examples/ /src/examples/
RUN npm run build

FROM python:3.11-slim-bookworm
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    DJANGO_SETTINGS_MODULE=webapp.settings \
    MEDIA_ROOT=/data/media \
    STATIC_ROOT=/app/var/static
WORKDIR /app

# nginx, the web tier's front (webapp/serve.py): it routes /ws/ to the stream server and the rest
# to the HTTP server on private sockets.
RUN apt-get update \
 && apt-get install -y --no-install-recommends nginx-light \
 && rm -rf /var/lib/apt/lists/*

# Dependencies first (their own layer: a code change does not reinstall them). torch at
# pyproject's version from TORCH_INDEX; then every dependency of pyproject.toml at its pin (pip
# keeps the torch already there: 2.13.0+cpu satisfies torch==2.13.0).
COPY pyproject.toml ./
RUN TORCH_PIN="$(python -c 'import tomllib; print(next(d for d in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"] if d.startswith("torch==")))')" \
 && pip install --index-url "$TORCH_INDEX" "$TORCH_PIN" \
 && python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' > /tmp/requirements.txt \
 && pip install -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt

# The code runs from /app (PYTHONPATH), so settings.BASE_DIR is /app and frontend/dist is found.
COPY manage.py ./
COPY engine/ engine/
COPY webapp/ webapp/
COPY workers/ workers/
# The model server (`python -m serving`, the compose service `serving`).
COPY serving/ serving/
COPY examples/ examples/
# `docker compose run --rm --no-deps worker-train python scripts/gpu_check.py` on a GPU node.
COPY scripts/gpu_check.py scripts/gpu_check.py
COPY --from=frontend /src/frontend/dist frontend/dist

# Static files are part of the image (no write at start); media is the shared volume.
RUN python manage.py collectstatic --noinput --verbosity 0 \
 && useradd --create-home --uid 10001 --user-group netloom \
 && mkdir -p /data/media \
 && chown -R netloom:netloom /data/media

USER netloom
EXPOSE 8000
# docker-compose.yml gives each service its command (web, workers, beat); alone, the image serves.
CMD ["python", "-m", "webapp.serve", "--host", "0.0.0.0", "--port", "8000"]
