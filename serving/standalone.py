"""Serve one version folder: what a KServe InferenceService predictor container runs.

    python -m serving.standalone --model_dir /mnt/models --model_name 7-iris-classifier [--http_port 8080]

`--model_dir` holds the version's files (model.safetensors, model.py, the preprocessing);
`--model_version` (default: the folder's name when it is a number, else 1) is what answers say.
The routes are kserve's OIP v2 (`/v2/models/<model_name>/infer`, metadata, health, /metrics);
there is no token check here: on a cluster the mesh in front decides who may call.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    import kserve
    from kserve.model_server import app
    from kserve.model_server import parser as kserve_parser

    from .model import VersionModel, configure_torch
    from .server import install_handlers, quiet_request_logs, settle_heap

    parser = argparse.ArgumentParser(parents=[kserve_parser], description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, help="the version folder")
    parser.add_argument("--model_version", default=None)
    args, _ = parser.parse_known_args(argv)
    folder = Path(args.model_dir)
    version = args.model_version or (folder.resolve().name if folder.resolve().name.isdigit() else "1")
    name = args.model_name if args.model_name and args.model_name != "model" else folder.resolve().name
    configure_torch()
    model = VersionModel(name, folder, version=version)
    model.load()
    settle_heap()
    install_handlers(app)
    server = kserve.ModelServer(http_port=args.http_port, workers=1, enable_grpc=args.enable_grpc)
    quiet_request_logs()
    server.start([model])


if __name__ == "__main__":
    main()
