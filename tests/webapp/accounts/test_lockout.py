"""Sign-in lockout and throttle.

Too many wrong passwords for one account from one address answer 429 for that account from that
address until the window passes; other accounts on the address are never locked out (behind a proxy
everyone shares it). The address is the peer's, or, from a proxy NETLOOM_TRUSTED_PROXIES names, the
client it forwarded for. Password attempts per address are throttled: slowed, never locked.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client, override_settings
from django.utils import timezone
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def _token(client: APIClient, password: str, address: str = "10.0.0.7", username: str = "alice",
           **headers: str) -> object:
    return client.post(
        "/api/auth/token/",
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=address,
        **headers,
    )


def _admin_sign_in(username: str, password: str, address: str = "10.0.0.7") -> object:
    return Client().post("/admin/login/?next=/admin/", {"username": username, "password": password},
                         REMOTE_ADDR=address)


# Many sign-ins from one address in one test: the throttle is another test's subject.
_UNTHROTTLED = override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK,
                                                 "DEFAULT_THROTTLE_RATES": {"sign_in": "1000/min"}})


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


# --- per account and address ------------------------------------------------------------------


@_UNTHROTTLED
def test_twelve_failures_for_one_account_never_lock_out_another_from_the_same_address(user_a, make_user):
    make_user("bob")
    client = APIClient()
    codes = [_token(client, "wrong").status_code for _ in range(12)]
    assert codes[-1] == 429 and AccessAttempt.objects.get().username == "alice"
    # Another account on the same address: its wrong passwords are plain 400s, its right one works.
    assert _token(client, "wrong", username="bob").status_code == 400
    assert _token(client, "pw", username="bob").status_code == 201
    # The locked account from another address is not locked either.
    assert _token(APIClient(), "pw", address="10.0.0.99").status_code == 201
    # The browser sign-in of the other account, from the locked address.
    browser = APIClient()
    assert browser.post("/api/auth/login/", {"username": "bob", "password": "pw"}, format="json",
                        REMOTE_ADDR="10.0.0.7").status_code == 200


@_UNTHROTTLED
def test_twelve_admin_form_failures_lock_only_that_account_on_the_address(make_user):
    for username in ("root", "ops"):
        user = make_user(username)
        user.is_staff = user.is_superuser = True
        user.save()
    answers = [_admin_sign_in("root", "wrong") for _ in range(12)]
    assert answers[0].status_code == 200  # the form again, with its error
    assert answers[-1].status_code == 429 and answers[-1].json()["error"]["code"] == "locked_out"
    assert _admin_sign_in("root", "pw").status_code == 429
    signed_in = _admin_sign_in("ops", "pw")
    assert signed_in.status_code == 302 and signed_in["Location"] == "/admin/"


@_UNTHROTTLED
def test_the_locked_accounts_right_password_works_after_the_cool_off(user_a):
    with override_settings(AXES_COOLOFF_TIME=timedelta(seconds=2)):
        client = APIClient()
        for _ in range(12):
            _token(client, "wrong")
        locked = _token(client, "pw")
        assert locked.status_code == 429 and locked["Retry-After"] == "2"
        time.sleep(2.2)
        assert _token(client, "pw").status_code == 201


# --- the client's address -----------------------------------------------------------------------


@_UNTHROTTLED
def test_without_trusted_proxies_a_forged_forwarded_for_does_not_change_the_address(user_a):
    assert settings.NETLOOM_TRUSTED_PROXIES == []
    client = APIClient()
    codes = [_token(client, "wrong", address="127.0.0.1", HTTP_X_FORWARDED_FOR=f"10.3.{i}.1").status_code
             for i in range(settings.AXES_FAILURE_LIMIT + 1)]
    assert codes[-1] == 429, codes
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"127.0.0.1"}


@_UNTHROTTLED
@override_settings(NETLOOM_TRUSTED_PROXIES=["127.0.0.1"])
def test_from_a_trusted_proxy_the_forwarded_client_is_the_address(user_a):
    client = APIClient()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _token(client, "wrong", address="127.0.0.1", HTTP_X_FORWARDED_FOR="10.9.9.9")
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"10.9.9.9"}
    assert _token(client, "pw", address="127.0.0.1", HTTP_X_FORWARDED_FOR="10.9.9.9").status_code == 429
    # Another client behind the same proxy signs in; a peer that is not the proxy is not believed.
    assert _token(client, "pw", address="127.0.0.1", HTTP_X_FORWARDED_FOR="10.9.9.10").status_code == 201
    assert _token(client, "wrong", address="10.0.0.5", HTTP_X_FORWARDED_FOR="10.9.9.9").status_code == 400
    assert AccessAttempt.objects.filter(ip_address="10.0.0.5").exists()


# --- the throttle -------------------------------------------------------------------------------


@override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"sign_in": "3/s"}})
def test_many_sign_ins_from_one_address_are_slowed_never_locked(user_a, make_user):
    client = APIClient()
    names = ["alice", "bob", "carol", "dave"]
    answers = [_token(client, "wrong", username=name) for name in names]
    assert [a.status_code for a in answers] == [400, 400, 400, 429]
    body = answers[-1].json()["error"]
    assert body["code"] == "throttled" and int(answers[-1]["Retry-After"]) >= 1
    # Another address is not slowed; the admin's form counts with the API's sign-ins.
    assert _token(APIClient(), "pw", address="10.0.0.8").status_code == 201
    assert _admin_sign_in("alice", "pw").status_code == 429
    # The next window lets the address in again: a throttle, not a lockout.
    time.sleep(1.1)
    assert _token(client, "pw").status_code == 201
