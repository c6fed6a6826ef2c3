"""Team A's objects for the isolation test's accounts placeholders ({invitation})."""

from __future__ import annotations

from typing import Any

from webapp.accounts.services.invitations import invitation_create


def objects(*, team: Any, user: Any, dataset: Any, revision: Any) -> dict[str, Any]:
    invitation, _, _ = invitation_create(
        team=team, invited_by=user, role="editor", email="secret-a-invitee@example.org",
        accept_url_base="http://testserver/app/invitations/",
    )
    return {"invitation": invitation.id}
