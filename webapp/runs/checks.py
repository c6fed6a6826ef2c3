"""Checks made before a run is queued: the dataset is trainable, the graph is valid and fits it.

Part of the service layer (run_create calls them); they raise webapp.errors.DomainError (400).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from webapp.errors import DomainError


def graph_limits() -> Any:
    """The engine's validation limits with the service's configured caps."""
    from engine.validate import Limits

    return Limits(
        max_nodes=settings.NETLOOM_MAX_NODES,
        max_params=settings.NETLOOM_MAX_PARAMS,
        max_activation_bytes=settings.NETLOOM_MAX_ACTIVATION_BYTES,
    )


def expected_output_widths(summary: dict[str, Any], config: dict[str, Any]) -> tuple[str, list[int]]:
    """(task, allowed widths of the last layer) for a dataset summary."""
    task = summary.get("task") or "classification"
    if "output_size" in summary:
        widths = [int(summary["output_size"])]
    elif task == "classification":
        widths = [int(summary.get("num_classes") or 0)]
    else:
        mean = (summary.get("target") or {}).get("mean")
        widths = [len(mean) if isinstance(mean, list) else 1]
    if task == "classification" and widths == [2] and config.get("loss") == "bce_with_logits":
        widths = [1]  # one logit for a binary problem
    return task, widths


def check_dataset_trainable(*, dataset: Any) -> None:
    """Refuse (400 on `dataset`) a dataset that is not ready or still lacks a choice, e.g. its target."""
    from webapp.datasets.services import dataset_needs

    if dataset.status != "ready":
        raise DomainError("dataset_not_ready", f"Dataset {dataset.pk} is {dataset.status}; only ready datasets can be trained on.",
                          fields={"dataset": [f"Dataset is {dataset.status}, not ready."]})
    if dataset_needs(dataset=dataset) == "target":
        raise DomainError("dataset_not_trainable",
                          f"Dataset {dataset.name!r} has no target column yet; choose one on the datasets page first.",
                          fields={"dataset": ["No target column is chosen: choose the column to predict first."]})


def check_graph_fits_dataset(*, graph_revision: Any, dataset: Any, config: dict[str, Any]) -> dict[str, Any]:
    """Validate the revision's spec and compare its input/output shapes with the dataset's.

    Raises DomainError "invalid_graph" (400) with node-keyed problems: `fields` maps "graph.<node id>" to messages,
    and `errors` lists the engine's problems ({node, code, field, message}).
    Returns the validation report JSON.
    """
    from engine.validate import validate

    if getattr(dataset, "status", "ready") != "ready":
        raise DomainError("dataset_not_ready", f"Dataset {dataset.pk} is {dataset.status}; only ready datasets can be trained on.",
                          fields={"dataset": [f"Dataset is {dataset.status}, not ready."]})
    spec = graph_revision.spec
    report = validate(spec, graph_limits())
    problems = [p.to_json() for p in report.errors]
    summary = dataset.summary or {}
    feature_shape = summary.get("feature_shape")
    inputs = (spec or {}).get("inputs") or [] if isinstance(spec, dict) else []
    if not problems and feature_shape is not None and inputs:
        if len(inputs) != 1:
            problems.append({"node": None, "code": "shape_mismatch", "field": None,
                             "message": f"the dataset gives one input, but the graph has {len(inputs)} inputs"})
        elif list(inputs[0].get("shape") or []) != list(feature_shape):
            problems.append({
                "node": inputs[0].get("id"), "code": "shape_mismatch", "field": "shape",
                "message": f"input shape {list(inputs[0].get('shape') or [])} does not match the dataset's "
                           f"feature shape {list(feature_shape)}",
            })
    if not problems:
        task, widths = expected_output_widths(summary, config)
        outputs = report.to_json()["outputs"]
        if len(outputs) != 1:
            problems.append({"node": None, "code": "shape_mismatch", "field": None,
                             "message": f"a run trains one output, but the graph has {len(outputs)}"})
        else:
            (node, shape), = outputs.items()
            if shape is None or len(shape) != 1 or shape[0] not in widths:
                what = f"{widths[0]} classes" if task == "classification" else f"a regression target of width {widths[0]}"
                problems.append({
                    "node": node, "code": "shape_mismatch", "field": "out_features",
                    "message": f"output shape {shape} does not fit the dataset: it has {what}, so the last "
                               f"layer needs out_features={widths[0]}",
                })
    if problems:
        fields: dict[str, list[str]] = {}
        for problem in problems:
            key = f"graph.{problem['node']}" if problem["node"] else "graph"
            fields.setdefault(key, []).append(problem["message"])
        first = problems[0]
        where = f"node {first['node']}: " if first["node"] else ""
        raise DomainError("invalid_graph", f"The graph cannot train on this dataset: {where}{first['message']}",
                          fields=fields, extra={"errors": problems})
    return report.to_json()


# --- config fields that depend on the deployment, the dataset or the graph --------------------


def validation_metric_names(*, summary: dict[str, Any], config: dict[str, Any], output_shape: list[int]) -> list[str]:
    """The names of the validation metrics a run of this config will have (`val/loss`, ...).

    Asked of the engine, not listed again here: its own `evaluate` runs once on a two-sample
    stand-in of the model's output (zeros of the output shape), under the task and loss the
    trainer will resolve, and the scalar names it reports are the names the scheduler and early
    stopping can read. Empty when the engine cannot tell (the graph check reports why).
    """
    import torch

    from engine.train.errors import TrainingError
    from engine.train.metrics import evaluate, float_metrics, resolve_task

    task = config.get("task") or "auto"
    if task == "auto":
        task = summary.get("task") or "classification"
    shape = tuple(int(size) for size in output_shape)
    width = 1
    for size in shape:
        width *= size
    if task == "classification" and config.get("loss") != "bce_with_logits":
        y = torch.tensor([0, 1])
    elif task == "classification":
        y = torch.tensor([[0.0], [1.0]]) if width == 1 else torch.zeros(2, width)
    else:
        y = torch.zeros(2, *shape)
    info = type("Info", (), {"task": task, "num_classes": summary.get("num_classes")})()

    class Outputs(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.zeros(x.shape[0], *shape)

    try:
        spec = resolve_task(task=task, loss=config.get("loss"), output_shape=shape, y=y, info=info)
        data = type("Split", (), {"x": torch.zeros(2, 1), "y": y})()
        values = evaluate(Outputs(), data, spec, prefix="val", batch_size=2, device=torch.device("cpu"))
    except (TrainingError, RuntimeError, ValueError):
        return []
    return sorted(float_metrics(values))


def deployment_devices() -> list[str]:
    """The devices runs may ask for here: NETLOOM_DEVICES ("auto" in it: anything goes).

    Which devices each worker has is not known to the web process yet (issue 13): this is what
    the deployment says its workers have.
    """
    return [str(name).strip() for name in settings.NETLOOM_DEVICES]


def _device_available(device: str, devices: list[str]) -> bool:
    if device in ("auto", "cpu") or "auto" in devices or device in devices:
        return True
    cuda = [name for name in devices if name == "cuda" or name.startswith("cuda:")]
    if device == "cuda":
        return bool(cuda)
    return "cuda" in cuda  # a bare "cuda" entry: GPUs of unknown count; the worker checks the index


def check_config_fits(
    *, config: dict[str, Any], recipe: dict[str, Any], summary: dict[str, Any], output_shape: list[int] | None
) -> None:
    """Refuse (400, naming `config.<field>`) what would otherwise fail only when the run starts.

    The device and precision against this deployment's devices, the scheduler's and early
    stopping's metric against the metrics the run will have, early stopping without a
    validation split.
    """
    fields: dict[str, list[str]] = {}
    devices = deployment_devices()
    device = str(config.get("device") or "auto")
    has_cuda = "auto" in devices or any(name == "cuda" or name.startswith("cuda:") for name in devices)
    if not _device_available(device, devices):
        fields["config.device"] = [
            f"device {device!r} is not available in this deployment (its workers have "
            f"{', '.join(devices) or 'no devices'}; NETLOOM_DEVICES); use 'auto' or one of those"
        ]
    nodes = int(config.get("nodes") or 1)
    if nodes > 1 and settings.NETLOOM_RUNNER != "kubernetes":
        fields["config.nodes"] = [
            f"nodes {nodes}: a run over several machines trains as a Kubernetes Job, and this deployment "
            "trains on its own workers (NETLOOM_RUNNER=celery); use nodes 1 and up to 8 processes"
        ]
    if nodes > 1 and device == "auto":
        fields["config.nodes"] = [
            f"nodes {nodes}: say where the ranks train, device 'cuda' (a GPU per process on every node) "
            "or 'cpu'; 'auto' cannot tell the cluster what the pods need"
        ]
    if config.get("precision") == "fp16" and (device == "cpu" or (device == "auto" and not has_cuda)):
        fields["config.precision"] = [
            "precision 'fp16' needs a CUDA device, and this run would train on the CPU; use 'bf16' or 'fp32'"
        ]
    early = config.get("early_stopping")
    split = recipe.get("split") or {}
    if early and "val" in split and not split.get("val"):
        fields["config.early_stopping"] = ["early_stopping needs a validation split; set split.val above 0"]
    asked: list[tuple[str, str]] = []
    scheduler = config.get("scheduler") or {}
    if scheduler.get("name") == "plateau":
        asked.append(("scheduler.metric", str(scheduler.get("metric"))))
    if early:
        asked.append(("early_stopping.metric", str(early.get("metric"))))
    if output_shape is not None and any(metric != "val/loss" for _, metric in asked):
        names = validation_metric_names(summary=summary, config=config, output_shape=output_shape)
        for field, metric in asked:
            if names and metric not in names:
                fields[f"config.{field}"] = [
                    f"{field} {metric!r} is not a validation metric of this run; choose one of {', '.join(names)}"
                ]
    if fields:
        first_field, (first, *_) = next(iter(fields.items()))
        raise DomainError("invalid_config", f"{first_field}: {first}", fields=fields)


# --- where a run's weights start: freeze list, fine-tune / resume from a checkpoint ------------


def check_freeze(*, config: dict[str, Any], spec: Any) -> None:
    """Refuse (400 on `config.freeze`) a freeze list naming a node the graph does not have."""
    freeze = config.get("freeze") or []
    if not freeze:
        return
    nodes = {str(node.get("id")) for node in (spec or {}).get("nodes") or [] if isinstance(node, dict)}
    unknown = [str(name) for name in freeze if str(name) not in nodes]
    if unknown:
        message = f"freeze names nodes this graph does not have: {', '.join(unknown)}"
        raise DomainError("invalid_config", f"config.freeze: {message}", fields={"config.freeze": [message]})


INIT_MODES = ("finetune", "resume")


@dataclass(frozen=True)
class InitSource:
    """A checked start for a new run: the checkpoint folder to copy and `run.init` to store."""

    path: Path
    init: dict[str, Any]
    problems: list[dict[str, str]]


def _freeze_problems(plan: dict[str, Any], freeze: Any) -> list[dict[str, str]]:
    """One problem per frozen node whose parameters do not all load from the checkpoint: frozen,
    it would keep its random init for the whole run."""
    if not isinstance(freeze, list) or not freeze:
        return []
    problems = []
    for node in dict.fromkeys(str(name) for name in freeze):
        mismatched = [m for m in plan.get("mismatched") or [] if m.get("node") == node]
        new = [n for n in plan.get("new") or [] if n.get("node") == node]
        if not mismatched and not new:
            continue
        why = [f"{m['parameter']} is {m['checkpoint_shape']} in the checkpoint, {m['graph_shape']} in the graph"
               for m in mismatched] + [f"{n['parameter']} is not in the checkpoint" for n in new]
        problems.append({"field": "config.freeze", "node": node, "message":
                         f"{node} cannot be frozen: its parameters do not load from the checkpoint "
                         f"({'; '.join(why)}), so it would train nothing from its random init; "
                         f"leave {node} out of freeze (or start from a checkpoint of this graph's shape)"})
    return problems


def init_source(
    *, user: Any, graph_revision: Any, init: Any, epochs: int | None = None,
    names: dict[str, str] | None = None, freeze: Any = None,
) -> InitSource:
    """Resolve `init` {run, checkpoint, mode} to a kept checkpoint of a run the user can see, with its plan.

    Raises DomainError naming `init.<field>` (or the request's own name for it, `names`) for a run
    the user cannot see (another team's and a missing one look alike, as for a dataset or graph
    named in a body), a malformed request, an unknown checkpoint or one whose folder was pruned. What would stop the run but not the plan (resume across revisions, epochs
    not above the checkpoint's, a `freeze`d node whose parameters do not load) is listed in
    `problems` ({field, message}, and `node` for a frozen node); run_init_check raises them.
    """
    from engine.train.finetune import init_plan

    from .models import Checkpoint
    from .selectors import run_for_user

    if not isinstance(init, dict):
        raise DomainError("invalid", "init must be an object {run, checkpoint, mode}.", field="init")
    field = {"run": "init.run", "checkpoint": "init.checkpoint", "mode": "init.mode", **(names or {})}
    run_id, name, mode = init.get("run"), init.get("checkpoint"), init.get("mode", "finetune")
    if isinstance(run_id, bool) or not isinstance(run_id, int) or not 1 <= run_id < 2**63:
        raise DomainError("invalid", f"{field['run']} must be a run id.", field=field["run"])
    if not isinstance(name, str) or not name:
        raise DomainError("invalid", f"{field['checkpoint']} must be a checkpoint's name.", field=field["checkpoint"])
    if mode not in INIT_MODES:
        raise DomainError("invalid", f"{field['mode']} must be one of {', '.join(INIT_MODES)}.", field=field["mode"])
    source = run_for_user(user=user, run_id=run_id)
    if source is None:
        raise DomainError("invalid", f"No run {run_id} among your teams' runs.", field=field["run"])
    checkpoint = Checkpoint.objects.filter(run=source, name=name).first()
    if checkpoint is None:
        raise DomainError("checkpoint_missing", f"Run {run_id} has no checkpoint named {name!r}.",
                          field=field["checkpoint"])
    path = Path(checkpoint.path)
    if not (path / "state.json").is_file():
        raise DomainError("checkpoint_pruned",
                          f"Checkpoint {name!r} of run {run_id} is no longer kept (training pruned it).",
                          field=field["checkpoint"])
    problems: list[dict[str, str]] = []
    if mode == "resume" and name == "imported" and (source.origin or {}).get("kind") == "import":
        problems.append({"field": field["mode"], "message":
                         "imported weights have no optimizer state or counters to resume; use mode 'finetune'"})
    elif mode == "resume":
        if source.graph_revision_id != graph_revision.pk:
            problems.append({"field": "graph_revision", "message":
                             f"resume needs the checkpoint's graph revision ({source.graph_revision_id}); "
                             "use mode 'finetune' to start a changed graph from these weights"})
        if epochs is not None and not epochs > checkpoint.epoch:
            problems.append({"field": "config.epochs", "message":
                             f"resume needs more epochs than the checkpoint has done ({checkpoint.epoch:g})"})
    try:
        plan = init_plan(graph_revision.spec, path)
    except (ValueError, RuntimeError) as exc:  # a draft that does not build, weights that cannot be read
        raise DomainError("invalid_graph", f"This graph cannot take a checkpoint's weights: {exc}",
                          field="graph") from None
    plan_json = plan.to_json() if hasattr(plan, "to_json") else dict(plan)
    problems += _freeze_problems(plan_json, freeze)
    return InitSource(path=path, problems=problems, init={
        "run": source.pk, "checkpoint": name, "mode": mode, "plan": plan_json,
        "step": int(checkpoint.step), "epoch": float(checkpoint.epoch),
    })


def run_init_check(*, user: Any, graph_revision: Any, config: dict[str, Any], init: Any) -> InitSource:
    """init_source, refusing (400 naming each field) what `problems` lists."""
    source = init_source(user=user, graph_revision=graph_revision, init=init, epochs=config.get("epochs"),
                         freeze=config.get("freeze"))
    if source.problems:
        fields: dict[str, list[str]] = {}
        for problem in source.problems:
            fields.setdefault(problem["field"], []).append(problem["message"])
        first = source.problems[0]
        frozen = [p["node"] for p in source.problems if "node" in p]
        raise DomainError("invalid_init", f"{first['field']}: {first['message']}", fields=fields,
                          extra={"nodes": frozen} if frozen else None)
    return source


def init_plan_read(
    *, user: Any, graph_revision: Any, init: Any, epochs: int | None = None, freeze: Any = None
) -> dict[str, Any]:
    """POST /api/runs/init-plan/: the engine's InitPlan for starting `graph_revision` from a checkpoint,
    with the `problems` ({field, message}) that would refuse the run (a `freeze` list is checked
    against what loads). Nothing is written."""
    source = init_source(user=user, graph_revision=graph_revision, init=init, epochs=epochs,
                         names={"run": "from_run", "checkpoint": "checkpoint", "mode": "mode"}, freeze=freeze)
    return {**source.init["plan"], "run": source.init["run"], "checkpoint": source.init["checkpoint"],
            "mode": source.init["mode"], "step": source.init["step"], "epoch": source.init["epoch"],
            "problems": source.problems, "revision": graph_revision.number}
