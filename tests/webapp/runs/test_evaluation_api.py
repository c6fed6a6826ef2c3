"""GET/POST /api/runs/<id>/evaluation/: the engine's evaluation on the test split, stored per model."""

# ruff: noqa: F811  (the trained-run fixtures of test_predict.py are imported, then used as arguments)

from __future__ import annotations

from typing import Any

import pytest

from tests.webapp.runs.test_predict import csv_run, digits_run, mlp, openapi, train_for_real  # noqa: F401
from tests.webapp.test_wire_schema import check
from webapp.runs.inference.evaluation import evaluation_path
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_finished_run_has_its_evaluation_stored_by_the_train_task(
    api_a, digits_run, openapi
) -> None:  # noqa: F811
    assert evaluation_path(run=digits_run).is_file()  # written at the end of runs.train
    body = check(
        openapi, api_a.get(f"/api/runs/{digits_run.pk}/evaluation/"), "/api/runs/{id}/evaluation/"
    )
    assert (
        body["task"] == "classification" and body["checkpoint"] is None and body["split"] == "test"
    )
    assert [c["class"] for c in body["per_class"]] == [str(i) for i in range(10)]
    assert (
        sum(c["support"] for c in body["per_class"])
        == body["rows"]
        == sum(map(sum, body["confusion_matrix"]))
    )
    assert body["accuracy"] == pytest.approx(digits_run.final_metrics["test/accuracy"], abs=1e-6)
    wrong = body["misclassified"]
    assert len(wrong) == body["misclassified_total"]
    assert all(w["true"] != w["predicted"] for w in wrong)
    assert [w["probability"] for w in wrong] == sorted(
        (w["probability"] for w in wrong), reverse=True
    )
    assert body["roc"] is None  # ten classes
    assert len(body["reliability"]["bins"]) == 10
    if wrong:  # the misclassified browser finds the sample and its thumbnail
        image = api_a.get(f"/api/runs/{digits_run.pk}/samples/test/{wrong[0]['index']}/")
        assert image["Content-Type"] == "image/png"


def test_a_binary_csv_run_has_roc_and_pr_curves(api_a, csv_run, openapi) -> None:  # noqa: F811
    run, _ = csv_run
    body = check(
        openapi, api_a.get(f"/api/runs/{run.pk}/evaluation/"), "/api/runs/{id}/evaluation/"
    )
    assert body["roc"]["positive_class"] == "yes" and 0.0 <= body["roc"]["auc"] <= 1.0
    assert 0.0 <= body["precision_recall"]["average_precision"] <= 1.0


def test_a_kept_checkpoint_is_evaluated_on_request(api_a, api_viewer_a, csv_run, openapi) -> None:  # noqa: F811
    run, _ = csv_run
    name = next(c.path for c in Checkpoint.objects.filter(run=run)).rsplit("/", 1)[-1]
    assert api_a.get(f"/api/runs/{run.pk}/evaluation/?checkpoint={name}").status_code == 404
    assert (
        api_viewer_a.post(
            f"/api/runs/{run.pk}/evaluation/", {"checkpoint": name}, format="json"
        ).status_code
        == 403
    )
    made = check(
        openapi,
        api_a.post(f"/api/runs/{run.pk}/evaluation/", {"checkpoint": name}, format="json"),
        "/api/runs/{id}/evaluation/",
        "post",
    )
    assert made["checkpoint"] == name and made["rows"] > 0
    stored = api_a.get(f"/api/runs/{run.pk}/evaluation/?checkpoint={name}").json()
    assert stored == made
    missing = api_a.post(
        f"/api/runs/{run.pk}/evaluation/", {"checkpoint": "epoch-9999"}, format="json"
    )
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "checkpoint_missing"


def test_a_regression_run_has_errors_pairs_and_residuals(
    api_a, team_a, user_a, settings, openapi
) -> None:  # noqa: F811
    from webapp.datasets.services import dataset_builtin_create

    dataset = dataset_builtin_create(
        team=team_a, name="diabetes", builtin="diabetes", options={}, created_by=user_a
    )
    run = train_for_real(api_a, team_a, dataset.pk, mlp(10, 1), settings)
    evaluation_path(run=run).unlink()  # as a run from before evaluations: computed on first read
    body = check(
        openapi, api_a.get(f"/api/runs/{run.pk}/evaluation/"), "/api/runs/{id}/evaluation/"
    )
    assert body["task"] == "regression" and body["mae"] > 0 and body["rmse"] >= body["mae"]
    assert len(body["pairs"]["true"]) == body["pairs_total"] == body["rows"]
    assert sum(body["residuals"]["counts"]) == body["rows"]
    assert evaluation_path(run=run).is_file()
    answer = api_a.post(f"/api/runs/{run.pk}/predict/", {"index": 0}, format="json").json()
    assert isinstance(answer["prediction"], list) and "probabilities" not in answer


def test_an_unfinished_run_has_no_evaluation(api_a, api_b, run_a: Any) -> None:
    response = api_a.get(f"/api/runs/{run_a.pk}/evaluation/")
    assert response.status_code == 409 and response.json()["error"]["code"] == "run_not_trained"
    assert api_b.get(f"/api/runs/{run_a.pk}/evaluation/").status_code == 404


def test_a_misspelt_key_is_refused_not_read_as_the_final_model(api_a, csv_run) -> None:  # noqa: F811
    run, _ = csv_run
    answer = api_a.post(f"/api/runs/{run.pk}/evaluation/", {"checkpiont": "best"}, format="json")
    assert answer.status_code == 400, answer.json()
    assert answer.json()["error"]["fields"] == {"checkpiont": ["Not a field of this request; it takes: checkpoint."]}


def test_an_evaluation_asked_for_asynchronously_is_a_job_whose_result_is_the_stored_evaluation(
    api_a, csv_run, openapi  # noqa: F811
) -> None:
    """`Prefer: respond-async`: 202 with the job (and where to poll it); a worker runs it; the
    job's result and the stored evaluation are the same. Refusals are the synchronous path's."""
    from webapp.jobs.models import Job
    from workers.jobs import job_execute

    run, _ = csv_run
    name = next(c.path for c in Checkpoint.objects.filter(run=run)).rsplit("/", 1)[-1]
    missing = api_a.post(f"/api/runs/{run.pk}/evaluation/", {"checkpoint": "epoch-9999"}, format="json",
                         HTTP_PREFER="respond-async")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "checkpoint_missing"
    assert not Job.objects.filter(kind="runs.evaluate").exists(), "a refused request queues nothing"

    asked = api_a.post(f"/api/runs/{run.pk}/evaluation/", {"checkpoint": name}, format="json",
                       HTTP_PREFER="respond-async")
    job = check(openapi, asked, "/api/runs/{id}/evaluation/", "post")
    assert asked.status_code == 202 and asked["Preference-Applied"] == "respond-async"
    assert job["kind"] == "runs.evaluate" and job["state"] == "queued" and job["subject_id"] == run.pk
    assert asked["Location"].endswith(f"/api/jobs/{job['id']}/")

    assert job_execute(job["id"]) == "done"  # what the worker's jobs.run does
    done = api_a.get(f"/api/jobs/{job['id']}/").json()
    assert done["state"] == "done", done
    stored = api_a.get(f"/api/runs/{run.pk}/evaluation/?checkpoint={name}").json()
    assert done["result"] == stored and stored["checkpoint"] == name and stored["rows"] > 0
