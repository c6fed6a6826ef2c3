"""The metric store against the path it replaced and against MLflow's tracking server.

Everything is measured side by side in one run, baseline and candidate alternated, on a database
of its own (PostgreSQL `netloom_bench` on 127.0.0.1:5432, created and dropped; SQLite: a file in
a temporary folder), and the figures are ratios or distributions:

- ingest (PostgreSQL): `--points` metric events of one key through `events_record` (the call the
  worker's recorder makes, batches of 5000 events like its _BATCH_MAX) against the write it
  replaced (Django bulk_create, update_conflicts on run/key/step, into the old row-per-point
  table, made here as bench_legacy_metricpoint), batch by batch alternated into two runs:
  points/s of each.
- query (both databases): `GET /api/runs/<id>/metrics/?keys=train/loss&max_points=1000` on the
  `--points` series end to end over HTTP (uvicorn, one process, an API token) against the old
  read path on the same points in the old table (every point loaded into Python and downsampled,
  run in this process: no HTTP, so the baseline is flattered); a zoomed window of 1000 steps
  (every stored point comes back); and `GET /api/runs/compare/?ids=<20 runs>&max_points=1000`
  on `--compare-runs` runs of `--compare-points` points, new against old. p50/p95 of `--repeats`
  requests (old path: fewer).
- MLflow (PostgreSQL, `--mlflow`): its tracking server (bench/.venv-mlflow, made here on first
  use; database `mlflow_bench`, created and dropped; one worker like ours) takes `--mlflow-points`
  points through `runs/log-batch` (1000 metrics a request, its limit) chunk by chunk alternated
  with the same points through Netloom's write path (here under 1,000 points/s: a million would
  take half an hour, so the rest of the `--points` series goes into its metrics table by SQL);
  then a 1000-point history of the `--points` series read back from each, alternated: MLflow's
  sampled history (`get-history-bulk-interval`, what its UI charts use) against
  `/metrics/?max_points=1000`.

Results go to bench/results.json (committed: the last full run; `make bench` rewrites it) under
"metric_store", and the table between the metric-store markers of docs/benchmarks.md is
rewritten from them.

    .venv/bin/python bench/metric_store.py [--db postgres|sqlite|both] [--points 1000000]
        [--compare-runs 20] [--compare-points 100000] [--repeats 30] [--mlflow [--mlflow-points 100000]]
        [--no-docs]
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results.json"
DOCS = ROOT / "docs" / "benchmarks.md"
MLFLOW_VENV = ROOT / "bench" / ".venv-mlflow"
MLFLOW_PINS = ["mlflow==3.17.2", "psycopg2-binary==2.9.11"]
PG = "postgres://postgres@127.0.0.1:5432"
KEY = "train/loss"
BATCH_EVENTS = 5000  # workers/recorder.py _BATCH_MAX


def value_at(step: int) -> float:
    """A loss-like curve with noise and a spike every 100,003 steps."""
    if step % 100_003 == 0:
        return 25.0
    return 2.0 / (1 + step / 20_000) + 0.05 * math.sin(step * 0.37) + 0.01 * ((step * 7919) % 13)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(sql)


def wait_http(port: int, path: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", path)
            conn.getresponse().read()
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"nothing answered on port {port} within {timeout}s")


class Http:
    """One keep-alive connection; get() -> (seconds, JSON)."""

    def __init__(self, port: int, headers: dict[str, str] | None = None) -> None:
        self.port, self.headers = port, headers or {}
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def call(self, method: str, path: str, body: Any = None) -> tuple[float, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, **({"Content-Type": "application/json"} if data else {})}
        for attempt in (1, 2):
            started = time.perf_counter()
            try:
                self.conn.request(method, path, body=data, headers=headers)
                answer = self.conn.getresponse()
                raw = answer.read()
                break
            except (http.client.RemoteDisconnected, ConnectionError):
                # The server closed an idle keep-alive connection: open a new one, time that try.
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
                if attempt == 2:
                    raise
        elapsed = time.perf_counter() - started
        if answer.status >= 400:
            raise RuntimeError(f"{method} {path}: {answer.status} {raw[:300]!r}")
        return elapsed, json.loads(raw)


def distribution(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {"n": len(ordered), "p50_ms": statistics.median(ordered) * 1000, "p95_ms": p95 * 1000}


# --- the Netloom side (runs inside a Django set up on the bench database) ---------------------------------


def django_up(database_url: str, media: Path) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    os.environ["MEDIA_ROOT"] = str(media)
    os.environ["NETLOOM_CHANNEL_LAYER"] = "memory"
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from webapp.process_gc import garbage_collector_settle

    garbage_collector_settle()  # as each worker process does once set up (webapp/celery.py)


def world() -> tuple[Any, Callable[[], Any], str]:
    """(user, make_run(), API token) on the bench database."""
    from django.contrib.auth import get_user_model

    from webapp.accounts.services.memberships import membership_add
    from webapp.accounts.services.teams import team_create
    from webapp.accounts.services.tokens import token_create
    from webapp.datasets.services import dataset_builtin_create
    from webapp.graphs.services import graph_create
    from webapp.runs.services import run_create

    team = team_create(name="Bench")
    user = get_user_model().objects.create_user(username="bench", password="pw")
    membership_add(team=team, user=user, role="admin")
    dataset = dataset_builtin_create(
        team=team, name="iris", builtin="iris", options={}, created_by=user
    )
    spec = {
        "version": 1,
        "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
        "nodes": [{"id": "fc", "op": "Linear", "params": {"out_features": 3}, "inputs": ["x"]}],
        "outputs": ["fc"],
    }
    revision = graph_create(team=team, name="mlp", spec=spec, created_by=user).revisions.get(
        number=1
    )
    _, token = token_create(user=user, name="bench")

    def make_run() -> Any:
        return run_create(
            user=user, team=team, graph_revision=revision, dataset=dataset, config={"epochs": 1}
        )

    return user, make_run, token


def metric_events(first: int, last: int) -> list[dict[str, Any]]:
    return [
        {"type": "metric", "step": s, "epoch": s / 1000, "values": {KEY: value_at(s)}}
        for s in range(first, last + 1)
    ]


_LEGACY: Any = None


def legacy_model() -> Any:
    """The row-per-point table the metric store replaced (one row per point, unique run/key/step,
    an index on run/seq), made in the bench database: the baseline's write and read paths."""
    global _LEGACY
    if _LEGACY is not None:
        return _LEGACY
    from django.db import connection, models

    class LegacyMetricPoint(models.Model):
        run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="+")
        key = models.CharField(max_length=100)
        step = models.BigIntegerField()
        epoch = models.FloatField()
        value = models.FloatField(null=True)
        seq = models.BigIntegerField()

        class Meta:
            app_label = "runs"
            db_table = "bench_legacy_metricpoint"
            managed = False
            constraints = [
                models.UniqueConstraint(fields=["run", "key", "step"], name="bench_legacy_unique")
            ]
            indexes = [models.Index(fields=["run", "seq"], name="bench_legacy_run_seq")]

    with connection.schema_editor() as editor:
        editor.create_model(LegacyMetricPoint)
    _LEGACY = LegacyMetricPoint
    return _LEGACY


def legacy_record(*, run_id: int, events: list[dict[str, Any]]) -> None:
    """The metric part of events_record as it was before the metric store (the ingest baseline)."""
    from django.db import transaction
    from django.db.models import F

    from webapp.runs.models import Run
    from webapp.runs.stream.events import finite_or_none

    point = legacy_model()
    with transaction.atomic():
        Run.objects.filter(pk=run_id).update(event_seq=F("event_seq") + len(events))
        last_seq, latest_metrics = (
            Run.objects.filter(pk=run_id).values_list("event_seq", "latest_metrics").get()
        )
        first_seq = last_seq - len(events) + 1
        points: dict[tuple[str, int], Any] = {}
        latest: dict[str, float | None] = {}
        for offset, event in enumerate(events):
            step, epoch = int(event["step"]), float(event["epoch"])
            values = {str(k): finite_or_none(v) for k, v in event["values"].items()}
            for key, value in values.items():
                points[(key, step)] = point(
                    run_id=run_id,
                    key=key,
                    step=step,
                    epoch=epoch,
                    value=value,
                    seq=first_seq + offset,
                )
                latest[key] = value
        point.objects.bulk_create(
            list(points.values()),
            update_conflicts=True,
            unique_fields=["run", "key", "step"],
            update_fields=["epoch", "value", "seq"],
        )
        Run.objects.filter(pk=run_id).update(latest_metrics={**(latest_metrics or {}), **latest})


def downsample(
    points: list[tuple[int, float, float | None]], max_points: int
) -> list[tuple[int, float, float | None]]:
    """The old read path's downsampling (webapp/runs/selectors.py before the metric store): the
    first, the last, and each bucket of consecutive points' lowest and highest value."""
    if len(points) <= max_points:
        return points
    if max_points < 3:
        return [points[0], points[-1]][: max(max_points, 1)]
    first, middle, last = points[0], points[1:-1], points[-1]
    buckets = max((max_points - 2) // 2, 1)
    size = len(middle) / buckets
    kept: list[tuple[int, float, float | None]] = [first]
    for b in range(buckets):
        bucket = middle[int(b * size) : int((b + 1) * size)]
        finite = [p for p in bucket if p[2] is not None]
        if not finite:
            if bucket:
                kept.append(bucket[0])
            continue
        low = min(finite, key=lambda p: p[2])  # type: ignore[arg-type, return-value]
        high = max(finite, key=lambda p: p[2])  # type: ignore[arg-type, return-value]
        kept.extend(sorted({low, high}, key=lambda p: p[0]))
    kept.append(last)
    return kept[:max_points] if len(kept) > max_points else kept


def legacy_query(
    run_ids: list[int], max_points: int, from_step: int | None = None, to_step: int | None = None
) -> Callable[[], float]:
    """The old read path, in this process: every point of each run's series loaded into Python,
    downsampled, and the answer made JSON (no HTTP, so a lower bound of what it cost)."""
    point = legacy_model()

    def call() -> float:
        started = time.perf_counter()
        runs = []
        for run_id in run_ids:
            rows = point.objects.filter(run_id=run_id, key=KEY)
            if from_step is not None:
                rows = rows.filter(step__gte=from_step, step__lte=to_step)
            kept = downsample(
                list(rows.order_by("step").values_list("step", "epoch", "value")), max_points
            )
            runs.append(
                {
                    "run": run_id,
                    "series": {
                        KEY: {
                            "step": [p[0] for p in kept],
                            "epoch": [p[1] for p in kept],
                            "value": [p[2] for p in kept],
                        }
                    },
                }
            )
        json.dumps({"runs": runs}).encode()
        return time.perf_counter() - started

    return call


def ingest(points: int, new_run: int, old_run: int | None) -> dict[str, Any]:
    """Write `points` steps into new_run (events_record) and old_run (the old write), alternated."""
    from webapp.runs.stream.events import events_record

    spent = {"new": 0.0, "old": 0.0}
    for first in range(1, points + 1, BATCH_EVENTS):
        events = metric_events(first, min(points, first + BATCH_EVENTS - 1))
        jobs: list[tuple[str, Callable[[], Any]]] = [
            ("new", lambda e=events: events_record(run_id=new_run, events=e))
        ]
        if old_run is not None:
            jobs.append(("old", lambda e=events: legacy_record(run_id=old_run, events=e)))
        if (first // BATCH_EVENTS) % 2:
            jobs.reverse()
        for name, job in jobs:
            started = time.perf_counter()
            job()
            spent[name] += time.perf_counter() - started
    out: dict[str, Any] = {"points": points, "new_points_per_s": points / spent["new"]}
    if old_run is not None:
        out["old_points_per_s"] = points / spent["old"]
        out["ratio"] = out["new_points_per_s"] / out["old_points_per_s"]
    return out


def netloom_query(
    run_ids: list[int], max_points: int, from_step: int | None = None, to_step: int | None = None
) -> Callable[[], float]:
    """The metric store's read path in this process, made JSON like the old one: the two side by
    side without HTTP (the ratio's other half; the target is the HTTP figure)."""
    from webapp.metrics.selectors import runs_metric_series
    from webapp.runs.models import Run

    def call() -> float:
        started = time.perf_counter()
        runs = list(Run.objects.filter(pk__in=run_ids))
        answer = runs_metric_series(
            runs=runs, keys=[KEY], max_points=max_points, from_step=from_step, to_step=to_step
        )
        json.dumps({"runs": answer}).encode()
        return time.perf_counter() - started

    return call


def copy_points(source: int, target: int, last_step: int, *, legacy: bool) -> None:
    """Points 1..last_step of `source`'s series into `target`: through the metric store's import,
    or (legacy) by SQL within the old row-per-point table."""
    from django.db import connection, transaction

    from webapp.metrics.series import metric_series_read
    from webapp.metrics.store import metric_points_import

    with transaction.atomic():
        if legacy:
            table = legacy_model()._meta.db_table
            with connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {table} (run_id, key, step, epoch, value, seq) "
                    f"SELECT %s, key, step, epoch, value, seq FROM {table} WHERE run_id = %s AND step <= %s",
                    [target, source, last_step],
                )
            return
        points = metric_series_read(series=[(source, KEY)], from_step=1, to_step=last_step)[
            (source, KEY)
        ]
        metric_points_import(
            run_id=target, key=KEY, points=((s, e, v, i) for i, (s, e, v) in enumerate(points, 1))
        )


def serve(port: int, database_url: str, media: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "MEDIA_ROOT": str(media),
        "NETLOOM_CHANNEL_LAYER": "memory",
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "LOG_LEVEL": "WARNING",
    }
    return subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "uvicorn"),
            "webapp.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--no-access-log",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )


def stop(server: subprocess.Popen[bytes]) -> None:
    """End a server this script started and whatever it started (its own process group)."""
    import signal

    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(30)


def alternate(
    calls: dict[str, Callable[[], float]], repeats: dict[str, int]
) -> dict[str, dict[str, float]]:
    """Call each in turn (order flipped every round) until each has its repeats; distributions."""
    seconds: dict[str, list[float]] = {name: [] for name in calls}
    for name in calls:  # one warm-up each
        calls[name]()
    for round_ in range(max(repeats.values())):
        names = [n for n in calls if round_ < repeats[n]]
        for name in names if round_ % 2 == 0 else reversed(names):
            seconds[name].append(calls[name]())
    return {name: distribution(values) for name, values in seconds.items()}


def netloom_bench(db: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    media = tmp / "media"
    if db == "postgres":
        database = f"netloom_bench_{os.getpid()}"
        pg_admin(f"DROP DATABASE IF EXISTS {database}")
        pg_admin(f"CREATE DATABASE {database}")
        url = f"{PG}/{database}"
    else:
        url = f"sqlite:///{tmp / 'bench.sqlite3'}"
    django_up(url, media)
    results: dict[str, Any] = {"db": db}
    server = None
    try:
        _, make_run, token = world()
        big, old_big = make_run(), make_run()
        print(
            f"[{db}] writing {args.points} points (new and old write paths alternated) ...",
            flush=True,
        )
        results["ingest"] = ingest(args.points, big.pk, old_big.pk)
        print(f"[{db}] ingest {results['ingest']}", flush=True)
        compare_new, compare_old = [], []
        copying = time.perf_counter()
        for _ in range(args.compare_runs):
            run = make_run()
            copy_points(big.pk, run.pk, args.compare_points, legacy=False)
            compare_new.append(run.pk)
            if not args.no_old_compare:
                run = make_run()
                copy_points(old_big.pk, run.pk, args.compare_points, legacy=True)
                compare_old.append(run.pk)
        print(f"[{db}] {args.compare_runs} compare runs of {args.compare_points:,} points copied "
              f"({time.perf_counter() - copying:.0f} s)", flush=True)
        from django.db import connections

        connections.close_all()
        port = free_port()
        server = serve(port, url, media)
        wait_http(port, "/api/runs/config-schema/")
        client = Http(port, {"Authorization": f"Bearer {token}"})
        base = f"?keys={urllib.parse.quote(KEY)}&max_points=1000"
        window_from = args.points // 2
        shapes: dict[str, int] = {}

        def get(path: str, shape: str | None = None) -> Callable[[], float]:
            def call() -> float:
                elapsed, answer = client.call("GET", path)
                if shape:
                    series = answer["series"] if "series" in answer else answer["runs"][0]["series"]
                    shapes[shape] = len(series[KEY]["step"])
                return elapsed

            return call

        few = max(3, args.repeats // 10)
        results["query"] = alternate(
            {
                "new": get(f"/api/runs/{big.pk}/metrics/{base}", "overview"),
                "store": netloom_query([big.pk], 1000),
                "old": legacy_query([old_big.pk], 1000),
            },
            {"new": args.repeats, "store": args.repeats, "old": few},
        )
        results["window"] = alternate(
            {
                "new": get(
                    f"/api/runs/{big.pk}/metrics/{base}&from_step={window_from}&to_step={window_from + 999}",
                    "window",
                ),
                "store": netloom_query([big.pk], 1000, window_from, window_from + 999),
                "old": legacy_query([old_big.pk], 1000, window_from, window_from + 999),
            },
            {"new": args.repeats, "store": args.repeats, "old": few},
        )
        ids_new = ",".join(map(str, compare_new))
        compare_calls = {
            "new": get(f"/api/runs/compare/{base}&ids={ids_new}", "compare"),
            "store": netloom_query(compare_new, 1000),
        }
        if compare_old:
            compare_calls["old"] = legacy_query(compare_old, 1000)
        results["compare"] = alternate(compare_calls, {"new": args.repeats, "store": args.repeats, "old": few})
        results["points_returned"] = shapes
        print(
            f"[{db}] query {json.dumps({k: results[k] for k in ('query', 'window', 'compare')})}",
            flush=True,
        )
        if db == "postgres" and args.mlflow:
            results["mlflow"] = mlflow_bench(args, make_run, client, tmp, big.pk)
    finally:
        if server is not None:
            stop(server)
        from django.db import connections

        connections.close_all()
        if db == "postgres":
            pg_admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    return results


# --- MLflow ----------------------------------------------------------------------------------------------


def mlflow_env() -> Path:
    """bench/.venv-mlflow with MLflow and psycopg2 (made once; never a project dependency)."""
    python = MLFLOW_VENV / "bin" / "python"
    if not (MLFLOW_VENV / "bin" / "mlflow").exists():
        subprocess.run([sys.executable, "-m", "venv", str(MLFLOW_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *MLFLOW_PINS], check=True)
    return MLFLOW_VENV / "bin" / "mlflow"


def mlflow_fill(run_uuid: int | str, first: int, last: int) -> None:
    """Steps first..last of the bench curve straight into MLflow's metrics table (SQL), for the read."""
    import psycopg

    with psycopg.connect(f"{PG}/mlflow_bench", autocommit=True) as conn:
        conn.execute(
            "INSERT INTO metrics (key, value, timestamp, step, is_nan, run_uuid) "
            "SELECT %s, CASE WHEN s %% 100003 = 0 THEN 25.0 ELSE 2.0 / (1 + s / 20000.0) + 0.05 * sin(s * 0.37) "
            "+ 0.01 * ((s * 7919) %% 13) END, s, s, false, %s FROM generate_series(%s::bigint, %s::bigint) AS s",
            [KEY, run_uuid, first, last],
        )


def mlflow_bench(
    args: argparse.Namespace,
    make_run: Callable[[], Any],
    netloom: Http,
    tmp: Path,
    netloom_series: int,
) -> dict[str, Any]:
    from webapp.runs.stream.events import events_record

    mlflow = mlflow_env()
    pg_admin("DROP DATABASE IF EXISTS mlflow_bench")
    pg_admin("CREATE DATABASE mlflow_bench")
    port = free_port()
    server = subprocess.Popen(
        [
            str(mlflow),
            "server",
            "--backend-store-uri",
            "postgresql+psycopg2://postgres@127.0.0.1:5432/mlflow_bench",
            "--default-artifact-root",
            str(tmp / "mlflow-artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=tmp,
        stdout=subprocess.DEVNULL,
        stderr=(tmp / "mlflow.log").open("wb"),
        start_new_session=True,
    )
    try:
        wait_http(port, "/health", timeout=180)
        client = Http(port)
        _, experiment = client.call("POST", "/api/2.0/mlflow/experiments/create", {"name": "bench"})
        _, created = client.call(
            "POST",
            "/api/2.0/mlflow/runs/create",
            {"experiment_id": experiment["experiment_id"], "start_time": 0},
        )
        mlflow_run = created["run"]["info"]["run_id"]
        ours = make_run()
        spent = {"mlflow": 0.0, "netloom": 0.0}
        chunk = 50_000
        written = min(args.mlflow_points, args.points)
        print(f"[mlflow] writing {written} points into each, alternated ...", flush=True)
        for index, first in enumerate(range(1, written + 1, chunk)):
            last = min(written, first + chunk - 1)

            def to_mlflow(first: int = first, last: int = last) -> None:
                for start in range(first, last + 1, 1000):
                    metrics = [
                        {"key": KEY, "value": value_at(s), "timestamp": s, "step": s}
                        for s in range(start, min(last, start + 999) + 1)
                    ]
                    client.call(
                        "POST",
                        "/api/2.0/mlflow/runs/log-batch",
                        {"run_id": mlflow_run, "metrics": metrics},
                    )

            def to_netloom(first: int = first, last: int = last) -> None:
                for start in range(first, last + 1, BATCH_EVENTS):
                    events_record(
                        run_id=ours.pk,
                        events=metric_events(start, min(last, start + BATCH_EVENTS - 1)),
                    )

            jobs = [("mlflow", to_mlflow), ("netloom", to_netloom)]
            for name, job in jobs if index % 2 == 0 else reversed(jobs):
                started = time.perf_counter()
                job()
                spent[name] += time.perf_counter() - started
        ingest = {name: written / spent[name] for name in spent}
        if written < args.points:  # the rest of the series for the read, straight into its table
            mlflow_fill(mlflow_run, written + 1, args.points)
        key = urllib.parse.quote(KEY)
        shapes: dict[str, int] = {}

        def read_mlflow() -> float:
            elapsed, answer = client.call(
                "GET",
                f"/ajax-api/2.0/mlflow/metrics/get-history-bulk-interval?run_ids={mlflow_run}"
                f"&metric_key={key}&max_results=1000",
            )
            shapes["mlflow"] = len(answer.get("metrics", []))
            return elapsed

        def read_netloom() -> float:
            elapsed, answer = netloom.call(
                "GET", f"/api/runs/{netloom_series}/metrics/?keys={key}&max_points=1000"
            )
            shapes["netloom"] = len(answer["series"][KEY]["step"])
            return elapsed

        reads = alternate(
            {"mlflow": read_mlflow, "netloom": read_netloom},
            {"mlflow": max(5, args.repeats // 3), "netloom": max(5, args.repeats // 3)},
        )
        out = {
            "points": args.points,
            "ingest_points": written,
            "ingest_points_per_s": ingest,
            "ingest_ratio": ingest["netloom"] / ingest["mlflow"],
            "read": reads,
            "read_ratio_p50": reads["mlflow"]["p50_ms"] / reads["netloom"]["p50_ms"],
            "points_returned": shapes,
            "mlflow_version": MLFLOW_PINS[0],
        }
        print(f"[mlflow] {json.dumps(out)}", flush=True)
        return out
    except Exception:
        print((tmp / "mlflow.log").read_text()[-3000:], file=sys.stderr)
        raise
    finally:
        stop(server)
        pg_admin("DROP DATABASE IF EXISTS mlflow_bench WITH (FORCE)")


# --- the table -------------------------------------------------------------------------------------------

START, END = "<!-- metric-store:start -->", "<!-- metric-store:end -->"


def table(results: dict[str, Any]) -> str:
    rows = ["| measure | baseline | figure | ratio | target |", "|---|---|---|---|---|"]
    for db, label, target in (("postgres", "PostgreSQL", 100), ("sqlite", "SQLite", 200)):
        r = results.get(db)
        if not r:
            continue
        q, w, c = r["query"], r["window"], r["compare"]
        n = r["ingest"]["points"]
        # Ratios in process against in process (the old path has no server any more); the
        # figure against the target is the new path end to end over HTTP.
        rows.append(
            f"| {label}: {n:,}-point series to 1,000 points, HTTP | old path (every point into Python) "
            f"p95 {q['old']['p95_ms']:.0f} ms in process | p50 {q['new']['p50_ms']:.1f} ms, p95 {q['new']['p95_ms']:.1f} ms "
            f"(in process p95 {q['store']['p95_ms']:.1f}) | {q['old']['p95_ms'] / q['store']['p95_ms']:.0f}x faster | "
            f"p95 <= {target} ms |"
        )
        rows.append(
            f"| {label}: zoomed window of 1,000 steps ({r['points_returned'].get('window')} points, all stored), HTTP | "
            f"old path p95 {w['old']['p95_ms']:.1f} ms in process | p95 {w['new']['p95_ms']:.1f} ms "
            f"(in process {w['store']['p95_ms']:.1f}) | {w['old']['p95_ms'] / w['store']['p95_ms']:.1f}x | every stored point |"
        )
        old = c.get("old")  # absent with --no-old-compare
        rows.append(
            f"| {label}: compare, {results['args']['compare_runs']} runs x {results['args']['compare_points']:,} "
            f"points, one request, HTTP | "
            + (f"old path p95 {old['p95_ms']:.0f} ms in process" if old else "(old path not run)")
            + f" | p50 {c['new']['p50_ms']:.1f} ms, "
            f"p95 {c['new']['p95_ms']:.1f} ms (in process {c['store']['p95_ms']:.1f}) | "
            + (f"{old['p95_ms'] / c['store']['p95_ms']:.0f}x faster" if old else "-")
            + f" | <= {300 if results['args']['compare_runs'] <= 20 else 500} ms |"
        )
        if db == "sqlite":
            i = r["ingest"]
            rows.append(
                f"| SQLite: ingest through events_record, {n:,} points | old write (bulk_create) "
                f"{i['old_points_per_s']:,.0f} points/s | {i['new_points_per_s']:,.0f} points/s | "
                f"{i['ratio']:.2f}x | (target is PostgreSQL's) |"
            )
        if db == "postgres":
            i = r["ingest"]
            rows.append(
                f"| PostgreSQL: ingest through events_record, {n:,} points | old write (bulk_create) "
                f"{i['old_points_per_s']:,.0f} points/s | {i['new_points_per_s']:,.0f} points/s | "
                f"{i['ratio']:.2f}x | >= 50,000 points/s |"
            )
            m = r.get("mlflow")
            if m:
                rows.append(
                    f"| PostgreSQL: {m['ingest_points']:,} points, MLflow log-batch vs events_record (alternated) | "
                    f"{m['mlflow_version']} {m['ingest_points_per_s']['mlflow']:,.0f} points/s | "
                    f"{m['ingest_points_per_s']['netloom']:,.0f} points/s | {m['ingest_ratio']:.1f}x | "
                    "Netloom ahead |"
                )
                rows.append(
                    f"| PostgreSQL: 1,000-point history of {m['points']:,}, HTTP | MLflow "
                    f"get-history-bulk-interval p50 {m['read']['mlflow']['p50_ms']:.0f} ms | "
                    f"p50 {m['read']['netloom']['p50_ms']:.1f} ms | {m['read_ratio_p50']:.0f}x faster | "
                    "Netloom ahead |"
                )
    return "\n".join(rows)


def write_docs(results: dict[str, Any]) -> None:
    text = DOCS.read_text()
    block = f"{START}\n{table(results)}\n\nMeasured {results['when']} with `{results['command']}`.\n{END}"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip() + "\n\n## Metric store\n\n" + block + "\n"
    DOCS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--compare-runs", type=int, default=20)
    parser.add_argument("--compare-points", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument(
        "--mlflow", action="store_true", help="also MLflow's tracking server (PostgreSQL)"
    )
    parser.add_argument(
        "--mlflow-points",
        type=int,
        default=100_000,
        help="points written through MLflow's log-batch (the rest of --points goes in by SQL)",
    )
    parser.add_argument(
        "--no-old-compare",
        action="store_true",
        help="compare the new path only (no old-table copies: what 100 runs x 100,000 points needs)",
    )
    parser.add_argument(
        "--no-docs",
        action="store_true",
        help="print only: neither bench/results.json nor the table in docs/benchmarks.md",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # one database per process: Django is set up once per process
        tmp = Path(tempfile.mkdtemp(prefix="metric-bench-"))
        try:
            out = netloom_bench(args.child, args, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print("RESULT " + json.dumps(out), flush=True)
        return
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": "python " + " ".join(["bench/metric_store.py", *sys.argv[1:]]),
        "args": {k: v for k, v in vars(args).items() if k != "child"},
    }
    for db in ["postgres", "sqlite"] if args.db == "both" else [args.db]:
        child = subprocess.run(
            [sys.executable, __file__, *sys.argv[1:], "--child", db],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        for line in child.stdout.splitlines():
            if line.startswith("RESULT "):
                results[db] = json.loads(line[len("RESULT ") :])
            else:
                print(line, flush=True)
    print(table(results))
    if args.no_docs:  # a trial run: the recorded figures stay those of the last full run
        return
    stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    stored["metric_store"] = results
    RESULTS.write_text(json.dumps(stored, indent=2) + "\n")
    write_docs(results)


if __name__ == "__main__":
    main()
