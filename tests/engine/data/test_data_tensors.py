"""Tensor files: .safetensors and .npz with x and y, and clear errors for everything else."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file

from engine.data import DataError, load_dataset


def _load(path: Path | str, **source: object):
    return load_dataset({"source": {"kind": "tensors", "path": str(path), **source}})


def _error(path: Path | str, **source: object) -> DataError:
    with pytest.raises(DataError) as err:
        _load(path, **source)
    return err.value


def _xy(n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 3)).astype(np.float32), (np.arange(n) % 2).astype(np.int64)


def test_safetensors_classification(tmp_path: Path) -> None:
    x, y = _xy()
    save_file({"x": x, "y": y}, str(tmp_path / "d.safetensors"))
    splits = _load(tmp_path / "d.safetensors")
    assert splits.info.task == "classification" and splits.info.classes == ["0", "1"]
    assert splits.train.x.shape[1:] == (3,) and splits.train.y.dtype == torch.int64


def test_npz_regression_and_image_shaped_x(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "r.npz", x=rng.random((30, 2, 5, 5)), y=rng.random(30))
    splits = _load(tmp_path / "r.npz")
    assert splits.info.task == "regression" and splits.train.y.shape[1:] == (1,)
    assert splits.info.feature_shape == [2, 5, 5] and splits.info.norm_axis == "channel"


def test_uint8_images_are_scaled_and_labels_remapped(tmp_path: Path) -> None:
    x = np.full((20, 1, 4, 4), 255, dtype=np.uint8)
    y = np.array([3, 7] * 10)
    np.savez(tmp_path / "u.npz", x=x, y=y)
    splits = load_dataset(
        {
            "source": {"kind": "tensors", "path": str(tmp_path / "u.npz")},
            "transforms": {"normalize": "none"},
        }
    )
    assert splits.train.x.max() == 1.0
    assert splits.info.classes == ["3", "7"] and set(splits.train.y.tolist()) == {0, 1}


def test_missing_key_lists_what_was_found(tmp_path: Path) -> None:
    x, y = _xy()
    np.savez(tmp_path / "k.npz", features=x, y=y)
    err = _error(tmp_path / "k.npz")
    assert err.field == "x" and "'features'" in str(err)


def test_length_mismatch(tmp_path: Path) -> None:
    x, y = _xy()
    save_file({"x": x, "y": y[:-3]}, str(tmp_path / "m.safetensors"))
    assert "x has 40 samples but y has 37" in str(_error(tmp_path / "m.safetensors"))


def test_object_arrays_are_refused_without_unpickling(tmp_path: Path) -> None:
    x, _ = _xy()
    np.savez(tmp_path / "o.npz", x=x, y=np.array([{"a": 1}] * 40, dtype=object))
    assert "not a plain numeric .npz" in str(_error(tmp_path / "o.npz"))


def test_nan_names_the_row(tmp_path: Path) -> None:
    x, y = _xy()
    x[5, 1] = np.nan
    np.savez(tmp_path / "n.npz", x=x, y=y)
    err = _error(tmp_path / "n.npz")
    assert err.row == 5 and err.field == "x"


def test_one_dimensional_x_and_bad_suffix_and_garbage(tmp_path: Path) -> None:
    np.savez(tmp_path / "f.npz", x=np.arange(10.0), y=np.arange(10) % 2)
    assert "at least 2 dimensions" in str(_error(tmp_path / "f.npz"))
    (tmp_path / "d.pt").write_bytes(b"x")
    assert _error(tmp_path / "d.pt").field == "source.path"
    (tmp_path / "g.safetensors").write_bytes(b"garbage!garbage!")
    assert "not a readable .safetensors" in str(_error(tmp_path / "g.safetensors"))


def test_fractional_labels_cannot_be_classes(tmp_path: Path) -> None:
    x, _ = _xy()
    np.savez(tmp_path / "c.npz", x=x, y=np.linspace(0, 1, 40))
    err = _error(tmp_path / "c.npz", task="classification")
    assert err.field == "y" and "integer labels" in str(err)

