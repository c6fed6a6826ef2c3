"""The model registry: models, versions, aliases and approvals, formats, KServe, downloads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import httpx

from netloom.api_types import Job
from netloom.errors import ConnectionFailed
from netloom.resources.transport import Transport, _api_error, _attachment_name


class ModelsMixin(Transport):
    """Registered models of the user's teams."""

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
