"""Fixtures for the webapp tests: users in two teams, token-authenticated clients, specs, data.

Reusable by every webapp suite (runs, e2e helpers):
    make_user(username, team=None, role="admin") -> User
    client_for(user) -> APIClient with `Authorization: Bearer <real token>`
    team_a, user_a (admin of A), viewer_a (viewer of A), team_b, user_b (admin of B)
    api_a, api_viewer_a, api_b (clients), anon (no credentials)
    valid_spec, broken_spec (graph spec dicts), iris_csv_bytes (CSV with a header)
    dataset_a (built-in iris, ready), graph_a (one valid revision), revision_a
"""

from __future__ import annotations

import io
import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from webapp.accounts.models import Role
from webapp.accounts.services.memberships import membership_add
from webapp.accounts.services.teams import team_create
from webapp.accounts.services.tokens import token_create
from webapp.settings import caches


@pytest.fixture(autouse=True)
def _isolated_storage(settings: Any, tmp_path: Any) -> None:
    """Each test gets its own MEDIA_ROOT and an in-process channel layer."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.NETLOOM_DATASET_PROCESSING = "sync"
    # The real Redis cache under a prefix of this test's own: nothing kept leaks between tests.
    settings.CACHES = caches("redis", settings.REDIS_URL, f"test-{uuid.uuid4().hex}")
    # Password hashing is deliberately slow; tests make many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def make_user(django_user_model: Any) -> Any:
    """Factory: a user with password "pw", optionally in a team with a role."""

    def make(username: str, team: Any = None, role: str = Role.ADMIN) -> Any:
        user = django_user_model.objects.create_user(username=username, password="pw")
        if team is not None:
            membership_add(team=team, user=user, role=role)
        return user

    return make


@pytest.fixture
def client_for() -> Any:
    """Factory: an API client that sends a real API token for `user`."""

    def make(user: Any) -> APIClient:
        _, raw = token_create(user=user, name="test")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    return make


@pytest.fixture
def team_a(db: Any) -> Any:
    return team_create(name="Team A")


@pytest.fixture
def team_b(db: Any) -> Any:
    return team_create(name="Team B")


@pytest.fixture
def user_a(make_user: Any, team_a: Any) -> Any:
    return make_user("alice", team_a, Role.ADMIN)


@pytest.fixture
def viewer_a(make_user: Any, team_a: Any) -> Any:
    return make_user("victor", team_a, Role.VIEWER)


@pytest.fixture
def user_b(make_user: Any, team_b: Any) -> Any:
    return make_user("bob", team_b, Role.ADMIN)


@pytest.fixture
def api_a(client_for: Any, user_a: Any) -> APIClient:
    return client_for(user_a)


@pytest.fixture
def api_viewer_a(client_for: Any, viewer_a: Any) -> APIClient:
    return client_for(viewer_a)


@pytest.fixture
def api_b(client_for: Any, user_b: Any) -> APIClient:
    return client_for(user_b)


@pytest.fixture
def anon(db: Any) -> APIClient:
    return APIClient()


@pytest.fixture
def valid_spec() -> dict[str, Any]:
    """A small valid MLP for 4 features and 3 classes (iris-shaped)."""
    return {
        "version": 1,
        "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
        "nodes": [
            {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
            {"id": "act", "op": "ReLU", "inputs": ["fc1"]},
            {"id": "fc2", "op": "Linear", "params": {"out_features": 3}, "inputs": ["act"]},
        ],
        "outputs": ["fc2"],
        "layout": {"fc1": {"x": 100, "y": 40}},
    }


@pytest.fixture
def broken_spec(valid_spec: dict[str, Any]) -> dict[str, Any]:
    """valid_spec with a node whose input does not exist (error keyed to node "fc2")."""
    spec = {**valid_spec, "nodes": [dict(n) for n in valid_spec["nodes"]]}
    spec["nodes"][2]["inputs"] = ["nowhere"]
    return spec


def iris_like_csv(rows: int = 30, bad_row: int | None = None) -> bytes:
    """An iris-shaped CSV (4 numeric features, 3 species); `bad_row` (1-based data row) gets text."""
    out = io.StringIO()
    out.write("sepal_length,sepal_width,petal_length,petal_width,species\n")
    species = ["setosa", "versicolor", "virginica"]
    for i in range(rows):
        k = i % 3
        values = [
            5.0 + k + (i % 5) * 0.1,
            3.0 + (i % 4) * 0.1,
            1.4 + 2 * k + (i % 3) * 0.1,
            0.2 + k * 0.8,
        ]
        cells = [f"{v:.1f}" for v in values]
        if bad_row is not None and i + 1 == bad_row:
            cells[1] = "abc"
        out.write(",".join(cells + [species[k]]) + "\n")
    return out.getvalue().encode()


@pytest.fixture
def iris_csv_bytes() -> bytes:
    return iris_like_csv()


@pytest.fixture
def dataset_a(team_a: Any, user_a: Any) -> Any:
    from webapp.datasets.services import dataset_builtin_create

    return dataset_builtin_create(
        team=team_a, name="iris", builtin="iris", options={}, created_by=user_a
    )


@pytest.fixture
def graph_a(team_a: Any, user_a: Any, valid_spec: dict[str, Any]) -> Any:
    from webapp.graphs.services import graph_create

    return graph_create(team=team_a, name="mlp", spec=valid_spec, created_by=user_a)


@pytest.fixture
def revision_a(graph_a: Any) -> Any:
    return graph_a.revisions.get(number=1)
