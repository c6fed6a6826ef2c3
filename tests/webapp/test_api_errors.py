"""Every API error, from DRF or from Django, has the body {"error": {"code", "message", "fields"}}."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) >= {"code", "message", "fields"} and error["code"] == code
    return error


def test_malformed_json_is_a_parse_error(api_a):
    response = api_a.generic("POST", "/api/graphs/", "{not json", content_type="application/json")
    assert_error(response, 400, "parse_error")


def test_wrong_types_name_the_fields(api_a):
    error = assert_error(
        api_a.post("/api/graphs/", {"team": "abc", "name": ""}, format="json"), 400, "invalid"
    )
    assert set(error["fields"]) == {"team", "name"}


def test_unknown_url_under_api_is_a_json_404(api_a):
    assert_error(api_a.get("/api/no/such/thing/"), 404, "not_found")


def test_wrong_method_is_a_json_405(api_a):
    assert_error(api_a.put("/api/graphs/", {}, format="json"), 405, "method_not_allowed")


def test_wrong_content_type_is_a_json_415(api_a):
    response = api_a.generic("POST", "/api/graphs/validate/", "spec=1", content_type="text/plain")
    assert_error(response, 415, "unsupported_media_type")


def test_oversized_json_body_is_a_413(api_a, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api_a.post("/api/graphs/validate/", {"spec": {"pad": "x" * 2000}}, format="json")
    assert_error(response, 413, "payload_too_large")


def test_foreign_team_on_create_looks_like_a_missing_team(api_b, team_a):
    error = assert_error(
        api_b.post("/api/graphs/", {"team": team_a.id, "name": "x"}, format="json"), 400, "invalid"
    )
    missing = assert_error(
        api_b.post("/api/graphs/", {"team": 999999, "name": "x"}, format="json"), 400, "invalid"
    )
    assert error["fields"]["team"][0].replace(str(team_a.id), "N") == missing["fields"]["team"][
        0
    ].replace("999999", "N")


def test_pagination_takes_a_page_size(api_a, team_a, valid_spec):
    for i in range(3):
        api_a.post("/api/graphs/", {"team": team_a.id, "name": f"g{i}"}, format="json")
    page = api_a.get("/api/graphs/?page_size=2").json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"]
    assert len(api_a.get(page["next"]).json()["results"]) == 1
    assert_error(api_a.get("/api/graphs/?page=9"), 404, "not_found")
