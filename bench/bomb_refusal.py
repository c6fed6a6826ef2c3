"""How long refusing an archive bomb takes: `.venv/bin/python bench/bomb_refusal.py`.

Writes a 0.4 MiB `.npz` whose `x.npy` inflates to 400 MiB and an image zip with a 300 MiB entry
deflated to 0.3 MiB, then times `engine.data.load_dataset` on each (imports done first). The
figures go in docs/reliability.md; memory is checked by tests/engine/data/test_data_bombs.py.
"""

from __future__ import annotations

import tempfile
import time
import zipfile
from pathlib import Path


def _bombs(folder: Path) -> list[tuple[str, Path]]:
    import numpy as np
    from PIL import Image

    npz = folder / "bomb.npz"
    with zipfile.ZipFile(npz, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, shape, mib in (("x.npy", (100 << 18, 4), 400), ("y.npy", (100 << 18,), 0)):
            with zf.open(name, "w", force_zip64=True) as f:
                np.lib.format.write_array_header_1_0(
                    f, {"descr": "<f4", "fortran_order": False, "shape": shape}
                )
                for _ in range(mib):
                    f.write(bytes(1 << 20))
    Image.new("RGB", (4, 4)).save(folder / "dot.png")
    images = folder / "bomb.zip"
    with zipfile.ZipFile(images, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.write(folder / "dot.png", "cats/a.png")
        zf.write(folder / "dot.png", "dogs/a.png")
        with zf.open("dogs/huge.png", "w", force_zip64=True) as f:
            for _ in range(300):
                f.write(bytes(1 << 20))
    return [("tensors", npz), ("images", images)]


def main() -> None:
    """Print the time each bomb takes to be refused."""
    from engine.data import DataError, load_dataset

    with tempfile.TemporaryDirectory() as tmp:
        for kind, path in _bombs(Path(tmp)):
            start = time.perf_counter()
            try:
                load_dataset({"source": {"kind": kind, "path": str(path)}})
                print(f"{path.name}: NOT refused")
            except DataError as exc:
                took = (time.perf_counter() - start) * 1000
                print(f"{path.name} ({path.stat().st_size / 2**20:.1f} MiB): refused in {took:.1f} ms: {exc}")


if __name__ == "__main__":
    main()
