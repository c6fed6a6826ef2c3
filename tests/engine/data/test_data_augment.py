"""Augmentation: batch-level kornia ops on train only, errors naming the op, previews and PNGs."""

from __future__ import annotations

import io

import pytest
import torch
from PIL import Image

from engine.data import DataError, build_augmentation, load_dataset, png_grid, preview_augmentations

DIGITS_FLIP = {
    "source": {"kind": "builtin", "name": "digits"},
    "transforms": {"augment": [{"op": "hflip", "p": 1.0}, {"op": "noise", "std": 0.1, "p": 1.0}]},
}


def test_augmentation_changes_train_batches_only_and_keeps_shapes() -> None:
    splits = load_dataset(DIGITS_FLIP)
    x, _ = next(splits.train.batches(16))
    assert x.shape == (16, 1, 8, 8)
    assert not torch.allclose(x, splits.train.x[:16])
    plain, _ = next(splits.train.batches(16, augment=False))
    assert torch.equal(plain, splits.train.x[:16])
    val, _ = next(splits.val.batches(16))
    assert torch.equal(val, splits.val.x[:16])


def test_flip_is_applied_in_pixel_space_and_stays_exact() -> None:
    splits = load_dataset({**DIGITS_FLIP, "transforms": {"augment": [{"op": "hflip", "p": 1.0}]}})
    x, _ = next(splits.train.batches(8))
    assert torch.allclose(x, splits.train.x[:8].flip(-1), atol=1e-5)


@pytest.mark.parametrize(
    "spec",
    [
        {"op": "vflip"},
        {"op": "affine", "degrees": 20, "translate": 0.2, "scale": [0.9, 1.1]},
        {"op": "crop", "padding": 2},
        {"op": "crop", "scale": [0.5, 1.0]},
        {"op": "noise", "std": 0.2},
        {"op": "color_jitter", "brightness": 0.4, "hue": 0.1},
    ],
)
def test_every_image_op_keeps_the_batch_shape(spec: dict) -> None:
    module = build_augmentation([{**spec, "p": 1.0}], [3, 8, 8], mean=[0.5] * 3, std=[0.2] * 3)
    x = torch.rand(4, 3, 8, 8)
    out = module(x)
    assert out.shape == x.shape and not torch.equal(out, x)


def test_color_jitter_on_one_channel_names_the_op() -> None:
    with pytest.raises(DataError) as err:
        build_augmentation([{"op": "hflip"}, {"op": "color_jitter"}], [1, 8, 8])
    assert err.value.field == "transforms.augment.1.op" and "color_jitter" in str(err.value)


def test_image_ops_on_tabular_data_name_the_op_but_noise_works() -> None:
    with pytest.raises(DataError) as err:
        load_dataset(
            {
                "source": {"kind": "builtin", "name": "iris"},
                "transforms": {"augment": [{"op": "hflip"}]},
            }
        )
    assert "'hflip'" in str(err.value) and "tabular" in str(err.value)
    splits = load_dataset(
        {
            "source": {"kind": "builtin", "name": "iris"},
            "transforms": {"augment": [{"op": "noise", "std": 0.5, "p": 1.0}]},
        }
    )
    x, _ = next(splits.train.batches(8))
    assert x.shape == (8, 4) and not torch.allclose(x, splits.train.x[:8])


def test_preview_returns_n_augmented_pixel_images() -> None:
    recipe = {
        "source": {"kind": "builtin", "name": "digits"},
        "transforms": {"augment": [{"op": "affine", "degrees": 30, "p": 1.0}]},
    }
    grid = preview_augmentations(recipe, index=3, n=6, seed=1)
    assert grid.shape == (6, 1, 8, 8)
    assert grid.min() >= 0 and grid.max() <= 1
    assert not torch.equal(grid[0], grid[1])
    assert torch.equal(grid, preview_augmentations(recipe, index=3, n=6, seed=1))


def test_preview_of_an_archive_decodes_one_image(image_zip: str) -> None:
    recipe = {
        "source": {"kind": "images", "path": image_zip, "size": [8, 8]},
        "transforms": {"augment": [{"op": "color_jitter", "brightness": 0.5, "p": 1.0}]},
    }
    assert preview_augmentations(recipe, n=4).shape == (4, 3, 8, 8)


def test_png_grid_is_a_png_of_the_tiles() -> None:
    data = png_grid(torch.rand(5, 3, 8, 8), nrow=3, pad=2, min_tile=16)
    img = Image.open(io.BytesIO(data))
    assert img.format == "PNG" and img.mode == "RGB"
    assert img.size == (3 * 16 + 4 * 2, 2 * 16 + 3 * 2)
    assert Image.open(io.BytesIO(png_grid(torch.rand(2, 1, 4, 4)))).mode == "L"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_batches_and_augmentation_run_on_the_gpu() -> None:
    train = load_dataset(DIGITS_FLIP).train.to("cuda")
    x, y = next(train.batches(32, shuffle=True, generator=torch.Generator().manual_seed(0)))
    assert x.is_cuda and y.is_cuda and x.shape == (32, 1, 8, 8)
