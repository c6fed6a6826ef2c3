"""Reads for accounts: which teams a user is in, and with what role."""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Q, QuerySet
from django.utils import timezone

from webapp import prepared

from .models import ApiToken, Membership, Team

# Every API token starts with this, so a reader (or a secret scanner) can tell what it is.
TOKEN_PREFIX = "nl_"


def token_hash(raw_token: str) -> str:
    """The stored form of a token: sha256 of the whole token string."""
    return hashlib.sha256(raw_token.encode("utf-8")).hexdigest()


def teams_for_user(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Team]:
    """The teams a user belongs to (none for anonymous users)."""
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user)


def role_in_team(*, user: AbstractBaseUser | AnonymousUser, team: Team | int) -> str | None:
    """The user's role in a team, or None when they are not a member."""
    if not user.is_authenticated:
        return None
    team_id = team if isinstance(team, int) else team.pk
    return (
        Membership.objects.filter(user=user, team_id=team_id).values_list("role", flat=True).first()
    )


def memberships_for_user(*, user: AbstractBaseUser) -> QuerySet[Membership]:
    """The user's memberships with their teams, ordered by team name."""
    return Membership.objects.filter(user=user).select_related("team").order_by("team__name")


def _live(tokens: QuerySet[ApiToken]) -> QuerySet[ApiToken]:
    """The tokens among `tokens` that still sign in now: not revoked and not expired.

    The one statement of the rule, so the single, per-user and batched checks cannot drift apart.
    """
    now = timezone.now()
    return tokens.filter(revoked_at__isnull=True).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))


def tokens_live(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The user's tokens that still sign in: not revoked and not expired."""
    return _live(ApiToken.objects.filter(user=user))


# What token_grant_with_row reads of the token and its user: enough to let a request in and to
# record the token's use.
_GRANT_FIELDS = ({"id", "user", "expires_at", "last_used_at"}, {"is_active"})


@cache
def _token_statement(vendor: str, narrow: bool = False, also: tuple[str, str] = ("", "")) -> tuple[
        str, tuple[Any, ...], tuple[Any, ...]]:
    """The live-or-expired, unrevoked token with a given hash, and its user, in one statement.

    (SQL, the token's columns, the user's columns): every concrete field of both (only
    _GRANT_FIELDS' when `narrow`), in model order, as Col expressions for the backend's
    converters, then `also`'s columns from its joins (token_grant_with_row). Written once per
    database vendor: the ORM's `select_related(...).filter(...).first()` compiled the same
    statement on every request, and that was half of what a cached run detail cost
    (docs/benchmarks.md "API under load").
    """
    q = connection.ops.quote_name
    user_model = get_user_model()
    token_fields, user_fields = _GRANT_FIELDS
    token_cols = tuple(f.get_col("t") for f in ApiToken._meta.concrete_fields if not narrow or f.name in token_fields)
    user_cols = tuple(f.get_col("u") for f in user_model._meta.concrete_fields if not narrow or f.name in user_fields)
    columns = ", ".join(f"{alias}.{q(col.target.column)}" for alias, cols in (("t", token_cols), ("u", user_cols))
                        for col in cols)
    also_columns, also_joins = also
    sql = (
        f"SELECT {columns}{', ' if also_columns else ''}{also_columns} FROM {q(ApiToken._meta.db_table)} t "
        f"JOIN {q(user_model._meta.db_table)} u ON u.{q(user_model._meta.pk.column)} = t.{q('user_id')} "
        f"{also_joins}{' ' if also_joins else ''}"
        f"WHERE t.{q('token_hash')} = %s AND t.{q('revoked_at')} IS NULL"
    )
    return sql, token_cols, user_cols


# Connection -> columns -> [(position, the converters the ORM would apply to it)]: asking the
# backend and each field for them was a third of a token's lookup, and they depend on the
# connection's backend only (each thread has its own connection, so each its own entries).
_converters: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], list[tuple[int, tuple[Any, ...]]]]] = (
    weakref.WeakKeyDictionary()
)


def _converted(db: Any, cols: tuple[Any, ...], values: tuple[Any, ...]) -> list[Any]:
    """Raw column values through the converters the ORM would apply."""
    known = _converters.setdefault(db, {})
    steps = known.get(cols)
    if steps is None:
        steps = known[cols] = [
            (i, converters) for i, col in enumerate(cols)
            if (converters := (*db.ops.get_db_converters(col), *col.get_db_converters(db)))
        ]
    converted = list(values)
    for i, converters in steps:
        for convert in converters:
            converted[i] = convert(converted[i], cols[i], db)
    return converted


def _live_token_row(raw_token: str, *, narrow: bool, also: tuple[str, str] = ("", ""),
                    also_params: Sequence[Any] = ()) -> tuple[Any, dict[str, Any], dict[str, Any],
                                                              tuple[Any, ...]] | None:
    """(the connection, the token's converted columns, its user's, `also`'s raw values) by field
    name, in model order, for a live token whose plaintext is `raw_token`; None for anything else.
    The one reading of the rule (unrevoked in the statement, unexpired here) behind the lookups
    below."""
    if not raw_token.startswith(TOKEN_PREFIX):
        return None
    db = connections[DEFAULT_DB_ALIAS]  # this thread's connection, looked up once
    sql, token_cols, user_cols = _token_statement(db.vendor, narrow, also)
    row = prepared.fetchone(db, sql, [*also_params, token_hash(raw_token)])
    if row is None:
        return None
    token = dict(zip((c.target.attname for c in token_cols), _converted(db, token_cols, row[: len(token_cols)]),
                     strict=True))
    ours = len(token_cols) + len(user_cols)
    user = dict(zip((c.target.attname for c in user_cols), _converted(db, user_cols, row[len(token_cols):ours]),
                    strict=True))
    if token["expires_at"] is not None and token["expires_at"] <= timezone.now():
        return None
    return db, token, user, row[ours:]


def token_for_secret(*, raw_token: str) -> ApiToken | None:
    """The active token whose plaintext is `raw_token` (its user loaded with it), or None."""
    found = _live_token_row(raw_token, narrow=False)
    if found is None:
        return None
    db, token_values, user_values, _ = found
    token = ApiToken.from_db(db.alias, None, list(token_values.values()))
    token.user = get_user_model().from_db(db.alias, None, list(user_values.values()))
    return token


@dataclass
class TokenGrant:
    """What a request signed in with a token needs of it when it needs no model instance
    (token_touch records its use through `pk` and `last_used_at`)."""

    pk: int
    user_id: int
    last_used_at: datetime | None
    expires_at: datetime | None = None


def token_grant_with_row(*, raw_token: str, columns: str = "", joins: str = "", params: Sequence[Any] = ()) -> tuple[
        TokenGrant, tuple[Any, ...]] | None:
    """token_for_secret's check, for a live token of an active user, without building the token
    and the user (building them was half of the lookup on the run detail's route), and in the
    same statement a row of the caller's: `columns` of `joins` (LEFT JOINs after the token `t` and
    its user `u`, which may name `t.user_id`), with `params` for the joins' placeholders.

    (The grant, `columns`' values as the database gives them), or None for anything else, an
    inactive user's token included. A row the joins did not find is NULLs. The statement is
    prepared once per connection on PostgreSQL (webapp/prepared.py).

    One statement instead of two: the second was a fifth of the run detail's hot read
    (webapp/runs/detail.py::run_detail_kept_json_for_token, docs/benchmarks.md "API under load").
    """
    found = _live_token_row(raw_token, narrow=True, also=(columns, joins), also_params=params)
    if found is None or not found[2]["is_active"]:
        return None
    _, token, _, row = found
    return TokenGrant(pk=token["id"], user_id=token["user_id"], last_used_at=token["last_used_at"],
                      expires_at=token["expires_at"]), row


def token_is_live(*, token_id: int) -> bool:
    """Whether the token is neither revoked nor expired (an open stream asks this again)."""
    return _live(ApiToken.objects.filter(pk=token_id)).exists()


def live_token_ids(*, token_ids: Iterable[int]) -> set[int]:
    """The ids among `token_ids` of tokens that are neither revoked nor expired (one query).

    The batched form of token_is_live: a server process re-checks all its open streams' tokens at once.
    """
    return set(_live(ApiToken.objects.filter(pk__in=set(token_ids))).values_list("pk", flat=True))


def active_user_ids(*, user_ids: Iterable[int]) -> set[int]:
    """The ids among `user_ids` of users that exist and are active (one query; a disabled user's
    open streams close)."""
    return set(get_user_model().objects.filter(pk__in=set(user_ids), is_active=True).values_list("pk", flat=True))
