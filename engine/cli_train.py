"""Training subcommands: train, explain, export (registered by engine.cli)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2

_SUFFIX_KINDS = {".csv": "csv", ".zip": "images", ".safetensors": "tensors", ".npz": "tensors"}


class _UserError(Exception):
    """A bad argument or file: printed as one line, exit status 2."""


def _err(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def _read_json(path: str | Path, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise _UserError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise _UserError(f"{what} {path} is not JSON: line {exc.lineno}: {exc.msg}") from None


def recipe_from_arg(data: str, target: str | None = None) -> dict[str, Any]:
    """`--data`: a built-in name, a recipe .json, or a .csv/.zip/.safetensors/.npz file."""
    from engine.data import BUILTIN_DATASETS

    if data in BUILTIN_DATASETS:
        return {"source": {"kind": "builtin", "name": data}}
    path = Path(data)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return _read_json(path, "recipe")
    kind = _SUFFIX_KINDS.get(suffix)
    if kind is None:
        raise _UserError(
            f"--data {data!r} is neither a built-in dataset ({', '.join(BUILTIN_DATASETS)}) "
            "nor a .json recipe, .csv, .zip, .safetensors or .npz file"
        )
    if not path.is_file():
        raise _UserError(f"--data file {data} does not exist")
    source: dict[str, Any] = {"kind": kind, "path": str(path.resolve())}
    if kind == "csv":
        if not target:
            raise _UserError("a CSV dataset needs --target COLUMN")
        source["target"] = target
    return {"source": source}


def _load_splits(recipe: dict[str, Any]) -> Any:
    from engine.data import DataError, load_dataset

    try:
        return load_dataset(recipe)
    except DataError as exc:
        raise _UserError(f"dataset: {exc}") from None


def _read_spec(path: str) -> Any:
    from engine.spec import SpecError, parse_spec

    try:
        return parse_spec(Path(path).read_bytes())
    except OSError as exc:
        raise _UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    except SpecError as exc:
        raise _UserError(f"{path}: {exc}") from None


def _config(args: argparse.Namespace, resume: Path | None) -> Any:
    from engine.train import ConfigError, parse_config
    from engine.train.checkpoint import latest_checkpoint

    raw: dict[str, Any] = {}
    if args.config:
        raw = _read_json(args.config, "config")
    elif resume is not None:
        ck = latest_checkpoint(resume / "checkpoints") or latest_checkpoint(resume)
        if ck is not None:  # keep the interrupted run's config
            raw = json.loads((ck / "state.json").read_text())["config"]
    if args.epochs is not None:
        raw = {**raw, "epochs": args.epochs}
    if getattr(args, "freeze", None):
        raw = {**raw, "freeze": [node for node in args.freeze.split(",") if node.strip()]}
    try:
        return parse_config(raw)
    except ConfigError as exc:
        raise _UserError(str(exc)) from None


class _CtrlC:
    """The first Ctrl-C asks the trainer to stop (with a checkpoint); the second one aborts."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self) -> bool:
        return self.requested

    def __enter__(self) -> _CtrlC:
        def handler(signum: int, frame: Any) -> None:
            if self.requested:
                raise KeyboardInterrupt
            self.requested = True
            print("\nstopping after this step (Ctrl-C again to abort)", file=sys.stderr)

        try:
            self._previous = signal.signal(signal.SIGINT, handler)
        except ValueError:  # not the main thread: no handler, no graceful stop
            self._previous = None
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _summary(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items() if not isinstance(v, list)}


def cmd_train(args: argparse.Namespace) -> int:
    """`train SPEC.json --data ...`: train, checkpoint, then write the export directory."""
    from engine.export import export_dir
    from engine.train import TqdmProgress, TrainingError, train

    spec = _read_spec(args.spec)
    resume = Path(args.resume) if args.resume else None
    init_from = Path(args.init_from) if args.init_from else None
    if resume is not None and init_from is not None:
        raise _UserError("--init-from starts a new run from a checkpoint, --resume continues one: give one")
    if init_from is not None and not (init_from / "model.safetensors").is_file():
        raise _UserError(f"--init-from {init_from} is not a checkpoint: it has no model.safetensors")
    config = _config(args, resume)
    recipe = recipe_from_arg(args.data, args.target)
    splits = _load_splits(recipe)
    if args.out:
        out = Path(args.out)
    elif resume is not None and (resume / "checkpoints").is_dir():
        out = resume
    else:
        out = Path("runs") / Path(args.spec).stem
    out.mkdir(parents=True, exist_ok=True)
    progress = [] if args.quiet else [TqdmProgress(file=sys.stderr)]
    try:
        with _CtrlC() as stop:
            result = train(spec, splits, config, out_dir=out, callbacks=progress,
                           should_stop=stop, resume_from=resume, init_from=init_from)
    except TrainingError as exc:
        _err(str(exc))
        return EXIT_FAILED
    if result.status == "cancelled":
        print(f"cancelled at step {result.steps}; resume with --resume {out}", file=sys.stderr)
        return EXIT_FAILED
    assert result.model is not None
    export_dir(result.model, spec, config, result.metrics, out, data_info=splits.info,
               onnx=not args.no_onnx)
    printed: dict[str, Any] = {"status": result.status, "out": str(out), "metrics": _summary(result.metrics)}
    if result.init_plan is not None:
        printed["init_plan"] = result.init_plan.to_json()
    print(json.dumps(printed, indent=2))
    return EXIT_OK


def _explain_recipe(args: argparse.Namespace, export: Path) -> dict[str, Any]:
    from engine.data import parse_recipe

    stored = None
    data_file = export / "data.json"
    if data_file.is_file():
        stored = json.loads(data_file.read_text()).get("recipe") or None
    if args.data is None:
        if stored is None:
            raise _UserError(f"{export} does not say which data it was trained on; pass --data")
        return stored
    given = recipe_from_arg(args.data, args.target_column)
    if stored is not None:
        # Same source as in training: reuse the stored split and normalisation so that
        # --index picks the same row the run saw.
        try:
            same = parse_recipe(stored).source == parse_recipe(given).source
        except Exception:
            same = False
        if same:
            return stored
    return given


def cmd_explain(args: argparse.Namespace) -> int:
    """`explain DIR --index I`: attributions for one sample, as JSON with a PNG beside it."""
    from engine.explain import ExplainError, explain
    from engine.export import ExportError, load_exported

    export = Path(args.dir)
    try:
        spec, model = load_exported(export)
    except ExportError as exc:
        raise _UserError(str(exc)) from None
    splits = _load_splits(_explain_recipe(args, export))
    part = getattr(splits, args.split)
    n = len(part)
    if not 0 <= args.index < n:
        raise _UserError(f"--index {args.index} is out of range: the {args.split} split has {n} rows")
    x, y = part.x[args.index], part.y[args.index]
    info = splits.info
    image_like = len(info.feature_shape) >= 2
    try:
        exp = explain(
            model, x, method=args.method, target=args.target, layer=args.layer,
            feature_names=None if image_like else info.feature_names,
            n_steps=args.steps, task=info.task,
            display=info.denormalize(x[None])[0] if image_like else None,
        )
    except ExplainError as exc:
        raise _UserError(str(exc)) from None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    png = out.with_suffix(".png")
    png.write_bytes(exp.png)
    doc = exp.to_json(include_png=False)
    label: Any = y.tolist()
    doc.update(
        index=args.index,
        split=args.split,
        label=label,
        classes=info.classes or None,
        png=png.name,
    )
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out} and {png}")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    """`export DIR --format onnx|zip`: add model.onnx to an export, or zip it for download."""
    from engine.export import (
        ExportError,
        export_onnx,
        load_exported,
        read_export_manifest,
        zip_export,
    )

    export = Path(args.dir)
    try:
        manifest = read_export_manifest(export)
    except ExportError as exc:
        raise _UserError(str(exc)) from None
    if args.format == "zip":
        dest = Path(args.out) if args.out else export.parent / f"{export.name}.zip"
        zip_export(export, dest)
        print(f"wrote {dest}")
        return EXIT_OK
    spec, model = load_exported(export)
    note = export_onnx(model, spec, export / "model.onnx")
    manifest["onnx"] = note
    if note["exported"] and "model.onnx" not in manifest["files"]:
        manifest["files"] = sorted([*manifest["files"], "model.onnx"])
    (export / "export.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    if not note["exported"]:
        _err(f"{note['note']}: " + "; ".join(note.get("errors", [])))
        return EXIT_FAILED
    print(f"wrote {export / 'model.onnx'}")
    return EXIT_OK


def _guard(func: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            return int(func(args))
        except _UserError as exc:
            _err(str(exc))
            return EXIT_BAD_INPUT

    run.__doc__ = func.__doc__
    return run


def register(subparsers: Any) -> None:
    """Add `train`, `explain` and `export` to the engine's command line."""
    from engine.explain import METHODS

    p = subparsers.add_parser("train", help="train a graph spec on a dataset and export it",
                              description=cmd_train.__doc__)
    p.add_argument("spec", metavar="SPEC.json")
    p.add_argument("--data", required=True, metavar="NAME|FILE",
                   help="built-in dataset name, recipe .json, or .csv/.zip/.safetensors/.npz file")
    p.add_argument("--target", metavar="COL", help="target column of a CSV dataset")
    p.add_argument("--config", metavar="CONFIG.json", help="training config (TrainConfig JSON)")
    p.add_argument("--epochs", type=int, metavar="N", help="override the config's epochs")
    p.add_argument("--out", metavar="DIR", help="export + checkpoints directory (default runs/<spec>)")
    p.add_argument("--resume", metavar="DIR", help="resume from a run directory or a checkpoint")
    p.add_argument("--init-from", dest="init_from", metavar="CKPT",
                   help="fine-tune: start from a checkpoint's weights where names and shapes match")
    p.add_argument("--freeze", metavar="NODE,NODE", help="node ids whose parameters do not train")
    p.add_argument("--no-onnx", action="store_true", help="skip the ONNX export")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_guard(cmd_train))

    p = subparsers.add_parser("explain", help="explain one prediction of an exported model",
                              description=cmd_explain.__doc__)
    p.add_argument("dir", metavar="DIR", help="export directory written by `train`")
    p.add_argument("--data", metavar="NAME|FILE", help="dataset (default: the one it was trained on)")
    p.add_argument("--target-column", dest="target_column", metavar="COL",
                   help="target column of a CSV dataset")
    p.add_argument("--index", type=int, required=True, metavar="I", help="row of the split")
    p.add_argument("--split", choices=["train", "val", "test"], default="test")
    p.add_argument("--method", choices=[m["name"] for m in METHODS], default="integrated_gradients")
    p.add_argument("--target", type=int, metavar="K", help="output index (default: the prediction)")
    p.add_argument("--layer", metavar="NODE", help="convolution node id for grad_cam")
    p.add_argument("--steps", type=int, default=50, help="integration steps (first try)")
    p.add_argument("--out", required=True, metavar="FILE.json")
    p.set_defaults(func=_guard(cmd_explain))

    p = subparsers.add_parser("export", help="add ONNX to an export directory, or zip it",
                              description=cmd_export.__doc__)
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--format", choices=["onnx", "zip"], required=True)
    p.add_argument("--out", metavar="FILE", help="zip path (default DIR.zip)")
    p.set_defaults(func=_guard(cmd_export))

