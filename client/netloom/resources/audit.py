"""The audit log of a team (team admins): pages of entries, or every entry as JSON lines."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

from netloom.errors import ConnectionFailed
from netloom.resources.transport import Transport, _api_error


class AuditMixin(Transport):
    """Who changed what in a team."""

    def audit(
        self, team: int, *, actor: str | None = None, action: str | None = None, object: str | None = None,  # noqa: A002
        since: str | None = None, until: str | None = None, limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """The team's audit log, newest first (team admins): `action` exact or a prefix ending in "."
        ("member."), `object` as "type:id" ("run:42"), `since`/`until` ISO-8601; at most `limit` entries."""
        query = {key: value for key, value in {"actor": actor, "action": action, "object": object, "since": since,
                                                "until": until}.items() if value is not None}
        page, results = 1, []
        while True:
            answer = self._json("GET", f"/api/teams/{team}/audit/", params={**query, "page": page, "page_size": 500})
            results.extend(answer["results"])
            if not answer.get("next") or (limit is not None and len(results) >= limit):
                return results[:limit] if limit is not None else results
            page += 1

    def audit_lines(
        self, team: int, *, actor: str | None = None, action: str | None = None, object: str | None = None,  # noqa: A002
        since: str | None = None, until: str | None = None,
    ) -> Iterator[str]:
        """Every filtered entry of the team's audit log as JSON lines, streamed (any size)."""
        query = {key: value for key, value in {"actor": actor, "action": action, "object": object, "since": since,
                                                "until": until}.items() if value is not None}
        try:
            with self.http.stream("GET", f"/api/teams/{team}/audit/export/", params=query) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _api_error(response)
                yield from (line for line in response.iter_lines() if line)
        except httpx.HTTPError as exc:
            raise ConnectionFailed(f"cannot reach {self.url}: {exc}") from exc
