"""The columnar reader: encodings, dialects, the stored Arrow table standing in for the CSV."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.data import DataError, DataLimits, inspect_upload, load_dataset
from engine.data.csv_read import build_csv_table, table_format

TEXT = "name;size;colour\n" + "".join(
    f"café {i};{i * 1.5};{['grün', 'rot'][i % 2]}\n" for i in range(12)
)


def _write(tmp_path: Path, text: str, encoding: str, name: str = "data.csv") -> str:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return str(path)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8-sig", "latin-1", "utf-8"])
def test_each_encoding_is_detected_on_upload(tmp_path: Path, encoding: str) -> None:
    path = _write(tmp_path, TEXT, encoding)
    summary = inspect_upload(path, "csv", {"target": "colour", "features": ["size"]})
    assert summary["classes"] == ["grün", "rot"]
    assert summary["csv"]["delimiter"] == ";"
    assert summary["csv"]["encoding"] == {"utf-8-sig": "utf-8"}.get(encoding, encoding)
    assert summary["preview"]["rows"][0][0] == "café 0"


def test_latin1_is_read_when_chosen_and_named_when_not(tmp_path: Path) -> None:
    path = _write(tmp_path, TEXT, "latin-1")
    source = {"kind": "csv", "path": path, "target": "colour", "features": ["size"]}
    splits = load_dataset({"source": {**source, "encoding": "latin-1"}})
    assert splits.info.classes == ["grün", "rot"]
    with pytest.raises(DataError) as err:
        load_dataset({"source": source})
    assert err.value.row == 2 and "latin-1" in str(err.value)


def test_a_mixed_encoding_csv_is_named_by_row_and_byte_with_the_bytes_escaped(tmp_path: Path) -> None:
    # UTF-8 throughout but one row saved as Latin-1: read as Latin-1 the rest would be "CafÃ©".
    path = tmp_path / "mixed.csv"
    path.write_bytes("name,city,y\nAnne,Café,1\n".encode() + b"Bob,Z\xe9rich,0\n" + "Cara,Köln,1\n".encode())
    for read in (
        lambda: inspect_upload(str(path), "csv", {"target": "city", "task": "regression"}),
        lambda: load_dataset({"source": {"kind": "csv", "path": str(path), "target": "y"}}),
    ):
        with pytest.raises(DataError) as err:
            read()
        message = str(err.value)
        assert err.value.row == 3 and "byte 30" in message and "b'\\xe9'" in message
        assert "UTF-8" in message and "mixes encodings" in message
        assert "Ã" not in message and "\ufffd" not in message


def test_a_file_that_is_not_utf8_names_the_byte_it_stopped_at(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes(b"a,kind\n1,b\n" + "2,caf\xe9\n".encode("latin-1"))
    with pytest.raises(DataError) as err:
        load_dataset({"source": {"kind": "csv", "path": str(path), "target": "kind", "encoding": "utf-8"}})
    assert err.value.row == 3 and "b'\\xe9' at byte 16" in str(err.value)


def test_quoted_cells_with_delimiters_and_newlines(tmp_path: Path) -> None:
    text = 'a,b,label\n1,"x, y",p\n2,"two\nlines",q\n3,plain,p\n4,\'q\',q\n'
    summary = inspect_upload(_write(tmp_path, text, "utf-8"), "csv")
    assert summary["rows"]["total"] == 4
    assert summary["preview"]["rows"][1] == [2.0, "two\nlines", "q"]


def test_a_ragged_row_after_a_blank_line_is_named_as_the_spreadsheet_numbers_it(
    tmp_path: Path,
) -> None:
    text = "a,b,c\n1,2,3\n\n4,5\n6,7,8\n"
    with pytest.raises(DataError) as err:
        inspect_upload(_write(tmp_path, text, "utf-8"), "csv")
    assert str(err.value) == "row 4: has 2 fields, expected 3 (as in the header)"


def test_blank_and_whitespace_lines_are_skipped(tmp_path: Path) -> None:
    text = "a,b,label\n1,2,p\n\n   \n3,4,q\n"
    assert inspect_upload(_write(tmp_path, text, "utf-8"), "csv")["rows"]["total"] == 2


def test_the_stored_table_stands_in_for_the_csv(tmp_path: Path) -> None:
    csv_path = _write(tmp_path, TEXT, "utf-16")
    table = tmp_path / "table.arrow"
    seen: list[float] = []
    summary = inspect_upload(
        csv_path, "csv", {"target": "colour"}, table_path=table, progress=seen.append
    )
    assert table.is_file() and seen[-1] == 1.0
    fmt = table_format(table)
    assert fmt is not None and fmt.encoding == "utf-16" and fmt.delimiter == ";"
    source = {
        "kind": "csv",
        "path": csv_path,
        "target": "colour",
        "table": str(table),
        "encoding": "utf-16",
    }
    # Without the original the table is all there is: training reads it, never the CSV.
    size = os.path.getsize(csv_path)
    os.rename(csv_path, csv_path + ".gone")
    splits = load_dataset({"source": source})
    assert splits.info.rows["total"] == summary["rows"]["total"] == 12
    os.rename(csv_path + ".gone", csv_path)
    # A table of another file (a different size) is not trusted: the CSV is parsed.
    with open(csv_path, "ab") as f:
        f.write("\nmore;1;rot".encode("utf-16-le"))
    assert os.path.getsize(csv_path) != size
    assert load_dataset({"source": source}).info.rows["total"] == 13


def test_build_refuses_too_many_rows_and_leaves_no_table(tmp_path: Path) -> None:
    csv_path = _write(tmp_path, TEXT, "utf-8")
    dest = tmp_path / "table.arrow"
    with pytest.raises(DataError) as err:
        build_csv_table(csv_path, dest, DataLimits(max_rows=5))
    assert err.value.row == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]
