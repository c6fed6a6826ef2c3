"""An image archive over the service's work limits (NETLOOM_MAX_ARCHIVE_ENTRIES,
NETLOOM_MAX_IMAGE_PIXELS, NETLOOM_MAX_ARCHIVE_PIXELS) answers 400 `invalid_dataset` naming the
limit and the entry, keeps no file, and decodes nothing: the PNGs here are cut short after their
header, so a decode would have failed with "not a readable image" instead."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from tests.webapp.datasets.test_api import stored_files
from webapp.datasets.models import Dataset, DatasetStatus

pytestmark = pytest.mark.django_db


def header_only_png(width: int, height: int) -> bytes:
    """A PNG whose header says width x height, cut short just after its first IDAT chunk starts."""
    buf = io.BytesIO()
    Image.new("1", (width, height)).save(buf, format="PNG")
    data = buf.getvalue()
    return data[: data.index(b"IDAT") + 4 + 16]


def archive(picture: bytes, count: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for i in range(count):
            zf.writestr(f"{'ab'[i % 2]}/{i:03d}.png", picture)
    return out.getvalue()


def refusal(api: Any, team: Any, content: bytes, settings: Any) -> dict[str, Any]:
    response = api.post("/api/datasets/upload/", {
        "team": team.id, "kind": "images", "options": json.dumps({}),
        "file": SimpleUploadedFile("pictures.zip", content),
    }, format="multipart")  # fmt: skip
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_dataset"
    dataset = Dataset.objects.get(pk=error["dataset"]["id"])
    assert dataset.status == DatasetStatus.FAILED and dataset.file == ""
    assert stored_files(settings) == []
    return error


def test_more_entries_than_the_limit_are_refused_naming_it(api_a, team_a, settings) -> None:
    settings.NETLOOM_MAX_ARCHIVE_ENTRIES = 50
    error = refusal(api_a, team_a, archive(header_only_png(8, 8), 51), settings)
    assert "the archive has 51 entries; the limit is 50 entries per archive" in error["message"]


def test_a_picture_over_the_pixel_limit_is_refused_naming_the_entry(api_a, team_a, settings) -> None:
    settings.NETLOOM_MAX_IMAGE_PIXELS = 100 * 100
    content = archive(header_only_png(100, 100), 4)
    with zipfile.ZipFile(buf := io.BytesIO(content), "a") as zf:
        zf.writestr("b/big.png", header_only_png(101, 100))
    error = refusal(api_a, team_a, buf.getvalue(), settings)
    assert error["detail"]["entry"] == "b/big.png"
    assert "image is 101x100 pixels; the limit per image is 10000 pixels" in error["message"]


def test_sixty_pictures_of_4096_square_are_over_the_default_archive_pixels(
    api_a, team_a, settings
) -> None:
    """The campaign's 300 PNGs of 4096 x 4096 held a worker for 163 s; by default an archive may
    hold 1 Gpixel, and 60 such pictures are 1.007 Gpixel."""
    error = refusal(api_a, team_a, archive(header_only_png(4096, 4096), 60), settings)
    assert error["detail"]["entry"] == "b/059.png"
    assert "more than 1000000000 pixels together (the limit per archive)" in error["message"]
