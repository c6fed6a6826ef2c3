"""A team's members and invitations (team admins change them)."""

from __future__ import annotations

from typing import Any, cast

from netloom.errors import NetloomError
from netloom.resources.transport import Transport


class TeamMixin(Transport):
    """Members and invitations of a team."""

    def team_members(self, *, team: int | None = None) -> list[dict[str, Any]]:
        """The team's members: [{id, username, role}]."""
        detail = self._json("GET", f"/api/teams/{self.default_team(team)}/")
        return cast(list[dict[str, Any]], detail["members"])

    def member_id(self, user: int | str, *, team: int | None = None) -> int:
        """A member's user id from their id or username (an error naming the members when unknown)."""
        if isinstance(user, int) or str(user).isdigit():
            return int(user)
        members = self.team_members(team=team)
        for member in members:
            if member["username"] == user:
                return int(member["id"])
        names = ", ".join(m["username"] for m in members) or "none"
        raise NetloomError(f"{user} is not a member of the team; members: {names}")

    def invite(self, *, email: str = "", username: str = "", role: str = "viewer",
               team: int | None = None) -> dict[str, Any]:
        """Invite someone by e-mail or username: {id, token, url, expires_at, mailed, ...}."""
        body = {"email": email, "username": username, "role": role}
        path = f"/api/teams/{self.default_team(team)}/invitations/"
        return cast(dict[str, Any], self._json("POST", path, json=body))

    def invitations(self, *, team: int | None = None) -> list[dict[str, Any]]:
        """The team's pending invitations (admins)."""
        return cast(list[dict[str, Any]], self._json("GET", f"/api/teams/{self.default_team(team)}/invitations/"))

    def invitation_revoke(self, invitation_id: int, *, team: int | None = None) -> None:
        self._request("DELETE", f"/api/teams/{self.default_team(team)}/invitations/{invitation_id}/")

    def member_role(self, user: int | str, role: str, *, team: int | None = None) -> dict[str, Any]:
        """Change a member's role (admins); the team's last admin cannot be demoted (409)."""
        team_id = self.default_team(team)
        path = f"/api/teams/{team_id}/members/{self.member_id(user, team=team_id)}/"
        return cast(dict[str, Any], self._json("PATCH", path, json={"role": role}))

    def member_remove(self, user: int | str, *, team: int | None = None) -> None:
        """Remove a member (admins; anyone may leave); their open streams close."""
        team_id = self.default_team(team)
        self._request("DELETE", f"/api/teams/{team_id}/members/{self.member_id(user, team=team_id)}/")
