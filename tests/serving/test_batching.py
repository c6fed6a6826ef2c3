"""The model server's pieces without a server: batches of concurrent requests, the full queue,
and raw named inputs turned into rows (serving/batching.py, serving/version.py)."""

from __future__ import annotations

import asyncio

import pytest

from serving.batching import Batcher, BatchSettings, Overloaded
from serving.version import BadInput, _table_rows

COLUMNS = [{"name": "age", "type": "numeric"}, {"name": "colour", "type": "categorical"}]


def test_concurrent_requests_share_a_batch_and_get_their_own_answers() -> None:
    sizes: list[int] = []

    async def main() -> list[list[int]]:
        batcher = Batcher(lambda rows: [r * 10 for r in rows], BatchSettings(max_batch_size=8, max_wait_s=0.05),
                          sizes.append)
        try:
            return await asyncio.gather(*(batcher.submit([i, i + 100]) for i in range(4)))
        finally:
            batcher.close()

    answers = asyncio.run(main())
    assert answers == [[0, 1000], [10, 1010], [20, 1020], [30, 1030]]
    assert sum(sizes) == 8 and max(sizes) > 2  # rows of several requests ran together


def test_a_batch_holds_at_most_max_batch_size_rows() -> None:
    sizes: list[int] = []

    async def main() -> None:
        batcher = Batcher(lambda rows: rows, BatchSettings(max_batch_size=3, max_wait_s=0.02), sizes.append)
        try:
            await asyncio.gather(*(batcher.submit([i]) for i in range(7)))
        finally:
            batcher.close()

    asyncio.run(main())
    assert sum(sizes) == 7 and max(sizes) <= 3


def test_a_full_queue_refuses_with_overloaded() -> None:
    async def main() -> list[object]:
        batcher = Batcher(lambda rows: rows, BatchSettings(max_batch_size=64, max_wait_s=0.2, max_queue=2))
        try:
            return await asyncio.gather(*(batcher.submit([i]) for i in range(4)), return_exceptions=True)
        finally:
            batcher.close()

    outcomes = asyncio.run(main())
    assert outcomes[:2] == [[0], [1]]
    assert all(isinstance(o, Overloaded) for o in outcomes[2:])


def test_a_failing_batch_fails_its_own_requests_only() -> None:
    async def main() -> list[object]:
        calls = {"n": 0}

        def run(rows: list[int]) -> list[int]:
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError("boom")
            return rows

        batcher = Batcher(run, BatchSettings(max_batch_size=1, max_wait_s=0.0))
        try:
            return await asyncio.gather(batcher.submit([1]), batcher.submit([2]), return_exceptions=True)
        finally:
            batcher.close()

    first, second = asyncio.run(main())
    assert isinstance(first, RuntimeError) and second == [2]


def test_named_inputs_become_rows() -> None:
    rows = _table_rows(COLUMNS, [{"name": "age", "data": [41, None]}, {"name": "colour", "data": ["red", "blue"]}])
    assert rows == [{"age": 41, "colour": "red"}, {"age": None, "colour": "blue"}]


@pytest.mark.parametrize(
    ("inputs", "field"),
    [
        ([{"name": "age", "data": [1]}], "colour"),
        ([{"name": "age", "data": [1]}, {"name": "colour", "data": ["a"]}, {"name": "size", "data": [1]}], "size"),
        ([{"name": "age", "data": [1, 2]}, {"name": "colour", "data": ["a"]}], "colour"),
        ([{"name": "age", "data": 3}, {"name": "colour", "data": ["a"]}], "age"),
    ],
)
def test_bad_named_inputs_name_the_column(inputs: list[dict[str, object]], field: str) -> None:
    with pytest.raises(BadInput) as caught:
        _table_rows(COLUMNS, inputs)
    assert caught.value.field == field
