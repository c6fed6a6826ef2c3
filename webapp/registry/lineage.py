"""Lineage: where a run, a model version or a dataset version came from and what came of it, as a
small graph.

Upstream of a run: the dataset it trained on, and the run and checkpoint it was fine-tuned or
resumed from (or the run it reproduces), recursively. Downstream: its checkpoints, the runs
started from them (and its reproductions), the model versions registered from it and the aliases
naming those. Each level of the walk is a handful of queries for the whole level, never one per
node; `depth` bounds the hops between runs and `cap` the nodes (`truncated` says a bound cut it).
Only the team's own rows are read: a node of another team never appears.

One walk (`lineage`) serves the three starting points: a run (up and down from it), a model
version (up from its run), a dataset version (down from the runs pinned to it).

It lives in the registry (which sits on runs) because model versions and aliases are its nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from webapp.datasets.models import Dataset, DatasetVersion
from webapp.runs.models import Checkpoint, Run

from .models import ModelAlias, ModelVersion

DEPTH_DEFAULT = 3
DEPTH_MAX = 10
NODE_CAP = 500

# What a run node reads: names and numbers, never the run's big JSON columns besides config; the
# pinned dataset version's number and digest for _dataset_node.
_RUN_FIELDS = ("id", "team_id", "name", "status", "init", "config", "code_version", "reproduces_id",
               "created_at", "finished_at", "graph_revision__id", "graph_revision__number",
               "graph_revision__graph__id", "graph_revision__graph__name", "dataset__id", "dataset__name",
               "dataset__kind", "dataset_version__id", "dataset_version__number", "dataset_version__digest")


def _runs(team_id: int) -> Any:
    return (Run.objects.filter(team_id=team_id).select_related("graph_revision__graph", "dataset", "dataset_version")
            .only(*_RUN_FIELDS))


def _dataset_node(run: Run) -> dict[str, Any] | None:
    """The node of the data `run` trained on (None for a run of imported weights).

    The one place lineage reads a run's data: a run that pins a dataset version gives its
    {number, digest} here, and the node becomes that version.
    """
    if run.dataset is None:
        return None
    return _data_version_node(run.dataset, run.dataset_version if run.dataset_version_id is not None else None)


def _data_version_node(dataset: Dataset, version: DatasetVersion | None) -> dict[str, Any]:
    """A dataset node: `dataset:<id>@<n>` for a version, `dataset:<id>` for a run that pins none."""
    key = f"dataset:{dataset.pk}" + (f"@{version.number}" if version is not None else "")
    label = dataset.name + (f" v{version.number}" if version is not None else "")
    return {"id": key, "kind": "dataset", "label": label,
            "data": {"dataset": dataset.pk, "name": dataset.name, "kind": dataset.kind,
                     "version": version.number if version is not None else None,
                     "digest": version.digest if version is not None else None}}


def _config_summary(config: dict[str, Any]) -> dict[str, Any]:
    optimizer = config.get("optimizer") or {}
    return {"epochs": config.get("epochs"), "batch_size": config.get("batch_size"),
            "optimizer": optimizer.get("name"), "lr": optimizer.get("lr"), "device": config.get("device"),
            "precision": config.get("precision"), "deterministic": bool(config.get("deterministic"))}


def _run_node(run: Run) -> dict[str, Any]:
    revision = run.graph_revision
    return {"id": f"run:{run.pk}", "kind": "run", "label": run.name or f"run {run.pk}",
            "data": {"run": run.pk, "name": run.name, "status": run.status, "graph": revision.graph.pk,
                     "graph_name": revision.graph.name, "revision": revision.number,
                     "seed": (run.config or {}).get("seed"), "config": _config_summary(run.config or {}),
                     "code_version": run.code_version or {}, "init": _init_brief(run.init),
                     "reproduces": run.reproduces_id,
                     "created_at": run.created_at.isoformat() if run.created_at else None}}


def _init_brief(init: dict[str, Any] | None) -> dict[str, Any] | None:
    if not init or not init.get("run"):
        return None
    return {"run": init.get("run"), "checkpoint": init.get("checkpoint"), "mode": init.get("mode")}


def _checkpoint_id(run_id: int, name: str) -> str:
    return f"checkpoint:{run_id}:{name}"


def _checkpoint_node(run_id: int, name: str, row: Checkpoint | None) -> dict[str, Any]:
    data: dict[str, Any] = {"run": run_id, "name": name, "available": row is not None}
    if row is not None:
        data.update(step=row.step, epoch=row.epoch, metrics=row.metrics or {})
    return {"id": _checkpoint_id(run_id, name), "kind": "checkpoint", "label": name, "data": data}


def _version_node(version: ModelVersion) -> dict[str, Any]:
    model = version.model
    source = version.source or {}
    return {"id": f"model_version:{version.pk}", "kind": "model_version", "label": f"{model.name} v{version.number}",
            "data": {"model": model.pk, "model_name": model.name, "number": version.number,
                     "run": source.get("run"), "checkpoint": source.get("checkpoint"),
                     "metrics": version.metrics or {}}}


class _Graph:
    """Nodes and edges, each once, up to `cap` nodes."""

    def __init__(self, cap: int) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str], str] = {}
        self.cap = cap
        self.truncated = False

    def node(self, node: dict[str, Any] | None) -> bool:
        if node is None:
            return False
        if node["id"] in self.nodes:
            return True
        if len(self.nodes) >= self.cap:
            self.truncated = True
            return False
        self.nodes[node["id"]] = node
        return True

    def edge(self, source: str, target: str, kind: str) -> None:
        if source in self.nodes and target in self.nodes:
            self.edges.setdefault((source, target), kind)

    def answer(self, root: str) -> dict[str, Any]:
        return {"root": root, "nodes": list(self.nodes.values()),
                "edges": [{"source": s, "target": t, "kind": k} for (s, t), k in self.edges.items()],
                "truncated": self.truncated}


def _add_run(graph: _Graph, run: Run) -> bool:
    if not graph.node(_run_node(run)):
        return False
    dataset = _dataset_node(run)
    if graph.node(dataset):
        graph.edge(dataset["id"], f"run:{run.pk}", "trained_on")  # type: ignore[index]
    return True


def _upstream(graph: _Graph, team_id: int, start: list[Run], depth: int) -> None:
    """The runs (and their checkpoints) each run started from or reproduces, level by level."""
    frontier = start
    for _ in range(depth):
        wanted: dict[int, list[tuple[Run, str | None]]] = {}
        for run in frontier:
            init = _init_brief(run.init)
            if init is not None:
                wanted.setdefault(int(init["run"]), []).append((run, str(init["checkpoint"])))
            if run.reproduces_id:
                wanted.setdefault(run.reproduces_id, []).append((run, None))
        if not wanted:
            return
        found = {run.pk: run for run in _runs(team_id).filter(pk__in=list(wanted))}
        names = {(source, name) for source, uses in wanted.items() for _, name in uses if name}
        rows = {(c.run_id, c.name): c for c in Checkpoint.objects.filter(
            run_id__in=list(found), name__in=sorted({name for _, name in names}))}
        frontier = []
        for source_id, uses in wanted.items():
            source = found.get(source_id)
            if source is None or not _add_run(graph, source):
                continue  # another team's run, deleted since, or past the cap
            frontier.append(source)
            for run, name in uses:
                if name is None:
                    graph.edge(f"run:{source.pk}", f"run:{run.pk}", "reproduced_by")
                    continue
                if graph.node(_checkpoint_node(source.pk, name, rows.get((source.pk, name)))):
                    graph.edge(f"run:{source.pk}", _checkpoint_id(source.pk, name), "checkpoint")
                    graph.edge(_checkpoint_id(source.pk, name), f"run:{run.pk}", (run.init or {}).get("mode") or "finetune")


def _downstream(graph: _Graph, team_id: int, start: list[Run], depth: int) -> None:
    """Each run's checkpoints, the runs started from them or reproducing it, its model versions and
    their aliases, level by level."""
    frontier = start
    for _ in range(depth):
        if not frontier:
            return
        ids = [run.pk for run in frontier]
        for row in Checkpoint.objects.filter(run_id__in=ids).order_by("run_id", "step", "name"):
            if graph.node(_checkpoint_node(row.run_id, row.name, row)):
                graph.edge(f"run:{row.run_id}", _checkpoint_id(row.run_id, row.name), "checkpoint")
        _versions(graph, ModelVersion.objects.filter(run_id__in=ids, model__team_id=team_id))
        children = list(_runs(team_id).filter(init__run__in=ids)) + list(_runs(team_id).filter(reproduces_id__in=ids))
        frontier = []
        for child in children:
            if f"run:{child.pk}" not in graph.nodes:
                if not _add_run(graph, child):
                    continue  # past the cap
                frontier.append(child)
            init = _init_brief(child.init)
            if child.reproduces_id in ids:
                graph.edge(f"run:{child.reproduces_id}", f"run:{child.pk}", "reproduced_by")
            if init is not None and int(init["run"]) in ids:
                checkpoint = _checkpoint_id(int(init["run"]), str(init["checkpoint"]))
                if checkpoint not in graph.nodes:
                    graph.node(_checkpoint_node(int(init["run"]), str(init["checkpoint"]), None))
                    graph.edge(f"run:{init['run']}", checkpoint, "checkpoint")
                graph.edge(checkpoint, f"run:{child.pk}", init.get("mode") or "finetune")


def _versions(graph: _Graph, versions: Any) -> None:
    """Model version nodes (from their run or checkpoint) and the aliases naming them."""
    added = []
    for version in versions.select_related("model").order_by("model_id", "number"):
        if not graph.node(_version_node(version)):
            continue
        added.append(version.pk)
        source = version.source or {}
        node = f"model_version:{version.pk}"
        if version.run_id:
            checkpoint = source.get("checkpoint")
            origin = _checkpoint_id(version.run_id, checkpoint) if checkpoint else f"run:{version.run_id}"
            graph.edge(origin if origin in graph.nodes else f"run:{version.run_id}", node, "registered")
    for alias in ModelAlias.objects.filter(version_id__in=added).select_related("model").order_by("model_id", "name"):
        key = f"alias:{alias.model_id}:{alias.name}"
        if graph.node({"id": key, "kind": "alias", "label": alias.name,
                       "data": {"model": alias.model_id, "model_name": alias.model.name, "name": alias.name}}):
            graph.edge(f"model_version:{alias.version_id}", key, "alias")


def lineage(*, team_id: int, root: dict[str, Any], up: Sequence[Run] = (), down: Sequence[Run] = (),
            depth: int = DEPTH_DEFAULT, cap: int = NODE_CAP, more: bool = False,
            seed: Callable[[_Graph], None] | None = None) -> dict[str, Any]:
    """{root, nodes, edges, truncated}: the one walk behind every starting point.

    `root` is the start's node (drawn first, so the cap never cuts it); the runs of `up` are walked
    upstream and those of `down` downstream, `depth` hops each way (a run of both is walked both
    ways). `seed(graph)`, given, adds the start's own nodes after the runs (a model version, its
    checkpoint); `more` says the start had more runs than were read (the answer is `truncated`).
    """
    graph = _Graph(cap)
    graph.node(root)
    for run in [*up, *down]:
        _add_run(graph, run)
    if seed is not None:
        seed(graph)
    _upstream(graph, team_id, list(up), depth)
    _downstream(graph, team_id, list(down), depth)
    graph.truncated = graph.truncated or more
    return graph.answer(root["id"])


def run_lineage(*, run_id: int, team_id: int, depth: int = DEPTH_DEFAULT, cap: int = NODE_CAP) -> dict[str, Any] | None:
    """{root, nodes, edges, truncated} around run `run_id` of team `team_id` (None: no such run there)."""
    run = _runs(team_id).filter(pk=run_id).first()
    if run is None:
        return None
    return lineage(team_id=team_id, root=_run_node(run), up=[run], down=[run], depth=depth, cap=cap)


def version_lineage(*, version: ModelVersion, depth: int = DEPTH_DEFAULT, cap: int = NODE_CAP) -> dict[str, Any]:
    """{root, nodes, edges, truncated} around a model version: the run (and checkpoint) it came
    from with that run's upstream, and the version's aliases."""
    team_id = version.model.team_id
    run = _runs(team_id).filter(pk=version.run_id).first() if version.run_id else None

    def seed(graph: _Graph) -> None:
        checkpoint = (version.source or {}).get("checkpoint")
        if run is not None and checkpoint:
            row = Checkpoint.objects.filter(run_id=run.pk, name=checkpoint).first()
            graph.node(_checkpoint_node(run.pk, checkpoint, row))
            graph.edge(f"run:{run.pk}", _checkpoint_id(run.pk, checkpoint), "checkpoint")
        _versions(graph, ModelVersion.objects.filter(pk=version.pk))

    return lineage(team_id=team_id, root=_version_node(version), up=[run] if run is not None else [],
                   depth=depth, cap=cap, seed=seed)


def dataset_version_lineage(*, version: DatasetVersion, team_id: int, depth: int = DEPTH_DEFAULT,
                            cap: int = NODE_CAP) -> dict[str, Any]:
    """{root, nodes, edges, truncated} downstream of a dataset version: the team's runs pinned to
    it, their checkpoints, the runs started from those (and reproductions), the model versions
    registered from any of them and their aliases ("which runs and models used this data")."""
    pinned = list(_runs(team_id).filter(dataset_version_id=version.pk).order_by("id")[:cap])
    return lineage(team_id=team_id, root=_data_version_node(version.dataset, version), down=pinned[:cap - 1],
                   depth=depth, cap=cap, more=len(pinned) >= cap)


def lineage_depth(value: Any) -> int:
    """`?depth=` as a whole number 1..DEPTH_MAX (default DEPTH_DEFAULT); ValueError naming the bounds."""
    if value in (None, ""):
        return DEPTH_DEFAULT
    text = str(value)
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= DEPTH_MAX:
        raise ValueError(f"depth must be a whole number from 1 to {DEPTH_MAX}.")
    return int(text)
