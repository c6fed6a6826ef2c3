"""Image archives are bounded by the work they hold, not by their bytes.

Entries, pixels per image and pixels of all images together are refused from the zip's directory
and the images' headers. The refused archives here hold PNGs cut short after their header: any
attempt to decode one would fail with "not a readable image", so a refusal that names a limit
proves nothing was decoded. An archive within the limits is checked a chunk at a time; its peak
memory is measured in a fresh process (the worker's code path, `inspect_upload`).
"""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.data import DataError, DataLimits, inspect_upload

MiB = 1 << 20


def header_only_png(width: int, height: int) -> bytes:
    """A PNG whose header says width x height, cut short just after its first IDAT chunk starts."""
    buf = io.BytesIO()
    Image.new("1", (width, height)).save(buf, format="PNG")
    data = buf.getvalue()
    return data[: data.index(b"IDAT") + 4 + 16]


def tiny_pngs(count: int, seed: int = 0) -> list[bytes]:
    """`count` different 8x8 RGB PNGs."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(buf, format="PNG")
        out.append(buf.getvalue())
    return out


def write_archive(path: Path, images: list[bytes], count: int) -> Path:
    """A two-class archive of `count` entries, cycling through `images`."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for i in range(count):
            zf.writestr(f"{'ab'[i % 2]}/{i:06d}.png", images[i % len(images)])
    return path


def _refusal(path: Path, limits: DataLimits | None = None) -> DataError:
    with pytest.raises(DataError) as caught:
        inspect_upload(path, "images", {}, limits)
    return caught.value


def test_an_archive_over_the_entry_limit_is_refused_naming_the_limit(tmp_path: Path) -> None:
    path = write_archive(tmp_path / "many.zip", [header_only_png(8, 8)], 1_001)
    err = _refusal(path, DataLimits(max_entries=1_000))
    assert str(err) == "the archive has 1001 entries; the limit is 1000 entries per archive"


def test_an_image_over_the_per_image_limit_is_refused_from_its_header(tmp_path: Path) -> None:
    small = header_only_png(8, 8)
    with zipfile.ZipFile(tmp_path / "big.zip", "w") as zf:
        zf.writestr("a/0.png", small)
        zf.writestr("b/0.png", small)
        zf.writestr("b/1.png", header_only_png(5000, 4000))  # 20 Mpixel > 4096 x 4096
    err = _refusal(tmp_path / "big.zip")
    assert err.entry == "b/1.png"
    assert "image is 5000x4000 pixels; the limit per image is 16777216 pixels" in str(err)


def test_an_archive_over_the_total_pixel_limit_is_refused_before_decoding(tmp_path: Path) -> None:
    # 60 images of 4096 x 4096, each at the per-image limit: 1.007 Gpixel, over the 1 Gpixel.
    path = write_archive(tmp_path / "large.zip", [header_only_png(4096, 4096)], 60)
    err = _refusal(path)
    assert "hold more than 1000000000 pixels together (the limit per archive)" in str(err)
    assert err.entry == "b/000059.png", "the entry at which the sum passed the limit"


def test_an_unreadable_header_is_named_before_any_image_is_decoded(tmp_path: Path) -> None:
    images = tiny_pngs(2)
    with zipfile.ZipFile(tmp_path / "bad.zip", "w") as zf:
        zf.writestr("a/0.png", images[0])
        zf.writestr("b/0.png", images[1])
        zf.writestr("b/1.png", b"not a picture at all")
    err = _refusal(tmp_path / "bad.zip")
    assert err.entry == "b/1.png" and "not a readable image" in str(err)


def test_the_streamed_check_matches_the_in_memory_load(tmp_path: Path) -> None:
    """Statistics summed chunk by chunk are those of the whole archive decoded at once."""
    from engine.data import load_dataset

    path = write_archive(tmp_path / "few.zip", tiny_pngs(16), 300)
    summary = inspect_upload(path, "images", {})
    whole = load_dataset({"source": {"kind": "images", "path": str(path)}}).info
    assert summary["rows"]["total"] == 300 and summary["class_counts"] == {"a": 150, "b": 150}
    assert np.allclose(summary["normalization"]["mean"], whole.mean, atol=1e-6)
    assert np.allclose(summary["normalization"]["std"], whole.std, atol=1e-6)


PEAK_SCRIPT = """
import re, sys
from engine.data import DataError, inspect_upload, load_dataset

def status(key):
    return int(re.search(key + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1))

open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM) starts again from here
before = status("VmRSS")
try:
    if sys.argv[2] == "check":
        print("READY", inspect_upload(sys.argv[1], "images", {})["rows"]["total"])
    else:
        print("LOADED", load_dataset({"source": {"kind": "images", "path": sys.argv[1]}}).info.rows["total"])
except DataError as e:
    print("ERROR", e)
print("GROWTH", status("VmHWM") - before)
"""


def peak_growth(path: Path, how: str = "check") -> tuple[str, float]:
    """The worker's code path in a fresh process: the upload's check (`inspect_upload`), or
    `how="load"` a run's `load_dataset`; its outcome and its peak resident memory above its
    start (imports done, /proc/self/status VmHWM), in MiB."""
    out = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, str(path), how], capture_output=True, text=True,
        check=True,
    ).stdout.strip().splitlines()
    growth = int(out[-1].split()[1]) / 1024
    print(f"\n{path.name} ({how}): {out[0]} (peak +{growth:.1f} MiB)")
    return out[0], growth


def test_twenty_thousand_tiny_pngs_are_checked_in_bounded_memory(tmp_path: Path) -> None:
    """Decoded whole, these would take 20,000 x 3 x 32 x 32 float32 = 234 MiB, and about three
    times that with the copies normalising and splitting make; streamed, one chunk at a time."""
    path = write_archive(tmp_path / "tiny.zip", tiny_pngs(64), 20_000)
    outcome, growth = peak_growth(path)
    assert outcome == "READY 20000"
    assert growth < 512, f"peak +{growth:.0f} MiB"
