"""The user's API tokens, who they are and which team a command means."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from netloom.api_types import ApiToken, Me, NewToken, UserTeam
from netloom.errors import NetloomError
from netloom.resources.transport import Transport


class AccountsMixin(Transport):
    """Tokens, the user and their teams."""

    def tokens(self) -> list[ApiToken]:
        """The user's API tokens (revoked and expired ones too), with scope, team and expiry."""
        return cast(list[ApiToken], self._all_pages("/api/auth/tokens/", {}))

    def token_create(
        self, *, name: str = "", scope: str | None = None, team: int | str | None = None,
        expires_at: datetime | str | None = None,
    ) -> NewToken:
        """A new API token of the signed-in user; its secret is in `token` (shown only here).

        A read token (`scope="read"`) is refused every write (403 `token_scope`); a team-bound one
        sees that team only; an expired one is refused (401 `token_expired`). A token made with a
        team-bound token is bound to the same team.
        """
        body = {"name": name, **_token_options(scope=scope, team=team, expires_at=expires_at)}
        return cast(NewToken, self._json("POST", "/api/auth/tokens/", json=body))

    def token_revoke(self, token_id: int) -> None:
        """Revoke one of the user's tokens (it never signs in again)."""
        self._request("DELETE", f"/api/auth/tokens/{int(token_id)}/")

    def me(self) -> Me:
        """The user, with their teams and roles."""
        return cast(Me, self._json("GET", "/api/auth/me/"))

    def teams(self) -> list[UserTeam]:
        """The user's teams, each with the user's role in it."""
        return self.me()["teams"]

    def default_team(self, team: int | None = None) -> int:
        """`team` if given, else the user's only team (an error naming them when there are several)."""
        if team is not None:
            return team
        teams = self.teams()
        if len(teams) == 1:
            return teams[0]["id"]
        names = ", ".join(f"{t['id']} ({t['name']})" for t in teams) or "none"
        raise NetloomError(f"you are in {len(teams)} teams, choose one with --team ID: {names}")


def _token_options(
    *, scope: str | None, team: int | str | None, expires_at: datetime | str | None
) -> dict[str, Any]:
    """The optional fields of a token request (only those given: the service's defaults otherwise)."""
    options: dict[str, Any] = {}
    if scope is not None:
        options["scope"] = scope
    if team is not None:
        options["team"] = team
    if expires_at is not None:
        if isinstance(expires_at, datetime) and expires_at.tzinfo is None:
            raise NetloomError("expires_at needs a time zone (datetime.now(timezone.utc) + ...)")
        options["expires_at"] = expires_at.isoformat() if isinstance(expires_at, datetime) else expires_at
    return options
