"""Tiny fixture builders: every input file is generated in tmp_path, nothing binary is committed."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image


def png_bytes(color: tuple[int, int, int], size: tuple[int, int] = (6, 5), seed: int = 0) -> bytes:
    """A small RGB PNG (width, height) of one colour with a little noise."""
    rng = np.random.default_rng(seed)
    pixels = np.clip(
        np.array(color)[None, None, :] + rng.integers(-10, 10, (size[1], size[0], 3)), 0, 255
    )
    buf = io.BytesIO()
    Image.fromarray(pixels.astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def make_png() -> Callable[..., bytes]:
    """png_bytes as a fixture (test modules import nothing from conftest)."""
    return png_bytes


@pytest.fixture
def write_csv(tmp_path: Path) -> Callable[[str, str], str]:
    """Write CSV text to tmp_path and return its path."""

    def write(text: str, name: str = "data.csv") -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


@pytest.fixture
def write_zip(tmp_path: Path) -> Callable[..., str]:
    """Write a zip from {entry name: bytes} and return its path."""

    def write(
        entries: dict[str, bytes], name: str = "images.zip", compression: int = zipfile.ZIP_DEFLATED
    ) -> str:
        path = tmp_path / name
        with zipfile.ZipFile(path, "w", compression=compression) as zf:
            for entry, data in entries.items():
                zf.writestr(entry, data)
        return str(path)

    return write


@pytest.fixture
def image_zip(write_zip: Callable[..., str]) -> str:
    """Three classes (red, green, blue) of 6 images each, under one top-level folder."""
    colors = {"red": (220, 20, 20), "green": (20, 220, 20), "blue": (20, 20, 220)}
    entries = {
        f"shapes/{name}/img_{i}.png": png_bytes(color, seed=i)
        for name, color in colors.items()
        for i in range(6)
    }
    entries["shapes/README.txt"] = b"three colours"
    return write_zip(entries)
