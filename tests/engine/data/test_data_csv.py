"""CSV sources: encoding, train-only statistics, and every bad input named by row and column."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from engine.data import DataError, DataLimits, load_dataset

Writer = Callable[..., str]

# 12 rows: two numeric columns, one categorical, string labels in two balanced classes.
GOOD = "height,weight,colour,kind\n" + "".join(
    f"{1.0 + i * 0.1:.1f},{50 + i * 3},{['red', 'green', 'blue'][i % 3]},{'cat' if i % 2 else 'dog'}\n"
    for i in range(12)
)


def _load(path: str, limits: DataLimits | None = None, **source: object) -> object:
    recipe = {
        "source": {"kind": "csv", "path": path, "target": "kind", **source},
        "split": {"val": 0.25, "test": 0.25, "seed": 0},
    }
    return load_dataset(recipe, limits)


def _error(path: str, limits: DataLimits | None = None, **source: object) -> DataError:
    with pytest.raises(DataError) as err:
        _load(path, limits, **source)
    return err.value


def test_numeric_and_categorical_columns_with_string_labels(write_csv: Writer) -> None:
    splits = _load(write_csv(GOOD))
    info = splits.info
    assert info.task == "classification" and info.classes == ["cat", "dog"]
    assert info.feature_names[:2] == ["height", "weight"]
    assert set(info.feature_names[2:]) <= {"colour=blue", "colour=green", "colour=red"}
    assert splits.train.y.dtype == torch.int64
    assert len(splits.train) + len(splits.val) + len(splits.test) == 12
    roles = {c["name"]: (c["kind"], c["role"]) for c in info.columns}
    assert roles == {
        "height": ("numeric", "feature"),
        "weight": ("numeric", "feature"),
        "colour": ("categorical", "feature"),
        "kind": ("categorical", "target"),
    }
    onehot = splits.train.x[:, 2:]
    assert set(onehot.unique().tolist()) <= {0.0, 1.0}  # one-hot columns are not standardised
    assert torch.all(onehot.sum(dim=1) == 1)


def test_index_encoding_and_chosen_features(write_csv: Writer) -> None:
    splits = _load(write_csv(GOOD), features=["colour", "height"], categorical="index")
    assert splits.info.feature_names == ["colour", "height"]
    codes = splits.train.x[:, 0]
    assert set(codes.tolist()) <= {1.0, 2.0, 3.0}  # 0 is kept for values unseen in train


def test_categories_unseen_in_train_encode_as_all_zero(write_csv: Writer) -> None:
    # 'z' appears once, in the last row, which seed 0 puts in the test split.
    rows = "".join(f"{i},{'z' if i == 11 else 'ab'[i % 2]},{i % 2}\n" for i in range(12))
    splits = load_dataset(
        {
            "source": {"kind": "csv", "path": write_csv("n,c,kind\n" + rows), "target": "kind"},
            "split": {"val": 0.0, "test": 0.5, "seed": 0, "stratify": False},
        }
    )
    assert splits.info.feature_names == ["n", "c=a", "c=b"]
    last = splits.info.denormalize(splits.test.x)[:, 0] == 11
    assert last.sum() == 1
    assert splits.test.x[last, 1:].tolist() == [[0.0, 0.0]]
    indexed = load_dataset(
        {
            "source": {
                "kind": "csv",
                "path": write_csv("n,c,kind\n" + rows),
                "target": "kind",
                "categorical": "index",
            },
            "split": {"val": 0.0, "test": 0.5, "seed": 0, "stratify": False},
        }
    )
    assert indexed.test.x[last, 1].tolist() == [0.0]


def test_normalisation_uses_train_statistics_only(write_csv: Writer) -> None:
    splits = _load(write_csv(GOOD))
    info = splits.info
    # Train is standardised exactly; val/test use the train mean and std, so theirs differ.
    assert torch.allclose(splits.train.x[:, :2].mean(0), torch.zeros(2), atol=1e-5)
    assert torch.allclose(splits.train.x[:, :2].std(0, correction=0), torch.ones(2), atol=1e-5)
    raw_val = info.denormalize(splits.val.x)
    assert torch.allclose(
        (raw_val - torch.tensor(info.mean)) / torch.tensor(info.std), splits.val.x, atol=1e-5
    )
    assert info.mean[2:] == [0.0] * (len(info.mean) - 2) and info.std[2:] == [1.0] * (
        len(info.std) - 2
    )


def test_regression_target_and_auto_task(write_csv: Writer) -> None:
    text = "a,b,price\n" + "".join(f"{i},{i * i % 7},{i * 1.5 + 0.25}\n" for i in range(20))
    splits = load_dataset({"source": {"kind": "csv", "path": write_csv(text), "target": "price"}})
    assert splits.info.task == "regression" and splits.info.num_classes is None
    assert splits.train.y.dtype == torch.float32 and splits.train.y.shape[1] == 1


def test_integer_target_with_few_values_is_classification(write_csv: Writer) -> None:
    text = "a,label\n" + "".join(f"{i},{i % 3}\n" for i in range(30))
    info = load_dataset(
        {"source": {"kind": "csv", "path": write_csv(text), "target": "label"}}
    ).info
    assert info.task == "classification" and info.classes == ["0", "1", "2"]


def test_semicolon_delimiter_is_detected(write_csv: Writer) -> None:
    splits = _load(write_csv(GOOD.replace(",", ";")))
    assert splits.info.feature_names[:2] == ["height", "weight"]


def test_empty_file(write_csv: Writer) -> None:
    assert "empty" in str(_error(write_csv("")))


def test_header_only(write_csv: Writer) -> None:
    assert "no data rows" in str(_error(write_csv("height,weight,kind\n")))


def test_ragged_row_names_the_row_and_field_counts(write_csv: Writer) -> None:
    lines = GOOD.splitlines()
    lines[5] = "1.0,2.0,red"
    err = _error(write_csv("\n".join(lines) + "\n"))
    assert err.row == 6
    assert str(err) == "row 6: has 3 fields, expected 4 (as in the header)"


def test_unknown_target_lists_available_columns(write_csv: Writer) -> None:
    path = write_csv(GOOD)
    with pytest.raises(DataError) as err:
        load_dataset({"source": {"kind": "csv", "path": path, "target": "species"}})
    assert err.value.column == "species" and err.value.field == "source.target"
    assert "'height', 'weight', 'colour', 'kind'" in str(err.value)


def test_unknown_feature_column(write_csv: Writer) -> None:
    err = _error(write_csv(GOOD), features=["height", "widht"])
    assert err.column == "widht" and err.field == "source.features"
    assert "available columns" in str(err)


def test_missing_numeric_values_name_the_cells_and_counts(write_csv: Writer) -> None:
    lines = GOOD.splitlines()
    lines[3] = ",53,red,dog"
    lines[7] = "NA,62,green,dog"
    lines[9] = "1.8,,red,dog"
    # Gaps are filled by default now (tests/engine/data/test_data_missing.py); "fail" refuses them.
    err = _error(write_csv("\n".join(lines) + "\n"), missing={"height": "fail", "weight": "fail"})
    assert (err.row, err.column) == (4, "height")
    text = str(err)
    assert "3 missing values" in text and "'height' 2" in text and "'weight' 1" in text
    assert "row 8 column 'height'" in text and "row 10 column 'weight'" in text


def test_missing_categorical_value_is_its_own_category(write_csv: Writer) -> None:
    lines = GOOD.splitlines()
    lines[2] = "1.1,53,,cat"
    splits = _load(write_csv("\n".join(lines) + "\n"))
    colour = next(c for c in splits.info.columns if c["name"] == "colour")
    assert colour["missing"] == 1


def test_missing_target_value_is_an_error(write_csv: Writer) -> None:
    lines = GOOD.splitlines()
    lines[4] = "1.3,59,red,"
    err = _error(write_csv("\n".join(lines) + "\n"))
    assert (err.row, err.column) == (5, "kind")


def test_text_in_a_numeric_column_names_row_and_column(write_csv: Writer) -> None:
    lines = GOOD.splitlines()
    lines[6] = "abc,65,red,cat"
    err = _error(write_csv("\n".join(lines) + "\n"))
    assert (err.row, err.column) == (7, "height")
    assert str(err) == "row 7, column 'height': 'abc' is not a number"


def test_one_class_target(write_csv: Writer) -> None:
    text = "a,kind\n" + "".join(f"{i},dog\n" for i in range(8))
    err = _error(write_csv(text))
    assert err.column == "kind" and "only one class ('dog')" in str(err)


def test_regression_needs_a_numeric_target(write_csv: Writer) -> None:
    err = _error(write_csv(GOOD), task="regression")
    assert err.column == "kind" and "numeric" in str(err)


def test_row_and_column_limits(write_csv: Writer) -> None:
    err = _error(write_csv(GOOD), DataLimits(max_rows=5))
    assert err.row == 7 and "more than 5 data rows" in str(err)
    err = _error(write_csv(GOOD), DataLimits(max_columns=3))
    assert "4 columns" in str(err) and "limit is 3" in str(err)
    err = _error(write_csv(GOOD), DataLimits(max_bytes=10))
    assert "limit is 10" in str(err)


def test_duplicate_header_name(write_csv: Writer) -> None:
    err = _error(write_csv("a,a,kind\n1,2,x\n3,4,y\n"))
    assert err.row == 1 and err.column == "a"


def test_too_many_categories_for_one_hot(write_csv: Writer) -> None:
    text = "id,a,kind\n" + "".join(f"user{i},{i},{i % 2}\n" for i in range(30))
    err = _error(write_csv(text), DataLimits(max_categories=10))
    assert err.column == "id" and "more than 10 distinct values" in str(err)


def test_not_utf8(write_csv: Writer, tmp_path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes("a,kind\n1,caf\xe9\n2,b\n".encode("latin-1"))
    assert "UTF-8" in str(_error(str(path)))
