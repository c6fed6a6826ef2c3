"""Archive bombs: .npz and image zips that would inflate past the limits are refused unread.

Each case loads the file in a fresh process and reads that process's peak resident memory, so
the figure is what refusing the file cost the worker that would have trained on it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest

from engine.data import DataError


def _write_npz_member(zf: zipfile.ZipFile, name: str, shape: tuple[int, ...], fill_mib: int) -> None:
    """Write `name` with a header declaring `shape` (float32) and `fill_mib` MiB of zeros."""
    import io

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": shape}
    )
    with zf.open(name, "w", force_zip64=True) as f:
        f.write(header.getvalue())
        chunk = bytes(1 << 20)
        for _ in range(fill_mib):
            f.write(chunk)


def _peak_rss_loading(path: Path, source: str = "tensors") -> tuple[str, int]:
    """Load `path` in a fresh process; return its DataError text and its peak RSS growth (KiB)."""
    import subprocess
    import sys

    code = (
        "import resource, sys\n"
        "from engine.data import DataError, load_dataset\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n"
        "    load_dataset({'source': {'kind': sys.argv[2], 'path': sys.argv[1]}})\n"
        "    print('LOADED')\n"
        "except DataError as e:\n"
        "    print('ERROR', e)\n"
        "print('GROWTH', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), source], capture_output=True, text=True, check=True
    ).stdout
    lines = out.strip().splitlines()
    print(f"\n{path.name}: {lines[0][:90]} (+{int(lines[-1].split()[1]) / 1024:.1f} MiB)")
    return lines[0], int(lines[-1].split()[1])


def test_npz_bomb_is_refused_naming_the_limit_before_it_inflates(tmp_path: Path) -> None:
    # 2 GiB of zeros declared (past the 512 MiB an upload may be) in a file of a few MiB.
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        _write_npz_member(zf, "x.npy", (1 << 29,), 2048)
        _write_npz_member(zf, "y.npy", (1 << 29,), 0)
    assert path.stat().st_size < 16 << 20
    message, growth_kib = _peak_rss_loading(path)
    assert message.startswith("ERROR") and "x.npy" in message
    assert f"the limit per entry is {512 << 20}" in message
    assert growth_kib < 100 * 1024  # the worker never holds the inflated array


def test_npz_of_class_sorted_labels_is_accepted_however_well_it_compresses(tmp_path: Path) -> None:
    # 20,000 int64 labels sorted by class compress some 450:1: honest data, not a bomb.
    from engine.data.limits import DataLimits
    from engine.data.recipe import TensorsSource
    from engine.data.tensor_file import tensors_raw

    y = np.repeat(np.arange(10, dtype=np.int64), 2_000)
    x = np.random.default_rng(0).standard_normal((20_000, 4)).astype(np.float32)
    np.savez_compressed(tmp_path / "labels.npz", x=x, y=y)
    with zipfile.ZipFile(tmp_path / "labels.npz") as zf:
        info = zf.getinfo("y.npy")
    assert info.file_size / info.compress_size > 200  # what the ratio rule refused
    raw = tensors_raw(TensorsSource(kind="tensors", path=str(tmp_path / "labels.npz")), DataLimits())
    assert np.array_equal(np.asarray(raw.y), y)


def test_npz_member_compressed_with_lzma_is_refused(tmp_path: Path) -> None:
    from engine.data.limits import DataLimits
    from engine.data.recipe import TensorsSource
    from engine.data.tensor_file import tensors_raw

    path = tmp_path / "lzma.npz"
    np.savez(path, x=np.zeros((4, 2), np.float32), y=np.zeros(4, np.int64))
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp_path / "re.npz", "w", zipfile.ZIP_LZMA) as dst:
        for name in src.namelist():
            dst.writestr(name, src.read(name))
    with pytest.raises(DataError) as err:
        tensors_raw(TensorsSource(kind="tensors", path=str(tmp_path / "re.npz")), DataLimits())
    assert err.value.entry == "x.npy" and "stored or deflated" in str(err.value)


def test_npz_whose_header_lies_about_its_size_is_refused(tmp_path: Path) -> None:
    # A stored (uncompressed) entry of 1 MiB whose header declares 4 GiB of float32.
    path = tmp_path / "liar.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        _write_npz_member(zf, "x.npy", (1 << 30,), 1)
        _write_npz_member(zf, "y.npy", (1 << 30,), 0)
    message, growth_kib = _peak_rss_loading(path)
    assert message.startswith("ERROR") and "header declares" in message
    assert growth_kib < 100 * 1024


def test_npz_larger_than_an_upload_may_be_is_refused(tmp_path: Path) -> None:
    from engine.data.limits import DataLimits
    from engine.data.recipe import TensorsSource
    from engine.data.tensor_file import tensors_raw

    x = np.zeros((64, 1024), dtype=np.float32)  # 256 KiB uncompressed, ~1 KiB compressed
    np.savez_compressed(tmp_path / "big.npz", x=x, y=np.zeros(64, dtype=np.int64))
    limits = DataLimits(max_bytes=200 * 1024)
    with pytest.raises(DataError) as err:
        tensors_raw(TensorsSource(kind="tensors", path=str(tmp_path / "big.npz")), limits)
    assert err.value.entry == "x.npy" and "limit per entry" in str(err.value)


def test_image_zip_bomb_is_refused_before_it_inflates(tmp_path: Path) -> None:
    # Two class folders; one "image" is 300 MiB of zeros deflated to ~0.3 MiB.
    from PIL import Image

    small = tmp_path / "dot.png"
    Image.new("RGB", (4, 4)).save(small)
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.write(small, "cats/a.png")
        zf.write(small, "dogs/a.png")
        with zf.open("dogs/huge.png", "w", force_zip64=True) as f:
            chunk = bytes(1 << 20)
            for _ in range(300):
                f.write(chunk)
    assert path.stat().st_size < 2 << 20
    message, growth_kib = _peak_rss_loading(path, "images")
    assert message.startswith("ERROR") and "dogs/huge.png" in message
    assert growth_kib < 100 * 1024
