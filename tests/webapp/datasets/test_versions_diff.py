"""The diff of two dataset versions: five rows fewer says five rows removed; a key column finds
changed rows; columns added/retyped, statistics and class balance before/after; image archives
by file name and bytes."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.webapp.conftest import iris_like_csv

pytestmark = pytest.mark.django_db


def _dataset(api: Any, team: Any, content: bytes, kind: str = "csv", name: str = "t.csv", **options: Any) -> int:
    made = api.post("/api/datasets/upload/", {"team": team.id, "kind": kind, "options": json.dumps(options),
                                              "file": SimpleUploadedFile(name, content)}, format="multipart")
    assert made.status_code == 201, made.json()
    return made.json()["id"]


def _version(api: Any, dataset_id: int, content: bytes, name: str = "t.csv") -> None:
    made = api.post(f"/api/datasets/{dataset_id}/versions/", {"file": SimpleUploadedFile(name, content)},
                    format="multipart")
    assert made.status_code == 201, made.json()


def test_five_rows_fewer_is_five_rows_removed(api_a: Any, team_a: Any) -> None:
    dataset_id = _dataset(api_a, team_a, iris_like_csv(60), target="species")
    _version(api_a, dataset_id, iris_like_csv(55))
    diff = api_a.get(f"/api/datasets/{dataset_id}/versions/diff/?from=1&to=2")
    assert diff.status_code == 200, diff.json()
    body = diff.json()
    assert body["rows"]["before"] == 60 and body["rows"]["after"] == 55
    assert body["rows"]["removed"] == 5 and body["rows"]["added"] == 0
    assert len(body["examples"]["removed"]) == 5
    assert body["columns"] == {"added": [], "removed": [], "retyped": []}
    assert body["class_balance"]["column"] == "species"
    assert sum(body["class_balance"]["before"].values()) == 60
    assert sum(body["class_balance"]["after"].values()) == 55
    stats = body["statistics"]["sepal_length"]
    assert stats["before"]["count"] == 60 and stats["after"]["count"] == 55
    assert stats["before"]["type"] == "numeric" and stats["before"]["std"] > 0


def _people(rows: list[tuple[int, str, str]], extra: bool = False, grades: bool = False) -> bytes:
    lines = ["id,age,city,grade,label" + (",score" if extra else "")]
    for ident, age, city in rows:
        grade = "abc"[ident % 3] if grades else str(ident % 3)
        lines.append(f"{ident},{age},{city},{grade},{ident % 2}" + (",1.5" if extra else ""))
    return ("\n".join(lines) + "\n").encode()


def test_a_key_column_finds_changed_rows_and_columns(api_a: Any, team_a: Any) -> None:
    before = [(i, str(20 + i), "oslo") for i in range(1, 41)]
    after = [(i, str(20 + i) if i != 7 else "99", "rome" if i == 3 else "oslo") for i in range(2, 44)]
    dataset_id = _dataset(api_a, team_a, _people(before), target="label")
    _version(api_a, dataset_id, _people(after, extra=True))
    body = api_a.get(f"/api/datasets/{dataset_id}/versions/diff/?from=1&to=2&key=id").json()
    # Row 1 gone; 41..43 new; 3 and 7 changed; a column added is no row changed.
    assert body["rows"]["removed"] == 1 and body["rows"]["added"] == 3 and body["rows"]["changed"] == 2
    assert body["examples"]["removed"][0]["id"] == "1"
    assert body["columns"]["added"] == ["score"]
    changed = {row["key"]: row for row in body["examples"]["changed"]}
    assert changed["3"]["columns"] == ["city"] and changed["3"]["before"]["city"] == "oslo"
    assert changed["3"]["after"]["city"] == "rome"
    assert changed["7"]["columns"] == ["age"] and changed["7"]["after"]["age"] == "99"
    assert body["statistics"]["age"]["after"]["mean"] > body["statistics"]["age"]["before"]["mean"]
    # By content, each changed row is one removed and one added.
    plain = api_a.get(f"/api/datasets/{dataset_id}/versions/diff/?from=1&to=2").json()
    assert plain["rows"]["removed"] == 40 and plain["rows"]["added"] == 42
    _version(api_a, dataset_id, _people(before, grades=True))
    retyped = api_a.get(f"/api/datasets/{dataset_id}/versions/diff/?from=1&to=3").json()
    assert retyped["columns"]["retyped"] == [{"column": "grade", "before": "numeric", "after": "text"}]
    assert retyped["statistics"]["grade"]["after"]["distinct"] == 3
    missing = api_a.get(f"/api/datasets/{dataset_id}/versions/diff/?from=1&to=2&key=nope")
    assert missing.status_code == 400 and "key" in missing.json()["error"]["fields"]
    assert api_a.get(f"/api/datasets/{dataset_id}/versions/diff/?from=1").status_code == 400
    assert api_a.get(f"/api/datasets/{dataset_id}/versions/diff/?from=1&to=9").status_code == 404


def test_examples_are_capped_and_counts_exact(api_a: Any, team_a: Any) -> None:
    dataset_id = _dataset(api_a, team_a, iris_like_csv(30), target="species")
    _version(api_a, dataset_id, iris_like_csv(90))
    body = api_a.get(f"/api/datasets/{dataset_id}/versions/diff/?from=1&to=2").json()
    assert body["rows"]["added"] == 60 and len(body["examples"]["added"]) == 20


def _png(shade: int) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("L", (4, 4), color=shade).save(out, format="PNG")
    return out.getvalue()


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_image_archives_differ_by_file_name_and_bytes(api_a: Any, team_a: Any) -> None:
    first = {f"{c}/{i}.png": _png(10 * i + (0 if c == "cat" else 100)) for c in ("cat", "dog") for i in range(3)}
    second = {**{k: v for k, v in first.items() if k != "cat/0.png"}, "dog/1.png": _png(250), "dog/9.png": _png(7)}
    dataset_id = _dataset(api_a, team_a, _zip(first), kind="images", name="pets.zip")
    _version(api_a, dataset_id, _zip(second), name="pets.zip")
    body = api_a.get(f"/api/datasets/{dataset_id}/versions/diff/?from=1&to=2").json()
    assert body["kind"] == "archive"
    assert body["examples"] == {"added": ["dog/9.png"], "removed": ["cat/0.png"], "changed": ["dog/1.png"]}
    assert body["class_balance"]["before"] == {"cat": 3, "dog": 3}
    assert body["class_balance"]["after"] == {"dog": 4, "cat": 2}
