"""A run's downloads, explanations and evaluations."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import httpx

from netloom.api_types import EvaluationAnswer, Explanation, Job
from netloom.errors import ConnectionFailed, NetloomError
from netloom.resources.transport import Transport, _api_error, _attachment_name

EXPORT_FORMATS = ("safetensors", "python", "onnx", "config", "zip")
# A download's name when the service sends none (it names each file per run).
EXPORT_SUFFIXES = {"python": ".py", "config": "-config.json"}


class ExportsMixin(Transport):
    """What a trained run gives: its files, explanations, evaluations."""

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
