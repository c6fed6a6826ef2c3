"""`Client(url, token)`: typed methods over the REST API and the run stream.

Request and answer types are the TypedDicts of `netloom.api_types`, generated from the service's
OpenAPI schema; the stream yields its frames (`RunStreamFrame`) as they are declared there.
The methods live in one mixin per resource under `netloom/resources/` (a new method goes to its
resource's module); this class joins them on one HTTP session (`resources/transport.py`).
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

from netloom.api_types import NewToken
from netloom.resources.accounts import AccountsMixin, _token_options
from netloom.resources.audit import AuditMixin
from netloom.resources.datasets import DatasetsMixin
from netloom.resources.exports import ExportsMixin
from netloom.resources.graphs import GraphsMixin
from netloom.resources.jobs import JobsMixin
from netloom.resources.models import ModelsMixin
from netloom.resources.runs import RunsMixin
from netloom.resources.stream import StreamMixin
from netloom.resources.sweeps import SweepsMixin
from netloom.resources.team import TeamMixin
from netloom.resources.transport import Transport


class Client(
    AccountsMixin,
    DatasetsMixin,
    GraphsMixin,
    RunsMixin,
    SweepsMixin,
    StreamMixin,
    ModelsMixin,
    TeamMixin,
    AuditMixin,
    ExportsMixin,
    JobsMixin,
    Transport,
):
    """A Netloom service for one user (an API token: `Client.login(...)` makes one)."""

    @classmethod
    def login(
        cls, url: str, username: str, password: str, *, name: str = "netloom command line",
        scope: str | None = None, team: int | str | None = None, expires_at: datetime | str | None = None,
    ) -> tuple[Client, NewToken]:
        """Ask the service for a new API token with a user's password; (a client with it, the token).

        `scope` "read" (reads, streams and predictions only) or "write" (the default); `team` (id or
        name) binds the token to one team; `expires_at` ends it (see token_create).
        """
        anonymous = cls(url)
        try:
            token = cast(
                NewToken,
                anonymous._json(
                    "POST",
                    "/api/auth/token/",
                    json={"username": username, "password": password, "name": name,
                          **_token_options(scope=scope, team=team, expires_at=expires_at)},
                ),
            )
        finally:
            anonymous.close()
        return cls(url, token["token"]), token

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
