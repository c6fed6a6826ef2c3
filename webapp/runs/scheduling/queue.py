"""Reads of the queue: the fair order of queued runs, a queued run's position, live workers."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery

from webapp.accounts.models import Team
from webapp.accounts.selectors import team_ids_for_user

from .. import conf
from ..models import Run, RunStatus, Worker


def _team_last_start() -> Subquery:
    """When the run's team last had a run start (null: never): the fair order's first key."""
    return Subquery(
        Run.objects.filter(team=OuterRef("team"), started_at__isnull=False)
        .order_by("-started_at").values("started_at")[:1]
    )


def teams_at_run_limit() -> set[int]:
    """Ids of the teams whose running runs reach their max_concurrent_runs."""
    running = dict(
        Run.objects.filter(status=RunStatus.RUNNING).values("team").annotate(n=Count("pk")).values_list("team", "n")
    )
    limited = Team.objects.filter(pk__in=list(running), max_concurrent_runs__isnull=False)
    return {pk for pk, limit in limited.values_list("pk", "max_concurrent_runs") if running[pk] >= limit}


def runs_claimable(*, kind: str | None = None, capacity: int | None = None) -> Any:
    """Queued runs a worker of `kind` with `capacity` devices may take now, fairest first.

    The fair order (DESIGN.md "Running it"): the team whose last run started least recently
    (never first), then the run's priority (higher first) inside its team, then age. A team at
    its max_concurrent_runs, and a run over its team's max_devices_per_run, are skipped.
    """
    runs = Run.objects.filter(status=RunStatus.QUEUED, cancel_requested=False)
    if kind is not None:
        runs = runs.filter(need_kind__in=[kind, "any"])
    if capacity is not None:
        runs = runs.filter(need_devices__lte=capacity)
    return (
        runs.exclude(team_id__in=teams_at_run_limit())
        .filter(Q(team__max_devices_per_run__isnull=True) | Q(team__max_devices_per_run__gte=F("need_devices")))
        .annotate(team_last_start=_team_last_start())
        .order_by(F("team_last_start").asc(nulls_first=True), "-priority", "created_at", "pk")
    )


def workers_alive() -> QuerySet[Worker]:
    """Workers heard from within the run lease (they announce on every reaper pass)."""
    from datetime import timedelta

    from django.utils import timezone

    window = max(float(conf.get("RUNS_LEASE_SECONDS")), 3 * float(conf.get("RUNS_REAP_SECONDS")))
    return Worker.objects.filter(last_seen__gte=timezone.now() - timedelta(seconds=window))


# Workers not heard from for this long drop out of GET /api/workers/ (a killed one's row stays).
WORKERS_LISTED_SECONDS = 24 * 3600


def workers_for_user(*, user: AbstractBaseUser) -> list[dict[str, Any]]:
    """GET /api/workers/: every worker seen within a day; a current run only if the user may see it.

    Each: hostname, kind, devices, capacity, queues, trains, busy, current_run ({id, name} or
    null), started_at, last_seen, alive.
    """
    from datetime import timedelta

    from django.utils import timezone

    teams = set(team_ids_for_user(user=user).values_list("team_id", flat=True))
    alive = set(workers_alive().values_list("pk", flat=True))
    since = timezone.now() - timedelta(seconds=WORKERS_LISTED_SECONDS)
    answer = []
    for worker in Worker.objects.filter(last_seen__gte=since).select_related("current_run"):
        run = worker.current_run
        answer.append({
            "hostname": worker.hostname, "kind": worker.kind, "devices": list(worker.devices or []),
            "capacity": worker.capacity, "queues": list(worker.queues or []), "trains": worker.trains,
            "busy": run is not None,
            "current_run": {"id": run.pk, "name": run.name} if run is not None and run.team_id in teams else None,
            "started_at": worker.started_at, "last_seen": worker.last_seen, "alive": worker.pk in alive,
        })
    return answer


# The fair order is simulated over at most this many queued runs (the rest count as ahead).
QUEUE_SIMULATED = 5000


def _last_start(team_id: int) -> Any:
    return (Run.objects.filter(team_id=team_id, started_at__isnull=False).order_by("-started_at")
            .values_list("started_at", flat=True).first())


def _fair_order(rows: list[tuple[Any, ...]]) -> list[int]:
    """The pks of `rows` (pk, team_id, priority, created_at, team_last_start) in the order the
    fair order would start them, taking each team's turn as it comes: a team that never started
    first, then the least recent start, then the oldest head; a team's turn sends it last."""
    import heapq

    by_team: dict[int, list[tuple[Any, ...]]] = {}
    last: dict[int, Any] = {}
    for row in rows:
        by_team.setdefault(row[1], []).append(row)
        last[row[1]] = row[4]
    for queued in by_team.values():
        queued.sort(key=lambda row: (-row[2], row[3], row[0]))

    def head_key(queued: list[tuple[Any, ...]]) -> tuple[int, float]:
        return -queued[0][2], queued[0][3].timestamp()

    heap = [((0, 0.0, *head_key(q)) if last[t] is None else (1, last[t].timestamp(), *head_key(q)), t)
            for t, q in by_team.items()]
    heapq.heapify(heap)
    order, turn = [], 0
    while heap:
        _, team_id = heapq.heappop(heap)
        order.append(by_team[team_id].pop(0)[0])
        turn += 1
        if by_team[team_id]:
            heapq.heappush(heap, ((2, float(turn), *head_key(by_team[team_id])), team_id))
    return order


def _claimable_rows() -> list[tuple[Any, ...]]:
    return list(
        runs_claimable().values_list("pk", "team_id", "priority", "created_at", "team_last_start")[:QUEUE_SIMULATED]
    )


def _waiting(*, run: Run, ahead: int, live: list[Worker], running: int) -> dict[str, Any]:
    """{position, ahead, waiting_for, detail} of a queued run with `ahead` runs before it."""
    team = run.team
    answer = {"position": ahead + 1, "ahead": ahead}
    if team.max_devices_per_run is not None and run.need_devices > team.max_devices_per_run:
        return {**answer, "waiting_for": "team_limit",
                "detail": f"asks for {run.need_devices} devices; team {team.name} may use {team.max_devices_per_run} per run"}
    if team.max_concurrent_runs is not None and running >= team.max_concurrent_runs:
        return {**answer, "waiting_for": "team_limit",
                "detail": f"team {team.name} has {running} of its {team.max_concurrent_runs} allowed runs training"}
    fitting = [
        worker for worker in live
        if worker.trains and run.need_kind in (worker.kind, "any") and worker.capacity >= run.need_devices
    ]
    if not fitting:
        kind = "any" if run.need_kind == "any" else run.need_kind.upper()
        return {**answer, "waiting_for": "no_fitting_worker",
                "detail": f"no live worker has {run.need_devices} {kind} device(s) for it"}
    if ahead:
        detail = f"behind {ahead} queued run{'s' if ahead != 1 else ''}"
    else:
        free = sum(1 for worker in fitting if worker.current_run_id is None)
        detail = "next; a fitting worker takes it now" if free else "next; waiting for a fitting worker to finish its run"
    return {**answer, "waiting_for": "behind", "detail": detail}


def _kueue_order(team_id: int) -> list[int]:
    """The pks of a team's queued runs in its LocalQueue's order (Kueue's: priority, then age)."""
    return list(Run.objects.filter(team_id=team_id, status=RunStatus.QUEUED)
                .order_by("-priority", "created_at", "pk").values_list("pk", flat=True)[:QUEUE_SIMULATED])


def _kueue_waiting(*, run: Run, ahead: int) -> dict[str, Any]:
    """A queued run's place with NETLOOM_RUNNER=kubernetes: Kueue decides, and says why it waits
    (its Workload's condition, recorded by the worker that watches its Job: run.waiting_detail).
    `ahead` counts the team's own queued runs before it in its LocalQueue; other teams' Jobs
    compete in the ClusterQueues' cohort, which Kueue alone orders."""
    detail = run.waiting_detail or "its Job is being created in the cluster"
    return {"position": ahead + 1, "ahead": ahead, "waiting_for": "kueue", "detail": detail}


def _kubernetes_runner() -> bool:
    from django.conf import settings

    return settings.NETLOOM_RUNNER == "kubernetes"


def run_queue_position(*, run: Run) -> dict[str, Any] | None:
    """Where a queued run stands: {position, ahead, waiting_for, detail}; None unless queued.

    `ahead` is how many queued runs the fair order (runs_claimable) would start first, taking
    each team's turn as it comes (a team that just started a run goes to the back); position is
    ahead + 1. `waiting_for`: "team_limit" (its team is at max_concurrent_runs, or the run asks
    for more devices than max_devices_per_run), "no_fitting_worker" (no live worker of its kind
    with enough devices), else "behind" (ahead runs first, or a fitting worker finishing); with
    NETLOOM_RUNNER=kubernetes "kueue", in Kueue's words (_kueue_waiting).
    """
    if run.status != RunStatus.QUEUED:
        return None
    if _kubernetes_runner():
        order = _kueue_order(run.team_id)
        return _kueue_waiting(run=run, ahead=order.index(run.pk) if run.pk in order else len(order))
    rows = _claimable_rows()
    if all(row[0] != run.pk for row in rows):
        rows.append((run.pk, run.team_id, run.priority, run.created_at, _last_start(run.team_id)))
    ahead = _fair_order(rows).index(run.pk)
    running = Run.objects.filter(team_id=run.team_id, status=RunStatus.RUNNING).count()
    return _waiting(run=run, ahead=ahead, live=list(workers_alive()), running=running)


def queue_for_user(*, user: AbstractBaseUser) -> list[dict[str, Any]]:
    """GET /api/queue/: the queued runs of the user's teams in the order they would start.

    Each: id, name, team, priority, need {kind, devices}, created_at, and where it stands
    (position counts every team's runs ahead of it; another team's runs are never listed).
    """
    teams = set(team_ids_for_user(user=user).values_list("team_id", flat=True))
    mine = {
        run.pk: run for run in Run.objects.filter(status=RunStatus.QUEUED, team_id__in=teams).select_related("team")
    }
    if not mine:
        return []
    if _kubernetes_runner():
        listed_k8s = []
        for team_id in sorted({run.team_id for run in mine.values()}):
            for ahead, pk in enumerate(_kueue_order(team_id)):
                if (run := mine.get(pk)) is not None:
                    listed_k8s.append({
                        "id": run.pk, "name": run.name, "team": run.team_id, "priority": run.priority,
                        "need": {"kind": run.need_kind, "devices": run.need_devices}, "created_at": run.created_at,
                        **_kueue_waiting(run=run, ahead=ahead),
                    })
        return sorted(listed_k8s, key=lambda item: (item["position"], item["created_at"]))
    rows = _claimable_rows()
    listed = {row[0] for row in rows}
    starts: dict[int, Any] = {}
    for run in mine.values():
        if run.pk not in listed:  # a team at its limit, a cancel on its way: it still waits
            if run.team_id not in starts:
                starts[run.team_id] = _last_start(run.team_id)
            rows.append((run.pk, run.team_id, run.priority, run.created_at, starts[run.team_id]))
    live = list(workers_alive())
    running = dict(Run.objects.filter(status=RunStatus.RUNNING, team_id__in=teams)
                   .values("team").annotate(n=Count("pk")).values_list("team", "n"))
    answer = []
    for ahead, pk in enumerate(_fair_order(rows)):
        run = mine.get(pk)
        if run is None:
            continue
        answer.append({
            "id": run.pk, "name": run.name, "team": run.team_id, "priority": run.priority,
            "need": {"kind": run.need_kind, "devices": run.need_devices}, "created_at": run.created_at,
            **_waiting(run=run, ahead=ahead, live=live, running=running.get(run.team_id, 0)),
        })
    return answer
