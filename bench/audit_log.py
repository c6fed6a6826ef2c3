"""The audit log at size: a team's page and its filters, the JSON-lines export's memory, and what
recording costs a change.

Seeds `--entries` audit entries (200,000 by default) of one team through the ORM into a SQLite
file of its own (`DATABASE_URL=postgres://...` for another database), spread over 30 days, 8
actors and the actions the services record. Then, through DRF's own request path in this process
(APIClient, the team admin's session: the view, the serializer and the database, no HTTP server):

- `--repeats` requests of a page of 50 (newest first), and of it filtered by an action prefix,
  an actor, an object, a one-day range: p50/p95;
- the whole log as JSON lines (GET .../audit/export/), read to the end: rows/s and the peak of
  Python memory allocated while streaming (tracemalloc), against the size of the output;
- `--changes` renames of a graph through `graph_rename` (its audit entry in its transaction)
  against the same update and transaction without the entry: ms per change.

Results go to bench/results.json under "audit_log" and between the audit-log markers of
docs/benchmarks.md.

    .venv/bin/python bench/audit_log.py [--entries 200000] [--repeats 30] [--changes 500]
"""

from __future__ import annotations

import argparse
import json
import os
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
START, END = "<!-- audit-log:start -->", "<!-- audit-log:end -->"
ACTIONS = ["graph.created", "graph.renamed", "dataset.created", "run.created", "run.renamed", "run.cancelled",
           "run.exported", "member.role_changed", "model.alias_moved"]


def seed(count: int) -> dict[str, Any]:
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from webapp.accounts.services.memberships import membership_add
    from webapp.accounts.services.teams import team_create
    from webapp.audit.models import AuditEntry

    team = team_create(name="Bench")
    admin = get_user_model().objects.create_user(username="boss", password="pw")
    membership_add(team=team, user=admin, role="admin")
    actors = [get_user_model().objects.create_user(username=f"user{i}", password="pw") for i in range(8)]
    now = timezone.now()
    step = timedelta(days=30) / count
    batch: list[AuditEntry] = []
    for i in range(count):
        actor, action = actors[i % 8], ACTIONS[i % len(ACTIONS)]
        kind = action.split(".")[0]
        batch.append(AuditEntry(
            team=team, team_name=team.name, actor=actor, actor_name=actor.username, at=now - step * i, action=action,
            object_type=kind, object_id=str(i % 5000), object_repr=f"{kind} {i % 5000}",
            before={"name": f"old {i}"} if action.endswith("renamed") else None, after={"name": f"new {i}"},
        ))
        if len(batch) == 5000:
            AuditEntry.objects.bulk_create(batch)
            batch = []
    AuditEntry.objects.bulk_create(batch)
    return {"team": team.pk, "admin": admin.pk}


def timed(call: Any, repeats: int) -> dict[str, float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    seconds.sort()
    return {"p50_ms": round(statistics.median(seconds) * 1000, 1),
            "p95_ms": round(seconds[int(0.95 * (len(seconds) - 1))] * 1000, 1)}


def measure(repeats: int, changes: int, seeded: dict[str, Any]) -> dict[str, Any]:
    import tracemalloc
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone
    from rest_framework.test import APIClient

    from webapp.accounts.models import Team
    from webapp.graphs.services import graph_create, graph_rename

    api = APIClient()
    admin = get_user_model().objects.get(pk=seeded["admin"])
    api.force_login(admin)
    base = f"/api/teams/{seeded['team']}/audit/"
    day = (timezone.now() - timedelta(days=10)).date().isoformat()
    cases = {"page of 50, newest first": {}, "action=run.": {"action": "run."}, "actor=user3": {"actor": "user3"},
             "object=run:42": {"object": "run:42"}, f"one day (since=until={day})": {"since": day, "until": day}}
    pages: dict[str, Any] = {}
    for name, params in cases.items():
        first = api.get(base, {**params, "page_size": 50})
        assert first.status_code == 200, first.content[:300]
        pages[name] = {**timed(lambda p=params: api.get(base, {**p, "page_size": 50}), repeats),
                       "count": first.json()["count"]}

    def read_export() -> tuple[int, int]:
        rows = size = 0
        for chunk in api.get(base + "export/").streaming_content:
            rows += chunk.count(b"\n")
            size += len(chunk)
        return rows, size

    start = time.perf_counter()
    rows, size = read_export()
    elapsed = time.perf_counter() - start
    tracemalloc.start()  # a second pass for the memory: tracing slows every allocation
    read_export()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    export = {"rows": rows, "mb_out": round(size / 2**20, 1), "seconds": round(elapsed, 1),
              "rows_per_s": round(rows / elapsed), "peak_python_mb": round(peak / 2**20, 1)}

    team = Team.objects.get(pk=seeded["team"])
    graph = graph_create(team=team, name="g", created_by=admin)
    renames = timed(lambda: graph_rename(graph=graph, name=f"g{time.perf_counter_ns()}", actor=admin), changes)

    def bare() -> None:
        with transaction.atomic():
            graph.name = f"g{time.perf_counter_ns()}"
            graph.save(update_fields=["name", "updated_at"])

    plain = timed(bare, changes)
    return {"pages": pages, "export": export,
            "change": {"with_entry": renames, "without": plain,
                       "added_p50_ms": round(renames["p50_ms"] - plain["p50_ms"], 2)}}


def child(entries: int, repeats: int, changes: int) -> None:
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    seeded = seed(entries)
    seeded_s = round(time.perf_counter() - started, 1)
    print(json.dumps({"entries": entries, "seeded_s": seeded_s, **measure(repeats, changes, seeded)}))


def write_docs(result: dict[str, Any], command: str) -> None:
    export, change = result["export"], result["change"]
    lines = [START, "", f"`{command}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, SQLite; in-process DRF "
             f"requests, the team admin's session; {result['entries']:,} entries of one team)", "",
             "| request | count | p50 ms | p95 ms |", "|---|---|---|---|"]
    for name, row in result["pages"].items():
        lines.append(f"| {name} | {row['count']:,} | {row['p50_ms']} | {row['p95_ms']} |")
    lines += ["", f"JSON-lines export of all {export['rows']:,} entries: {export['mb_out']} MB in {export['seconds']} s "
              f"({export['rows_per_s']:,} rows/s); peak Python memory while streaming {export['peak_python_mb']} MB.",
              "", f"A graph rename with its audit entry: p50 {change['with_entry']['p50_ms']} ms, p95 "
              f"{change['with_entry']['p95_ms']} ms; the same update and transaction without it: p50 "
              f"{change['without']['p50_ms']} ms, p95 {change['without']['p95_ms']} ms.", "", END]
    text = DOCS.read_text()
    if START in text:
        text = text[: text.index(START)] + "\n".join(lines) + text[text.index(END) + len(END):]
    else:
        text += "\n## Audit log at size\n\nbench/audit_log.py: " + __doc__.split("\n\n")[0].split("\n", 1)[1] + \
            "\n\n" + "\n".join(lines) + "\n"
    DOCS.write_text(text)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--changes", type=int, default=500)
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MEDIA_ROOT": str(Path(tmp) / "media"), "NETLOOM_CHANNEL_LAYER": "memory",
               "NETLOOM_CACHE": "memory", "DJANGO_SETTINGS_MODULE": "webapp.settings"}
        env.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench.sqlite3")
        done = subprocess.run([sys.executable, __file__, "--child", str(args.entries), str(args.repeats),
                               str(args.changes)], env=env, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode:
            raise SystemExit(done.stderr[-3000:])
        result = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(result, indent=2))
    stored = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    stored["audit_log"] = result
    RESULTS.write_text(json.dumps(stored, indent=2) + "\n")
    if not args.no_docs:
        command = "bench/audit_log.py" + "".join(f" {a}" for a in sys.argv[1:])
        write_docs(result, command)


if __name__ == "__main__":
    main()
