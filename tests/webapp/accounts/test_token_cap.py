"""A user holds at most NETLOOM_MAX_TOKENS_PER_USER live API tokens; the refusal says how to revoke one."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.accounts.models import ApiToken

pytestmark = pytest.mark.django_db


def test_past_the_cap_token_creation_is_a_409_that_names_the_limit_and_how_to_revoke(
    api_a: Any, user_a: Any, settings: Any
) -> None:
    settings.NETLOOM_MAX_TOKENS_PER_USER = 3
    live_before = ApiToken.objects.filter(user=user_a, revoked_at__isnull=True).count()
    made = []
    for _ in range(3 - live_before):
        answer = api_a.post("/api/auth/tokens/", {"name": "ci"}, format="json")
        assert answer.status_code == 201, answer.content
        made.append(answer.json()["id"])
    refused = api_a.post("/api/auth/tokens/", {"name": "one too many"}, format="json")
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "too_many_tokens" and error["limit"] == 3
    assert "3" in error["message"] and "DELETE /api/auth/tokens/" in error["message"]
    # Signing in with a password is refused the same way (it creates a token too).
    user_a.set_password("pw-for-the-cap")
    user_a.save()
    signin = api_a.post("/api/auth/token/", {"username": user_a.username, "password": "pw-for-the-cap"}, format="json")
    assert signin.status_code == 409 and signin.json()["error"]["code"] == "too_many_tokens"
    # Revoking one frees its place.
    token_id = made[0] if made else ApiToken.objects.filter(user=user_a).first().pk
    assert api_a.delete(f"/api/auth/tokens/{token_id}/").status_code == 204
    assert api_a.post("/api/auth/tokens/", {"name": "again"}, format="json").status_code == 201


def test_expired_and_revoked_tokens_do_not_count(user_a: Any, settings: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from webapp.accounts.services.tokens import token_create, token_revoke

    settings.NETLOOM_MAX_TOKENS_PER_USER = 1
    ApiToken.objects.filter(user=user_a).delete()
    first, _ = token_create(user=user_a)
    token_revoke(token=first)
    second, _ = token_create(user=user_a, expires_in_days=1)
    ApiToken.objects.filter(pk=second.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    token_create(user=user_a)  # the one live token
    from webapp.errors import Conflict

    with pytest.raises(Conflict):
        token_create(user=user_a)
