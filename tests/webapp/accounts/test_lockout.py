"""Sign-in lockout: too many wrong passwords from one address answer 429 until the window passes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.utils import timezone
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def _token(client: APIClient, password: str, address: str = "10.0.0.7") -> object:
    return client.post(
        "/api/auth/token/",
        {"username": "alice", "password": password},
        format="json",
        REMOTE_ADDR=address,
    )


def test_twenty_wrong_passwords_from_one_address_are_followed_by_429s(user_a):
    client = APIClient()
    answers = [_token(client, "wrong") for _ in range(20)]
    codes = [a.status_code for a in answers]
    limit = settings.AXES_FAILURE_LIMIT
    assert limit < 20
    # The failures up to the limit say what is wrong; from then on the address is locked out.
    assert codes[: limit - 1] == [400] * (limit - 1)
    assert set(codes[limit:]) == {429}
    locked = answers[-1]
    body = locked.json()["error"]
    assert body["code"] == "locked_out" and "Too many failed sign-ins" in body["message"]
    assert int(locked["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()

    # Even the right password is refused from that address while the lockout lasts...
    assert _token(client, "pw").status_code == 429
    # ...while the same user signs in from another address at once.
    assert _token(APIClient(), "pw", address="10.0.0.8").status_code == 201


def test_the_lockout_ends_when_its_window_has_passed(user_a):
    client = APIClient()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _token(client, "wrong")
    assert _token(client, "pw").status_code == 429
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    assert _token(client, "pw").status_code == 201


def test_a_success_resets_the_count_of_failures(user_a):
    client = APIClient()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _token(client, "wrong").status_code == 400
    assert _token(client, "pw").status_code == 201
    # The count started again: as many failures once more are still plain 400s.
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _token(client, "wrong").status_code == 400


def test_browser_sign_in_is_locked_out_the_same_way(user_a):
    client = APIClient(enforce_csrf_checks=True)
    csrf = client.get("/api/auth/csrf/").json()["csrf_token"]
    codes = [
        client.post(
            "/api/auth/login/",
            {"username": "alice", "password": "wrong"},
            format="json",
            HTTP_X_CSRFTOKEN=csrf,
            REMOTE_ADDR="10.0.0.9",
        ).status_code
        for _ in range(settings.AXES_FAILURE_LIMIT + 2)
    ]
    assert codes[-1] == 429 and codes[0] == 400
