"""Built-in datasets: shapes, tasks, classes and deterministic, stratified splits."""

from __future__ import annotations

import pytest
import torch

from engine.data import BUILTIN_DATASETS, DataError, builtin_catalog, load_dataset, parse_recipe

EXPECTED = {
    "iris": ("classification", [4], 3, 150),
    "wine": ("classification", [13], 3, 178),
    "breast_cancer": ("classification", [30], 2, 569),
    "diabetes": ("regression", [10], None, 442),
    "digits": ("classification", [1, 8, 8], 10, 1797),
    "moons": ("classification", [2], 2, 600),
    "spirals": ("classification", [2], 2, 600),
}


def _recipe(name: str, **split: object) -> dict:
    return {"source": {"kind": "builtin", "name": name}, "split": split}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_builtin_loads_with_its_shape_task_and_classes(name: str) -> None:
    task, shape, num_classes, rows = EXPECTED[name]
    splits = load_dataset(_recipe(name))
    info = splits.info
    assert info.task == task
    assert info.feature_shape == shape
    assert info.num_classes == num_classes
    assert len(splits.train) + len(splits.val) + len(splits.test) == rows
    assert splits.train.x.shape[1:] == torch.Size(shape)
    assert splits.train.x.dtype == torch.float32
    if task == "classification":
        assert splits.train.y.dtype == torch.int64 and splits.train.y.dim() == 1
        assert len(info.classes) == num_classes
        assert info.output_size == num_classes
    else:
        assert splits.train.y.dtype == torch.float32 and splits.train.y.shape[1:] == (1,)
        assert info.output_size == 1
    assert info.to_json()["recipe"]["source"]["name"] == name


def test_builtin_names_come_from_sklearn() -> None:
    info = load_dataset(_recipe("iris")).info
    assert info.classes == ["setosa", "versicolor", "virginica"]
    assert info.feature_names[0] == "sepal length (cm)"
    assert load_dataset(_recipe("breast_cancer")).info.classes == ["malignant", "benign"]


def test_digits_pixels_are_scaled_to_unit_range_before_normalising() -> None:
    splits = load_dataset(
        {"source": {"kind": "builtin", "name": "digits"}, "transforms": {"normalize": "none"}}
    )
    assert splits.train.x.min() >= 0.0 and splits.train.x.max() <= 1.0
    assert splits.train.x.max() == 1.0


def test_same_seed_gives_same_split_and_another_seed_another() -> None:
    a = load_dataset(_recipe("wine", seed=3))
    b = load_dataset(_recipe("wine", seed=3))
    c = load_dataset(_recipe("wine", seed=4))
    assert torch.equal(a.train.x, b.train.x) and torch.equal(a.test.y, b.test.y)
    assert not torch.equal(a.train.x, c.train.x)


def test_split_is_stratified_by_class() -> None:
    splits = load_dataset(_recipe("iris", val=0.2, test=0.2))
    for part in (splits.train, splits.val, splits.test):
        counts = torch.bincount(part.y, minlength=3).float()
        # iris is balanced: each split holds each class in (almost) equal thirds.
        assert (counts.max() - counts.min()) <= 1


def test_generated_datasets_follow_their_seed() -> None:
    a = load_dataset({"source": {"kind": "builtin", "name": "spirals", "seed": 1}})
    b = load_dataset({"source": {"kind": "builtin", "name": "spirals", "seed": 1}})
    c = load_dataset({"source": {"kind": "builtin", "name": "moons", "seed": 2}})
    d = load_dataset({"source": {"kind": "builtin", "name": "moons", "seed": 3}})
    assert torch.equal(a.train.x, b.train.x)
    assert not torch.equal(c.info.normalize(c.train.x), d.info.normalize(d.train.x))


def test_zero_val_fraction_gives_an_empty_validation_split() -> None:
    splits = load_dataset(_recipe("iris", val=0.0, test=0.2))
    assert len(splits.val) == 0 and splits.val.x.shape == (0, 4)
    assert len(splits.train) == 120


def test_unknown_builtin_names_the_field_and_lists_the_choices() -> None:
    with pytest.raises(DataError) as err:
        parse_recipe(_recipe("mnist"))
    assert err.value.field == "source.name"
    assert "iris" in str(err.value) and "mnist" in str(err.value)


def test_catalog_lists_every_builtin() -> None:
    names = [d["name"] for d in builtin_catalog()]
    assert names == list(BUILTIN_DATASETS)
