"""The `netloom` command and `netloom.Client` against the session's live stack (real worker).

Each command runs as a user would run it: the installed `netloom` entry point in a subprocess,
with its own config directory, reading the password from its standard input.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.stack.stack import ROOT, ServiceStack
from tests.webapp.conftest import iris_like_csv

pytestmark = [pytest.mark.slow]

NETLOOM = Path(sys.executable).with_name("netloom")
TIMEOUT = 120


def netloom(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run the installed command; no controlling terminal (so a password comes from stdin)."""
    return subprocess.run(
        [str(NETLOOM), *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        start_new_session=True,
    )


@pytest.fixture
def user_env(tmp_path: Path) -> dict[str, str]:
    """A user's environment: their own config dir, nothing that logs them in yet."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NETLOOM_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["COLUMNS"] = "200"
    return env


def logged_in(stack: ServiceStack, env: dict[str, str]) -> dict[str, str]:
    done = netloom("login", stack.base, env=env, stdin="admin_a\npw\n")
    assert done.returncode == 0, done.stderr
    return env


def test_login_upload_push_train_follow_and_export_then_load_the_weights_in_torch(
    stack: ServiceStack, user_env: dict[str, str], tmp_path: Path
) -> None:
    done = netloom("login", stack.base, env=user_env, stdin="admin_a\npw\n")
    assert done.returncode == 0, done.stderr
    assert f"logged in to {stack.base} as admin_a" in done.stdout
    config = Path(user_env["XDG_CONFIG_HOME"]) / "netloom" / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert json.loads(config.read_text())["token"].startswith("nl_")

    teams = netloom("teams", "--json", env=user_env)
    assert teams.returncode == 0, teams.stderr
    assert [t["name"] for t in json.loads(teams.stdout)] == ["Team A"]

    # Upload a CSV with its target: a progress bar, then the summary once the worker has read it.
    csv = tmp_path / "flowers.csv"
    csv.write_bytes(iris_like_csv(30))
    upload = netloom("datasets", "upload", str(csv), "--target", "species", env=user_env)
    assert upload.returncode == 0, upload.stderr
    assert "upload flowers.csv" in upload.stderr and "100%" in upload.stderr
    assert '"flowers": ready (trainable)' in upload.stdout
    assert "rows: total 30" in upload.stdout and "setosa=10" in upload.stdout
    listed = json.loads(netloom("datasets", "list", "--json", env=user_env).stdout)
    dataset = next(d for d in listed if d["name"] == "flowers")

    # Push a spec (the team defaults to the user's only one).
    pushed = netloom(
        "graphs", "push", str(ROOT / "examples/specs/iris_mlp.json"), "--json", env=user_env
    )
    assert pushed.returncode == 0, pushed.stderr
    graph = json.loads(pushed.stdout)
    assert graph["team"] == stack.world["a"]["team"] and graph["latest_revision"] == 1
    pulled = netloom("graphs", "pull", str(graph["id"]), env=user_env)
    assert [n["id"] for n in json.loads(pulled.stdout)["nodes"]][:1] == ["fc1"]

    # Train it, following the stream: the bar moves, the final metrics print, exit 0.
    run = netloom(
        "runs",
        "start",
        "--graph",
        str(graph["id"]),
        "--dataset",
        str(dataset["id"]),
        "--set",
        "epochs=3",
        "--set",
        "batch_size=8",
        "--set",
        "log_every=1",
        "--set",
        "device=cpu",
        "--set",
        "optimizer.lr=0.01",
        "--follow",
        env=user_env,
    )
    assert run.returncode == 0, run.stderr + stack.logs()
    assert "train/loss=" in run.stderr and "step" in run.stderr, run.stderr
    lines = run.stdout.splitlines()
    run_id = int(lines[0].split()[1])
    assert lines[0] == f"run {run_id} succeeded"
    assert any(
        line.strip().startswith("val/") or line.strip().startswith("test/") for line in lines[1:]
    ), run.stdout
    shown = json.loads(netloom("runs", "list", "--json", env=user_env).stdout)
    mine = next(r for r in shown if r["id"] == run_id)
    assert mine["config"]["optimizer"]["lr"] == 0.01 and mine["status"] == "succeeded"
    found = netloom("runs", "list", "--json", "--filter", 'config.optimizer.lr = 0.01 and status = "succeeded"',
                    "--ordering=-metrics.val/accuracy", env=user_env)
    assert found.returncode == 0, found.stderr
    assert run_id in [r["id"] for r in json.loads(found.stdout)]
    typo = netloom("runs", "list", "--filter", "metrics.val/accuracy >", env=user_env)
    assert typo.returncode != 0 and "column 23" in typo.stderr, typo.stderr

    # Export the weights and load them into the network built from the same spec.
    export = netloom(
        "export",
        str(run_id),
        "--format",
        "safetensors",
        "--out",
        str(tmp_path / "out"),
        env=user_env,
    )
    assert export.returncode == 0, export.stderr
    path = Path(export.stdout.strip().removeprefix("wrote "))
    assert path.parent == tmp_path / "out" and path.suffix == ".safetensors"
    from safetensors.torch import load_file

    from engine.build import build
    from engine.spec import parse_spec

    weights = load_file(path)
    model = build(parse_spec((ROOT / "examples/specs/iris_mlp.json").read_text()), seed=0)
    model.load_state_dict(weights, strict=True)
    assert weights["fc1.weight"].shape[1] == 4

    # Explain a test row: the prediction and the features' attributions.
    why = netloom("explain", str(run_id), "--index", "0", env=user_env)
    assert why.returncode == 0, why.stderr
    assert "prediction:" in why.stdout and "petal_length" in why.stdout

    # Evaluate it on the server's workers (a "runs.evaluate" job): the figures, and the JSON stored.
    judged = netloom("evaluate", str(run_id), "--json", env=user_env)
    assert judged.returncode == 0, judged.stderr + stack.logs()
    report = json.loads(judged.stdout)
    assert report["run"] == run_id and report["checkpoint"] is None and report["rows"] > 0
    said = netloom("evaluate", str(run_id), env=user_env)
    assert said.returncode == 0, said.stderr
    assert f"evaluation of run {run_id} (the final weights)" in said.stdout and "accuracy:" in said.stdout

    # Register it in the model registry and make it production (admin_a is the team's admin).
    made = netloom("models", "create", "flowers", "--json", env=user_env)
    assert made.returncode == 0, made.stderr
    model_id = json.loads(made.stdout)["id"]
    registered = netloom("models", "register", str(model_id), "--run", str(run_id), env=user_env)
    assert registered.returncode == 0 and "version 1 of model" in registered.stdout, registered.stderr
    promoted = netloom("models", "alias", str(model_id), "production", "1", "--note", "first", env=user_env)
    assert promoted.returncode == 0 and "production -> version 1" in promoted.stdout, promoted.stderr
    shown = netloom("models", "show", str(model_id), env=user_env)
    assert "v1 [production]: run" in shown.stdout and "production - -> 1 by admin_a (first)" in shown.stdout


def test_a_bad_spec_push_prints_the_node_keyed_errors_and_saves_nothing(
    stack: ServiceStack, user_env: dict[str, str], tmp_path: Path
) -> None:
    logged_in(stack, user_env)
    spec = json.loads((ROOT / "examples/specs/iris_mlp.json").read_text())
    spec["nodes"][0]["params"]["out_features"] = -3
    spec["nodes"].append({"id": "mystery", "op": "NoSuchOp", "inputs": ["fc1"]})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spec))
    before = json.loads(netloom("graphs", "list", "--json", env=user_env).stdout)

    pushed = netloom("graphs", "push", str(bad), env=user_env)
    assert pushed.returncode == 1
    assert "Traceback" not in pushed.stderr
    assert "is not a valid graph" in pushed.stderr
    assert (
        "node fc1.out_features:" in pushed.stderr and "node mystery.op: unknown op" in pushed.stderr
    ), pushed.stderr
    assert json.loads(netloom("graphs", "list", "--json", env=user_env).stdout) == before

    as_json = netloom("graphs", "push", str(bad), "--json", env=user_env)
    assert as_json.returncode == 1
    assert {e["node"] for e in json.loads(as_json.stdout)["errors"]} >= {"fc1", "mystery"}


def test_a_cancelled_run_ends_the_watch_with_a_non_zero_status(
    stack: ServiceStack, user_env: dict[str, str]
) -> None:
    logged_in(stack, user_env)
    world = stack.world["a"]
    started = netloom(
        "runs",
        "start",
        "--graph",
        str(world["graph"]),
        "--dataset",
        str(world["dataset"]),
        "--set",
        "epochs=200",
        "--set",
        "batch_size=8",
        "--set",
        "log_every=1",
        "--set",
        "device=cpu",
        "--json",
        env=user_env,
    )
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["id"]
    watch = subprocess.Popen(
        [str(NETLOOM), "runs", "watch", str(run_id)],
        env=user_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while stack.api("a").get(f"/api/runs/{run_id}/").json()["progress"]["step"] < 3:
            assert time.monotonic() < deadline, stack.logs()
            time.sleep(0.1)
        cancel = netloom("runs", "cancel", str(run_id), env=user_env)
        assert cancel.returncode == 0, cancel.stderr
        out, err = watch.communicate(timeout=60)
    finally:
        watch.kill()
    assert watch.returncode == 4, err
    assert out.splitlines()[0] == f"run {run_id} cancelled"
    # And a finished run can no longer be cancelled: the service's message, exit 1, no traceback.
    again = netloom("runs", "cancel", str(run_id), env=user_env)
    assert (
        again.returncode == 1 and again.stderr.startswith("error: ") and "HTTP 409" in again.stderr
    )
    assert "Traceback" not in again.stderr


def test_the_python_client_streams_typed_events_and_downloads_to_a_path(
    stack: ServiceStack, tmp_path: Path
) -> None:
    from netloom import ApiError, Client

    client = Client(stack.base, stack.token("a"))
    world = stack.world["a"]
    run = client.run_start(
        graph=world["graph"],
        dataset=world["dataset"],
        config={"epochs": 2, "batch_size": 16, "log_every": 1, "device": "cpu"},
    )
    kinds: list[str] = []
    seqs: list[int] = []
    statuses: list[str] = []
    for event in client.run_events(run["id"]):
        kinds.append(event["type"])
        if event["type"] not in ("state", "replayed"):
            seqs.append(event["seq"])
        if event["type"] == "status":
            statuses.append(event["status"])
    assert kinds[0] == "state" and "metric" in kinds and kinds[-1] == "status"
    assert seqs == sorted(set(seqs)), "no event twice, in order"

    def replayed(since: int) -> list[int]:
        events = client.run_events(run["id"], since=since)
        return [e["seq"] for e in events if e["type"] not in ("state", "replayed")]

    # Resuming from a sequence number gives only what came after it, as stored.
    stored = replayed(0)
    assert replayed(seqs[2]) == [seq for seq in stored if seq > seqs[2]]
    if "interrupted" in statuses:
        # The worker was judged lost (a loaded machine) and the run resumed: the steps it redid
        # replaced their earlier points, whose events the store no longer holds.
        assert set(stored) <= set(seqs)
    else:
        assert stored == seqs
    assert client.run(run["id"])["status"] == "succeeded"
    path = client.export(run["id"], format="python", out=tmp_path)
    assert path.suffix == ".py" and "class" in path.read_text()
    with pytest.raises(ApiError) as refused:
        Client(stack.base, stack.token("b")).run(run["id"])
    assert refused.value.status == 404


def test_a_bad_csv_upload_waits_for_the_worker_and_prints_the_row_and_column(
    stack: ServiceStack, user_env: dict[str, str], tmp_path: Path
) -> None:
    logged_in(stack, user_env)
    csv = tmp_path / "bad.csv"
    csv.write_bytes(iris_like_csv(30, bad_row=7))
    upload = netloom("datasets", "upload", str(csv), "--target", "species", env=user_env)
    assert upload.returncode == 1
    assert "Traceback" not in upload.stderr
    error = upload.stderr.splitlines()[-1]
    assert error.startswith("error: dataset ") and "could not be read: row 8, column" in error, (
        upload.stderr
    )
    assert "sepal_width" in error and "not a number" in error
