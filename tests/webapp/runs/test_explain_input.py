"""POST /api/runs/<id>/explanations/ with the user's own input: a row as in the CSV, an uploaded image.

The row or image goes through the run's preprocessing pipeline (the export's `prepare`), so bad
input is a 400 naming the field at once; its "runs.explain" job (run in-process) explains it.
"""

# ruff: noqa: F811  (the trained-run fixtures of test_predict.py are imported, then used as arguments)

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image
from sklearn import datasets as skd

from tests.webapp.runs.test_predict import csv_run, digits_run, mlp, openapi, train_for_real  # noqa: F401
from webapp.jobs.models import Job
from webapp.runs.models import Explanation

pytestmark = pytest.mark.django_db(transaction=True)


def _data_url(arr: np.ndarray) -> str:
    buf = io.BytesIO()
    Image.fromarray(arr.astype(np.uint8)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _explain(api, run, body):
    return api.post(f"/api/runs/{run.pk}/explanations/", body, format="json")


def test_a_typed_row_is_explained_over_its_columns(api_a, csv_run) -> None:  # noqa: F811
    from workers.jobs import job_execute

    run, _ = csv_run
    row = {"age": 62, "colour": "blue", "size": "M", "score": None}
    created = _explain(api_a, run, {"input": row, "method": "integrated_gradients"})
    assert created.status_code == 202, created.json()
    assert created.json()["sample"] == {"input": row}
    job = Job.objects.get(kind="runs.explain", subject_id=created.json()["id"])
    assert job_execute(job.pk) == "done", Explanation.objects.get().error
    result = api_a.get(f"/api/explanations/{created.json()['id']}/").json()["result"]
    predicted = api_a.post(f"/api/runs/{run.pk}/predict/", {"input": row}, format="json").json()
    assert result["prediction"] == predicted["index"]
    assert "colour=blue" in result["feature_names"]
    assert len(result["attributions"]) == len(result["feature_names"])


def test_an_unknown_category_or_a_word_for_a_number_is_a_400_naming_the_column(
    api_a, csv_run
) -> None:  # noqa: F811
    run, _ = csv_run
    bad = _explain(
        api_a,
        run,
        {"input": {"age": "old", "colour": "blue", "size": "M", "score": 1}, "method": "saliency"},
    )
    assert bad.status_code == 400, bad.json()
    assert list(bad.json()["error"]["fields"]) == ["input.age"]
    assert not Explanation.objects.exists()


def test_an_uploaded_image_is_explained_and_kept_as_given(api_a, digits_run) -> None:  # noqa: F811
    from workers.jobs import job_execute

    image = _data_url(skd.load_digits().images[0] * 255 / 16)
    created = _explain(api_a, digits_run, {"image": image, "method": "saliency"})
    assert created.status_code == 202, created.json()
    assert created.json()["sample"] == {"input": image}
    job = Job.objects.get(kind="runs.explain", subject_id=created.json()["id"])
    assert job_execute(job.pk) == "done", Explanation.objects.get().error
    shown = api_a.get(f"/api/explanations/{created.json()['id']}/image/")
    assert shown.status_code == 200 and shown["Content-Type"] == "image/png"

    for body, field in (
        ({"image": "data:image/png;base64,bm90IGFuIGltYWdl"}, "image"),  # "not an image"
        ({"image": "%%%"}, "image"),
        ({"image": image, "index": 0}, "index"),
    ):
        refused = _explain(api_a, digits_run, {**body, "method": "saliency"})
        assert refused.status_code == 400, refused.json()
        assert field in refused.json()["error"]["fields"], refused.json()
