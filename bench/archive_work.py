"""What checking an image archive costs the dataset worker: `.venv/bin/python bench/archive_work.py`.

The campaign's archives, generated with Pillow: 99,000 tiny PNGs (accepted: its peak memory and
time), 300 PNGs of 4096 x 4096 (over the archive's pixels: refused from the headers) and 59 of
them (within every limit: the slowest archive the defaults accept, about a Gpixel). Each check
runs `engine.data.inspect_upload` (the worker's code path) in a fresh process; peak memory is
that process's VmHWM above its resident memory once imports are done. `--load` also times a
run's `load_dataset` of the tiny archive (decoded whole, as the check did before it streamed).
The figures go in docs/reliability.md "Archives bounded by work".
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHECK = """
import re, sys, time
from engine.data import DataError, inspect_upload, load_dataset

def status(key):
    return int(re.search(key + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1))

open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM) starts again from here
before = status("VmRSS")
start = time.perf_counter()
try:
    if sys.argv[2] == "check":
        outcome = f"ready, {inspect_upload(sys.argv[1], 'images', {})['rows']['total']} images"
    else:
        outcome = f"loaded, {load_dataset({'source': {'kind': 'images', 'path': sys.argv[1]}}).info.rows['total']} images"
except DataError as e:
    outcome = f"refused: {e}"
took = time.perf_counter() - start
print(f"{took:.1f} s, peak +{(status('VmHWM') - before) / 1024:.0f} MiB; {outcome}")
"""


def _archive(path: Path, picture: bytes, count: int) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(count):
            zf.writestr(f"{'ab'[i % 2]}/{i:06d}.png", picture)
    return path


def _png(width: int, height: int, mode: str = "L") -> bytes:
    import numpy as np
    from PIL import Image

    buf = io.BytesIO()
    if mode == "RGB":
        pixels = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(buf, format="PNG")
    else:
        Image.new(mode, (width, height), 128).save(buf, format="PNG")
    return buf.getvalue()


def main() -> None:
    """Print, per archive, its size, the check's time and peak memory, and its outcome."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", type=int, default=99_000, help="tiny PNGs in the first archive")
    parser.add_argument("--load", action="store_true", help="also load the tiny archive whole")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        big = _png(4096, 4096)
        cases = [
            (_archive(folder / "tiny.zip", _png(8, 8, "RGB"), args.tiny), "check"),
            (_archive(folder / "large-300.zip", big, 300), "check"),
            (_archive(folder / "large-59.zip", big, 59), "check"),
        ]
        if args.load:
            cases.append((cases[0][0], "load"))
        for path, how in cases:
            out = subprocess.run(
                [sys.executable, "-c", CHECK, str(path), how], cwd=ROOT, capture_output=True,
                text=True, check=True,
            ).stdout.strip()
            print(f"{path.name} ({path.stat().st_size / 1e6:.1f} MB) {how}: {out}", flush=True)


if __name__ == "__main__":
    main()
