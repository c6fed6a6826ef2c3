"""The stored-poison case: an explanation's index or target past its column is refused, never stored,
and a row stored before that rule never makes its run's list answer 500."""

from __future__ import annotations

import pytest

from webapp.runs.models import Explanation, ExplanationStatus

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("body", "field", "said"),
    [
        ('{"index": 18446744073709551616}', "index", "64-bit"),
        ('{"index": 0, "target": 2147483648}', "target", "2147483647"),
        ('{"index": 0, "target": 9223372036854775808}', "target", "64-bit"),
    ],
    ids=["index-2^64", "target-2^31", "target-2^63"],
)
def test_an_index_or_target_past_its_column_is_a_400_naming_it_and_nothing_is_stored(api_a, run_a, body, field, said):
    answer = api_a.post(f"/api/runs/{run_a.pk}/explanations/", data=body, content_type="application/json")
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert list(error["fields"]) == [field] and said in error["message"] + str(error["fields"])
    assert not Explanation.objects.exists()
    assert api_a.get(f"/api/runs/{run_a.pk}/explanations/").status_code == 200


def test_a_row_stored_before_the_rule_is_still_listed_and_read(api_a, run_a):
    poisoned = Explanation.objects.create(
        run=run_a, method="saliency", sample={"index": 2**64}, target=None, status=ExplanationStatus.FAILED,
        error="the index is past the test split",
    )
    listed = api_a.get(f"/api/runs/{run_a.pk}/explanations/")
    assert listed.status_code == 200, listed.content
    assert [row["sample"]["index"] for row in listed.json()["results"]] == [2**64]
    detail = api_a.get(f"/api/explanations/{poisoned.pk}/")
    assert detail.status_code == 200 and detail.json()["error"] == "the index is past the test split"
