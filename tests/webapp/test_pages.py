"""The index page, the browser app under /app/ (deep links included) and the API docs page."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def built_app(settings, tmp_path):
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text(
        '<div id="root"></div><script src="/app/assets/app-abc123.js"></script>'
    )
    (dist / "assets" / "app-abc123.js").write_text("console.log('netloom')")
    settings.FRONTEND_DIST = dist
    return dist


def test_index_links_to_the_app_the_api_docs_and_the_admin():
    html = Client().get("/").content.decode()
    for link in ('href="/app/"', 'href="/api/docs/"', 'href="/admin/"'):
        assert link in html


def test_app_shell_serves_index_for_deep_links_and_assets_as_files(built_app):
    client = Client()
    for path in ("/app/", "/app/graphs/12", "/app/runs/3/explain"):
        response = client.get(path)
        assert response.status_code == 200
        assert b'<div id="root">' in b"".join(response.streaming_content)
    asset = client.get("/app/assets/app-abc123.js")
    assert b"".join(asset.streaming_content) == b"console.log('netloom')"
    assert "immutable" in asset["Cache-Control"]
    assert client.get("/app/assets/missing.js").status_code == 404
    assert client.get("/app/../settings.py").status_code == 404


def test_app_without_a_build_says_how_to_build_it(settings, tmp_path):
    settings.FRONTEND_DIST = tmp_path / "nothing"
    response = Client().get("/app/")
    assert response.status_code == 503 and b"make frontend" in response.content


def test_api_docs_is_swagger_ui_served_from_our_own_static_files():
    docs = Client().get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    # Swagger UI's script and style come from our own static files, never from a CDN.
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any("swagger-ui-dist/swagger-ui-bundle.js" in a for a in assets), assets
    assert not [a for a in assets if a.startswith(("http:", "https:", "//"))], assets
    assert all(finders.find(a.removeprefix(settings.STATIC_URL)) for a in assets if a.startswith(settings.STATIC_URL))
    assert "/api/schema/" in html
    schema = Client().get("/api/schema/?format=json")
    assert schema.status_code == 200 and "/api/datasets/upload/" in schema.json()["paths"]
