"""Single sign-on with OpenID Connect: mozilla-django-oidc's backend and views, with the provider's
endpoints read from its discovery document (docs/subsystems/accounts.md, "Single sign-on";
docs/decisions/0017-oidc-library.md).

The flow: the sign-in page's button opens `/auth/oidc/authenticate/` (OidcAuthenticateView), which
redirects to the provider's authorization endpoint with a state, a nonce and a PKCE challenge kept
in the session; the provider sends the browser back to `/auth/oidc/callback/` (OidcCallbackView),
whose backend (OidcBackend) trades the code for tokens, checks the ID token's signature (the
provider's JWKS), issuer, audience and nonce, reads the userinfo, and hands the claims to
`services.sso.sso_sign_in` (the account, its memberships from the groups claim). A failure lands on
the sign-in page with `?sso_error=<code>`, which the page turns into a sentence.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.core import checks
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from webapp.errors import DomainError

from .services.sso import sso_sign_in

log = logging.getLogger(__name__)

DISCOVERY_PATH = "/.well-known/openid-configuration"
# The discovery document is read again after this long (a provider may move an endpoint).
DISCOVERY_TTL_SECONDS = 3600
# mozilla-django-oidc setting -> the discovery document's key.
_ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


class ProviderUnavailable(Exception):
    """The issuer's discovery document could not be read or does not describe the issuer."""


_lock = threading.Lock()
_discovered: dict[str, tuple[float, dict[str, Any]]] = {}


def discovery(issuer: str | None = None) -> dict[str, Any]:
    """The issuer's discovery document, read on first use and kept for DISCOVERY_TTL_SECONDS per
    process; a failure is not kept (the next sign-in tries again) and raises ProviderUnavailable
    with the URL and the reason."""
    issuer = issuer or settings.NETLOOM_OIDC_ISSUER
    now = time.monotonic()
    with _lock:
        kept = _discovered.get(issuer)
        if kept and now - kept[0] < DISCOVERY_TTL_SECONDS:
            return kept[1]
    url = issuer + DISCOVERY_PATH
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(
            f"The sign-in provider's discovery document {url} could not be read: {exc}"
        ) from None
    if not isinstance(document, dict):
        raise ProviderUnavailable(f"{url} is not a JSON object.")
    if str(document.get("issuer", "")).rstrip("/") != issuer:
        raise ProviderUnavailable(
            f"{url} names the issuer {document.get('issuer')!r}, not NETLOOM_OIDC_ISSUER {issuer!r}."
        )
    missing = [key for key in _ENDPOINTS.values() if not document.get(key)]
    if missing:
        raise ProviderUnavailable(f"{url} names no {', '.join(missing)}.")
    with _lock:
        _discovered[issuer] = (now, document)
    return document


def oidc_setting(name: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings, with the endpoints from the discovery document."""
    if name in _ENDPOINTS:
        return discovery()[_ENDPOINTS[name]]
    if name == "OIDC_TOKEN_USE_BASIC_AUTH":
        # client_secret_basic unless the provider lists only client_secret_post (RFC 8414: basic
        # is the default when the list is absent).
        methods = discovery().get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        return "client_secret_basic" in methods or "client_secret_post" not in methods
    return import_from_settings(name, *default)


def _failed(code: str) -> HttpResponseRedirect:
    """Back to the sign-in page, which says what went wrong."""
    return HttpResponseRedirect(
        f"{settings.LOGIN_REDIRECT_URL_FAILURE}?{urlencode({'sso_error': code})}"
    )


def _require_enabled() -> None:
    if not settings.NETLOOM_OIDC_ENABLED:
        raise Http404("Single sign-on is not configured on this server.")


class OidcBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's code flow; the account and its teams come from services.sso.sso_sign_in."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Nothing read here: Django builds every backend for every sign-in, a password one too,
        # and the endpoints need the provider. authenticate() reads them when a code comes back.
        from django.contrib.auth import get_user_model

        self.UserModel = get_user_model()

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        if request is None or not settings.NETLOOM_OIDC_ENABLED:
            return None
        if "code" not in request.GET or "state" not in request.GET:
            return None  # a password sign-in, not ours
        try:
            self.OIDC_OP_TOKEN_ENDPOINT = oidc_setting("OIDC_OP_TOKEN_ENDPOINT")
            self.OIDC_OP_USER_ENDPOINT = oidc_setting("OIDC_OP_USER_ENDPOINT")
            self.OIDC_OP_JWKS_ENDPOINT = oidc_setting("OIDC_OP_JWKS_ENDPOINT")
        except ProviderUnavailable as exc:
            log.error("SSO sign-in: %s", exc)
            request.netloom_sso_error = "sso_unavailable"  # type: ignore[attr-defined]
            return None
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        try:
            return super().authenticate(request, **kwargs)
        except (requests.RequestException, SuspiciousOperation) as exc:
            # The provider refused the code, or a token did not check out: never a 500. The
            # message names no secret (the token endpoint's body is the provider's error).
            log.warning("SSO sign-in refused: %s", exc)
            request.netloom_sso_error = "sso_failed"  # type: ignore[attr-defined]
            return None
        except DomainError as exc:
            log.info("SSO sign-in refused: %s", exc.code)
            request.netloom_sso_error = exc.code  # type: ignore[attr-defined]
            return None
        except IntegrityError:
            # The same person's first sign-in twice at once (two tabs): the other one made the
            # account; trying again finds it.
            log.warning("SSO sign-in raced another first sign-in of the same account")
            request.netloom_sso_error = "sso_failed"  # type: ignore[attr-defined]
            return None

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The library checks the signature and nonce; the issuer and audience are checked here
        (it leaves them to its users)."""
        payload = super().verify_token(token, **kwargs)
        if kwargs.get("nonce") is None:
            return payload  # a signed userinfo answer, not the ID token
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if str(payload.get("iss", "")).rstrip("/") != settings.NETLOOM_OIDC_ISSUER:
            raise SuspiciousOperation(f"ID token from another issuer: {payload.get('iss')!r}")
        if settings.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token issued to another client")
        if payload.get("exp") is None:
            raise SuspiciousOperation("ID token without an expiry")
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The ID token's claims with the userinfo endpoint's over them (a provider may put the
        groups in either); both must name the same subject."""
        userinfo = super().get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("userinfo names another subject than the ID token")
        return {**payload, **userinfo}

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        claims = self.get_userinfo(access_token, id_token, payload)
        return sso_sign_in(
            issuer=settings.NETLOOM_OIDC_ISSUER,
            claims=claims,
            groups_claim=settings.NETLOOM_OIDC_GROUPS_CLAIM,
            team_map=settings.NETLOOM_OIDC_TEAM_MAP,
            create_users=settings.NETLOOM_OIDC_CREATE_USERS,
        )

    def get_user(self, user_id: Any) -> Any:
        # The library's own skips the is_active check: a disabled account's session would live on.
        try:
            user = self.UserModel._default_manager.get(pk=user_id)
        except self.UserModel.DoesNotExist:
            return None
        return user if self.user_can_authenticate(user) else None


class OidcAuthenticateView(OIDCAuthenticationRequestView):
    """GET /auth/oidc/authenticate/?next=/app/...: off to the provider."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, **kwargs: Any) -> None:
        # The library reads the endpoint here; get() reads it, so an unreachable provider is a
        # message on the sign-in page, not a 500.
        super(OIDCAuthenticationRequestView, self).__init__(**kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request: HttpRequest) -> HttpResponse:
        _require_enabled()
        try:
            self.OIDC_OP_AUTH_ENDPOINT = oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except ProviderUnavailable as exc:
            log.error("SSO sign-in: %s", exc)
            return _failed("sso_unavailable")
        return super().get(request)


class OidcCallbackView(OIDCAuthenticationCallbackView):
    """GET /auth/oidc/callback/?code=&state=: signed in, into the app; or back to the sign-in page
    with the reason."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        _require_enabled()
        if "code" in request.GET and "state" in request.GET:
            states = request.session.get("oidc_states") or {}
            if request.GET["state"] not in states:
                # An old tab, a second use of the same answer: a clear message, not a 400 page.
                return _failed("sso_state")
        return super().get(request)

    def login_failure(self) -> HttpResponse:
        if self.request.GET.get("error"):
            code = "sso_denied"  # the provider said no (access_denied, the user cancelled)
        else:
            code = getattr(self.request, "netloom_sso_error", "sso_failed")
        return _failed(code)


@checks.register(checks.Tags.security, deploy=True)
def provider_reachable(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """`manage.py check --deploy`: the issuer's discovery document answers."""
    if not settings.NETLOOM_OIDC_ENABLED:
        return []
    try:
        discovery()
    except ProviderUnavailable as exc:
        return [checks.Error(str(exc), id="netloom.E017", hint="Check NETLOOM_OIDC_ISSUER.")]
    return []
