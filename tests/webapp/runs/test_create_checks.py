"""POST /api/runs/ refuses at once what the trainer would refuse only when the run starts."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


def create(api: Any, body: dict[str, Any], **config: Any) -> Any:
    return api.post("/api/runs/", {**body, "config": {"epochs": 2, **config}}, format="json")


def refused_fields(answer: Any) -> dict[str, list[str]]:
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["code"] == "invalid_config"
    return answer.json()["error"]["fields"]


def test_a_plateau_metric_the_run_will_not_have_is_refused_naming_the_field_and_the_choices(
    api_a: Any, run_body: dict[str, Any]
) -> None:
    answer = create(api_a, run_body, scheduler={"name": "plateau", "metric": "val/acc"})
    fields = refused_fields(answer)
    assert list(fields) == ["config.scheduler.metric"]
    # The names come from the engine's own evaluation of a classification run.
    assert "val/accuracy" in fields["config.scheduler.metric"][0] and "val/f1" in fields["config.scheduler.metric"][0]
    assert not Run.objects.exists()


def test_an_early_stopping_metric_of_another_task_is_refused(api_a: Any, run_body: dict[str, Any]) -> None:
    answer = create(api_a, run_body, early_stopping={"metric": "val/rmse", "mode": "min"})
    assert list(refused_fields(answer)) == ["config.early_stopping.metric"]


def test_metrics_the_run_will_have_are_accepted(api_a: Any, run_body: dict[str, Any]) -> None:
    answer = create(api_a, run_body, scheduler={"name": "plateau", "metric": "val/accuracy", "mode": "max"},
                    early_stopping={"metric": "val/f1", "mode": "max"})
    assert answer.status_code == 201, answer.content
    # A metric that only the plateau schedule reads is not checked for another schedule.
    assert create(api_a, run_body, scheduler={"name": "cosine", "metric": "val/nothing"}).status_code == 201


def test_early_stopping_without_a_validation_split_is_refused(api_a: Any, run_body: dict[str, Any]) -> None:
    answer = api_a.post("/api/runs/", {**run_body, "split": {"val": 0.0, "test": 0.2},
                                       "config": {"early_stopping": {}}}, format="json")
    assert "config.early_stopping" in refused_fields(answer)


def test_a_device_this_deployment_lacks_is_refused_and_auto_always_passes(
    api_a: Any, run_body: dict[str, Any], settings: Any
) -> None:
    settings.NETLOOM_DEVICES = ["cpu"]
    fields = refused_fields(create(api_a, run_body, device="cuda:3"))
    assert list(fields) == ["config.device"] and "NETLOOM_DEVICES" in fields["config.device"][0]
    assert create(api_a, run_body, device="auto").status_code == 201
    assert create(api_a, run_body, device="cpu").status_code == 201
    settings.NETLOOM_DEVICES = ["cpu", "cuda:0", "cuda:1"]
    assert create(api_a, run_body, device="cuda:1").status_code == 201
    assert list(refused_fields(create(api_a, run_body, device="cuda:3"))) == ["config.device"]
    settings.NETLOOM_DEVICES = ["cuda"]  # GPUs of unknown count: the worker checks the index
    assert create(api_a, run_body, device="cuda:3").status_code == 201


def test_fp16_on_the_cpu_is_refused_but_bf16_is_not(api_a: Any, run_body: dict[str, Any], settings: Any) -> None:
    settings.NETLOOM_DEVICES = ["cpu"]
    assert list(refused_fields(create(api_a, run_body, precision="fp16", device="cpu"))) == ["config.precision"]
    assert list(refused_fields(create(api_a, run_body, precision="fp16"))) == ["config.precision"]  # auto -> cpu
    assert create(api_a, run_body, precision="bf16", device="cpu").status_code == 201
    settings.NETLOOM_DEVICES = ["cpu", "cuda:0"]
    assert create(api_a, run_body, precision="fp16").status_code == 201


def test_every_problem_is_named_at_once(api_a: Any, run_body: dict[str, Any], settings: Any) -> None:
    settings.NETLOOM_DEVICES = ["cpu"]
    fields = refused_fields(create(api_a, run_body, device="cuda:3", early_stopping={"metric": "val/r2"}))
    assert set(fields) == {"config.device", "config.early_stopping.metric"}


@pytest.mark.parametrize(("task", "loss", "width", "expected"), [
    ("classification", None, [3], {"val/loss", "val/accuracy", "val/f1"}),
    ("classification", "bce_with_logits", [1], {"val/loss", "val/accuracy", "val/f1"}),
    ("regression", None, [1], {"val/loss", "val/mae", "val/rmse", "val/r2"}),
])
def test_the_metric_names_follow_from_the_task(task: str, loss: str | None, width: list[int], expected: set[str]) -> None:
    from webapp.runs.checks import validation_metric_names

    names = validation_metric_names(summary={"task": task, "num_classes": 3 if loss is None else 2},
                                    config={"task": task, "loss": loss}, output_shape=width)
    assert set(names) == expected
