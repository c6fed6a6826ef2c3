"""The runs list over many runs: a page of 50 ordered by a result and filtered by results and config.

Seeds `--runs` runs (100,000 by default) through the ORM into a database of its own (PostgreSQL
`netloom_bench_runs` on 127.0.0.1:5432, created and dropped, then VACUUM ANALYZE as autovacuum
would; SQLite: a file in a temporary folder, no ANALYZE, as the service runs it),
with final metrics, a config, tags, two graph revisions and a `best` checkpoint on one run in ten.
Then, through DRF's own request path in this process (APIClient, a member's session: what the
view, the serializer and the database cost, without the HTTP server), `--repeats` requests of each:

- baseline: the runs page's first page, `team=<id>&ordering=-created_at` (what
  frontend/src/runs/runsQuery.ts asks; every request below carries `team=` as the page does);
- the same without `team=` (the runs of all the user's teams: the API's default, not the page's);
- `ordering=-metrics.val/accuracy` and `ordering=metrics.val/loss`: the best run first (checked
  against the seeded truth), both with an index of their own (webapp/runs/expressions.py);
- `ordering=-metrics.train/loss`: a metric without an index (sorted per request);
- a metrics + config + tags filter ordered by the metric (its `count` checked against the truth);
- `ordering=-best.val/accuracy` (the best checkpoint's metric, a subquery per run);
- `GET /api/runs/columns/` (the runs page's column and completion names, from the newest 1,000).

p50/p95 of each, and the ratio to the baseline, go to bench/results.json under "runs_query" and to
the table between the runs-query markers of docs/benchmarks.md, with the machine's load average
(os.getloadavg) before and after each database's requests.

    .venv/bin/python bench/runs_query.py [--db postgres|sqlite|both] [--runs 100000] [--repeats 40]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results.json"
DOCS = ROOT / "docs" / "benchmarks.md"
PG = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test").rsplit("/", 1)[0]
PG_DATABASE = "netloom_bench_runs"
FILTER = 'metrics.val/accuracy > 0.9 and config.optimizer.lr < 0.01 and tags = "baseline"'
START, END = "<!-- runs-query:start -->", "<!-- runs-query:end -->"
BASELINE = "the runs page's first page (team=, newest first)"


def pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(sql)


def seed(count: int) -> dict[str, Any]:
    """`count` runs of one team; returns the truth the checks compare with."""
    from django.contrib.auth import get_user_model

    from webapp.accounts.services.memberships import membership_add
    from webapp.accounts.services.teams import team_create
    from webapp.datasets.services import dataset_builtin_create
    from webapp.graphs.services import graph_create, revision_save
    from webapp.runs.models import Checkpoint, Run, RunStatus

    team = team_create(name="Bench")
    user = get_user_model().objects.create_user(username="bench", password="pw")
    membership_add(team=team, user=user, role="admin")
    dataset = dataset_builtin_create(team=team, name="iris", builtin="iris", options={}, created_by=user)
    spec = json.loads((ROOT / "examples/specs/iris_mlp.json").read_text())
    graph = graph_create(team=team, name="mlp", spec=spec, created_by=user)
    wide = json.loads(json.dumps(spec))
    wide["nodes"][0]["params"]["out_features"] = 64
    revisions = [graph.revisions.get(number=1), revision_save(graph=graph, spec=wide, created_by=user)[0]]
    rng = random.Random(1)
    truth: dict[str, Any] = {"best": None, "filtered": 0}
    best_value = -1.0
    batch: list[Run] = []
    for i in range(count):
        accuracy = round(rng.random(), 6)
        lr = rng.choice([0.1, 0.01, 0.003, 0.001])
        tags = ["baseline"] if rng.random() < 0.2 else []
        batch.append(Run(
            team=team, graph_revision=revisions[i % 2], dataset=dataset, created_by=user, status=RunStatus.SUCCEEDED,
            config={"epochs": 20, "batch_size": 32, "optimizer": {"name": "adamw", "lr": lr}},
            final_metrics={"val/accuracy": accuracy, "val/loss": round(1 - accuracy, 6), "train/loss": 0.1},
            tags=tags, name=f"trial {i}",
        ))
        if accuracy > 0.9 and lr < 0.01 and tags:
            truth["filtered"] += 1
        if accuracy > best_value:
            best_value, truth["best_accuracy"] = accuracy, accuracy
        if len(batch) == 5000:
            Run.objects.bulk_create(batch)
            batch = []
    if batch:
        Run.objects.bulk_create(batch)
    checkpoints = [
        Checkpoint(run_id=pk, name="best", step=1, epoch=1.0, path="/nowhere", metrics={"val/accuracy": acc["val/accuracy"]})
        for pk, acc in Run.objects.filter(team=team).values_list("pk", "final_metrics")[::10]
    ]
    Checkpoint.objects.bulk_create(checkpoints, batch_size=5000)
    truth["user"], truth["team"] = user.pk, team.pk
    return truth


def measure(repeats: int, truth: dict[str, Any]) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_login(get_user_model().objects.get(pk=truth["user"]))
    team = {"team": truth["team"]}
    cases = {
        BASELINE: {**team, "ordering": "-created_at"},
        "the same without team= (all the user's teams)": {"ordering": "-created_at"},
        "ordering=-metrics.val/accuracy (indexed)": {**team, "ordering": "-metrics.val/accuracy"},
        "ordering=metrics.val/loss (indexed)": {**team, "ordering": "metrics.val/loss"},
        "ordering=-metrics.train/loss (no index: sorted)": {**team, "ordering": "-metrics.train/loss"},
        "filter (metrics, config, tags) + ordering by the metric": {**team, "filter": FILTER, "ordering": "-metrics.val/accuracy"},
        "ordering=-best.val/accuracy": {**team, "ordering": "-best.val/accuracy"},
        "GET /api/runs/columns/ (names of the newest 1,000)": {**team, "path": "/api/runs/columns/"},
    }
    found: dict[str, Any] = {"load_before": [round(x, 2) for x in os.getloadavg()]}
    for name, params in cases.items():
        path = params.pop("path", "/api/runs/")
        first = api.get(path, {**params, "page_size": 50})  # the columns endpoint reads no page_size
        assert first.status_code == 200, first.content[:300]
        body = first.json()
        if "count" not in body:  # the columns answer: the names it found, and how many runs it read
            assert body["metrics"] == ["train/loss", "val/accuracy", "val/loss"], body
            body["count"] = body["sampled"]
        if params.get("ordering", "").lstrip("-").startswith("metrics.val/") and not params.get("filter"):
            best = body["results"][0]["final_metrics"]["val/accuracy"]
            assert best == truth["best_accuracy"], ("the best run first", params, best, truth["best_accuracy"])
        if params.get("filter"):
            assert body["count"] == truth["filtered"], (body["count"], truth["filtered"])
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            answer = api.get(path, {**params, "page_size": 50})
            seconds.append(time.perf_counter() - start)
            assert answer.status_code == 200
        seconds.sort()
        found[name] = {"p50_ms": round(statistics.median(seconds) * 1000, 1),
                       "p95_ms": round(seconds[int(0.95 * (len(seconds) - 1))] * 1000, 1), "count": body["count"]}
    base = found[BASELINE]["p95_ms"]
    for row in found.values():
        if isinstance(row, dict):
            row["ratio_p95"] = round(row["p95_ms"] / base, 2)
    found["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return found


def one_database(kind: str, runs: int, repeats: int) -> dict[str, Any]:
    """Runs in a child process (a fresh Django per database)."""
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "postgres":
            pg_admin(f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")
            pg_admin(f"CREATE DATABASE {PG_DATABASE}")
            url = f"{PG}/{PG_DATABASE}"
        else:
            url = f"sqlite:///{tmp}/bench.sqlite3"
        env = {**os.environ, "DATABASE_URL": url, "MEDIA_ROOT": str(Path(tmp) / "media"),
               "NETLOOM_CHANNEL_LAYER": "memory", "NETLOOM_CACHE": "memory", "DJANGO_SETTINGS_MODULE": "webapp.settings"}
        try:
            done = subprocess.run([sys.executable, __file__, "--child", str(runs), str(repeats)], env=env, cwd=ROOT,
                                  capture_output=True, text=True, check=False)
            if done.returncode:
                raise RuntimeError(done.stderr[-3000:])
            return json.loads(done.stdout.strip().splitlines()[-1])
        finally:
            if kind == "postgres":
                pg_admin(f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")


def child(runs: int, repeats: int) -> None:
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    truth = seed(runs)
    seeded_s = time.perf_counter() - started
    from django.db import connection

    if connection.vendor == "postgresql":
        # What autovacuum does within a minute of a bulk insert (statistics, and the visibility
        # map an index-only COUNT needs); measured without it, the page's COUNT reads the table.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE runs_run")
    print(json.dumps({"seeded_s": round(seeded_s, 1), "runs": runs, "cases": measure(repeats, truth)}))


def write_docs(results: dict[str, Any], command: str) -> None:
    loads = "; ".join(f"{db}: {' '.join(map(str, r['cases']['load_before']))} before its requests, "
                      f"{' '.join(map(str, r['cases']['load_after']))} after" for db, r in results.items())
    lines = [START, "", f"`{command}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores; in-process DRF requests, "
             "a member's session; ratio: p95 over the baseline's). Load average (1, 5, 15 min) "
             f"{loads}.", "",
             "| database | request (page of 50) | count | p50 ms | p95 ms | p95 ratio |", "|---|---|---|---|---|---|"]
    for db, result in results.items():
        for name, row in result["cases"].items():
            if not isinstance(row, dict):
                continue
            lines.append(f"| {db} ({result['runs']:,} runs) | {name} | {row['count']:,} | {row['p50_ms']} | "
                         f"{row['p95_ms']} | {row['ratio_p95']} |")
    lines += ["", END]
    text = DOCS.read_text()
    if START in text:
        text = text[: text.index(START)] + "\n".join(lines) + text[text.index(END) + len(END):]
    else:
        text += "\n## Runs list over many runs\n\nbench/runs_query.py: " + "\n\n".join(__doc__.split("\n\n")[1:4]) + \
            "\n\n" + "\n".join(lines) + "\n"
    DOCS.write_text(text)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    results = {}
    for kind in (["sqlite", "postgres"] if args.db == "both" else [args.db]):
        results[kind] = one_database(kind, args.runs, args.repeats)
        print(kind, json.dumps(results[kind], indent=1), flush=True)
    stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    stored["runs_query"] = results
    RESULTS.write_text(json.dumps(stored, indent=2) + "\n")  # as bench/metric_store.py writes it
    if not args.no_docs:
        write_docs(results, "python bench/runs_query.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
