FROM node:20-bookworm-slim AS frontend
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend/ ./
COPY examples/ /src/examples/
RUN npm run build

FROM python:3.11-slim-bookworm
WORKDIR /app
ENV PYTHONUNBUFFERED=1
COPY pyproject.toml ./
COPY engine/ engine/
COPY webapp/ webapp/
COPY workers/ workers/
COPY client/ client/
COPY manage.py ./
COPY examples/ examples/
RUN pip install --no-cache-dir .
COPY --from=frontend /src/frontend/dist frontend/dist
EXPOSE 8000
