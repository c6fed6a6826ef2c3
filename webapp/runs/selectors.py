"""Reads of the runs app: the runs a user may see, what a new run refers to, metric series, the
lease/cancel flags the worker polls, files of a run (export, checkpoints, explanation images)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import F, OuterRef, Q, QuerySet, Subquery
from django.db.models.fields.json import KT

from webapp.accounts.models import Role, Team, role_at_least
from webapp.accounts.selectors import memberships_of, team_ids_for_user
from webapp.errors import Conflict, DomainError, Forbidden
from webapp.jobs.models import Job, JobState
from webapp.metrics.selectors import runs_summaries
from webapp.queues import RUNS_EXPORT

from . import conf
from .models import Checkpoint, ExportStatus, Run, RunStatus


def runs_visible_to(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Run]:
    """Runs of the user's teams (none for anonymous users)."""
    if not user.is_authenticated:
        return Run.objects.none()
    return Run.objects.filter(team__in=team_ids_for_user(user=user))


def run_for_user(*, user: AbstractBaseUser | AnonymousUser, run_id: int) -> Run | None:
    """The run if the user may see it, else None (a foreign run and a missing one look alike)."""
    return runs_visible_to(user=user).filter(pk=run_id).first()


def runs_visible_pairs(*, pairs: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
    """The (user id, run id) pairs among `pairs` where run_for_user would find the run (one query).

    The same rule as runs_visible_to (a membership in the run's team), asked for a whole batch
    of open streams at once; the caller decides about inactive users (runs_visible_to is not
    asked about them either: a stream's user is checked first).
    """
    wanted = set(pairs)
    if not wanted:
        return set()
    rows = Run.objects.filter(
        pk__in={run_id for _, run_id in wanted},
        team__memberships__user_id__in={user_id for user_id, _ in wanted},
    ).values_list("team__memberships__user_id", "pk")
    return wanted & set(rows)


# ?ordering= of GET /api/runs/ (each also with "-"): the API's name -> the ORM's.
RUN_ORDERINGS = {
    "created_at": "created_at", "finished_at": "finished_at", "name": "name", "status": "status",
    "duration": "duration",
}
# Those never null: ordered without NULLS LAST, which a PostgreSQL DESC index (nulls first) cannot serve.
NOT_NULL_ORDERINGS = frozenset({"created_at", "name", "status"})


def runs_filter(
    runs: QuerySet[Run], *, statuses: list[str] | None = None, graph_id: int | None = None,
    dataset_id: int | None = None, tag: str | None = None, text: str | None = None,
    sweep_id: int | None = None, ordering: str | None = None, expression: str | None = None,
) -> QuerySet[Run]:
    """The list filters of GET /api/runs/ on already scoped runs.

    `?status=a,b&graph=&dataset=&tag=&q=&sweep=&filter=&ordering=`: `q` searches name, notes,
    graph name and dataset name; `sweep` is origin.sweep; `filter` is an expression of the query
    language (webapp/runs/query.py); `ordering` a fixed field or metrics./best./config./nodes. An
    unknown ordering or a wrong expression is a DomainError naming the parameter.
    """
    from django.db.models import DurationField, ExpressionWrapper

    from .query import json_ordering, runs_where, tag_q

    if statuses:
        runs = runs.filter(status__in=statuses)
    if graph_id is not None:
        runs = runs.filter(graph_revision__graph_id=graph_id)
    if dataset_id is not None:
        runs = runs.filter(dataset_id=dataset_id)
    if tag:
        runs = runs.filter(tag_q(tag.strip()))
    if text and text.strip():
        words = text.strip()
        runs = runs.filter(Q(name__icontains=words) | Q(notes__icontains=words)
                           | Q(graph_revision__graph__name__icontains=words) | Q(dataset__name__icontains=words))
    if sweep_id is not None:
        runs = runs.filter(origin__sweep=sweep_id)
    if expression:
        runs = runs_where(runs, expression)
    if ordering and (ordered := json_ordering(runs, ordering, expression or "")) is not None:
        return ordered
    if ordering:
        field = ordering.lstrip("-")
        if field not in RUN_ORDERINGS or ordering.count("-") > 1:
            choices = ", ".join([*RUN_ORDERINGS, "metrics.<name>", "best.<name>", "config.<path>",
                                 "nodes.<node>.<param>"])
            raise DomainError("invalid", f"Unknown ordering {ordering!r}; one of {choices} (or with '-').",
                              fields={"ordering": [f"One of {choices}, each also with '-'."]})
        descending = ordering.startswith("-")
        if field == "duration":
            runs = runs.annotate(duration=ExpressionWrapper(F("finished_at") - F("started_at"),
                                                             output_field=DurationField()))
        key = F(RUN_ORDERINGS[field])
        if field in NOT_NULL_ORDERINGS:  # plain, as Run's (team, -created_at, -id) index is
            runs = runs.order_by(key.desc() if descending else key.asc(), "-id")
        else:
            runs = runs.order_by(key.desc(nulls_last=True) if descending else key.asc(nulls_last=True), "-id")
    return runs


def runs_best_checkpoints(*, run_ids: list[int]) -> dict[int, dict[str, Any] | None]:
    """{run id: {name, step, epoch, metrics} | None} of each run's `best` checkpoint (one query)."""
    rows = Checkpoint.objects.filter(run_id__in=run_ids, name="best").values_list(
        "run_id", "name", "step", "epoch", "metrics"
    )
    found: dict[int, dict[str, Any] | None] = dict.fromkeys(run_ids)
    for run_id, name, step, epoch, metrics in rows:
        found[run_id] = {"name": name, "step": step, "epoch": epoch, "metrics": metrics or {}}
    return found


@dataclass(frozen=True)
class RunRefs:
    """What a new run is made of, each one checked to be the user's: team, revision, dataset."""

    team: Team
    graph_revision: Any  # webapp.graphs.models.GraphRevision
    dataset: Any  # webapp.datasets.models.Dataset


def _of_users_teams(queryset: QuerySet, *, user: AbstractBaseUser, team_lookup: str) -> QuerySet:
    return queryset.filter(**{f"{team_lookup}__in": team_ids_for_user(user=user)})


def run_create_refs(
    *,
    user: AbstractBaseUser,
    dataset_id: int,
    graph_revision_id: int | None = None,
    graph_id: int | None = None,
    revision: int | None = None,
    team_id: int | None = None,
    write_role: str = Role.EDITOR,
) -> RunRefs:
    """Resolve POST /api/runs/'s references among the user's teams, or name the field that is wrong.

    The revision is `graph_revision_id`, or revision number `revision` of `graph_id` (the latest
    by default). The team defaults to the graph's; the user needs `write_role` there (Forbidden),
    and the graph and the dataset must both belong to it. A foreign object reads like a missing
    one (DomainError "invalid" on its field).
    """
    from webapp.datasets.models import Dataset

    found = run_graph_revision_ref(user=user, graph_revision_id=graph_revision_id, graph_id=graph_id,
                                   revision=revision)
    dataset = _of_users_teams(Dataset.objects.all(), user=user, team_lookup="team").filter(pk=dataset_id).first()
    if dataset is None:
        raise DomainError("invalid", f"No dataset {dataset_id} among your teams' datasets.",
                          fields={"dataset": ["Not found among your teams' datasets."]})
    team = _team_for_write(user=user, team_id=team_id or found.graph.team_id, role=write_role)
    for name, owner in (("graph", found.graph.team_id), ("dataset", dataset.team_id)):
        if owner != team.pk:
            raise DomainError("invalid", f"The {name} belongs to another team than the run.",
                              fields={name: [f"Belongs to another team than team {team.pk}."]})
    return RunRefs(team=team, graph_revision=found, dataset=dataset)


def run_graph_revision_ref(
    *, user: AbstractBaseUser, graph_revision_id: int | None = None, graph_id: int | None = None,
    revision: int | None = None,
) -> Any:
    """The graph revision `graph_revision_id`, or number `revision` of `graph_id` (the latest by
    default), among the user's teams' graphs; else a DomainError naming the field."""
    from webapp.graphs.models import GraphRevision

    revisions = _of_users_teams(GraphRevision.objects.select_related("graph"), user=user,
                                team_lookup="graph__team")
    if graph_revision_id:
        found = revisions.filter(pk=graph_revision_id).first()
        if found is None:
            raise DomainError("invalid", f"No graph revision {graph_revision_id} among your teams' graphs.",
                              fields={"graph_revision": ["Not found among your teams' graphs."]})
        return found
    candidates = revisions.filter(graph_id=graph_id)
    if revision:
        candidates = candidates.filter(number=revision)
    else:  # the latest someone saved, not a sweep's variant
        candidates = candidates.filter(origin="")
    found = candidates.order_by("-number").first()
    if found is None:
        field = "revision" if revision and revisions.filter(graph_id=graph_id).exists() else "graph"
        raise DomainError("invalid", f"No such {field} among your teams' graphs.",
                          fields={field: ["Not found among your teams' graphs."]})
    return found


def _team_for_write(*, user: AbstractBaseUser, team_id: int, role: str) -> Team:
    """The team a new run goes into, as TeamScopedMixin.team_for_write answers for other objects."""
    membership = memberships_of(user=user).select_related("team").filter(team_id=team_id).first()
    if membership is None:
        # The same body as a serializer's field error: {"team": [...]}, message "team: ...".
        raise DomainError("invalid", f"team: No team {team_id} among your teams.",
                          fields={"team": [f"No team {team_id} among your teams."]})
    if not role_at_least(membership.role, role):
        raise Forbidden("permission_denied",
                        f"Your role in team {membership.team.name} ({membership.role}) does not allow this.")
    return membership.team


def run_checkpoints(*, run: Run) -> QuerySet[Checkpoint]:
    """The run's checkpoints, oldest first (pruned ones included: their folder is gone)."""
    return run.checkpoints.order_by("step")


def run_checkpoint_row(*, run: Run, name: str) -> Checkpoint:
    """The run's kept checkpoint `name`: NotFound when there is none, Conflict once its folder was pruned."""
    from webapp.errors import NotFound

    row = Checkpoint.objects.filter(run=run, name=name).first()
    if row is None:
        raise NotFound("checkpoint_missing", f"Run {run.pk} has no checkpoint named {name!r}.")
    if not (Path(row.path) / "state.json").is_file():
        raise Conflict("checkpoint_pruned", f"Checkpoint {name!r} is no longer kept (training pruned it).")
    return row


def checkpoint_kind(name: str) -> str:
    """"best", "cancelled" (the `step-…` folder a cancel writes), "imported" or "epoch"."""
    if name == "best":
        return "best"
    if name == "imported":  # weights uploaded for a revision (webapp/runs/inference/imports.py)
        return "imported"
    return "cancelled" if name.startswith("step-") else "epoch"


def run_resume_checkpoint(*, run: Run) -> Path | None:
    """The newest checkpoint recorded in the database whose folder on disk is the one recorded.

    Not simply the newest folder: a worker killed right after writing a checkpoint may not have
    stored the metric points before it yet; resuming from the last *recorded* checkpoint redoes
    those steps, so the stored series has no gap. And the folder must still hold the step it was
    recorded at: `best` is rewritten in place, so a worker killed after writing a newer best but
    before recording it leaves the record of an older best over a folder with a later state,
    whose steps since were never stored.
    """
    from engine.train.checkpoint import checkpoint_step

    recorded = Checkpoint.objects.filter(run=run).order_by("-step", "name").values_list("path", "step")
    for path, step in recorded:
        if checkpoint_step(path) == step:  # None: pruned, half-written or not a checkpoint
            return Path(path)
    return None


def run_start_from(*, run: Run) -> dict[str, Any]:
    """Where train() starts: the run's own recorded checkpoint first (a requeued run resumes
    itself), else its `init/` copy: `resume_from` (mode resume) or `init_from` (finetune)."""
    own = run_resume_checkpoint(run=run)
    if own is not None:
        return {"resume_from": own}
    if not run.init:
        return {"resume_from": None}
    init_dir = conf.run_dir(run.pk) / "init"
    if not (init_dir / "state.json").is_file():
        raise ValueError(f"the copy of checkpoint {run.init.get('checkpoint')!r} of run {run.init.get('run')} "
                         "this run starts from is missing; start a new run from that checkpoint")
    if run.init.get("mode") == "resume":
        return {"resume_from": init_dir}
    return {"init_from": init_dir}


@cache
def run_config_schema() -> dict[str, Any]:
    """{"schema": TrainConfig's JSON Schema, "defaults": TrainConfig() as JSON} (the engine's; no team data)."""
    from engine.train import TrainConfig

    return {"schema": TrainConfig.model_json_schema(), "defaults": TrainConfig().model_dump(mode="json")}


def run_data_recipe(run: Run) -> dict[str, Any]:
    """The DataRecipe JSON a run trains on; rebuilt from its dataset when the run has none."""
    if run.recipe:
        return run.recipe
    if run.dataset_id is None:  # a run of imported weights: nothing was trained on anything
        raise Conflict("no_dataset", f"Run {run.pk} holds imported weights and has no dataset; "
                       "start a run from its checkpoint 'imported' to train or evaluate it.")
    from webapp.datasets.selectors import dataset_recipe

    return dataset_recipe(dataset=run.dataset, version=run.dataset_version)  # the pinned data, never "latest"


EXPORT_FOLDER, EXPORT_ZIP = "export", "export.zip"  # in the run's folder


def run_export_dir(run: Run) -> Path:
    """Folder of the run's export (model.safetensors, model.py, ...)."""
    return conf.run_dir(run.pk) / EXPORT_FOLDER


def run_export_zip(run: Run) -> Path:
    """Where the zip of the run's export is kept."""
    return conf.run_dir(run.pk) / EXPORT_ZIP


def _files_in(folder: str) -> frozenset[str]:
    """The names of the files in `folder` (os.path.isfile's answer for each: links followed), none
    when it cannot be read (as isfile, which is false then)."""
    try:
        with os.scandir(folder) as entries:
            return frozenset(entry.name for entry in entries if entry.is_file())
    except OSError:
        return frozenset()


class ExportState(NamedTuple):
    """What run_exports reads of a run, for a caller that holds its row, not a model instance
    (webapp/runs/api/detail.py: building a Run was a twentieth of a cached detail's time).
    `export_job_state`/`export_job_error`: the state and error message of the run's latest
    "runs.export" job (None: no job), as export_job_annotations reads them."""

    pk: int
    status: str
    export_job_state: str | None
    export_job_error: str | None


def export_job_annotations() -> dict[str, Subquery]:
    """Annotations of a Run query with its latest "runs.export" job's state and error message
    (`export_job_state`, `export_job_error`; None without a job): two indexed subqueries, so a
    page of runs reads its exports' states in its own query."""
    latest = Job.objects.filter(kind=RUNS_EXPORT, subject_id=OuterRef("pk")).order_by("-created_at", "-id")
    return {
        "export_job_state": Subquery(latest.values("state")[:1]),
        "export_job_error": Subquery(latest.annotate(message=KT("error__message")).values("message")[:1]),
    }


def run_export_job(*, run_id: int) -> tuple[str | None, str | None]:
    """(state, error message) of the run's latest "runs.export" job; (None, None) without one."""
    row = (Job.objects.filter(kind=RUNS_EXPORT, subject_id=run_id).order_by("-created_at", "-id")
           .values_list("state", "error").first())
    return (row[0], (row[1] or {}).get("message")) if row else (None, None)


def run_export_state(run: Run | ExportState) -> tuple[str, str]:
    """(export status, error) of a run from its latest "runs.export" job: none without one (or a
    cancelled one), pending while it is queued or running, ready when done, failed with the
    job's error message. Reads the annotations when the run carries them, else one query."""
    if isinstance(run, ExportState) or hasattr(run, "export_job_state"):
        state, error = run.export_job_state, run.export_job_error  # type: ignore[union-attr]
    else:
        state, error = run_export_job(run_id=run.pk)
    if state in (JobState.QUEUED, JobState.RUNNING):
        return ExportStatus.PENDING, ""
    if state == JobState.DONE:
        return ExportStatus.READY, ""
    if state == JobState.FAILED:
        return ExportStatus.FAILED, str(error or "")
    return ExportStatus.NONE, ""


def run_exports(run: Run | ExportState) -> dict[str, Any]:
    """What a run offers for download, from its files and its export task's status.

    {"status": none|pending|ready|failed, "safetensors", "python", "config", "zip": bool,
     "onnx": true | false | "pending" | "unavailable", "note": why ONNX is unavailable ("" otherwise)}.
    onnx is false when nothing is making it (not succeeded, or never asked for): asking for the
    download then queues it once. The zip is made on first download when the task has not made it.
    """
    # One listing of the export folder, not a stat per file, on strings, not pathlib: a finished
    # run's detail (webapp/runs/api/detail.py) reads these files for every answer, and five isfile()
    # calls with their joins were a tenth of that answer's time.
    run_folder = conf.run_folder(run.pk)
    folder = os.path.join(run_folder, EXPORT_FOLDER)
    succeeded = run.status == RunStatus.SUCCEEDED
    export_status, export_error = run_export_state(run) if succeeded else (ExportStatus.NONE, "")
    files = _files_in(folder) if succeeded else frozenset()
    complete = "export.json" in files
    onnx: bool | str = False
    note = ""
    tried = "model.onnx" in files  # ONNX made, or tried and impossible for this graph
    if "model.onnx" in files:
        onnx = True
    elif succeeded:
        manifest_note: dict[str, Any] = {}
        if complete:
            from engine.export import read_export_manifest

            manifest_note = read_export_manifest(Path(folder)).get("onnx", {}) or {}
        tried = "errors" in manifest_note
        if "errors" in manifest_note:
            onnx, note = "unavailable", str(manifest_note.get("note") or "this graph has no ONNX export")
        elif export_status == ExportStatus.PENDING:
            onnx = "pending"
        elif export_status == ExportStatus.FAILED:
            onnx, note = "unavailable", export_error or "the export failed"
    if export_status == ExportStatus.NONE and tried and os.path.isfile(os.path.join(run_folder, EXPORT_ZIP)):
        # The export's job row is gone (removed after its keep time): its files say it finished.
        export_status = ExportStatus.READY
    return {
        "status": export_status,
        "safetensors": "model.safetensors" in files,
        "python": "model.py" in files,
        "config": "config.json" in files,
        "zip": complete or (succeeded and os.path.isfile(os.path.join(run_folder, EXPORT_ZIP))),
        "onnx": onnx,
        "note": note,
    }


def run_download_name(run: Run, suffix: str) -> str:
    """A file name for downloads: `<graph-name>-run<id><suffix>`, safe in a header."""
    name = getattr(getattr(run.graph_revision, "graph", None), "name", "") or "model"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._") or "model"
    return f"{slug[:80]}-run{run.pk}{suffix}"


def run_module_name(run: Run, checkpoint: str | None = None) -> str:
    """The Python source's download name, `<graph_name>_run<id>[_<checkpoint>].py`: one per run, as
    the other downloads are, and still importable (`from mlp_run12 import Net`)."""
    name = getattr(getattr(run.graph_revision, "graph", None), "name", "") or "model"
    slug = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "model"
    if slug[0].isdigit():
        slug = f"model_{slug}"
    tail = "_" + re.sub(r"[^A-Za-z0-9_]+", "_", checkpoint) if checkpoint else ""
    return f"{slug[:80]}_run{run.pk}{tail}.py"


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix] = value


def config_flatten(config: dict[str, Any]) -> dict[str, Any]:
    """A config as {dotted path: value} ("optimizer.lr": 0.001); lists and empty objects are values."""
    out: dict[str, Any] = {}
    _flatten(config or {}, "", out)
    return out


def runs_config_diff(*, runs: list[Run]) -> list[dict[str, Any]]:
    """[{field, values: {run id: value}, distinct}] of the config fields that differ between the runs
    (dotted paths). A field some runs lack is null for them."""
    return _values_diff({run.pk: config_flatten(run.config) for run in runs})


def node_params_flatten(node_params: Any) -> dict[str, Any]:
    """A revision's node_params as {"nodes.<node id>.<parameter>": value}, the names a sweep's
    space and the runs list's filter use (nodes.fc1.out_features)."""
    if not isinstance(node_params, dict):
        return {}
    return {f"nodes.{node}.{name}": value for node, params in node_params.items() if isinstance(params, dict)
            for name, value in params.items()}


def runs_graph_params_diff(*, runs: list[Run]) -> list[dict[str, Any]]:
    """The same for graph parameters: a layer's width that changed between revisions is a field
    (`nodes.fc1.out_features`), not only "rev 1 / rev 2"."""
    return _values_diff({run.pk: node_params_flatten(run.graph_revision.node_params) for run in runs})


def revisions_params(*, revision_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Revision id -> node_params_flatten of it, in one query (the runs list's ?fields=graph_params)."""
    from webapp.graphs.models import GraphRevision

    rows = GraphRevision.objects.filter(pk__in=set(revision_ids)).values_list("pk", "node_params")
    return {pk: node_params_flatten(params) for pk, params in rows}


def _values_diff(flat: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    fields: dict[str, None] = {}
    for values in flat.values():
        fields.update(dict.fromkeys(values))
    diff = []
    for field in sorted(fields):
        values = {str(pk): flat[pk].get(field) for pk in flat}
        distinct = len({repr(v) for v in values.values()})
        if distinct > 1:
            diff.append({"field": field, "values": values, "distinct": distinct})
    return diff


def runs_graph_diff(*, runs: list[Run]) -> list[dict[str, Any]] | None:
    """None when every run trained the same graph revision; else each other revision's changes
    against the first run's: [{runs: [ids], graph, revision, changes: ["fc1.out_features: 64 -> 128"]}]."""
    from webapp.graphs.selectors import revision_diff

    first = runs[0].graph_revision
    if all(run.graph_revision_id == first.pk for run in runs):
        return None
    groups: dict[int, list[Run]] = {}
    for run in runs:
        if run.graph_revision_id != first.pk:
            groups.setdefault(run.graph_revision_id, []).append(run)
    return [
        {"runs": [run.pk for run in members], "graph": members[0].graph_revision.graph_id,
         "revision": members[0].graph_revision.number,
         "changes": revision_diff(first, members[0].graph_revision)}
        for members in groups.values()
    ]


def runs_compare_rows(*, runs: list[Run]) -> list[dict[str, Any]]:
    """The `runs` of GET /api/runs/compare/: who each run is, its config, final metrics and summary."""
    summaries = runs_summaries(run_ids=[run.pk for run in runs])
    return [
        {
            "id": run.pk, "name": run.name, "status": run.status,
            "graph": run.graph_revision.graph_id, "graph_name": run.graph_revision.graph.name,
            "revision": run.graph_revision.number, "graph_revision": run.graph_revision_id,
            "dataset": run.dataset_id, "dataset_name": run.dataset.name if run.dataset else None,
            "config": run.config,
            "final_metrics": run.final_metrics or {}, "summary": summaries[run.pk],
            "created_by": getattr(run.created_by, "username", None),
        }
        for run in runs
    ]


def run_duration_s(run: Run) -> float | None:
    """Seconds from the start of training to its end (to now while running); None before it started."""
    from django.utils import timezone

    if run.started_at is None:
        return None
    end = run.finished_at or (timezone.now() if run.status == RunStatus.RUNNING else None)
    return None if end is None else max(0.0, (end - run.started_at).total_seconds())


# --- the queue: fair order, positions, workers ------------------------------------------------




# GET /api/runs/columns/ reads the newest runs of the filter, not all of them: a team's runs share
# a handful of configs and metrics, so a sample names what the table can show, in bounded time.
COLUMNS_SAMPLE = 1000

# At most this many names of each kind (a config with thousands of keys would not fit a picker).
COLUMNS_MAX = 500


def runs_columns(*, runs: QuerySet[Run], sample: int = COLUMNS_SAMPLE) -> dict[str, Any]:
    """The names the runs table can show and the filter can use, from the newest `sample` of `runs`:
    {"metrics": final metric names with a number, "best": the best checkpoint's metric names,
    "config": dotted config paths, "nodes": "nodes.<node>.<param>" of their graph revisions,
    "sampled": runs read, "complete": whether they were all of `runs`}, each list sorted.

    Three queries whatever the size (the runs' JSON columns, their best checkpoints, their
    revisions' node_params), on SQLite and PostgreSQL alike."""
    rows = list(runs.order_by("-id").values_list("pk", "final_metrics", "config", "graph_revision_id")[:sample + 1])
    complete = len(rows) <= sample
    rows = rows[:sample]
    metrics: set[str] = set()
    config: set[str] = set()
    for _pk, final, cfg, _rev in rows:
        if isinstance(final, dict):
            metrics.update(k for k, v in final.items() if isinstance(v, int | float) and not isinstance(v, bool))
        if isinstance(cfg, dict):
            config.update(config_flatten(cfg))
    best: set[str] = set()
    ids = [row[0] for row in rows]
    for values in Checkpoint.objects.filter(run_id__in=ids, name="best").values_list("metrics", flat=True):
        if isinstance(values, dict):
            best.update(k for k, v in values.items() if isinstance(v, int | float) and not isinstance(v, bool))
    nodes: set[str] = set()
    for params in revisions_params(revision_ids=[row[3] for row in rows]).values():
        nodes.update(params)
    config.discard("")
    return {"metrics": sorted(metrics)[:COLUMNS_MAX], "best": sorted(best)[:COLUMNS_MAX],
            "config": sorted(config)[:COLUMNS_MAX], "nodes": sorted(nodes)[:COLUMNS_MAX],
            "sampled": len(rows), "complete": complete}
