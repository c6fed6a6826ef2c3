"""The model server's one Django-facing module: the registry's aliases, the API's tokens and the
browser's sessions.

`python -m serving` runs this: Django set up to read (webapp.registry.selectors,
webapp.accounts.selectors, the session engine) and to write one thing, a token's last use (at most
once a minute, as the API does), then serving.server on SERVING_PORT.
"""

from __future__ import annotations

import logging
import os
import time
from importlib import import_module
from typing import Any

from .server import Entry, Identity, serve

log = logging.getLogger("netloom.serving")


class RegistryDirectory:
    """serving.server.Directory over the Django registry and accounts, told of alias moves on
    Redis (webapp.registry.services publishes after each commit)."""

    def __init__(self) -> None:
        self._pubsub: Any = None

    def wait_for_change(self, timeout: float) -> bool:
        """Wait up to `timeout` s for an alias move message; False on a timeout or without Redis."""
        import redis
        from django.conf import settings

        from webapp.registry.services import serving_channel

        try:
            if self._pubsub is None:
                client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1)
                self._pubsub = client.pubsub(ignore_subscribe_messages=True)
                self._pubsub.subscribe(serving_channel())
            deadline = time.monotonic() + timeout
            while (left := deadline - time.monotonic()) > 0:
                # None also for an ignored subscribe confirmation, before the timeout.
                if self._pubsub.get_message(timeout=left) is not None:
                    return True
            return False
        except (redis.RedisError, OSError):
            self._pubsub = None
            time.sleep(timeout)
            return False

    def watch_access(self, on_change: Any, stop: Any) -> None:
        """Until `stop` is set: `on_change(user_id)` for each user whose access changed (a token
        revoked, a team left: webapp.accounts.events.access_changed publishes after the commit).
        Without Redis it retries every second; the kept checks expire on their own meanwhile."""
        import redis
        from django.conf import settings

        from webapp.accounts.events import serving_access_channel

        pubsub = None
        while not stop.is_set():
            try:
                if pubsub is None:
                    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1)
                    pubsub = client.pubsub(ignore_subscribe_messages=True)
                    pubsub.subscribe(serving_access_channel())
                message = pubsub.get_message(timeout=1.0)
                if message is not None and str(message["data"], "ascii").isdigit():
                    on_change(int(message["data"]))
            except (redis.RedisError, OSError):
                pubsub = None
                stop.wait(1.0)

    def snapshot(self) -> dict[int, Entry]:
        from django.db import close_old_connections

        from webapp.registry.selectors import served_models

        close_old_connections()
        return {row["model"]: Entry(model_id=row["model"], team_id=row["team"], served_name=row["served_name"],
                                    aliases=dict(row["aliases"]), folders=dict(row["folders"]))
                for row in served_models()}

    @property
    def session_cookie(self) -> str:
        """The browser's session cookie (settings.SESSION_COOKIE_NAME): the Models page's try-it
        form and charts call with it."""
        from django.conf import settings

        return settings.SESSION_COOKIE_NAME

    @property
    def trusted_origins(self) -> list[str]:
        """Origins besides the request's own host a session request may come from: the ones the
        web app trusts for CSRF (settings.CSRF_TRUSTED_ORIGINS)."""
        from django.conf import settings

        return list(settings.CSRF_TRUSTED_ORIGINS)

    def authenticate(self, token: str) -> Identity | None:
        """The token's user and the teams it may call models of: every route of the model server
        is a read (an infer POST only reads the model), so a read-scope token may infer, and a
        team-bound token sees its team only (`token_allows`, as the API asks it)."""
        from django.db import close_old_connections

        from webapp.accounts.selectors import teams_for_user, token_allows, token_for_secret

        close_old_connections()
        found = token_for_secret(raw_token=token)
        if found is None or not found.user.is_active:
            return None
        self._touch(found)
        teams = frozenset(team for team in teams_for_user(user=found.user).values_list("pk", flat=True)
                          if token_allows(found, method="POST", team_id=team, reads=True))
        return Identity(user_id=found.user.pk, team_ids=teams)

    @staticmethod
    def _touch(token: Any) -> None:
        """Record the token's use as the API does (token_touch: a write at most once a minute; the
        server asks here at most once per IDENTITY_TTL_S per token). A failed write refuses no call."""
        from django.db import DatabaseError

        from webapp.accounts.services.tokens import token_touch

        try:
            token_touch(token=token)
        except DatabaseError as exc:
            log.warning("could not record the use of token %s: %s", token.prefix, exc)

    def authenticate_session(self, session_key: str) -> Identity | None:
        """The signed-in user of a Django session and all their teams, checked as
        django.contrib.auth.get_user checks it: the session names a backend still configured,
        the backend finds the user (ModelBackend: an active one), and the session's hash matches
        the user's password (a password change ends the other sessions). Unlike get_user it
        writes nothing: a stale session is refused, and the web app flushes it on its next request.
        """
        from django.conf import settings
        from django.contrib.auth import (
            BACKEND_SESSION_KEY,
            HASH_SESSION_KEY,
            SESSION_KEY,
            get_user_model,
            load_backend,
        )
        from django.core.exceptions import ValidationError
        from django.db import close_old_connections
        from django.utils.crypto import constant_time_compare

        from webapp.accounts.selectors import teams_for_user

        close_old_connections()
        session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
        try:
            # A key the store does not know loads as an empty session (nothing is created).
            user_pk = get_user_model()._meta.pk.to_python(session[SESSION_KEY])
            backend_path, session_hash = session[BACKEND_SESSION_KEY], session.get(HASH_SESSION_KEY)
        except (KeyError, ValidationError):
            return None
        if backend_path not in settings.AUTHENTICATION_BACKENDS or not session_hash:
            return None
        user = load_backend(backend_path).get_user(user_pk)
        if user is None or not user.is_active:
            return None
        if not (constant_time_compare(session_hash, user.get_session_auth_hash())
                or any(constant_time_compare(session_hash, fallback)
                       for fallback in user.get_session_auth_fallback_hash())):
            return None
        teams = frozenset(teams_for_user(user=user).values_list("pk", flat=True))
        return Identity(user_id=user.pk, team_ids=teams)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    logging.basicConfig(level=os.environ.get("SERVING_LOG_LEVEL", "INFO"))
    serve(RegistryDirectory(), port=int(os.environ.get("SERVING_PORT", "8090")))
