"""The model server against the real stack: registry versions served over OIP v2, batched.

Two iris MLP runs are trained by the stack's worker and registered as versions 1 and 2 of a
model, `production` -> 1; `python -m serving` runs as its own process on the stack's database,
and is reached through the front (nginx routes /v2/ to it) where the front runs, else directly.
"""

from __future__ import annotations

import http.cookiejar
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.stack.stack import Http, ServiceStack, free_port, wait_for_port
from tests.stack.test_run_e2e import wait_status

pytestmark = [pytest.mark.slow, pytest.mark.one_database]

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ["sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)"]
ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3], [5.9, 3.0, 4.2, 1.5], [4.9, 2.4, 3.3, 1.0],
        [7.2, 3.6, 6.1, 2.5]]


def oip_body(rows: list[list[float]]) -> dict[str, Any]:
    """One named input per raw column (OIP v2 REST)."""
    return {"inputs": [{"name": name, "datatype": "FP32", "shape": [len(rows)], "data": [r[i] for r in rows]}
                       for i, name in enumerate(COLUMNS)]}


class ModelServer:
    """`python -m serving` on the stack's database and Redis prefix; stopped on exit."""

    def __init__(self, stack: ServiceStack, **env: str) -> None:
        self.port = free_port()
        self.log = stack.tmp / f"serving-{self.port}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "serving"], cwd=ROOT,
            env={**stack.env, "SERVING_PORT": str(self.port), "SERVING_POLL_S": "0.3", **env},
            stdout=open(self.log, "ab"), stderr=subprocess.STDOUT,
        )
        self.base = f"http://127.0.0.1:{self.port}"
        wait_for_port(self.port, 120, self.proc)
        deadline = time.monotonic() + 60
        while Http(self.base, None).get("/v2/health/ready").status_code != 200:
            assert time.monotonic() < deadline, self.log.read_text()[-3000:]
            time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def registered(stack: ServiceStack) -> Any:
    """Model "Iris classifier" of team A: two trained runs as versions 1 and 2, production -> 1."""
    api = stack.api("a")
    runs = [stack.create_run("a", epochs=3, seed=seed)["id"] for seed in (1, 2)]
    for run in runs:
        assert wait_status(stack, run, {"succeeded", "failed"}, timeout=240)["status"] == "succeeded"
    model = api.post("/api/models/", json={"team": stack.world["a"]["team"], "name": "Iris classifier"}).json()
    for run in runs:
        made = api.post(f"/api/models/{model['id']}/versions/", json={"run": run})
        assert made.status_code == 201, made.text
    moved = api.request("PUT", f"/api/models/{model['id']}/aliases/production/", {"version": 1})
    assert moved.status_code == 200, moved.text
    server = ModelServer(stack)
    try:
        yield {"model": model, "runs": runs, "server": server,
               "served": f"{model['id']}-iris-classifier"}
    finally:
        server.stop()


def test_the_endpoint_answers_raw_rows_as_the_run_predict_route_does(stack: ServiceStack, registered: Any) -> None:
    server, served, model = registered["server"], registered["served"], registered["model"]
    a = Http(server.base, stack.token("a"))
    answer = a.post(f"/v2/models/{served}/infer", json=oip_body(ROWS))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["model_name"] == served and body["model_version"] == "1"
    outputs = {o["name"]: o for o in body["outputs"]}
    assert outputs["label"]["datatype"] == "BYTES" and outputs["probabilities"]["shape"] == [5, 3]
    probs = outputs["probabilities"]["data"]
    for i, row in enumerate(ROWS):
        want = stack.api("a").post(f"/api/runs/{registered['runs'][0]}/predict/",
                                   json={"input": dict(zip(COLUMNS, row, strict=True))}).json()
        assert outputs["label"]["data"][i] == want["prediction"]
        expected = [p["probability"] for p in want["probabilities"]]
        assert max(abs(g - w) for g, w in zip(probs[3 * i: 3 * i + 3], expected, strict=True)) <= 1e-6

    # A stale slug still finds the model by its id; the version route serves what an alias names.
    assert a.post(f"/v2/models/{model['id']}-old-name/infer", json=oip_body(ROWS[:1])).status_code == 200
    assert a.post(f"/v2/models/{served}/versions/1/infer", json=oip_body(ROWS[:1])).json()["model_version"] == "1"
    unnamed = a.post(f"/v2/models/{served}/versions/2/infer", json=oip_body(ROWS[:1]))
    assert unnamed.status_code == 404 and "no alias names it" in unnamed.json()["error"]

    meta = a.get(f"/v2/models/{served}").json()
    assert [i["name"] for i in meta["inputs"]] == COLUMNS and meta["versions"] == ["1"]
    assert {o["name"]: o["shape"] for o in meta["outputs"]} == {"label": [-1], "probabilities": [-1, 3]}
    assert meta["outputs"][1]["parameters"]["classes"] == ["setosa", "versicolor", "virginica"]

    # Bad input names the column; another team's token sees no such model; no token: 401.
    bad = oip_body(ROWS[:2])
    bad["inputs"][1] = {**bad["inputs"][1], "datatype": "BYTES", "data": ["3.0", "wide"]}
    refused = a.post(f"/v2/models/{served}/infer", json=bad)
    assert refused.status_code == 400 and "sepal width (cm)" in refused.json()["error"], refused.text
    shapeless = a.post(f"/v2/models/{served}/infer", json={"rows": ROWS})
    assert shapeless.status_code == 422 and "inputs" in shapeless.text, shapeless.text
    missing = a.post(f"/v2/models/{served}/infer", json={"inputs": oip_body(ROWS)["inputs"][:3]})
    assert missing.status_code == 400 and "petal width (cm)" in missing.json()["error"]
    other = Http(server.base, stack.token("b")).post(f"/v2/models/{served}/infer", json=oip_body(ROWS))
    assert other.status_code == 404, other.text
    # A refused request is one line in the server's log, naming the column: no traceback.
    log = server.log.read_text(errors="replace")
    assert "refused a request (400 InvalidInput): sepal width (cm)" in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    assert Http(server.base, None).post(f"/v2/models/{served}/infer", json=oip_body(ROWS)).status_code == 401

    # The API names the endpoint; the stats window and Prometheus count what was answered.
    detail = stack.api("a").get(f"/api/models/{model['id']}/").json()
    assert detail["endpoint"] == f"{stack.base}/v2/models/{served}/infer"
    stats = a.get(f"/v2/models/{served}/stats").json()
    assert stats["versions"]["1"]["requests"] >= 4 and stats["versions"]["1"]["latency_ms"]["p50"] > 0
    metrics = Http(server.base, None).get("/metrics").text
    assert f'netloom_serving_requests_total{{model="{served}",outcome="ok",version="1"}}' in metrics


def test_the_front_routes_v2_to_the_model_server(stack: ServiceStack, registered: Any) -> None:
    """Through the stack's web address: nginx sends /v2/ to SERVING_PORT (here: the test's server)."""
    from webapp.serve import front_available

    if not front_available():
        pytest.skip("no nginx: the web tier serves HTTP itself, without the front's /v2/ route")
    served = registered["served"]
    stack.start_web(env={"SERVING_PORT": str(registered["server"].port)})
    front = Http(stack.base, stack.token("a"))
    answer = front.post(f"/v2/models/{served}/infer", json=oip_body(ROWS[:1]))
    assert answer.status_code == 200 and answer.json()["model_version"] == "1", answer.text


def signed_in_session(stack: ServiceStack, username: str) -> str:
    """The session key the web app's login form gives `username` (password "pw", e2e_seed)."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(f"{stack.base}/api/auth/csrf/", timeout=30).read()
    csrf = next(c.value for c in jar if c.name == "csrftoken")
    login = urllib.request.Request(f"{stack.base}/api/auth/login/", method="POST",
                                   data=json.dumps({"username": username, "password": "pw"}).encode(),
                                   headers={"Content-Type": "application/json", "X-CSRFToken": csrf})
    opener.open(login, timeout=30).read()
    return next(c.value for c in jar if c.name == "sessionid")


def test_the_browser_session_infers_from_the_same_site_only(stack: ServiceStack, registered: Any) -> None:
    """The Models page's try-it form sends the session cookie, no token, no CSRF token."""
    server, served = registered["server"], registered["served"]
    url = f"{server.base}/v2/models/{served}/infer"
    here = server.base  # the Origin a page served by this host sends

    def infer(session: str | None, origin: str | None = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if session is not None:
            headers["Cookie"] = f"csrftoken=x; sessionid={session}"
        if origin is not None:
            headers["Origin"] = origin
        request = urllib.request.Request(url, method="POST", data=json.dumps(oip_body(ROWS[:1])).encode(),
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    team_a, team_b = signed_in_session(stack, "admin_a"), signed_in_session(stack, "admin_b")
    status, body = infer(team_a, here)
    assert status == 200 and body["model_version"] == "1", body
    assert infer(team_a)[0] == 200  # no Origin: no cross-site browser request
    status, body = infer(team_b, here)
    assert status == 404 and "no served model" in body["error"], body
    status, body = infer(team_a, "http://evil.example")
    assert status == 403 and "cross-site" in body["error"], body
    assert infer(team_a, "null")[0] == 403
    status, body = infer(None, here)
    assert status == 401 and "sign in" in body["error"], body
    assert infer("not-a-session", here)[0] == 401


def test_a_revoked_token_is_refused_at_the_next_request_and_its_use_is_recorded(
    stack: ServiceStack, registered: Any
) -> None:
    """The server keeps a token's check a few seconds; a revocation drops it at once (announced on
    Redis after the commit). The token's last use is recorded as the API records it."""
    server, served = registered["server"], registered["served"]
    made = stack.api("a").post("/api/auth/tokens/", json={"name": "serving script", "scope": "read"})
    assert made.status_code == 201, made.text
    script = Http(server.base, made.json()["token"])
    answer = script.post(f"/v2/models/{served}/infer", json=oip_body(ROWS[:1]))
    assert answer.status_code == 200, answer.text  # checked, and kept
    page = stack.api("a").get("/api/auth/tokens/").json()
    listed = {t["id"]: t for t in (page["results"] if isinstance(page, dict) else page)}
    assert listed[made.json()["id"]]["last_used_at"] is not None

    revoked = stack.api("a").request("DELETE", f"/api/auth/tokens/{made.json()['id']}/")
    assert revoked.status_code == 204, revoked.text
    refused = script.post(f"/v2/models/{served}/infer", json=oip_body(ROWS[:1]))
    assert refused.status_code == 401 and "revoked" in refused.json()["error"], refused.text


def test_moving_production_under_load_fails_no_request(stack: ServiceStack, registered: Any) -> None:
    server, served, model = registered["server"], registered["served"], registered["model"]
    results: list[tuple[float, float, int, str]] = []  # (start, end, status, version)
    lock = threading.Lock()
    stop = threading.Event()

    def client() -> None:
        http = Http(server.base, stack.token("a"))
        while not stop.is_set():
            start = time.monotonic()
            answer = http.post(f"/v2/models/{served}/infer", json=oip_body(ROWS[:1]))
            version = answer.json().get("model_version", "") if answer.status_code == 200 else answer.text
            with lock:
                results.append((start, time.monotonic(), answer.status_code, version))

    threads = [threading.Thread(target=client) for _ in range(16)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.5)
        moved = stack.api("a").request("PUT", f"/api/models/{model['id']}/aliases/production/",
                                       {"version": 2, "note": "better"})
        assert moved.status_code == 200, moved.text
        deadline = time.monotonic() + 60
        while not any(r[3] == "2" for r in results):
            assert time.monotonic() < deadline, server.log.read_text()[-3000:]
            time.sleep(0.1)
        time.sleep(1.5)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    failed = [r for r in results if r[2] != 200]
    assert not failed, failed[:5]
    first_v2_end = min(r[1] for r in results if r[3] == "2")
    after = [r[3] for r in results if r[0] > first_v2_end]
    assert after and set(after) == {"2"}
    assert {r[3] for r in results} == {"1", "2"}
    history = stack.api("a").get(f"/api/models/{model['id']}/").json()["history"]
    assert (history[0]["alias"], history[0]["from_version"], history[0]["to_version"]) == ("production", 1, 2)
    assert history[0]["actor"] == "admin_a"


def test_a_full_queue_answers_429_with_retry_after(stack: ServiceStack, registered: Any) -> None:
    """One row may wait, for a long batching wait: the second concurrent request finds it full."""
    served = registered["served"]
    server = ModelServer(stack, SERVING_MAX_QUEUE="1", SERVING_MAX_WAIT_MS="1500", SERVING_MAX_BATCH_SIZE="64")
    try:
        statuses: list[tuple[int, Any]] = []

        def send() -> None:
            answer = Http(server.base, stack.token("a")).post(f"/v2/models/{served}/infer", json=oip_body(ROWS[:1]))
            statuses.append((answer.status_code, answer.headers.get("Retry-After")))

        threads = [threading.Thread(target=send) for _ in range(4)]
        for t in threads:
            t.start()
            time.sleep(0.1)
        for t in threads:
            t.join(30)
        codes = sorted(s for s, _ in statuses)
        assert codes.count(200) >= 1 and 429 in codes, statuses
        assert all(retry == "1" for s, retry in statuses if s == 429)
    finally:
        server.stop()



def test_the_standalone_predictor_serves_one_version_folder_as_kserve_would(
    stack: ServiceStack, registered: Any
) -> None:
    """`python -m serving.standalone --model_dir DIR --model_name NAME`: the InferenceService's command."""
    served, model = registered["served"], registered["model"]
    folder = Path(stack.env["NETLOOM_E2E_MEDIA"]) / "registry" / str(model["id"]) / "1"
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "serving.standalone", "--model_dir", str(folder), "--model_name", served,
         "--http_port", str(port), "--enable_grpc", "false"],
        cwd=ROOT, env={k: v for k, v in stack.env.items() if k != "DJANGO_SETTINGS_MODULE"},
        stdout=open(stack.tmp / f"standalone-{port}.log", "ab"), stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, 120, proc)
        plain = Http(f"http://127.0.0.1:{port}", None)
        answer = plain.post(f"/v2/models/{served}/infer", json=oip_body(ROWS))
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["model_name"] == served and body["model_version"] == "1"
        labels = {o["name"]: o["data"] for o in body["outputs"]}["label"]
        route = [stack.api("a").post(f"/api/runs/{registered['runs'][0]}/predict/",
                                     json={"input": dict(zip(COLUMNS, row, strict=True))}).json()["prediction"]
                 for row in ROWS]
        assert labels == route
        assert [i["name"] for i in plain.get(f"/v2/models/{served}").json()["inputs"]] == COLUMNS
        bad = oip_body(ROWS[:1])
        bad["inputs"][0]["data"] = ["wide"]
        bad["inputs"][0]["datatype"] = "BYTES"
        refused = plain.post(f"/v2/models/{served}/infer", json=bad)
        assert refused.status_code == 400 and COLUMNS[0] in refused.json()["error"], refused.text
        log = (stack.tmp / f"standalone-{port}.log").read_text(errors="replace")
        assert f"refused a request (400 InvalidInput): {COLUMNS[0]}" in log and "Traceback" not in log, log[-3000:]
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
