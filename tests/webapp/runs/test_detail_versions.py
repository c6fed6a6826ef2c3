"""What moves a run's version (the detail's cache key), and the token lookups kept beside it:
every change a reader could see is in the next answer, on SQLite and PostgreSQL alike.

Each answer is checked against the uncached path (the same request with `?team=`) or against the
refusal Django's own authentication gives.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from webapp.accounts.models import ApiToken, Role
from webapp.accounts.services.memberships import membership_add, membership_remove
from webapp.accounts.services.tokens import token_touch
from webapp.datasets.services import dataset_rename
from webapp.graphs.services import graph_rename
from webapp.runs.models import Run, RunStatus
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def finished(user_a: Any, team_a: Any, revision_a: Any, dataset_a: Any) -> Run:
    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    return run


def version(run: Run) -> int:
    return Run.objects.values_list("version", flat=True).get(pk=run.pk)


def test_every_change_the_detail_shows_moves_the_version_and_nothing_else_does(user_a, graph_a, dataset_a,
                                                                              finished):
    token = ApiToken.objects.filter(user=user_a).first() or ApiToken.objects.create(user=user_a, token_hash="x" * 64)
    moves = [
        ("the run's row", lambda: Run.objects.filter(pk=finished.pk).update(name="x")),
        ("the run saved", lambda: Run.objects.get(pk=finished.pk).save(update_fields=["notes"])),
        ("its graph renamed", lambda: graph_rename(graph=graph_a, name="g2")),
        ("its dataset renamed", lambda: dataset_rename(dataset=dataset_a, name="d2")),
        ("its creator renamed", lambda: (setattr(user_a, "username", "ann2"), user_a.save())),
    ]
    stays = [
        ("a token's use recorded", lambda: token_touch(token=ApiToken.objects.get(pk=token.pk))),
        ("a sign-in", lambda: (setattr(user_a, "last_login", timezone.now()), user_a.save(update_fields=["last_login"]))),
        ("a dataset's progress saved", lambda: dataset_a.save(update_fields=["progress"])),
    ]
    for what, change in moves:
        was = version(finished)
        change()
        assert version(finished) > was, what
    for what, change in stays:
        was = version(finished)
        change()
        assert version(finished) == was, what


def test_the_creators_new_name_is_in_the_next_read(api_a, user_a, finished):
    url = f"/api/runs/{finished.pk}/"
    api_a.get(url)
    assert api_a.get(url).json()["created_by"] == user_a.username
    user_a.username = "renamed"
    user_a.save()
    assert api_a.get(url).json()["created_by"] == "renamed"
    assert api_a.get(url).json() == api_a.get(f"{url}?team={finished.team_id}").json()


def test_a_revoke_over_rest_refuses_the_very_next_request(api_a, finished):
    url = f"/api/runs/{finished.pk}/"
    assert api_a.get(url).status_code == 200 and api_a.get(url).status_code == 200  # the token's lookup kept
    token_id = api_a.get("/api/auth/tokens/").json()
    token_id = (token_id["results"] if isinstance(token_id, dict) else token_id)[0]["id"]
    assert api_a.delete(f"/api/auth/tokens/{token_id}/").status_code == 204
    refused = api_a.get(url)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "token_revoked"


def test_two_changes_in_one_transaction_with_a_read_between_are_both_seen(client_for, make_user, team_a, finished):
    viewer = make_user("vera", team_a)
    api = client_for(viewer)
    url = f"/api/runs/{finished.pk}/"
    with transaction.atomic():
        membership_remove(team=team_a, user=viewer)
        membership_add(team=team_a, user=viewer, role=Role.VIEWER)
        assert api.get(url).status_code == 200
        assert api.get(url).status_code == 200  # kept inside the transaction
        membership_remove(team=team_a, user=viewer)
        assert api.get(url).status_code == 404
    assert api.get(url).status_code == 404


def test_a_token_that_expires_while_its_lookup_is_kept_is_refused(client_for, make_user, team_a, finished,
                                                                  monkeypatch):
    """Expiry is a time, not a write: the kept lookup checks it on every use."""
    user = make_user("eve", team_a)
    api = client_for(user)
    ApiToken.objects.filter(user=user).update(expires_at=timezone.now() + timedelta(minutes=5))
    url = f"/api/runs/{finished.pk}/"
    assert api.get(url).status_code == 200
    assert api.get(url).status_code == 200
    later = timezone.now() + timedelta(minutes=6)
    monkeypatch.setattr(timezone, "now", lambda: later)
    refused = api.get(url)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "token_expired"


def test_a_disabled_user_is_refused_on_the_next_request(api_a, user_a, finished):
    url = f"/api/runs/{finished.pk}/"
    assert api_a.get(url).status_code == 200
    user = get_user_model().objects.get(pk=user_a.pk)
    user.is_active = False
    user.save()
    assert api_a.get(url).status_code == 401
