"""webapp/runs/detail.py on PostgreSQL: a token's read of a kept run detail is kept per process and
asked again only as the run's version and the read generation (ReadGeneration, moved by the
triggers of migration runs/0008); every change that could change the answer is seen by the next read.

Each answer is checked against the uncached path (the same request with `?team=`) or against the
refusal Django's own authentication gives.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from webapp.accounts.models import ApiToken, Role
from webapp.accounts.services import membership_add, membership_remove
from webapp.runs import detail
from webapp.runs.models import ReadGeneration, Run, RunStatus
from webapp.runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def finished(user_a: Any, team_a: Any, revision_a: Any, dataset_a: Any) -> Run:
    if connection.vendor != "postgresql":
        pytest.skip("the kept token reads and their triggers are PostgreSQL's (the PostgreSQL pass runs this)")
    detail._documents.clear()
    detail._token_reads.clear()
    run = run_create(user=user_a, team=team_a, graph_revision=revision_a, dataset=dataset_a, config={"epochs": 2})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    return run


def executions() -> dict[str, int]:
    """How often this connection ran each statement prepared under prepared.py's names, by what
    it reads: "token" (the whole statement), "version" (the run's version and the generation)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements "
                       "WHERE name LIKE 'netloom_%%'")
        rows = cursor.fetchall()
    found = {"token": 0, "version": 0}
    for statement, count in rows:
        found["token" if "token_hash" in statement else "version" if "xmin" in statement else "other"] = count
    return found


def generation() -> int | None:
    return ReadGeneration.objects.filter(pk=1).values_list("value", flat=True).first()


def test_a_kept_read_asks_only_the_runs_version_and_answers_as_the_uncached_path(api_a, finished):
    url = f"/api/runs/{finished.pk}/"
    fresh = api_a.get(f"{url}?team={finished.team_id}").json()
    api_a.get(url)  # DRF builds and keeps the document
    api_a.get(url)  # the whole statement: the token's read is kept
    before = executions()
    answers = [api_a.get(url) for _ in range(5)]
    after = executions()
    assert all(answer.status_code == 200 and answer.json() == fresh for answer in answers)
    assert after["token"] == before["token"], "the whole statement ran again for a kept read"
    assert after["version"] == before["version"] + 5


def test_only_changes_that_can_change_a_read_move_the_generation(user_a, make_user, team_a, graph_a, dataset_a,
                                                                finished):
    member = make_user("mo", team_a, Role.VIEWER)
    token = ApiToken.objects.filter(user=user_a).first() or ApiToken.objects.create(user=user_a, token_hash="x" * 64)
    moves = [
        ("a token revoked", lambda: ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())),
        ("a user disabled", lambda: get_user_model().objects.filter(pk=user_a.pk).update(is_active=False)),
        ("a user renamed", lambda: get_user_model().objects.filter(pk=user_a.pk).update(username="ann2")),
        ("a membership removed", lambda: membership_remove(team=team_a, user=member)),
        ("a membership added", lambda: membership_add(team=team_a, user=member, role=Role.VIEWER)),
        ("a graph renamed", lambda: type(graph_a).objects.filter(pk=graph_a.pk).update(name="g2")),
        ("a dataset renamed", lambda: type(dataset_a).objects.filter(pk=dataset_a.pk).update(name="d2")),
    ]
    stays = [
        ("a token's use recorded", lambda: ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())),
        ("a sign-in", lambda: get_user_model().objects.filter(pk=user_a.pk).update(last_login=timezone.now())),
        ("a graph saved under its name", lambda: type(graph_a).objects.filter(pk=graph_a.pk).update(
            updated_at=timezone.now())),
        ("a run's row (its own version says it)", lambda: Run.objects.filter(pk=finished.pk).update(name="x")),
    ]
    for what, change in moves:
        was = generation()
        change()
        assert generation() not in (None, was), what
    for what, change in stays:
        was = generation()
        change()
        assert generation() == was, what


def test_the_creators_new_name_is_in_the_next_read(api_a, user_a, finished):
    url = f"/api/runs/{finished.pk}/"
    api_a.get(url)
    assert api_a.get(url).json()["created_by"] == user_a.username
    get_user_model().objects.filter(pk=user_a.pk).update(username="renamed")
    assert api_a.get(url).json()["created_by"] == "renamed"
    assert api_a.get(url).json() == api_a.get(f"{url}?team={finished.team_id}").json()


def test_two_changes_in_one_transaction_with_a_read_between_are_both_seen(client_for, make_user, team_a, finished):
    """The generation is a value it never had at each change, not the writing transaction's id: a
    read kept between two changes of one transaction is not taken for current after the second."""
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


def test_a_token_that_expires_while_its_read_is_kept_is_refused(client_for, make_user, team_a, finished, monkeypatch):
    """Expiry is a time, not a write: the kept read checks it on every use."""
    user = make_user("eve", team_a)
    api = client_for(user)
    ApiToken.objects.filter(user=user).update(expires_at=timezone.now() + timedelta(minutes=5))
    url = f"/api/runs/{finished.pk}/"
    api.get(url)
    assert api.get(url).status_code == 200
    assert any(key[1] == finished.pk for key in detail._token_reads), "the token's read is kept"
    later = timezone.now() + timedelta(minutes=6)
    monkeypatch.setattr(timezone, "now", lambda: later)
    refused = api.get(url)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "authentication_failed"
