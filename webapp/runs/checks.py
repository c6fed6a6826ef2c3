"""Checks made before a run is queued: the graph is valid and fits the dataset's shapes."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from webapp.api.errors import ApiError


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
        raise ApiError(400, "dataset_not_ready", f"Dataset {dataset.pk} is {dataset.status}; only ready datasets can be trained on.",
                       fields={"dataset": [f"Dataset is {dataset.status}, not ready."]})
    if dataset_needs(dataset=dataset) == "target":
        raise ApiError(400, "dataset_not_trainable",
                       f"Dataset {dataset.name!r} has no target column yet; choose one on the datasets page first.",
                       fields={"dataset": ["No target column is chosen: choose the column to predict first."]})


def check_graph_fits_dataset(*, graph_revision: Any, dataset: Any, config: dict[str, Any]) -> dict[str, Any]:
    """Validate the revision's spec and compare its input/output shapes with the dataset's.

    Raises ApiError 400 with node-keyed problems: `fields` maps "graph.<node id>" to messages,
    and `errors` lists the engine's problems ({node, code, field, message}).
    Returns the validation report JSON.
    """
    from engine.validate import validate

    if getattr(dataset, "status", "ready") != "ready":
        raise ApiError(400, "dataset_not_ready", f"Dataset {dataset.pk} is {dataset.status}; only ready datasets can be trained on.",
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
        raise ApiError(400, "invalid_graph", f"The graph cannot train on this dataset: {where}{first['message']}",
                       fields=fields, extra={"errors": problems})
    return report.to_json()
