"""The OpenAPI schema describes the real bodies: the browser's types are generated from it.

`frontend/src/api/api.gen.ts` is generated from `manage.py spectacular` (`make gen-types`), so a
body the schema does not describe is a body the browser's types get wrong. These tests ask the API
as a user would and check each answer against its response schema in `/api/schema/`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


@pytest.fixture(autouse=True)
def _memory_broker() -> Any:
    """Runs created here queue their task to an in-memory broker (never the machine's Redis)."""
    from webapp.celery import app

    previous = app.conf.broker_url
    app.conf.broker_url = "memory://"
    app._pool = None
    yield
    app.conf.broker_url = previous
    app._pool = None


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0's `nullable` as JSON Schema (the components pydantic wrote are JSON Schema already)."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {
        # Under `properties` the keys are field names (a parameter has a field called "nullable").
        key: {name: _json_schema(sub) for name, sub in value.items()}
        if key == "properties"
        else _json_schema(value)
        for key, value in node.items()
        if key != "nullable"
    }
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


def check(openapi: dict[str, Any], response: Any, path: str, method: str = "get") -> Any:
    """The answer's JSON, after checking it against the response schema of `path` (a template)."""
    code = str(response.status_code)
    assert code.startswith("2"), response.content[:500]
    declared = openapi["paths"][path][method]["responses"][code]["content"]["application/json"][
        "schema"
    ]
    components = _json_schema(copy.deepcopy(openapi["components"]["schemas"]))
    schema = {**_json_schema(declared), "components": {"schemas": components}}
    body = response.json()
    jsonschema.Draft202012Validator(schema).validate(body)
    return body


def test_every_json_answer_is_described(openapi: dict[str, Any]) -> None:
    vague = []
    for path, operations in openapi["paths"].items():
        for method, operation in operations.items():
            for code, response in operation["responses"].items():
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if (
                    code.startswith("2")
                    and schema is not None
                    and "$ref" not in schema
                    and schema.get("type") == "object"
                ):
                    vague.append(f"{method.upper()} {path} {code}")
    assert vague == []
    schemas = openapi["components"]["schemas"]
    for name in (
        "RunStreamFrame",
        "RunEvent",
        "StateFrame",
        "MetricEvent",
        "Progress",
        "RunExports",
        "OpCatalog",
    ):
        assert name in schemas, name
    assert schemas["StateFrame"]["properties"]["run"] == {"$ref": "#/components/schemas/Run"}


def test_catalog_and_validation_answers(
    openapi: dict[str, Any], api_a: Any, valid_spec: Any, broken_spec: Any
) -> None:
    from engine.ops.registry import ParamType

    catalog = check(openapi, api_a.get("/api/ops/"), "/api/ops/")
    kinds = {param["type"] for op in catalog["ops"] for param in op["params"]}
    assert (
        kinds
        <= set(openapi["components"]["schemas"]["ParamKindEnum"]["enum"])
        == set(ParamType.__args__)
    )
    report = check(
        openapi,
        api_a.post("/api/graphs/validate/", {"spec": valid_spec}, format="json"),
        "/api/graphs/validate/",
        "post",
    )
    assert report["valid"] is True
    report = check(
        openapi,
        api_a.post("/api/graphs/validate/", {"spec": broken_spec}, format="json"),
        "/api/graphs/validate/",
        "post",
    )
    assert report["valid"] is False and report["errors"]


def test_account_graph_and_dataset_answers(
    openapi: dict[str, Any], api_a: Any, graph_a: Any, dataset_a: Any
) -> None:
    me = check(openapi, api_a.get("/api/auth/me/"), "/api/auth/me/")
    assert me["teams"]
    check(openapi, api_a.get(f"/api/graphs/{graph_a.pk}/"), "/api/graphs/{id}/")
    check(
        openapi,
        api_a.get(f"/api/graphs/{graph_a.pk}/revisions/"),
        "/api/graphs/{graph_pk}/revisions/",
    )
    check(
        openapi,
        api_a.get(f"/api/graphs/{graph_a.pk}/revisions/1/"),
        "/api/graphs/{graph_pk}/revisions/{number}/",
    )
    builtins = check(openapi, api_a.get("/api/datasets/builtins/"), "/api/datasets/builtins/")
    assert {b["name"] for b in builtins["results"]} >= {"iris"}
    dataset = check(openapi, api_a.get(f"/api/datasets/{dataset_a.pk}/"), "/api/datasets/{id}/")
    assert dataset["summary"]["classes"]
    check(openapi, api_a.get(f"/api/datasets/?team={dataset_a.team_id}"), "/api/datasets/")
    preview = check(
        openapi, api_a.get(f"/api/datasets/{dataset_a.pk}/preview/"), "/api/datasets/{id}/preview/"
    )
    assert preview["kind"] == "table"


def test_run_answers(
    openapi: dict[str, Any], api_a: Any, user_a: Any, team_a: Any, revision_a: Any, dataset_a: Any
) -> None:
    from webapp.runs.inference.explanations import explanation_create
    from webapp.runs.scheduling.leases import run_lease_take
    from webapp.runs.services import run_create, run_finish
    from webapp.runs.stream.events import events_record

    run = run_create(
        user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2}
    )
    token = run_lease_take(run_id=run.pk, worker="w1")
    events_record(
        run_id=run.pk,
        lease_token=token,
        events=[
            {
                "type": "metric",
                "step": 1,
                "epoch": 0.5,
                "values": {"train/loss": 0.9, "train/accuracy": float("inf")},
            },
            {
                "type": "checkpoint",
                "step": 1,
                "epoch": 0.5,
                "name": "step-0000001",
                "path": "/nowhere/step-0000001",
            },
        ],
        run_fields={"step": 1, "epoch": 0.5, "total_steps": 4},
    )
    run_finish(
        run_id=run.pk, lease_token=token, status="succeeded", final_metrics={"val/accuracy": 1.0}
    )
    run.refresh_from_db()
    explanation_create(run=run, user=user_a, index=0, method="saliency")

    body = check(openapi, api_a.get(f"/api/runs/{run.pk}/"), "/api/runs/{id}/")
    assert body["latest_metrics"] == {"train/loss": 0.9, "train/accuracy": None}
    check(openapi, api_a.get(f"/api/runs/?team={team_a.pk}"), "/api/runs/")
    metrics = check(
        openapi, api_a.get(f"/api/runs/{run.pk}/metrics/?max_points=10"), "/api/runs/{id}/metrics/"
    )
    assert metrics["series"]["train/loss"]["value"] == [0.9]
    checkpoints = check(
        openapi, api_a.get(f"/api/runs/{run.pk}/checkpoints/"), "/api/runs/{id}/checkpoints/"
    )
    assert [c["name"] for c in checkpoints] == ["step-0000001"]
    page = check(
        openapi, api_a.get(f"/api/runs/{run.pk}/explanations/"), "/api/runs/{id}/explanations/"
    )
    assert page["results"][0]["sample"] == {"index": 0}
    check(openapi, api_a.get("/api/runs/config-schema/"), "/api/runs/config-schema/")
    methods = check(openapi, api_a.get("/api/explanations/methods/"), "/api/explanations/methods/")
    assert "saliency" in {m["name"] for m in methods["methods"]}


def test_the_schema_check_is_not_silent(openapi: dict[str, Any]) -> None:
    class Answer:
        status_code = 200

        @staticmethod
        def json() -> Any:
            return json.loads('{"version": 1, "categories": [], "ops": [{"name": "Linear"}]}')

        content = b""

    with pytest.raises(jsonschema.ValidationError):
        check(openapi, Answer(), "/api/ops/")
