"""Weights trained elsewhere as a run: a safetensors file for a graph revision, kept as checkpoint `imported`.

`python -m engine import model.py:Net --weights trained.safetensors` writes a spec and the weights
named as build() names them; the browser saves the spec as a graph and uploads the weights here.
They are checked against the revision's built model (every state-dict key, its shape and kind of
dtype), never unpickled (safetensors only, its header read first), and recorded as a succeeded run
with no dataset and nothing trained: origin {"kind": "import", "file": name}, one checkpoint
`imported` in the run folder's `checkpoints/`. A new run starts from it like from any checkpoint
(`init` {run, checkpoint: "imported", mode: "finetune"}); resuming it is refused (no optimizer).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from webapp.errors import DomainError, NotFound

from .. import conf
from ..models import Checkpoint, Run, RunStatus
from ..stream.events import event_emit

IMPORTED_CHECKPOINT = "imported"
ORIGIN_KIND = "import"
FILE_NAME_MAX = 200
# Shown when the upload is a torch.save file: a zip archive or a bare pickle stream.
_PICKLE_HINT = (
    "This looks like a torch.save file (pickle), which is never loaded here; save the state dict with "
    "safetensors.torch.save_file(model.state_dict(), 'weights.safetensors') or use "
    "`python -m engine import ... --weights-out`."
)


def max_weights_bytes() -> int:
    """The largest weights file accepted (NETLOOM_MAX_WEIGHTS_BYTES)."""
    return int(settings.NETLOOM_MAX_WEIGHTS_BYTES)


def _file_error(message: str, code: str = "invalid_weights", **extra: Any) -> DomainError:
    return DomainError(code, message, field="file", extra=extra or None)


# safetensors' own bound on a header (its library refuses a larger one).
_HEADER_MAX = 100_000_000


def _safetensors_problem(path: Path) -> str | None:
    """Why the file is not in the safetensors format, or None when its layout holds.

    The format is parsed, never guessed from a first byte: an 8-byte little-endian header length
    that fits in the file, a JSON object of that many bytes, and every tensor's data_offsets
    inside the data that follows. (A header of 128 mod 256 bytes starts with 0x80, as a pickle
    does; such a file is valid.)
    """
    size = path.stat().st_size
    if size < 8:
        return f"it has {size} bytes; a safetensors file starts with an 8-byte header length"
    with path.open("rb") as handle:
        length = int.from_bytes(handle.read(8), "little")
        if length > size - 8:
            return (f"its first 8 bytes give a header of {length} bytes, but only {size - 8} bytes "
                    "follow them")
        if length > _HEADER_MAX:
            return f"its header of {length} bytes is over safetensors' limit of {_HEADER_MAX} bytes"
        raw = handle.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return f"its {length}-byte header is not JSON"
    if not isinstance(header, dict):
        return "its header is JSON but not an object of tensors"
    data = size - 8 - length
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not (
            isinstance(offsets, list) and len(offsets) == 2
            and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            and 0 <= offsets[0] <= offsets[1] <= data
        ):
            return (f"tensor {name!r} has data_offsets {offsets}, outside the {data} bytes of data "
                    "after the header")
    return None


def _looks_like_torch_save(path: Path) -> bool:
    """A torch.save file: a zip archive, or a bare pickle stream (PROTO opcode, protocol 2..5).
    Asked only of a file that is not safetensors, to name what it is."""
    with path.open("rb") as handle:
        head = handle.read(4)
    return head[:4] == b"PK\x03\x04" or (head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"))


def _header(path: Path) -> dict[str, tuple[list[int], str]]:
    """Name -> (shape, dtype) of every tensor in a safetensors file, from its header alone."""
    from safetensors import safe_open

    problem = _safetensors_problem(path)
    if problem is not None:
        if _looks_like_torch_save(path):
            raise _file_error(_PICKLE_HINT, code="not_safetensors")
        raise _file_error(f"Not a safetensors file: {problem}.", code="not_safetensors")
    try:
        with safe_open(str(path), framework="pt") as weights:
            found = {}
            for name in weights.keys():  # noqa: SIM118 - a safe_open handle, not a dict
                piece = weights.get_slice(name)
                found[name] = (list(piece.get_shape()), str(piece.get_dtype()))
            return found
    except Exception as exc:  # safetensors raises its own error types for a bad header
        raise _file_error(f"Not a safetensors file: {exc}", code="not_safetensors") from None


def _is_float(dtype: str) -> bool:
    """A safetensors dtype name (F32, BF16) or a torch one (torch.float32) of a floating kind."""
    name = dtype.lower().removeprefix("torch.")
    return name.startswith(("f", "bf", "float", "half", "double"))


def _graph_tensors(spec: Any) -> dict[str, tuple[list[int], str]]:
    """Name -> (shape, dtype) of the state dict `build(spec)` has, built on `meta` (nothing allocated)."""
    import torch

    from engine.build import build

    try:
        with torch.device("meta"):
            model = build(spec, seed=0)
    except (RuntimeError, NotImplementedError):  # an initialiser that cannot run on meta
        model = build(spec, seed=0)
    return {
        name: (list(tensor.shape), str(tensor.dtype)) for name, tensor in model.state_dict().items()
    }


def weights_check(*, spec: Any, path: Path) -> list[str]:
    """Check the file's tensors against the state dict `build(spec)` has; its keys, in the graph's order.

    Raises DomainError on `file` naming the first missing, unexpected or mis-shaped key (all of
    them listed under `missing`, `unexpected`, `mismatched`; a float tensor where the graph has
    an integer one counts as mis-shaped), or on `graph` when the revision does not build.
    """
    found = _header(path)
    try:
        expected = _graph_tensors(spec)
    except ValueError as exc:  # InvalidSpec: a draft with errors
        raise DomainError(
            "invalid_graph",
            f"This revision does not build, so it cannot take weights: {exc}",
            field="graph",
        ) from None
    missing = [name for name in expected if name not in found]
    unexpected = [name for name in found if name not in expected]
    mismatched = [
        {"key": name, "file_shape": found[name][0], "graph_shape": shape}
        for name, (shape, _) in expected.items()
        if name in found and found[name][0] != shape
    ]
    wrong_kind = [
        {"key": name, "file_dtype": found[name][1], "graph_dtype": dtype}
        for name, (_, dtype) in expected.items()
        if name in found and _is_float(found[name][1]) != _is_float(dtype)
    ]
    problems = (
        [f"{name}: the graph has it, the file does not" for name in missing]
        + [
            f"{name}: in the file, but the graph has no such parameter or buffer"
            for name in unexpected
        ]
        + [
            f"{m['key']}: shape {m['file_shape']} in the file, {m['graph_shape']} in the graph"
            for m in mismatched
        ]
        + [
            f"{w['key']}: dtype {w['file_dtype']} in the file, {w['graph_dtype']} in the graph"
            for w in wrong_kind
        ]
    )
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise DomainError(
            "weights_mismatch",
            f"The weights do not fit this revision's model: {problems[0]}{more}.",
            fields={"file": problems[:50]},
            extra={
                "missing": missing,
                "unexpected": unexpected,
                "mismatched": mismatched + wrong_kind,
            },
        )
    return list(expected)


def import_revision_for_user(*, user: AbstractBaseUser, graph_id: int, number: int) -> Any:
    """Revision `number` of graph `graph_id` among the user's teams' graphs; NotFound otherwise
    (another team's graph and a missing one look alike)."""
    from webapp.accounts.selectors import team_ids_for_user
    from webapp.api.serializers import ID_MAX
    from webapp.graphs.models import GraphRevision

    team_ids = team_ids_for_user(user=user)
    # A foreign key's lookup has no range check (an id past the column's range: SQLite raised).
    revision = None if not 1 <= graph_id <= ID_MAX else (
        GraphRevision.objects.select_related("graph")
        .filter(graph_id=graph_id, number=number, graph__team__in=team_ids)
        .first()
    )
    if revision is None:
        raise NotFound(
            "not_found", f"No revision {number} of graph {graph_id} among your teams' graphs."
        )
    return revision


def _file_name(name: str) -> str:
    base = os.path.basename(str(name or "")).strip() or "weights.safetensors"
    return "".join(ch for ch in base if ch.isprintable())[:FILE_NAME_MAX]


def _write_checkpoint(*, folder: Path, upload_path: Path, spec: Any, file_name: str) -> None:
    """The run's `checkpoints/imported/`: the uploaded file as model.safetensors, and state.json."""
    from engine.atomic import atomic_dir

    with atomic_dir(folder) as staging:
        # The upload lies on the same filesystem (MEDIA_ROOT/uploads): a rename, not a copy.
        os.replace(upload_path, staging / "model.safetensors")
        state = {
            "step": 0,
            "epoch": 0,
            "batch_in_epoch": 0,
            "spec": spec,
            "imported": {"file": file_name},
            "trainer": {},
        }
        (staging / "state.json").write_text(json.dumps(state, sort_keys=True), encoding="utf-8")


def run_import_create(
    *,
    user: AbstractBaseUser,
    graph_revision: Any,
    upload_path: Path,
    file_name: str,
    name: str = "",
) -> Run:
    """Record an uploaded safetensors file as a succeeded run of `graph_revision` with checkpoint `imported`.

    Refused (400 on `file`) when the file is over NETLOOM_MAX_WEIGHTS_BYTES, not safetensors (a
    torch.save pickle is named as such), or when a key is missing, extra or mis-shaped for the
    revision's model (400 on `graph` when the revision does not build).
    """
    from ..services import run_name_clean

    file_name = _file_name(file_name)
    size = upload_path.stat().st_size
    if size > max_weights_bytes():
        raise _file_error(
            f"The weights file is {size} bytes; the limit is {max_weights_bytes()} bytes.",
            code="too_large",
        )
    weights_check(spec=graph_revision.spec, path=upload_path)
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.create(
            team_id=graph_revision.graph.team_id,
            graph_revision=graph_revision,
            dataset=None,
            name=run_name_clean(name) or f"imported {file_name}"[:200],
            origin={"kind": ORIGIN_KIND, "file": file_name},
            config={},
            recipe={},
            status=RunStatus.SUCCEEDED,
            created_by=user,
            started_at=now,
            finished_at=now,
        )
        folder = conf.run_dir(run.pk) / "checkpoints" / IMPORTED_CHECKPOINT
        _write_checkpoint(
            folder=folder, upload_path=upload_path, spec=graph_revision.spec, file_name=file_name
        )
        Checkpoint.objects.create(
            run=run, name=IMPORTED_CHECKPOINT, step=0, epoch=0.0, path=str(folder)
        )
        event_emit(
            run_id=run.pk,
            event={
                "type": "status",
                "status": RunStatus.SUCCEEDED,
                "step": 0,
                "detail": f"weights imported from {file_name}; start a run from checkpoint '{IMPORTED_CHECKPOINT}'",
            },
        )
    run.refresh_from_db()
    return run


def run_is_import(run: Run) -> bool:
    """True for a run that only holds imported weights (no dataset, nothing trained)."""
    return isinstance(run.origin, dict) and run.origin.get("kind") == ORIGIN_KIND


def graph_import_create(
    *,
    user: AbstractBaseUser,
    team: Any,
    name: str,
    spec: Any,
    upload_path: Path | None = None,
    file_name: str = "",
) -> tuple[Any, Run | None]:
    """A new graph whose revision 1 is `spec`, with the uploaded weights as its run, all or nothing.

    Without a file this is graph_create. With one, the weights are checked as run_import_create
    does, and a refusal (400 on `file`, or on `graph` when the spec does not build) leaves no
    graph behind: importing again after fixing the file does not make a second one.
    """
    from webapp.graphs.services import graph_create

    with transaction.atomic():
        graph = graph_create(team=team, name=name, spec=spec, created_by=user)
        if upload_path is None:
            return graph, None
        revision = graph.revisions.get(number=1)
        run = run_import_create(
            user=user, graph_revision=revision, upload_path=upload_path, file_name=file_name
        )
    return graph, run
