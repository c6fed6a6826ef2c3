"""schemathesis against the live schema: no 5xx, no answer outside the documented schema, and no
request the schema calls valid refused (positive_data_acceptance).

A bounded number of generated requests per operation (NETLOOM_FUZZ_EXAMPLES, default 8) with
team A's token; a seed makes a failure reproducible with the printed command. The operations in
BUSINESS_RULES refuse some schema-valid requests for a reason the schema cannot state (it knows no
other rows): each names it; the check stays on for every other operation.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.stack.stack import RedisServer, ServiceStack

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("NETLOOM_FUZZ_EXAMPLES", "8"))
SEED = int(os.environ.get("NETLOOM_FUZZ_SEED", "1"))
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "positive_data_acceptance",
]
# Operation -> why a request the schema calls valid may still be a 400 (a rule about other rows,
# or about a document the schema describes only as an object).
BUSINESS_RULES = {
    "DELETE /api/teams/{id}/members/{user_id}/": "a team keeps at least one admin",
    "POST /api/teams/{id}/members/": "the user must exist; a team keeps at least one admin",
    "POST /api/teams/": "team names are unique",
    "POST /api/graphs/": "the team must be one of yours",
    "POST /api/datasets/": "the team must be one of yours",
    "PATCH /api/datasets/{id}/": "only a CSV dataset takes new options",
    # schemathesis's own false positive: it sends a key the closed body does not declare.
    "PATCH /api/graphs/{id}/": "a key beside name is refused (the body is additionalProperties: false)",
    "POST /api/datasets/upload/": "the team must be one of yours; the file must be of its kind",
    "POST /api/blocks/": "the team must be one of yours; the definition must be a block (engine)",
    "POST /api/graphs/validate/": "a spec must be a graph document (engine.spec); no NUL in its strings",
    "POST /api/graphs/codegen/": "a spec must be a valid graph (engine.validate)",
    "POST /api/graphs/{graph_pk}/revisions/": "a spec must be a graph document (engine.spec)",
    "POST /api/runs/": "graph or graph_revision is required (anyOf would break the generated types)",
    "POST /api/runs/init-plan/": "graph or graph_revision is required; the checkpoint must exist",
    "POST /api/sweeps/": "graph or graph_revision is required; the space must name config fields",
    "POST /api/graphs/import/": "the team must be one of yours; the spec must be a graph document (engine.spec)",
    "POST /api/models/": "the team must be one of yours",
    "POST /api/run-views/": "the team must be one of yours",
    "GET /api/runs/": "filter is an expression of the runs query language, a grammar the schema cannot state",
    "GET /api/teams/{id}/audit/": "object is type:id; until must be after since",
    "GET /api/teams/{id}/audit/export/": "object is type:id; until must be after since",
    "POST /api/datasets/{id}/versions/": "a built-in dataset has one version; the file must be of the dataset's kind",
    "GET /api/runs/columns/": "filter is an expression of the runs query language, a grammar the schema cannot state",
    "PATCH /api/teams/{id}/members/{user_id}/": "role is the field to change (a PATCH body reads as all-optional); "
                                                "a team keeps at least one admin",
    "POST /api/auth/password/": "old_password must be the current password",
    "POST /api/auth/tokens/": "the team must be one of yours",
    "POST /api/teams/{id}/invitations/": "exactly one of email and username; not someone already a member",
}


def _config_file(directory: Path) -> Path:
    """schemathesis.toml: the CHECKS, with positive_data_acceptance off for the BUSINESS_RULES operations
    (checks named on the command line would override each operation's own)."""
    path = directory / "schemathesis.toml"
    path.write_text("[checks]\nenabled = false\n" + "".join(f"{name}.enabled = true\n" for name in CHECKS) + "".join(
        f'\n[[operations]]\ninclude-name = "{name}"\nchecks.positive_data_acceptance.enabled = false\n'
        for name in BUSINESS_RULES
    ))
    return path


@pytest.fixture
def fresh_stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A stack of its own for each test: with a fixed seed, the same objects give the same generated
    cases, and the generated DELETEs (a token, a membership) cannot leave the next test signed out."""
    server = RedisServer.for_tests(lambda: tmp_path_factory.mktemp("redis"))
    with ServiceStack(tmp_path_factory.mktemp("fuzz-stack"), server) as running:
        yield running


def test_generated_requests_get_no_5xx_and_documented_answers(
    fresh_stack: ServiceStack, tmp_path: Path
) -> None:
    stack = fresh_stack
    # The first schema request imports every app and the engine: on a busy machine longer than
    # schemathesis waits for a schema to load.
    assert stack.api("a").get("/api/schema/?format=json").status_code == 200
    schemathesis = Path(sys.executable).with_name("schemathesis")
    command = [
        str(schemathesis), "--config-file", str(_config_file(tmp_path)), "run", f"{stack.base}/api/schema/",
        "--header", f"Authorization: Bearer {stack.token('a')}",
        "--max-examples", str(EXAMPLES),
        "--seed", str(SEED),
        "--phases", "examples,fuzzing",
        "--workers", "1",
        "--request-timeout", "30",
        "--wait-for-schema", "60",
        "--max-failures", "20",
        # The lockout test has its own module: generated passwords must not lock the token out.
        "--exclude-path", "/api/auth/login/",
        "--exclude-path", "/api/auth/token/",
        "--report", "junit", "--report-dir", str(tmp_path),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    report = result.stdout[-12000:]
    assert result.returncode == 0, f"{' '.join(command)}\n{report}\n{result.stderr[-2000:]}"


# --- The stored-poison pattern: write what no column can hold, then read everything back ----------

# Values nothing may store: integers past 64 bits or past a 32-bit column, JSON's non-numbers (as
# raw tokens, as a careless client sends them), a float past its range, and strings with a
# bidi override, a control character and half a surrogate pair.
INTEGER_POISON = [str(2**64), str(-(2**64)), str(2**63), str(2**31)]
NUMBER_POISON = ["NaN", "Infinity", "-Infinity", "1e400"]
STRING_POISON = [json.dumps("a\u202eb"), json.dumps("a\x07b"), '"a\\ud800b"']
NESTED_POISON = [f'{{"k": {2**64}}}', f"[{2**64}]", '{"k": NaN}', json.dumps({"k": "a\u202eb"})]
SKIPPED = {
    "/api/auth/login/", "/api/auth/token/", "/api/auth/logout/",  # sign-in: the lockout has its tests
    "/api/runs/{id}/cancel/", "/api/sweeps/{id}/cancel/",  # no body; would stop the run read below
}


def _poisons(prop: dict[str, Any]) -> list[str]:
    kind = prop.get("type")
    if kind == "integer":
        return INTEGER_POISON + NUMBER_POISON[:2]
    if kind == "number":
        return NUMBER_POISON + INTEGER_POISON[:1]
    if kind == "string":
        return STRING_POISON + INTEGER_POISON[:1]
    if kind == "boolean":
        return INTEGER_POISON[:1]
    return NESTED_POISON + INTEGER_POISON[:1] + NUMBER_POISON[:1] + STRING_POISON[:1]


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    for part in node.get("allOf", []):
        node = {**_resolve(schema, part), **{k: v for k, v in node.items() if k != "allOf"}}
    return node


def _fill(path: str, ids: dict[str, int]) -> str | None:
    """The path with its parameters filled from objects that exist, or None when one is unknown."""

    def value(match: re.Match[str]) -> str:
        name, before = match.group(1), path[: match.start()].rstrip("/").rsplit("/", 1)[-1]
        known = {"graph_pk": ids.get("graphs"), "block_pk": ids.get("blocks"), "number": 1, "split": "test",
                 "index": 0, "id": ids.get(before), "user_id": ids.get("user")}
        if known.get(name) is None:
            raise KeyError(name)
        return str(known[name])

    try:
        return re.sub(r"{(\w+)}", value, path)
    except KeyError:
        return None


def _own_objects(stack: ServiceStack) -> dict[str, Any]:
    """A graph, a dataset and a trained run of team A made here (the fuzzing may delete the world's)."""
    import time

    api, team = stack.api("a"), stack.world["a"]["team"]
    spec = json.loads((Path(__file__).resolve().parents[2] / "examples/specs/iris_mlp.json").read_text())
    graph = api.post("/api/graphs/", json={"team": team, "name": "poison base", "spec": spec})
    dataset = api.post("/api/datasets/", json={"team": team, "name": "poison base", "builtin": "iris"})
    assert graph.status_code == 201 and dataset.status_code == 201, (graph.text, dataset.text)
    mine = {"team": team, "graph": graph.json()["id"], "dataset": dataset.json()["id"], "spec": spec}
    run = api.post("/api/runs/", json={"graph": mine["graph"], "dataset": mine["dataset"],
                                       "config": {"epochs": 1, "batch_size": 16, "device": "cpu"}})
    assert run.status_code == 201, run.text
    run = run.json()
    deadline = time.monotonic() + 180
    while run["status"] not in ("succeeded", "failed", "cancelled") and time.monotonic() < deadline:
        time.sleep(1)
        run = stack.api("a").get(f"/api/runs/{run['id']}/").json()
    assert run["status"] == "succeeded", run
    return {**mine, "run": int(run["id"])}


def test_stored_poison_every_write_refuses_it_and_every_read_still_answers(fresh_stack: ServiceStack) -> None:
    """Each property of each JSON body, alone beside a valid body, gets each poison: no write answers
    5xx; then every list and detail in the schema is read: none answers 5xx (a poisoned row stored by
    any write would make them 500)."""
    stack = fresh_stack
    api = stack.api("a")
    schema = api.get("/api/schema/?format=json").json()
    mine = _own_objects(stack)
    run_id = mine["run"]
    ids: dict[str, Any] = {"graphs": mine["graph"], "datasets": mine["dataset"], "runs": run_id,
                           "teams": mine["team"], "user": api.get("/api/auth/me/").json().get("id")}
    for collection in ("blocks", "sweeps", "explanations", "jobs", "tokens"):
        listed = api.get(f"/api/{'auth/' if collection == 'tokens' else ''}{collection}/")
        if listed.status_code == 200 and listed.json().get("results"):
            ids[collection] = listed.json()["results"][0]["id"]
    spec = mine["spec"]
    valid = {  # a body each write would take, so a poisoned field is the only thing wrong
        "POST /api/graphs/": {"team": mine["team"], "name": "g", "spec": spec},
        "POST /api/graphs/{graph_pk}/revisions/": {"spec": spec},
        "POST /api/graphs/validate/": {"spec": spec},
        "POST /api/graphs/codegen/": {"spec": spec},
        "POST /api/datasets/": {"team": mine["team"], "name": "d", "builtin": "iris"},
        "POST /api/runs/": {"graph": mine["graph"], "dataset": mine["dataset"], "config": {"epochs": 1}},
        "POST /api/runs/{id}/explanations/": {"index": 0, "method": "saliency"},
        "POST /api/runs/{id}/predict/": {"index": 0},
        "POST /api/teams/": {"name": "poison"},
        "POST /api/auth/tokens/": {"name": "t"},
        "POST /api/sweeps/": {"graph": mine["graph"], "dataset": mine["dataset"], "name": "s",
                              "space": {"epochs": {"type": "int", "low": 1, "high": 2}}, "budget": 1},
    }
    sent = 0
    server_errors: list[str] = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if method not in ("post", "put", "patch") or path in SKIPPED or "application/json" not in content:
                continue
            url = _fill(path, ids)
            if url is None:
                continue
            body_schema = _resolve(schema, content["application/json"]["schema"])
            base = valid.get(f"{method.upper()} {path}", {})
            for name, prop in body_schema.get("properties", {}).items():
                prop = _resolve(schema, prop)
                if prop.get("readOnly"):
                    continue
                for poison in _poisons(prop):
                    others = json.dumps({k: v for k, v in base.items() if k != name})
                    raw = (others[:-1] + (", " if len(others) > 2 else "") + f'"{name}": {poison}}}').encode()
                    answer = api.request(method, url, body=raw)
                    sent += 1
                    if answer.status_code >= 500:
                        server_errors.append(f"{method.upper()} {url} {name}={poison}: {answer.status_code}")
    print(f"\n{sent} poisoned writes")
    assert sent > 200 and not server_errors, server_errors
    listed: dict[str, list[int]] = {}
    for collection in ("graphs", "datasets", "runs", "sweeps", "blocks", "teams", "jobs"):  # what the writes made
        answer = api.get(f"/api/{collection}/?page_size=500")
        assert answer.status_code == 200, (collection, answer.text)
        listed[collection] = [row["id"] for row in answer.json()["results"]]
    answer = api.get(f"/api/runs/{run_id}/explanations/?page_size=500")
    assert answer.status_code == 200, answer.text
    listed["explanations"] = [row["id"] for row in answer.json()["results"]]
    reads = 0
    for path, operations in schema["paths"].items():
        if "get" not in operations:
            continue
        collection = path.split("/")[2]
        each = listed.get(collection, []) if path.startswith(f"/api/{collection}/{{id}}/") else [ids.get(collection)]
        for object_id in each:
            url = _fill(path, {**ids, collection: object_id})
            if url is None:
                continue
            answer = api.get(url)
            reads += 1
            if answer.status_code >= 500:
                server_errors.append(f"GET {url}: {answer.status_code} {answer.text[:200]}")
    print(f"{reads} reads after them")
    assert reads > 50 and not server_errors, server_errors
