"""TensorSet batching and DataError formatting."""

from __future__ import annotations

import torch

from engine.data import DataError, TensorSet


def _set(n: int = 23) -> TensorSet:
    return TensorSet(torch.arange(n, dtype=torch.float32).reshape(n, 1), torch.arange(n))


def test_shuffled_batches_cover_every_row_exactly_once_per_epoch() -> None:
    data = _set()
    gen = torch.Generator().manual_seed(0)
    epochs = []
    for _ in range(2):
        seen = torch.cat([y for _, y in data.batches(5, shuffle=True, generator=gen)])
        assert sorted(seen.tolist()) == list(range(23))
        epochs.append(seen.tolist())
    assert epochs[0] != epochs[1]  # a new order each epoch
    assert epochs[0] != list(range(23))


def test_batches_keep_x_and_y_together_and_sizes_follow_batch_size() -> None:
    data = _set()
    batches = list(data.batches(5, shuffle=True, generator=torch.Generator().manual_seed(1)))
    assert [len(y) for _, y in batches] == [5, 5, 5, 5, 3]
    for x, y in batches:
        assert torch.equal(x[:, 0].long(), y)
    assert [len(y) for _, y in data.batches(5, drop_last=True)] == [5, 5, 5, 5]
    assert data.num_batches(5) == 5 and data.num_batches(5, drop_last=True) == 4


def test_same_generator_seed_gives_the_same_order() -> None:
    data = _set()
    a = [y for _, y in data.batches(4, shuffle=True, generator=torch.Generator().manual_seed(7))]
    b = [y for _, y in data.batches(4, shuffle=True, generator=torch.Generator().manual_seed(7))]
    assert all(torch.equal(p, q) for p, q in zip(a, b, strict=True))


def test_unshuffled_batches_are_in_order_and_empty_sets_give_none() -> None:
    data = _set(7)
    assert torch.cat([y for _, y in data.batches(3)]).tolist() == list(range(7))
    assert list(TensorSet(torch.zeros(0, 2), torch.zeros(0, dtype=torch.long)).batches(4)) == []


def test_data_error_names_its_location() -> None:
    err = DataError("'abc' is not a number", row=7, column="sepal_length")
    assert str(err) == "row 7, column 'sepal_length': 'abc' is not a number"
    assert err.to_json() == {
        "message": "row 7, column 'sepal_length': 'abc' is not a number",
        "row": 7,
        "column": "sepal_length",
        "entry": None,
        "field": None,
    }
    assert str(DataError("no rows")) == "no rows"
    assert str(DataError("bad", entry="a/../b.png")) == "entry 'a/../b.png': bad"
