"""The kserve Model of one registry version: OIP v2 request -> rows -> batched network -> answer.

The same class runs under the local multi-model server (serving.server) and, unchanged, as a
KServe InferenceService predictor (serving.standalone).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from kserve import InferOutput, InferRequest, InferResponse, Model
from kserve.errors import InvalidInput

from .batching import Batcher, BatchSettings, Overloaded
from .stats import VersionStats
from .version import BadInput, Version, load_version


def batch_settings_from_env() -> BatchSettings:
    """SERVING_MAX_BATCH_SIZE, SERVING_MAX_WAIT_MS, SERVING_MAX_QUEUE (defaults in BatchSettings)."""
    d = BatchSettings()
    return BatchSettings(
        max_batch_size=int(os.environ.get("SERVING_MAX_BATCH_SIZE", d.max_batch_size)),
        max_wait_s=float(os.environ.get("SERVING_MAX_WAIT_MS", d.max_wait_s * 1000)) / 1000,
        max_queue=int(os.environ.get("SERVING_MAX_QUEUE", d.max_queue)),
    )


def configure_torch() -> None:
    """SERVING_TORCH_THREADS (1) intra-op threads: a batch of small rows runs in ~0.3 ms on one
    thread; torch's default, a thread per core, took 24 ms for the same batch on two shared cores
    (the threads spin against the server's own event loop)."""
    import torch

    torch.set_num_threads(int(os.environ.get("SERVING_TORCH_THREADS", "1")))


class VersionModel(Model):
    """Version `version` of a registry model, answering as `served_name`.

    `name` is the key in kserve's model registry (the served name for a standalone predictor;
    `<served>@<n>` in the multi-model server, which routes versions itself).
    """

    def __init__(self, name: str, folder: str | Path, *, served_name: str | None = None,
                 version: str = "1", settings: BatchSettings | None = None) -> None:
        super().__init__(name)
        self.folder = Path(folder)
        self.served_name = served_name or name
        self.version_label = str(version)
        self.settings = settings or batch_settings_from_env()
        self.stats = VersionStats(self.served_name, self.version_label)
        self.loaded: Version | None = None
        self.batcher: Batcher | None = None

    def load(self) -> bool:
        self.loaded = load_version(self.folder)
        loaded = self.loaded
        self.batcher = Batcher(lambda rows: loaded.run(np.stack(rows)), self.settings, self.stats.batch)
        self.stats.queue_depth = lambda: self.batcher.queue_depth if self.batcher else 0
        # One warm pass, so the first request does not pay for lazy initialisation.
        self.ready = True
        return True

    def get_input_types(self) -> list[dict[str, Any]]:
        return self.loaded.input_types() if self.loaded else []

    def get_output_types(self) -> list[dict[str, Any]]:
        return self.loaded.output_types() if self.loaded else []

    def metadata(self) -> dict[str, Any]:
        """OIP v2 model metadata under the served name and version, answered by serving.server's
        front: kserve 0.21's metadata route has no hook on the Model for it (its DataPlane
        builds `{"name": <registry key>, "platform": "", inputs, outputs}` itself, without
        `versions`, and refuses `/versions/<n>`)."""
        return {"name": self.served_name, "versions": [self.version_label], "platform": "pytorch",
                "inputs": self.get_input_types(), "outputs": self.get_output_types()}

    async def predict(self, payload: InferRequest | dict[str, Any], headers: dict[str, str] | None = None,
                      ) -> InferResponse:
        """kserve's hook: its infer route decodes and validates the request, calls this, encodes the
        answer. Bad input raises kserve's InvalidInput, which kserve answers 400 naming the column."""
        request_id, answers = await self._timed(payload)
        return InferResponse(response_id=request_id, model_name=self.served_name,
                             model_version=self.version_label,
                             infer_outputs=[InferOutput(o["name"], o["shape"], o["datatype"], o["data"])
                                            for o in self._outputs(answers)])

    async def _timed(self, payload: InferRequest | dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        start = time.perf_counter()
        ok = False
        try:
            answered = await self._answers(payload)
            ok = True
            return answered
        finally:
            self.stats.request(time.perf_counter() - start, ok)

    async def _answers(self, payload: InferRequest | dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        assert self.loaded is not None and self.batcher is not None
        if isinstance(payload, InferRequest):
            request_id = payload.id
            inputs = [{"name": i.name, "datatype": i.datatype, "shape": i.shape, "data": i.data}
                      for i in payload.inputs]
        else:
            request_id = payload.get("id")
            inputs = payload.get("inputs")
            if not isinstance(inputs, list) or not inputs:
                raise InvalidInput("inputs: expected a non-empty list of named inputs")
        try:
            x = self.loaded.prepare(self.loaded.samples(inputs))
        except BadInput as exc:
            raise InvalidInput(str(exc)) from None  # "<column>: <what is wrong>"
        answers = await self.batcher.submit(list(x))
        return str(request_id or ""), answers

    def _outputs(self, answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
        n = len(answers)
        if self.loaded is not None and self.loaded.classification:
            probs = [list(a["probabilities"].values()) for a in answers]
            k = len(probs[0]) if probs else 0
            return [{"name": "label", "shape": [n], "datatype": "BYTES", "data": [a["prediction"] for a in answers]},
                    {"name": "probabilities", "shape": [n, k], "datatype": "FP32",
                     "data": [p for row in probs for p in row]}]
        values = [a["prediction"] for a in answers]
        width = len(values[0]) if values else 0
        return [{"name": "value", "shape": [n, width], "datatype": "FP32", "data": [v for row in values for v in row]}]

    def stop(self) -> None:
        if self.batcher is not None:
            self.batcher.close()


__all__ = ["VersionModel", "Overloaded", "batch_settings_from_env"]
