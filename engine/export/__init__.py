"""Export: weights + generated source + JSON (+ ONNX), and loading them back."""

from engine.export.exporter import (
    EXPORT_FORMAT_VERSION,
    ExportError,
    export_dir,
    export_onnx,
    load_exported,
    read_export_manifest,
    zip_export,
)

__all__ = [
    "EXPORT_FORMAT_VERSION",
    "ExportError",
    "export_dir",
    "export_onnx",
    "load_exported",
    "read_export_manifest",
    "zip_export",
]
