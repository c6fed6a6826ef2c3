"""`Client(url, token)`: typed methods over the REST API and the run stream.

Request and answer types are the TypedDicts of `netloom.api_types`, generated from the service's
OpenAPI schema; the stream yields its frames (`RunStreamFrame`) as they are declared there.
"""

from __future__ import annotations

import json
import mimetypes
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any, cast
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import httpx

from netloom.api_types import (
    ApiToken,
    CheckpointEvent,
    CheckpointJson,
    CollabState,
    CompareAnswer,
    Dataset,
    EvaluationAnswer,
    Explanation,
    Graph,
    GraphDetail,
    InitPlanAnswer,
    Job,
    LogEvent,
    Me,
    NewToken,
    Revision,
    Run,
    RunStreamFrame,
    StatusEvent,
    Sweep,
    SweepDetail,
    UserTeam,
    ValidationReport,
)
from netloom.errors import ApiError, ConnectionFailed, DatasetFailed, JobFailed, NetloomError

FINAL_STATUSES = frozenset({"succeeded", "failed", "cancelled"})
EXPORT_FORMATS = ("safetensors", "python", "onnx", "config", "zip")
# A download's name when the service sends none (it names each file per run).
EXPORT_SUFFIXES = {"python": ".py", "config": "-config.json"}
# Close codes of ws/runs/<id>/ that no reconnect can cure.
_CLOSE_ERRORS = {
    4401: (401, "not_authenticated", "the token was refused by the stream"),
    4404: (404, "not_found", "no such run among your teams"),
}
Progress = Callable[[int, int], None]  # (bytes sent, total bytes)


def upload_kind(path: Path) -> str:
    """The upload `kind` a file's name suggests (csv, images for a zip, tensors)."""
    suffix = path.suffix.lower()
    if suffix == ".zip":
        return "images"
    if suffix in (".safetensors", ".npz"):
        return "tensors"
    return "csv"


class _CountingFile:
    """A file that reports how much has been read from it (httpx streams multipart files by read())."""

    def __init__(self, handle: IO[bytes], total: int, progress: Progress) -> None:
        self._handle, self._total, self._progress, self._done = handle, total, progress, 0

    def read(self, size: int = -1) -> bytes:
        chunk = self._handle.read(size)
        self._done += len(chunk)
        self._progress(self._done, self._total)
        return chunk

    def seek(self, offset: int, whence: int = 0) -> int:
        position = self._handle.seek(offset, whence)
        if position == 0:
            self._done = 0
        return position

    def tell(self) -> int:
        return self._handle.tell()

    def fileno(self) -> int:
        return self._handle.fileno()


class Client:
    """A Netloom service for one user (an API token: `Client.login(...)` makes one)."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        headers = {"Accept": "application/json", "User-Agent": "netloom-client/0.1"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.http = httpx.Client(
            base_url=self.url,
            headers=headers,
            transport=transport,
            timeout=httpx.Timeout(timeout, write=None),
            follow_redirects=False,
        )

    @classmethod
    def login(
        cls, url: str, username: str, password: str, *, name: str = "netloom command line",
        scope: str | None = None, team: int | str | None = None, expires_at: datetime | str | None = None,
    ) -> tuple[Client, NewToken]:
        """Ask the service for a new API token with a user's password; (a client with it, the token).

        `scope` "read" (reads, streams and predictions only) or "write" (the default); `team` (id or
        name) binds the token to one team; `expires_at` ends it (see token_create).
        """
        anonymous = cls(url)
        try:
            token = cast(
                NewToken,
                anonymous._json(
                    "POST",
                    "/api/auth/token/",
                    json={"username": username, "password": password, "name": name,
                          **_token_options(scope=scope, team=team, expires_at=expires_at)},
                ),
            )
        finally:
            anonymous.close()
        return cls(url, token["token"]), token

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transport ---------------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ConnectionFailed(f"cannot reach {self.url}: {exc}") from exc
        if response.status_code >= 400:
            raise _api_error(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        return response.json() if response.content else None

    def _all_pages(self, path: str, params: dict[str, Any]) -> list[Any]:
        query = {key: value for key, value in params.items() if value is not None}
        page, results = 1, []
        while True:
            answer = self._json("GET", path, params={**query, "page": page, "page_size": 500})
            results.extend(answer["results"])
            if not answer.get("next"):
                return results
            page += 1

    # --- tokens ------------------------------------------------------------------------------

    def tokens(self) -> list[ApiToken]:
        """The user's API tokens (revoked and expired ones too), with scope, team and expiry."""
        return cast(list[ApiToken], self._all_pages("/api/auth/tokens/", {}))

    def token_create(
        self, *, name: str = "", scope: str | None = None, team: int | str | None = None,
        expires_at: datetime | str | None = None,
    ) -> NewToken:
        """A new API token of the signed-in user; its secret is in `token` (shown only here).

        A read token (`scope="read"`) is refused every write (403 `token_scope`); a team-bound one
        sees that team only; an expired one is refused (401 `token_expired`). A token made with a
        team-bound token is bound to the same team.
        """
        body = {"name": name, **_token_options(scope=scope, team=team, expires_at=expires_at)}
        return cast(NewToken, self._json("POST", "/api/auth/tokens/", json=body))

    def token_revoke(self, token_id: int) -> None:
        """Revoke one of the user's tokens (it never signs in again)."""
        self._request("DELETE", f"/api/auth/tokens/{int(token_id)}/")

    # --- who and which team ------------------------------------------------------------------

    def me(self) -> Me:
        """The user, with their teams and roles."""
        return cast(Me, self._json("GET", "/api/auth/me/"))

    def teams(self) -> list[UserTeam]:
        """The user's teams, each with the user's role in it."""
        return self.me()["teams"]

    def default_team(self, team: int | None = None) -> int:
        """`team` if given, else the user's only team (an error naming them when there are several)."""
        if team is not None:
            return team
        teams = self.teams()
        if len(teams) == 1:
            return teams[0]["id"]
        names = ", ".join(f"{t['id']} ({t['name']})" for t in teams) or "none"
        raise NetloomError(f"you are in {len(teams)} teams, choose one with --team ID: {names}")

    # --- datasets ----------------------------------------------------------------------------

    def datasets(self, *, team: int | None = None) -> list[Dataset]:
        return cast(list[Dataset], self._all_pages("/api/datasets/", {"team": team}))

    def dataset(self, dataset_id: int) -> Dataset:
        return cast(Dataset, self._json("GET", f"/api/datasets/{dataset_id}/"))

    def builtins(self) -> list[dict[str, Any]]:
        """The built-in datasets the service offers (name, title, task, rows, ...)."""
        answer = self._json("GET", "/api/datasets/builtins/")
        return answer["builtins"] if isinstance(answer, dict) and "builtins" in answer else answer

    def dataset_add_builtin(
        self,
        builtin: str,
        *,
        team: int | None = None,
        name: str | None = None,
        seed: int | None = None,
    ) -> Dataset:
        body: dict[str, Any] = {
            "team": self.default_team(team),
            "builtin": builtin,
            "name": name or builtin,
        }
        if seed is not None:
            body["options"] = {"seed": seed}
        return cast(Dataset, self._json("POST", "/api/datasets/", json=body))

    def dataset_upload(
        self,
        path: str | Path,
        *,
        team: int | None = None,
        target: str | None = None,
        kind: str | None = None,
        name: str | None = None,
        options: dict[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> Dataset:
        """Upload a CSV, image zip or tensors file; the answer may still be `processing` (see dataset_wait)."""
        file = Path(path)
        fields: dict[str, str] = {
            "team": str(self.default_team(team)),
            "kind": kind or upload_kind(file),
            "name": name or file.stem,
        }
        opts = dict(options or {})
        if target is not None:
            opts["target"] = target
        if opts:
            fields["options"] = json.dumps(opts)
        total = file.stat().st_size
        content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        with file.open("rb") as handle:
            body: Any = _CountingFile(handle, total, progress) if progress else handle
            return cast(
                Dataset,
                self._json(
                    "POST",
                    "/api/datasets/upload/",
                    data=fields,
                    files={"file": (file.name, body, content_type)},
                ),
            )

    def dataset_versions(self, dataset_id: int) -> list[dict[str, Any]]:
        """The dataset's versions, oldest first: number, status, digest, size, summary, who made it."""
        return cast(list[dict[str, Any]], self._json("GET", f"/api/datasets/{dataset_id}/versions/"))

    def dataset_version(self, dataset_id: int, number: int) -> dict[str, Any]:
        return cast(dict[str, Any], self._json("GET", f"/api/datasets/{dataset_id}/versions/{number}/"))

    def dataset_version_upload(
        self, dataset_id: int, path: str | Path, *, options: dict[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        """Upload a new version of a dataset (options default to the previous version's). Bytes equal
        to an existing version are refused (ApiError 409 `duplicate_version` naming it)."""
        file = Path(path)
        fields = {"options": json.dumps(options)} if options else {}
        content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        with file.open("rb") as handle:
            body: Any = _CountingFile(handle, file.stat().st_size, progress) if progress else handle
            return cast(dict[str, Any], self._json(
                "POST", f"/api/datasets/{dataset_id}/versions/", data=fields,
                files={"file": (file.name, body, content_type)},
            ))

    def dataset_version_delete(self, dataset_id: int, number: int) -> None:
        self._request("DELETE", f"/api/datasets/{dataset_id}/versions/{number}/")

    def dataset_diff(self, dataset_id: int, before: int, after: int, *, key: str | None = None) -> dict[str, Any]:
        """What changed from version `before` to `after`: rows, columns, statistics, class balance."""
        params: dict[str, Any] = {"from": before, "to": after}
        if key:
            params["key"] = key
        return cast(dict[str, Any], self._json("GET", f"/api/datasets/{dataset_id}/versions/diff/", params=params))

    def dataset_wait(
        self,
        dataset_id: int,
        *,
        timeout: float = 600.0,
        poll: float = 0.5,
        progress: Callable[[Dataset], None] | None = None,
    ) -> Dataset:
        """Wait until the dataset is processed: the ready dataset, or DatasetFailed with the located error."""
        deadline = time.monotonic() + timeout
        while True:
            dataset = self.dataset(dataset_id)
            if progress:
                progress(dataset)
            if dataset["status"] == "ready":
                return dataset
            if dataset["status"] == "failed":
                raise DatasetFailed(cast(dict[str, Any], dataset))
            if time.monotonic() > deadline:
                raise NetloomError(
                    f"dataset {dataset_id} is still processing after {timeout:.0f} s"
                )
            time.sleep(poll)

    # --- graphs ------------------------------------------------------------------------------

    def graphs(self, *, team: int | None = None) -> list[Graph]:
        return cast(list[Graph], self._all_pages("/api/graphs/", {"team": team}))

    def graph(self, graph_id: int) -> GraphDetail:
        return cast(GraphDetail, self._json("GET", f"/api/graphs/{graph_id}/"))

    def validate(self, spec: dict[str, Any]) -> ValidationReport:
        """The engine's report on a spec: every node's shape, or node-keyed errors (never saves)."""
        return cast(
            ValidationReport, self._json("POST", "/api/graphs/validate/", json={"spec": spec})
        )

    def graph_push(
        self,
        spec: dict[str, Any],
        *,
        name: str | None = None,
        graph: int | None = None,
        team: int | None = None,
    ) -> GraphDetail | Revision:
        """A new graph with this spec (`name`), or a new revision of `graph`."""
        if graph is not None:
            return cast(
                Revision, self._json("POST", f"/api/graphs/{graph}/revisions/", json={"spec": spec})
            )
        body = {"team": self.default_team(team), "name": name or "graph", "spec": spec}
        return cast(GraphDetail, self._json("POST", "/api/graphs/", json=body))

    def graph_pull(self, graph_id: int, revision: int | None = None) -> dict[str, Any]:
        """The spec of a revision (the latest by default)."""
        if revision is None:
            latest = self.graph(graph_id)["latest"]
            if latest is None:
                raise NetloomError(f"graph {graph_id} has no revision yet")
            return cast(dict[str, Any], latest["spec"])
        answer = cast(Revision, self._json("GET", f"/api/graphs/{graph_id}/revisions/{revision}/"))
        return cast(dict[str, Any], answer["spec"])

    def graph_collab(self, graph_id: int) -> CollabState:
        """The shared canvas of a graph (live co-editing): the spec it stands for now, the length of
        its update log, and the revision it was seeded from."""
        return cast(CollabState, self._json("GET", f"/api/graphs/{graph_id}/collab/"))

    def graph_collab_save(self, graph_id: int, message: str | None = None) -> Revision:
        """Save the shared canvas as a new revision (the latest one when nothing but the layout
        changed); validated as any save. The shared canvas is not reset."""
        body = {"message": message} if message is not None else {}
        return cast(Revision, self._json("POST", f"/api/graphs/{graph_id}/collab/save/", json=body))

    # --- runs --------------------------------------------------------------------------------

    def runs(
        self,
        *,
        team: int | None = None,
        status: str | None = None,
        graph: int | None = None,
        dataset: int | None = None,
        tag: str | None = None,
        q: str | None = None,
        sweep: int | None = None,
        ordering: str | None = None,
        filter: str | None = None,  # noqa: A002 - the API's parameter
    ) -> list[Run]:
        """Every run that matches (all pages). `filter` is the runs query language
        ('metrics.val/accuracy > 0.9 and tags = "baseline"'); `ordering` takes metrics.<name>,
        best.<name>, config.<path>, nodes.<node>.<param> as well as the fixed fields."""
        params = {"team": team, "status": status, "graph": graph, "dataset": dataset, "tag": tag,
                  "q": q, "sweep": sweep, "ordering": ordering, "filter": filter}
        return cast(list[Run], self._all_pages("/api/runs/", params))

    def run(self, run_id: int) -> Run:
        return cast(Run, self._json("GET", f"/api/runs/{run_id}/"))

    def run_start(
        self,
        *,
        graph: int,
        dataset: int,
        revision: int | None = None,
        config: dict[str, Any] | None = None,
        team: int | None = None,
        name: str = "",
        notes: str = "",
        tags: list[str] | None = None,
        init: dict[str, Any] | None = None,
    ) -> Run:
        """Queue a run of a graph revision (the latest by default) on a dataset.

        `init` {"run", "checkpoint", "mode": "finetune" | "resume"} starts from a kept checkpoint.
        """
        if revision is None:
            revision = self.graph(graph)["latest_revision"]
        body: dict[str, Any] = {"graph": graph, "dataset": dataset, "config": config or {},
                                "name": name, "notes": notes}
        if revision is not None:
            body["revision"] = revision
        if team is not None:
            body["team"] = team
        if tags is not None:
            body["tags"] = tags
        if init is not None:
            body["init"] = init
        return cast(Run, self._json("POST", "/api/runs/", json=body))

    def run_update(
        self, run_id: int, *, name: str | None = None, notes: str | None = None, tags: list[str] | None = None
    ) -> Run:
        """PATCH a run's name, notes or tags (what is None stays)."""
        body = {k: v for k, v in (("name", name), ("notes", notes), ("tags", tags)) if v is not None}
        return cast(Run, self._json("PATCH", f"/api/runs/{run_id}/", json=body))

    def checkpoints(self, run_id: int) -> list[CheckpointJson]:
        """The run's kept checkpoints (kind, metrics, which one the default export holds)."""
        return cast(list[CheckpointJson], self._json("GET", f"/api/runs/{run_id}/checkpoints/"))

    def init_plan(
        self, *, graph: int, from_run: int, checkpoint: str, mode: str = "finetune",
        revision: int | None = None, epochs: int | None = None,
    ) -> InitPlanAnswer:
        """What starting `graph` (revision) from a checkpoint would load; `problems` a run would be refused for."""
        body: dict[str, Any] = {"graph": graph, "from_run": from_run, "checkpoint": checkpoint, "mode": mode}
        if revision is not None:
            body["revision"] = revision
        if epochs is not None:
            body["epochs"] = epochs
        return cast(InitPlanAnswer, self._json("POST", "/api/runs/init-plan/", json=body))

    def run_cancel(self, run_id: int) -> Run:
        return cast(Run, self._json("POST", f"/api/runs/{run_id}/cancel/"))

    def reproduce(self, run_id: int, *, deterministic: bool | None = None) -> Run:
        """Queue a run repeating `run_id` (same revision, data, config, seed, init); the new run."""
        body = {} if deterministic is None else {"deterministic": deterministic}
        return cast(Run, self._json("POST", f"/api/runs/{run_id}/reproduce/", json=body))

    def lineage(self, run_id: int | None = None, *, model: int | None = None, version: int | None = None,
                depth: int | None = None) -> dict[str, Any]:
        """{root, nodes, edges, truncated}: the lineage of run `run_id`, or of `version` of `model`."""
        params = {"depth": depth} if depth is not None else {}
        if run_id is not None:
            return cast(dict[str, Any], self._json("GET", f"/api/runs/{run_id}/lineage/", params=params))
        if model is None or version is None:
            raise ValueError("give a run id, or a model and a version")
        return cast(dict[str, Any], self._json("GET", f"/api/models/{model}/versions/{version}/lineage/",
                                               params=params))

    def compare(
        self, run_ids: list[int], *, keys: list[str] | None = None, max_points: int | None = None
    ) -> CompareAnswer:
        """GET /api/runs/compare/ (2 to 100 runs): series, config and graph parameters that differ, graph changes."""
        params: dict[str, Any] = {"ids": ",".join(str(i) for i in run_ids)}
        if keys:
            params["keys"] = ",".join(keys)
        if max_points:
            params["max_points"] = max_points
        return cast(CompareAnswer, self._json("GET", "/api/runs/compare/", params=params))

    # --- sweeps ------------------------------------------------------------------------------

    def sweeps(
        self, *, team: int | None = None, status: str | None = None, graph: int | None = None
    ) -> list[Sweep]:
        params = {"team": team, "status": status, "graph": graph}
        return cast(list[Sweep], self._all_pages("/api/sweeps/", params))

    def sweep(self, sweep_id: int) -> SweepDetail:
        return cast(SweepDetail, self._json("GET", f"/api/sweeps/{sweep_id}/"))

    def sweep_create(
        self,
        *,
        name: str,
        graph: int,
        dataset: int,
        space: dict[str, Any],
        revision: int | None = None,
        config: dict[str, Any] | None = None,
        team: int | None = None,
        **search: Any,
    ) -> SweepDetail:
        """Start a sweep (POST /api/sweeps/); `search`: strategy, pruner, objective, budget,
        parallelism, seed (the service's defaults otherwise)."""
        body: dict[str, Any] = {
            "name": name,
            "graph": graph,
            "dataset": dataset,
            "space": space,
            "config": config or {},
            **{k: v for k, v in search.items() if v is not None},
        }
        if revision is not None:
            body["revision"] = revision
        if team is not None:
            body["team"] = team
        return cast(SweepDetail, self._json("POST", "/api/sweeps/", json=body))

    def sweep_cancel(self, sweep_id: int) -> SweepDetail:
        return cast(SweepDetail, self._json("POST", f"/api/sweeps/{sweep_id}/cancel/"))

    # --- the stream --------------------------------------------------------------------------

    def stream_url(self, run_id: int, since: int = 0) -> str:
        parts = urlsplit(self.url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        query = urlencode({"since": since, "batch": 1})
        return urlunsplit((scheme, parts.netloc, f"{parts.path}/ws/runs/{run_id}/", query, ""))

    def run_events(
        self,
        run_id: int,
        *,
        since: int = 0,
        follow: bool = True,
        retries: int = 20,
        open_timeout: float = 10.0,
    ) -> Iterator[RunStreamFrame]:
        """The run's stream frames: `state`, the stored events after `since`, `replayed`, then live ones.

        Batches are unpacked (one event per item). After a dropped connection it reconnects with
        `?since=<last seq seen>`, so no event is lost or repeated (each reconnect starts with a new
        `state`). `follow=False` stops at `replayed`; otherwise it ends after the run's final status.
        """
        from websockets.exceptions import ConnectionClosed, InvalidStatus
        from websockets.sync.client import connect

        last_seq, failures, run_final = since, 0, False
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        while True:
            try:
                with connect(
                    self.stream_url(run_id, last_seq),
                    additional_headers=headers,
                    open_timeout=open_timeout,
                    max_size=None,
                ) as ws:
                    for text in ws:
                        frame = json.loads(text)
                        events = frame["events"] if frame.get("type") == "batch" else [frame]
                        for event in events:
                            kind = event.get("type")
                            if kind == "state":
                                run_final = event["run"]["status"] in FINAL_STATUSES
                            elif kind != "replayed":
                                if event["seq"] <= last_seq:
                                    continue  # already yielded before a reconnect
                                last_seq = event["seq"]
                            failures = 0
                            yield cast(RunStreamFrame, event)
                            if kind == "status" and event["status"] in FINAL_STATUSES and follow:
                                return
                            if kind == "replayed" and (not follow or run_final):
                                return
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd is not None else None
                if code in _CLOSE_ERRORS:
                    raise ApiError(*_CLOSE_ERRORS[code]) from None
                reason: Exception = exc
            except InvalidStatus as exc:
                status = exc.response.status_code
                if status in (401, 403, 404):
                    raise ApiError(
                        status,
                        "stream_refused",
                        f"the stream refused the connection (HTTP {status})",
                    ) from None
                reason = exc
            except (OSError, TimeoutError) as exc:
                reason = exc
            failures += 1
            if failures > retries:
                raise ConnectionFailed(
                    f"the stream of run {run_id} dropped and could not be resumed: {reason}"
                )
            time.sleep(min(0.2 * 2 ** (failures - 1), 5.0))

    def run_follow(
        self, run_id: int, *, on_event: Callable[[RunStreamFrame], None] | None = None
    ) -> StatusEvent:
        """Follow the stream until the run ends; its final status event."""
        final: StatusEvent | None = None
        for event in self.run_events(run_id):
            if on_event:
                on_event(event)
            if event["type"] == "status" and event["status"] in FINAL_STATUSES:
                final = cast(StatusEvent, event)
        if final is None:  # joined after the end and since was past it: the run says how it ended
            run = self.run(run_id)
            final = cast(
                StatusEvent,
                {
                    "type": "status",
                    "run": run_id,
                    "seq": run.get("last_seq", 0),
                    "status": run["status"],
                    "detail": "",
                    "error": run.get("error") or None,
                    "final_metrics": run.get("final_metrics") or None,
                },
            )
        return final

    def run_logs(self, run_id: int) -> list[LogEvent | StatusEvent | CheckpointEvent]:
        """The run's log as its page shows it: status changes, log lines and checkpoints, from
        its stream's replay. A `best` checkpoint written with an epoch's at the same step is one
        entry, the epoch's, with `also: ["best"]` (the same weights kept twice)."""
        lines: list[Any] = []
        for event in self.run_events(run_id, follow=False):
            if event["type"] not in ("status", "log", "checkpoint"):
                continue
            previous = lines[-1] if lines else None
            if (
                event["type"] == "checkpoint"
                and previous is not None
                and previous["type"] == "checkpoint"
                and previous["step"] == event["step"]
            ):
                pair: list[dict[str, Any]] = [dict(previous), dict(event)]
                first, second = pair if previous["name"] != "best" else pair[::-1]
                lines[-1] = {**first, "also": [*(first.get("also") or []), second["name"]]}
                continue
            lines.append(dict(event))
        return lines

    # --- the model registry ------------------------------------------------------------------

    def models(self, *, team: int | None = None) -> list[dict[str, Any]]:
        """The registered models of your teams (each with its latest version and aliases)."""
        return self._all_pages("/api/models/", {"team": team})

    def model(self, model_id: int) -> dict[str, Any]:
        """One model with its versions, aliases and the history of every alias move."""
        return cast(dict[str, Any], self._json("GET", f"/api/models/{model_id}/"))

    def model_create(self, name: str, *, team: int | None = None, description: str = "") -> dict[str, Any]:
        body = {"team": self.default_team(team), "name": name, "description": description}
        return cast(dict[str, Any], self._json("POST", "/api/models/", json=body))

    def model_register(self, model_id: int, run_id: int, *, checkpoint: str | None = None,
                       note: str = "") -> dict[str, Any]:
        """A new version of the model from a run's final export (or one of its kept checkpoints)."""
        body = {"run": run_id, "checkpoint": checkpoint or "", "note": note}
        return cast(dict[str, Any], self._json("POST", f"/api/models/{model_id}/versions/", json=body))

    def model_alias(self, model_id: int, alias: str, version: int | None, *, note: str = "") -> dict[str, Any] | None:
        """Point `alias` at `version` (None: drop it); the move is kept in the model's history.

        The model's detail; or, when the team asks for a second admin's approval of production
        moves, `{"approval": {...}}`: the pending request (see `model_approve`).
        """
        path = f"/api/models/{model_id}/aliases/{quote(alias, safe='')}/"
        if version is None:
            self._request("DELETE", path, params={"note": note})
            return None
        return cast(dict[str, Any], self._json("PUT", path, json={"version": version, "note": note}))

    def model_approvals(self, model_id: int, *, status: str | None = None) -> list[dict[str, Any]]:
        """The model's requests to move production, newest first (`status`: pending, approved, rejected)."""
        params = {"status": status} if status else None
        return cast(list[dict[str, Any]], self._json("GET", f"/api/models/{model_id}/approvals/", params=params))

    def model_approve(self, model_id: int, approval_id: int, *, reject: bool = False) -> dict[str, Any]:
        """Approve a pending request (the alias moves now), or reject it; the request as decided.

        Approving needs a team admin other than the one who asked; rejecting, an admin or the one
        who asked.
        """
        verb = "reject" if reject else "approve"
        answer = self._json("POST", f"/api/models/{model_id}/approvals/{approval_id}/{verb}/")
        return cast(dict[str, Any], cast(dict[str, Any], answer)["approval"])

    # --- members and invitations (team admins) ------------------------------------------------

    def team_members(self, *, team: int | None = None) -> list[dict[str, Any]]:
        """The team's members: [{id, username, role}]."""
        detail = self._json("GET", f"/api/teams/{self.default_team(team)}/")
        return cast(list[dict[str, Any]], detail["members"])

    def member_id(self, user: int | str, *, team: int | None = None) -> int:
        """A member's user id from their id or username (an error naming the members when unknown)."""
        if isinstance(user, int) or str(user).isdigit():
            return int(user)
        members = self.team_members(team=team)
        for member in members:
            if member["username"] == user:
                return int(member["id"])
        names = ", ".join(m["username"] for m in members) or "none"
        raise NetloomError(f"{user} is not a member of the team; members: {names}")

    def invite(self, *, email: str = "", username: str = "", role: str = "viewer",
               team: int | None = None) -> dict[str, Any]:
        """Invite someone by e-mail or username: {id, token, url, expires_at, mailed, ...}."""
        body = {"email": email, "username": username, "role": role}
        path = f"/api/teams/{self.default_team(team)}/invitations/"
        return cast(dict[str, Any], self._json("POST", path, json=body))

    def invitations(self, *, team: int | None = None) -> list[dict[str, Any]]:
        """The team's pending invitations (admins)."""
        return cast(list[dict[str, Any]], self._json("GET", f"/api/teams/{self.default_team(team)}/invitations/"))

    def invitation_revoke(self, invitation_id: int, *, team: int | None = None) -> None:
        self._request("DELETE", f"/api/teams/{self.default_team(team)}/invitations/{invitation_id}/")

    def member_role(self, user: int | str, role: str, *, team: int | None = None) -> dict[str, Any]:
        """Change a member's role (admins); the team's last admin cannot be demoted (409)."""
        team_id = self.default_team(team)
        path = f"/api/teams/{team_id}/members/{self.member_id(user, team=team_id)}/"
        return cast(dict[str, Any], self._json("PATCH", path, json={"role": role}))

    def member_remove(self, user: int | str, *, team: int | None = None) -> None:
        """Remove a member (admins; anyone may leave); their open streams close."""
        team_id = self.default_team(team)
        self._request("DELETE", f"/api/teams/{team_id}/members/{self.member_id(user, team=team_id)}/")

    # --- the audit log ---------------------------------------------------------------------

    def audit(
        self, team: int, *, actor: str | None = None, action: str | None = None, object: str | None = None,  # noqa: A002
        since: str | None = None, until: str | None = None, limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """The team's audit log, newest first (team admins): `action` exact or a prefix ending in "."
        ("member."), `object` as "type:id" ("run:42"), `since`/`until` ISO-8601; at most `limit` entries."""
        query = {key: value for key, value in {"actor": actor, "action": action, "object": object, "since": since,
                                                "until": until}.items() if value is not None}
        page, results = 1, []
        while True:
            answer = self._json("GET", f"/api/teams/{team}/audit/", params={**query, "page": page, "page_size": 500})
            results.extend(answer["results"])
            if not answer.get("next") or (limit is not None and len(results) >= limit):
                return results[:limit] if limit is not None else results
            page += 1

    def audit_lines(
        self, team: int, *, actor: str | None = None, action: str | None = None, object: str | None = None,  # noqa: A002
        since: str | None = None, until: str | None = None,
    ) -> Iterator[str]:
        """Every filtered entry of the team's audit log as JSON lines, streamed (any size)."""
        query = {key: value for key, value in {"actor": actor, "action": action, "object": object, "since": since,
                                                "until": until}.items() if value is not None}
        try:
            with self.http.stream("GET", f"/api/teams/{team}/audit/export/", params=query) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _api_error(response)
                yield from (line for line in response.iter_lines() if line)
        except httpx.HTTPError as exc:
            raise ConnectionFailed(f"cannot reach {self.url}: {exc}") from exc

    def model_formats(
        self,
        model_id: int,
        version: int,
        formats: list[str] | tuple[str, ...] = ("pt2", "int8"),
        *,
        wait: float = 900.0,
        progress: Callable[[Job], None] | None = None,
    ) -> dict[str, Any]:
        """Build formats of a version for other runtimes (pt2: torch.export, int8: torchao
        weights, aoti: AOTInductor) as a job on the server's workers; once done, {format:
        {file, size, accuracy_delta, latency_ms {b1, b64}, fp32_latency_ms, ...}}."""
        job = cast(Job, self._json("POST", f"/api/models/{model_id}/versions/{version}/formats/",
                                   json={"formats": list(formats)}))
        job = self.job_wait(job["id"], timeout=wait, progress=progress)
        return cast(dict[str, Any], (job.get("result") or {}).get("formats") or {})

    def model_kserve(self, model_id: int, version: int, *, yaml: bool = False) -> dict[str, Any] | str:
        """The KServe InferenceService serving the version on a cluster (YAML text with `yaml`)."""
        path = f"/api/models/{model_id}/versions/{version}/kserve/"
        if yaml:
            return self._request("GET", path, params={"format": "yaml"}).text
        return cast(dict[str, Any], self._json("GET", path))

    def model_download(
        self, model_id: int, version: int, *, format: str = "safetensors", out: str | Path = "."  # noqa: A002
    ) -> Path:
        """Download one file of a version (safetensors, python, onnx, config, pt2, int8, aoti) into `out`."""
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            with self.http.stream("GET", f"/api/models/{model_id}/versions/{version}/download/",
                                  params={"format": format}) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _api_error(response)
                target = folder / _attachment_name(response, f"model{model_id}-v{version}.{format}")
                tmp = target.with_name(f".{target.name}.part")
                with tmp.open("wb") as handle:
                    for chunk in response.iter_bytes():
                        handle.write(chunk)
                tmp.replace(target)
                return target
        except httpx.HTTPError as exc:
            raise ConnectionFailed(f"cannot reach {self.url}: {exc}") from exc

    # --- downloads and explanations ----------------------------------------------------------

    def export(
        self,
        run_id: int,
        *,
        format: str = "safetensors",
        out: str | Path = ".",  # noqa: A002
        wait: float = 300.0,
        checkpoint: str | None = None,
    ) -> Path:
        """Download one file of a succeeded run's export into the folder `out`; its path.

        An ONNX file still being made (409 export_pending) is waited for up to `wait` seconds.
        `checkpoint` downloads the export of that kept checkpoint's weights instead.
        """
        if format not in EXPORT_FORMATS:
            raise NetloomError(f"format must be one of {', '.join(EXPORT_FORMATS)}")
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + wait
        while True:
            try:
                path = (f"/api/runs/{run_id}/checkpoints/{quote(checkpoint, safe='')}/export/"
                        if checkpoint else f"/api/runs/{run_id}/export/")
                with self.http.stream("GET", path, params={"format": format}) as response:
                    if response.status_code < 400:
                        fallback = f"run{run_id}" + EXPORT_SUFFIXES.get(format, f".{format}")
                        target = folder / _attachment_name(response, fallback)
                        tmp = target.with_name(f".{target.name}.part")
                        with tmp.open("wb") as handle:
                            for chunk in response.iter_bytes():
                                handle.write(chunk)
                        tmp.replace(target)
                        return target
                    response.read()
                    error = _api_error(response)
            except httpx.HTTPError as exc:
                raise ConnectionFailed(f"cannot reach {self.url}: {exc}") from exc
            if error.code != "export_pending" or time.monotonic() > deadline:
                raise error
            time.sleep(1.0)

    def explain(
        self,
        run_id: int,
        *,
        index: int,
        method: str = "integrated_gradients",
        target: int | None = None,
        layer: str | None = None,
        wait: float = 300.0,
        checkpoint: str | None = None,
    ) -> Explanation:
        """Explain the model's answer on a test-split row (a kept `checkpoint`'s weights if given);
        the finished explanation (or its failure)."""
        body: dict[str, Any] = {"index": index, "method": method}
        if checkpoint is not None:
            body["checkpoint"] = checkpoint
        if target is not None:
            body["target"] = target
        if layer is not None:
            body["layer"] = layer
        explanation = cast(
            Explanation, self._json("POST", f"/api/runs/{run_id}/explanations/", json=body)
        )
        deadline = time.monotonic() + wait
        while explanation["status"] not in ("succeeded", "failed"):
            if time.monotonic() > deadline:
                raise NetloomError(
                    f"explanation {explanation['id']} is still {explanation['status']}"
                )
            time.sleep(0.3)
            explanation = cast(
                Explanation, self._json("GET", f"/api/explanations/{explanation['id']}/")
            )
        return explanation


    def evaluate(
        self,
        run_id: int,
        *,
        checkpoint: str | None = None,
        wait: float = 600.0,
        progress: Callable[[Job], None] | None = None,
    ) -> EvaluationAnswer:
        """Evaluate the run's final model (or a kept `checkpoint`) on its test split, as a job on
        the server's workers; the stored evaluation once the job is done."""
        body = {"checkpoint": checkpoint} if checkpoint else {}
        job = cast(Job, self._json("POST", f"/api/runs/{run_id}/evaluation/", json=body,
                                   headers={"Prefer": "respond-async"}))
        job = self.job_wait(job["id"], timeout=wait, progress=progress)
        return cast(EvaluationAnswer, job["result"])

    def job_wait(
        self,
        job_id: int,
        *,
        timeout: float = 600.0,
        poll: float = 0.5,
        progress: Callable[[Job], None] | None = None,
    ) -> Job:
        """Wait until a job (GET /api/jobs/<id>/) is done: the job, or JobFailed with its error."""
        deadline = time.monotonic() + timeout
        while True:
            job = cast(Job, self._json("GET", f"/api/jobs/{job_id}/"))
            if progress:
                progress(job)
            if job["state"] == "done":
                return job
            if job["state"] in ("failed", "cancelled"):
                raise JobFailed(cast(dict[str, Any], job))
            if time.monotonic() > deadline:
                raise NetloomError(f"job {job_id} ({job['kind']}) is still {job['state']} after {timeout:.0f} s")
            time.sleep(poll)


def _token_options(
    *, scope: str | None, team: int | str | None, expires_at: datetime | str | None
) -> dict[str, Any]:
    """The optional fields of a token request (only those given: the service's defaults otherwise)."""
    options: dict[str, Any] = {}
    if scope is not None:
        options["scope"] = scope
    if team is not None:
        options["team"] = team
    if expires_at is not None:
        if isinstance(expires_at, datetime) and expires_at.tzinfo is None:
            raise NetloomError("expires_at needs a time zone (datetime.now(timezone.utc) + ...)")
        options["expires_at"] = expires_at.isoformat() if isinstance(expires_at, datetime) else expires_at
    return options


def _api_error(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    return ApiError.from_response(response.status_code, body, response.text)


def _attachment_name(response: httpx.Response, fallback: str) -> str:
    header = response.headers.get("content-disposition", "")
    match = re.search(r"filename\*=UTF-8''([^;]+)", header) or re.search(
        r'filename="?([^";]+)"?', header
    )
    name = match.group(1) if match else fallback
    from urllib.parse import unquote

    name = Path(unquote(name)).name  # never a path the server chose
    return name or quote(fallback)
