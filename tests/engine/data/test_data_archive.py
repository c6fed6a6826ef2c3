"""Image archives: class folders, resizing, and the checks that run before anything is decoded."""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from engine.data import DataError, DataLimits, LazyImageSet, TensorSet, load_dataset

Writer = Callable[..., str]
RED, GREEN = (220, 20, 20), (20, 220, 20)


def _recipe(path: str, channels: int = 3, **extra: object) -> dict:
    return {
        "source": {"kind": "images", "path": path, "size": [4, 4], "channels": channels},
        "split": {"val": 0.2, "test": 0.2, "seed": 0},
        **extra,
    }


def _error(path: str, limits: DataLimits | None = None) -> DataError:
    with pytest.raises(DataError) as err:
        load_dataset(_recipe(path), limits)
    return err.value


@pytest.fixture
def two_classes(make_png: Callable[..., bytes]) -> Callable[[int], dict[str, bytes]]:
    """n red and n green images in class folders."""

    def build(n: int = 2) -> dict[str, bytes]:
        return {
            f"{c}/{i}.png": make_png(color, seed=i)
            for c, color in (("red", RED), ("green", GREEN))
            for i in range(n)
        }

    return build


def _patch_declared_size(path: str, entry: str, size: int) -> None:
    """Rewrite an entry's uncompressed size in the central directory (a lying header)."""
    data = bytearray(Path(path).read_bytes())
    start = 0
    while (start := data.find(b"PK\x01\x02", start)) >= 0:
        name_len = struct.unpack_from("<H", data, start + 28)[0]
        if data[start + 46 : start + 46 + name_len].decode() == entry:
            struct.pack_into("<I", data, start + 24, size)
            Path(path).write_bytes(bytes(data))
            return
        start += 4
    raise AssertionError(f"no entry {entry}")


def test_class_folders_under_one_top_folder_load_as_resized_images(image_zip: str) -> None:
    splits = load_dataset(_recipe(image_zip, **{"transforms": {"normalize": "none"}}))
    info = splits.info
    assert info.classes == ["blue", "green", "red"]
    assert info.feature_shape == [3, 4, 4]
    assert isinstance(splits.train, TensorSet)
    assert splits.train.x.shape[1:] == (3, 4, 4)
    assert len(splits.train) + len(splits.val) + len(splits.test) == 18
    assert 0.0 <= splits.train.x.min() and splits.train.x.max() <= 1.0
    red = splits.train.x[splits.train.y == 2]
    assert torch.all(red[:, 0].mean(dim=(1, 2)) > 0.7) and torch.all(
        red[:, 1].mean(dim=(1, 2)) < 0.2
    )


def test_grey_conversion_and_per_channel_statistics(image_zip: str) -> None:
    splits = load_dataset(_recipe(image_zip, channels=1))
    info = splits.info
    assert splits.train.x.shape[1:] == (1, 4, 4)
    assert info.norm_axis == "channel" and len(info.mean) == 1 and len(info.std) == 1
    assert abs(splits.train.x.mean().item()) < 1e-5


def test_big_archives_are_decoded_lazily_with_the_same_values(image_zip: str) -> None:
    eager = load_dataset(_recipe(image_zip))
    lazy = load_dataset(_recipe(image_zip), DataLimits(in_memory_bytes=100))
    assert isinstance(lazy.train, LazyImageSet)
    lazy.train.num_workers = 0
    assert lazy.info.mean == pytest.approx(eager.info.mean, abs=1e-5)
    xs, ys = zip(*lazy.train.batches(5), strict=True)
    assert torch.allclose(torch.cat(xs), eager.train.x, atol=1e-5)
    assert torch.equal(torch.cat(ys), eager.train.y)
    assert len(lazy.val) == len(eager.val)


def test_path_traversal_entry_is_named(
    write_zip: Writer, two_classes: Callable, make_png: Callable
) -> None:
    entries = two_classes()
    entries["../evil.png"] = make_png(RED)
    err = _error(write_zip(entries))
    assert err.entry == "../evil.png" and "'..'" in str(err)


def test_absolute_path_entry_is_named(
    write_zip: Writer, two_classes: Callable, make_png: Callable
) -> None:
    entries = two_classes()
    entries["/etc/red/x.png"] = make_png(RED)
    err = _error(write_zip(entries))
    assert err.entry == "/etc/red/x.png" and "absolute" in str(err)


def test_too_many_entries(write_zip: Writer, two_classes: Callable) -> None:
    err = _error(write_zip(two_classes(3)), DataLimits(max_entries=5))
    assert "6 entries" in str(err) and "limit is 5" in str(err)


def test_huge_declared_size_is_refused_before_decompressing(
    write_zip: Writer, two_classes: Callable
) -> None:
    path = write_zip(two_classes())
    _patch_declared_size(path, "red/1.png", 3_000_000_000)
    err = _error(path)
    assert err.entry == "red/1.png" and "3000000000 bytes" in str(err)


def test_total_declared_size_limit(write_zip: Writer, two_classes: Callable) -> None:
    err = _error(write_zip(two_classes(3)), DataLimits(max_uncompressed_bytes=200))
    assert err.entry is not None and "limit" in str(err)


def test_high_compression_ratio_is_a_bomb(write_zip: Writer, two_classes: Callable) -> None:
    entries = two_classes()
    entries["red/zeros.png"] = bytes(400_000)
    err = _error(write_zip(entries))
    assert err.entry == "red/zeros.png" and "compression ratio" in str(err)


def test_header_that_understates_the_size_is_caught_while_reading(
    write_zip: Writer, two_classes: Callable
) -> None:
    path = write_zip(two_classes())
    real = zipfile.ZipFile(path).getinfo("green/0.png").file_size
    _patch_declared_size(path, "green/0.png", real // 2)
    err = _error(path)
    assert err.entry == "green/0.png" and "corrupt" in str(err)


def test_file_that_is_not_an_image_is_named(write_zip: Writer, two_classes: Callable) -> None:
    entries = two_classes()
    entries["green/broken.png"] = b"this is not a png"
    err = _error(write_zip(entries))
    assert err.entry == "green/broken.png" and "not a readable image" in str(err)


def test_one_class_is_not_enough(write_zip: Writer, make_png: Callable) -> None:
    err = _error(write_zip({f"red/{i}.png": make_png(RED, seed=i) for i in range(4)}))
    assert "one class folder ('red')" in str(err)


def test_image_outside_a_class_folder(
    write_zip: Writer, two_classes: Callable, make_png: Callable
) -> None:
    entries = two_classes()
    entries["loose.png"] = make_png(RED)
    err = _error(write_zip(entries))
    assert err.entry == "loose.png"


def test_image_size_limit(write_zip: Writer, two_classes: Callable) -> None:
    err = _error(write_zip(two_classes()), DataLimits(max_image_pixels=20))
    assert err.entry is not None and "6x5 pixels" in str(err)


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "x.zip"
    path.write_bytes(b"hello")
    assert "not a readable zip" in str(_error(str(path)))
