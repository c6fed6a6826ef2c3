"""The model server hears of an alias move on Redis at once (the poll is the fallback)."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
import redis


@pytest.mark.django_db(transaction=True)
def test_an_alias_move_announced_after_commit_wakes_the_server(settings: Any) -> None:
    from serving.registry_link import RegistryDirectory
    from webapp.registry.services import _announce_aliases

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1).ping()
    except redis.RedisError:
        pytest.skip("needs Redis")
    settings.NETLOOM_INSTANCE = f"nltest-serving-{uuid.uuid4().hex[:8]}"
    directory = RegistryDirectory()
    assert directory.wait_for_change(0.2) is False  # subscribed; nothing moved
    threading.Timer(0.3, lambda: _announce_aliases(7)).start()  # no transaction: sent at once
    started = time.monotonic()
    assert directory.wait_for_change(10.0) is True
    assert time.monotonic() - started < 10.0
    assert directory.wait_for_change(0.2) is False


MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


@pytest.fixture
def two_teams(django_user_model: Any) -> dict[str, Any]:
    from webapp.accounts.services.memberships import membership_add
    from webapp.accounts.services.teams import team_create

    user = django_user_model.objects.create_user(username="ada", password="old-password")
    first, second = team_create(name="First", creator=user), team_create(name="Second")
    membership_add(team=second, user=user, role="viewer")
    return {"user": user, "first": first.pk, "second": second.pk}


@pytest.mark.django_db
def test_a_signed_in_session_names_its_user_and_all_their_teams(client: Any, two_teams: dict[str, Any]) -> None:
    """The browser's session, as django.contrib.auth reads it; a stale one is refused, unchanged."""
    from serving.registry_link import RegistryDirectory

    directory, user = RegistryDirectory(), two_teams["user"]
    client.force_login(user, backend=MODEL_BACKEND)  # as the login view signs in
    key = client.session.session_key
    identity = directory.authenticate_session(key)
    assert identity is not None and identity.user_id == user.pk
    assert identity.team_ids == {two_teams["first"], two_teams["second"]}
    assert directory.authenticate_session("no-such-session-key") is None

    user.is_active = False
    user.save()
    assert directory.authenticate_session(key) is None
    user.is_active = True
    user.save()
    assert directory.authenticate_session(key) is not None

    # A password change ends the other sessions (their hash no longer matches) ...
    user.set_password("new-password")
    user.save()
    assert directory.authenticate_session(key) is None
    # ... and the model server leaves the stale session for the web app to flush.
    from django.contrib.sessions.backends.db import SessionStore

    assert SessionStore(key).exists(key)

    client.force_login(user, backend=MODEL_BACKEND)
    fresh = client.session.session_key
    assert directory.authenticate_session(fresh) is not None
    client.logout()
    assert directory.authenticate_session(fresh) is None


@pytest.mark.django_db
def test_a_read_token_may_infer_and_a_team_bound_token_sees_its_team_only(two_teams: dict[str, Any]) -> None:
    """Every model server route only reads: a read-scope token calls it; a bound token, one team."""
    from serving.registry_link import RegistryDirectory
    from webapp.accounts.services.tokens import token_create

    directory, user = RegistryDirectory(), two_teams["user"]
    _, read = token_create(user=user, name="read", scope="read")
    _, bound = token_create(user=user, name="bound", scope="read", team=two_teams["second"])
    _, write = token_create(user=user, name="write")
    read_identity, bound_identity = directory.authenticate(read), directory.authenticate(bound)
    assert read_identity is not None and read_identity.team_ids == {two_teams["first"], two_teams["second"]}
    assert bound_identity is not None and bound_identity.team_ids == {two_teams["second"]}
    assert directory.authenticate(write).team_ids == read_identity.team_ids  # type: ignore[union-attr]
    assert directory.authenticate("nl_not-a-token") is None


@pytest.mark.django_db(transaction=True)
def test_a_revoked_token_is_announced_to_the_server_after_commit(settings: Any, django_user_model: Any) -> None:
    """token_revoke publishes the user's id (webapp.accounts.events.access_changed); the server's
    watcher hands it on, so the server drops its kept check of the user's credentials."""
    from serving.registry_link import RegistryDirectory
    from webapp.accounts.services.tokens import token_create, token_revoke

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1).ping()
    except redis.RedisError:
        pytest.skip("needs Redis")
    settings.NETLOOM_INSTANCE = f"nltest-serving-{uuid.uuid4().hex[:8]}"
    user = django_user_model.objects.create_user(username="ada", password="pw")
    token, _ = token_create(user=user, name="script")
    heard: list[int] = []
    changed, stop = threading.Event(), threading.Event()
    watcher = threading.Thread(target=RegistryDirectory().watch_access,
                               args=(lambda uid: (heard.append(uid), changed.set()), stop), daemon=True)
    watcher.start()
    try:
        time.sleep(0.5)  # subscribed (a message published before the subscription is lost)
        token_revoke(token=token, actor=user)
        assert changed.wait(10.0), "the revocation was not announced"
        assert heard == [user.pk]
    finally:
        stop.set()
        watcher.join(5)


@pytest.mark.django_db
def test_the_server_records_a_tokens_use_as_the_api_does(django_user_model: Any) -> None:
    """authenticate() sets last_used_at, rewritten at most once a minute (token_touch)."""
    from datetime import timedelta

    from serving.registry_link import RegistryDirectory
    from webapp.accounts.models import ApiToken
    from webapp.accounts.services.tokens import token_create

    user = django_user_model.objects.create_user(username="ada", password="pw")
    token, raw = token_create(user=user, name="script")
    directory = RegistryDirectory()
    assert directory.authenticate(raw) is not None
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    assert directory.authenticate(raw) is not None
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first  # within the minute: no write
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    from webapp.accounts.services.tokens import token_forget

    token_forget(digests=[token.token_hash])  # the kept lookup says the old time, as after a minute
    assert directory.authenticate(raw) is not None
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first - timedelta(minutes=2)
