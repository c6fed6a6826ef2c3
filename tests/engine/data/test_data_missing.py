"""Missing values: a strategy per column, fitted on the train split, stated in the summary."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from engine.data import DataError, inspect_upload, load_dataset

Writer = Callable[..., str]
SPLIT = {"val": 0.25, "test": 0.25, "seed": 0, "stratify": False}


def gappy_csv(n: int = 40) -> str:
    """age (numeric, gaps every 7th row), city (categorical, gaps every 5th), label."""
    lines = ["age,city,label"]
    for i in range(n):
        age = "" if i % 7 == 3 else str(20 + i)
        city = "" if i % 5 == 1 else ["oslo", "rome", "lima"][i % 3]
        lines.append(f"{age},{city},{'yes' if i % 2 else 'no'}")
    return "\n".join(lines) + "\n"


def _load(path: str, **source: object):
    return load_dataset(
        {"source": {"kind": "csv", "path": path, "target": "label", **source}, "split": SPLIT}
    )


def _column(info, name: str) -> dict:
    return next(c for c in info.columns if c["name"] == name)


def _raw_age(splits, part: str = "train") -> torch.Tensor:
    x = getattr(splits, part).x
    return splits.info.denormalize(x)[:, splits.info.feature_names.index("age")]


def test_numeric_gaps_are_filled_with_the_train_median_by_default(write_csv: Writer) -> None:
    path = write_csv(gappy_csv())
    splits = _load(path)
    age = _column(splits.info, "age")
    assert age["missing"] == 6 and age["missing_strategy"] == "median"
    fill = age["missing_fill"]
    assert fill == splits.info.recipe["source"]["missing"]["age"]["fill"]
    # The fill is the median of the train rows' ages, not of the whole column.
    from engine.data.recipe import Split
    from engine.data.split import split_indices

    train_idx, _, _ = split_indices(40, Split(**SPLIT), None)
    filled_train = [20 + i for i in train_idx if i % 7 != 3]
    assert fill == float(np.median(filled_train))
    gaps = [k for k, i in enumerate(train_idx) if i % 7 == 3]
    assert torch.allclose(_raw_age(splits)[gaps], torch.full((len(gaps),), fill), atol=1e-3)


def test_categorical_gaps_keep_missing_as_a_category_and_say_so(write_csv: Writer) -> None:
    splits = _load(write_csv(gappy_csv()))
    city = _column(splits.info, "city")
    assert city["missing"] == 8 and city["missing_strategy"] == "category"
    assert "(missing)" in city["categories"]
    assert "city=(missing)" in splits.info.feature_names


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [("mean", None), ("most_frequent", None), ({"strategy": "constant", "value": -1}, -1.0)],
)
def test_other_numeric_fills(write_csv: Writer, strategy: object, expected: float | None) -> None:
    splits = _load(write_csv(gappy_csv()), missing={"age": strategy})
    fill = _column(splits.info, "age")["missing_fill"]
    if expected is not None:
        assert fill == expected
    else:
        assert 20 <= fill <= 59
    assert not torch.isnan(splits.train.x).any()


def test_most_frequent_and_constant_for_categories(write_csv: Writer) -> None:
    splits = _load(write_csv(gappy_csv()), missing={"city": "most_frequent"})
    city = _column(splits.info, "city")
    assert city["missing_fill"] in ("oslo", "rome", "lima")
    assert "(missing)" not in city["categories"]
    splits = _load(
        write_csv(gappy_csv()), missing={"city": {"strategy": "constant", "value": "elsewhere"}}
    )
    assert "city=elsewhere" in splits.info.feature_names


def test_indicator_adds_a_was_missing_feature_left_unscaled(write_csv: Writer) -> None:
    splits = _load(
        write_csv(gappy_csv()), missing={"age": {"strategy": "median", "indicator": True}}
    )
    k = splits.info.feature_names.index("age (missing)")
    flags = torch.cat([splits.train.x[:, k], splits.val.x[:, k], splits.test.x[:, k]])
    assert set(flags.tolist()) == {0.0, 1.0} and int(flags.sum()) == 6
    assert _column(splits.info, "age")["missing_indicator"] is True


def test_drop_row_leaves_those_rows_out_before_the_split(write_csv: Writer) -> None:
    splits = _load(write_csv(gappy_csv()), missing={"age": "drop_row"})
    assert splits.info.rows["total"] == 34
    assert not torch.isnan(splits.train.x).any()
    dropped = _load(write_csv(gappy_csv()), missing={"label": "drop_row"})
    assert dropped.info.rows["total"] == 40  # no gaps in the target: nothing to drop


def test_a_strategy_that_does_not_fit_the_column_names_it(write_csv: Writer) -> None:
    with pytest.raises(DataError) as err:
        _load(write_csv(gappy_csv()), missing={"city": "mean"})
    assert err.value.column == "city" and err.value.field == "source.missing.city"
    with pytest.raises(DataError) as err:
        _load(write_csv(gappy_csv()), missing={"town": "median"})
    assert err.value.column == "town" and err.value.field == "source.missing"
    with pytest.raises(DataError) as err:
        _load(write_csv(gappy_csv()), missing={"label": "median"})
    assert err.value.field == "source.missing.label"
    with pytest.raises(DataError) as err:
        _load(write_csv(gappy_csv()), missing={"age": {"strategy": "constant"}})
    assert "needs a value" in str(err.value)


def test_the_fitted_recipe_gives_the_same_tensors_again(write_csv: Writer) -> None:
    """Explanation and prediction reload with the run's recipe: same fills, same inputs."""
    path = write_csv(gappy_csv())
    first = _load(path, missing={"age": "mean"})
    again = load_dataset(first.info.recipe)
    assert again.info.recipe["source"]["missing"] == first.info.recipe["source"]["missing"]
    assert torch.equal(again.test.x, first.test.x)
    # A fill given in the recipe is used as it is, not fitted again.
    recipe = dict(first.info.recipe)
    recipe["source"] = {**recipe["source"], "missing": {"age": {"strategy": "mean", "fill": 99}}}
    fixed = load_dataset(recipe)
    assert _column(fixed.info, "age")["missing_fill"] == 99.0


def test_the_upload_summary_lists_gaps_and_default_strategies(write_csv: Writer) -> None:
    path = write_csv(gappy_csv())
    before = inspect_upload(path, "csv")
    assert before["missing"] == {
        "age": {"count": 6, "strategy": "median"},
        "city": {"count": 8, "strategy": "category"},
    }
    after = inspect_upload(path, "csv", {"target": "label"})
    assert after["missing"]["age"]["strategy"] == "median" and "fill" in after["missing"]["age"]
    assert after["missing"]["city"] == {"count": 8, "strategy": "category", "fill": "(missing)"}


def test_id_like_columns_are_flagged(write_csv: Writer) -> None:
    rows = "".join(f"{i + 1},user{i * 7},{i * 3 + 50},{i % 2}\n" for i in range(12))
    summary = inspect_upload(write_csv("row,handle,weight,label\n" + rows), "csv")
    flags = {c["name"]: c["id_like"] for c in summary["columns"]}
    # A row counter and a text that differs in every row; weight is a measurement.
    assert flags == {"row": True, "handle": True, "weight": False, "label": False}
