"""Sign-in protection: the lockout's answer and client address (django-axes calls them), and the
per-address throttle on password sign-ins.

Two rules, for two attacks (docs/subsystems/accounts.md, "Lockout"):
- guessing one account's password: django-axes counts failures per account *and* client address
  (AXES_LOCKOUT_PARAMETERS), and after NETLOOM_LOGIN_FAILURE_LIMIT that account is locked out
  from that address for NETLOOM_LOGIN_LOCKOUT_MINUTES. Other accounts, and the same account from
  elsewhere, sign in as before: behind a proxy every user may share one address.
- trying many accounts from one address: `SignInRateThrottle` answers 429 with Retry-After past
  NETLOOM_SIGN_IN_RATE attempts per address (DRF's throttle, counted in the shared cache). It
  slows, it never locks: the next window lets the address sign in again.
"""

from __future__ import annotations

import math
from functools import wraps
from typing import Any

from axes.helpers import get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle

from webapp.api.client_address import client_address
from webapp.api.errors import error_body

SIGN_IN_SCOPE = "sign_in"


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: Any = None
) -> HttpResponse:
    """429 in the API's error body, with Retry-After: the lockout window's length."""
    cool_off = get_cool_off(request)
    seconds = math.ceil(cool_off.total_seconds()) if cool_off else None
    window = f" Try again in {math.ceil(seconds / 60)} minutes." if seconds else ""
    response = JsonResponse(
        error_body(
            "locked_out",
            f"Too many failed sign-ins for this account from this address "
            f"({settings.AXES_FAILURE_LIMIT} in a row).{window}",
            retry_after=seconds,
        ),
        status=429,
    )
    if seconds:
        response["Retry-After"] = str(seconds)
    return response


def lockout_exempt(request: HttpRequest, credentials: Any = None) -> bool:
    """AXES_WHITELIST_CALLABLE: the single sign-on callback checks no password (the provider did),
    so a refused one (a forged or stale code) is not a guess: counted, ten of them from one address
    would lock every SSO sign-in from it, each with no username."""
    match = getattr(request, "resolver_match", None)
    return (
        match is not None
        and match.url_name == "oidc_authentication_callback"
        and "password" not in (credentials or {})
    )


def lockout_client_address(request: HttpRequest) -> str | None:
    """AXES_CLIENT_IP_CALLABLE: the client as NETLOOM_TRUSTED_PROXIES lets us see it."""
    return client_address(request)


class SignInRateThrottle(ScopedRateThrottle):
    """Password sign-ins per client address (views with `throttle_scope = "sign_in"`)."""

    def get_rate(self) -> str | None:
        # Read per request, not at import as DRF's class attribute is: the setting may change.
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_ident(self, request: Any) -> str:
        # DRF's own reads X-Forwarded-For as the client writes it: a new value, a new count.
        return client_address(request) or ""

    def get_cache_key(self, request: Any, view: Any) -> str:
        # Per address even for a signed-in caller: the attempt is about another account.
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class _SignInView:
    throttle_scope = SIGN_IN_SCOPE


def sign_in_throttled(view: Any) -> Any:
    """The throttle of the API's sign-ins around a plain Django view (the admin's login form):
    a POST past the rate answers the API's 429."""

    @wraps(view)
    def throttled(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "POST":
            throttle = SignInRateThrottle()
            if not throttle.allow_request(request, _SignInView()):
                wait = max(1, math.ceil(throttle.wait() or 1))
                response = JsonResponse(
                    error_body("throttled", f"Too many sign-ins from this address. Try again in "
                               f"{wait} seconds."), status=429)
                response["Retry-After"] = str(wait)
                return response
        return view(request, *args, **kwargs)

    return throttled


def password_sign_in_off_message() -> str:
    """What a password sign-in is told while NETLOOM_LOCAL_PASSWORDS is off."""
    return (
        f"Password sign-in is turned off on this server: sign in with {settings.NETLOOM_OIDC_NAME} "
        "(single sign-on) in the browser. For the API, create a token there (POST /api/auth/tokens/ "
        "from the signed-in session)."
    )


def local_passwords_only(view: Any) -> Any:
    """A password form (the admin's) answers 403 `password_sign_in_off` while local passwords are
    off; its GET still renders (a signed-in staff member is sent on)."""

    @wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "POST" and not settings.NETLOOM_LOCAL_PASSWORDS:
            return JsonResponse(error_body("password_sign_in_off", password_sign_in_off_message()),
                                status=403)
        return view(request, *args, **kwargs)

    return checked
